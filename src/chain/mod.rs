//! Filter chains: the spec (what the chain file says), its JSON form
//! (`docs/chain-format.md`), validation and design at a sample rate, and a
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

mod json;
mod stages;
mod validate;

pub use stages::{Bessel, Biquad, Butterworth, Chebyshev1, Chebyshev2, Elliptic, Fir, LinkwitzRiley, STAGE_TYPES};

use crate::design::{self, BiquadKind, Cutoff, IirFamily, Response, Sos, Window};
use num_complex::Complex64;

/// The `format` value of a chain file.
pub const FORMAT_NAME: &str = "ferrofx-chain";
/// The newest chain format version this build reads and writes. Version 2 added the
/// biquad's `matched` field; a file is written as version 1 unless it uses it, so older
/// readers still read every file that does not.
pub const FORMAT_VERSION: u64 = 2;
/// Highest IIR order the chain format accepts.
pub const MAX_IIR_ORDER: usize = 24;
/// Largest designed FIR the chain format accepts.
pub const MAX_DESIGNED_TAPS: usize = 65_536;
/// Largest given FIR the chain format accepts.
pub const MAX_GIVEN_TAPS: usize = crate::dsp::fir::MAX_TAPS;

// Bounds beyond which a chain cannot give a finite, meaningful result or would take
// memory without bound. Every one is enforced by `Chain::from_json`/`Chain::design`
// (or the file reader) and listed in `docs/limits.md`, which the messages cite.

/// Largest chain file read (bytes). A million-tap FIR written with full `f64` digits
/// is about 25 MB; 500,000 biquad stages about 45 MB.
pub const MAX_FILE_BYTES: u64 = 128 << 20;
/// Most stages in one chain (disabled stages count).
pub const MAX_STAGES: usize = 1_000_000;
/// Most second-order sections in one chain, over all its SOS-type stages.
pub const MAX_SECTIONS: usize = 1_000_000;
/// Most FIR taps in one chain, over all its FIR stages (two given FIRs of the largest size).
pub const MAX_TOTAL_TAPS: usize = 2 * MAX_GIVEN_TAPS;
/// Largest `|gain_db|` of a `gain` stage or a peaking/shelf biquad: a factor of 1e30 (or
/// 1e-30), beyond which no float32 signal keeps a finite, non-subnormal result.
pub const MAX_GAIN_DB: f64 = 600.0;
/// Largest magnitude of a given FIR coefficient or of a `sos` row's coefficient divided
/// by its `a0`: the FIR runs in float32 (whose largest value is about 3.4e38), and a
/// section gain past 1e30 overflows float32 output for any ordinary signal.
pub const MAX_COEFFICIENT: f64 = 1e30;
/// Largest kaiser `beta`: SciPy's window is `i0(beta ...)/i0(beta)`, and `i0` overflows
/// `f64` just above 713.
pub const MAX_KAISER_BETA: f64 = 700.0;
/// Where the limits are explained; error messages cite it.
pub const LIMITS_DOC: &str = "docs/limits.md";

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
    /// `butterworth`, `chebyshev1`, `chebyshev2`, `elliptic`, `bessel`. `matched` (format
    /// version 2; Butterworth low- and high-pass only): the analog-matched cut of
    /// [`crate::design::matched::cut_matched_into`] instead of the bilinear design.
    Iir { family: IirFamily, response: Response, order: usize, cutoff: Cutoff, matched: bool },
    /// `linkwitz_riley`: the Butterworth of `order / 2` twice; `matched` as for `Iir`.
    LinkwitzRiley { response: Response, order: usize, cutoff_hz: f64, matched: bool },
    /// `biquad`: an Audio-EQ-Cookbook shape. `gain_db` is for peaking and shelves only.
    /// `matched` (format version 2): the analog-matched design of the same shape
    /// ([`crate::design::matched`]), two sections.
    Biquad { kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64>, matched: bool },
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

    /// Whether the stage asks for an analog-matched design (format version 2).
    pub fn is_matched(&self) -> bool {
        matches!(self, StageKind::Biquad { matched: true, .. } | StageKind::Iir { matched: true, .. } | StageKind::LinkwitzRiley { matched: true, .. })
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

    /// The same stage, analog-matched if it is a biquad (see
    /// [`crate::design::matched`]); other stages are returned unchanged.
    pub fn matched(mut self) -> Stage {
        if let StageKind::Biquad { matched, .. }
        | StageKind::Iir { family: IirFamily::Butterworth, matched, .. }
        | StageKind::LinkwitzRiley { matched, .. } = &mut self.kind
        {
            *matched = true;
        }
        self
    }

    /// The same stage with a label.
    pub fn labelled(mut self, label: impl Into<String>) -> Stage {
        self.label = Some(label.into());
        self
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
    #[error("not a {FORMAT_NAME} file: {field} {message} (the format: docs/chain-format.md)")]
    NotAChain { field: String, message: String },
    /// The file is of a newer format version.
    #[error("chain format version {found} is newer than this build reads (version {FORMAT_VERSION}); update FerroFX")]
    NewerVersion { found: u64 },
    /// A stage is malformed or meaningless. `message` starts with the field when there is one.
    #[error("stage {index} ({stage_type}): {message}")]
    Stage { index: usize, stage_type: String, field: String, message: String },
    /// The chain (or its file) is past one of the documented limits (`docs/limits.md`).
    #[error("{what} (limits: {LIMITS_DOC})")]
    Limit { what: String },
    /// The chain file could not be read.
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    /// A key appears twice in one JSON object (`stage` is set inside a stage).
    #[error("{}duplicate key `{key}` at line {line}, column {column} (each field may appear once)", stage.map(|i| format!("stage {i}: ")).unwrap_or_default())]
    DuplicateKey { stage: Option<usize>, key: String, line: usize, column: usize },
    /// The sample rate the chain was asked to design for is unusable.
    #[error("sample rate {fs} Hz is not a positive finite number")]
    SampleRate { fs: f64 },
}

impl ChainError {
    /// The stage index, for stage errors.
    pub fn stage_index(&self) -> Option<usize> {
        match self {
            ChainError::Stage { index, .. } => Some(*index),
            ChainError::DuplicateKey { stage, .. } => *stage,
            _ => None,
        }
    }

    /// The field named by the error, where there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ChainError::Stage { field, .. } | ChainError::NotAChain { field, .. } => Some(field),
            ChainError::DuplicateKey { key, .. } => Some(key),
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

    /// Reads and parses a chain file, refusing files over [`MAX_FILE_BYTES`] before
    /// reading more than that (`/dev/zero` or a mistyped path to a recording is an error,
    /// not an exhausted memory).
    pub fn from_file(path: &std::path::Path) -> Result<Chain, ChainError> {
        use std::io::Read;
        let read_error = |message: String| ChainError::Read { path: path.display().to_string(), message };
        let file = std::fs::File::open(path).map_err(|e| read_error(e.to_string()))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(read_error("is a directory".into()));
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| read_error(e.to_string()))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ChainError::Limit {
                what: format!("{} is larger than {} MiB, the most a chain file may hold", path.display(), MAX_FILE_BYTES >> 20),
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            read_error(format!("is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
        })?;
        json::parse(&text)
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
