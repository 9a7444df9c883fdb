/* Direct FIR convolution over one block with tiling (FerroFX; launched by src/gpu/cuda/).
 * Grid (ceil(frames / 256), channels), 256 threads: each block computes 256 outputs; per
 * tile of 256 taps it stages the taps and the 511 inputs they touch in shared memory
 * (the wgpu shader's scheme, shaders/fir.wgsl). ferrofx_fir_history then writes each
 * channel's new history (the last taps-1 inputs) to `hist_out`.
 */
#include "fir_math.h"

FX_GLOBAL void ferrofx_fir_direct(fx_fir_params p, const float* work, const float* taps, const float* history, float* out) {
    FX_SHARED float hs[FX_FIR_TILE];
    FX_SHARED float xs[2 * FX_FIR_TILE];
    unsigned ch = fx_bid_y();
    unsigned t = fx_tid();
    unsigned n0 = fx_bid() * FX_FIR_TILE;
    unsigned n = n0 + t;
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < p.taps; k0 += FX_FIR_TILE) {
        hs[t] = k0 + t < p.taps ? taps[p.tap_base + k0 + t] : 0.0f;
        int lo = (int)n0 - (int)k0 - (FX_FIR_TILE - 1);
        xs[t] = fx_fir_input(&p, work, history, ch, lo + (int)t);
        xs[t + FX_FIR_TILE] = fx_fir_input(&p, work, history, ch, lo + (int)t + FX_FIR_TILE);
        fx_sync();
        acc = fx_fir_tile(hs, xs, t, acc);
        fx_sync();
    }
    if (n < p.frames) {
        out[ch * p.stride + n] = acc;
    }
}

FX_GLOBAL void ferrofx_fir_history(fx_fir_params p, const float* work, const float* history, float* hist_out) {
    unsigned ch = fx_bid_y();
    unsigned i = fx_bid() * fx_ntid() + fx_tid();
    unsigned hist_len = p.taps - 1;
    if (i >= hist_len) {
        return;
    }
    int m = (int)p.frames - (int)hist_len + (int)i;
    hist_out[p.hist_base + ch * hist_len + i] = fx_fir_input(&p, work, history, ch, m);
}
