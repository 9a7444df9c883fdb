/* The fused scan's three kernels in one float type (included by sos_fused.cu once per
 * precision, no include guard): FX_T, FX_FV, FX_V2, FX_SEC and FX_N as in
 * sos_fused_step.h, FX_K(name) the kernel names. sos_fused.cu says what each kernel does.
 * Both precisions stage a chunk's samples through shared rows of FX_FUSED_ROW numbers
 * (fx_seg_load / fx_seg_store: a warp moves 16-sample runs of two chunks per
 * instruction, 64 contiguous bytes in float, 128 in double).
 */

FX_GLOBAL void FX_K(ends)(fx_fused_params p, const FX_T* work, const FX_SEC* sections, const FX_T* tables, FX_T* prefix) {
    /* The chunks' staging rows, then (after the chunk pass's last barrier) the end
     * states: one array, so double's fits the 48 KiB of static shared memory. */
    FX_SHARED FX_T shared_rows[FX_FUSED_TILE * FX_FUSED_ROW];
    FX_SHARED FX_SEC secs[FX_FUSED_MAX];
    FX_T* tile = shared_rows;
    FX_T* ends = shared_rows;
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
    const FX_T* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
    FX_T* rows = tile + first * FX_ROW;
    FX_T* row = tile + j * FX_ROW;
    unsigned len = fx_fused_chunk_len(&q, j);
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    fx_sync();
    FX_FV s = FX_N(fx_fused_zero)();
    for (unsigned g = 0; g < segs; g++) {
        FX_N(fx_seg_load)(&q, x, rows, first, lane, g);
        fx_sync();
        unsigned m = fx_seg_len(len, g);
        for (unsigned k = 0; k < m; k++) {
            FX_N(fx_fused_step)(secs, p.count, &s, row[k]);
        }
        fx_sync();
    }
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        ends[j * FX_FUSED_ROW + i] = s.v[i];
    }
    fx_sync();
    const FX_T* tab = tables + p.table_base;
    unsigned offset = 1;
    for (unsigned k = 0; k + 1 < FX_FUSED_STEPS && offset < q.chunks; k++) {
        FX_FV v;
        FX_UNROLL
        for (unsigned i = 0; i < FX_FUSED_W; i++) {
            v.v[i] = ends[j * FX_FUSED_ROW + i];
        }
        if (j >= offset) {
            FX_FV e;
            FX_UNROLL
            for (unsigned i = 0; i < FX_FUSED_W; i++) {
                e.v[i] = ends[(j - offset) * FX_FUSED_ROW + i];
            }
            FX_FV carried = FX_N(fx_fused_advance)(tab + k * FX_FUSED_W * FX_FUSED_W, &e);
            v = FX_N(fx_fused_add)(&v, &carried);
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

FX_GLOBAL void FX_K(carry)(fx_fused_params p, const FX_T* tables, const FX_T* prefix, const FX_V2* states, FX_T* carry) {
    FX_SHARED FX_T v[FX_FUSED_W];
    unsigned ch = fx_bid();
    unsigned i = fx_tid();
    unsigned sec = i / 2;
    FX_T init = (FX_T)0;
    if (sec < p.count) {
        FX_V2 st = states[p.state_base + ch * p.state_stride + sec];
        init = (i & 1u) ? st.y : st.x;
    }
    v[i] = init;
    fx_sync();
    const FX_T* row = tables + p.table_base + (FX_FUSED_STEPS - 1) * FX_FUSED_W * FX_FUSED_W + i * FX_FUSED_W;
    for (unsigned t = 0; t < p.tiles; t++) {
        carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i] = v[i];
        if (t + 1 < p.tiles) {
            FX_T acc = row[0] * v[0];
            for (unsigned k = 1; k < FX_FUSED_W; k++) {
                acc = FX_FMA(row[k], v[k], acc);
            }
            FX_T next = prefix[fx_fused_prefix_at(&p, ch, i, t * FX_FUSED_TILE + FX_FUSED_TILE - 1)] + (v[i] + acc);
            fx_sync();
            v[i] = next;
            fx_sync();
        }
    }
}

FX_GLOBAL void FX_K(run)(fx_fused_params p, FX_T* work, const FX_SEC* sections, const FX_T* tables, const FX_T* prefix, const FX_T* carry, FX_V2* states) {
    FX_SHARED FX_T tile[FX_FUSED_TILE * FX_FUSED_ROW];
    FX_SHARED FX_SEC secs[FX_FUSED_MAX];
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
    FX_T* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
    FX_T* rows = tile + first * FX_ROW;
    FX_T* row = tile + j * FX_ROW;
    unsigned len = fx_fused_chunk_len(&q, j);
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    FX_FV s;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        s.v[i] = carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i];
    }
    s = FX_N(fx_fused_power)(tables + p.table_base, j, s);
    if (j > 0 && c <= p.chunks) {
        FX_FV before;
        FX_UNROLL
        for (unsigned i = 0; i < FX_FUSED_W; i++) {
            before.v[i] = prefix[fx_fused_prefix_at(&p, ch, i, c - 1)];
        }
        s = FX_N(fx_fused_add)(&before, &s);
    }
    fx_sync();
    for (unsigned g = 0; g < segs; g++) {
        FX_N(fx_seg_load)(&q, x, rows, first, lane, g);
        fx_sync();
        unsigned m = fx_seg_len(len, g);
        for (unsigned k = 0; k < m; k++) {
            row[k] = FX_N(fx_fused_step)(secs, p.count, &s, row[k]);
        }
        fx_sync();
        FX_N(fx_seg_store)(&q, x, rows, first, lane, g);
        fx_sync();
    }
    if (c + 1 == p.chunks) {
        for (unsigned i = 0; i < p.count; i++) {
            FX_V2 st;
            st.x = s.v[2 * i];
            st.y = s.v[2 * i + 1];
            states[p.state_base + ch * p.state_stride + i] = st;
        }
    }
}
