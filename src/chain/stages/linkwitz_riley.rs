//! `linkwitz_riley`: a Linkwitz-Riley crossover filter (low- or high-pass, even order),
//! the Butterworth of half the order twice; `matched` (format version 2): the
//! analog-matched cut.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::{fields, needs_version_2, Count, ResponseWire};
use crate::chain::validate::{matched_cut, Check, Designed};
use crate::chain::{ChainError, Stage, StageKind};
use crate::design::{self, Response};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    response: ResponseWire,
    order: Count,
    cutoff_hz: f64,
    /// Version 2.
    #[serde(default)]
    matched: Option<bool>,
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>, version: u64) -> Result<StageKind, ChainError> {
    let w: Wire = fields(index, t, map)?;
    needs_version_2(index, t, w.matched, version)?;
    Ok(StageKind::LinkwitzRiley { response: w.response.into(), order: w.order.0 as usize, cutoff_hz: w.cutoff_hz, matched: w.matched.unwrap_or(false) })
}

pub(super) fn write(m: &mut Map<String, Value>, response: Response, order: usize, cutoff_hz: f64, matched: bool) {
    m.insert("response".into(), json!(response.name()));
    m.insert("order".into(), json!(order));
    m.insert("cutoff_hz".into(), json!(cutoff_hz));
    if matched {
        m.insert("matched".into(), json!(true));
    }
}

pub(super) fn design(check: &Check, response: Response, order: usize, cutoff_hz: f64, matched: bool) -> Result<Designed, ChainError> {
    let fs = check.fs;
    if response.is_band() {
        return Err(check.fail("response", format!("response {} is not available for linkwitz_riley (lowpass or highpass)", response.name())));
    }
    let order = check.order(order, 2)?;
    if order % 2 != 0 {
        return Err(check.fail("order", format!("order {order} must be even for linkwitz_riley")));
    }
    let f = check.frequency("cutoff_hz", cutoff_hz)?;
    if matched {
        return Ok(Designed::Sos(check.designed("order", matched_cut(response, order, true, f, fs))?));
    }
    Ok(Designed::Sos(check.designed("order", design::linkwitz_riley_sos(response, order, f, fs))?))
}

/// Linkwitz-Riley crossover filters (even orders).
pub struct LinkwitzRiley;

impl LinkwitzRiley {
    pub fn lowpass(cutoff_hz: f64, order: usize) -> Stage {
        Stage::new(StageKind::LinkwitzRiley { response: Response::Lowpass, order, cutoff_hz, matched: false })
    }
    pub fn highpass(cutoff_hz: f64, order: usize) -> Stage {
        Stage::new(StageKind::LinkwitzRiley { response: Response::Highpass, order, cutoff_hz, matched: false })
    }
}
