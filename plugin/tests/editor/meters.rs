//! What the editor measures and draws while audio plays: the loudness meters against
//! EBU Tech 3341's first case (a stereo 1 kHz sine at -23 dBFS reads -23.0 LUFS
//! momentary, short-term and integrated, within its 0.1 LU), the input's peak and RMS
//! against the sine's, the output moved by the output gain; a dynamic band's gain now
//! drawn on its curve, the total and a marker at its node.

use std::sync::atomic::Ordering;

use ferrofx_plugin::control::params::ShapeChoice;
use egui_kittest::kittest::Queryable;

use super::rig::*;

#[test]
fn loudness_meters_read_ebu_tech_3341_case_1_on_input_and_output() {
    let (mut r, mut audio, telemetry) = audio_rig();
    r.harness.run();
    assert!(telemetry.loudness.wanted.load(Ordering::Relaxed), "the open editor asks for samples");
    // EBU Tech 3341, test 1: 1 kHz, -23 dBFS on both channels, 20 s (any length past
    // 3 s reads the same for a steady sine; 10 s here).
    let amplitude = 10f32.powf(-23.0 / 20.0);
    let (gui, params) = (r.gui.clone(), r.params.clone());
    gui.param_setter().set_parameter(&params.output_gain_db, 6.0);
    // (A host's wrapper moves the smoother with the value; this test host does not.)
    params.output_gain_db.smoothed.reset(6.0);
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, amplitude, 10.0);
    r.harness.run();
    let l = &r.harness.state().loudness;
    assert_eq!(l.dropped_blocks, 0, "every block metered");
    for (side, name, want) in [(&l.input, "input", -23.0), (&l.output, "output (+6 dB)", -17.0)] {
        let (m, s, i) = (side.momentary_lufs(), side.short_term_lufs(), side.integrated_lufs());
        println!("{name}: M {m:?} S {s:?} I {i:?} LUFS, peak {:.2} RMS {:.2} dBFS", side.peak_db, side.rms_db());
        for (what, v) in [("momentary", m), ("short-term", s), ("integrated", i)] {
            let v = v.unwrap_or_else(|| panic!("{name}: no {what} loudness"));
            assert!((v - want).abs() <= 0.1, "{name} {what}: {v:.2} LUFS, want {want}");
        }
        // A sine's peak is its amplitude, its RMS 3.01 dB below.
        let peak = want as f32;
        assert!((side.peak_db - peak).abs() < 0.05, "{name} peak {:.3}", side.peak_db);
        assert!((side.rms_db() - (peak - 3.0103)).abs() < 0.05, "{name} RMS {:.3}", side.rms_db());
    }
    // The reset starts integration again.
    r.pause();
    r.harness.get_by_label("Reset loudness").click();
    r.harness.run();
    assert!(r.harness.state().loudness.input.integrated_lufs().is_none(), "nothing integrated after the reset");
}

#[test]
fn a_dynamic_bands_gain_now_is_drawn_on_its_curve_the_total_and_its_node() {
    let (mut r, mut audio, telemetry) = audio_rig();
    let (gui, params) = (r.gui.clone(), r.params.clone());
    let setter = gui.param_setter();
    let b = &params.bands[0];
    setter.set_parameter(&b.enabled, true);
    setter.set_parameter(&b.shape, ShapeChoice::Peak);
    setter.set_parameter(&b.freq_hz, 1000.0);
    setter.set_parameter(&b.gain_db, 6.0);
    setter.set_parameter(&b.q, 1.0);
    setter.set_parameter(&b.dyn_on, true);
    setter.set_parameter(&b.dyn_threshold_db, -40.0);
    setter.set_parameter(&b.dyn_ratio, 4.0);
    setter.set_parameter(&b.dyn_range_db, 12.0);
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 1.0);
    r.harness.run();
    let delta = telemetry.dynamic_gain_db()[0];
    assert!((-12.0..-1.0).contains(&delta), "the loud sine pulls the band down: {delta} dB");
    let resp = r.harness.state().last_responses.as_ref().expect("drawn");
    assert_eq!(resp.live_nodes.len(), 1, "{:?}", resp.live_nodes);
    let (i, f, set_db, now_db) = resp.live_nodes[0];
    assert_eq!(i, 0);
    assert!((f - 1000.0).abs() < 0.01 && (set_db - 6.0).abs() < 1e-4, "{f} Hz, {set_db} dB");
    assert!((now_db - (6.0 + delta)).abs() < 1e-4, "marker at {now_db}, gain now {}", 6.0 + delta);
    // The curve's peak (at the point nearest 1 kHz) is the bell at its gain now.
    let k = (0..resp.freqs_hz.len()).min_by(|&a, &b| (resp.freqs_hz[a].ln() - 1000f64.ln()).abs().total_cmp(&(resp.freqs_hz[b].ln() - 1000f64.ln()).abs())).unwrap();
    let band = &resp.bands.iter().find(|(j, _)| *j == 0).unwrap().1;
    for (what, v) in [("band", band[k]), ("total", resp.total_db[k])] {
        assert!((v - (6.0 + delta)).abs() < 0.15, "{what} curve at {:.0} Hz: {v} dB, gain now {}", resp.freqs_hz[k], 6.0 + delta);
    }
    // Dynamics off: no marker at once; the gain change releases to none.
    setter.set_parameter(&b.dyn_on, false);
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 0.1);
    r.harness.run();
    assert!(r.harness.state().last_responses.as_ref().unwrap().live_nodes.is_empty());
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 2.0);
    let after = telemetry.dynamic_gain_db()[0];
    assert!(after.abs() < 0.01, "released: {after} dB");
}
