//! `gain`: a gain in dB (within ±[`crate::chain::MAX_GAIN_DB`]), fused into its
//! neighbours' cascade.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::chain::json::fields;
use crate::chain::validate::{Check, Designed};
use crate::chain::{ChainError, Stage, StageKind};
use crate::design::Sos;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    gain_db: f64,
}

pub(super) fn parse(index: usize, t: &str, map: Map<String, Value>) -> Result<StageKind, ChainError> {
    Ok(StageKind::Gain { gain_db: fields::<Wire>(index, t, map)?.gain_db })
}

pub(super) fn write(m: &mut Map<String, Value>, gain_db: f64) {
    m.insert("gain_db".into(), json!(gain_db));
}

pub(super) fn design(check: &Check, gain_db: f64) -> Result<Designed, ChainError> {
    let g = check.gain_db("gain_db", gain_db)?;
    Ok(Designed::Sos(vec![Sos::gain(10f64.powf(g / 20.0))]))
}

impl Stage {
    /// A `gain` stage.
    pub fn gain(gain_db: f64) -> Stage {
        Stage::new(StageKind::Gain { gain_db })
    }
}
