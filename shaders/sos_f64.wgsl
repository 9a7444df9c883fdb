// The float64 SOS shader's prelude (sos.wgsl follows), for the cascades whose float32
// form would miss the tolerance, on devices with SHADER_F64: every section, state, table
// and intermediate sample in f64. Each invocation copies its chunk of the stage's f32
// samples into `wide` (stage_in), the sections run there, and the result is rounded to
// f32 once, back into `work` (stage_out).

alias T = f64;

@group(0) @binding(1) var<storage, read_write> work: array<f32>;
@group(0) @binding(5) var<storage, read_write> wide: array<f64>;

fn load(i: u32) -> f64 {
    return wide[i];
}

fn store(i: u32, v: f64) {
    wide[i] = v;
}

fn stage_in(first: u32, end: u32) {
    for (var n = first; n < end; n++) {
        wide[n] = f64(work[n]);
    }
}

fn stage_out(first: u32, end: u32) {
    for (var n = first; n < end; n++) {
        work[n] = f32(wide[n]);
    }
}
