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

mod direct;
mod partitioned;

use crate::dsp::simd::Isa;
use direct::Direct;
use partitioned::Partitioned;

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
    /// ([`Layout::fixed`]; `partition` a power of two, at least 8).
    Partitioned { partition: usize },
}

/// How the partitioned path splits a kernel: a direct head of `head` taps, then FFT
/// levels, each with blocks `ratios[i]` times those of the level before (a power of two,
/// at least 2; level `i` holds `ratios[i] - 1` partitions), the last level taking the
/// rest of the kernel in partitions of its block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub head: usize,
    pub ratios: Vec<usize>,
}

impl Layout {
    /// Growth of 8 from level to level, the last level taking the rest once
    /// a further level would not cover twice its block.
    pub fn fixed(taps: usize, head: usize) -> Layout {
        let mut ratios = Vec::new();
        let mut block = head;
        while block < taps && block * LEVEL_RATIO * 2 < taps {
            ratios.push(LEVEL_RATIO);
            block *= LEVEL_RATIO;
        }
        Layout { head, ratios }
    }

    /// The levels `(block, first_tap, parts)` for a kernel of `taps` taps: level `i`
    /// starts one block in (`first_tap == block`, what zero latency needs), so the
    /// levels cover taps `head..` once each; ratios past the kernel's end are ignored.
    pub fn levels(&self, taps: usize) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut block = self.head;
        for &r in &self.ratios {
            if block * r >= taps {
                break;
            }
            out.push((block, block, r - 1));
            block *= r;
        }
        if block < taps {
            out.push((block, block, (taps - block).div_ceil(block)));
        }
        out
    }

    /// Whether the head and every ratio are powers of two (head at least 8, ratios at
    /// least 2), as the levels' FFTs need.
    pub fn is_valid(&self) -> bool {
        self.head >= 8 && self.head.is_power_of_two() && self.ratios.iter().all(|&r| r >= 2 && r.is_power_of_two())
    }
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
/// same units: fitted to `cargo run --release -p ferrofx-probes --example fir_probe` on the development
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
/// taps at 2 and 8 channels (`cargo run --release -p ferrofx-probes --example fir_probe`, its `p128x2`
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
                Kind::Partitioned(Box::new(Partitioned::new(taps, channels, &Layout::fixed(taps_len, partition))))
            }
            _ => Kind::Direct(Direct::new(&taps_f32, channels, max_chunk.clamp(64, 4096))),
        };
        FirFilter { taps_f32, isa: isa.or_portable(), kind }
    }

    /// The partitioned path with a given layout (for measurements: [`FirMode`] chooses
    /// the layout otherwise). An invalid layout, or a head not shorter than the kernel,
    /// gives the direct path.
    pub fn with_layout(taps: &[f64], channels: usize, layout: &Layout, max_chunk: usize) -> FirFilter {
        if !layout.is_valid() || layout.head >= taps.len() {
            return FirFilter::new(taps, channels, FirMode::Direct, max_chunk);
        }
        let taps_f32: Vec<f32> = taps.iter().map(|&t| t as f32).collect();
        let kind = Kind::Partitioned(Box::new(Partitioned::new(taps, channels, layout)));
        FirFilter { taps_f32, isa: Isa::detect().or_portable(), kind }
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
