/* Ends an instantiation begun with fx_prec_float.h or fx_prec_double.h. */
#undef FX_T
#undef FX_V2
#undef FX_SEC
#undef FX_FV
#undef FX_FMA
#undef FX_N
