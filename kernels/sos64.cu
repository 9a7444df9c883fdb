/* SOS cascades in double precision over one block (FerroFX; launched by src/gpu/cuda/),
 * for the cascades whose float32 form would miss the tolerance (the design's error
 * estimate, src/gpu/realize.rs, decides). The arithmetic is sos.cu's in double
 * (sos_step.h, shared with the host tests): the stage's float samples are widened into
 * `wide` (double, the same planar layout as `work`), every section runs there, and the
 * result is rounded to float once, back into `work`, as realize.rs's
 * run_cascade::<f64>. States (fx_dvec2) and scan tables (A^(L 2^k) - I) are double.
 * - ferrofx_sos64_channels: one thread per channel runs the block through the sections;
 * - ferrofx_sos64_scan: one thread block of 256 threads per channel, each thread one
 *   chunk, per section the three passes of sos.cu's scan (zero-state chunk ends, a
 *   Hillis-Steele scan of them, every chunk again from its true start). Each thread
 *   reads and writes only its own chunk of `wide`, so only the end states need barriers.
 *   Unlike sos.cu, the chunks are read directly, not staged through shared memory.
 * - ferrofx_sos64d_channels / ferrofx_sos64d_scan: the same over double samples in place
 *   (a caller's float64 rows: ferrofx.torch's operator on CUDA tensors).
 * - ferrofx_sos64d_taps_channels / ferrofx_sos64d_taps_scan: the same cascade out of
 *   place, every section's output kept: section i reads section i-1's output (the first,
 *   the input) and writes its own buffer, `out_step` doubles after the one before (the
 *   forward signals of ferrofx.torch's backward pass, in one launch, each sample read
 *   twice and written once per section instead of copied and then filtered in place).
 *   The arithmetic is the in-place kernels' (each section from zero state over the same
 *   chunking), so each buffer holds what running the sections so far in place would.
 */
#include "sos_math.h"

/* Where section i of a cascade reads: the input for the first, else section i-1's
 * output. In place, `in` == `out` and `out_step` is 0. */
FX_DEVICE const double* fx_tap_src(const double* in, double* out, unsigned long long out_step, unsigned i) {
    return i == 0 ? in : out + (unsigned long long)(i - 1) * out_step;
}

/* One channel's cascade from `in` into `out` (one thread): section i writes
 * `out + i * out_step` (see fx_tap_src). */
FX_DEVICE void fx_sos64_row(const fx_sos_params* p, const double* in, double* out, unsigned long long out_step, const fx_section64* sections, fx_dvec2* states, unsigned ch) {
    for (unsigned i = 0; i < p->count; i++) {
        unsigned st = p->state_base + ch * p->count + i;
        const fx_section64 sec = sections[p->first + i];
        states[st] = fx_samples_run_to64(&sec, states[st], fx_tap_src(in, out, out_step, i), out + (unsigned long long)i * out_step, p->frames);
    }
}

/* The same, time-parallel: thread j runs chunk [start, end) of every section (all
 * threads of the block call this together; each reads and writes only its chunk). */
FX_DEVICE void fx_sos64_scan_row(const fx_sos_params* p, const double* in, double* out, unsigned long long out_step, const fx_section64* sections, const double* tables, fx_dvec2* states, unsigned ch, unsigned j, unsigned start, unsigned end) {
    FX_SHARED fx_dvec2 ends[FX_SOS_THREADS];
    for (unsigned i = 0; i < p->count; i++) {
        const fx_section64 sec = sections[p->first + i];
        unsigned st = p->state_base + ch * p->count + i;
        const double* src = fx_tap_src(in, out, out_step, i);
        double* dst = out + (unsigned long long)i * out_step;
        fx_dvec2 s_init = states[st];
        fx_dvec2 s = {0.0, 0.0};
        if (j == 0) {
            s = s_init;
        }
        /* 1. each chunk's end state */
        ends[j] = fx_samples_end64(&sec, s, src + start, end - start);
        fx_sync();
        /* 2. inclusive scan of the end states */
        fx_scan_ends64(ends, j, p->chunks, &tables[(p->first + i) * FX_SCAN_STEPS * 4]);
        /* 3. every chunk again from its true start state */
        s = s_init;
        if (j > 0) {
            s = ends[j - 1];
        }
        fx_sync(); /* all have read `ends` before the next section writes it */
        s = fx_samples_run_to64(&sec, s, src + start, dst + start, end - start);
        if (j == p->chunks - 1) {
            states[st] = s;
        }
    }
}

FX_GLOBAL void ferrofx_sos64_channels(fx_sos_params p, float* work, double* wide, const fx_section64* sections, fx_dvec2* states) {
    unsigned ch = fx_bid() * fx_ntid() + fx_tid();
    if (ch >= p.channels) {
        return;
    }
    float* x = work + ch * p.stride;
    double* w = wide + ch * p.stride;
    fx_widen(x, w, 0, p.frames);
    fx_sos64_row(&p, w, w, 0, sections, states, ch);
    fx_narrow(w, x, 0, p.frames);
}

FX_GLOBAL void ferrofx_sos64_scan(fx_sos_params p, float* work, double* wide, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    unsigned ch = fx_bid();
    unsigned j = fx_tid();
    float* x = work + ch * p.stride;
    double* w = wide + ch * p.stride;
    unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
    unsigned end = start + p.chunk_len < p.frames ? start + p.chunk_len : p.frames;
    fx_widen(x, w, start, end);
    fx_sos64_scan_row(&p, w, w, 0, sections, tables, states, ch, j, start, end);
    fx_narrow(w, x, start, end);
}

/* The same cascades over double samples in place (`work` is double: a caller's float64
 * rows, src/gpu/cuda/sos64.rs; no widening or rounding). */
FX_GLOBAL void ferrofx_sos64d_channels(fx_sos_params p, double* work, const fx_section64* sections, fx_dvec2* states) {
    unsigned ch = fx_bid() * fx_ntid() + fx_tid();
    if (ch >= p.channels) {
        return;
    }
    double* w = work + (unsigned long long)ch * p.stride;
    fx_sos64_row(&p, w, w, 0, sections, states, ch);
}

FX_GLOBAL void ferrofx_sos64d_scan(fx_sos_params p, double* work, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    unsigned ch = fx_bid();
    unsigned j = fx_tid();
    unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
    unsigned end = start + p.chunk_len < p.frames ? start + p.chunk_len : p.frames;
    double* w = work + (unsigned long long)ch * p.stride;
    fx_sos64_scan_row(&p, w, w, 0, sections, tables, states, ch, j, start, end);
}

/* The cascade over double rows `in` into `outs` (rows `p.stride` apart in both), section
 * i's output at `outs + i * out_step`; `outs` must not overlap `in`. */
FX_GLOBAL void ferrofx_sos64d_taps_channels(fx_sos_params p, const double* in, double* outs, unsigned long long out_step, const fx_section64* sections, fx_dvec2* states) {
    unsigned ch = fx_bid() * fx_ntid() + fx_tid();
    if (ch >= p.channels) {
        return;
    }
    unsigned long long at = (unsigned long long)ch * p.stride;
    fx_sos64_row(&p, in + at, outs + at, out_step, sections, states, ch);
}

FX_GLOBAL void ferrofx_sos64d_taps_scan(fx_sos_params p, const double* in, double* outs, unsigned long long out_step, const fx_section64* sections, const double* tables, fx_dvec2* states) {
    unsigned ch = fx_bid();
    unsigned j = fx_tid();
    unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
    unsigned end = start + p.chunk_len < p.frames ? start + p.chunk_len : p.frames;
    unsigned long long at = (unsigned long long)ch * p.stride;
    fx_sos64_scan_row(&p, in + at, outs + at, out_step, sections, tables, states, ch, j, start, end);
}
