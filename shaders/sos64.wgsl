// SOS cascade over one block in float64, one workgroup per channel (FerroFX,
// src/gpu/wgpu/chain.rs): the cascades whose float32 form (sos.wgsl) would miss the
// tolerance, on devices with double precision (wgpu's SHADER_F64).
//
// sos.wgsl's algorithm and operation order with every section, state, table and
// intermediate sample in f64: the stage's f32 samples are read into `wide` (each
// invocation its own chunk), every section runs there in place (sequential when
// params.chunks == 1, else the chunked scan), and the result is rounded to f32 once, back
// into `work`. The CPU model is src/gpu/realize.rs's run_cascade::<f64>.

struct Section {
    delta: vec4<f64>, // A - I, row-major
    bc: vec4<f64>,    // b0, b1, c0, c1
    d: vec4<f64>,     // d, unused x3
}

struct Params {
    frames: u32,
    chunk_len: u32,
    chunks: u32,
    stride: u32,
    first: u32,
    count: u32,
    state_base: u32,
    _pad: u32,
}

const WG: u32 = 256u;
const STEPS: u32 = 8u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> work: array<f32>;
@group(0) @binding(2) var<storage, read> sections: array<Section>;
@group(0) @binding(3) var<storage, read> tables: array<vec4<f64>>;
@group(0) @binding(4) var<storage, read_write> states: array<vec2<f64>>;
@group(0) @binding(5) var<storage, read_write> wide: array<f64>;

var<workgroup> ends: array<vec2<f64>, 256>;

fn advance(m: vec4<f64>, v: vec2<f64>) -> vec2<f64> {
    return v + vec2<f64>(fma(m.x, v.x, m.y * v.y), fma(m.z, v.x, m.w * v.y));
}

fn next_state(sec: Section, s: vec2<f64>, x: f64) -> vec2<f64> {
    return s + vec2<f64>(fma(sec.delta.x, s.x, fma(sec.delta.y, s.y, sec.bc.x * x)),
                         fma(sec.delta.z, s.x, fma(sec.delta.w, s.y, sec.bc.y * x)));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let ch = wg.x;
    let j = lid.x;
    let base = ch * p.stride;
    // This invocation's samples: its chunk (the whole block for invocation 0 when sequential).
    let start = min(j * p.chunk_len, p.frames);
    let end = min(start + p.chunk_len, p.frames);
    for (var n = start; n < end; n++) {
        wide[base + n] = f64(work[base + n]);
    }
    for (var i = 0u; i < p.count; i++) {
        let si = p.first + i;
        let sec = sections[si];
        let st = p.state_base + ch * p.count + i;
        let s_init = states[st];
        if (p.chunks == 1u) {
            if (j == 0u) {
                var s = s_init;
                for (var n = 0u; n < p.frames; n++) {
                    let x = wide[base + n];
                    let y = fma(sec.bc.z, s.x, fma(sec.bc.w, s.y, sec.d.x * x));
                    s = next_state(sec, s, x);
                    wide[base + n] = y;
                }
                states[st] = s;
            }
            continue;
        }
        // 1. zero-state end of each chunk
        var s = vec2<f64>(0.0lf, 0.0lf);
        if (j == 0u) {
            s = s_init;
        }
        for (var n = start; n < end; n++) {
            s = next_state(sec, s, wide[base + n]);
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
            let x = wide[base + n];
            let y = fma(sec.bc.z, s3.x, fma(sec.bc.w, s3.y, sec.d.x * x));
            s3 = next_state(sec, s3, x);
            wide[base + n] = y;
        }
        if (j == p.chunks - 1u) {
            states[st] = s3;
        }
    }
    for (var n = start; n < end; n++) {
        work[base + n] = f32(wide[base + n]);
    }
}
