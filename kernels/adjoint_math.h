/* One backward step of a second-order section for the PyTorch layer's gradients
 * (adjoint.cu, shared with the host tests; the arithmetic of src/signal/adjoint.rs and
 * python/ferrofx/torch.py's `_adjoint`, in its reversed, padded layout).
 *
 * Every row holds `row_len` = frames + 2 doubles. `lam` (the section's adjoint, its
 * all-pole part already run over the reversed gradient) and `g` are in reversed time,
 * their first two zero; `xs` and `ys` (the section's input and output) in forward time,
 * as the forward pass wrote them (its frames first; the two after them are never read):
 * reversed position q of a row is forward position row_len - 1 - q, so the step reads
 * the forward signals backwards instead of a reversed copy being made of each. At
 * flattened index i (in row position q = i % row_len) the step forms
 *   g[i]   = b0 lam[i] + b1 lam[i-1] + b2 lam[i-2]    (0 for q < 2),
 * the gradient of the section before, and adds to six sums
 *   db_k += lam[i-k] x,  da_k -= lam[i-k] y   (k = 0, 1, 2; q >= 2;
 *   x = xs[f], y = ys[f], f = i - q + row_len - 1 - q, the same frame forward),
 * so that one pass over the four arrays does what six dot products and three shifted
 * multiply-adds did. Indices are 64-bit: a batch may pass 2^32 samples.
 */
#ifndef FX_ADJOINT_MATH_H
#define FX_ADJOINT_MATH_H
#include "fx_cuda.h"

/* Threads per block of the step kernel (its reduction's width). */
#define FX_ADJ_THREADS 256

typedef struct {
    unsigned long long total; /* doubles in all rows */
    unsigned row_len;         /* doubles per row: frames + 2 */
    unsigned pad0;
    double b0, b1, b2;
} fx_adjoint_params;

/* Sample i: its next gradient into g[i], its six products added to `sums`. */
FX_HD void fx_adjoint_at(const fx_adjoint_params* p, const double* lam, const double* xs, const double* ys, double* g,
                         unsigned long long i, double sums[6]) {
    unsigned q = (unsigned)(i % p->row_len);
    if (q < 2) {
        g[i] = 0.0;
        return;
    }
    double l0 = lam[i], l1 = lam[i - 1], l2 = lam[i - 2];
    g[i] = p->b0 * l0 + p->b1 * l1 + p->b2 * l2;
    unsigned long long f = i + (p->row_len - 1) - 2ull * q;
    double x = xs[f], y = ys[f];
    sums[0] += l0 * x;
    sums[1] += l1 * x;
    sums[2] += l2 * x;
    sums[3] -= l0 * y;
    sums[4] -= l1 * y;
    sums[5] -= l2 * y;
}

/* Thread t of `threads` in the grid: samples t, t + threads, ...; its six sums. */
FX_HD void fx_adjoint_thread(const fx_adjoint_params* p, const double* lam, const double* xs, const double* ys, double* g,
                             unsigned long long t, unsigned long long threads, double sums[6]) {
    for (int j = 0; j < 6; j++) {
        sums[j] = 0.0;
    }
    for (unsigned long long i = t; i < p->total; i += threads) {
        fx_adjoint_at(p, lam, xs, ys, g, i, sums);
    }
}

/* One level of a block's tree reduction over `red` (6 x FX_ADJ_THREADS, sum j of thread
 * t at j * FX_ADJ_THREADS + t): thread `tid` < `half` adds in thread tid + half's. */
FX_HD void fx_adjoint_fold(double* red, unsigned tid, unsigned half) {
    for (int j = 0; j < 6; j++) {
        red[j * FX_ADJ_THREADS + tid] += red[j * FX_ADJ_THREADS + tid + half];
    }
}

#endif
