//! The cascade kernel, generic over lanes `L`, sections per register-resident chunk
//! `M` and the multiply-add flavour, instantiated per instruction set: the portable
//! build here, AVX2 and AVX-512 in their own files, which add explicit-vector kernels.

use super::{SosCoefs, SUB_BLOCK};
#[cfg(target_arch = "x86_64")]
use super::{avx2, avx512};
use crate::dsp::sanitize_sample;
use crate::dsp::simd::{MulAdd, PortableMulAdd};

/// One section on one frame of `L` lanes (transposed direct form II).
#[inline(always)]
pub(super) fn step<const L: usize, A: MulAdd>(c: &SosCoefs, s1: &mut [f64; L], s2: &mut [f64; L], v: &[f64; L]) -> [f64; L] {
    let mut y = [0.0f64; L];
    for l in 0..L {
        // Terms without `y` first, so each state update is one multiply-add after
        // `y`: the recurrence y -> s1 -> y is two FMA latencies long.
        let p1 = A::f64(c.b1, v[l], s2[l]);
        let p2 = c.b2 * v[l];
        y[l] = A::f64(c.b0, v[l], s1[l]);
        s1[l] = A::f64(-c.a1, y[l], p1);
        s2[l] = A::f64(-c.a2, y[l], p2);
    }
    y
}

/// Runs `N` sections over the sub-block `data` with their state in registers.
///
/// With AVX2/AVX-512 and a full vector of channel lanes, or with AVX-512 and one or
/// two channels whose sections fill one vector (sections in lanes), the chunk runs as a
/// time-skewed wavefront in explicit vectors ([`wave_chunk`]): the sections of one
/// iteration are independent, so the loop is throughput-bound instead of latency-bound
/// (measured 1.3-2x faster at 8 and 12 channels, 1.4-2.3x at one and two). Longer
/// cascades of one or two channels take [`run_lanes`] instead. Otherwise sample-outer,
/// section-inner: a frame stays in registers through all `N` sections.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the state addressing of one chunk; inlined
fn run_chunk<const L: usize, const N: usize, A: MulAdd>(
    wave: Wave,
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    first_channel: usize,
    lanes: usize,
    first_section: usize,
    sections: usize,
    data: &mut [[f64; L]],
) {
    let mut c = [SosCoefs::default(); N];
    c.copy_from_slice(&coefs[..N]);
    let mut s1 = [[0.0f64; L]; N];
    let mut s2 = [[0.0f64; L]; N];
    for l in 0..lanes {
        let st = &state[(first_channel + l) * sections + first_section..][..N];
        for k in 0..N {
            s1[k][l] = st[k][0];
            s2[k][l] = st[k][1];
        }
    }
    if !wave_chunk::<L, N>(wave, &c, &mut s1, &mut s2, data) {
        for x in data.iter_mut() {
            let mut v = *x;
            for k in 0..N {
                v = step::<L, A>(&c[k], &mut s1[k], &mut s2[k], &v);
            }
            *x = v;
        }
    }
    for l in 0..lanes {
        let st = &mut state[(first_channel + l) * sections + first_section..][..N];
        for k in 0..N {
            st[k] = [s1[k][l], s2[k][l]];
        }
    }
}

/// The multi-vector section-lane kernels' shared set-up: section `k` of channel `ch` is
/// lane `g = k * C + ch`, vector `g / W`; per vector, the five coefficient rows
/// `b0, b1, b2, a1, a2` (unused lanes zero).
#[cfg(target_arch = "x86_64")]
pub(super) fn lane_coefficients<const C: usize, const W: usize, const V: usize>(c: &[SosCoefs]) -> [[[f64; W]; 5]; V] {
    let mut coef = [[[0.0f64; W]; 5]; V];
    for (k, ck) in c.iter().enumerate() {
        for ch in 0..C {
            let g = k * C + ch;
            let (j, l) = (g / W, g % W);
            for (row, v) in coef[j].iter_mut().zip([ck.b0, ck.b1, ck.b2, ck.a1, ck.a2]) {
                row[l] = v;
            }
        }
    }
    coef
}

/// The lanes (a bit per lane of the chunk) of the sections that have a frame in
/// iteration `t` of a skewed schedule over `n` frames: section `k` works on frame
/// `t - skew k`, which must lie in `0..n`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn active_lanes<const C: usize>(t: usize, n: usize, skew: usize, sections: usize) -> u64 {
    let lo = if t >= n { (t - n) / skew + 1 } else { 0 };
    let hi = (t / skew).min(sections - 1) + 1;
    if lo >= hi {
        0
    } else {
        ((1u64 << (hi * C)) - 1) & !((1u64 << (lo * C)) - 1)
    }
}

/// One chunk of sections over one or two channels (`C`) in the lanes of as many vectors
/// as it needs (AVX-512: 8 lanes, at most [`avx512::LANE_VECTORS`]; AVX2: 4 lanes, at
/// most [`avx2::LANE_VECTORS`]), state loaded from and stored back to `state` like
/// [`run_chunk`]. Reached only from the AVX-512 and AVX2 entry points.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one chunk's view of the cascade; inlined
fn run_lanes<const C: usize>(
    wave: Wave,
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    first_channel: usize,
    lanes: usize,
    first_section: usize,
    sections: usize,
    data: &mut [[f64; C]],
) {
    /// A multi-vector kernel: coefficients, the lanes' `s1` and `s2`, the frames.
    type Kernel<const C: usize, const W: usize, const V: usize> = unsafe fn(&[SosCoefs], &mut [[f64; W]; V], &mut [[f64; W]; V], &mut [[f64; C]]);
    #[allow(clippy::too_many_arguments)]
    fn run<const C: usize, const W: usize, const V: usize>(
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        first_channel: usize,
        lanes: usize,
        first_section: usize,
        sections: usize,
        data: &mut [[f64; C]],
        kernel: Kernel<C, W, V>,
    ) {
        let (mut s1, mut s2) = ([[0.0f64; W]; V], [[0.0f64; W]; V]);
        for ch in 0..lanes {
            let st = &state[(first_channel + ch) * sections + first_section..][..coefs.len()];
            for (k, s) in st.iter().enumerate() {
                let g = k * C + ch;
                s1[g / W][g % W] = s[0];
                s2[g / W][g % W] = s[1];
            }
        }
        // SAFETY: `kernel` is the AVX-512 or AVX2 kernel of the entry point that reached
        // `run_lanes`, after run-time detection of its features; `V` is the vector count
        // the chunk's lanes need (the match below).
        unsafe { kernel(coefs, &mut s1, &mut s2, data) };
        for ch in 0..lanes {
            let st = &mut state[(first_channel + ch) * sections + first_section..][..coefs.len()];
            for (k, s) in st.iter_mut().enumerate() {
                let g = k * C + ch;
                *s = [s1[g / W][g % W], s2[g / W][g % W]];
            }
        }
    }
    let args = (coefs, state, first_channel, lanes, first_section, sections, data);
    macro_rules! go {
        ($w:literal, $v:literal, $($kernel:tt)+) => {{
            let (a, b, c, d, e, f, g) = args;
            run::<C, $w, $v>(a, b, c, d, e, f, g, $($kernel)+::<C, $v>)
        }};
    }
    let lanes_needed = coefs.len() * C;
    match wave {
        Wave::Avx512 => match lanes_needed.div_ceil(8) {
            0 => {}
            1 => go!(8, 1, avx512::section_lanes_multi_avx512),
            2 => go!(8, 2, avx512::section_lanes_multi_avx512),
            _ => go!(8, 3, avx512::section_lanes_multi_avx512),
        },
        Wave::Avx2 => match lanes_needed.div_ceil(4) {
            0 => {}
            1 => go!(4, 1, avx2::section_lanes_multi_avx2),
            2 => go!(4, 2, avx2::section_lanes_multi_avx2),
            _ => go!(4, 3, avx2::section_lanes_multi_avx2),
        },
        Wave::None => {}
    }
}

/// Which explicit-vector wavefront kernel the caller's instruction set allows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wave {
    None,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Avx2,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Avx512,
}

/// Runs the chunk with the wavefront kernel when one fits this lane count; false
/// when the caller must run the sample-outer loop instead (always off x86-64, which
/// has no explicit-vector kernels).
#[inline(always)]
fn wave_chunk<const L: usize, const N: usize>(
    wave: Wave,
    c: &[SosCoefs; N],
    s1: &mut [[f64; L]; N],
    s2: &mut [[f64; L]; N],
    data: &mut [[f64; L]],
) -> bool {
    #[cfg(not(target_arch = "x86_64"))]
    let ran = {
        let _ = (wave, c, s1, s2, data);
        false
    };
    #[cfg(target_arch = "x86_64")]
    let ran = {
        macro_rules! run_wave {
            ($lanes:literal, $($kernel:tt)+) => {{
                let mut a = [[0.0f64; $lanes]; N];
                let mut b = [[0.0f64; $lanes]; N];
                for k in 0..N {
                    a[k].copy_from_slice(&s1[k]);
                    b[k].copy_from_slice(&s2[k]);
                }
                let (frames, _) = data.as_flattened_mut().as_chunks_mut::<$lanes>();
                // SAFETY: `Wave::Avx512`/`Wave::Avx2` are only passed by the
                // `#[target_feature]` entry points, reached after run-time detection.
                unsafe { $($kernel)+(c, &mut a, &mut b, frames) };
                for k in 0..N {
                    s1[k].copy_from_slice(&a[k]);
                    s2[k].copy_from_slice(&b[k]);
                }
                true
            }};
        }
        match (wave, L) {
            (Wave::Avx512, 1) if N <= 8 => run_wave!(1, avx512::section_lanes_avx512::<1, N>),
            (Wave::Avx512, 2) if N <= 4 => run_wave!(2, avx512::section_lanes_avx512::<2, N>),
            (Wave::Avx512, 8) => run_wave!(8, avx512::wavefront_avx512::<N>),
            (Wave::Avx512, 4) if N.is_multiple_of(2) && N <= avx512::PAIR_SECTIONS => run_wave!(4, avx512::wavefront_pairs_avx512::<N>),
            (Wave::Avx512 | Wave::Avx2, 4) => run_wave!(4, avx2::wavefront_avx2::<N>),
            _ => false,
        }
    };
    ran
}

/// One iteration of the time-skewed schedule (section `k` on frame `t - S k`, in
/// place) while the pipeline fills or drains: only the sections with a frame.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn masked_iteration<const L: usize, const N: usize, const S: usize, A: MulAdd>(
    c: &[SosCoefs; N],
    s1: &mut [[f64; L]; N],
    s2: &mut [[f64; L]; N],
    data: &mut [[f64; L]],
    t: usize,
) {
    let n = data.len();
    for k in 0..N {
        if S * k <= t && t - S * k < n {
            let f = t - S * k;
            data[f] = step::<L, A>(&c[k], &mut s1[k], &mut s2[k], &data[f]);
        }
    }
}

/// The time-skewed cascade with explicit vectors: in iteration `t`, section `k`
/// works on frame `t - k`, so the `N` section updates of one iteration are
/// independent; frames move from section to section in registers. Generated for
/// AVX-512 (8 lanes) and AVX2 (4 lanes).
#[cfg(target_arch = "x86_64")]
macro_rules! wavefront {
    ($name:ident, $lanes:literal, $vec:ty, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $fnmadd:ident, $mul:ident, $zero:ident, $feat:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        pub(in crate::dsp::sos) fn $name<const N: usize>(
            c: &[SosCoefs; N],
            s1: &mut [[f64; $lanes]; N],
            s2: &mut [[f64; $lanes]; N],
            data: &mut [[f64; $lanes]],
        ) {
            use std::arch::x86_64::*;
            let n = data.len();
            if n < N {
                for t in 0..n + N - 1 {
                    masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
                }
                return;
            }
            for t in 0..N - 1 {
                masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
            }
            // SAFETY: the pointers come from `[f64; LANES]` arrays of exactly one
            // vector's width (unaligned loads and stores); the target features are
            // enabled on this function, which is only called after detection.
            unsafe {
                let mut s1v: [$vec; N] = [$zero(); N];
                let mut s2v: [$vec; N] = [$zero(); N];
                let mut v: [$vec; N] = [$zero(); N];
                for k in 0..N {
                    s1v[k] = $load(s1[k].as_ptr());
                    s2v[k] = $load(s2[k].as_ptr());
                    if k > 0 {
                        // Frame N-1-k has been through sections 0..k in the prologue.
                        v[k] = $load(data[N - 1 - k].as_ptr());
                    }
                }
                for t in N - 1..n {
                    v[0] = $load(data[t].as_ptr());
                    let mut y: [$vec; N] = [$zero(); N];
                    for k in 0..N {
                        let ck = &c[k];
                        let p1 = $fmadd($set1(ck.b1), v[k], s2v[k]);
                        let p2 = $mul($set1(ck.b2), v[k]);
                        let yk = $fmadd($set1(ck.b0), v[k], s1v[k]);
                        s1v[k] = $fnmadd($set1(ck.a1), yk, p1);
                        s2v[k] = $fnmadd($set1(ck.a2), yk, p2);
                        y[k] = yk;
                    }
                    $store(data[t + 1 - N].as_mut_ptr(), y[N - 1]);
                    for k in (1..N).rev() {
                        v[k] = y[k - 1];
                    }
                }
                // Frames still in flight go back in place for the draining iterations.
                for k in 1..N {
                    $store(data[n - k].as_mut_ptr(), v[k]);
                }
                for k in 0..N {
                    $store(s1[k].as_mut_ptr(), s1v[k]);
                    $store(s2[k].as_mut_ptr(), s2v[k]);
                }
            }
            for t in n..n + N - 1 {
                masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use wavefront;

/// Planar `f32` channels (frames `t0..t0 + data.len()`) into interleaved `f64` frames;
/// missing lanes are zero. With `clean`, each sample first goes through
/// [`sanitize_sample`] (the engine's input rule, in this pass instead of one of its
/// own). Full groups of 8 (AVX-512) or 4 (AVX2) channels use the explicit in-register
/// transposes below (the compiler leaves this transposition
/// scalar: it cost more than four sections of the cascade itself at 8 channels);
/// otherwise tiles of 8 frames.
#[inline(always)]
fn gather<const L: usize>(wave: Wave, bufs: &[&mut [f32]], t0: usize, data: &mut [[f64; L]], clean: bool) {
    let done = match (wave, L, bufs.len() == L) {
        #[cfg(target_arch = "x86_64")]
        (Wave::Avx512, 8, true) => {
            let (tiles, _) = data.as_flattened_mut().as_chunks_mut::<8>();
            // SAFETY: `Wave::Avx512` is only passed after AVX-512F/VL detection; every
            // buffer holds at least `t0 + data.len()` samples (the caller's `end`).
            unsafe { avx512::transpose::gather(bufs, t0, tiles, clean) }
        }
        #[cfg(target_arch = "x86_64")]
        (Wave::Avx512 | Wave::Avx2, 4, true) => {
            let (tiles, _) = data.as_flattened_mut().as_chunks_mut::<4>();
            // SAFETY: both waves are only passed after AVX (AVX2) detection; every
            // buffer holds at least `t0 + data.len()` samples.
            unsafe { avx2::transpose::gather(bufs, t0, tiles, clean) }
        }
        _ => 0,
    };
    let n = data.len();
    let lanes = bufs.len();
    let mut tiles = data[done..].chunks_exact_mut(8);
    let mut t = t0 + done;
    for tile in &mut tiles {
        let mut src = [[0.0f32; 8]; L];
        for l in 0..lanes {
            src[l].copy_from_slice(&bufs[l][t..t + 8]);
            if clean {
                src[l] = src[l].map(sanitize_sample);
            }
        }
        for (i, frame) in tile.iter_mut().enumerate() {
            for l in 0..L {
                frame[l] = f64::from(src[l][i]);
            }
        }
        t += 8;
    }
    let rest = t0 + n - tiles.into_remainder().len();
    for (i, frame) in data[rest - t0..].iter_mut().enumerate() {
        *frame = [0.0; L];
        for l in 0..lanes {
            let v = bufs[l][rest + i];
            frame[l] = f64::from(if clean { sanitize_sample(v) } else { v });
        }
    }
}

/// Asks the caches for the next sub-block's input (frames `t1..` up to `SUB_BLOCK` or
/// `end`) while this one is filtered: a long offline block streams from memory, one
/// stream per channel (measured 1.01-1.04x at 8 and 12 channels, docs/perf-history.md).
#[inline(always)]
fn prefetch_next(bufs: &[&mut [f32]], t1: usize, end: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 64 / std::mem::size_of::<f32>();
        let stop = (t1 + SUB_BLOCK).min(end);
        for b in bufs {
            let mut t = t1;
            while t < stop {
                // SAFETY: SSE is in every x86-64 CPU; a prefetch of a valid address
                // (`t < end <= b.len()`, bounds-checked) is only a hint: it never faults
                // and changes no data.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(b[t..].as_ptr().cast()) };
                t += LINE;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bufs, t1, end);
}

/// The inverse of [`gather`] for the channels present.
#[inline(always)]
fn scatter<const L: usize>(wave: Wave, data: &[[f64; L]], bufs: &mut [&mut [f32]], t0: usize) {
    let done = match (wave, L, bufs.len() == L) {
        #[cfg(target_arch = "x86_64")]
        (Wave::Avx512, 8, true) => {
            let (tiles, _) = data.as_flattened().as_chunks::<8>();
            // SAFETY: as in `gather`.
            unsafe { avx512::transpose::scatter(tiles, bufs, t0) }
        }
        #[cfg(target_arch = "x86_64")]
        (Wave::Avx512 | Wave::Avx2, 4, true) => {
            let (tiles, _) = data.as_flattened().as_chunks::<4>();
            // SAFETY: as in `gather`.
            unsafe { avx2::transpose::scatter(tiles, bufs, t0) }
        }
        _ => 0,
    };
    let n = data.len();
    let lanes = bufs.len();
    let mut tiles = data[done..].chunks_exact(8);
    let mut t = t0 + done;
    for tile in &mut tiles {
        let mut dst = [[0.0f32; 8]; L];
        for (i, frame) in tile.iter().enumerate() {
            for l in 0..L {
                dst[l][i] = frame[l] as f32;
            }
        }
        for l in 0..lanes {
            bufs[l][t..t + 8].copy_from_slice(&dst[l]);
        }
        t += 8;
    }
    let rest = t0 + n - tiles.remainder().len();
    for (i, frame) in data[rest - t0..].iter().enumerate() {
        for l in 0..lanes {
            bufs[l][rest + i] = frame[l] as f32;
        }
    }
}

/// The tile loops around an in-register transpose: `gather` fills whole tiles of
/// `frames` (`L` channels x `L` frames) from `bufs[..L][t0..]`, `scatter` is its inverse;
/// both return the frames moved (a multiple of `L`). Safety for both: the module's
/// target features present, `L` buffers of at least `t0 + frames.len()` samples.
/// `f32 -> f64` is exact and `f64 -> f32` rounds to nearest like `as f32`, so the
/// result is bit-identical to the scalar loops; `clean` (gather) applies the same rule as
/// [`sanitize_sample`] with a mask per row.
#[cfg(target_arch = "x86_64")]
macro_rules! transpose_io {
    ($lanes:literal, $feat:literal, $vd:ty, $zero:ident, $ld_ps:ident, $st_ps:ident, $ld_pd:ident, $st_pd:ident, $widen:ident, $narrow:ident, $clean:ident) => {
        #[target_feature(enable = $feat)]
        pub(in crate::dsp::sos) unsafe fn gather(bufs: &[&mut [f32]], t0: usize, frames: &mut [[f64; $lanes]], clean: bool) -> usize {
            let tiles = frames.len() / $lanes;
            for tile in 0..tiles {
                let t = t0 + tile * $lanes;
                let mut r: [$vd; $lanes] = [$zero(); $lanes];
                for (l, row) in r.iter_mut().enumerate() {
                    let src = &bufs[l][t..t + $lanes];
                    // SAFETY: `src` holds exactly one vector of `f32` (bounds-checked).
                    let raw = unsafe { $ld_ps(src.as_ptr()) };
                    // SAFETY: register-only; the target features are enabled here.
                    *row = $widen(if clean { unsafe { $clean(raw) } } else { raw });
                }
                // SAFETY: register-only; the target features are enabled here.
                let f = unsafe { transpose(r) };
                for (i, v) in f.into_iter().enumerate() {
                    // SAFETY: `frames[..]` is one `[f64; L]` (bounds-checked).
                    unsafe { $st_pd(frames[tile * $lanes + i].as_mut_ptr(), v) };
                }
            }
            tiles * $lanes
        }

        #[target_feature(enable = $feat)]
        pub(in crate::dsp::sos) unsafe fn scatter(frames: &[[f64; $lanes]], bufs: &mut [&mut [f32]], t0: usize) -> usize {
            let tiles = frames.len() / $lanes;
            for tile in 0..tiles {
                let t = t0 + tile * $lanes;
                let mut f: [$vd; $lanes] = [$zero(); $lanes];
                for (i, v) in f.iter_mut().enumerate() {
                    // SAFETY: `frames[..]` is one `[f64; L]` (bounds-checked).
                    *v = unsafe { $ld_pd(frames[tile * $lanes + i].as_ptr()) };
                }
                // SAFETY: register-only; the target features are enabled here.
                let r = unsafe { transpose(f) };
                for (l, row) in r.into_iter().enumerate() {
                    let dst = &mut bufs[l][t..t + $lanes];
                    // SAFETY: `dst` holds exactly one vector of `f32` (bounds-checked).
                    unsafe { $st_ps(dst.as_mut_ptr(), $narrow(row)) };
                }
            }
            tiles * $lanes
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use transpose_io;

/// One group of up to `L` channels starting at `first_channel`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one channel group's view of the cascade; inlined
fn process_group<const L: usize, const M: usize, A: MulAdd>(
    wave: Wave,
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    bufs: &mut [&mut [f32]],
    first_channel: usize,
    start: usize,
    end: usize,
    clean: bool,
) {
    let sections = coefs.len();
    let lanes = bufs.len();
    let (data_all, _) = scratch[..SUB_BLOCK * L].as_chunks_mut::<L>();
    let mut t0 = start;
    while t0 < end {
        let n = (end - t0).min(SUB_BLOCK);
        let data = &mut data_all[..n];
        gather(wave, bufs, t0, data, clean);
        prefetch_next(bufs, t0 + n, end);
        // Sections per register-resident chunk. One channel in section lanes takes
        // up to `M` (eight with AVX-512: one vector); two channels in section lanes
        // take four per vector; the channel-lane wavefronts also run four at a time:
        // with eight, the 8-lane loop's state, frame and coefficient vectors exceed
        // the 32 registers, coefficients are reloaded and values copied every frame
        // (`benchmarks/probes/examples/sos_probe.rs`, 8 and 12 channels: 1.15-1.3x slower at 8 to 15
        // sections). The arithmetic per section is the same either way.
        #[cfg(target_arch = "x86_64")]
        let lane_chunk = match wave {
            // One vector: the single-vector kernel below (measured faster there).
            Wave::Avx512 if sections * L > 8 => avx512::LANE_VECTORS * 8 / L,
            Wave::Avx2 => avx2::LANE_VECTORS * 4 / L,
            _ => 0,
        };
        #[cfg(target_arch = "x86_64")]
        if L <= 2 && lane_chunk > 0 {
            // One or two channels: sections in the lanes of several vectors at once.
            let (frames, _) = data.as_flattened_mut().as_chunks_mut::<L>();
            for (ci, chunk) in coefs.chunks(lane_chunk).enumerate() {
                run_lanes::<L>(wave, chunk, state, first_channel, lanes, ci * lane_chunk, sections, frames);
            }
            scatter(wave, data, bufs, t0);
            t0 += n;
            continue;
        }
        let m = if L == 1 { M } else { M.min(4) };
        // Four channels with AVX-512: two sections per vector, three pairs a chunk.
        #[cfg(target_arch = "x86_64")]
        let m = if wave == Wave::Avx512 && L == 4 { avx512::PAIR_SECTIONS } else { m };
        for (ci, chunk) in coefs.chunks(m).enumerate() {
            let first_section = ci * m;
            macro_rules! run {
                ($($n:literal)*) => {
                    match chunk.len() {
                        $($n => run_chunk::<L, $n, A>(wave, chunk, state, first_channel, lanes, first_section, sections, data),)*
                        _ => {}
                    }
                };
            }
            run!(1 2 3 4 5 6 7 8);
        }
        scatter(wave, data, bufs, t0);
        t0 += n;
    }
}

/// All channels in groups of up to `LMAX`. A group narrower than `LMAX` (one or two
/// channels, the last group of twelve) runs with the narrowest vector that holds it:
/// the cascade is latency-bound, so narrow vectors cost the same per frame and save
/// the conversion of empty lanes.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one call's view of the cascade, as the entry points pass it
pub(super) fn process_all<const LMAX: usize, const M: usize, A: MulAdd>(
    wave: Wave,
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
    clean: bool,
) {
    for (g, bufs) in buffers.chunks_mut(LMAX).enumerate() {
        let first = g * LMAX;
        match bufs.len() {
            1 => process_group::<1, M, A>(wave, coefs, state, scratch, bufs, first, start, end, clean),
            2 => process_group::<2, M, A>(wave, coefs, state, scratch, bufs, first, start, end, clean),
            3 | 4 => process_group::<4, M, A>(wave, coefs, state, scratch, bufs, first, start, end, clean),
            _ => process_group::<LMAX, M, A>(wave, coefs, state, scratch, bufs, first, start, end, clean),
        }
    }
}

pub(super) fn process_portable(
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
    clean: bool,
) {
    process_all::<4, 4, PortableMulAdd>(Wave::None, coefs, state, scratch, buffers, start, end, clean)
}
