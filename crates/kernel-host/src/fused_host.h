/* The kernel-host's segment staging and fused-scan mirror in one float type (included by
 * host.c once per precision, no include guard): FX_T, FX_FV, FX_V2, FX_SEC, FX_FMA and
 * FX_N as in kernels/sos_fused_step.h, FX_HOST_FUSED the mirror's name. */

/* ferrofx_sos_scan's staging: every warp's rows filled from segment `seg` of its
 * chunks (fx_seg_load), or written back (fx_seg_store), lane by lane and round by round. */
static void FX_N(fx_host_seg_move)(const fx_sos_params* p, FX_T* x, FX_T* tile, unsigned seg, int store) {
    for (unsigned first = 0; first < FX_SOS_THREADS; first += 32) {
        FX_T* rows = tile + first * FX_ROW;
        for (unsigned lane = 0; lane < 32; lane++) {
            for (unsigned i = 0; i < 16; i++) {
                unsigned slot;
                unsigned n = fx_seg_index(p, first, lane, i, seg, &slot);
                if (store) {
                    if (n < p->frames) {
                        x[n] = rows[slot];
                    }
                } else {
                    rows[slot] = n < p->frames ? x[n] : (FX_T)0;
                }
            }
        }
    }
}

/* sos_fused.cu's three kernels in launch order over every channel: ends (per tile, its
 * threads between the barriers, the segment staging as fx_host_seg_move moves it), carry
 * (per channel, its FX_FUSED_W rows), run. `prefix` holds channels x FX_FUSED_W x chunks
 * floats, `carry` channels x tiles x FX_FUSED_W. */
void FX_HOST_FUSED(fx_fused_params p, FX_T* work, const FX_SEC* sections, const FX_T* tables, FX_T* prefix, FX_T* carry, FX_V2* states) {
    FX_T tile[FX_SOS_THREADS * FX_ROW];
    FX_FV* s = malloc(sizeof(FX_FV) * FX_FUSED_TILE);
    FX_FV* next = malloc(sizeof(FX_FV) * FX_FUSED_TILE);
    const FX_SEC* secs = sections + p.first;
    const FX_T* tab = tables + p.table_base;
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    /* ferrofx_sos_fused_ends */
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned t = 0; t < p.tiles; t++) {
            unsigned c0 = t * FX_FUSED_TILE;
            fx_sos_params q = fx_fused_tile(&p, c0 * p.chunk_len);
            FX_T* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
            for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                s[j] = FX_N(fx_fused_zero)();
            }
            for (unsigned g = 0; g < segs; g++) {
                FX_N(fx_host_seg_move)(&q, x, tile, g, 0);
                for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                    unsigned m = fx_seg_len(fx_fused_chunk_len(&q, j), g);
                    for (unsigned k = 0; k < m; k++) {
                        FX_N(fx_fused_step)(secs, p.count, &s[j], tile[j * FX_ROW + k]);
                    }
                }
            }
            unsigned offset = 1;
            for (unsigned k = 0; k + 1 < FX_FUSED_STEPS && offset < q.chunks; k++) {
                for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                    next[j] = s[j];
                    if (j >= offset) {
                        FX_FV carried = FX_N(fx_fused_advance)(tab + k * FX_FUSED_W * FX_FUSED_W, &s[j - offset]);
                        next[j] = FX_N(fx_fused_add)(&s[j], &carried);
                    }
                }
                memcpy(s, next, sizeof(FX_FV) * FX_FUSED_TILE);
                offset *= 2;
            }
            for (unsigned j = 0; j < q.chunks; j++) {
                for (unsigned i = 0; i < FX_FUSED_W; i++) {
                    prefix[fx_fused_prefix_at(&p, ch, i, c0 + j)] = s[j].v[i];
                }
            }
        }
    }
    /* ferrofx_sos_fused_carry */
    const FX_T* last = tab + (FX_FUSED_STEPS - 1) * FX_FUSED_W * FX_FUSED_W;
    for (unsigned ch = 0; ch < p.channels; ch++) {
        FX_T v[FX_FUSED_W];
        FX_T nv[FX_FUSED_W];
        for (unsigned i = 0; i < FX_FUSED_W; i++) {
            unsigned sec = i / 2;
            v[i] = (FX_T)0;
            if (sec < p.count) {
                FX_V2 st = states[p.state_base + ch * p.state_stride + sec];
                v[i] = (i & 1u) ? st.y : st.x;
            }
        }
        for (unsigned t = 0; t < p.tiles; t++) {
            for (unsigned i = 0; i < FX_FUSED_W; i++) {
                carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i] = v[i];
            }
            if (t + 1 < p.tiles) {
                for (unsigned i = 0; i < FX_FUSED_W; i++) {
                    const FX_T* row = last + i * FX_FUSED_W;
                    FX_T acc = row[0] * v[0];
                    for (unsigned k = 1; k < FX_FUSED_W; k++) {
                        acc = FX_FMA(row[k], v[k], acc);
                    }
                    nv[i] = prefix[fx_fused_prefix_at(&p, ch, i, t * FX_FUSED_TILE + FX_FUSED_TILE - 1)] + (v[i] + acc);
                }
                memcpy(v, nv, sizeof v);
            }
        }
    }
    /* ferrofx_sos_fused_run */
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned t = 0; t < p.tiles; t++) {
            unsigned c0 = t * FX_FUSED_TILE;
            fx_sos_params q = fx_fused_tile(&p, c0 * p.chunk_len);
            FX_T* x = work + (unsigned long long)ch * p.stride + (unsigned long long)c0 * p.chunk_len;
            for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                unsigned c = c0 + j;
                for (unsigned i = 0; i < FX_FUSED_W; i++) {
                    s[j].v[i] = carry[((unsigned long long)ch * p.tiles + t) * FX_FUSED_W + i];
                }
                s[j] = FX_N(fx_fused_power)(tab, j, s[j]);
                if (j > 0 && c <= p.chunks) {
                    FX_FV before;
                    for (unsigned i = 0; i < FX_FUSED_W; i++) {
                        before.v[i] = prefix[fx_fused_prefix_at(&p, ch, i, c - 1)];
                    }
                    s[j] = FX_N(fx_fused_add)(&before, &s[j]);
                }
            }
            for (unsigned g = 0; g < segs; g++) {
                FX_N(fx_host_seg_move)(&q, x, tile, g, 0);
                for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                    unsigned m = fx_seg_len(fx_fused_chunk_len(&q, j), g);
                    for (unsigned k = 0; k < m; k++) {
                        tile[j * FX_ROW + k] = FX_N(fx_fused_step)(secs, p.count, &s[j], tile[j * FX_ROW + k]);
                    }
                }
                FX_N(fx_host_seg_move)(&q, x, tile, g, 1);
            }
            for (unsigned j = 0; j < FX_FUSED_TILE; j++) {
                if (c0 + j + 1 == p.chunks) {
                    for (unsigned i = 0; i < p.count; i++) {
                        FX_V2 st;
                        st.x = s[j].v[2 * i];
                        st.y = s[j].v[2 * i + 1];
                        states[p.state_base + ch * p.state_stride + i] = st;
                    }
                }
            }
        }
    }
    free(s);
    free(next);
}
