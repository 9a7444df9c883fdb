//! One list of what a user can change in an instance: every host parameter, read from the
//! parameter map itself (so a new parameter is never left out), and the chain stages (the
//! persisted chain file). Undo and redo, A/B and presets all take their snapshots here;
//! a session is nice-plug's own state of the same parameters and persisted fields.
//!
//! Not in it, on purpose: the editor window's size (a view, kept with the session but
//! never undone or part of a preset) and the band solo (a monitoring aid, never saved).
//!
//! A preset file (`ferrofx-preset`, version 1) holds the whole list: each parameter by its
//! ID as its plain value (a number, `true`/`false`, or an enum's name as the host shows
//! it) and the chain stages as a chain file. Loading one checks every entry first; an
//! unknown ID, a wrong type or a value out of range is refused with its name and nothing
//! changes. Parameters a file does not name (a preset from an older version) take their
//! defaults.

use nice_plug::params::internals::ParamPtr;
use nice_plug::prelude::*;
use serde_json::{Map, Value};

use crate::control::params::FerroParams;

/// The preset file's format name and version.
pub const PRESET_FORMAT: &str = "ferrofx-preset";
pub const PRESET_VERSION: u64 = 1;

/// Every host parameter's unmodulated normalised value, in the parameter map's order
/// (fixed for a build), and the chain stages as chain-file text.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceState {
    pub normalized: Vec<f32>,
    pub chain_json: String,
}

/// The parameter map: (ID, pointer), in its fixed order.
fn map(params: &FerroParams) -> Vec<(String, ParamPtr)> {
    params.param_map().into_iter().map(|(id, ptr, _)| (id, ptr)).collect()
}

impl InstanceState {
    /// The instance's state now.
    pub fn of(params: &FerroParams) -> InstanceState {
        // SAFETY: the pointers come from `params`, alive for this call.
        let normalized = map(params).iter().map(|(_, p)| unsafe { p.unmodulated_normalized_value() }).collect();
        InstanceState { normalized, chain_json: params.chain.json() }
    }

    /// Every parameter at its default, no chain stages.
    pub fn defaults(params: &FerroParams) -> InstanceState {
        // SAFETY: as in `of`.
        let normalized = map(params).iter().map(|(_, p)| unsafe { p.default_normalized_value() }).collect();
        InstanceState { normalized, chain_json: ferrofx::Chain::new().to_json() }
    }

    /// Makes the instance this state: each parameter that differs through a host gesture
    /// (so the host records it), then the chain stages.
    pub fn apply(&self, params: &FerroParams, setter: &ParamSetter) {
        for ((_, p), &v) in map(params).iter().zip(&self.normalized) {
            // SAFETY: the pointers come from `params`, alive for this call; the setter's
            // context is the plugin's own.
            unsafe {
                // Compared as plain values: a normalised value may differ by its last bit
                // from the one a plain value converts to, for the same setting.
                if p.preview_plain(p.unmodulated_normalized_value()) != p.preview_plain(v) {
                    setter.raw_context.raw_begin_set_parameter(*p);
                    setter.raw_context.raw_set_parameter_normalized(*p, v);
                    setter.raw_context.raw_end_set_parameter(*p);
                }
            }
        }
        if params.chain.json() != self.chain_json {
            // The text came from an installed chain or a checked preset: it parses.
            let _ = params.chain.install_json(&self.chain_json);
        }
    }

    /// Sets one parameter of this state to `plain` (as the parameter would round it);
    /// `map` is the parameter map ([`map`]), made once by the caller.
    fn set<P: Param>(&mut self, map: &[(String, ParamPtr)], p: &P, plain: P::Plain) {
        let target = p.as_ptr();
        if let Some(i) = map.iter().position(|(_, q)| *q == target) {
            self.normalized[i] = p.preview_normalized(plain);
        }
    }

    /// What loading a chain file (a preset of the shared contract, e.g. a factory preset)
    /// makes the instance: the bands, output gain, analog-matched switch and chain stages
    /// the file says, every other setting at its default (a chain file plays in natural
    /// phase, without dynamics, auto gain or routing), except what is not part of a
    /// chain's sound and stays as it is in `current`: bypass and the backend settings.
    pub fn from_chain_file(chain: &ferrofx::Chain, params: &FerroParams, current: &InstanceState) -> InstanceState {
        use crate::control::params::{RouteChoice, ShapeChoice};
        use crate::shared::bands::Band;
        let imported = crate::control::preset::import(chain);
        let mut state = InstanceState::defaults(params);
        let map = map(params);
        let keep = [params.bypass.as_ptr(), params.backend.as_ptr(), params.gpu_min_block.as_ptr()];
        for (i, (_, p)) in map.iter().enumerate() {
            if keep.contains(p) {
                state.normalized[i] = current.normalized[i];
            }
        }
        for (i, bp) in params.bands.iter().enumerate() {
            let Some(band) = imported.bands.iter().find(|(n, _)| *n == i).map(|(_, b)| *b) else { continue };
            let Band { enabled, bypassed, shape, freq_hz, gain_db, q, slope, route, .. } = band;
            state.set(&map, &bp.enabled, enabled);
            state.set(&map, &bp.bypassed, bypassed);
            state.set(&map, &bp.shape, ShapeChoice::from_shape(shape));
            state.set(&map, &bp.freq_hz, freq_hz as f32);
            state.set(&map, &bp.gain_db, gain_db as f32);
            state.set(&map, &bp.q, q as f32);
            state.set(&map, &bp.slope_poles, (slope.db_per_oct / 6) as i32);
            state.set(&map, &bp.linkwitz_riley, slope.linkwitz_riley);
            state.set(&map, &bp.route, RouteChoice::from_route(route));
        }
        state.set(&map, &params.output_gain_db, imported.output_gain_db.unwrap_or(0.0) as f32);
        if let Some(matched) = imported.matched {
            state.set(&map, &params.matched, matched);
        }
        state.chain_json = imported.stages.to_json();
        state
    }

    /// The state as a preset file.
    pub fn to_preset_json(&self, params: &FerroParams) -> String {
        let mut values = Map::new();
        for ((id, p), &v) in map(params).iter().zip(&self.normalized) {
            // SAFETY: as in `of`.
            let value = unsafe {
                match p {
                    ParamPtr::BoolParam(_) => Value::Bool(v >= 0.5),
                    ParamPtr::EnumParam(_) => Value::String(p.normalized_value_to_string(v, false)),
                    ParamPtr::IntParam(_) => Value::from(p.preview_plain(v).round() as i64),
                    ParamPtr::FloatParam(_) => Value::from(crate::control::params::decimal(p.preview_plain(v))),
                }
            };
            values.insert(id.clone(), value);
        }
        let chain: Value = serde_json::from_str(&self.chain_json).unwrap_or(Value::Null);
        let doc = serde_json::json!({
            "format": PRESET_FORMAT,
            "version": PRESET_VERSION,
            "parameters": values,
            "chain": chain,
        });
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }

    /// Whether `text` is a preset file (and not a chain file).
    pub fn is_preset(text: &str) -> bool {
        serde_json::from_str::<Value>(text).is_ok_and(|v| v.get("format").and_then(Value::as_str) == Some(PRESET_FORMAT))
    }

    /// A preset file as a state for `params`: every entry checked, nothing applied.
    pub fn from_preset_json(text: &str, params: &FerroParams) -> Result<InstanceState, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not a preset file: {e}"))?;
        if doc.get("format").and_then(Value::as_str) != Some(PRESET_FORMAT) {
            return Err(format!("not a preset file: \"format\" is not \"{PRESET_FORMAT}\""));
        }
        match doc.get("version").and_then(Value::as_u64) {
            Some(PRESET_VERSION) => {}
            other => return Err(format!("preset version {other:?} is not one this build reads ({PRESET_VERSION})")),
        }
        if let Some(key) = doc.as_object().and_then(|o| o.keys().find(|k| !["format", "version", "parameters", "chain"].contains(&k.as_str()))) {
            return Err(format!("unknown key \"{key}\" at the preset's top level"));
        }
        let values = doc.get("parameters").and_then(Value::as_object).ok_or("the preset has no \"parameters\" object")?;
        let map = map(params);
        if let Some(id) = values.keys().find(|id| map.iter().all(|(m, _)| m != *id)) {
            return Err(format!("parameters.{id}: no parameter of this plugin has that ID"));
        }
        let mut state = InstanceState::defaults(params);
        for ((id, p), slot) in map.iter().zip(state.normalized.iter_mut()) {
            let Some(value) = values.get(id) else { continue };
            let wrong = |what: &str| format!("parameters.{id}: {what}, got {value}");
            // SAFETY: the pointers come from `params`, alive for this call.
            *slot = unsafe {
                match p {
                    ParamPtr::BoolParam(_) => match value.as_bool() {
                        Some(b) => f32::from(u8::from(b)),
                        None => return Err(wrong("expected true or false")),
                    },
                    ParamPtr::EnumParam(_) => {
                        let name = value.as_str().ok_or_else(|| wrong("expected one of the parameter's names"))?;
                        // Only an exact name, not a prefix the host's parser would take.
                        let n = p.string_to_normalized_value(name).filter(|&n| p.normalized_value_to_string(n, false) == name);
                        n.ok_or_else(|| wrong("not one of the parameter's names"))?
                    }
                    ParamPtr::IntParam(_) | ParamPtr::FloatParam(_) => {
                        let plain = value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| wrong("expected a number"))? as f32;
                        if matches!(p, ParamPtr::IntParam(_)) && plain.fract() != 0.0 {
                            return Err(wrong("expected a whole number"));
                        }
                        let n = p.preview_normalized(plain);
                        // Out of range: the parameter would clamp it (a step's rounding is
                        // not out of range).
                        let (lo, hi) = (p.preview_plain(0.0), p.preview_plain(1.0));
                        if plain < lo.min(hi) - 1e-6 * lo.abs().max(1.0) || plain > hi.max(lo) + 1e-6 * hi.abs().max(1.0) {
                            return Err(wrong(&format!("outside the parameter's range {lo}..={hi}")));
                        }
                        n
                    }
                }
            };
        }
        state.chain_json = match doc.get("chain") {
            None | Some(Value::Null) => ferrofx::Chain::new().to_json(),
            Some(chain) => {
                let chain = ferrofx::Chain::from_json(&chain.to_string()).map_err(|e| format!("chain: {e}"))?;
                chain.to_json()
            }
        };
        Ok(state)
    }
}
