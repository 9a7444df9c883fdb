/* Per-thread math of the fused cascade scan (sos_fused.cu), shared with the host tests.
 *
 * A group of up to FX_FUSED_MAX sections of a cascade runs as one linear system whose
 * state is the sections' states side by side (FX_FUSED_W floats, zero past the group's).
 * src/gpu/fused.rs holds the algorithm's description, the transfer tables (M^(L 2^k) - I,
 * k = 0..FX_FUSED_STEPS-1, row-major FX_FUSED_W x FX_FUSED_W, computed in double and
 * rounded once) and the CPU model whose operation order this follows exactly.
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
    unsigned table_base;   /* the group's tables in `tables` (floats) */
    unsigned channels;
    unsigned pad;
} fx_fused_params;

typedef struct {
    float v[FX_FUSED_W];
} fx_fvec;

/* v + (T - I) v with t holding T - I: per row, the first product, then fused
 * multiply-adds in column order, then the add (fused.rs's `advance`). */
FX_HD fx_fvec fx_fused_advance(const float* t, const fx_fvec* v) {
    fx_fvec r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        const float* row = t + i * FX_FUSED_W;
        float acc = row[0] * v->v[0];
        FX_UNROLL
        for (unsigned k = 1; k < FX_FUSED_W; k++) {
            acc = fx_fma(row[k], v->v[k], acc);
        }
        r.v[i] = v->v[i] + acc;
    }
    return r;
}

FX_HD fx_fvec fx_fused_add(const fx_fvec* a, const fx_fvec* b) {
    fx_fvec r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        r.v[i] = a->v[i] + b->v[i];
    }
    return r;
}

FX_HD fx_fvec fx_fused_zero(void) {
    fx_fvec r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        r.v[i] = 0.0f;
    }
    return r;
}

/* One sample through the group's `count` sections from state s (each section's output
 * the next one's input); returns the group's output. */
FX_HD float fx_fused_step(const fx_section* secs, unsigned count, fx_fvec* s, float x) {
    float u = x;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_MAX; i++) {
        if (i < count) {
            fx_vec2 st;
            st.x = s->v[2 * i];
            st.y = s->v[2 * i + 1];
            u = fx_sos_step(&secs[i], &st, u);
            s->v[2 * i] = st.x;
            s->v[2 * i + 1] = st.y;
        }
    }
    return u;
}

/* M^(L j) v: the tables of j's set bits (k ascending) applied in turn. */
FX_HD fx_fvec fx_fused_power(const float* tables, unsigned j, fx_fvec v) {
    FX_UNROLL
    for (unsigned k = 0; k + 1 < FX_FUSED_STEPS; k++) {
        if ((j >> k) & 1u) {
            v = fx_fused_advance(tables + k * FX_FUSED_W * FX_FUSED_W, &v);
        }
    }
    return v;
}

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
