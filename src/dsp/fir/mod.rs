//! Realtime FIR filtering: direct convolution for short kernels, non-uniformly
//! partitioned FFT convolution (overlap-save, `rustfft`/`realfft`) for long ones, chosen by a cost
//! estimate.
//!
//! Both paths have **zero latency** and are aligned sample for sample with
//! `lfilter(taps, [1], x)` whatever the host's block size:
//!
//! * the partitioned path splits the kernel into a head of `B` taps, convolved directly,
//!   and levels of growing partition size: level `i` has partitions of `B_i = B * 8^i`
//!   samples and covers taps `[B_i, 8 B_i)` (the last level runs to the end). A level's
//!   contribution to output `n` depends only on input up to `n - B_i`, so each level
//!   runs as a uniformly partitioned overlap-save convolution (FFT size `2 B_i`, a
//!   frequency-domain delay line) once per `B_i` input samples, its result added during
//!   the next `B_i` samples (Gardner 1995, "Efficient convolution without input-output
//!   delay", with uniform levels as in Garcia 2002). Per sample that costs `B` direct
//!   taps plus a few FFT bins per level instead of `L` taps. The host block size only
//!   decides how the work is sliced. Channels go through the levels in pairs, one in
//!   the real and one in the imaginary part of a complex FFT (the kernel is real).
//! * the direct path keeps `L - 1` samples of history per channel and computes 64
//!   outputs at a time (taps broadcast over four SIMD vectors of outputs).
//!
//! Arithmetic is `f32` (inputs, taps, FFT) with `1/2B` folded into the kernel spectra;
//! the error stays near 1e-7 of the output peak on the shared reference cases.
//!
//! [`FirFilter::new`] is the only place memory is allocated. `process`, `set_taps` and
//! `reset` never allocate, lock, log or panic (the FFT plans run with preallocated
//! scratch).

#[cfg(target_arch = "x86_64")]
use crate::dsp::simd::Fused;
use crate::dsp::simd::{Isa, MulAdd, PortableMulAdd};
use num_complex::Complex32;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Largest given FIR the chain format accepts.
pub const MAX_TAPS: usize = 1 << 20;

/// Partition growth from one level to the next.
const LEVEL_RATIO: usize = 8;

/// How to run a FIR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FirMode {
    /// Cheapest by the cost estimate ([`choose_mode`]).
    #[default]
    Auto,
    /// Time-domain convolution.
    Direct,
    /// Direct head of `partition` taps, then FFT levels of `partition * 8^i` samples
    /// (`partition` a power of two, at least 8).
    Partitioned { partition: usize },
}

/// The levels `(block, first_tap, parts)` for a kernel of `taps` taps with head `b`.
fn levels(taps: usize, b: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut block = b;
    while block < taps {
        let next = block * LEVEL_RATIO;
        // The last level takes the rest when a further level would not pay.
        let end = if next * 2 >= taps { taps } else { next.min(taps) };
        out.push((block, block, (end - block).div_ceil(block)));
        if end == taps {
            break;
        }
        block = next;
    }
    out
}

/// Head size of the partitioned path chosen by [`choose_mode`].
const DEFAULT_HEAD: usize = 128;

/// Relative cost per output sample of the direct path: one unit per tap for the
/// 4 x 16-output kernel (AVX2, portable); the AVX-512 ring kernel
/// ([`convolve_tiles_avx512`]) measured 0.52-0.62 of that from 256 to 1,024 taps.
fn direct_cost(taps: usize, isa: Isa) -> f64 {
    taps as f64 * if isa == Isa::Avx512 { 0.55 } else { 1.0 }
}

/// Relative cost per output sample of the partitioned path with a head of 128, in the
/// same units: fitted to `cargo run --release --example fir_probe` on the development
/// machine, where it grows by roughly one FFT level's cost per doubling of the length
/// (the head of 128 was within 15 % of the best head size from 511 to 262,144 taps).
/// Without AVX-512 it equals the direct path near 350 taps; with AVX-512 (its faster
/// direct kernel also runs the head) near 900 taps.
fn partitioned_cost(taps: usize, isa: Isa) -> f64 {
    let doublings = (taps.max(512) as f64 / 512.0).log2();
    if isa == Isa::Avx512 {
        390.0 + 134.0 * doublings
    } else {
        340.0 + 60.0 * doublings
    }
}

/// The partitioned path's cost per channel relative to one channel alone when channels
/// share complex FFTs in pairs ([`LevelPair`]): measured 0.61-0.73 from 256 to 16,384
/// taps at 2 and 8 channels (`cargo run --release --example fir_probe`, its `p128x2`
/// column against `p128`). An odd count's last channel runs alone at full cost; the
/// estimate leaves that out on purpose, so that every split of a file's channels into
/// groups of two or more picks the same path (`render --threads` is bit-identical).
fn pairing_factor(channels: usize) -> f64 {
    if channels >= 2 {
        0.68
    } else {
        1.0
    }
}

/// Picks the cheaper path for a kernel of `taps` taps on one channel on this CPU by the
/// cost estimate.
pub fn choose_mode(taps: usize) -> FirMode {
    choose_mode_for(taps, 1)
}

/// Picks the cheaper path for a kernel of `taps` taps on `channels` channels on this CPU
/// by the cost estimate: with two or more channels the partitioned path pays from
/// shorter kernels (about 500 taps instead of 900 with AVX-512). The choice is the same
/// for any count of two or more.
pub fn choose_mode_for(taps: usize, channels: usize) -> FirMode {
    let isa = Isa::detect();
    if taps > DEFAULT_HEAD && partitioned_cost(taps, isa) * pairing_factor(channels) < direct_cost(taps, isa) {
        FirMode::Partitioned { partition: DEFAULT_HEAD }
    } else {
        FirMode::Direct
    }
}

/// Returned when new taps do not have the length the filter was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the FIR has {expected} taps, the new design has {found}")]
pub struct TapCountMismatch {
    pub expected: usize,
    pub found: usize,
}

/// A FIR over a fixed number of channels.
pub struct FirFilter {
    /// The taps as run (rounded to `f32`), for responses and inspection.
    taps_f32: Vec<f32>,
    isa: Isa,
    kind: Kind,
}

enum Kind {
    Direct(Direct),
    Partitioned(Box<Partitioned>),
}

impl FirFilter {
    /// Builds the filter; `max_chunk` bounds the direct path's working buffer (host
    /// blocks longer than it are processed in pieces).
    pub fn new(taps: &[f64], channels: usize, mode: FirMode, max_chunk: usize) -> FirFilter {
        FirFilter::with_isa(taps, channels, mode, max_chunk, Isa::detect())
    }

    /// [`FirFilter::new`] with a given kernel (the portable one if this CPU lacks the
    /// instructions). For tests and benchmarks; `FirMode::Auto` still chooses by this
    /// CPU's best kernel.
    pub fn with_isa(taps: &[f64], channels: usize, mode: FirMode, max_chunk: usize, isa: Isa) -> FirFilter {
        let taps_len = taps.len().max(1);
        let mode = match mode {
            FirMode::Auto => choose_mode_for(taps_len, channels),
            FirMode::Partitioned { partition } if partition < 8 || partition >= taps_len => FirMode::Direct,
            FirMode::Partitioned { partition } => FirMode::Partitioned { partition: partition.next_power_of_two() },
            FirMode::Direct => FirMode::Direct,
        };
        let taps_f32: Vec<f32> = taps.iter().map(|&t| t as f32).collect();
        let kind = match mode {
            FirMode::Partitioned { partition } => {
                Kind::Partitioned(Box::new(Partitioned::new(taps, channels, partition)))
            }
            _ => Kind::Direct(Direct::new(&taps_f32, channels, max_chunk.clamp(64, 4096))),
        };
        FirFilter { taps_f32, isa: isa.or_portable(), kind }
    }

    /// Number of taps.
    pub fn taps(&self) -> usize {
        self.taps_f32.len()
    }

    /// The taps the filter runs (rounded to `f32`).
    pub fn taps_f32(&self) -> &[f32] {
        &self.taps_f32
    }

    /// The path in use.
    pub fn mode(&self) -> FirMode {
        match &self.kind {
            Kind::Direct(_) => FirMode::Direct,
            Kind::Partitioned(p) => FirMode::Partitioned { partition: p.head_rev.len() },
        }
    }

    /// Replaces the taps (same length), keeping the history. No allocation.
    pub fn set_taps(&mut self, taps: &[f64]) -> Result<(), TapCountMismatch> {
        if taps.len() != self.taps_f32.len() {
            return Err(TapCountMismatch { expected: self.taps_f32.len(), found: taps.len() });
        }
        for (d, &t) in self.taps_f32.iter_mut().zip(taps) {
            *d = t as f32;
        }
        match &mut self.kind {
            Kind::Direct(d) => d.set_taps(&self.taps_f32),
            Kind::Partitioned(p) => p.set_taps(taps),
        }
        Ok(())
    }

    /// The last `taps - 1` input samples of `channel`, oldest first, on the direct path
    /// (`None` on the partitioned path, whose history lives in spectra, or for a channel
    /// the filter does not have).
    pub fn history(&self, channel: usize) -> Option<&[f32]> {
        match &self.kind {
            Kind::Direct(d) => d.bufs.get(channel).map(|b| &b[..d.rev.len() - 1]),
            Kind::Partitioned(_) => None,
        }
    }

    /// Replaces the history of `channel` (direct path only; `history.len()` must be
    /// `taps - 1`). No allocation. Returns `false`, changing nothing, when it cannot.
    pub fn set_history(&mut self, channel: usize, history: &[f32]) -> bool {
        match &mut self.kind {
            Kind::Direct(d) => {
                let hist = d.rev.len() - 1;
                match d.bufs.get_mut(channel) {
                    Some(b) if history.len() == hist => {
                        b[..hist].copy_from_slice(history);
                        true
                    }
                    _ => false,
                }
            }
            Kind::Partitioned(_) => false,
        }
    }

    /// Clears all history.
    pub fn reset(&mut self) {
        match &mut self.kind {
            Kind::Direct(d) => d.reset(),
            Kind::Partitioned(p) => p.reset(),
        }
    }

    /// Filters `frames` samples of each channel in place. Buffers beyond the filter's
    /// channel count are left untouched; the engine always passes every channel (on the
    /// partitioned path a channel left out of a call has its history cleared).
    pub fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        let isa = self.isa;
        match &mut self.kind {
            Kind::Direct(d) => d.process(buffers, frames, isa),
            Kind::Partitioned(p) => p.process(buffers, frames, isa),
        }
    }
}

/// `out[i] = sum_k rev[k] * buf[i + k]` (`buf` holds `out.len() + rev.len() - 1`
/// samples), dispatched to the best kernel for `isa`.
fn convolve(isa: Isa, buf: &[f32], rev: &[f32], out: &mut [f32]) {
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

/// `acc[i] += x[i] * h[i]` over complex bins (`acc[i] = x[i] * h[i]` when `FIRST`:
/// the first partition overwrites instead of clearing the accumulator in a pass of its
/// own), dispatched to the best kernel.
fn complex_mac<const FIRST: bool>(isa: Isa, acc: &mut [Complex32], x: &[Complex32], h: &[Complex32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` comes from `Isa::detect`, so the CPU has AVX-512F/VL and FMA.
        Isa::Avx512 => unsafe { complex_mac_avx512::<FIRST>(acc, x, h) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` comes from `Isa::detect`, so the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { complex_mac_avx2::<FIRST>(acc, x, h) },
        _ => complex_mac_generic::<FIRST, PortableMulAdd>(acc, x, h),
    }
}

/// [`complex_mac`] for partition `p` of a sum over partitions: the first writes.
fn partition_mac(isa: Isa, p: usize, acc: &mut [Complex32], x: &[Complex32], h: &[Complex32]) {
    if p == 0 {
        complex_mac::<true>(isa, acc, x, h);
    } else {
        complex_mac::<false>(isa, acc, x, h);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
fn complex_mac_avx512<const FIRST: bool>(acc: &mut [Complex32], x: &[Complex32], h: &[Complex32]) {
    complex_mac_generic::<FIRST, Fused>(acc, x, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn complex_mac_avx2<const FIRST: bool>(acc: &mut [Complex32], x: &[Complex32], h: &[Complex32]) {
    complex_mac_generic::<FIRST, Fused>(acc, x, h)
}

#[inline(always)]
fn complex_mac_generic<const FIRST: bool, A: MulAdd>(acc: &mut [Complex32], x: &[Complex32], h: &[Complex32]) {
    for ((a, xv), hv) in acc.iter_mut().zip(x).zip(h) {
        // The same operations as on a cleared accumulator, so the same rounding.
        let start = if FIRST { Complex32::new(0.0, 0.0) } else { *a };
        let re = A::f32(xv.re, hv.re, A::f32(-xv.im, hv.im, start.re));
        let im = A::f32(xv.re, hv.im, A::f32(xv.im, hv.re, start.im));
        *a = Complex32::new(re, im);
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
struct Direct {
    /// Taps reversed, so output `i` is `dot(buf[i..i + L], rev)`.
    rev: Vec<f32>,
    /// Per channel: `L - 1` history samples followed by room for `chunk` new ones.
    bufs: Vec<Vec<f32>>,
    chunk: usize,
}

impl Direct {
    fn new(taps: &[f32], channels: usize, chunk: usize) -> Direct {
        let len = taps.len().max(1);
        let mut d = Direct { rev: vec![0.0; len], bufs: vec![vec![0.0; len - 1 + chunk]; channels], chunk };
        d.set_taps(taps);
        d
    }

    fn set_taps(&mut self, taps: &[f32]) {
        for (r, &t) in self.rev.iter_mut().zip(taps.iter().rev()) {
            *r = t;
        }
    }

    fn reset(&mut self) {
        self.bufs.iter_mut().for_each(|b| b.fill(0.0));
    }

    fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize, isa: Isa) {
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

/// State of one level for a pair of channels: channel `2 p` rides in the real part of
/// the complex signal, channel `2 p + 1` in the imaginary part.
///
/// The kernel is real, so convolving `x0 + i x1` with it yields `y0 + i y1`: one complex
/// FFT of `2B` serves two channels, where a real FFT per channel (`realfft`: a complex
/// FFT of `B` plus a scalar unpacking pass) costs the same arithmetic and the unpacking
/// on top (28 % of `long_fir`'s time, measured with `perf`; stereo ~1.4x faster). An
/// odd channel count's last channel keeps the real FFT ([`LevelSingle`]): alone in a
/// pair it would cost a whole pair (measured 2x slower).
struct LevelPair {
    /// Two halves of `B` input samples of both channels: the current block in half
    /// [`Level::half`], the previous one in the other.
    x: Vec<Complex32>,
    /// Frequency-domain delay line: `parts` spectra of `2B` bins, a ring.
    fdl: Vec<Complex32>,
    /// The inverse FFT of the current block's spectrum: its last `B` samples are this
    /// level's output for the current block of both channels.
    out: Vec<Complex32>,
}

/// State of one level for the unpaired last channel: real FFTs.
struct LevelSingle {
    /// Two halves of `B` input samples, as in [`LevelPair::x`].
    x: Vec<f32>,
    /// Frequency-domain delay line: `parts` half spectra of `B + 1` bins, a ring.
    fdl: Vec<Complex32>,
    /// The inverse real FFT of the current block's spectrum: its last `B` samples are
    /// this level's output for the current block.
    out: Vec<f32>,
    r2c: Arc<dyn RealToComplex<f32>>,
    c2r: Arc<dyn ComplexToReal<f32>>,
    time: Vec<f32>,
    scratch_r2c: Vec<Complex32>,
    scratch_c2r: Vec<Complex32>,
}

/// One uniformly partitioned overlap-save convolution of taps `[B, B + parts * B)`
/// (for the first level; in general `[first, first + parts * B)` with `first == B`).
struct Level {
    isa: Isa,
    b: usize,
    first_tap: usize,
    parts: usize,
    /// Partition spectra, scaled by `1 / 2B`, `kernel_bins` apart: the full `2B` bins
    /// when there are pairs, else (one channel) only the `B + 1` a real FFT uses.
    kernel: Vec<Complex32>,
    kernel_bins: usize,
    pairs: Vec<LevelPair>,
    single: Option<LevelSingle>,
    /// Position within the current block (all channels advance together).
    fill: usize,
    /// Which half of the input buffers (`0` or `1`) takes the current block.
    half: usize,
    /// Ring position where the next spectrum goes.
    slot: usize,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    work: Vec<Complex32>,
    scratch: Vec<Complex32>,
}

impl Level {
    fn new(planners: &mut Planners, taps: &[f64], channels: usize, b: usize, first_tap: usize, parts: usize) -> Level {
        let forward = planners.complex.plan_fft_forward(2 * b);
        let inverse = planners.complex.plan_fft_inverse(2 * b);
        let zero = Complex32::new(0.0, 0.0);
        let single = (channels % 2 == 1).then(|| {
            let r2c = planners.real.plan_fft_forward(2 * b);
            let c2r = planners.real.plan_fft_inverse(2 * b);
            LevelSingle {
                x: vec![0.0; 2 * b],
                fdl: vec![zero; parts * (b + 1)],
                out: c2r.make_output_vec(),
                time: r2c.make_input_vec(),
                scratch_r2c: r2c.make_scratch_vec(),
                scratch_c2r: c2r.make_scratch_vec(),
                r2c,
                c2r,
            }
        });
        let scratch_len = forward.get_inplace_scratch_len().max(inverse.get_inplace_scratch_len());
        let kernel_bins = if channels >= 2 { 2 * b } else { b + 1 };
        let mut level = Level {
            isa: Isa::detect(),
            b,
            first_tap,
            parts,
            kernel: vec![zero; parts * kernel_bins],
            kernel_bins,
            pairs: (0..channels / 2)
                .map(|_| LevelPair { x: vec![zero; 2 * b], fdl: vec![zero; parts * 2 * b], out: vec![zero; 2 * b] })
                .collect(),
            single,
            fill: 0,
            half: 0,
            slot: 0,
            work: vec![zero; 2 * b],
            scratch: vec![zero; scratch_len],
            forward,
            inverse,
        };
        level.set_taps(taps);
        level
    }

    /// Adds the input samples of `channel` at the current position.
    fn push(&mut self, channel: usize, input: &[f32]) {
        let at = self.half * self.b + self.fill;
        let Some(pair) = self.pairs.get_mut(channel / 2) else {
            if let Some(single) = self.single.as_mut() {
                single.x[at..at + input.len()].copy_from_slice(input);
            }
            return;
        };
        let x = &mut pair.x[at..at + input.len()];
        if channel.is_multiple_of(2) {
            x.iter_mut().zip(input).for_each(|(z, &v)| z.re = v);
        } else {
            x.iter_mut().zip(input).for_each(|(z, &v)| z.im = v);
        }
    }

    /// Adds this level's output for `channel` at the current position to `io`.
    fn add_output(&self, channel: usize, io: &mut [f32]) {
        let range = self.b + self.fill..self.b + self.fill + io.len();
        let Some(pair) = self.pairs.get(channel / 2) else {
            if let Some(single) = self.single.as_ref() {
                io.iter_mut().zip(&single.out[range]).for_each(|(o, t)| *o += t);
            }
            return;
        };
        let out = &pair.out[range];
        if channel.is_multiple_of(2) {
            io.iter_mut().zip(out).for_each(|(o, z)| *o += z.re);
        } else {
            io.iter_mut().zip(out).for_each(|(o, z)| *o += z.im);
        }
    }

    fn set_taps(&mut self, taps: &[f64]) {
        let (b, kb) = (self.b, self.kernel_bins);
        let scale = 1.0 / (2 * b) as f64;
        let mine = taps.get(self.first_tap..).unwrap_or(&[]);
        for p in 0..self.parts {
            self.work.fill(Complex32::new(0.0, 0.0));
            for (dst, &t) in self.work.iter_mut().zip(mine.iter().skip(p * b).take(b)) {
                dst.re = (t * scale) as f32;
            }
            // `work` and `scratch` have the plan's lengths (rustfft panics only on a
            // length mismatch).
            self.forward.process_with_scratch(&mut self.work, &mut self.scratch);
            self.kernel[p * kb..(p + 1) * kb].copy_from_slice(&self.work[..kb]);
        }
        // The output of the block in progress depends only on past input: redo it with
        // the new kernel so the switch is exact from the next sample on.
        self.compute_outputs();
    }

    fn reset(&mut self) {
        let zero = Complex32::new(0.0, 0.0);
        for pair in self.pairs.iter_mut() {
            pair.x.fill(zero);
            pair.fdl.fill(zero);
            pair.out.fill(zero);
        }
        if let Some(single) = self.single.as_mut() {
            single.x.fill(0.0);
            single.fdl.fill(zero);
            single.out.fill(0.0);
        }
        self.fill = 0;
        self.half = 0;
        self.slot = 0;
    }

    /// A full block is in: push every pair's spectrum, slide, compute the outputs for
    /// the next block. Channels from `used` on were not fed this block: they restart
    /// from silence (a pair with one of them keeps only the other channel's part).
    fn block_boundary(&mut self, used: usize) {
        let (b, n, slot) = (self.b, 2 * self.b, self.slot);
        // Where the previous and the current block sit in the input halves.
        let (prev, cur) = ((1 - self.half) * b, self.half * b);
        let zero = Complex32::new(0.0, 0.0);
        for (p, pair) in self.pairs.iter_mut().enumerate() {
            match used.saturating_sub(2 * p) {
                0 => {
                    pair.x.fill(zero);
                    pair.fdl.fill(zero);
                }
                fed => {
                    if fed == 1 {
                        // The odd channel of the pair was not fed: clear its history.
                        pair.x.iter_mut().for_each(|z| z.im = 0.0);
                        for spec in pair.fdl.chunks_exact_mut(n) {
                            keep_real_part(spec);
                        }
                    }
                    // `[previous | current]` straight into the ring slot, transformed there.
                    let spec = &mut pair.fdl[slot * n..(slot + 1) * n];
                    spec[..b].copy_from_slice(&pair.x[prev..prev + b]);
                    spec[b..].copy_from_slice(&pair.x[cur..cur + b]);
                    self.forward.process_with_scratch(spec, &mut self.scratch);
                }
            }
        }
        if let Some(single) = self.single.as_mut() {
            let bins = b + 1;
            if used > 2 * self.pairs.len() {
                single.time[..b].copy_from_slice(&single.x[prev..prev + b]);
                single.time[b..].copy_from_slice(&single.x[cur..cur + b]);
                // The lengths come from the same plan, so this cannot fail.
                let spec = &mut single.fdl[slot * bins..(slot + 1) * bins];
                let _ = single.r2c.process_with_scratch(&mut single.time, spec, &mut single.scratch_r2c);
            } else {
                single.x.fill(0.0);
                single.fdl.fill(zero);
            }
        }
        self.fill = 0;
        self.half = 1 - self.half;
        self.slot = (slot + 1) % self.parts;
        self.compute_outputs();
    }

    /// Every pair's output for the current block from the delay line (whose newest
    /// spectrum is the block before) and the kernel.
    fn compute_outputs(&mut self) {
        let (b, n) = (self.b, 2 * self.b);
        let newest = (self.slot + self.parts - 1) % self.parts;
        for pair in self.pairs.iter_mut() {
            for p in 0..self.parts {
                let src = (newest + self.parts - p) % self.parts;
                let x = &pair.fdl[src * n..(src + 1) * n];
                // With pairs, `kernel_bins == n`.
                let h = &self.kernel[p * n..(p + 1) * n];
                partition_mac(self.isa, p, &mut pair.out, x, h);
            }
            self.inverse.process_with_scratch(&mut pair.out, &mut self.scratch);
        }
        if let Some(single) = self.single.as_mut() {
            // A real partition's spectrum: the first `B + 1` bins of the full one.
            let (bins, kb) = (b + 1, self.kernel_bins);
            let acc = &mut self.work[..bins];
            for p in 0..self.parts {
                let src = (newest + self.parts - p) % self.parts;
                partition_mac(self.isa, p, acc, &single.fdl[src * bins..(src + 1) * bins], &self.kernel[p * kb..p * kb + bins]);
            }
            // DC and Nyquist bins of a real signal's spectrum are real.
            acc[0].im = 0.0;
            acc[b].im = 0.0;
            let _ = single.c2r.process_with_scratch(acc, &mut single.out, &mut single.scratch_c2r);
        }
    }
}

/// Turns the spectrum `Z` of `x0 + i x1` (real `x0`, `x1`) into the spectrum of `x0`:
/// `X0[k] = (Z[k] + conj(Z[-k])) / 2`.
fn keep_real_part(spec: &mut [Complex32]) {
    let n = spec.len();
    spec[0].im = 0.0;
    for k in 1..n.div_ceil(2) {
        let (a, c) = (spec[k], spec[n - k].conj());
        let x0 = (a + c) * 0.5;
        spec[k] = x0;
        spec[n - k] = x0.conj();
    }
    if n.is_multiple_of(2) {
        spec[n / 2].im = 0.0;
    }
}

/// The FFT planners shared by a filter's levels.
struct Planners {
    complex: FftPlanner<f32>,
    real: RealFftPlanner<f32>,
}

/// Head of `B` taps direct, the rest in FFT levels of growing size.
struct Partitioned {
    /// First `B` taps reversed.
    head_rev: Vec<f32>,
    /// Per channel: `B - 1` history samples followed by room for `B` new ones.
    head_bufs: Vec<Vec<f32>>,
    levels: Vec<Level>,
    /// Position within the head's block of `B` (the first level's block).
    fill: usize,
}

impl Partitioned {
    fn new(taps: &[f64], channels: usize, b: usize) -> Partitioned {
        let mut planners = Planners { complex: FftPlanner::new(), real: RealFftPlanner::new() };
        let levels = levels(taps.len(), b)
            .into_iter()
            .map(|(block, first, parts)| Level::new(&mut planners, taps, channels, block, first, parts))
            .collect();
        let mut p = Partitioned { head_rev: vec![0.0; b], head_bufs: vec![vec![0.0; 2 * b - 1]; channels], levels, fill: 0 };
        p.set_head(taps);
        p
    }

    fn set_head(&mut self, taps: &[f64]) {
        let b = self.head_rev.len();
        self.head_rev.fill(0.0);
        for (k, &t) in taps.iter().take(b).enumerate() {
            self.head_rev[b - 1 - k] = t as f32;
        }
    }

    fn set_taps(&mut self, taps: &[f64]) {
        self.set_head(taps);
        for level in self.levels.iter_mut() {
            level.set_taps(taps);
        }
    }

    fn reset(&mut self) {
        self.head_bufs.iter_mut().for_each(|b| b.fill(0.0));
        self.levels.iter_mut().for_each(Level::reset);
        self.fill = 0;
    }

    fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize, isa: Isa) {
        let used = buffers.len().min(self.head_bufs.len());
        let frames = buffers[..used].iter().map(|b| b.len()).min().unwrap_or(0).min(frames);
        let b = self.head_rev.len();
        let hist = b - 1;
        let mut done = 0;
        while done < frames {
            // Up to the head's next block boundary; every level's boundary is one of them.
            let n = (frames - done).min(b - self.fill);
            for (c, io) in buffers[..used].iter_mut().enumerate() {
                let io = &mut io[done..done + n];
                let head = &mut self.head_bufs[c];
                head[hist + self.fill..hist + self.fill + n].copy_from_slice(io);
                for level in self.levels.iter_mut() {
                    level.push(c, io);
                }
                convolve(isa, &head[self.fill..hist + self.fill + n], &self.head_rev, io);
                for level in self.levels.iter() {
                    level.add_output(c, io);
                }
            }
            self.fill += n;
            done += n;
            for level in self.levels.iter_mut() {
                level.fill += n;
                if level.fill == level.b {
                    level.block_boundary(used);
                }
            }
            if self.fill == b {
                for head in self.head_bufs.iter_mut() {
                    head.copy_within(b.., 0);
                }
                self.fill = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_real_part_leaves_the_spectrum_of_the_real_channel() {
        let mut planner = FftPlanner::<f32>::new();
        for n in [2usize, 16, 256] {
            let fft = planner.plan_fft_forward(n);
            let x0: Vec<f32> = (0..n).map(|i| ((i * 37 % 11) as f32 - 5.0) / 3.0).collect();
            let x1: Vec<f32> = (0..n).map(|i| ((i * 53 % 7) as f32 - 3.0) / 2.0).collect();
            let mut both: Vec<Complex32> = x0.iter().zip(&x1).map(|(&a, &b)| Complex32::new(a, b)).collect();
            let mut only: Vec<Complex32> = x0.iter().map(|&a| Complex32::new(a, 0.0)).collect();
            fft.process(&mut both);
            fft.process(&mut only);
            keep_real_part(&mut both);
            for (k, (a, b)) in both.iter().zip(&only).enumerate() {
                assert!((a - b).norm() < 1e-4, "n {n} bin {k}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn levels_cover_every_tap_once() {
        for taps in [9usize, 64, 65, 100, 1000, 4096, 262_144, 1 << 20, (1 << 20) - 3] {
            for b in [8usize, 16, 64, 256] {
                if b >= taps {
                    continue;
                }
                let lv = levels(taps, b);
                let mut next = b;
                for &(block, first, parts) in &lv {
                    assert_eq!(first, next, "taps {taps} b {b}: {lv:?}");
                    assert_eq!(first, block, "a level starts one block in (zero latency)");
                    next = first + parts * block;
                }
                assert!(next >= taps && next - taps < lv.last().unwrap().0, "taps {taps} b {b}: {lv:?}");
            }
        }
    }
}
