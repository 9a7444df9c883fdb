//! A/B slots, presets, and the phase and group-delay view.

use egui::{Key, Modifiers};
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use ferrofx::{Chain, StageKind};

use super::rig::*;

#[test]
fn a_b_slots_keep_two_complete_states() {
    let mut r = rig();
    r.peak(0, 1000.0, 3.0);
    r.add_stage("Gain");
    let a_state = (band_values(&r.params), r.params.chain.json());
    r.pause();
    r.harness.get_by_label("B").click();
    r.harness.run();
    assert_eq!((band_values(&r.params), r.params.chain.json()), a_state, "B starts as a copy of A");
    r.peak(0, 250.0, -6.0);
    r.peak(5, 8000.0, 2.0);
    r.add_stage("Bessel");
    let b_state = (band_values(&r.params), r.params.chain.json());
    assert_ne!(b_state, a_state);
    r.pause();
    r.harness.get_by_label("A").click();
    r.harness.run();
    assert_eq!((band_values(&r.params), r.params.chain.json()), a_state, "A exactly as it was");
    r.pause();
    r.harness.get_by_label("B").click();
    r.harness.run();
    assert_eq!((band_values(&r.params), r.params.chain.json()), b_state, "B exactly as it was");
    // Copy B→A, then A shows B's state; the switch itself was a host gesture.
    r.pause();
    r.harness.get_by_label("Copy B to A").click();
    r.harness.run();
    r.pause();
    r.harness.get_by_label("A").click();
    r.harness.run();
    assert_eq!((band_values(&r.params), r.params.chain.json()), b_state);
    // Undo covers a switch.
    r.pause();
    r.harness.get_by_label("B").click();
    r.harness.run();
    r.peak(0, 3000.0, 1.0);
    let before = (band_values(&r.params), r.params.chain.json());
    r.pause();
    r.harness.get_by_label("A").click();
    r.harness.run();
    r.pause();
    r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    r.harness.run();
    assert_eq!((band_values(&r.params), r.params.chain.json()), before);
}

#[test]
fn presets_load_save_and_refuse_bad_files_without_changes() {
    use ferrofx_plugin::editor::presets::{PresetsPanel, FACTORY};
    use ferrofx_plugin::editor::Tab;
    let folder = std::env::temp_dir().join(format!("ferrofx-presets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let mut r = rig();
    r.harness.state_mut().presets = PresetsPanel::with_folder(Some(folder.clone()));
    r.harness.state_mut().tab = Tab::Files;
    r.harness.state_mut().drawer = true;
    r.harness.run();

    // Every factory preset loads: its bands and stages are what the chain file says.
    for (name, text) in FACTORY {
        r.pause();
        r.harness.get_by_label(name).click();
        r.harness.run();
        let imported = ferrofx_plugin::control::preset::import(&Chain::from_json(text).unwrap());
        for (i, band) in &imported.bands {
            let got = r.params.bands[*i].band();
            assert!(got.enabled && got.shape == band.shape, "{name}: band {i}");
            assert!((got.freq_hz - band.freq_hz).abs() < 1e-3 * band.freq_hz, "{name}: band {i} {} vs {}", got.freq_hz, band.freq_hz);
        }
        assert_eq!(r.params.bands().iter().filter(|b| b.enabled).count(), imported.bands.len(), "{name}: no other band on");
        assert_eq!(r.params.chain.chain(), imported.stages, "{name}");
    }

    // Save to the user folder, change everything, load it back.
    let saved_state = (band_values(&r.params), r.params.chain.json());
    {
        r.harness.get_by_role(Role::TextInput).set_text_value_accesskit("Test preset");
    }
    r.harness.run();
    r.pause();
    r.harness.get_by_label("Save to your presets").click();
    r.harness.run();
    assert!(folder.join("Test preset.json").is_file());
    r.pause();
    r.harness.get_by_label(FACTORY[0].0).click();
    r.harness.run();
    assert_ne!((band_values(&r.params), r.params.chain.json()), saved_state);
    r.pause();
    r.harness.get_by_label("Test preset").click();
    r.harness.run();
    assert_eq!(r.params.chain.json(), saved_state.1);
    // The bands as saved (a disabled band's hidden values are not part of a preset).
    let now = band_values(&r.params);
    for (k, (a, b)) in now.chunks(5).zip(saved_state.0.chunks(5)).enumerate() {
        assert_eq!(a[0], b[0], "band {k} on/off");
        if b[0] > 0.5 || k == now.len() / 5 {
            assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5), "band {k}: {a:?} vs {b:?}");
        }
    }

    // A broken file and one that does not design at this rate: the error shows, nothing changes.
    std::fs::write(folder.join("broken.json"), "{\"format\": \"ferrofx-chain\", \"version\": 1, \"stages\": [{\"type\": \"gain\"}]}").unwrap();
    std::fs::write(folder.join("too high.json"), "{\"format\": \"ferrofx-chain\", \"version\": 1, \"stages\": [{\"type\": \"butterworth\", \"response\": \"lowpass\", \"order\": 2, \"cutoff_hz\": 30000}]}").unwrap();
    r.pause();
    r.harness.get_by_label("Refresh").click();
    r.harness.run();
    let before = (band_values(&r.params), r.params.chain.json());
    for (name, expect) in [("broken", "gain_db"), ("too high", "Nyquist")] {
        r.pause();
        r.harness.get_by_label(name).click();
        r.harness.run();
        r.harness.get_by_label_contains("Nothing changed");
        let outcome = r.harness.state().presets.outcome.clone();
        assert!(matches!(&outcome, Some(ferrofx_plugin::editor::presets::Outcome::Failed(m)) if m.contains(expect)), "{name}: {outcome:?}");
        assert_eq!((band_values(&r.params), r.params.chain.json()), before, "{name}: nothing changed");
    }
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn phase_and_group_delay_of_a_linear_phase_fir_are_exact() {
    use ferrofx_plugin::editor::curve::Overlay;
    let mut r = rig();
    r.add_stage("FIR (designed)");
    let StageKind::FirDesign { taps, cutoff, .. } = r.chain().stages[0].kind.clone() else { panic!() };
    r.harness.state_mut().overlay = Overlay::GroupDelay;
    r.harness.run();
    // A symmetric FIR of N taps delays every frequency by (N - 1) / 2 samples; in its
    // passband (positive amplitude) its phase is -2 pi f (N - 1) / 2 / fs exactly.
    let delay_s = (taps - 1) as f64 / 2.0 / 48_000.0;
    let resp = r.harness.state().last_responses.as_ref().expect("drawn");
    let mut checked = 0;
    for ((&f, &gd), &ph) in resp.freqs_hz.iter().zip(&resp.group_delay_ms).zip(&resp.phase_deg) {
        if f > 0.75 * cutoff.low_hz() {
            continue;
        }
        assert!((f64::from(gd) - delay_s * 1e3).abs() < 1e-4, "{f} Hz: {gd} ms");
        let expect = (-2.0 * std::f64::consts::PI * f * delay_s).to_degrees();
        let wrapped = (expect + 180.0).rem_euclid(360.0) - 180.0;
        let diff = (f64::from(ph) - wrapped + 180.0).rem_euclid(360.0) - 180.0;
        assert!(diff.abs() < 0.01, "{f} Hz: {ph} vs {wrapped}");
        checked += 1;
    }
    assert!(checked > 100);
}
