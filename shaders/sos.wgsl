// SOS cascade over one block, one workgroup per channel (FerroFX, src/gpu/wgpu/chain.rs).
// This body is shared by both precisions: it is compiled after sos_f32.wgsl or
// sos_f64.wgsl, which name the float type `T` and say where the cascade's samples live
// (`load`, `store`, and `stage_in`/`stage_out` around the sections), and sos_step.wgsl
// (the section record and its per-sample arithmetic).
//
// Each section runs in the delta state-space form of src/gpu/realize.rs:
//   y = c.s + d*x;   s <- s + (A - I) s + b*x
// which keeps float32 accurate for poles near z = 1 (and float64 for the cascades where
// float32 would still miss the tolerance).
//
// Sequential path (params.chunks == 1): invocation 0 runs the block.
// Scan path (chunks > 1), per section, time-parallel over chunks of chunk_len samples:
//   1. each invocation runs its chunk from zero state (chunk 0 from the real state) and
//      keeps the end state;
//   2. Hillis-Steele inclusive scan of those end states with the chunk transfer matrices
//      A^(L 2^k) (stored as A^(L 2^k) - I): the true end state of every chunk;
//   3. each invocation re-runs its chunk from its true start state, in place.
// Chunks are the same for every section, so an invocation only ever reads samples it
// wrote itself: the sample buffers need no barrier, only the shared end states do.
// The CPU model is src/gpu/realize.rs's run_cascade::<T>.

struct Params {
    frames: u32,     // samples per channel in this job
    chunk_len: u32,
    chunks: u32,
    stride: u32,     // planar channel stride in `work`
    first: u32,      // this stage's first section in `sections` / `tables`
    count: u32,      // sections in this stage
    state_base: u32, // this stage's first state: [channel][section] from here
    _pad: u32,
}

const WG: u32 = 256u;
const STEPS: u32 = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> sections: array<Section>;
@group(0) @binding(3) var<storage, read> tables: array<vec4<T>>;
@group(0) @binding(4) var<storage, read_write> states: array<vec2<T>>;

var<workgroup> ends: array<vec2<T>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let ch = wg.x;
    let j = lid.x;
    let base = ch * p.stride;
    // This invocation's samples: its chunk (the whole block for invocation 0 when sequential).
    let start = min(j * p.chunk_len, p.frames);
    let end = min(start + p.chunk_len, p.frames);
    stage_in(base + start, base + end);
    for (var i = 0u; i < p.count; i++) {
        let si = p.first + i;
        let sec = sections[si];
        let st = p.state_base + ch * p.count + i;
        let s_init = states[st];
        if (p.chunks == 1u) {
            if (j == 0u) {
                var s = s_init;
                for (var n = 0u; n < p.frames; n++) {
                    let x = load(base + n);
                    let y = output(sec, s, x);
                    s = next_state(sec, s, x);
                    store(base + n, y);
                }
                states[st] = s;
            }
            continue;
        }
        // 1. zero-state end of each chunk
        var s = vec2<T>();
        if (j == 0u) {
            s = s_init;
        }
        for (var n = start; n < end; n++) {
            s = next_state(sec, s, load(base + n));
        }
        ends[j] = s;
        workgroupBarrier();
        // 2. inclusive scan of the chunk end states
        var offset = 1u;
        var k = 0u;
        loop {
            if (offset >= p.chunks || k >= STEPS) {
                break;
            }
            var v = ends[j];
            if (j >= offset) {
                v = v + advance(tables[si * STEPS + k], ends[j - offset]);
            }
            workgroupBarrier();
            ends[j] = v;
            workgroupBarrier();
            offset = offset * 2u;
            k = k + 1u;
        }
        // 3. re-run from the true start state
        var s3 = s_init;
        if (j > 0u) {
            s3 = ends[j - 1u];
        }
        workgroupBarrier(); // everyone has read `ends` before the next section writes it
        for (var n = start; n < end; n++) {
            let x = load(base + n);
            let y = output(sec, s3, x);
            s3 = next_state(sec, s3, x);
            store(base + n, y);
        }
        if (j == p.chunks - 1u) {
            states[st] = s3;
        }
    }
    stage_out(base + start, base + end);
}
