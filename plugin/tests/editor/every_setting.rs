//! Every setting a user can change survives undo, redo, A/B and a preset save and load.
//! The parameters are walked from the plugin's own parameter map (not a hand list), so a
//! parameter added later is checked without this file changing; the chain stages are the
//! one setting that is not a parameter. (A session reopen: `clap_host/state.rs`.)

use ferrofx::chain::Elliptic;
use ferrofx::Chain;
use ferrofx_plugin::control::instance_state::InstanceState;
use ferrofx_plugin::control::params::FerroParams;
use ferrofx_plugin::editor::ab::AbSlots;
use ferrofx_plugin::editor::history::History;
use ferrofx_plugin::editor::presets::load_text;
use nice_plug::params::internals::ParamPtr;
use nice_plug::prelude::*;

use super::rig::*;

/// A value of `p` away from its default that survives normalised -> plain -> normalised
/// exactly (what a preset file stores is the plain value): the other end of a switch or
/// enum, or a point inside a range.
fn off_default(p: &ParamPtr) -> f32 {
    // SAFETY: the pointer comes from the test's parameters, alive throughout.
    unsafe {
        let default = p.default_normalized_value();
        for candidate in [0.0, 1.0, 0.37, 0.71] {
            let mut v = p.preview_normalized(p.preview_plain(candidate));
            for _ in 0..4 {
                v = p.preview_normalized(p.preview_plain(v));
            }
            if v != default && p.preview_normalized(p.preview_plain(v)) == v {
                return v;
            }
        }
        panic!("{}: no value away from its default", p.name())
    }
}

/// Every parameter of `params` at `want`'s value, named when not; the chain too. Values
/// are compared as the plain values the parameters hold: exactly for switches, enums and
/// integers, to float32 rounding (4 ulp) for continuous ones (a host sets them by their
/// normalised value, whose conversion to and from plain may round by one ulp).
fn assert_is(params: &FerroParams, want: &InstanceState, what: &str) {
    for ((id, p, _), &v) in params.param_map().iter().zip(&want.normalized) {
        // SAFETY: as above.
        let (now, wanted) = unsafe { (p.unmodulated_plain_value(), p.preview_plain(v)) };
        let same = match p {
            ParamPtr::FloatParam(_) => (now - wanted).abs() <= 4.0 * f32::EPSILON * now.abs().max(wanted.abs()),
            _ => now == wanted,
        };
        assert!(same, "{what}: parameter {id} is {now}, expected {wanted}");
    }
    assert_eq!(params.chain.json(), want.chain_json, "{what}: the chain stages");
}

#[test]
fn every_setting_survives_undo_redo_a_b_and_a_preset() {
    let r = rig();
    let params = r.params.clone();
    let setter = r.gui.param_setter();
    let defaults = InstanceState::of(&params);
    let map = params.param_map();
    assert!(map.len() > 300, "the walk sees every band's parameters ({} found)", map.len());
    let mut moved = defaults.clone();
    moved.normalized = map.iter().map(|(_, p, _)| off_default(p)).collect();
    let mut stages = Chain::new();
    stages.push(Elliptic::lowpass(12_000.0, 6, 0.5, 60.0));
    moved.chain_json = stages.to_json();
    for ((id, _, _), (a, b)) in map.iter().zip(defaults.normalized.iter().zip(&moved.normalized)) {
        assert_ne!(a, b, "{id} is moved off its default");
    }

    // Undo and redo: every setting changed in one edit.
    let mut history = History::default();
    history.before_frame(&params, true);
    moved.apply(&params, &setter);
    history.after_frame(&params, false);
    assert_is(&params, &moved, "after the edit");
    history.undo(&params, &setter);
    assert_is(&params, &defaults, "undone");
    history.redo(&params, &setter);
    assert_is(&params, &moved, "redone");

    // A/B: B starts as A; B set back to the defaults; each slot shows what it held.
    let mut ab = AbSlots::default();
    ab.switch_to(1, &params, &setter);
    assert_is(&params, &moved, "B, a copy of A");
    defaults.apply(&params, &setter);
    ab.switch_to(0, &params, &setter);
    assert_is(&params, &moved, "A again");
    ab.switch_to(1, &params, &setter);
    assert_is(&params, &defaults, "B again");

    // A preset file holds every setting: saved from the moved state, loaded over the
    // defaults.
    moved.apply(&params, &setter);
    let text = InstanceState::of(&params).to_preset_json(&params);
    defaults.apply(&params, &setter);
    load_text(&text, &params, &setter, 48_000.0).unwrap();
    assert_is(&params, &moved, "a preset saved and loaded");
    // Each parameter by its ID in the file, by the name the host shows for enums.
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["parameters"].as_object().unwrap().len(), map.len());
    assert_eq!(doc["parameters"]["phase"], "Analog", "the last phase choice");
}

/// A preset file is checked whole before anything changes: an unknown ID, a wrong type,
/// a value out of range or an unknown enum name is refused with its name.
#[test]
fn a_bad_preset_is_refused_by_name_and_changes_nothing() {
    let r = rig();
    let params = r.params.clone();
    let setter = r.gui.param_setter();
    let good = InstanceState::of(&params).to_preset_json(&params);
    let before = InstanceState::of(&params);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut doc: serde_json::Value = serde_json::from_str(&good).unwrap();
        f(&mut doc);
        doc.to_string()
    };
    let cases: [(String, &str); 6] = [
        (edit(&|d| d["parameters"]["no_such"] = 1.into()), "parameters.no_such"),
        (edit(&|d| d["parameters"]["freq_3"] = 1e9.into()), "parameters.freq_3: outside"),
        (edit(&|d| d["parameters"]["on_2"] = 1.into()), "parameters.on_2: expected true or false"),
        (edit(&|d| d["parameters"]["phase"] = "Linear".into()), "parameters.phase: not one of"),
        (edit(&|d| d["parameters"]["slope_4"] = 2.5.into()), "parameters.slope_4: expected a whole number"),
        (edit(&|d| d["version"] = 9.into()), "version"),
    ];
    for (text, want) in &cases {
        let e = load_text(text, &params, &setter, 48_000.0).unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
        assert_eq!(InstanceState::of(&params), before, "{want}: nothing changed");
    }
    // A parameter a file does not name takes its default (a preset of an older version).
    let setter2 = r.gui.param_setter();
    setter2.set_parameter(&params.delta, true);
    load_text(&edit(&|d| { d["parameters"].as_object_mut().unwrap().remove("delta"); }), &params, &setter, 48_000.0).unwrap();
    assert!(!params.delta.value());
}

/// Exporting to a plain chain file names each setting a chain file cannot say instead of
/// dropping it; with none of them on, nothing is named.
#[test]
fn a_chain_file_export_names_what_it_cannot_say() {
    use ferrofx_plugin::control::params::{AutoGainChoice, PhaseChoice};
    use ferrofx_plugin::control::preset::unsaid_in_a_chain_file;
    let r = rig();
    let params = r.params.clone();
    let setter = r.gui.param_setter();
    assert!(unsaid_in_a_chain_file(&params).is_empty());
    setter.set_parameter(&params.bands[2].enabled, true);
    setter.set_parameter(&params.bands[2].dyn_on, true);
    setter.set_parameter(&params.phase, PhaseChoice::Linear16384);
    setter.set_parameter(&params.auto_gain, AutoGainChoice::Pink);
    setter.set_parameter(&params.delta, true);
    setter.set_parameter(&params.bypass, true);
    let unsaid = unsaid_in_a_chain_file(&params).join("; ");
    for want in ["band 3 is dynamic", "Linear 16384", "auto gain", "delta", "bypassed"] {
        assert!(unsaid.contains(want), "{want}: {unsaid}");
    }
}
