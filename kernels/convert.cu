/* Row copies between float64 and float32 device memory (FerroFX; launched by
 * src/gpu/cuda/chain/resident.rs for a caller's float64 arrays): grid
 * (ceil(n / 256), min(rows, 65535)), 256 threads; a block walks rows grid-y apart.
 * float64 -> float32 rounds to nearest (the chain's float32 samples); float32 -> float64
 * is exact. */
#include "convert_math.h"

FX_DEVICE unsigned fx_nbid_y(void) { return __nvvm_read_ptx_sreg_nctaid_y(); }

FX_GLOBAL void ferrofx_rows_f64_to_f32(fx_rows_params p, const double* src, float* dst) {
    unsigned i = fx_bid() * fx_ntid() + fx_tid();
    if (i >= p.n) {
        return;
    }
    for (unsigned r = fx_bid_y(); r < p.rows; r += fx_nbid_y()) {
        dst[fx_rows_dst(&p, r, i)] = (float)src[fx_rows_src(&p, r, i)];
    }
}

FX_GLOBAL void ferrofx_rows_f32_to_f64(fx_rows_params p, const float* src, double* dst) {
    unsigned i = fx_bid() * fx_ntid() + fx_tid();
    if (i >= p.n) {
        return;
    }
    for (unsigned r = fx_bid_y(); r < p.rows; r += fx_nbid_y()) {
        dst[fx_rows_dst(&p, r, i)] = (double)src[fx_rows_src(&p, r, i)];
    }
}
