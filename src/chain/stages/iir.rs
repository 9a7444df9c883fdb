//! IIR designs: `butterworth`, `chebyshev1`, `chebyshev2`, `elliptic` and `bessel`, equal
//! to SciPy's `butter`, `cheby1`, `cheby2`, `ellip` and `bessel(norm="phase")` with
//! `output="sos"`. A Butterworth low- or high-pass may be `matched` (format version 2):
//! the analog-matched cut of [`crate::design::matched::cut_matched_into`] instead.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::{cutoff_value, fields, needs_version_2, Count, CutoffWire, ResponseWire};
use crate::chain::validate::{matched_cut, Check, Designed};
use crate::chain::{ChainError, Stage, StageKind};
use crate::design::{self, Cutoff, IirFamily, Response};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainWire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: CutoffWire,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ButterworthWire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: CutoffWire,
    /// Version 2.
    #[serde(default)]
    matched: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Chebyshev1Wire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: CutoffWire,
    ripple_db: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Chebyshev2Wire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: CutoffWire,
    attenuation_db: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EllipticWire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: CutoffWire,
    ripple_db: f64,
    attenuation_db: f64,
}

fn kind(family: IirFamily, response: ResponseWire, order: Count, cutoff_hz: CutoffWire, matched: bool) -> StageKind {
    StageKind::Iir { family, response: response.into(), order: order.0 as usize, cutoff: cutoff_hz.0, matched }
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>, version: u64) -> Result<StageKind, ChainError> {
    Ok(match t {
        "butterworth" => {
            let w: ButterworthWire = fields(index, t, map)?;
            needs_version_2(index, t, w.matched, version)?;
            kind(IirFamily::Butterworth, w.response, w.order, w.cutoff_hz, w.matched.unwrap_or(false))
        }
        "chebyshev1" => {
            let w: Chebyshev1Wire = fields(index, t, map)?;
            kind(IirFamily::Chebyshev1 { ripple_db: w.ripple_db }, w.response, w.order, w.cutoff_hz, false)
        }
        "chebyshev2" => {
            let w: Chebyshev2Wire = fields(index, t, map)?;
            kind(IirFamily::Chebyshev2 { attenuation_db: w.attenuation_db }, w.response, w.order, w.cutoff_hz, false)
        }
        "elliptic" => {
            let w: EllipticWire = fields(index, t, map)?;
            let family = IirFamily::Elliptic { ripple_db: w.ripple_db, attenuation_db: w.attenuation_db };
            kind(family, w.response, w.order, w.cutoff_hz, false)
        }
        _ => {
            let w: PlainWire = fields(index, t, map)?;
            kind(IirFamily::Bessel, w.response, w.order, w.cutoff_hz, false)
        }
    })
}

pub(super) fn write(m: &mut Map<String, Value>, family: IirFamily, response: Response, order: usize, cutoff: &Cutoff, matched: bool) {
    m.insert("response".into(), json!(response.name()));
    m.insert("order".into(), json!(order));
    m.insert("cutoff_hz".into(), cutoff_value(cutoff));
    if matched {
        m.insert("matched".into(), json!(true));
    }
    match family {
        IirFamily::Chebyshev1 { ripple_db } => {
            m.insert("ripple_db".into(), json!(ripple_db));
        }
        IirFamily::Chebyshev2 { attenuation_db } => {
            m.insert("attenuation_db".into(), json!(attenuation_db));
        }
        IirFamily::Elliptic { ripple_db, attenuation_db } => {
            m.insert("ripple_db".into(), json!(ripple_db));
            m.insert("attenuation_db".into(), json!(attenuation_db));
        }
        IirFamily::Butterworth | IirFamily::Bessel => {}
    }
}

pub(super) fn design(check: &Check, family: IirFamily, response: Response, order: usize, cutoff: Cutoff, matched: bool) -> Result<Designed, ChainError> {
    let fs = check.fs;
    let order = check.order(order, 1)?;
    let cutoff = check.cutoff(response, cutoff)?;
    if matched {
        if family != IirFamily::Butterworth || response.is_band() {
            return Err(check.fail(
                "matched",
                format!("`matched` is for Butterworth low- and high-pass stages (a cut); this stage is a {} {}", family.name(), response.name()),
            ));
        }
        let (Cutoff::Single(f) | Cutoff::Band(f, _)) = cutoff; // single: checked above
        return Ok(Designed::Sos(check.designed("order", matched_cut(response, order, false, f, fs))?));
    }
    match family {
        IirFamily::Chebyshev1 { ripple_db } => {
            check.positive("ripple_db", ripple_db)?;
        }
        IirFamily::Chebyshev2 { attenuation_db } => {
            check.positive("attenuation_db", attenuation_db)?;
        }
        IirFamily::Elliptic { ripple_db, attenuation_db } => {
            check.positive("ripple_db", ripple_db)?;
            check.positive("attenuation_db", attenuation_db)?;
            if attenuation_db <= ripple_db {
                return Err(check.fail("attenuation_db", format!("attenuation_db {attenuation_db} must exceed ripple_db {ripple_db}")));
            }
        }
        IirFamily::Butterworth | IirFamily::Bessel => {}
    }
    Ok(Designed::Sos(check.designed("order", design::iir_sos(family, response, order, cutoff, fs))?))
}

// ---- The builder API (`Butterworth::highpass(30.0, 4) | ...`). Constructors only record
// the spec; `Chain::design` checks it, so a bad value is reported like a bad file's.

fn iir(family: IirFamily, response: Response, cutoff: Cutoff, order: usize) -> Stage {
    Stage::new(StageKind::Iir { family, response, order, cutoff, matched: false })
}

macro_rules! iir_family {
    ($(#[$doc:meta])* $name:ident { $($param:ident),* } => $family:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl $name {
            pub fn lowpass(cutoff_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Lowpass, Cutoff::Single(cutoff_hz), order)
            }
            pub fn highpass(cutoff_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Highpass, Cutoff::Single(cutoff_hz), order)
            }
            pub fn bandpass(low_hz: f64, high_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Bandpass, Cutoff::Band(low_hz, high_hz), order)
            }
            pub fn bandstop(low_hz: f64, high_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Bandstop, Cutoff::Band(low_hz, high_hz), order)
            }
        }
    };
}

iir_family!(
    /// Butterworth designs (`scipy.signal.butter`).
    Butterworth {} => IirFamily::Butterworth
);
iir_family!(
    /// Chebyshev type I designs (`scipy.signal.cheby1`); the last argument is `ripple_db`.
    Chebyshev1 { ripple_db } => IirFamily::Chebyshev1 { ripple_db }
);
iir_family!(
    /// Chebyshev type II designs (`scipy.signal.cheby2`); the last argument is `attenuation_db`.
    Chebyshev2 { attenuation_db } => IirFamily::Chebyshev2 { attenuation_db }
);
iir_family!(
    /// Elliptic designs (`scipy.signal.ellip`); then `ripple_db`, `attenuation_db`.
    Elliptic { ripple_db, attenuation_db } => IirFamily::Elliptic { ripple_db, attenuation_db }
);
iir_family!(
    /// Bessel designs (`scipy.signal.bessel(norm="phase")`).
    Bessel {} => IirFamily::Bessel
);
