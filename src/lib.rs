//! FerroFX: audio filter design and realtime filtering.
//!
//! * [`design`]: IIR (Butterworth, Chebyshev I/II, elliptic, Bessel, Linkwitz-Riley),
//!   Audio-EQ-Cookbook biquads and windowed-sinc FIR designs, in `f64`, equal to SciPy.
//! * [`chain`]: the chain file (`ferrofx-chain` v1), validation, fusion and the pipe API.
//! * [`dsp`]: realtime processors (second-order-section cascades; direct and
//!   partitioned-FFT FIR).
//! * [`engine`]: a designed chain as preallocated processors for N channels.
//! * [`signal`]: SciPy's `sosfilt` and `lfilter` recurrences with SciPy's bits, rows and
//!   sections as SIMD lanes (offline; the Python drop-ins).
//!
//! This crate knows nothing of plugin frameworks; the plugin and the offline renderer
//! (`xtask`) build on it.

pub mod backends;
pub mod chain;
pub mod design;
pub mod engine;
pub mod dsp;
pub mod gpu;
pub mod offline;
pub mod run;
pub mod signal;

pub use chain::{Chain, ChainError, DesignedChain, DesignedStage, Stage, StageKind};
pub use engine::{Engine, EngineOptions};

/// The SIMD instruction set the kernels use on this machine (detected at run time).
pub fn simd_level() -> &'static str {
    dsp::sos::simd_level()
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
