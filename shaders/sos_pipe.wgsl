// The pipeline for short blocks (FerroFX, src/gpu/wgpu/pipe.rs): the design of CUDA's
// kernels/sos_pipe.cu in WGSL. A run of up to 32 sections of consecutive float32
// cascades in one dispatch, one workgroup of 32 invocations per channel: at step t,
// invocation s filters sample t - s of its section, its input what invocation s - 1
// produced at step t - 1 (invocation 0's: the block's sample t, from a batch of 32 the
// workgroup loaded together). WGSL has no portable subgroup shuffle, so the outputs pass
// through workgroup memory, two halves used in turn, one barrier a step. The last
// invocation stores its outputs in place (sample t - 31 at most: behind every load).
//
// Compiled after sos_f32.wgsl (the float type and `work`, binding 1) and sos_step.wgsl:
// each section sees its samples in order through the per-sample arithmetic of sos.wgsl's
// sequential path (output, then next_state), so the output and states are that path's.

struct Params {
    frames: u32,    // samples per channel in this job
    stride: u32,    // planar channel stride in `work`
    lanes: u32,     // sections in this dispatch (1..=32)
    lane_base: u32, // its first entry in `lanes`
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    _pad3: u32,
}

const LANES: u32 = 32u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> sections: array<Section>;
// Per invocation: its section, and its state for channel ch at .y + ch * .z.
@group(0) @binding(3) var<storage, read> lanes: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> states: array<vec2<f32>>;

// The invocations' outputs of the last step and of this one, in turn.
var<workgroup> ys: array<f32, 64>;
// Two batches of 32 input samples, in turn.
var<workgroup> inb: array<f32, 64>;

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let ch = wg.x;
    let lane = lid.x;
    let base = ch * p.stride;
    var sec: Section;
    var s = vec2<f32>();
    var st = 0u;
    let live = lane < p.lanes;
    if (live) {
        let l = lanes[p.lane_base + lane];
        sec = sections[l.x];
        st = l.y + ch * l.z;
        s = states[st];
    }
    var first = 0.0;
    if (lane < p.frames) {
        first = work[base + lane];
    }
    inb[lane] = first;
    workgroupBarrier();
    let steps = p.frames + p.lanes - 1u;
    for (var t = 0u; t < steps; t++) {
        if ((t & 31u) == 0u) {
            // The batch after this one into the other half (read from step t + 32 on).
            let n = t + LANES + lane;
            var v = 0.0;
            if (n < p.frames) {
                v = work[base + n];
            }
            inb[(((t >> 5u) + 1u) & 1u) * LANES + lane] = v;
        }
        let cur = t & 1u;
        var x = 0.0;
        if (lane == 0u) {
            x = inb[((t >> 5u) & 1u) * LANES + (t & 31u)];
        } else {
            x = ys[(cur ^ 1u) * LANES + lane - 1u];
        }
        if (live && t >= lane && t - lane < p.frames) {
            let y = output(sec, s, x);
            s = next_state(sec, s, x);
            ys[cur * LANES + lane] = y;
            if (lane == p.lanes - 1u) {
                work[base + t - lane] = y;
            }
        }
        workgroupBarrier();
    }
    if (live) {
        states[st] = s;
    }
}
