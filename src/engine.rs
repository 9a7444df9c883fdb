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
//! once the bad samples have passed. Filter states below about -600 dB are flushed to
//! zero at each block end, so silence never runs on subnormal numbers.

use crate::chain::{DesignedChain, DesignedStage};
use crate::design;
use num_complex::Complex64;
use crate::fir::{FirFilter, FirMode, TapCountMismatch};
use crate::sos::{SectionCountMismatch, SosCascade};

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

/// Options for building an engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// How FIR stages run (default: by cost estimate).
    pub fir_mode: FirMode,
}

/// Preallocated processing of a designed chain on a fixed number of channels.
pub struct Engine {
    processors: Vec<Processor>,
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
            .collect();
        Engine { processors, channels, max_block_frames }
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
        for buf in buffers.iter_mut() {
            sanitize_input(&mut buf[..frames]);
        }
        for p in self.processors.iter_mut() {
            match p {
                Processor::Sos(s) => s.process(buffers, frames),
                Processor::Fir(f) => f.process(buffers, frames),
            }
        }
    }

    /// Replaces every stage's coefficients with those of `chain`, which must have the same
    /// shape (stage kinds, section and tap counts). Filter state is kept. No allocation;
    /// on error nothing is changed.
    pub fn update(&mut self, chain: &DesignedChain) -> Result<(), UpdateError> {
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
        for (index, (p, s)) in self.processors.iter_mut().zip(&chain.stages).enumerate() {
            match (p, s) {
                (Processor::Sos(c), DesignedStage::Sos(sections)) => {
                    c.set_coefficients(sections).map_err(|source| UpdateError::Sections { index, source })?
                }
                (Processor::Fir(f), DesignedStage::Fir(taps)) => {
                    f.set_taps(taps).map_err(|source| UpdateError::Taps { index, source })?
                }
                _ => {}
            }
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
#[inline]
pub fn sanitize_input(buf: &mut [f32]) {
    for v in buf.iter_mut() {
        // `abs() >= MIN_POSITIVE` is false for NaN, zero and subnormals.
        let keep = v.abs() >= f32::MIN_POSITIVE && v.abs() <= f32::MAX;
        *v = if keep { *v } else { 0.0 };
    }
}
