//! Filter chains: the spec (what the chain file says), its JSON form
//! (`../shared/spec/chain-format.md`), validation and design at a sample rate, and a
//! Rust API with a pipe operator.
//!
//! Two layers, as in camilladsp: [`Chain::from_json`] checks the *form* (serde with
//! `deny_unknown_fields`, one stage at a time so errors name the stage), then
//! [`Chain::design`] checks the *meaning* at a sample rate (cutoffs below Nyquist,
//! stable sections, ...) and designs every stage, fusing each run of consecutive
//! SOS-type stages (IIR designs, biquads, `sos`, `gain`) into one cascade, and each run
//! of consecutive FIR stages into one kernel (their convolution, when it stays within
//! the 1,048,576-tap limit).
//!
//! ```
//! use ferrofx::chain::{Biquad, Butterworth, Chain, Fir};
//!
//! let chain = Butterworth::highpass(30.0, 4) | Biquad::peaking(1000.0, 1.4, -6.0) | Fir::lowpass(101, 8000.0);
//! let json = chain.to_json();
//! assert_eq!(Chain::from_json(&json).unwrap(), chain);
//! let designed = chain.design(48_000.0).unwrap();
//! assert_eq!(designed.stages.len(), 2); // one fused cascade, one FIR
//! ```

mod api;
mod json;
mod validate;

pub use api::{Bessel, Biquad, Butterworth, Chebyshev1, Chebyshev2, Elliptic, Fir, LinkwitzRiley};

use crate::design::{self, BiquadKind, Cutoff, IirFamily, Response, Sos, Window};
use num_complex::Complex64;

/// The `format` value of a chain file.
pub const FORMAT_NAME: &str = "ferrofx-chain";
/// The newest chain format version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;
/// Highest IIR order the chain format accepts.
pub const MAX_IIR_ORDER: usize = 24;
/// Largest designed FIR the chain format accepts.
pub const MAX_DESIGNED_TAPS: usize = 65_536;
/// Largest given FIR the chain format accepts.
pub const MAX_GIVEN_TAPS: usize = crate::fir::MAX_TAPS;

/// A chain of stages applied in series to every channel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chain {
    pub stages: Vec<Stage>,
}

/// One stage with its common fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub kind: StageKind,
    /// `false` skips the stage (it is still validated).
    pub enabled: bool,
    pub label: Option<String>,
}

/// What a stage does.
#[derive(Clone, Debug, PartialEq)]
pub enum StageKind {
    /// `butterworth`, `chebyshev1`, `chebyshev2`, `elliptic`, `bessel`.
    Iir { family: IirFamily, response: Response, order: usize, cutoff: Cutoff },
    /// `linkwitz_riley`: the Butterworth of `order / 2` twice.
    LinkwitzRiley { response: Response, order: usize, cutoff_hz: f64 },
    /// `biquad`: an Audio-EQ-Cookbook shape. `gain_db` is for peaking and shelves only.
    Biquad { kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64> },
    /// `fir` designed by `firwin`.
    FirDesign { response: Response, taps: usize, cutoff: Cutoff, window: Window },
    /// `fir` with given coefficients.
    FirGiven { coefficients: Vec<f64> },
    /// `sos`: rows `[b0, b1, b2, a0, a1, a2]`.
    Sos { sections: Vec<[f64; 6]> },
    /// `gain`.
    Gain { gain_db: f64 },
}

impl StageKind {
    /// The chain-format `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            StageKind::Iir { family, .. } => family.name(),
            StageKind::LinkwitzRiley { .. } => "linkwitz_riley",
            StageKind::Biquad { .. } => "biquad",
            StageKind::FirDesign { .. } | StageKind::FirGiven { .. } => "fir",
            StageKind::Sos { .. } => "sos",
            StageKind::Gain { .. } => "gain",
        }
    }

    /// Whether the stage becomes second-order sections (and fuses with its neighbours).
    pub fn is_sos_type(&self) -> bool {
        !matches!(self, StageKind::FirDesign { .. } | StageKind::FirGiven { .. })
    }
}

impl Stage {
    pub fn new(kind: StageKind) -> Stage {
        Stage { kind, enabled: true, label: None }
    }

    /// The same stage with `enabled: false`.
    pub fn disabled(mut self) -> Stage {
        self.enabled = false;
        self
    }

    /// The same stage with a label.
    pub fn labelled(mut self, label: impl Into<String>) -> Stage {
        self.label = Some(label.into());
        self
    }

    /// A `sos` stage from SciPy rows.
    pub fn sos(sections: Vec<[f64; 6]>) -> Stage {
        Stage::new(StageKind::Sos { sections })
    }

    /// A `gain` stage.
    pub fn gain(gain_db: f64) -> Stage {
        Stage::new(StageKind::Gain { gain_db })
    }
}

/// Every error reading or designing a chain. Stage errors name the stage index (from 0),
/// its type and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChainError {
    /// The text is not JSON (or holds a number too large for a float).
    #[error("not valid JSON at line {line}, column {column}: {message}")]
    Syntax { line: usize, column: usize, message: String },
    /// The top level is not a chain file of this format.
    #[error("not a {FORMAT_NAME} file: {field} {message}")]
    NotAChain { field: String, message: String },
    /// The file is of a newer format version.
    #[error("chain format version {found} is newer than this build reads (version {FORMAT_VERSION}); update FerroFX")]
    NewerVersion { found: u64 },
    /// A stage is malformed or meaningless. `message` starts with the field when there is one.
    #[error("stage {index} ({stage_type}): {message}")]
    Stage { index: usize, stage_type: String, field: String, message: String },
    /// The sample rate the chain was asked to design for is unusable.
    #[error("sample rate {fs} Hz is not a positive finite number")]
    SampleRate { fs: f64 },
}

impl ChainError {
    /// The stage index, for stage errors.
    pub fn stage_index(&self) -> Option<usize> {
        match self {
            ChainError::Stage { index, .. } => Some(*index),
            _ => None,
        }
    }

    /// The field named by the error, where there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ChainError::Stage { field, .. } | ChainError::NotAChain { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// A chain designed at one sample rate, fused into processors.
#[derive(Clone, Debug, PartialEq)]
pub struct DesignedChain {
    pub fs: f64,
    pub stages: Vec<DesignedStage>,
}

/// One processor's coefficients.
#[derive(Clone, Debug, PartialEq)]
pub enum DesignedStage {
    /// A fused cascade (every consecutive SOS-type stage), gains folded in.
    Sos(Vec<Sos>),
    /// A FIR's taps (consecutive FIR stages fused into one kernel, see `Chain::design`).
    Fir(Vec<f64>),
}

impl DesignedStage {
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            DesignedStage::Sos(_) => "an SOS cascade",
            DesignedStage::Fir(_) => "a FIR",
        }
    }

    /// Complex response at `freq_hz`.
    pub fn response(&self, freq_hz: f64, fs: f64) -> Complex64 {
        match self {
            DesignedStage::Sos(s) => design::sos_response(s, freq_hz, fs),
            DesignedStage::Fir(t) => design::fir_response(t, freq_hz, fs),
        }
    }
}

impl DesignedChain {
    /// The chain's complex response `H(f)` at `freq_hz`.
    pub fn response(&self, freq_hz: f64) -> Complex64 {
        self.stages.iter().fold(Complex64::new(1.0, 0.0), |acc, s| acc * s.response(freq_hz, self.fs))
    }

    /// Total number of second-order sections.
    pub fn sections(&self) -> usize {
        self.stages.iter().map(|s| if let DesignedStage::Sos(v) = s { v.len() } else { 0 }).sum()
    }
}

impl Chain {
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Appends a stage.
    pub fn push(&mut self, stage: Stage) {
        self.stages.push(stage);
    }

    /// Parses a chain file (form only; see [`Chain::design`] for meaning).
    pub fn from_json(text: &str) -> Result<Chain, ChainError> {
        json::parse(text)
    }

    /// The chain file text (pretty-printed; every stage written in full).
    pub fn to_json(&self) -> String {
        json::to_string(self)
    }

    /// Checks every stage at sample rate `fs` and designs the chain.
    pub fn design(&self, fs: f64) -> Result<DesignedChain, ChainError> {
        validate::design(self, fs)
    }
}

impl From<Stage> for Chain {
    fn from(stage: Stage) -> Chain {
        Chain { stages: vec![stage] }
    }
}

impl std::ops::BitOr<Stage> for Stage {
    type Output = Chain;
    fn bitor(self, rhs: Stage) -> Chain {
        Chain { stages: vec![self, rhs] }
    }
}

impl std::ops::BitOr<Stage> for Chain {
    type Output = Chain;
    fn bitor(mut self, rhs: Stage) -> Chain {
        self.stages.push(rhs);
        self
    }
}

impl std::ops::BitOr<Chain> for Chain {
    type Output = Chain;
    fn bitor(mut self, rhs: Chain) -> Chain {
        self.stages.extend(rhs.stages);
        self
    }
}

impl std::ops::BitOr<Chain> for Stage {
    type Output = Chain;
    fn bitor(self, rhs: Chain) -> Chain {
        let mut stages = vec![self];
        stages.extend(rhs.stages);
        Chain { stages }
    }
}
