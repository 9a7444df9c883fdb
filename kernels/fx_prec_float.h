/* The per-precision texts (sos_step.h, sos_fused_step.h, sos_fused_kernels.h and the
 * kernel-host's fused_host.h) instantiated in float: include this, the text, then
 * fx_prec_end.h. FX_T the float type, FX_V2 / FX_SEC / FX_FV its section state, record
 * and fused group state, FX_FMA its fused multiply-add, FX_N(name) the names (as given).
 * No include guard: included once per instantiation. */
#define FX_T float
#define FX_V2 fx_vec2
#define FX_SEC fx_section
#define FX_FV fx_fvec
#define FX_FMA fx_fma
#define FX_N(name) name
