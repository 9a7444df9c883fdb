/* The PyTorch layer's backward step of one section on CUDA tensors (FerroFX; launched by
 * src/gpu/cuda/adjoint.rs for python/ferrofx/torch.py): adjoint_math.h's arithmetic, a
 * grid-stride pass of FX_ADJ_THREADS-thread blocks, each block's six sums reduced in
 * shared memory to partial[block * 6 + j] (the caller adds the blocks'). `g` must not
 * alias `lam` (each sample reads the two before it). */
#include "adjoint_math.h"

FX_DEVICE unsigned fx_nbid(void) { return __nvvm_read_ptx_sreg_nctaid_x(); }

FX_GLOBAL void ferrofx_adjoint_step64(fx_adjoint_params p, const double* lam, const double* xs, const double* ys, double* g,
                                      double* partial) {
    FX_SHARED double red[6 * FX_ADJ_THREADS];
    unsigned tid = fx_tid();
    double sums[6];
    fx_adjoint_thread(&p, lam, xs, ys, g, (unsigned long long)fx_bid() * FX_ADJ_THREADS + tid,
                      (unsigned long long)fx_nbid() * FX_ADJ_THREADS, sums);
    for (int j = 0; j < 6; j++) {
        red[j * FX_ADJ_THREADS + tid] = sums[j];
    }
    fx_sync();
    for (unsigned half = FX_ADJ_THREADS / 2; half > 0; half >>= 1) {
        if (tid < half) {
            fx_adjoint_fold(red, tid, half);
        }
        fx_sync();
    }
    if (tid < 6) {
        partial[fx_bid() * 6 + tid] = red[tid * FX_ADJ_THREADS];
    }
}
