/* fx_prec_float.h's names in double: FX_N(name) appends 64 (fx_sos_step64, ...). */
#define FX_T double
#define FX_V2 fx_dvec2
#define FX_SEC fx_section64
#define FX_FV fx_dfvec
#define FX_FMA fx_dfma
#define FX_N(name) FX_CAT(name, 64)
