// The float32 SOS shader's prelude (sos.wgsl follows): sections in f32, the samples read
// and written in place in the work buffer.

alias T = f32;

@group(0) @binding(1) var<storage, read_write> work: array<f32>;

fn load(i: u32) -> f32 {
    return work[i];
}

fn store(i: u32, v: f32) {
    work[i] = v;
}

fn stage_in(first: u32, end: u32) {}

fn stage_out(first: u32, end: u32) {}
