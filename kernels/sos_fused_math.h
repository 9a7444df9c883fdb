/* Per-thread math of the fused cascade scan (sos_fused.cu), shared with the host tests.
 *
 * A group of up to FX_FUSED_MAX sections of a cascade runs as one linear system whose
 * state is the sections' states side by side (FX_FUSED_W numbers, zero past the group's),
 * in float (a chain's float32 cascades) or in double (a caller's float64 rows).
 * src/gpu/fused.rs holds the algorithm's description, the transfer tables (M^(L 2^k) - I,
 * k = 0..FX_FUSED_STEPS-1, row-major FX_FUSED_W x FX_FUSED_W, computed in double and
 * rounded once for float) and the CPU model whose operation order this follows exactly,
 * in either precision.
 */
#ifndef FX_SOS_FUSED_MATH_H
#define FX_SOS_FUSED_MATH_H
#include "sos_math.h"

#define FX_FUSED_MAX 8
#define FX_FUSED_W 16
#define FX_FUSED_TILE 256
#define FX_FUSED_STEPS 9
/* Shared rows of the end states: FX_FUSED_W floats and one of padding per thread, so a
 * warp reading one component of 32 neighbours' states hits distinct banks. */
#define FX_FUSED_ROW 17
/* The ends kernel uses one shared array for the staging rows (FX_SOS_THREADS rows of
 * FX_ROW) and then the end states (FX_FUSED_TILE rows of FX_FUSED_ROW). */
#if FX_FUSED_ROW != FX_ROW || FX_FUSED_TILE != FX_SOS_THREADS
#error "the fused kernels' staging rows and end-state rows must have one shape"
#endif

/* One launch's view of one fused group of one cascade. */
typedef struct {
    unsigned frames;       /* samples per channel in this job */
    unsigned chunk_len;    /* samples per chunk */
    unsigned chunks;       /* chunks per channel: ceil(frames / chunk_len) */
    unsigned tiles;        /* tiles per channel: ceil(chunks / FX_FUSED_TILE) */
    unsigned stride;       /* planar channel stride of `work` */
    unsigned first;        /* the group's first section in `sections` */
    unsigned count;        /* sections in the group, 1..FX_FUSED_MAX */
    unsigned state_base;   /* the group's first section's state for channel 0 */
    unsigned state_stride; /* states per channel (the whole cascade's sections) */
    unsigned table_base;   /* the group's tables in `tables` (numbers of the kernel's type) */
    unsigned channels;
    unsigned pad;
} fx_fused_params;

typedef struct {
    float v[FX_FUSED_W];
} fx_fvec;

/* The float64 kernels' group state (ferrofx_sos64d_fused_*: a caller's float64 rows). */
typedef struct {
    double v[FX_FUSED_W];
} fx_dfvec;

/* The group arithmetic in float (fx_fused_step, fx_fused_advance, ...) and in double
 * (fx_fused_step64, fx_fused_advance64, ...): one text, sos_fused_step.h. */
#include "fx_prec_float.h"
#include "sos_fused_step.h"
#include "fx_prec_end.h"
#include "fx_prec_double.h"
#include "sos_fused_step.h"
#include "fx_prec_end.h"

/* A tile's view for the segment staging of sos_math.h: its samples (from the tile's
 * first, `base`) in chunks of chunk_len. */
FX_HD fx_sos_params fx_fused_tile(const fx_fused_params* p, unsigned base) {
    fx_sos_params q;
    unsigned span = FX_FUSED_TILE * p->chunk_len;
    q.frames = p->frames - base < span ? p->frames - base : span;
    q.chunk_len = p->chunk_len;
    q.chunks = (q.frames + p->chunk_len - 1) / p->chunk_len;
    q.stride = p->stride;
    q.first = 0;
    q.count = 0;
    q.state_base = 0;
    q.channels = p->channels;
    return q;
}

/* Samples in chunk j of a tile (0 past its end). */
FX_HD unsigned fx_fused_chunk_len(const fx_sos_params* q, unsigned j) {
    unsigned start = j * q->chunk_len < q->frames ? j * q->chunk_len : q->frames;
    unsigned end = start + q->chunk_len < q->frames ? start + q->chunk_len : q->frames;
    return end - start;
}

/* Where component i of chunk c's prefix lies: component-major per channel, so a warp's
 * 32 chunks write and read 32 consecutive floats. */
FX_HD unsigned long long fx_fused_prefix_at(const fx_fused_params* p, unsigned ch, unsigned i, unsigned c) {
    return ((unsigned long long)ch * FX_FUSED_W + i) * p->chunks + c;
}

#endif
