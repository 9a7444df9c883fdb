/* SOS cascades over one block (FerroFX; launched by src/gpu/cuda/).
 *
 * Sections in the delta state-space form of src/gpu/realize.rs (per-thread math in
 * sos_math.h, shared with the host tests). Two kernels, the same arithmetic:
 * - ferrofx_sos_channels: one thread per channel runs the whole block through the
 *   stage's sections (short blocks: realtime sizes);
 * - ferrofx_sos_scan: one thread block of 256 threads per channel, time-parallel over
 *   `chunks` chunks of `chunk_len` samples, per section: (1) each thread runs its chunk
 *   from zero state (chunk 0 from the real state) and keeps the end state; (2) a
 *   Hillis-Steele inclusive scan of the end states with the chunk transfer matrices
 *   A^(L 2^k) (stored as A^(L 2^k) - I); (3) each thread re-runs its chunk from its
 *   true start state, in place. The chunks' samples move through shared memory a
 *   segment at a time, a warp's 32 chunks together (fx_seg_index in sos_math.h), so
 *   global memory is read and written in contiguous runs.
 */
#include "sos_math.h"

FX_GLOBAL void ferrofx_sos_channels(fx_sos_params p, float* work, const fx_section* sections, fx_vec2* states) {
    unsigned ch = fx_bid() * fx_ntid() + fx_tid();
    if (ch >= p.channels) {
        return;
    }
    float* x = work + ch * p.stride;
    for (unsigned i = 0; i < p.count; i++) {
        unsigned st = p.state_base + ch * p.count + i;
        states[st] = fx_chunk_run(&sections[p.first + i], states[st], x, 0, p.frames);
    }
}

FX_GLOBAL void ferrofx_sos_scan(fx_sos_params p, float* work, const fx_section* sections, const float* tables, fx_vec2* states) {
    FX_SHARED fx_vec2 ends[FX_SOS_THREADS];
    FX_SHARED float tile[FX_SOS_THREADS * FX_ROW];
    unsigned ch = fx_bid();
    unsigned j = fx_tid();
    unsigned lane = j & 31;
    unsigned first = j & ~31u; /* this warp's first chunk */
    float* rows = tile + first * FX_ROW;
    float* row = tile + j * FX_ROW;
    float* x = work + ch * p.stride;
    unsigned start = j * p.chunk_len < p.frames ? j * p.chunk_len : p.frames;
    unsigned end = start + p.chunk_len < p.frames ? start + p.chunk_len : p.frames;
    unsigned len = end - start;
    unsigned segs = (p.chunk_len + FX_SEG - 1) / FX_SEG;
    for (unsigned i = 0; i < p.count; i++) {
        const fx_section sec = sections[p.first + i];
        unsigned st = p.state_base + ch * p.count + i;
        fx_vec2 s_init = states[st];
        fx_vec2 s = {0.0f, 0.0f};
        if (j == 0) {
            s = s_init;
        }
        /* 1. each chunk's end state */
        for (unsigned g = 0; g < segs; g++) {
            fx_seg_load(&p, x, rows, first, lane, g);
            fx_sync();
            s = fx_samples_end(&sec, s, row, fx_seg_len(len, g));
            fx_sync();
        }
        ends[j] = s;
        fx_sync();
        /* 2. inclusive scan of the end states */
        fx_scan_ends(ends, j, p.chunks, &tables[(p.first + i) * FX_SCAN_STEPS * 4]);
        /* 3. every chunk again from its true start state */
        s = s_init;
        if (j > 0) {
            s = ends[j - 1];
        }
        fx_sync(); /* all have read `ends` before the next section writes it */
        for (unsigned g = 0; g < segs; g++) {
            fx_seg_load(&p, x, rows, first, lane, g);
            fx_sync();
            s = fx_samples_run(&sec, s, row, fx_seg_len(len, g));
            fx_sync();
            fx_seg_store(&p, x, rows, first, lane, g);
            fx_sync();
        }
        if (j == p.chunks - 1) {
            states[st] = s;
        }
    }
}

