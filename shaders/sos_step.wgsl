// A section in the delta state-space form of src/gpu/realize.rs and its per-sample
// arithmetic, in the float type `T` the prelude before it names (sos_f32.wgsl or
// sos_f64.wgsl): shared by sos.wgsl and sos_pipe.wgsl, so both round alike.
//   y = c.s + d*x;   s <- s + (A - I) s + b*x

struct Section {
    delta: vec4<T>, // A - I, row-major
    bc: vec4<T>,    // b0, b1, c0, c1
    d: vec4<T>,     // d, unused x3
}

fn advance(m: vec4<T>, v: vec2<T>) -> vec2<T> {
    return v + vec2<T>(fma(m.x, v.x, m.y * v.y), fma(m.z, v.x, m.w * v.y));
}

fn next_state(sec: Section, s: vec2<T>, x: T) -> vec2<T> {
    return s + vec2<T>(fma(sec.delta.x, s.x, fma(sec.delta.y, s.y, sec.bc.x * x)),
                       fma(sec.delta.z, s.x, fma(sec.delta.w, s.y, sec.bc.y * x)));
}

fn output(sec: Section, s: vec2<T>, x: T) -> T {
    return fma(sec.bc.z, s.x, fma(sec.bc.w, s.y, sec.d.x * x));
}
