//! `fir`: a FIR designed by `firwin` (`response`, `taps`, `cutoff_hz`, `window`,
//! `beta` for the kaiser window), or given (`coefficients`, run as
//! `lfilter(coefficients, [1], x)`): one type, two forms, told apart by the
//! `coefficients` field.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::{cutoff_value, fields, stage_error, Count, CutoffWire, ResponseWire};
use crate::chain::validate::{Check, Designed};
use crate::chain::{ChainError, Stage, StageKind, LIMITS_DOC, MAX_COEFFICIENT, MAX_DESIGNED_TAPS, MAX_GIVEN_TAPS, MAX_KAISER_BETA};
use crate::design::{self, Cutoff, Response, Window};

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum WindowWire {
    Rectangular,
    Hann,
    Hamming,
    Blackman,
    Kaiser,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignWire {
    response: ResponseWire,
    taps: Count,
    cutoff_hz: CutoffWire,
    window: WindowWire,
    #[serde(default)]
    beta: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GivenWire {
    coefficients: Vec<f64>,
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>) -> Result<StageKind, ChainError> {
    if map.contains_key("coefficients") {
        let w: GivenWire = fields(index, t, map)?;
        return Ok(StageKind::FirGiven { coefficients: w.coefficients });
    }
    let w: DesignWire = fields(index, t, map)?;
    let window = match (w.window, w.beta) {
        (WindowWire::Kaiser, Some(beta)) => Window::Kaiser { beta },
        (WindowWire::Kaiser, None) => return Err(stage_error(index, t, "beta", "missing field `beta` (required for the kaiser window)".into())),
        (_, Some(_)) => return Err(stage_error(index, t, "beta", "beta applies only to the kaiser window".into())),
        (WindowWire::Rectangular, None) => Window::Rectangular,
        (WindowWire::Hann, None) => Window::Hann,
        (WindowWire::Hamming, None) => Window::Hamming,
        (WindowWire::Blackman, None) => Window::Blackman,
    };
    Ok(StageKind::FirDesign { response: w.response.into(), taps: w.taps.0 as usize, cutoff: w.cutoff_hz.0, window })
}

pub(super) fn write_design(m: &mut Map<String, Value>, response: Response, taps: usize, cutoff: &Cutoff, window: &Window) {
    m.insert("response".into(), json!(response.name()));
    m.insert("taps".into(), json!(taps));
    m.insert("cutoff_hz".into(), cutoff_value(cutoff));
    m.insert("window".into(), json!(window.name()));
    if let Window::Kaiser { beta } = window {
        m.insert("beta".into(), json!(beta));
    }
}

pub(super) fn write_given(m: &mut Map<String, Value>, coefficients: &[f64]) {
    m.insert("coefficients".into(), json!(coefficients));
}

pub(super) fn design(check: &Check, response: Response, taps: usize, cutoff: Cutoff, window: Window) -> Result<Designed, ChainError> {
    if !(1..=MAX_DESIGNED_TAPS).contains(&taps) {
        return Err(check.fail("taps", format!("taps {taps} is out of range (1..={MAX_DESIGNED_TAPS})")));
    }
    if matches!(response, Response::Highpass | Response::Bandstop) && taps.is_multiple_of(2) {
        return Err(check.fail("taps", format!("taps {taps} must be odd for a {} FIR (it must pass Nyquist)", response.name())));
    }
    let cutoff = check.cutoff(response, cutoff)?;
    if let Window::Kaiser { beta } = window {
        check.finite("beta", beta)?;
        if beta < 0.0 {
            return Err(check.fail("beta", format!("beta {beta} must not be negative")));
        }
        if beta > MAX_KAISER_BETA {
            return Err(check.fail("beta", format!("beta {beta} is above {MAX_KAISER_BETA} (the window's Bessel function overflows; see {LIMITS_DOC})")));
        }
    }
    match design::firwin(taps, response, cutoff, window, check.fs) {
        Some(h) => Ok(Designed::Fir(h)),
        None => Err(check.fail(
            "taps",
            format!("{taps} taps with this window leave the design zero at the centre of its passband, so it cannot be scaled (SciPy's firwin gives NaN taps); use more taps or another window"),
        )),
    }
}

pub(super) fn given(check: &Check, coefficients: &[f64]) -> Result<Designed, ChainError> {
    let n = coefficients.len();
    if !(1..=MAX_GIVEN_TAPS).contains(&n) {
        return Err(check.fail("coefficients", format!("coefficients has {n} taps, out of range (1..={MAX_GIVEN_TAPS})")));
    }
    if let Some(i) = coefficients.iter().position(|c| !c.is_finite()) {
        return Err(check.fail("coefficients", format!("coefficients[{i}] is not a finite number")));
    }
    if let Some(i) = coefficients.iter().position(|c| c.abs() > MAX_COEFFICIENT) {
        return Err(check.fail(
            "coefficients",
            format!("coefficients[{i}] = {:e} is larger in magnitude than {MAX_COEFFICIENT:e} (the FIR runs in float32; see {LIMITS_DOC})", coefficients[i]),
        ));
    }
    Ok(Designed::Fir(coefficients.to_vec()))
}

/// FIR stages: `firwin` designs (Hamming window unless given) and given coefficients.
pub struct Fir;

impl Fir {
    pub fn design(response: Response, taps: usize, cutoff: Cutoff, window: Window) -> Stage {
        Stage::new(StageKind::FirDesign { response, taps, cutoff, window })
    }
    pub fn lowpass(taps: usize, cutoff_hz: f64) -> Stage {
        Fir::design(Response::Lowpass, taps, Cutoff::Single(cutoff_hz), Window::Hamming)
    }
    pub fn highpass(taps: usize, cutoff_hz: f64) -> Stage {
        Fir::design(Response::Highpass, taps, Cutoff::Single(cutoff_hz), Window::Hamming)
    }
    pub fn bandpass(taps: usize, low_hz: f64, high_hz: f64) -> Stage {
        Fir::design(Response::Bandpass, taps, Cutoff::Band(low_hz, high_hz), Window::Hamming)
    }
    pub fn bandstop(taps: usize, low_hz: f64, high_hz: f64) -> Stage {
        Fir::design(Response::Bandstop, taps, Cutoff::Band(low_hz, high_hz), Window::Hamming)
    }
    /// A given kernel, run as `lfilter(coefficients, [1], x)`.
    pub fn coefficients(coefficients: Vec<f64>) -> Stage {
        Stage::new(StageKind::FirGiven { coefficients })
    }
}

impl Stage {
    /// For designed FIR stages: the same design with another window (no effect on others).
    pub fn with_window(mut self, new_window: Window) -> Stage {
        if let StageKind::FirDesign { window, .. } = &mut self.kind {
            *window = new_window;
        }
        self
    }
}
