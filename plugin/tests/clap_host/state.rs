//! Saved state: round trips with chain stages, chains loaded while playing, old and
//! corrupt sessions, the editor window's size.

use ferrofx_testkit::engine::{engine_output, max_abs_diff};
use clack_host::prelude::ClapId;
use ferrofx::chain::{Elliptic, Fir};

use super::host::*;
use super::settings::*;

/// A chain with a long FIR arrives while the plugin plays (the host loads a state on
/// the main thread): it is built there and handed to the audio thread lock-free, the
/// old engine goes back to be dropped off the audio thread (the debug bundle aborts on
/// any allocation or free inside `process`), and the output becomes bands + chain.
#[test]
fn chain_loaded_while_playing_is_handed_over() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let taps: Vec<f64> = noise(8192, 19, 0.02).iter().map(|&v| v as f64).collect();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Fir::coefficients(taps);

    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    let state = state_bytes(&state);

    let signal = stereo_noise(2 * fs as usize, 23);
    let mut b = Plugin::new(entry);
    let evs = events(&b, 0, &settings);
    let load: MainAction = Box::new(move |instance| {
        let ext = instance.access_shared_handler(|s| *s.state.get().unwrap()).unwrap();
        ext.load(&instance.plugin_handle(), &mut &state[..]).expect("state loads while playing");
    });
    let (out, _) = b.run_with(fs, &[256], &signal, &evs, |_, _, _| {}, Some(((0.5 * fs) as usize, load)));

    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap();
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);
    let expected = engine_output(&full, fs, &signal, 4096);
    let tail = (1.5 * fs) as usize;
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[tail..], &e[tail..]);
        assert!(err <= 2e-5, "after the hand-over: max error {err:e}");
        let before = max_abs_diff(&o[..(0.4 * fs) as usize], &e[..(0.4 * fs) as usize]);
        assert!(before > 1e-3, "before the load the chain stages were not running");
    }
}

/// The saved state holds the parameters and the chain file; loaded into a new instance
/// it gives the same output, chain stages (an elliptic and a given FIR) included.
#[test]
fn state_round_trip_with_chain_stages() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Fir::coefficients(noise(257, 9, 0.05).iter().map(|&v| v as f64).collect());
    let mut a = Plugin::new(entry);
    // Set the parameters by processing their events, then put the chain into the state.
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    assert!(a.load(&state_bytes(&state)), "the edited state loads");
    let saved = a.save();

    let mut b = Plugin::new(entry);
    assert!(b.load(&saved), "the saved state loads into a new instance");
    assert_eq!(b.save(), saved, "the state survives a save/load cycle unchanged");

    let signal = stereo_noise(24_000, 5);
    let (out_a, _) = a.run(fs, 512, &signal, &[], |_, _, _| {});
    let (out_b, _) = b.run(fs, 512, &signal, &[], |_, _, _| {});
    assert_eq!(out_a, out_b, "identical output after reload");

    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap(); // the output gain comes after the chain stages
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);
    let expected = engine_output(&full, fs, &signal, 4096);
    for (o, e) in out_b.iter().zip(&expected) {
        let err = max_abs_diff(o, e);
        assert!(err <= 2e-5, "bands + chain stages: max error {err:e}");
    }
}

/// A session saved before the analog-matched switch existed (no `matched` in its
/// parameters) loads with the switch off: its bands sound as they did (cookbook), while a
/// new instance starts with it on.
#[test]
fn sessions_from_before_the_matched_switch_keep_cookbook_bands() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (mut settings, chain) = settings();
    settings.push(("Analog-Matched Bands".to_string(), Plain::Discrete(1.0)));
    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    assert_eq!(state["params"]["matched"], serde_json::json!({"bool": true}), "saved with the switch on");
    state["params"].as_object_mut().unwrap().remove("matched");
    let mut b = Plugin::new(entry);
    assert!(b.load(&state_bytes(&state)));
    let signal = stereo_noise(24_000, 6);
    let (out, _) = b.run(fs, 512, &with_lead_in(fs, &signal), &[], |_, _, _| {});
    let expected = engine_output(&chain, fs, &signal, 4096);
    let lead = settle_frames(fs);
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[lead..], e);
        assert!(err <= 2e-5, "an old session must keep its cookbook bands: {err:e}");
    }
    assert_eq!(state_json(&b.save())["params"]["matched"], serde_json::json!({"bool": false}));
}

#[test]
fn corrupt_or_newer_state_loads_defaults_without_crashing() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let signal = stereo_noise(4096, 3);
    let (settings, _) = settings();

    // Not JSON at all: the load fails, the instance keeps working with its settings.
    let mut p = Plugin::new(entry);
    assert!(!p.load(b"\x00\x01 this is not a plugin state"), "garbage is refused");
    let (out, _) = p.run(fs, 256, &signal, &[], |_, _, _| {});
    assert_eq!(out, signal, "defaults: every band off, 0 dB: the output is the input");

    // A newer version: parameters and chain fall back to the defaults.
    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["version"] = serde_json::Value::String("99.0.0".into());
    let mut b = Plugin::new(entry);
    b.load(&state_bytes(&state));
    let (out, _) = b.run(fs, 256, &signal, &[], |_, _, _| {});
    assert_eq!(out, signal, "a newer state is not applied");

    // A corrupt chain file inside an otherwise good state: the bands load, the chain is empty.
    let (settings, chain) = self::settings();
    let mut c = Plugin::new(entry);
    let evs = events(&c, 0, &settings);
    c.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&c.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string("{\"format\": \"ferrofx-chain\", \"version\": 7, \"stages\": []}").unwrap());
    let mut d = Plugin::new(entry);
    assert!(d.load(&state_bytes(&state)));
    let (out, _) = d.run(fs, 256, &signal, &[], |_, _, _| {});
    let expected = engine_output(&chain, fs, &signal, 4096);
    for (o, e) in out.iter().zip(&expected) {
        assert!(max_abs_diff(o, e) <= 2e-5, "bands kept, corrupt chain dropped");
    }
}

/// The editor window's size is kept with the session: saved (the default in a new
/// instance), and a loaded size is what the next save writes until an open editor applies
/// it (that it does, in a real window: `clap_gui.rs`); a size below the editor's minimum
/// becomes the minimum, a damaged one and a session from before the field change nothing.
#[test]
fn the_editor_window_size_is_kept_with_the_session() {
    let Some(entry) = entry() else { return };
    let mut a = Plugin::new(entry);
    assert_eq!(ferrofx_testkit::clap::editor_size(&mut a.instance), Some((1000, 720)), "the default window");
    let mut state = state_json(&a.save());
    let size_of = |state: &serde_json::Value| -> serde_json::Value {
        serde_json::from_str(state["fields"]["editor-size"].as_str().expect("the size is saved")).unwrap()
    };
    assert_eq!(size_of(&state), serde_json::json!({"width": 1000.0, "height": 720.0}));
    let mut with_size = |w: f64, h: f64| {
        state["fields"]["editor-size"] = serde_json::Value::String(serde_json::json!({"width": w, "height": h}).to_string());
        let mut b = Plugin::new(entry);
        assert!(b.load(&state_bytes(&state)));
        size_of(&state_json(&b.save()))
    };
    assert_eq!(with_size(1280.0, 860.0), serde_json::json!({"width": 1280.0, "height": 860.0}));
    assert_eq!(with_size(300.0, 200.0), serde_json::json!({"width": 760.0, "height": 520.0}), "the editor's minimum");
    assert_eq!(with_size(1.0e9, 700.0), serde_json::json!({"width": 1000.0, "height": 720.0}), "a damaged size is ignored");
    state["fields"].as_object_mut().unwrap().remove("editor-size");
    let mut e = Plugin::new(entry);
    assert!(e.load(&state_bytes(&state)));
    assert_eq!(size_of(&state_json(&e.save())), serde_json::json!({"width": 1000.0, "height": 720.0}), "an older session");
}

/// Every host parameter, as the host lists them, survives a session save and reopen:
/// each is set away from the value it has (in one block of automation events), the state
/// saved and loaded into a new instance, and every value read back is the saved one.
#[test]
fn every_parameter_survives_a_session_reopen() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let mut a = Plugin::new(entry);
    let mut ids: Vec<(String, ClapId, f64, f64)> = a.params.iter().map(|(n, &(id, lo, hi))| (n.clone(), id, lo, hi)).collect();
    ids.sort_by(|x, y| x.0.cmp(&y.0));
    assert!(ids.len() > 300, "every band's parameters are listed ({})", ids.len());
    let events: Vec<(usize, ClapId, f64)> = ids
        .iter()
        .map(|(_, id, lo, hi)| {
            let now = a.value(*id);
            let mut v = (lo + 0.63 * (hi - lo)).round().clamp(*lo, *hi);
            if v == now {
                v = if now == *lo { *hi } else { *lo };
            }
            (0, *id, v)
        })
        .collect();
    a.run(fs, 64, &[vec![0.0; 256], vec![0.0; 256]], &events, |_, _, _| {});
    // (The plugin keeps values as float32: what it reports is within that of the value.)
    let close = |got: f64, want: f64| (got - want).abs() <= 1e-6 * want.abs().max(1.0);
    for ((name, id, _, _), (_, _, v)) in ids.iter().zip(&events) {
        let got = a.value(*id);
        assert!(close(got, *v), "{name} took the value set: {got} for {v}");
    }
    let saved = a.save();
    let mut b = Plugin::new(entry);
    assert!(b.load(&saved));
    for ((name, id, _, _), (_, _, v)) in ids.iter().zip(&events) {
        let (got, before) = (b.value(*id), a.value(*id));
        assert!(got == before && close(got, *v), "{name} after the session is reopened: {got}, saved {before}");
    }
}
