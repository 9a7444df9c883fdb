//! Non-uniformly partitioned overlap-save convolution (see the module above): a direct
//! head, then levels of growing partition size, channels in complex pairs.

use super::direct::convolve;
use super::Layout;
#[cfg(target_arch = "x86_64")]
use crate::dsp::simd::Fused;
use crate::dsp::simd::{Isa, MulAdd, PortableMulAdd};
use num_complex::Complex32;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;


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
pub(super) struct Partitioned {
    /// First `B` taps reversed.
    pub(super) head_rev: Vec<f32>,
    /// Per channel: `B - 1` history samples followed by room for `B` new ones.
    pub(super) head_bufs: Vec<Vec<f32>>,
    levels: Vec<Level>,
    /// Position within the head's block of `B` (the first level's block).
    pub(super) fill: usize,
}

impl Partitioned {
    pub(super) fn new(taps: &[f64], channels: usize, layout: &Layout) -> Partitioned {
        let b = layout.head;
        let mut planners = Planners { complex: FftPlanner::new(), real: RealFftPlanner::new() };
        let levels = layout
            .levels(taps.len())
            .into_iter()
            .map(|(block, first, parts)| Level::new(&mut planners, taps, channels, block, first, parts))
            .collect();
        let mut p = Partitioned { head_rev: vec![0.0; b], head_bufs: vec![vec![0.0; 2 * b - 1]; channels], levels, fill: 0 };
        p.set_head(taps);
        p
    }

    pub(super) fn set_head(&mut self, taps: &[f64]) {
        let b = self.head_rev.len();
        self.head_rev.fill(0.0);
        for (k, &t) in taps.iter().take(b).enumerate() {
            self.head_rev[b - 1 - k] = t as f32;
        }
    }

    pub(super) fn set_taps(&mut self, taps: &[f64]) {
        self.set_head(taps);
        for level in self.levels.iter_mut() {
            level.set_taps(taps);
        }
    }

    pub(super) fn reset(&mut self) {
        self.head_bufs.iter_mut().for_each(|b| b.fill(0.0));
        self.levels.iter_mut().for_each(Level::reset);
        self.fill = 0;
    }

    pub(super) fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize, isa: Isa) {
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
                let lv = Layout::fixed(taps, b).levels(taps);
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
