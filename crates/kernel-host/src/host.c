/* The CUDA kernels of kernels/ (the .cu files), run on the host: each kernel's threads executed one
 * after another between its barriers, over the same per-thread math (the headers the
 * kernels include). What this cannot show (launch configuration, memory, the driver) is
 * left to the GPU tests (tests/gpu_cuda.rs).
 */
#include <stdlib.h>
#include <string.h>
#include "sos_math.h"
#include "sos_fused_math.h"
#include "sos_pipe_math.h"
#include "fir_math.h"
#include "fft_math.h"
#include "convert_math.h"
#include "adjoint_math.h"

/* ferrofx_sos_channels: one thread per channel. */
void fx_host_sos_channels(fx_sos_params p, float* work, const fx_section* sections, fx_vec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        float* x = work + ch * p.stride;
        for (unsigned i = 0; i < p.count; i++) {
            unsigned st = p.state_base + ch * p.count + i;
            states[st] = fx_chunk_run(&sections[p.first + i], states[st], x, 0, p.frames);
        }
    }
}

/* ferrofx_sos_pipe: per channel, one warp's 32 lanes in lockstep, step by step; a
 * shuffle reads the lanes' registers as they were before the step's updates. */
void fx_host_sos_pipe(fx_pipe_params p, float* work, const fx_section* sections, const fx_pipe_lane* lanes, fx_vec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        float* x = work + ch * p.stride;
        fx_section sec[FX_PIPE_LANES];
        fx_vec2 s[FX_PIPE_LANES];
        unsigned st[FX_PIPE_LANES];
        float cur[FX_PIPE_LANES], next[FX_PIPE_LANES], y[FX_PIPE_LANES], out[FX_PIPE_LANES];
        for (unsigned lane = 0; lane < FX_PIPE_LANES; lane++) {
            memset(&sec[lane], 0, sizeof sec[lane]);
            s[lane].x = 0.0f;
            s[lane].y = 0.0f;
            st[lane] = 0;
            if (lane < p.lanes) {
                fx_pipe_lane l = lanes[p.lane_base + lane];
                sec[lane] = sections[l.section];
                st[lane] = fx_pipe_state_index(&l, ch);
                s[lane] = states[st[lane]];
            }
            unsigned n = fx_pipe_in_index(&p, 0, lane);
            cur[lane] = n < p.frames ? x[n] : 0.0f;
            n = fx_pipe_in_index(&p, 32, lane);
            next[lane] = n < p.frames ? x[n] : 0.0f;
            y[lane] = 0.0f;
            out[lane] = 0.0f;
        }
        unsigned steps = fx_pipe_steps(&p);
        for (unsigned t = 0; t < steps; t++) {
            if (t > 0 && (t & 31u) == 0) {
                for (unsigned lane = 0; lane < FX_PIPE_LANES; lane++) {
                    cur[lane] = next[lane];
                    unsigned n = fx_pipe_in_index(&p, t + 32, lane);
                    next[lane] = n < p.frames ? x[n] : 0.0f;
                }
            }
            float head = cur[t & 31u];
            float up[FX_PIPE_LANES];
            for (unsigned lane = 0; lane < FX_PIPE_LANES; lane++) {
                up[lane] = lane >= 1 ? y[lane - 1] : y[lane];
            }
            for (unsigned lane = 0; lane < FX_PIPE_LANES; lane++) {
                if (fx_pipe_runs(&p, lane, t)) {
                    y[lane] = fx_sos_step(&sec[lane], &s[lane], lane == 0 ? head : up[lane]);
                }
            }
            float last = y[p.lanes - 1];
            unsigned m = fx_pipe_out_sample(&p, t);
            if (m < p.frames) {
                for (unsigned lane = 0; lane < FX_PIPE_LANES; lane++) {
                    if ((m & 31u) == lane) {
                        out[lane] = last;
                    }
                    unsigned n = fx_pipe_store_index(&p, m, lane);
                    if (n < p.frames) {
                        x[n] = out[lane];
                    }
                }
            }
        }
        for (unsigned lane = 0; lane < p.lanes; lane++) {
            states[st[lane]] = s[lane];
        }
    }
}

/* Samples in chunk `j` (its last one may be short; past the block, none). */
static unsigned chunk_len_of(const fx_sos_params* p, unsigned j) {
    unsigned start = j * p->chunk_len < p->frames ? j * p->chunk_len : p->frames;
    unsigned end = start + p->chunk_len < p->frames ? start + p->chunk_len : p->frames;
    return end - start;
}

/* The segment staging (fx_seg_load / fx_seg_store) and sos_fused.cu's three kernels in
 * float (fx_host_seg_move, fx_host_sos_fused) and in double (fx_host_seg_move64,
 * fx_host_sos64d_fused): one text, fused_host.h. */
#include "fx_prec_float.h"
#define FX_HOST_FUSED fx_host_sos_fused
#include "fused_host.h"
#undef FX_HOST_FUSED
#include "fx_prec_end.h"
#include "fx_prec_double.h"
#define FX_HOST_FUSED fx_host_sos64d_fused
#include "fused_host.h"
#undef FX_HOST_FUSED
#include "fx_prec_end.h"

/* ferrofx_sos_scan: one block of FX_SOS_THREADS threads per channel; the chunks' samples
 * move through the shared rows a segment at a time. */
void fx_host_sos_scan(fx_sos_params p, float* work, const fx_section* sections, const float* tables, fx_vec2* states) {
    fx_vec2 ends[FX_SOS_THREADS];
    fx_vec2 next[FX_SOS_THREADS];
    fx_vec2 s[FX_SOS_THREADS];
    float tile[FX_SOS_THREADS * FX_ROW]; /* on the stack: the tests call this from several threads */
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    for (unsigned ch = 0; ch < p.channels; ch++) {
        float* x = work + ch * p.stride;
        for (unsigned i = 0; i < p.count; i++) {
            const fx_section sec = sections[p.first + i];
            unsigned st = p.state_base + ch * p.count + i;
            fx_vec2 s_init = states[st];
            for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                fx_vec2 zero = {0.0f, 0.0f};
                s[j] = j == 0 ? s_init : zero;
            }
            for (unsigned g = 0; g < segs; g++) {
                fx_host_seg_move(&p, x, tile, g, 0);
                for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                    s[j] = fx_samples_end(&sec, s[j], &tile[j * FX_ROW], fx_seg_len(chunk_len_of(&p, j), g));
                }
            }
            memcpy(ends, s, sizeof ends);
            unsigned offset = 1;
            for (unsigned k = 0; k < FX_SCAN_STEPS && offset < p.chunks; k++) {
                for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                    next[j] = ends[j];
                    if (j >= offset) {
                        next[j] = fx_scan_combine(&tables[((p.first + i) * FX_SCAN_STEPS + k) * 4], ends[j], ends[j - offset]);
                    }
                }
                memcpy(ends, next, sizeof ends);
                offset *= 2;
            }
            for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                s[j] = j > 0 ? ends[j - 1] : s_init;
            }
            for (unsigned g = 0; g < segs; g++) {
                fx_host_seg_move(&p, x, tile, g, 0);
                for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                    s[j] = fx_samples_run(&sec, s[j], &tile[j * FX_ROW], fx_seg_len(chunk_len_of(&p, j), g));
                }
                fx_host_seg_move(&p, x, tile, g, 1);
            }
            if (p.chunks >= 1) {
                states[st] = s[p.chunks - 1];
            }
        }
    }
}

/* sos64.cu's fx_tap_src: where section i reads (in place: in == out, out_step 0). */
static const double* host_tap_src(const double* in, double* out, unsigned long long out_step, unsigned i) {
    return i == 0 ? in : out + (unsigned long long)(i - 1) * out_step;
}

/* sos64.cu's fx_sos64_row: one channel's cascade from `in` into `out`, section i's output
 * at out + i * out_step. */
static void host_sos64_row(const fx_sos_params* p, const double* in, double* out, unsigned long long out_step, const fx_section64* sections, fx_dvec2* states, unsigned ch) {
    for (unsigned i = 0; i < p->count; i++) {
        unsigned st = p->state_base + ch * p->count + i;
        const fx_section64 sec = sections[p->first + i];
        states[st] = fx_samples_run_to64(&sec, states[st], host_tap_src(in, out, out_step, i), out + (unsigned long long)i * out_step, p->frames);
    }
}

/* sos64.cu's fx_sos64_scan_row: the block's FX_SOS_THREADS threads between barriers. */
static void host_sos64_scan_row(const fx_sos_params* p, const double* in, double* out, unsigned long long out_step, const fx_section64* sections, const double* tables, fx_dvec2* states, unsigned ch) {
    fx_dvec2 ends[FX_SOS_THREADS];
    fx_dvec2 next[FX_SOS_THREADS];
    for (unsigned i = 0; i < p->count; i++) {
        const fx_section64 sec = sections[p->first + i];
        unsigned st = p->state_base + ch * p->count + i;
        const double* src = host_tap_src(in, out, out_step, i);
        double* dst = out + (unsigned long long)i * out_step;
        fx_dvec2 s_init = states[st];
        for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
            fx_dvec2 zero = {0.0, 0.0};
            unsigned start = j * p->chunk_len < p->frames ? j * p->chunk_len : p->frames;
            ends[j] = fx_samples_end64(&sec, j == 0 ? s_init : zero, src + start, chunk_len_of(p, j));
        }
        unsigned offset = 1;
        for (unsigned k = 0; k < FX_SCAN_STEPS && offset < p->chunks; k++) {
            for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
                next[j] = ends[j];
                if (j >= offset) {
                    next[j] = fx_scan_combine64(&tables[((p->first + i) * FX_SCAN_STEPS + k) * 4], ends[j], ends[j - offset]);
                }
            }
            memcpy(ends, next, sizeof ends);
            offset *= 2;
        }
        for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
            unsigned start = j * p->chunk_len < p->frames ? j * p->chunk_len : p->frames;
            fx_dvec2 s = fx_samples_run_to64(&sec, j > 0 ? ends[j - 1] : s_init, src + start, dst + start, chunk_len_of(p, j));
            if (j == p->chunks - 1) {
                states[st] = s;
            }
        }
    }
}

/* ferrofx_sos64_channels (sos64.cu): one thread per channel, the cascade in double. */
void fx_host_sos64_channels(fx_sos_params p, float* work, double* wide, const fx_section64* sections, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        float* x = work + ch * p.stride;
        double* w = wide + ch * p.stride;
        fx_widen(x, w, 0, p.frames);
        host_sos64_row(&p, w, w, 0, sections, states, ch);
        fx_narrow(w, x, 0, p.frames);
    }
}

/* ferrofx_sos64_scan: one block of FX_SOS_THREADS threads per channel, each its chunk. */
void fx_host_sos64_scan(fx_sos_params p, float* work, double* wide, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        float* x = work + ch * p.stride;
        double* w = wide + ch * p.stride;
        for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
            unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
            fx_widen(x, w, start, start + chunk_len_of(&p, j));
        }
        host_sos64_scan_row(&p, w, w, 0, sections, tables, states, ch);
        for (unsigned j = 0; j < FX_SOS_THREADS; j++) {
            unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
            fx_narrow(w, x, start, start + chunk_len_of(&p, j));
        }
    }
}

/* ferrofx_sos64d_channels / ferrofx_sos64d_scan: double samples in place. */
void fx_host_sos64d_channels(fx_sos_params p, double* work, const fx_section64* sections, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        double* w = work + (unsigned long long)ch * p.stride;
        host_sos64_row(&p, w, w, 0, sections, states, ch);
    }
}

void fx_host_sos64d_scan(fx_sos_params p, double* work, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        double* w = work + (unsigned long long)ch * p.stride;
        host_sos64_scan_row(&p, w, w, 0, sections, tables, states, ch);
    }
}

/* ferrofx_sos64d_taps_channels / ferrofx_sos64d_taps_scan: out of place, every
 * section's output kept (section i's at outs + i * out_step). */
void fx_host_sos64d_taps_channels(fx_sos_params p, const double* in, double* outs, unsigned long long out_step, const fx_section64* sections, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        unsigned long long at = (unsigned long long)ch * p.stride;
        host_sos64_row(&p, in + at, outs + at, out_step, sections, states, ch);
    }
}

void fx_host_sos64d_taps_scan(fx_sos_params p, const double* in, double* outs, unsigned long long out_step, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        unsigned long long at = (unsigned long long)ch * p.stride;
        host_sos64_scan_row(&p, in + at, outs + at, out_step, sections, tables, states, ch);
    }
}

/* ferrofx_fir_direct: grid (ceil(frames / 256), channels), 256 threads. */
void fx_host_fir_direct(fx_fir_params p, const float* work, const float* taps, const float* history, float* out) {
    float hs[FX_FIR_TILE];
    float xs[2 * FX_FIR_TILE];
    float acc[FX_FIR_TILE];
    unsigned blocks = (p.frames + FX_FIR_TILE - 1) / FX_FIR_TILE;
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned b = 0; b < blocks; b++) {
            unsigned n0 = b * FX_FIR_TILE;
            for (unsigned t = 0; t < FX_FIR_TILE; t++) {
                acc[t] = 0.0f;
            }
            for (unsigned k0 = 0; k0 < p.taps; k0 += FX_FIR_TILE) {
                int lo = (int)n0 - (int)k0 - (FX_FIR_TILE - 1);
                for (unsigned t = 0; t < FX_FIR_TILE; t++) {
                    hs[t] = k0 + t < p.taps ? taps[p.tap_base + k0 + t] : 0.0f;
                    xs[t] = fx_fir_input(&p, work, history, ch, lo + (int)t);
                    xs[t + FX_FIR_TILE] = fx_fir_input(&p, work, history, ch, lo + (int)t + FX_FIR_TILE);
                }
                for (unsigned t = 0; t < FX_FIR_TILE; t++) {
                    acc[t] = fx_fir_tile(hs, xs, t, acc[t]);
                }
            }
            for (unsigned t = 0; t < FX_FIR_TILE; t++) {
                if (n0 + t < p.frames) {
                    out[ch * p.stride + n0 + t] = acc[t];
                }
            }
        }
    }
}

/* ferrofx_fir_history: one thread per history sample. */
void fx_host_fir_history(fx_fir_params p, const float* work, const float* history, float* hist_out) {
    unsigned hist_len = p.taps - 1;
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned i = 0; i < hist_len; i++) {
            int m = (int)p.frames - (int)hist_len + (int)i;
            hist_out[p.hist_base + ch * hist_len + i] = fx_fir_input(&p, work, history, ch, m);
        }
    }
}

/* The FFT-partitioned FIR kernels of fft_fir.cu in their launch order: segments into
 * `a`, the forward passes, mac, the inverse passes, extract into `out`. `a` and `b` hold
 * channels x max(segs, outs) x n points each. */
void fx_host_fft_fir(fx_fft_params p, unsigned log2n, const float* work, const float* history, const fx_vec2* kernel,
                     const fx_vec2* tw, fx_vec2* a, fx_vec2* b, float* out) {
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned s = 0; s < p.segs; s++) {
            for (unsigned m = 0; m < p.n; m++) {
                a[(ch * p.segs + s) * p.n + m] = fx_fft_segment(&p, work, history, ch, s, m);
            }
        }
    }
    fx_vec2* cur = a;
    fx_vec2* other = b;
    for (int inverse = 0; inverse < 2; inverse++) {
        unsigned rows = p.channels * (inverse ? p.outs : p.segs);
        for (unsigned q = 1; q <= log2n; q++) {
            fx_fft_params stage = p;
            stage.half_span = 1u << (q - 1);
            stage.r = p.n >> q;
            for (unsigned row = 0; row < rows; row++) {
                for (unsigned bfly = 0; bfly < p.n / 2; bfly++) {
                    fx_fft_butterfly(&stage, tw, cur, other, row * p.n, bfly);
                }
            }
            fx_vec2* t = cur;
            cur = other;
            other = t;
        }
        if (!inverse) {
            for (unsigned ch = 0; ch < p.channels; ch++) {
                for (unsigned j = 0; j < p.outs; j++) {
                    for (unsigned f = 0; f < p.n; f++) {
                        other[(ch * p.outs + j) * p.n + f] = fx_fft_mac(&p, cur, kernel, ch, j, f);
                    }
                }
            }
            fx_vec2* t = cur;
            cur = other;
            other = t;
        }
    }
    for (unsigned ch = 0; ch < p.channels; ch++) {
        for (unsigned j = 0; j < p.outs; j++) {
            for (unsigned m = 0; m < p.part; m++) {
                unsigned n_out = j * p.part + m;
                if (n_out < p.frames) {
                    out[ch * p.stride + n_out] = fx_fft_extract(&p, cur, ch, j, m);
                }
            }
        }
    }
}

/* ferrofx_rows_f64_to_f32 / ferrofx_rows_f32_to_f64 (convert.cu) over a grid of
 * (grid_x, grid_y) blocks of FX_ROWS_THREADS threads; `to_f32` picks the direction. */
void fx_host_rows_convert(fx_rows_params p, unsigned grid_x, unsigned grid_y, int to_f32, const void* src, void* dst) {
    for (unsigned by = 0; by < grid_y; by++) {
        for (unsigned bx = 0; bx < grid_x; bx++) {
            for (unsigned t = 0; t < FX_ROWS_THREADS; t++) {
                unsigned i = bx * FX_ROWS_THREADS + t;
                if (i >= p.n) {
                    continue;
                }
                for (unsigned r = by; r < p.rows; r += grid_y) {
                    if (to_f32) {
                        ((float*)dst)[fx_rows_dst(&p, r, i)] = (float)((const double*)src)[fx_rows_src(&p, r, i)];
                    } else {
                        ((double*)dst)[fx_rows_dst(&p, r, i)] = (double)((const float*)src)[fx_rows_src(&p, r, i)];
                    }
                }
            }
        }
    }
}

/* ferrofx_adjoint_step64 (adjoint.cu) over `blocks` blocks of FX_ADJ_THREADS threads:
 * every thread's grid-stride pass, then each block's reduction level by level, in the
 * kernel's order (so the sums are its bits). */
void fx_host_adjoint_step64(fx_adjoint_params p, unsigned blocks, const double* lam, const double* xs, const double* ys,
                            double* g, double* partial) {
    double* red = malloc(sizeof(double) * 6 * FX_ADJ_THREADS);
    for (unsigned b = 0; b < blocks; b++) {
        for (unsigned tid = 0; tid < FX_ADJ_THREADS; tid++) {
            double sums[6];
            fx_adjoint_thread(&p, lam, xs, ys, g, (unsigned long long)b * FX_ADJ_THREADS + tid,
                              (unsigned long long)blocks * FX_ADJ_THREADS, sums);
            for (int j = 0; j < 6; j++) {
                red[j * FX_ADJ_THREADS + tid] = sums[j];
            }
        }
        for (unsigned half = FX_ADJ_THREADS / 2; half > 0; half >>= 1) {
            for (unsigned tid = 0; tid < half; tid++) {
                fx_adjoint_fold(red, tid, half);
            }
        }
        for (int j = 0; j < 6; j++) {
            partial[b * 6 + j] = red[j * FX_ADJ_THREADS];
        }
    }
    free(red);
}
