/* The delta form's per-sample arithmetic in one float type, and the scan's segment staging
 * (included by sos_math.h once per precision between fx_prec_float.h or fx_prec_double.h
 * and fx_prec_end.h, no include guard): FX_T the float type, FX_V2 its state pair, FX_SEC its
 * section record, FX_FMA its fused multiply-add, FX_N(name) the function names
 * (fx_sos_step for float, fx_sos_step64 for double). The operation order is
 * realize.rs's `step`/`advance` (and the WGSL shader's), so every path rounds alike.
 */

/* One sample through one section; returns the output, updates the state. */
FX_HD FX_T FX_N(fx_sos_step)(const FX_SEC* sec, FX_V2* s, FX_T x) {
    FX_T y = FX_FMA(sec->c[0], s->x, FX_FMA(sec->c[1], s->y, sec->d * x));
    FX_T i0 = FX_FMA(sec->delta[0], s->x, FX_FMA(sec->delta[1], s->y, sec->b[0] * x));
    FX_T i1 = FX_FMA(sec->delta[2], s->x, FX_FMA(sec->delta[3], s->y, sec->b[1] * x));
    s->x = s->x + i0;
    s->y = s->y + i1;
    return y;
}

/* The state only (the scan's first pass). */
FX_HD void FX_N(fx_sos_advance_state)(const FX_SEC* sec, FX_V2* s, FX_T x) {
    FX_T i0 = FX_FMA(sec->delta[0], s->x, FX_FMA(sec->delta[1], s->y, sec->b[0] * x));
    FX_T i1 = FX_FMA(sec->delta[2], s->x, FX_FMA(sec->delta[3], s->y, sec->b[1] * x));
    s->x = s->x + i0;
    s->y = s->y + i1;
}

/* v + (M - I) v, with m holding M - I row-major (a scan table entry). */
FX_HD FX_V2 FX_N(fx_advance)(const FX_T* m, FX_V2 v) {
    FX_V2 r;
    r.x = v.x + FX_FMA(m[0], v.x, m[1] * v.y);
    r.y = v.y + FX_FMA(m[2], v.x, m[3] * v.y);
    return r;
}

/* The scan's combine: this chunk's end state plus an earlier one carried over. */
FX_HD FX_V2 FX_N(fx_scan_combine)(const FX_T* m, FX_V2 mine, FX_V2 earlier) {
    FX_V2 carried = FX_N(fx_advance)(m, earlier);
    FX_V2 r;
    r.x = mine.x + carried.x;
    r.y = mine.y + carried.y;
    return r;
}

/* The state after v[0..m) from state s (pass 1's arithmetic). */
FX_HD FX_V2 FX_N(fx_samples_end)(const FX_SEC* sec, FX_V2 s, const FX_T* v, unsigned m) {
    for (unsigned k = 0; k < m; k++) {
        FX_N(fx_sos_advance_state)(sec, &s, v[k]);
    }
    return s;
}

/* v[0..m) in place from state s; returns the state after them. */
FX_HD FX_V2 FX_N(fx_samples_run)(const FX_SEC* sec, FX_V2 s, FX_T* v, unsigned m) {
    for (unsigned k = 0; k < m; k++) {
        v[k] = FX_N(fx_sos_step)(sec, &s, v[k]);
    }
    return s;
}

/* src[0..m) into dst[0..m) (dst may be src: in place) from state s; returns the state
 * after them. */
FX_HD FX_V2 FX_N(fx_samples_run_to)(const FX_SEC* sec, FX_V2 s, const FX_T* src, FX_T* dst, unsigned m) {
    for (unsigned k = 0; k < m; k++) {
        dst[k] = FX_N(fx_sos_step)(sec, &s, src[k]);
    }
    return s;
}

#if defined(__CUDA_ARCH__)
/* One segment of this warp's 32 chunks into their rows (see fx_seg_index in sos_math.h);
 * samples outside the chunk or the block read as 0. */
FX_DEVICE void FX_N(fx_seg_load)(const fx_sos_params* p, const FX_T* x, FX_T* rows, unsigned first, unsigned lane, unsigned seg) {
    for (unsigned i = 0; i < 16; i++) {
        unsigned slot;
        unsigned n = fx_seg_index(p, first, lane, i, seg, &slot);
        rows[slot] = n < p->frames ? x[n] : (FX_T)0;
    }
}

/* The rows back into the block, where they hold samples of it. */
FX_DEVICE void FX_N(fx_seg_store)(const fx_sos_params* p, FX_T* x, const FX_T* rows, unsigned first, unsigned lane, unsigned seg) {
    for (unsigned i = 0; i < 16; i++) {
        unsigned slot;
        unsigned n = fx_seg_index(p, first, lane, i, seg, &slot);
        if (n < p->frames) {
            x[n] = rows[slot];
        }
    }
}

/* The scan's second pass, on the device: the block's chunk end states `ends` (in shared
 * memory, one per thread `j`) become each chunk's true end state by a Hillis-Steele
 * inclusive scan over `chunks` chunks with the section's transfer matrices `table`
 * (FX_SCAN_STEPS entries of A^(L 2^k) - I). All threads of the block call it. */
FX_DEVICE void FX_N(fx_scan_ends)(FX_V2* ends, unsigned j, unsigned chunks, const FX_T* table) {
    unsigned offset = 1;
    for (unsigned k = 0; k < FX_SCAN_STEPS && offset < chunks; k++) {
        FX_V2 v = ends[j];
        if (j >= offset) {
            v = FX_N(fx_scan_combine)(&table[k * 4], v, ends[j - offset]);
        }
        fx_sync();
        ends[j] = v;
        fx_sync();
        offset *= 2;
    }
}
#endif
