//! `biquad`: an Audio-EQ-Cookbook shape (`kind`, `freq_hz`, `q`, and `gain_db` for
//! peaking and shelves), one section; `matched` (format version 2): the analog-matched
//! design of the same shape ([`crate::design::matched`]), two sections.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::{fields, needs_version_2};
use crate::chain::validate::{Check, Designed};
use crate::chain::{ChainError, Stage, StageKind};
use crate::design::{self, BiquadKind};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    kind: BiquadKind,
    freq_hz: f64,
    q: f64,
    #[serde(default)]
    gain_db: Option<f64>,
    /// Version 2.
    #[serde(default)]
    matched: Option<bool>,
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>, version: u64) -> Result<StageKind, ChainError> {
    let w: Wire = fields(index, t, map)?;
    needs_version_2(index, t, w.matched, version)?;
    Ok(StageKind::Biquad { kind: w.kind, freq_hz: w.freq_hz, q: w.q, gain_db: w.gain_db, matched: w.matched.unwrap_or(false) })
}

pub(super) fn write(m: &mut Map<String, Value>, kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64>, matched: bool) {
    m.insert("kind".into(), json!(kind.name()));
    m.insert("freq_hz".into(), json!(freq_hz));
    m.insert("q".into(), json!(q));
    if let Some(g) = gain_db {
        m.insert("gain_db".into(), json!(g));
    }
    if matched {
        m.insert("matched".into(), json!(true));
    }
}

pub(super) fn design(check: &Check, kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64>, matched: bool) -> Result<Designed, ChainError> {
    let fs = check.fs;
    let f = check.frequency("freq_hz", freq_hz)?;
    let q = check.positive("q", q)?;
    let gain = match (kind.uses_gain(), gain_db) {
        (true, Some(g)) => check.gain_db("gain_db", g)?,
        (true, None) => return Err(check.fail("gain_db", format!("missing field `gain_db` (required for {})", kind.name()))),
        (false, Some(_)) => {
            return Err(check.fail("gain_db", format!("gain_db does not apply to a {} biquad (only peaking and shelves)", kind.name())))
        }
        (false, None) => 0.0,
    };
    let sections = if matched {
        let mut out = [design::Sos::IDENTITY; design::matched::MATCHED_SECTIONS];
        let n = design::matched::biquad_matched_into(kind, f, q, gain, fs, &mut out);
        out[..n].to_vec()
    } else {
        vec![design::rbj::biquad(kind, f, q, gain, fs)]
    };
    Ok(Designed::Sos(check.designed("q", sections)?))
}

/// Audio-EQ-Cookbook biquads.
pub struct Biquad;

impl Biquad {
    /// Any shape; `gain_db` only for peaking and shelves.
    #[allow(clippy::new_ret_no_self)] // a constructor of `Stage`s, like the others here
    pub fn new(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64>) -> Stage {
        Stage::new(StageKind::Biquad { kind, freq_hz, q, gain_db, matched: false })
    }
    pub fn lowpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Lowpass, freq_hz, q, None)
    }
    pub fn highpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Highpass, freq_hz, q, None)
    }
    /// Constant 0 dB peak gain.
    pub fn bandpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Bandpass, freq_hz, q, None)
    }
    /// Constant skirt gain (peak gain = Q).
    pub fn bandpass_skirt(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::BandpassSkirt, freq_hz, q, None)
    }
    pub fn notch(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Notch, freq_hz, q, None)
    }
    pub fn allpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Allpass, freq_hz, q, None)
    }
    pub fn peaking(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::Peaking, freq_hz, q, Some(gain_db))
    }
    pub fn low_shelf(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::LowShelf, freq_hz, q, Some(gain_db))
    }
    pub fn high_shelf(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::HighShelf, freq_hz, q, Some(gain_db))
    }
}
