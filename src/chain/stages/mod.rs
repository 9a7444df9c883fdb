//! One file per stage type of the chain format (`docs/chain-format.md`), each holding
//! everything about its type: its fields in the file (a serde struct with
//! `deny_unknown_fields`, read one stage at a time so errors name the stage), how it is
//! written back, its checks and design at a sample rate, and its builder API. The rest of
//! `chain` dispatches here: by the file's `type` when reading ([`parse`]), by the
//! [`StageKind`] variant when writing ([`write`]) and designing ([`design`]).
//!
//! Adding a stage type: a variant of [`StageKind`] (with its name in
//! `StageKind::type_name`), a file here, a line in [`STAGE_TYPES`] and in each dispatch
//! below; `docs/architecture.md` ("Adding a stage type") lists what outside the core
//! follows (the editor, the Python package, the fuzzer's mutator, the docs).

mod biquad;
mod fir;
mod gain;
mod iir;
mod linkwitz_riley;
mod sos;

pub use biquad::Biquad;
pub use fir::Fir;
pub use iir::{Bessel, Butterworth, Chebyshev1, Chebyshev2, Elliptic};
pub use linkwitz_riley::LinkwitzRiley;

use serde_json::{Map, Value};

use super::validate::{Check, Designed};
use super::{ChainError, StageKind};

/// Every stage type of the chain format, as a file's `type` names it, in the order the
/// format's documentation lists them.
pub const STAGE_TYPES: &[&str] = &["butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel", "linkwitz_riley", "biquad", "fir", "sos", "gain"];

/// Stage `index` of type `t` from its remaining fields (`type`, `enabled` and `label`
/// taken); `None` when `t` is no stage type. `version` is the file's format version.
pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>, version: u64) -> Result<Option<StageKind>, ChainError> {
    Ok(Some(match t {
        "butterworth" | "chebyshev1" | "chebyshev2" | "elliptic" | "bessel" => iir::parse(index, t, map, version)?,
        "linkwitz_riley" => linkwitz_riley::parse(index, t, map, version)?,
        "biquad" => biquad::parse(index, t, map, version)?,
        "fir" => fir::parse(index, t, map)?,
        "sos" => sos::parse(index, t, map)?,
        "gain" => gain::parse(index, t, map)?,
        _ => return Ok(None),
    }))
}

/// The stage's own fields, written into `m` (which holds its `type`).
pub(super) fn write(kind: &StageKind, m: &mut Map<String, Value>) {
    match kind {
        StageKind::Iir { family, response, order, cutoff, matched } => iir::write(m, *family, *response, *order, cutoff, *matched),
        StageKind::LinkwitzRiley { response, order, cutoff_hz, matched } => linkwitz_riley::write(m, *response, *order, *cutoff_hz, *matched),
        StageKind::Biquad { kind, freq_hz, q, gain_db, matched } => biquad::write(m, *kind, *freq_hz, *q, *gain_db, *matched),
        StageKind::FirDesign { response, taps, cutoff, window } => fir::write_design(m, *response, *taps, cutoff, window),
        StageKind::FirGiven { coefficients } => fir::write_given(m, coefficients),
        StageKind::Sos { sections } => sos::write(m, sections),
        StageKind::Gain { gain_db } => gain::write(m, *gain_db),
    }
}

/// Checks the stage at the sample rate in `check` and designs it.
pub(super) fn design(check: &Check, kind: &StageKind) -> Result<Designed, ChainError> {
    match kind {
        StageKind::Iir { family, response, order, cutoff, matched } => iir::design(check, *family, *response, *order, *cutoff, *matched),
        StageKind::LinkwitzRiley { response, order, cutoff_hz, matched } => linkwitz_riley::design(check, *response, *order, *cutoff_hz, *matched),
        StageKind::Biquad { kind, freq_hz, q, gain_db, matched } => biquad::design(check, *kind, *freq_hz, *q, *gain_db, *matched),
        StageKind::FirDesign { response, taps, cutoff, window } => fir::design(check, *response, *taps, *cutoff, *window),
        StageKind::FirGiven { coefficients } => fir::given(check, coefficients),
        StageKind::Sos { sections } => sos::design(check, sections),
        StageKind::Gain { gain_db } => gain::design(check, *gain_db),
    }
}
