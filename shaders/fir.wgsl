// Direct FIR convolution over one block with workgroup tiling (FerroFX,
// src/gpu/wgpu_backend.rs). Dispatch: (ceil(frames / 256), channels).
//   y[n] = sum_k h[k] x[n - k],  x[m < 0] = history[hist_len + m]
// `history` holds the last taps-1 inputs of each channel, oldest first. Each workgroup
// computes 256 outputs; per tile of 256 taps it stages the taps and the 511 input samples
// they touch in workgroup memory.
// `history_main` then writes the new history (last taps-1 samples of history ++ block)
// into `hist_out`; the host copies it back over `history` after the pass.
// `input_at` comes from fir_input.wgsl, appended by the host.

struct Params {
    frames: u32,
    taps: u32,
    stride: u32,      // planar channel stride of `work` and `out`
    tap_base: u32,    // this stage's first tap in `taps`
    hist_base: u32,   // this stage's first history sample: [channel][taps - 1] from here
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> work: array<f32>;
@group(0) @binding(2) var<storage, read> taps: array<f32>;
@group(0) @binding(3) var<storage, read> history: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> hist_out: array<f32>;

var<workgroup> hs: array<f32, 256>;
var<workgroup> xs: array<f32, 512>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let ch = wg.y;
    let t = lid.x;
    let n0 = wg.x * 256u;
    let n = n0 + t;
    var acc = 0.0;
    for (var k0 = 0u; k0 < p.taps; k0 += 256u) {
        // taps k0..k0+255 and inputs n0 - k0 - 255 .. n0 - k0 + 255
        var h = 0.0;
        if (k0 + t < p.taps) {
            h = taps[p.tap_base + k0 + t];
        }
        hs[t] = h;
        let lo = i32(n0) - i32(k0) - 255;
        xs[t] = input_at(ch, lo + i32(t));
        xs[t + 256u] = input_at(ch, lo + i32(t) + 256);
        workgroupBarrier();
        // output n uses x[n - k0 - kk] = xs[t - kk + 255]
        for (var kk = 0u; kk < 256u; kk++) {
            acc = fma(hs[kk], xs[t + 255u - kk], acc);
        }
        workgroupBarrier();
    }
    if (n < p.frames) {
        out[ch * p.stride + n] = acc;
    }
}

@compute @workgroup_size(256)
fn history_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let ch = gid.y;
    let i = gid.x;
    let hist_len = p.taps - 1u;
    if (i >= hist_len) {
        return;
    }
    // new history[i] = input sample frames - hist_len + i
    let m = i32(p.frames) - i32(hist_len) + i32(i);
    hist_out[p.hist_base + ch * hist_len + i] = input_at(ch, m);
}
