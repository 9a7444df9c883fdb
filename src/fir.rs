//! Realtime FIR filtering: direct convolution for short kernels, uniformly partitioned
//! FFT convolution (overlap-save, `realfft`) for long ones, chosen by a cost estimate.
//!
//! Both paths have **zero latency** and are aligned sample for sample with
//! `lfilter(taps, [1], x)` whatever the host's block size:
//!
//! * the partitioned path splits the kernel into a head of `B` taps, convolved directly
//!   sample by sample, and a tail (`taps[B..]`) whose contribution to output `n` depends
//!   only on input up to `n - B`. The tail runs as a uniformly partitioned overlap-save
//!   convolution (FFT size `2B`, a frequency-domain delay line of `P = ceil((L-B)/B)`
//!   spectra) once per `B` input samples; its result is added during the next `B`
//!   samples. The host block size only decides how the work is sliced.
//! * the direct path keeps `L - 1` samples of history per channel.
//!
//! Arithmetic is `f32` (inputs, taps, FFT) with the FFT result scaled into the kernel
//! spectra once; the error stays near 1e-7 relative to the output peak on the shared
//! reference cases.
//!
//! [`FirFilter::new`] is the only place memory is allocated. `process`, `set_taps` and
//! `reset` never allocate, lock, log or panic (the FFT plans are run with preallocated
//! scratch).

use num_complex::Complex32;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use std::sync::Arc;

/// Largest given FIR the chain format accepts.
pub const MAX_TAPS: usize = 1 << 20;

/// How to run a FIR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FirMode {
    /// Cheapest by the cost estimate ([`choose_mode`]).
    #[default]
    Auto,
    /// Time-domain convolution.
    Direct,
    /// Head direct + partitioned FFT tail with partitions of this many samples (a power
    /// of two, at least 8).
    Partitioned { partition: usize },
}

/// Estimated multiply-adds per output sample of the direct path.
fn direct_cost(taps: usize) -> f64 {
    taps as f64
}

/// Estimated multiply-adds per output sample of the partitioned path with partition `b`:
/// the direct head, two real FFTs of size `2b` per `b` samples, and a complex
/// multiply-add (4 real) per bin per tail partition per `b` samples.
fn partitioned_cost(taps: usize, b: usize) -> f64 {
    let tail = taps.saturating_sub(b);
    let parts = tail.div_ceil(b) as f64;
    let bf = b as f64;
    let fft = 2.0 * 2.5 * (2.0 * bf) * (2.0 * bf).log2() / 2.0;
    bf + (fft + 4.0 * parts * (bf + 1.0)) / bf
}

/// Picks the cheaper path for a kernel of `taps` taps by the cost estimate.
pub fn choose_mode(taps: usize) -> FirMode {
    let direct = direct_cost(taps);
    let best = (3..=14)
        .map(|k| 1usize << k)
        .filter(|&b| b < taps)
        .map(|b| (b, partitioned_cost(taps, b)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        // Demand a clear win: the direct path has no per-block bursts.
        Some((b, cost)) if cost < 0.7 * direct => FirMode::Partitioned { partition: b },
        _ => FirMode::Direct,
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
        let taps_len = taps.len().max(1);
        let mode = match mode {
            FirMode::Auto => choose_mode(taps_len),
            FirMode::Partitioned { partition } if partition < 8 || partition >= taps_len => FirMode::Direct,
            FirMode::Partitioned { partition } => FirMode::Partitioned { partition: partition.next_power_of_two() },
            FirMode::Direct => FirMode::Direct,
        };
        let kind = match mode {
            FirMode::Partitioned { partition } => {
                Kind::Partitioned(Box::new(Partitioned::new(taps, channels, partition)))
            }
            _ => Kind::Direct(Direct::new(taps, channels, max_chunk.clamp(1, 4096))),
        };
        FirFilter { taps_f32: taps.iter().map(|&t| t as f32).collect(), kind }
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
            Kind::Partitioned(p) => FirMode::Partitioned { partition: p.b },
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
            Kind::Direct(d) => d.set_taps(taps),
            Kind::Partitioned(p) => p.set_taps(taps),
        }
        Ok(())
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
        match &mut self.kind {
            Kind::Direct(d) => d.process(buffers, frames),
            Kind::Partitioned(p) => p.process(buffers, frames),
        }
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
    fn new(taps: &[f64], channels: usize, chunk: usize) -> Direct {
        let len = taps.len().max(1);
        let mut d = Direct { rev: vec![0.0; len], bufs: vec![vec![0.0; len - 1 + chunk]; channels], chunk };
        d.set_taps(taps);
        d
    }

    fn set_taps(&mut self, taps: &[f64]) {
        for (r, &t) in self.rev.iter_mut().zip(taps.iter().rev()) {
            *r = t as f32;
        }
    }

    fn reset(&mut self) {
        self.bufs.iter_mut().for_each(|b| b.fill(0.0));
    }

    fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        let hist = self.rev.len() - 1;
        for (buf, io) in self.bufs.iter_mut().zip(buffers.iter_mut()) {
            let frames = frames.min(io.len());
            let mut done = 0;
            while done < frames {
                let n = (frames - done).min(self.chunk);
                buf[hist..hist + n].copy_from_slice(&io[done..done + n]);
                for (i, out) in io[done..done + n].iter_mut().enumerate() {
                    *out = dot(&buf[i..i + hist + 1], &self.rev);
                }
                buf.copy_within(n..n + hist, 0);
                done += n;
            }
        }
    }
}

/// Per-channel state of the partitioned path.
struct ChannelState {
    /// `[previous B | current B]` input samples.
    x: Vec<f32>,
    /// Frequency-domain delay line: `parts` spectra of `B + 1` bins, a ring.
    fdl: Vec<Complex32>,
    /// The tail's output for the current B samples.
    tail_out: Vec<f32>,
}

/// Head of `B` taps direct, tail uniformly partitioned (overlap-save, FFT size `2B`).
struct Partitioned {
    b: usize,
    parts: usize,
    /// First `B` taps reversed.
    head_rev: Vec<f32>,
    /// Tail partition spectra, `parts * (B + 1)`, scaled by `1 / 2B`.
    kernel: Vec<Complex32>,
    channels: Vec<ChannelState>,
    /// Position within the current block (shared: all channels advance together).
    fill: usize,
    /// Ring position of the newest spectrum in every channel's delay line.
    slot: usize,
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    time: Vec<f32>,
    spec: Vec<Complex32>,
    acc: Vec<Complex32>,
    scratch_fwd: Vec<Complex32>,
    scratch_inv: Vec<Complex32>,
}

impl Partitioned {
    fn new(taps: &[f64], channels: usize, b: usize) -> Partitioned {
        let mut planner = RealFftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(2 * b);
        let inverse = planner.plan_fft_inverse(2 * b);
        let parts = taps.len().saturating_sub(b).div_ceil(b).max(1);
        let bins = b + 1;
        let mut p = Partitioned {
            b,
            parts,
            head_rev: vec![0.0; b],
            kernel: vec![Complex32::new(0.0, 0.0); parts * bins],
            channels: (0..channels)
                .map(|_| ChannelState {
                    x: vec![0.0; 2 * b],
                    fdl: vec![Complex32::new(0.0, 0.0); parts * bins],
                    tail_out: vec![0.0; b],
                })
                .collect(),
            fill: 0,
            slot: 0,
            time: forward.make_input_vec(),
            spec: forward.make_output_vec(),
            acc: forward.make_output_vec(),
            scratch_fwd: forward.make_scratch_vec(),
            scratch_inv: inverse.make_scratch_vec(),
            forward,
            inverse,
        };
        p.set_taps(taps);
        p
    }

    fn set_taps(&mut self, taps: &[f64]) {
        let b = self.b;
        let bins = b + 1;
        self.head_rev.fill(0.0);
        for (k, &t) in taps.iter().take(b).enumerate() {
            self.head_rev[b - 1 - k] = t as f32;
        }
        let scale = 1.0 / (2 * b) as f64;
        let tail = taps.get(b..).unwrap_or(&[]);
        for p in 0..self.parts {
            self.time.fill(0.0);
            for (dst, &t) in self.time.iter_mut().zip(tail.iter().skip(p * b).take(b)) {
                *dst = (t * scale) as f32;
            }
            let out = &mut self.kernel[p * bins..(p + 1) * bins];
            // The lengths come from the same plan, so this cannot fail; on error the
            // partition keeps its old spectrum rather than panicking.
            let _ = self.forward.process_with_scratch(&mut self.time, out, &mut self.scratch_fwd);
        }
        // The tail of the block in progress depends only on past input: redo it with the
        // new kernel so the switch is exact from the next sample on.
        self.compute_tails();
    }

    fn reset(&mut self) {
        for ch in self.channels.iter_mut() {
            ch.x.fill(0.0);
            ch.fdl.fill(Complex32::new(0.0, 0.0));
            ch.tail_out.fill(0.0);
        }
        self.fill = 0;
        self.slot = 0;
    }

    fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        let used = buffers.len().min(self.channels.len());
        let frames = buffers[..used].iter().map(|b| b.len()).min().unwrap_or(0).min(frames);
        let b = self.b;
        let mut done = 0;
        while done < frames {
            let n = (frames - done).min(b - self.fill);
            for (ch, io) in self.channels.iter_mut().zip(buffers[..used].iter_mut()) {
                let io = &mut io[done..done + n];
                ch.x[b + self.fill..b + self.fill + n].copy_from_slice(io);
                for (i, out) in io.iter_mut().enumerate() {
                    let pos = self.fill + i;
                    *out = dot(&ch.x[pos + 1..pos + 1 + b], &self.head_rev) + ch.tail_out[pos];
                }
            }
            self.fill += n;
            done += n;
            if self.fill == b {
                self.block_boundary(used);
            }
        }
    }

    /// A full block of `B` new samples is in: compute every channel's tail output for
    /// the next block and slide the input.
    fn block_boundary(&mut self, used: usize) {
        let b = self.b;
        let bins = b + 1;
        let slot = self.slot;
        for ch in self.channels[..used].iter_mut() {
            self.time.copy_from_slice(&ch.x);
            let _ = self.forward.process_with_scratch(&mut self.time, &mut self.spec, &mut self.scratch_fwd);
            ch.fdl[slot * bins..(slot + 1) * bins].copy_from_slice(&self.spec);
            ch.x.copy_within(b.., 0);
        }
        // Channels beyond `used` were not fed this block; keep them consistent with
        // silence so they do not replay stale input when they come back.
        for ch in self.channels[used..].iter_mut() {
            ch.x.fill(0.0);
            ch.fdl[slot * bins..(slot + 1) * bins].fill(Complex32::new(0.0, 0.0));
        }
        self.fill = 0;
        self.slot = (slot + 1) % self.parts;
        self.compute_tails();
    }

    /// Every channel's tail output for the current block, from the delay line (whose
    /// newest spectrum is the block before) and the current kernel.
    fn compute_tails(&mut self) {
        let b = self.b;
        let bins = b + 1;
        let newest = (self.slot + self.parts - 1) % self.parts;
        for ch in self.channels.iter_mut() {
            self.acc.fill(Complex32::new(0.0, 0.0));
            for p in 0..self.parts {
                let src = (newest + self.parts - p) % self.parts;
                let x = &ch.fdl[src * bins..(src + 1) * bins];
                let h = &self.kernel[p * bins..(p + 1) * bins];
                for ((a, xv), hv) in self.acc.iter_mut().zip(x).zip(h) {
                    *a += xv * hv;
                }
            }
            // DC and Nyquist bins of a real signal's spectrum are real.
            self.acc[0].im = 0.0;
            self.acc[b].im = 0.0;
            let _ = self.inverse.process_with_scratch(&mut self.acc, &mut self.time, &mut self.scratch_inv);
            ch.tail_out.copy_from_slice(&self.time[b..]);
        }
    }
}
