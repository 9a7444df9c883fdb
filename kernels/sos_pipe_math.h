/* The warp pipeline (sos_pipe.cu): consecutive float32 cascades of short blocks, one warp
 * per channel, lane s running one section (up to FX_PIPE_LANES in a launch) one sample
 * behind lane s-1. At step t, lane s filters sample t - s: its input is what lane s-1
 * produced at step t-1 (a shuffle up), lane 0's the block's sample t (from a batch of 32
 * samples the warp loaded together, a shuffle by index). The last lane's outputs are
 * gathered 32 at a time into the lanes' registers and stored together. So a block of
 * `frames` frames through S sections takes frames + S - 1 steps, where the sequential
 * kernel takes S x frames (one thread per channel) and the scan three passes per section.
 *
 * Each section sees its samples in order through fx_sos_step, the sequential kernel's
 * arithmetic (sos_math.h), so the output and the end states equal the channel-parallel
 * kernel's (ferrofx_sos_channels, stage by stage) bit for bit. Shared with the host
 * emulation (crates/kernel-host), which runs the 32 lanes in lockstep over these helpers.
 */
#ifndef FX_SOS_PIPE_MATH_H
#define FX_SOS_PIPE_MATH_H
#include "sos_math.h"

/* Lanes of a warp: the most sections one launch runs. */
#define FX_PIPE_LANES 32

/* One lane's section: its record in `sections`, and its state for channel ch at
 * `state + ch * count` (the stage's [channel][section] layout: `state` is the stage's
 * state base plus the section's place in the stage, `count` the stage's sections).
 * ferrofx::gpu::pipe::PipeLane. */
typedef struct {
    unsigned section;
    unsigned state;
    unsigned count;
    unsigned pad;
} fx_pipe_lane;

/* One launch: lanes `lane_base..lane_base + lanes` of the lane table over channels x
 * frames samples, `stride` apart per channel. */
typedef struct {
    unsigned frames;
    unsigned stride;
    unsigned channels;
    unsigned lanes;
    unsigned lane_base;
    unsigned pad0;
    unsigned pad1;
    unsigned pad2;
} fx_pipe_params;

/* Steps of a launch: until the last lane has filtered the last sample. */
FX_HD unsigned fx_pipe_steps(const fx_pipe_params* p) {
    return p->frames + p->lanes - 1;
}

/* Whether `lane` filters a sample at step t (sample t - lane of its section's input). */
FX_HD int fx_pipe_runs(const fx_pipe_params* p, unsigned lane, unsigned t) {
    return lane < p->lanes && t >= lane && t - lane < p->frames;
}

/* Lane `lane`'s state index for channel `ch`. */
FX_HD unsigned fx_pipe_state_index(const fx_pipe_lane* l, unsigned ch) {
    return l->state + ch * l->count;
}

/* The sample `lane` loads for the batch of 32 input samples that starts at `start`
 * (frames when past the block: it loads 0 then). */
FX_HD unsigned fx_pipe_in_index(const fx_pipe_params* p, unsigned start, unsigned lane) {
    unsigned n = start + lane;
    return n < p->frames ? n : p->frames;
}

/* The sample the last lane finished at step t (frames while it has none). */
FX_HD unsigned fx_pipe_out_sample(const fx_pipe_params* p, unsigned t) {
    unsigned d = p->lanes - 1;
    return (t >= d && t - d < p->frames) ? t - d : p->frames;
}

/* Whether output sample m completes a batch of stores (the 32nd of its batch, or the
 * block's last), and which sample `lane` stores then (frames: none). */
FX_HD unsigned fx_pipe_store_index(const fx_pipe_params* p, unsigned m, unsigned lane) {
    if (m >= p->frames || ((m & 31u) != 31u && m + 1 != p->frames)) {
        return p->frames;
    }
    unsigned n = (m & ~31u) + lane;
    return n <= m ? n : p->frames;
}

#endif
