//! Direct convolution: `L - 1` samples of history per channel, 64 outputs at a time
//! with the taps broadcast over SIMD vectors; one kernel per instruction set.

#[cfg(target_arch = "x86_64")]
use crate::dsp::simd::Fused;
use crate::dsp::simd::{Isa, MulAdd, PortableMulAdd};


/// `out[i] = sum_k rev[k] * buf[i + k]` (`buf` holds `out.len() + rev.len() - 1`
/// samples), dispatched to the best kernel for `isa`.
pub(super) fn convolve(isa: Isa, buf: &[f32], rev: &[f32], out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` comes from `Isa::detect`, so the CPU has AVX-512F/VL and FMA.
        Isa::Avx512 => unsafe { convolve_avx512(buf, rev, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` comes from `Isa::detect`, so the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { convolve_avx2(buf, rev, out) },
        _ => convolve_generic::<PortableMulAdd>(buf, rev, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
fn convolve_avx512(buf: &[f32], rev: &[f32], out: &mut [f32]) {
    let done = convolve_tiles_avx512(buf, rev, out);
    convolve_generic::<Fused>(&buf[done..], rev, &mut out[done..])
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn convolve_avx2(buf: &[f32], rev: &[f32], out: &mut [f32]) {
    // The ring kernel written for AVX2 (8 floats, a ring of 6: all 16 registers) measured
    // only 1.0-1.2x this one, not worth a second copy of it.
    convolve_generic::<Fused>(buf, rev, out)
}

/// The direct convolution's main kernel with AVX-512: whole tiles of 8 vectors of 16
/// outputs (128 outputs), returning how many outputs it wrote (a multiple of 128).
///
/// Taps are taken by phase: for phase `p` (0..16) the taps `p, p + 16, p + 32, ...`.
/// Within a phase, output vector `v` at tap `p + 16 m` reads the input vector
/// `X[m + v]` (`X[i]` = the 16 samples from `p + 16 i`), so consecutive taps of a phase
/// share 7 of their 8 input vectors: a ring of 8 vectors in registers takes one new load
/// per tap (the ring turn is unrolled, so every ring index is a register). Per tap: one
/// broadcast, one load and 8 multiply-adds into 8 independent accumulators (enough
/// chains to cover the FMA latency on two units), where [`convolve_generic`] issues 4
/// unaligned loads that split cache lines for 4 multiply-adds (load-bound: measured
/// 2.5-3x slower). Each phase's sum (at most `taps / 16` terms) is added to the total
/// afterwards: a two-level summation like [`convolve_generic`]'s, for its rounding error.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
fn convolve_tiles_avx512(buf: &[f32], rev: &[f32], out: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    const W: usize = 16;
    const TILE: usize = 8 * W;
    let taps = rev.len();
    let n = out.len().min(buf.len().saturating_sub(taps.saturating_sub(1)));
    let mut i = 0;
    while i + TILE <= n {
        // Output `i + j` needs `buf[i + j .. i + j + taps]`: the tile reads
        // `buf[i .. i + TILE + taps - 1]`, checked here once.
        let window = &buf[i..i + TILE + taps - 1];
        let mut total = [_mm512_setzero_ps(); 8];
        for p in 0..W.min(taps) {
            // Taps of this phase, and the input vectors it reads (`X[0..vectors]`); the
            // last one ends at `p + 16 (per + 6) + 16 <= taps + 127 = window.len()`.
            let per = (taps - p).div_ceil(W);
            let vectors = per + 7;
            debug_assert!(p + vectors * W <= window.len());
            let xp = window[p..].as_ptr();
            // SAFETY: `idx < vectors`, so the 16 floats read lie inside `window` (above).
            let ld = |idx: usize| unsafe { _mm512_loadu_ps(xp.add(idx * W)) };
            let (mut r0, mut r1, mut r2, mut r3) = (ld(0), ld(1), ld(2), ld(3));
            let (mut r4, mut r5, mut r6, mut r7) = (ld(4), ld(5), ld(6), ld(7));
            let mut a = [_mm512_setzero_ps(); 8];
            let mut m = 0;
            macro_rules! step {
                ($u:expr, $h:expr, $s0:ident $s1:ident $s2:ident $s3:ident $s4:ident $s5:ident $s6:ident $s7:ident) => {{
                    let h = _mm512_set1_ps($h);
                    a[0] = _mm512_fmadd_ps(h, $s0, a[0]);
                    a[1] = _mm512_fmadd_ps(h, $s1, a[1]);
                    a[2] = _mm512_fmadd_ps(h, $s2, a[2]);
                    a[3] = _mm512_fmadd_ps(h, $s3, a[3]);
                    a[4] = _mm512_fmadd_ps(h, $s4, a[4]);
                    a[5] = _mm512_fmadd_ps(h, $s5, a[5]);
                    a[6] = _mm512_fmadd_ps(h, $s6, a[6]);
                    a[7] = _mm512_fmadd_ps(h, $s7, a[7]);
                    // The first slot held X[m + u], needed by no later tap of the phase.
                    if m + $u + 8 < vectors {
                        $s0 = ld(m + $u + 8);
                    }
                }};
            }
            while m + 8 <= per {
                let h = &rev[p + m * W..][..7 * W + 1];
                step!(0, h[0], r0 r1 r2 r3 r4 r5 r6 r7);
                step!(1, h[W], r1 r2 r3 r4 r5 r6 r7 r0);
                step!(2, h[2 * W], r2 r3 r4 r5 r6 r7 r0 r1);
                step!(3, h[3 * W], r3 r4 r5 r6 r7 r0 r1 r2);
                step!(4, h[4 * W], r4 r5 r6 r7 r0 r1 r2 r3);
                step!(5, h[5 * W], r5 r6 r7 r0 r1 r2 r3 r4);
                step!(6, h[6 * W], r6 r7 r0 r1 r2 r3 r4 r5);
                step!(7, h[7 * W], r7 r0 r1 r2 r3 r4 r5 r6);
                m += 8;
            }
            // The last taps of the phase (fewer than 8): shift the ring instead.
            while m < per {
                step!(0, rev[p + m * W], r0 r1 r2 r3 r4 r5 r6 r7);
                (r0, r1, r2, r3, r4, r5, r6, r7) = (r1, r2, r3, r4, r5, r6, r7, r0);
                m += 1;
            }
            for (t, a) in total.iter_mut().zip(&a) {
                *t = _mm512_add_ps(*t, *a);
            }
        }
        for (v, t) in total.iter().enumerate() {
            let o = &mut out[i + v * W..i + (v + 1) * W];
            // SAFETY: `o` holds exactly 16 floats (bounds-checked slice).
            unsafe { _mm512_storeu_ps(o.as_mut_ptr(), *t) };
        }
        i += TILE;
    }
    i
}

/// Outputs in tiles of 4 x 16: each tap is broadcast once and multiplied into four
/// independent vectors of outputs (four accumulation chains hide the FMA latency).
#[inline(always)]
fn convolve_generic<A: MulAdd>(buf: &[f32], rev: &[f32], out: &mut [f32]) {
    const W: usize = 16;
    const T: usize = 4 * W;
    let taps = rev.len();
    let n = out.len().min(buf.len().saturating_sub(taps.saturating_sub(1)));
    let mut i = 0;
    // Taps are summed in blocks of `BLOCK` into partial sums that are then added up
    // (two-level summation): the rounding error grows like sqrt(BLOCK) + sqrt(taps/BLOCK)
    // ulps instead of sqrt(taps), for one extra add per block.
    const BLOCK: usize = 64;
    while i + T <= n {
        let window = &buf[i..i + T + taps - 1];
        let mut total = [[0.0f32; W]; 4];
        for (b, hs) in rev.chunks(BLOCK).enumerate() {
            let mut acc = [[0.0f32; W]; 4];
            for (kk, &h) in hs.iter().enumerate() {
                let k = b * BLOCK + kk;
                let x = &window[k..k + T];
                for (v, a) in acc.iter_mut().enumerate() {
                    for j in 0..W {
                        a[j] = A::f32(h, x[v * W + j], a[j]);
                    }
                }
            }
            for (t, a) in total.iter_mut().zip(&acc) {
                for j in 0..W {
                    t[j] += a[j];
                }
            }
        }
        for (v, a) in total.iter().enumerate() {
            out[i + v * W..i + (v + 1) * W].copy_from_slice(a);
        }
        i += T;
    }
    while i + W <= n {
        let window = &buf[i..i + W + taps - 1];
        let mut total = [0.0f32; W];
        for (b, hs) in rev.chunks(BLOCK).enumerate() {
            let mut acc = [[0.0f32; W]; 2];
            for (kk, &h) in hs.iter().enumerate() {
                let k = b * BLOCK + kk;
                let x = &window[k..k + W];
                let a = &mut acc[k & 1];
                for j in 0..W {
                    a[j] = A::f32(h, x[j], a[j]);
                }
            }
            for j in 0..W {
                total[j] += acc[0][j] + acc[1][j];
            }
        }
        out[i..i + W].copy_from_slice(&total);
        i += W;
    }
    for (o, idx) in out[i..n].iter_mut().zip(i..) {
        *o = dot(&buf[idx..idx + taps], rev);
    }
}
/// `sum a[i] * b[i]` with eight independent accumulators (vectorises without fast-math).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    let pairs = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    (pairs[0] + pairs[2]) + (pairs[1] + pairs[3]) + tail
}

/// Time-domain convolution with `L - 1` samples of history per channel.
pub(super) struct Direct {
    /// Taps reversed, so output `i` is `dot(buf[i..i + L], rev)`.
    pub(super) rev: Vec<f32>,
    /// Per channel: `L - 1` history samples followed by room for `chunk` new ones.
    pub(super) bufs: Vec<Vec<f32>>,
    pub(super) chunk: usize,
}

impl Direct {
    pub(super) fn new(taps: &[f32], channels: usize, chunk: usize) -> Direct {
        let len = taps.len().max(1);
        let mut d = Direct { rev: vec![0.0; len], bufs: vec![vec![0.0; len - 1 + chunk]; channels], chunk };
        d.set_taps(taps);
        d
    }

    pub(super) fn set_taps(&mut self, taps: &[f32]) {
        for (r, &t) in self.rev.iter_mut().zip(taps.iter().rev()) {
            *r = t;
        }
    }

    pub(super) fn reset(&mut self) {
        self.bufs.iter_mut().for_each(|b| b.fill(0.0));
    }

    pub(super) fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize, isa: Isa) {
        let hist = self.rev.len() - 1;
        for (buf, io) in self.bufs.iter_mut().zip(buffers.iter_mut()) {
            let frames = frames.min(io.len());
            let mut done = 0;
            while done < frames {
                let n = (frames - done).min(self.chunk);
                buf[hist..hist + n].copy_from_slice(&io[done..done + n]);
                convolve(isa, &buf[..hist + n], &self.rev, &mut io[done..done + n]);
                buf.copy_within(n..n + hist, 0);
                done += n;
            }
        }
    }
}
