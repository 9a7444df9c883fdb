/* Per-thread math of the FFT-partitioned FIR kernels (fft_fir.cu), shared with the host
 * tests. Uniformly partitioned overlap-save, partitions of P taps, FFTs of n = 2P points
 * (the wgpu shader's scheme, shaders/fft_fir.wgsl):
 *   x'(u), u in [-(taps-1), frames): the stage's input (history, then this block)
 *   X_s = FFT(x'[(i-1)P, (i+1)P)), i = s - pcount          (segments)
 *   Y_j = sum_q X_{j-q} H_q, H_q = FFT(taps[qP, (q+1)P))    (mac, stored conjugated)
 *   y[jP + m] = Re(FFT(conj Y_j))[P + m] / n                 (extract: the inverse FFT)
 * The FFT is an iterative radix-2 Stockham autosort, one launch per stage, ping-ponging
 * between two buffers, with twiddles computed on the host in float64.
 */
#ifndef FX_FFT_MATH_H
#define FX_FFT_MATH_H
#include "fx_cuda.h"

#define FX_FFT_THREADS 256

typedef struct {
    unsigned n;           /* FFT size 2P */
    unsigned half_span;   /* Stockham stage: L/2 */
    unsigned r;           /* Stockham stage: n/L */
    unsigned tw_scale;    /* twiddle table stride for this n */
    unsigned part;        /* P */
    unsigned pcount;      /* partitions of the taps */
    unsigned segs;        /* input segments per channel */
    unsigned outs;        /* output segments per channel */
    unsigned taps;
    unsigned frames;
    unsigned stride;      /* planar stride of work and out */
    unsigned hist_base;
    unsigned kernel_base; /* first H bin of this stage in `kernel` */
    unsigned channels;
    unsigned pad0, pad1;
} fx_fft_params;

FX_HD fx_vec2 fx_cmul(fx_vec2 a, fx_vec2 b) {
    fx_vec2 r;
    r.x = a.x * b.x - a.y * b.y;
    r.y = a.x * b.y + a.y * b.x;
    return r;
}

/* Input sample u of channel ch: this block for u >= 0, the history before it, else 0. */
FX_HD float fx_fft_input(const fx_fft_params* p, const float* work, const float* history, unsigned ch, int u) {
    int hist_len = (int)p->taps - 1;
    if (u >= (int)p->frames || u < -hist_len) {
        return 0.0f;
    }
    if (u >= 0) {
        return work[ch * p->stride + (unsigned)u];
    }
    return history[p->hist_base + ch * (unsigned)hist_len + (unsigned)(hist_len + u)];
}

/* Segment s's point m of channel ch (the FFT's input). */
FX_HD fx_vec2 fx_fft_segment(const fx_fft_params* p, const float* work, const float* history, unsigned ch, unsigned s, unsigned m) {
    int i = (int)s - (int)p->pcount;
    int u = (i - 1) * (int)p->part + (int)m;
    fx_vec2 v = {fx_fft_input(p, work, history, ch, u), 0.0f};
    return v;
}

/* Butterfly b of one Stockham stage of the transform at src[base..base + n). */
FX_HD void fx_fft_butterfly(const fx_fft_params* p, const fx_vec2* tw, const fx_vec2* src, fx_vec2* dst, unsigned base, unsigned b) {
    unsigned j = b / p->r;
    unsigned k = b % p->r;
    fx_vec2 w = tw[j * p->r * p->tw_scale];
    fx_vec2 c0 = src[base + j * 2u * p->r + k];
    fx_vec2 c1 = fx_cmul(w, src[base + j * 2u * p->r + k + p->r]);
    fx_vec2 a = {c0.x + c1.x, c0.y + c1.y};
    fx_vec2 d = {c0.x - c1.x, c0.y - c1.y};
    dst[base + j * p->r + k] = a;
    dst[base + (j + p->half_span) * p->r + k] = d;
}

/* Bin f of output segment j of channel ch: sum_q X_{j+pcount-q} H_q, conjugated (so the
 * forward FFT that follows computes the inverse). */
FX_HD fx_vec2 fx_fft_mac(const fx_fft_params* p, const fx_vec2* src, const fx_vec2* kernel, unsigned ch, unsigned j, unsigned f) {
    fx_vec2 acc = {0.0f, 0.0f};
    for (unsigned q = 0; q < p->pcount; q++) {
        unsigned s = j + p->pcount - q;
        fx_vec2 t = fx_cmul(src[(ch * p->segs + s) * p->n + f], kernel[p->kernel_base + q * p->n + f]);
        acc.x = acc.x + t.x;
        acc.y = acc.y + t.y;
    }
    fx_vec2 r = {acc.x, -acc.y};
    return r;
}

/* Output sample m of segment j of channel ch. */
FX_HD float fx_fft_extract(const fx_fft_params* p, const fx_vec2* src, unsigned ch, unsigned j, unsigned m) {
    return src[(ch * p->outs + j) * p->n + p->part + m].x / (float)p->n;
}

#endif
