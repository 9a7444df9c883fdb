//! The realtime engine: a designed chain turned into preallocated processors.
//!
//! ```
//! use ferrofx::chain::{Butterworth, Biquad};
//! use ferrofx::engine::Engine;
//!
//! let chain = Butterworth::highpass(30.0, 4) | Biquad::peaking(1000.0, 1.4, -6.0);
//! let designed = chain.design(48_000.0).unwrap();
//! let mut engine = Engine::new(&designed, 2, 512);
//! let mut left = vec![0.0f32; 512];
//! let mut right = vec![0.0f32; 512];
//! left[0] = 1.0;
//! engine.process(&mut [&mut left[..], &mut right[..]]);
//! assert!(left.iter().all(|v| v.is_finite()));
//! ```
//!
//! # Realtime rules
//! [`Engine::new`] allocates everything. [`Engine::process`], [`Engine::update`] and
//! [`Engine::reset`] never allocate, lock, log, make system calls or panic (the
//! integration tests run them under `assert_no_alloc`).
//!
//! # Non-finite input and subnormals (policy)
//! Every input sample that is NaN, infinite or subnormal is replaced by `0.0` before it
//! reaches a filter: a NaN or infinity in the input becomes silence for that sample and
//! never enters the filter state, so the output stays finite. A finite but huge input
//! can still overflow a filter's output; a cascade whose state becomes non-finite is
//! reset at the end of that block (see `sos`), and a FIR's history holds only finite
//! samples and forgets them after its length. Either way the output is finite again
//! once the bad samples have passed. Filter states that become subnormal (`f64`) are
//! flushed to zero at each block end, so silence never runs on subnormal numbers; the
//! designer spreads a cascade's gain evenly over its sections (see `chain`), so no
//! section's state is tiny merely because the design put all its gain in one place.

use crate::chain::{DesignedChain, DesignedStage};
use crate::design;
use num_complex::Complex64;
use crate::dsp::fir::{FirFilter, FirMode, TapCountMismatch};
use crate::dsp::simd::Isa;
use crate::dsp::sos::segments::Segments;
use crate::dsp::sos::{SectionCountMismatch, SosCascade};

/// Why new coefficients could not replace the running ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    #[error("the engine has {expected} stages, the new design has {found}")]
    StageCount { expected: usize, found: usize },
    #[error("stage {index}: the engine runs {expected} there, the new design has {found}")]
    StageKind { index: usize, expected: &'static str, found: &'static str },
    #[error("stage {index}: {source}")]
    Sections {
        index: usize,
        #[source]
        source: SectionCountMismatch,
    },
    #[error("stage {index}: {source}")]
    Taps {
        index: usize,
        #[source]
        source: TapCountMismatch,
    },
}

/// One processor of the engine.
pub enum Processor {
    Sos(SosCascade),
    Fir(FirFilter),
}

impl Processor {
    fn kind_name(&self) -> &'static str {
        match self {
            Processor::Sos(_) => "an SOS cascade",
            Processor::Fir(_) => "a FIR",
        }
    }
}

/// The complete filter state of an engine, flat, in processor order: what a GPU job
/// carries in and out. `sos` holds each cascade's `[channel][section]` TDF-II states
/// (as [`SosCascade::state`]); `fir` each FIR's `[channel][taps - 1]` history, oldest
/// sample first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainState {
    pub sos: Vec<[f64; 2]>,
    pub fir: Vec<f32>,
}

/// Why an engine state could not be saved or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("stage {index}: a FIR on the partitioned (FFT) path has no time-domain history to hand over; build the engine with FirMode::Direct")]
    PartitionedFir { index: usize },
    #[error("the state holds {found_sos} SOS states and {found_fir} FIR history samples, the engine needs {expected_sos} and {expected_fir}")]
    Shape { expected_sos: usize, expected_fir: usize, found_sos: usize, found_fir: usize },
}

/// Options for building an engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// How FIR stages run (default: by cost estimate).
    pub fir_mode: FirMode,
    /// Offline: up to this many time segments of a long block run side by side as SIMD
    /// lanes (see [`crate::dsp::sos::segments`]); 0 or 1: never (the default: a host's
    /// small blocks are never segmented anyway). Each output then differs from the
    /// unsegmented one by at most 1e-12 of the input's peak, so results depend on the
    /// block length only that far. [`offline_segments`] gives the count for a channel
    /// count. No allocation either way.
    pub time_segments: usize,
}

impl EngineOptions {
    /// The options of an offline engine over `channels` channels (the whole stream's
    /// count, also when its channels are split over several engines, so that every split
    /// computes the same bits).
    pub fn offline(channels: usize) -> EngineOptions {
        EngineOptions { time_segments: offline_segments(channels), ..EngineOptions::default() }
    }
}

/// Time segments per channel that fill whole SIMD groups of 8 lanes: 8 / gcd(channels, 8)
/// below 8 channels (mono 8, stereo 4, four channels 2), 1 (none) from 8 channels on,
/// where the channels fill the lanes themselves.
pub fn offline_segments(channels: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    if channels == 0 || channels >= 8 {
        1
    } else {
        8 / gcd(channels, 8)
    }
}

/// Preallocated processing of a designed chain on a fixed number of channels.
pub struct Engine {
    processors: Vec<Processor>,
    /// The segmented path of each SOS processor, when the options ask for time segments.
    segments: Vec<Option<Segments>>,
    channels: usize,
    max_block_frames: usize,
}

impl Engine {
    /// Builds the engine for `channels` channels. `max_block_frames` is the largest block
    /// the host will pass; longer blocks still work (they are processed in pieces).
    pub fn new(chain: &DesignedChain, channels: usize, max_block_frames: usize) -> Engine {
        Engine::with_options(chain, channels, max_block_frames, EngineOptions::default())
    }

    /// [`Engine::new`] with explicit options.
    pub fn with_options(chain: &DesignedChain, channels: usize, max_block_frames: usize, options: EngineOptions) -> Engine {
        let max_block_frames = max_block_frames.max(1);
        let processors = chain
            .stages
            .iter()
            .map(|stage| match stage {
                DesignedStage::Sos(sections) => Processor::Sos(SosCascade::new(sections, channels)),
                DesignedStage::Fir(taps) => {
                    Processor::Fir(FirFilter::new(taps, channels, options.fir_mode, max_block_frames))
                }
            })
            .collect::<Vec<_>>();
        let segments = processors
            .iter()
            .map(|p| match p {
                Processor::Sos(c) if options.time_segments > 1 => Some(Segments::new(c, options.time_segments, max_block_frames)),
                _ => None,
            })
            .collect();
        Engine { processors, segments, channels, max_block_frames }
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn max_block_frames(&self) -> usize {
        self.max_block_frames
    }

    /// Added delay of the CPU path: always zero (linear-phase FIR delay is the FIR's own).
    pub fn latency_samples(&self) -> usize {
        0
    }

    /// The complex response `H(f)` of the coefficients the engine actually runs
    /// (cascades in `f64`, FIR taps as rounded to `f32`), at `freq_hz` for sample rate `fs`.
    /// For editors and tests, not the audio thread (it allocates for FIR stages).
    pub fn response(&self, freq_hz: f64, fs: f64) -> Complex64 {
        let omega = 2.0 * std::f64::consts::PI * freq_hz / fs;
        self.processors.iter().fold(Complex64::new(1.0, 0.0), |acc, p| {
            acc * match p {
                Processor::Sos(c) => c.coefficients().iter().map(|k| k.response(omega)).product(),
                Processor::Fir(f) => {
                    let taps: Vec<f64> = f.taps_f32().iter().map(|&t| f64::from(t)).collect();
                    design::fir_response(&taps, freq_hz, fs)
                }
            }
        })
    }

    /// The processors, in order.
    pub fn processors(&self) -> &[Processor] {
        &self.processors
    }

    /// Filters planar channel buffers in place. Each buffer holds one channel; all are
    /// processed for the length of the shortest. Buffers beyond the engine's channel
    /// count are left untouched.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        let used = buffers.len().min(self.channels);
        let buffers = &mut buffers[..used];
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        // A first cascade on the AVX2 or AVX-512 kernels sanitises the input as it reads it
        // (the same bits, one pass over the audio fewer; measured faster there); a first
        // FIR, or the portable kernel, takes a pass of its own.
        let fused = matches!(self.processors.first(), Some(Processor::Sos(s)) if s.isa() != crate::dsp::sos::Isa::Portable);
        if !fused {
            for buf in buffers.iter_mut() {
                sanitize_input(&mut buf[..frames]);
            }
        }
        for (i, (p, segments)) in self.processors.iter_mut().zip(self.segments.iter_mut()).enumerate() {
            match p {
                Processor::Sos(s) => {
                    let clean = i == 0 && fused;
                    if !segments.as_mut().is_some_and(|seg| seg.process(s, buffers, frames, clean)) {
                        s.run(buffers, 0, frames, clean)
                    }
                }
                Processor::Fir(f) => f.process(buffers, frames),
            }
        }
    }

    /// Replaces every stage's coefficients with those of `chain`, which must have the same
    /// shape (stage kinds, section and tap counts). Filter state is kept. No allocation;
    /// on error nothing is changed.
    pub fn update(&mut self, chain: &DesignedChain) -> Result<(), UpdateError> {
        self.check_update(chain)?;
        for (index, ((p, s), segments)) in self.processors.iter_mut().zip(&chain.stages).zip(self.segments.iter_mut()).enumerate() {
            match (p, s) {
                (Processor::Sos(c), DesignedStage::Sos(sections)) => {
                    c.set_coefficients(sections).map_err(|source| UpdateError::Sections { index, source })?;
                    if let Some(seg) = segments {
                        seg.follow(c);
                    }
                }
                (Processor::Fir(f), DesignedStage::Fir(taps)) => {
                    f.set_taps(taps).map_err(|source| UpdateError::Taps { index, source })?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether [`Engine::update`] would take `chain`: the same stage kinds, section and
    /// tap counts. Changes nothing.
    pub fn check_update(&self, chain: &DesignedChain) -> Result<(), UpdateError> {
        if chain.stages.len() != self.processors.len() {
            return Err(UpdateError::StageCount { expected: self.processors.len(), found: chain.stages.len() });
        }
        for (index, (p, s)) in self.processors.iter().zip(&chain.stages).enumerate() {
            match (p, s) {
                (Processor::Sos(c), DesignedStage::Sos(sections)) if c.sections() != sections.len() => {
                    return Err(UpdateError::Sections {
                        index,
                        source: SectionCountMismatch { expected: c.sections(), found: sections.len() },
                    });
                }
                (Processor::Fir(f), DesignedStage::Fir(taps)) if f.taps() != taps.len() => {
                    return Err(UpdateError::Taps {
                        index,
                        source: TapCountMismatch { expected: f.taps(), found: taps.len() },
                    });
                }
                (Processor::Sos(_), DesignedStage::Sos(_)) | (Processor::Fir(_), DesignedStage::Fir(_)) => {}
                (p, s) => {
                    return Err(UpdateError::StageKind { index, expected: p.kind_name(), found: s.kind_name() });
                }
            }
        }
        Ok(())
    }

    /// A zeroed state of this engine's shape (allocates; not for the audio thread).
    pub fn new_state(&self) -> Result<ChainState, StateError> {
        let (sos, fir) = self.state_shape()?;
        Ok(ChainState { sos: vec![[0.0; 2]; sos], fir: vec![0.0; fir] })
    }

    /// `(SOS states, FIR history samples)` of [`ChainState`] for this engine.
    pub fn state_shape(&self) -> Result<(usize, usize), StateError> {
        let (mut sos, mut fir) = (0, 0);
        for (index, p) in self.processors.iter().enumerate() {
            match p {
                Processor::Sos(c) => sos += c.state().len(),
                Processor::Fir(f) if f.history(0).is_some() || self.channels == 0 => {
                    fir += self.channels * (f.taps() - 1)
                }
                Processor::Fir(_) => return Err(StateError::PartitionedFir { index }),
            }
        }
        Ok((sos, fir))
    }

    /// Copies the whole filter state into `out` (which must have [`Engine::state_shape`]).
    /// No allocation.
    pub fn save_state(&self, out: &mut ChainState) -> Result<(), StateError> {
        self.check_shape(out)?;
        let (mut at_sos, mut at_fir) = (0, 0);
        for p in &self.processors {
            match p {
                Processor::Sos(c) => {
                    let st = c.state();
                    out.sos[at_sos..at_sos + st.len()].copy_from_slice(st);
                    at_sos += st.len();
                }
                Processor::Fir(f) => {
                    for ch in 0..self.channels {
                        let h = f.history(ch).unwrap_or(&[]);
                        out.fir[at_fir..at_fir + h.len()].copy_from_slice(h);
                        at_fir += h.len();
                    }
                }
            }
        }
        Ok(())
    }

    /// Loads a state saved by [`Engine::save_state`] (or returned by a GPU job). No
    /// allocation; on error nothing changes.
    pub fn load_state(&mut self, state: &ChainState) -> Result<(), StateError> {
        self.check_shape(state)?;
        let (mut at_sos, mut at_fir) = (0, 0);
        let channels = self.channels;
        for p in self.processors.iter_mut() {
            match p {
                Processor::Sos(c) => {
                    let n = c.state().len();
                    // The shape was checked above, so the length matches.
                    let _ = c.set_state(&state.sos[at_sos..at_sos + n]);
                    at_sos += n;
                }
                Processor::Fir(f) => {
                    let hist = f.taps() - 1;
                    for ch in 0..channels {
                        f.set_history(ch, &state.fir[at_fir..at_fir + hist]);
                        at_fir += hist;
                    }
                }
            }
        }
        Ok(())
    }

    fn check_shape(&self, state: &ChainState) -> Result<(), StateError> {
        let (sos, fir) = self.state_shape()?;
        if state.sos.len() != sos || state.fir.len() != fir {
            return Err(StateError::Shape {
                expected_sos: sos,
                expected_fir: fir,
                found_sos: state.sos.len(),
                found_fir: state.fir.len(),
            });
        }
        Ok(())
    }

    /// Clears all filter state (as at construction).
    pub fn reset(&mut self) {
        for p in self.processors.iter_mut() {
            match p {
                Processor::Sos(s) => s.reset(),
                Processor::Fir(f) => f.reset(),
            }
        }
    }
}

/// Replaces NaN, infinities and subnormals by zero (what [`Engine::process`] does to its
/// input; public so a host wrapper can apply the same policy before other processing).
/// Vectorised for the CPU's widest instructions (the baseline build compiled it for SSE2,
/// where it cost as much as a section of the cascade at eight channels).
#[inline]
pub fn sanitize_input(buf: &mut [f32]) {
    // On the audio thread: never the environment read of a first `detect`.
    match Isa::detect_realtime() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::detect_realtime` reports AVX-512 only when the CPU has AVX-512F.
        Isa::Avx512 => unsafe { sanitize_avx512(buf) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::detect_realtime` reports AVX2 only when the CPU has AVX2.
        Isa::Avx2 => unsafe { sanitize_avx2(buf) },
        _ => sanitize_portable(buf),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
fn sanitize_avx512(buf: &mut [f32]) {
    sanitize_portable(buf)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sanitize_avx2(buf: &mut [f32]) {
    sanitize_portable(buf)
}

#[inline(always)]
fn sanitize_portable(buf: &mut [f32]) {
    for v in buf.iter_mut() {
        *v = crate::dsp::sanitize_sample(*v);
    }
}
