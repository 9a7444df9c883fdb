// FFT-partitioned FIR convolution over one block (FerroFX, src/gpu/wgpu_backend.rs).
//
// Uniformly partitioned overlap-save with partitions of P taps and FFTs of n = 2P points:
//   x'(u), u in [-(taps-1), frames): the stage's input (history, then this block)
//   X_s = FFT(x'[(i-1)P, (i+1)P)), i = s - pcount          ("segments")
//   Y_j = sum_q X_{j-q} H_q, H_q = FFT(taps[qP, (q+1)P))    ("mac", stored conjugated)
//   y[jP + m] = Re(FFT(conj Y_j))[P + m] / n                 ("extract": the inverse FFT)
// The FFT is an iterative radix-2 Stockham autosort ("fft_pass", one dispatch per stage,
// ping-ponging between two buffers) with twiddles computed on the host in float64: GPU
// sin/cos are far too coarse for this. `input_at` comes from fir_input.wgsl, appended by
// the host.

struct Params {
    n: u32,           // FFT size 2P
    half_span: u32,   // Stockham stage: L/2
    r: u32,           // Stockham stage: n/L
    tw_scale: u32,    // twiddle table stride for this n
    part: u32,        // P
    pcount: u32,      // partitions of the taps
    segs: u32,        // input segments per channel
    outs: u32,        // output segments per channel
    taps: u32,
    frames: u32,
    stride: u32,      // planar stride of work/out
    hist_base: u32,
    kernel_base: u32, // first H bin of this stage in `kernel`
    _a: u32,
    _b: u32,
    _c: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> work: array<f32>;
@group(0) @binding(2) var<storage, read> history: array<f32>;
@group(0) @binding(3) var<storage, read> kernel: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read> twiddles: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> src: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> dst: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// Dispatch (n / 256, segs, channels).
@compute @workgroup_size(256)
fn segments(@builtin(global_invocation_id) g: vec3<u32>) {
    let m = g.x;
    let s = g.y;
    let ch = g.z;
    if (m >= p.n) {
        return;
    }
    let i = i32(s) - i32(p.pcount);
    let u = (i - 1) * i32(p.part) + i32(m);
    dst[(ch * p.segs + s) * p.n + m] = vec2<f32>(input_at(ch, u), 0.0);
}

// One radix-2 Stockham stage over a batch of transforms. Dispatch (n / 2 / 256, batch).
@compute @workgroup_size(256)
fn fft_pass(@builtin(global_invocation_id) g: vec3<u32>) {
    let b = g.x;
    if (b >= p.n / 2u) {
        return;
    }
    let base = g.y * p.n;
    let j = b / p.r;
    let k = b % p.r;
    let w = twiddles[j * p.r * p.tw_scale];
    let c0 = src[base + j * 2u * p.r + k];
    let c1 = cmul(w, src[base + j * 2u * p.r + k + p.r]);
    dst[base + j * p.r + k] = c0 + c1;
    dst[base + (j + p.half_span) * p.r + k] = c0 - c1;
}

// Dispatch (n / 256, outs, channels).
@compute @workgroup_size(256)
fn mac(@builtin(global_invocation_id) g: vec3<u32>) {
    let f = g.x;
    let j = g.y;
    let ch = g.z;
    if (f >= p.n) {
        return;
    }
    var acc = vec2<f32>(0.0, 0.0);
    for (var q = 0u; q < p.pcount; q++) {
        let s = j + p.pcount - q;
        acc += cmul(src[(ch * p.segs + s) * p.n + f], kernel[p.kernel_base + q * p.n + f]);
    }
    dst[(ch * p.outs + j) * p.n + f] = vec2<f32>(acc.x, -acc.y);
}

// Dispatch (P / 256, outs, channels).
@compute @workgroup_size(256)
fn extract(@builtin(global_invocation_id) g: vec3<u32>) {
    let m = g.x;
    let j = g.y;
    let ch = g.z;
    let n_out = j * p.part + m;
    if (m >= p.part || n_out >= p.frames) {
        return;
    }
    out[ch * p.stride + n_out] = src[(ch * p.outs + j) * p.n + p.part + m].x / f32(p.n);
}
