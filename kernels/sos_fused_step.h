/* The fused scan's group arithmetic in one float type (included by sos_fused_math.h once
 * per precision, no include guard): FX_T the float type, FX_FV its group state, FX_V2
 * and FX_SEC its section state and record, FX_FMA its fused multiply-add, FX_N(name) the
 * function names (fx_fused_step for float, fx_fused_step64 for double). The operation
 * order is src/gpu/fused.rs's model's, in either precision.
 */

/* v + (T - I) v with t holding T - I: per row, the first product, then fused
 * multiply-adds in column order, then the add (fused.rs's `advance`). */
FX_HD FX_FV FX_N(fx_fused_advance)(const FX_T* t, const FX_FV* v) {
    FX_FV r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        const FX_T* row = t + i * FX_FUSED_W;
        FX_T acc = row[0] * v->v[0];
        FX_UNROLL
        for (unsigned k = 1; k < FX_FUSED_W; k++) {
            acc = FX_FMA(row[k], v->v[k], acc);
        }
        r.v[i] = v->v[i] + acc;
    }
    return r;
}

FX_HD FX_FV FX_N(fx_fused_add)(const FX_FV* a, const FX_FV* b) {
    FX_FV r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        r.v[i] = a->v[i] + b->v[i];
    }
    return r;
}

FX_HD FX_FV FX_N(fx_fused_zero)(void) {
    FX_FV r;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_W; i++) {
        r.v[i] = (FX_T)0;
    }
    return r;
}

/* One sample through the group's `count` sections from state s (each section's output
 * the next one's input); returns the group's output. */
FX_HD FX_T FX_N(fx_fused_step)(const FX_SEC* secs, unsigned count, FX_FV* s, FX_T x) {
    FX_T u = x;
    FX_UNROLL
    for (unsigned i = 0; i < FX_FUSED_MAX; i++) {
        if (i < count) {
            FX_V2 st;
            st.x = s->v[2 * i];
            st.y = s->v[2 * i + 1];
            u = FX_N(fx_sos_step)(&secs[i], &st, u);
            s->v[2 * i] = st.x;
            s->v[2 * i + 1] = st.y;
        }
    }
    return u;
}

/* M^(L j) v: the tables of j's set bits (k ascending) applied in turn. */
FX_HD FX_FV FX_N(fx_fused_power)(const FX_T* tables, unsigned j, FX_FV v) {
    FX_UNROLL
    for (unsigned k = 0; k + 1 < FX_FUSED_STEPS; k++) {
        if ((j >> k) & 1u) {
            v = FX_N(fx_fused_advance)(tables + k * FX_FUSED_W * FX_FUSED_W, &v);
        }
    }
    return v;
}
