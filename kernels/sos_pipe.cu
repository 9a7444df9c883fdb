/* The warp pipeline for short blocks (FerroFX; launched by src/gpu/cuda/chain/): a run
 * of up to 32 sections of consecutive float32 cascades in one launch, one warp (one
 * thread block of 32 threads) per channel. The scheme and its helpers are in
 * sos_pipe_math.h; the arithmetic is the sequential kernel's, so the bits are too.
 */
#include "sos_pipe_math.h"

FX_GLOBAL void ferrofx_sos_pipe(fx_pipe_params p, float* work, const fx_section* sections, const fx_pipe_lane* lanes, fx_vec2* states) {
    unsigned ch = fx_bid();
    unsigned lane = fx_tid();
    float* x = work + ch * p.stride;
    fx_section sec = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, 0.0f, {0.0f, 0.0f, 0.0f}};
    fx_vec2 s = {0.0f, 0.0f};
    unsigned st = 0;
    if (lane < p.lanes) {
        fx_pipe_lane l = lanes[p.lane_base + lane];
        sec = sections[l.section];
        st = fx_pipe_state_index(&l, ch);
        s = states[st];
    }
    /* This batch of 32 input samples and the next, one per lane. */
    unsigned n = fx_pipe_in_index(&p, 0, lane);
    float cur = n < p.frames ? x[n] : 0.0f;
    n = fx_pipe_in_index(&p, 32, lane);
    float next = n < p.frames ? x[n] : 0.0f;
    float y = 0.0f;
    float out = 0.0f;
    unsigned steps = fx_pipe_steps(&p);
    for (unsigned t = 0; t < steps; t++) {
        if (t > 0 && (t & 31u) == 0) {
            /* Samples t + 32 on: past every sample stored so far (at most t). */
            cur = next;
            n = fx_pipe_in_index(&p, t + 32, lane);
            next = n < p.frames ? x[n] : 0.0f;
        }
        /* Every lane takes part in every shuffle (none sits inside a branch). */
        float head = fx_shfl_idx(cur, t & 31u);
        float up = fx_shfl_up(y, 1);
        if (fx_pipe_runs(&p, lane, t)) {
            y = fx_sos_step(&sec, &s, lane == 0 ? head : up);
        }
        float last = fx_shfl_idx(y, p.lanes - 1);
        unsigned m = fx_pipe_out_sample(&p, t);
        if (m < p.frames) {
            if ((m & 31u) == lane) {
                out = last;
            }
            n = fx_pipe_store_index(&p, m, lane);
            if (n < p.frames) {
                x[n] = out;
            }
        }
    }
    if (lane < p.lanes) {
        states[st] = s;
    }
}
