/* Per-thread math of the direct FIR kernel (fir.cu), shared with the host tests.
 *     y[n] = sum_k h[k] x[n - k],  x[m < 0] = history[hist_len + m]
 * `history` holds the last taps-1 inputs of each channel, oldest first (the wgpu
 * shader's layout, shaders/fir.wgsl).
 */
#ifndef FX_FIR_MATH_H
#define FX_FIR_MATH_H
#include "fx_cuda.h"

#define FX_FIR_TILE 256

typedef struct {
    unsigned frames;
    unsigned taps;
    unsigned stride;    /* planar channel stride of `work` and `out` */
    unsigned tap_base;  /* this stage's first tap in `taps` */
    unsigned hist_base; /* this stage's first history sample: [channel][taps - 1] from here */
    unsigned channels;
    unsigned pad0, pad1;
} fx_fir_params;

/* Input sample m of channel ch: the block for m >= 0, the history before it. */
FX_HD float fx_fir_input(const fx_fir_params* p, const float* work, const float* history, unsigned ch, int m) {
    if (m >= (int)p->frames) {
        return 0.0f;
    }
    if (m >= 0) {
        return work[ch * p->stride + (unsigned)m];
    }
    int hist_len = (int)p->taps - 1;
    if (m < -hist_len) {
        return 0.0f;
    }
    return history[p->hist_base + ch * (unsigned)hist_len + (unsigned)(hist_len + m)];
}

/* One tile's contribution to output t of the tile: hs[kk] are taps k0 + kk, xs holds the
 * 511 inputs n0 - k0 - 255 .. n0 - k0 + 255; output n0 + t uses xs[t + 255 - kk]. */
FX_HD float fx_fir_tile(const float* hs, const float* xs, unsigned t, float acc) {
    for (unsigned kk = 0; kk < FX_FIR_TILE; kk++) {
        acc = fx_fma(hs[kk], xs[t + FX_FIR_TILE - 1 - kk], acc);
    }
    return acc;
}

#endif
