/* FFT-partitioned FIR convolution over one block (FerroFX; launched by src/gpu/cuda/),
 * for FIRs too long for the direct kernel (fir.cu). The scheme is in fft_math.h. Launch
 * order per stage: segments -> log2(n) x pass -> mac -> log2(n) x pass -> extract, then
 * fir.cu's ferrofx_fir_history for the stage's new history.
 */
#include "fft_math.h"

/* Grid (n / 256, segs, channels): every segment's n input points. */
FX_GLOBAL void ferrofx_fft_segments(fx_fft_params p, const float* work, const float* history, fx_vec2* dst) {
    unsigned m = fx_bid() * FX_FFT_THREADS + fx_tid();
    unsigned s = fx_bid_y();
    unsigned ch = fx_bid_z();
    if (m >= p.n) {
        return;
    }
    dst[(ch * p.segs + s) * p.n + m] = fx_fft_segment(&p, work, history, ch, s, m);
}

/* Grid (ceil(n / 2 / 256), batch): one radix-2 Stockham stage of `batch` transforms. */
FX_GLOBAL void ferrofx_fft_pass(fx_fft_params p, const fx_vec2* tw, const fx_vec2* src, fx_vec2* dst) {
    unsigned b = fx_bid() * FX_FFT_THREADS + fx_tid();
    if (b >= p.n / 2u) {
        return;
    }
    fx_fft_butterfly(&p, tw, src, dst, fx_bid_y() * p.n, b);
}

/* Grid (n / 256, outs, channels). */
FX_GLOBAL void ferrofx_fft_mac(fx_fft_params p, const fx_vec2* src, const fx_vec2* kernel, fx_vec2* dst) {
    unsigned f = fx_bid() * FX_FFT_THREADS + fx_tid();
    unsigned j = fx_bid_y();
    unsigned ch = fx_bid_z();
    if (f >= p.n) {
        return;
    }
    dst[(ch * p.outs + j) * p.n + f] = fx_fft_mac(&p, src, kernel, ch, j, f);
}

/* Grid (ceil(P / 256), outs, channels). */
FX_GLOBAL void ferrofx_fft_extract(fx_fft_params p, const fx_vec2* src, float* out) {
    unsigned m = fx_bid() * FX_FFT_THREADS + fx_tid();
    unsigned j = fx_bid_y();
    unsigned ch = fx_bid_z();
    unsigned n_out = j * p.part + m;
    if (m >= p.part || n_out >= p.frames) {
        return;
    }
    out[ch * p.stride + n_out] = fx_fft_extract(&p, src, ch, j, m);
}
