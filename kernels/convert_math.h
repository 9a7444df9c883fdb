/* Row copies that change the sample type (convert.cu, shared with the host tests): the
 * device-resident path between a caller's float64 arrays and the chain's float32
 * buffers. Row r's sample i lies at r * stride + at + i on each side (64-bit offsets:
 * a caller's array may pass 2^32 samples).
 */
#ifndef FX_CONVERT_MATH_H
#define FX_CONVERT_MATH_H
#include "fx_cuda.h"

/* Threads per block of the row-copy kernels. */
#define FX_ROWS_THREADS 256

typedef struct {
    unsigned src_stride; /* samples between rows of the source */
    unsigned src_at;     /* first sample of each source row */
    unsigned dst_stride;
    unsigned dst_at;
    unsigned rows;
    unsigned n;          /* samples per row */
    unsigned pad0, pad1;
} fx_rows_params;

FX_HD unsigned long long fx_rows_src(const fx_rows_params* p, unsigned r, unsigned i) {
    return (unsigned long long)r * p->src_stride + p->src_at + i;
}

FX_HD unsigned long long fx_rows_dst(const fx_rows_params* p, unsigned r, unsigned i) {
    return (unsigned long long)r * p->dst_stride + p->dst_at + i;
}

#endif
