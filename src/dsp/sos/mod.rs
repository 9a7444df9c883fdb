//! Realtime cascade of second-order sections for many channels.
//!
//! # Structure and precision (chosen by measurement)
//!
//! Each section runs in **transposed direct form II with `f64` coefficients and `f64`
//! state**; audio enters and leaves as `f32`, and a sample stays in `f64` through the
//! whole cascade (no rounding between sections).
//!
//! Measured on the 67 IIR and biquad cases of the shared SciPy reference set
//! (`cargo run --release -p ferrofx-probes --example structure_survey`; table in `docs/structures.md`):
//! plain `f32` TDF-II misses the 1e-4 tolerance on 25 cases (worst 8.4e-2, nearly all
//! `lowfreq`: with poles crowding `z = 1` the `f32` coefficients move the poles and the
//! `f32` state loses the small differences the filter lives on); `f32` direct form I is
//! no better (25, worst 8.6e-2); `f64` coefficients with an `f32` state still miss 7
//! (worst 2.3e-3). `f64` TDF-II misses none: worst 9.2e-8, the float32 rounding of input
//! and output, independent of section order and block size. The price is SIMD width
//! (4 `f64` lanes per AVX2 register instead of 8 `f32`), which the layout below is
//! designed to win back across channels.
//!
//! # Data layout and SIMD
//!
//! Channels are processed in groups of `L` SIMD lanes (8 with AVX-512, 4 with AVX2 or
//! the portable build), `L` channels per `f64` vector: one section update is five fused
//! multiply-adds on whole vectors. Audio moves through an interleaved `f64` scratch of
//! [`SUB_BLOCK`] frames (16 KiB, in L1); the cascade runs over it in chunks of up to 4
//! sections whose state lives in registers for the whole sub-block, so the sample loop
//! touches no state memory. A group of three or four channels with AVX-512 puts two
//! sections in each 8-lane vector (one frame apart), so that it costs half a vector per
//! section instead of a whole 4-lane one (`wavefront_pairs_avx512`: 12 channels
//! 1.14-1.39x faster at 4-48 sections, `benchmarks/probes/examples/sos_probe.rs`). One or two channels
//! (AVX2 or AVX-512) put the *sections* in the lanes instead, time-skewed so the
//! sections of one iteration are independent, in
//! up to three vectors side by side (24 sections of one channel or 12 of two per chunk
//! with AVX-512), so that the vectors' recurrences overlap rather than each waiting on
//! its own two multiply-add latencies. The instruction set is detected at run time
//! (portable binaries: SSE2 baseline, AVX2+FMA and AVX-512 kernels selected when the CPU
//! has them).
//!
//! Offline engines may also run a long block's time segments side by side as lanes (one
//! to seven channels then fill whole SIMD groups): see [`segments`].
//!
//! # Realtime rules
//!
//! [`SosCascade::new`] is the only place memory is allocated. [`SosCascade::process`],
//! [`SosCascade::process_sanitized`], [`SosCascade::set_coefficients`] and
//! [`SosCascade::reset`] never allocate, lock, log or panic.
//!
//! # Non-finite values and subnormals
//!
//! Input sanitising is the engine's job (see `engine`), done here only through
//! [`SosCascade::process_sanitized`], in the pass that reads the input. Here, at the end
//! of every `process` call, a lane whose state became non-finite (a finite but huge input can
//! overflow an unstable-looking transient) is reset to zero, and subnormal state values
//! (below [`FLUSH_BELOW`]) are flushed to zero, so a decaying state never lingers in the
//! subnormal range (where a pole close to 1 can otherwise hold it forever, slowly).

use crate::design::Sos;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod kernel;
pub mod segments;

/// Frames per pass through the scratch.
pub const SUB_BLOCK: usize = 256;
/// The widest SIMD group (AVX-512: 8 `f64` lanes).
pub const MAX_LANES: usize = 8;

/// State magnitudes below this are set to zero at the end of each block: the smallest
/// normal `f64`, so only what is subnormal at the precision the state is kept in goes
/// (subnormal arithmetic is what costs). An absolute threshold any higher would assume
/// unit gain per section: SciPy puts the whole gain of a high-order low-cutoff design
/// into its first section (b ~ 1e-39), whose state then lives far below 1e-30 while the
/// signal it carries is full scale after the later sections.
pub const FLUSH_BELOW: f64 = f64::MIN_POSITIVE;

/// One section normalised to `a0 = 1`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SosCoefs {
    pub b0: f64,
    pub b1: f64,
    pub b2: f64,
    pub a1: f64,
    pub a2: f64,
}

impl SosCoefs {
    /// Complex response at normalised angular frequency `omega` (radians per sample).
    pub fn response(&self, omega: f64) -> num_complex::Complex64 {
        Sos { b: [self.b0, self.b1, self.b2], a: [1.0, self.a1, self.a2] }.response(omega)
    }
}

impl From<&Sos> for SosCoefs {
    fn from(s: &Sos) -> Self {
        let n = s.normalized();
        SosCoefs { b0: n.b[0], b1: n.b[1], b2: n.b[2], a1: n.a[1], a2: n.a[2] }
    }
}

/// Returned when new coefficients do not have the shape the cascade was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the cascade has {expected} sections, the new design has {found}")]
pub struct SectionCountMismatch {
    pub expected: usize,
    pub found: usize,
}

pub use crate::dsp::simd::Isa;

/// The instruction set the cascade kernel runs with on this machine.
pub fn simd_level() -> &'static str {
    Isa::detect().name()
}

/// Returned when more sections are asked for than a cascade was built to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the cascade holds at most {capacity} sections, {requested} were asked for")]
pub struct CapacityExceeded {
    pub capacity: usize,
    pub requested: usize,
}

/// A cascade of second-order sections over a fixed number of channels.
#[derive(Clone, Debug)]
pub struct SosCascade {
    coefs: Vec<SosCoefs>,
    /// `[channel][section]` -> `[s1, s2]`.
    state: Vec<[f64; 2]>,
    channels: usize,
    /// `SUB_BLOCK * MAX_LANES` interleaved `f64` frames.
    scratch: Vec<f64>,
    isa: Isa,
    /// Most sections `coefs` and `state` have room for.
    capacity: usize,
}

impl SosCascade {
    /// Builds the cascade and allocates its state (zero) with the best kernel for this CPU.
    pub fn new(sections: &[Sos], channels: usize) -> SosCascade {
        SosCascade::with_isa(sections, channels, Isa::detect())
    }

    /// Builds the cascade with a given kernel (falls back to the portable one if this CPU
    /// lacks the instructions). For tests and benchmarks.
    pub fn with_isa(sections: &[Sos], channels: usize, isa: Isa) -> SosCascade {
        let mut c = SosCascade::with_capacity(sections.len(), channels, isa);
        // Within capacity by construction.
        let _ = c.set_sections(sections);
        c
    }

    /// An empty cascade with room for `capacity` sections, so that
    /// [`SosCascade::set_sections`] can later change the section count without
    /// allocating (a plugin band switching from a 12 dB/oct to a 96 dB/oct cut).
    pub fn with_capacity(capacity: usize, channels: usize, isa: Isa) -> SosCascade {
        SosCascade {
            coefs: Vec::with_capacity(capacity),
            state: vec![[0.0; 2]; channels * capacity],
            channels,
            scratch: vec![0.0; SUB_BLOCK * MAX_LANES],
            isa: isa.or_portable(),
            capacity,
        }
    }

    /// Most sections this cascade can run without allocating.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Replaces the coefficients with any number of sections up to the capacity. Section
    /// `k` keeps its state if it existed before; new sections start from zero. No
    /// allocation. When sections change shape (a cut going from 4 to 6 sections), the
    /// kept states belong to different poles: the output stays finite but may jump, so a
    /// caller that must be click-free crossfades topology changes.
    pub fn set_sections(&mut self, sections: &[Sos]) -> Result<(), CapacityExceeded> {
        if sections.len() > self.capacity {
            return Err(CapacityExceeded { capacity: self.capacity, requested: sections.len() });
        }
        let (old, new) = (self.coefs.len(), sections.len());
        // Re-lay the state `[channel][section]` from stride `old` to stride `new` in place.
        if new > old {
            for c in (0..self.channels).rev() {
                for k in (0..new).rev() {
                    self.state[c * new + k] = if k < old { self.state[c * old + k] } else { [0.0; 2] };
                }
            }
        } else if new < old {
            for c in 0..self.channels {
                for k in 0..new {
                    self.state[c * new + k] = self.state[c * old + k];
                }
            }
            self.state[self.channels * new..].fill([0.0; 2]);
        }
        self.coefs.clear();
        self.coefs.extend(sections.iter().map(SosCoefs::from));
        Ok(())
    }

    /// The kernel in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    pub fn sections(&self) -> usize {
        self.coefs.len()
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The coefficients the cascade runs (normalised to `a0 = 1`).
    pub fn coefficients(&self) -> &[SosCoefs] {
        &self.coefs
    }

    /// Replaces the coefficients, keeping the state. No allocation.
    pub fn set_coefficients(&mut self, sections: &[Sos]) -> Result<(), SectionCountMismatch> {
        if sections.len() != self.coefs.len() {
            return Err(SectionCountMismatch { expected: self.coefs.len(), found: sections.len() });
        }
        // The same count is within capacity and keeps every section's state.
        let _ = self.set_sections(sections);
        Ok(())
    }

    /// Replaces the coefficients with normalised ones (up to the capacity; more are
    /// ignored) and clears the state. No allocation. For cascades whose state is always
    /// loaded before use (the segmented path's lanes).
    pub(crate) fn set_coefs(&mut self, coefs: &[SosCoefs]) {
        self.coefs.clear();
        self.coefs.extend_from_slice(&coefs[..coefs.len().min(self.capacity)]);
        self.state.fill([0.0; 2]);
    }

    /// One channel's `[s1, s2]` per section.
    pub(crate) fn channel_state(&self, channel: usize) -> &[[f64; 2]] {
        let n = self.coefs.len();
        &self.state[channel * n..(channel + 1) * n]
    }

    /// One channel's `[s1, s2]` per section, to load.
    pub(crate) fn channel_state_mut(&mut self, channel: usize) -> &mut [[f64; 2]] {
        let n = self.coefs.len();
        &mut self.state[channel * n..(channel + 1) * n]
    }

    /// Clears the state of every channel.
    pub fn reset(&mut self) {
        self.state.fill([0.0; 2]);
    }

    /// The filter state, `[channel][section]` -> `[s1, s2]` (for handing a stream between
    /// processors, e.g. to a GPU job and back).
    pub fn state(&self) -> &[[f64; 2]] {
        &self.state[..self.channels * self.coefs.len()]
    }

    /// Loads a state saved by [`SosCascade::state`] from a cascade of the same shape. No
    /// allocation; a state of the wrong length is refused and nothing changes.
    pub fn set_state(&mut self, state: &[[f64; 2]]) -> Result<(), SectionCountMismatch> {
        let n = self.channels * self.coefs.len();
        if state.len() != n {
            return Err(SectionCountMismatch { expected: n, found: state.len() });
        }
        self.state[..n].copy_from_slice(state);
        Ok(())
    }

    /// Filters `frames` samples of each channel in place. Channels beyond the cascade's
    /// channel count are left untouched; so are samples beyond a shorter buffer's end
    /// (the call processes `min(frames, shortest buffer)` samples).
    pub fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        self.process_at(buffers, 0, frames);
    }

    /// [`SosCascade::process`] on `frames` samples starting at `offset` in every buffer
    /// (lets a caller slice a host block into sub-blocks without building new slice lists).
    pub fn process_at(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        self.run(buffers, offset, frames, false);
    }

    /// [`SosCascade::process`] on input that first goes through
    /// [`crate::dsp::sanitize_sample`] (NaN, infinities and subnormals to zero), in the
    /// same pass that reads it into the cascade: the result is bit for bit
    /// `engine::sanitize_input` on each of the first `channels` buffers, then
    /// [`SosCascade::process`]. The engine filters its input this way when a cascade on
    /// the AVX2 or AVX-512 kernels is its first stage (one pass over the audio fewer).
    pub fn process_sanitized(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        self.run(buffers, 0, frames, true);
    }

    /// [`SosCascade::process_at`], or with `clean` [`SosCascade::process_sanitized`]'s
    /// rule applied as the input is read (the segmented path's pieces).
    pub(crate) fn run(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize, clean: bool) {
        let used = buffers.len().min(self.channels);
        let end = buffers[..used].iter().map(|b| b.len()).min().unwrap_or(0).min(offset.saturating_add(frames));
        if end <= offset {
            return;
        }
        if self.coefs.is_empty() {
            if clean {
                for b in buffers[..used].iter_mut() {
                    b[offset..end].iter_mut().for_each(|v| *v = crate::dsp::sanitize_sample(*v));
                }
            }
            return;
        }
        let buffers = &mut buffers[..used];
        let active = self.channels * self.coefs.len();
        let (coefs, state, scratch) = (&self.coefs[..], &mut self.state[..active], &mut self.scratch[..]);
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_isa` only keeps `Avx512` when the CPU reports AVX-512F/VL and FMA.
            Isa::Avx512 => unsafe { avx512::process_avx512(coefs, state, scratch, buffers, offset, end, clean) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_isa` only keeps `Avx2` when the CPU reports AVX2 and FMA.
            Isa::Avx2 => unsafe { avx2::process_avx2(coefs, state, scratch, buffers, offset, end, clean) },
            _ => kernel::process_portable(coefs, state, scratch, buffers, offset, end, clean),
        }
        let sections = self.coefs.len();
        for ch in self.state.chunks_exact_mut(sections).take(used) {
            sanitize_state(ch);
        }
    }
}

/// Resets a channel whose state became non-finite and flushes tiny state values to zero.
pub(crate) fn sanitize_state(state: &mut [[f64; 2]]) {
    if state.iter().flatten().any(|v| !v.is_finite()) {
        state.fill([0.0; 2]);
    }
    for v in state.iter_mut().flatten() {
        if v.abs() < FLUSH_BELOW {
            *v = 0.0;
        }
    }
}
