/* The fused cascade scan (FerroFX; launched by src/gpu/cuda/): a group of up to 8
 * sections of a float32 cascade over a long block, time-parallel over many thread blocks
 * per channel, the samples read twice and written once per group (the per-section scan
 * of sos.cu reads them twice and writes them once per section, on one thread block per
 * channel). Three kernels, launched in order on one stream (src/gpu/fused.rs describes the
 * algorithm and models it; per-thread math in sos_fused_math.h):
 * - ferrofx_sos_fused_ends: grid (tiles, channels), FX_FUSED_TILE threads, one chunk of
 *   chunk_len samples each: the chunk through the group from a zero state, then a
 *   Hillis-Steele scan of the end states across the tile; each chunk's scanned state (its
 *   prefix) into `prefix`.
 * - ferrofx_sos_fused_carry: grid (channels), FX_FUSED_W threads (one per state row):
 *   the tiles' true start states one after another from the block's state, into `carry`.
 * - ferrofx_sos_fused_run: grid (tiles, channels), FX_FUSED_TILE threads: each chunk's
 *   true start state from its tile's and the prefix before it, then the chunk through the
 *   group again, in place; the channel's last chunk leaves the sections' states.
 * The chunks' samples move through shared memory a segment at a time as in sos.cu
 * (fx_seg_load / fx_seg_store), so global memory is read and written in contiguous runs.
 */
#include "sos_fused_math.h"

FX_GLOBAL void ferrofx_sos_fused_ends(fx_fused_params p, const float* work, const fx_section* sections, const float* tables, float* prefix) {
    FX_SHARED float tile[FX_SOS_THREADS * FX_ROW];
    FX_SHARED float ends[FX_FUSED_TILE * FX_FUSED_ROW];
    FX_SHARED fx_section secs[FX_FUSED_MAX];
    unsigned t = fx_bid();
    unsigned ch = fx_bid_y();
    unsigned j = fx_tid();
    unsigned lane = j & 31;
    unsigned first = j & ~31u;
    if (j < p.count) {
        secs[j] = sections[p.first + j];
    }
    unsigned c0 = t * FX_FUSED_TILE;
    fx_sos_params q = fx_fused_tile(&p, c0 * p.chunk_len);
    const float* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
    float* rows = tile + first * FX_ROW;
    float* row = tile + j * FX_ROW;
    unsigned len = fx_fused_chunk_len(&q, j);
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    fx_sync();
    fx_fvec s = fx_fused_zero();
    for (unsigned g = 0; g < segs; g++) {
        fx_seg_load(&q, x, rows, first, lane, g);
        fx_sync();
        unsigned m = fx_seg_len(len, g);
        for (unsigned k = 0; k < m; k++) {
            fx_fused_step(secs, p.count, &s, row[k]);
        }
        fx_sync();
    }
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        ends[j * FX_FUSED_ROW + i] = s.v[i];
    }
    fx_sync();
    const float* tab = tables + p.table_base;
    unsigned offset = 1;
    for (unsigned k = 0; k + 1 < FX_FUSED_STEPS && offset < q.chunks; k++) {
        fx_fvec v;
        FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
            v.v[i] = ends[j * FX_FUSED_ROW + i];
        }
        if (j >= offset) {
            fx_fvec e;
            FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
                e.v[i] = ends[(j - offset) * FX_FUSED_ROW + i];
            }
            fx_fvec carried = fx_fused_advance(tab + k * FX_FUSED_W * FX_FUSED_W, &e);
            v = fx_fused_add(&v, &carried);
        }
        fx_sync();
        FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
            ends[j * FX_FUSED_ROW + i] = v.v[i];
        }
        fx_sync();
        offset *= 2;
    }
    if (j < q.chunks) {
        FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
            prefix[fx_fused_prefix_at(&p, ch, i, c0 + j)] = ends[j * FX_FUSED_ROW + i];
        }
    }
}

FX_GLOBAL void ferrofx_sos_fused_carry(fx_fused_params p, const float* tables, const float* prefix, const fx_vec2* states, float* carry) {
    FX_SHARED float v[FX_FUSED_W];
    unsigned ch = fx_bid();
    unsigned i = fx_tid();
    unsigned sec = i / 2;
    float init = 0.0f;
    if (sec < p.count) {
        fx_vec2 st = states[p.state_base + ch * p.state_stride + sec];
        init = (i & 1u) ? st.y : st.x;
    }
    v[i] = init;
    fx_sync();
    const float* row = tables + p.table_base + (FX_FUSED_STEPS - 1) * FX_FUSED_W * FX_FUSED_W + i * FX_FUSED_W;
    for (unsigned t = 0; t < p.tiles; t++) {
        carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i] = v[i];
        if (t + 1 < p.tiles) {
            float acc = row[0] * v[0];
            for (unsigned k = 1; k < FX_FUSED_W; k++) {
                acc = fx_fma(row[k], v[k], acc);
            }
            float next = prefix[fx_fused_prefix_at(&p, ch, i, t * FX_FUSED_TILE + FX_FUSED_TILE - 1)] + (v[i] + acc);
            fx_sync();
            v[i] = next;
            fx_sync();
        }
    }
}

FX_GLOBAL void ferrofx_sos_fused_run(fx_fused_params p, float* work, const fx_section* sections, const float* tables, const float* prefix, const float* carry, fx_vec2* states) {
    FX_SHARED float tile[FX_SOS_THREADS * FX_ROW];
    FX_SHARED fx_section secs[FX_FUSED_MAX];
    unsigned t = fx_bid();
    unsigned ch = fx_bid_y();
    unsigned j = fx_tid();
    unsigned lane = j & 31;
    unsigned first = j & ~31u;
    if (j < p.count) {
        secs[j] = sections[p.first + j];
    }
    unsigned c0 = t * FX_FUSED_TILE;
    unsigned c = c0 + j;
    fx_sos_params q = fx_fused_tile(&p, c0 * p.chunk_len);
    float* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
    float* rows = tile + first * FX_ROW;
    float* row = tile + j * FX_ROW;
    unsigned len = fx_fused_chunk_len(&q, j);
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    fx_fvec s;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        s.v[i] = carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i];
    }
    s = fx_fused_power(tables + p.table_base, j, s);
    if (j > 0 && c <= p.chunks) {
        fx_fvec before;
        FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
            before.v[i] = prefix[fx_fused_prefix_at(&p, ch, i, c - 1)];
        }
        s = fx_fused_add(&before, &s);
    }
    fx_sync();
    for (unsigned g = 0; g < segs; g++) {
        fx_seg_load(&q, x, rows, first, lane, g);
        fx_sync();
        unsigned m = fx_seg_len(len, g);
        for (unsigned k = 0; k < m; k++) {
            row[k] = fx_fused_step(secs, p.count, &s, row[k]);
        }
        fx_sync();
        fx_seg_store(&q, x, rows, first, lane, g);
        fx_sync();
    }
    if (c + 1 == p.chunks) {
        for (unsigned i = 0; i < p.count; i++) {
            fx_vec2 st;
            st.x = s.v[2 * i];
            st.y = s.v[2 * i + 1];
            states[p.state_base + ch * p.state_stride + i] = st;
        }
    }
}
