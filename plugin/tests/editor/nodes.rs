//! Nodes on the curve: adding, dragging, the wheel, selection, undo; solo, band pairs,
//! bypassed bands.

use egui::{Event, Key, Modifiers, MouseWheelSource, MouseWheelUnit, PointerButton, TouchPhase};
use ferrofx_plugin::shared::bands::Shape;
use ferrofx_plugin::editor::nodes::{node_pos, Q_PER_WHEEL_LINE};
use ferrofx_plugin::control::params::{FerroParams, ShapeChoice};
use nice_plug::prelude::*;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;

use super::rig::*;

#[test]
fn double_click_adds_a_band_shaped_by_where() {
    let mut r = rig();
    let a = r.axes();
    // Middle of the view, 5 dB up: a bell there.
    let pos = a.pos(700.0, 5.0);
    r.double_click(pos);
    let b = r.params.bands[0].band();
    assert!(b.enabled, "the first free band was enabled");
    assert_eq!(b.shape, Shape::Peak);
    assert!(close(b.freq_hz, a.hz_at_x(pos.x), 1e-4), "{} vs {}", b.freq_hz, a.hz_at_x(pos.x));
    assert!((b.gain_db - 5.0).abs() < 0.02, "{}", b.gain_db);
    let log = r.host.take();
    for name in ["Band 1 On", "Band 1 Shape", "Band 1 Frequency", "Band 1 Gain"] {
        let kinds: Vec<char> = log.iter().filter(|e| e.1 == name).map(|e| e.0).collect();
        assert_eq!(kinds, ['b', 's', 'e'], "{name}: one gesture");
    }
    // Bottom left: a low cut (in the next free band); top right: a high cut.
    r.double_click(a.pos(25.0, -0.8 * a.range.db()));
    assert_eq!(r.params.bands[1].band().shape, Shape::LowCut);
    assert!(r.params.bands[1].band().enabled);
    r.double_click(a.pos(15_000.0, 0.8 * a.range.db()));
    assert_eq!(r.params.bands[2].band().shape, Shape::HighCut);
    // Double-clicking a node adds nothing.
    let node = node_pos(&a, &r.params.bands[0].band());
    r.double_click(node);
    assert!(!r.params.bands[3].enabled.value());
}

#[test]
fn dragging_a_node_moves_frequency_and_gain_along_the_axes() {
    let mut r = rig();
    r.peak(4, 1000.0, 3.0);
    let a = r.axes();
    let from = node_pos(&a, &r.params.bands[4].band());
    let d = egui::vec2(120.0, -40.0);
    r.drag(from, from + d, Modifiers::NONE);
    let b = r.params.bands[4].band();
    // One decade spans x_of(10 kHz) - x_of(1 kHz) points: the expected frequency is
    // 1 kHz times 10^(dx / decade); the gain moves by dy / (height / 2) * range.
    let decade = a.x_of_hz(10_000.0) - a.x_of_hz(1000.0);
    let want_hz = 1000.0 * 10f64.powf(f64::from(d.x / decade));
    let want_db = 3.0 + f64::from(-d.y / (a.rect.height() / 2.0) * a.range.db());
    assert!(close(b.freq_hz, want_hz, 1e-3), "{} vs {want_hz}", b.freq_hz);
    assert!((b.gain_db - want_db).abs() < 0.02, "{} vs {want_db}", b.gain_db);
    let log = r.host.take();
    let freq: Vec<char> = log.iter().filter(|e| e.1 == "Band 5 Frequency").map(|e| e.0).collect();
    assert_eq!(freq.first(), Some(&'b'));
    assert_eq!(freq.last(), Some(&'e'));
    assert!(freq[1..freq.len() - 1].iter().all(|&k| k == 's') && freq.len() > 3, "{freq:?}");

    // Shift: a tenth of the travel.
    let from = node_pos(&a, &b);
    r.drag(from, from + egui::vec2(100.0, 0.0), Modifiers::SHIFT);
    let fine = r.params.bands[4].band();
    let want = b.freq_hz * 10f64.powf(f64::from(10.0 / decade));
    assert!(close(fine.freq_hz, want, 1e-3), "{} vs {want}", fine.freq_hz);
}

#[test]
fn wheel_changes_q_and_delete_removes() {
    let mut r = rig();
    r.peak(2, 500.0, -4.0);
    let a = r.axes();
    let node = node_pos(&a, &r.params.bands[2].band());
    let q0 = f64::from(r.params.bands[2].q.value());
    r.harness.hover_at(node);
    r.harness.event(Event::MouseWheel {
        unit: MouseWheelUnit::Line,
        delta: egui::vec2(0.0, 3.0),
        phase: TouchPhase::Move,
        source: MouseWheelSource::Wheel,
        modifiers: Modifiers::NONE,
    });
    // egui smooths scrolling over a few frames; the editor reads the wheel events.
    r.harness.run_steps(30);
    let q = f64::from(r.params.bands[2].q.value());
    assert!(close(q, q0 * Q_PER_WHEEL_LINE.powi(3), 1e-4), "{q} vs {}", q0 * Q_PER_WHEEL_LINE.powi(3));

    r.click(node, PointerButton::Primary, Modifiers::NONE);
    r.harness.key_press(Key::Delete);
    r.harness.run();
    assert!(!r.params.bands[2].enabled.value(), "Delete removed the selected band");
}

#[test]
fn rubber_band_selects_and_moves_nodes_together() {
    let mut r = rig();
    r.peak(0, 200.0, 2.0);
    r.peak(1, 2000.0, -2.0);
    r.peak(2, 12_000.0, 0.0);
    let a = r.axes();
    // A rectangle around the first two nodes, from empty space.
    r.drag(a.pos(100.0, 5.0), a.pos(4000.0, -5.0), Modifiers::NONE);
    let selected = r.harness.state().nodes.selected;
    assert_eq!(&selected[..3], &[true, true, false]);
    let from = node_pos(&a, &r.params.bands[1].band());
    let decade = a.x_of_hz(10_000.0) - a.x_of_hz(1000.0);
    r.drag(from, from + egui::vec2(decade * 0.5, 0.0), Modifiers::NONE);
    let half_decade = 10f64.sqrt();
    assert!(close(r.params.bands[0].band().freq_hz, 200.0 * half_decade, 1e-3));
    assert!(close(r.params.bands[1].band().freq_hz, 2000.0 * half_decade, 1e-3));
    assert!(close(r.params.bands[2].band().freq_hz, 12_000.0, 1e-6), "unselected band stays");
}

#[test]
fn undo_restores_the_exact_previous_values_and_redo_reapplies() {
    let mut r = rig();
    r.peak(3, 1500.0, 4.5);
    let snapshot = |p: &FerroParams| -> Vec<f32> {
        p.bands.iter().flat_map(|b| [b.enabled.unmodulated_normalized_value(), b.shape.unmodulated_normalized_value(), b.freq_hz.unmodulated_normalized_value(), b.gain_db.unmodulated_normalized_value(), b.q.unmodulated_normalized_value(), b.slope_poles.unmodulated_normalized_value(), b.linkwitz_riley.unmodulated_normalized_value()]).collect()
    };
    let start = snapshot(&r.params);
    let a = r.axes();
    let from = node_pos(&a, &r.params.bands[3].band());
    r.drag(from, from + egui::vec2(-90.0, 35.0), Modifiers::NONE);
    let moved = snapshot(&r.params);
    assert_ne!(moved, start);
    r.double_click(a.pos(300.0, -3.0));
    let added = snapshot(&r.params);
    assert_ne!(added, moved);

    r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    r.harness.run();
    assert_eq!(snapshot(&r.params), moved, "undo of the add");
    r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    r.harness.run();
    assert_eq!(snapshot(&r.params), start, "undo of the drag: exactly the values before");
    r.harness.key_press_modifiers(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z);
    r.harness.run();
    assert_eq!(snapshot(&r.params), moved, "redo");
    // Undo goes through host gestures too.
    let log = r.host.take();
    assert!(log.iter().any(|e| e.0 == 'b' && e.1 == "Band 4 Frequency"));
}

#[test]
fn solo_from_the_node_menu_listens_through_the_cookbook_band_pass() {
    use ferrofx::chain::Biquad;
    use ferrofx::Engine;
    use ferrofx_plugin::audio::solo::SOLO_FADE_MS;
    let (mut r, mut audio, telemetry) = audio_rig();
    // The same plugin without solo, for the output after the fade-out.
    let (params2, mut audio2, telemetry2) = plain_audio();
    r.peak(3, 1000.0, 6.0);
    let setter = r.gui.param_setter();
    let (p, q) = (&params2.bands[3], &r.params.bands[3]);
    setter.set_parameter(&p.enabled, true);
    setter.set_parameter(&p.shape, ShapeChoice::Peak);
    setter.set_parameter(&p.freq_hz, q.freq_hz.value());
    setter.set_parameter(&p.gain_db, q.gain_db.value());

    // Right-click the band's node, pick Solo.
    let node = node_pos(&r.axes(), &r.params.bands[3].band());
    r.click(node, PointerButton::Secondary, Modifiers::NONE);
    r.harness.get_by_label("Solo (listen to this band)").click();
    r.harness.run();
    assert_eq!(r.params.solo.get(), Some(3));
    r.harness.get_by_label("Listening to band 4 (solo)");

    let band = r.params.bands[3].band();
    let input = ferrofx_testkit::noise_amp(48_000, 21, 0.5);
    let run = run_left;
    let (first, second) = input.split_at(24_000);
    let soloed = run(&mut audio, &r.params, &telemetry, first);
    let plain_first = run(&mut audio2, &params2, &telemetry2, first);
    // The reference: the core's cookbook band-pass (constant 0 dB peak) from rest.
    let designed = ferrofx::Chain::from(Biquad::bandpass(band.freq_hz, band.q)).design(48_000.0).unwrap();
    let mut engine = Engine::new(&designed, 1, 512);
    let mut reference = first.to_vec();
    for block in reference.chunks_mut(512) {
        engine.process(&mut [block]);
    }
    let fade = (SOLO_FADE_MS * 1e-3 * 48_000.0) as usize;
    let peak = reference.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = soloed[fade + 1..].iter().zip(&reference[fade + 1..]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(worst < 1e-4 * peak, "after the fade the output is the band-pass: worst {worst} of peak {peak}");
    assert!((soloed[fade / 2] - reference[fade / 2]).abs() > 1e-6, "half-way through the fade it is a mix");
    // The fade in steps no more than the signals on either side of it.
    let step = |v: &[f32]| v.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0f32, f32::max);
    let bound = step(&plain_first[..fade]).max(step(&reference[..fade]));
    assert!(step(&soloed[..fade + 1]) <= bound * 1.01, "{} vs {bound}", step(&soloed[..fade + 1]));

    // Stop listening: after the fade-out, exactly the output without solo.
    r.pause();
    r.harness.get_by_label("Stop listening").click();
    r.harness.run();
    assert_eq!(r.params.solo.get(), None);
    let after = run(&mut audio, &r.params, &telemetry, second);
    let plain = run(&mut audio2, &params2, &telemetry2, second);
    assert!(after[fade + 1..].iter().zip(&plain[fade + 1..]).all(|(a, b)| a == b), "the plugin's own output again");
    // Closing the editor ends a solo.
    r.params.solo.set(Some(3));
    nice_plug_egui::NiceEguiApp::editor_closed(r.harness.state_mut());
    assert_eq!(r.params.solo.get(), None);
}

#[test]
fn a_band_pair_with_equal_edges_stays_as_typed_with_the_contract_error() {
    let mut r = rig();
    r.add_stage("Butterworth");
    // Switch the response to band-pass: the cutoff becomes a pair around it.
    r.harness.get_by_value("lowpass").click();
    r.harness.run();
    r.harness.get_by_label("bandpass").click();
    r.harness.run();
    r.pause();
    let running = r.params.chain.json();
    assert!(running.contains("bandpass"), "{running}");
    // Both edges the same: refused, shown (in full and beside the field), and kept as
    // typed (not quietly spread into another band).
    r.harness.get_by_role_and_label(Role::SpinButton, "High (Hz)").set_value_accesskit(500.0);
    r.harness.run();
    r.harness.get_by_role_and_label(Role::SpinButton, "Low (Hz)").set_value_accesskit(500.0);
    r.harness.run();
    r.harness.run();
    assert_eq!(r.harness.get_all_by_label_contains("low must be below high").count(), 2);
    for edge in ["Low (Hz)", "High (Hz)"] {
        let shown = r.harness.get_by_role_and_label(Role::SpinButton, edge).value().unwrap().parse::<f64>().unwrap();
        assert_eq!(shown, 500.0, "{edge} stays as typed");
    }
    assert_eq!(r.params.chain.json(), running, "the running chain is unchanged");
}

/// A band bypassed from its node's menu stays on the curve (drawn, hit, draggable) and
/// in the host's parameters, stops acting on the audio (after the switch's cross-fade
/// the output is the plugin's without the band), is left out of the total curve, and is
/// undone like any edit; the band table's Bypass box (reached by its accessible name)
/// turns it back on.
#[test]
fn a_bypassed_band_keeps_its_node_and_stops_acting() {
    use ferrofx_plugin::editor::curve::responses;
    let (mut r, mut audio, telemetry) = audio_rig();
    // The same plugin without the band.
    let (params2, mut audio2, telemetry2) = plain_audio();
    r.peak(3, 1000.0, 9.0);
    let freq0 = r.params.bands[3].freq_hz.value();
    let run = run_left;
    let input = ferrofx_testkit::noise_amp(48_000, 33, 0.5);
    let (first, second) = input.split_at(24_000);
    let with_band = run(&mut audio, &r.params, &telemetry, first);
    let without = run(&mut audio2, &params2, &telemetry2, first);
    let differs = with_band.iter().zip(&without).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(differs > 0.05, "the +9 dB band acts before the bypass ({differs})");

    let node = node_pos(&r.axes(), &r.params.bands[3].band());
    r.click(node, PointerButton::Secondary, Modifiers::NONE);
    r.harness.get_by_label("Bypass (keep the band, don't apply it)").click();
    r.harness.run();
    let b = r.params.bands[3].band();
    assert!(b.enabled && b.bypassed, "in use and bypassed: {b:?}");
    let log = r.host.take();
    let kinds: Vec<char> = log.iter().filter(|e| e.1 == "Band 4 Bypass").map(|e| e.0).collect();
    assert_eq!(kinds, ['b', 's', 'e'], "one host gesture: {log:?}");

    // The audio: after the switch's cross-fade, the plugin without the band.
    let bypassed = run(&mut audio, &r.params, &telemetry, second);
    let plain = run(&mut audio2, &params2, &telemetry2, second);
    let settle = (0.05 * 48_000.0) as usize;
    let worst = bypassed[settle..].iter().zip(&plain[settle..]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(worst < 1e-6, "bypassed band still acts: {worst}");

    // The curve: the total leaves it out, its own curve is still there.
    let a = r.axes();
    let resp = responses(&a, &r.params.bands(), &r.params.dynamics(), &[0.0; 24], None, 0.0, 48_000.0, false, true, None);
    // In linear phase (4,096 taps) the same bands show a flat group delay of 2,048 samples.
    let lin = responses(&a, &r.params.bands(), &r.params.dynamics(), &[0.0; 24], None, 0.0, 48_000.0, true, true, Some(ferrofx_plugin::control::linear::FirMode::Linear { taps: 4096 }));
    for (f, gd) in lin.freqs_hz.iter().zip(&lin.group_delay_ms) {
        assert!((f64::from(*gd) - 2048.0 / 48.0).abs() < 0.05, "group delay at {f:.0} Hz: {gd} ms");
    }
    let at_1k = resp.freqs_hz.iter().enumerate().min_by(|x, y| (x.1.ln() - 1000f64.ln()).abs().total_cmp(&(y.1.ln() - 1000f64.ln()).abs())).unwrap().0;
    assert!(resp.total_db[at_1k].abs() < 0.2, "total at 1 kHz: {}", resp.total_db[at_1k]);
    let own = &resp.bands.iter().find(|(i, _)| *i == 3).expect("its own curve is kept").1;
    assert!(own[at_1k] > 8.0, "own curve at 1 kHz: {}", own[at_1k]);
    assert!(resp.bypassed[3]);

    // The node is still there: dragging it moves the band's frequency.
    let from = node_pos(&a, &b);
    r.drag(from, from + egui::vec2(60.0, 0.0), Modifiers::NONE);
    assert!(r.params.bands[3].freq_hz.value() > 1100.0, "{}", r.params.bands[3].freq_hz.value());

    // Undo twice: the drag, then the bypass.
    r.pause();
    r.harness.get_by_label("Undo").click();
    r.harness.run();
    r.pause();
    r.harness.get_by_label("Undo").click();
    r.harness.run();
    assert_eq!(r.params.bands[3].freq_hz.value(), freq0);
    assert!(!r.params.bands[3].bypassed.value(), "undo un-bypassed the band");

    // The band table: its Bypass box by name.
    r.pause();
    r.harness.get_by_label("Band table").click();
    r.harness.run();
    r.pause();
    r.harness.get_by_label("Band 4 Bypass").click();
    r.harness.run();
    assert!(r.params.bands[3].bypassed.value(), "the table's box bypassed it");
}

/// A key pressed and the frames it causes run.
fn press(r: &mut Rig, modifiers: Modifiers, key: Key) {
    r.harness.key_press_modifiers(modifiers, key);
    r.harness.run();
}

/// Each of `name`'s entries in the host log since the last take: gestures of one set each.
fn gestures(log: &[(char, String, f32)], name: &str) -> usize {
    let kinds: Vec<char> = log.iter().filter(|e| e.1 == name).map(|e| e.0).collect();
    assert!(kinds.chunks(3).all(|c| c == ['b', 's', 'e']), "{name}: {kinds:?}");
    kinds.len() / 3
}

/// The keyboard on a node: a click focuses the view; the arrows step the selected band's
/// frequency by a semitone and its gain by half a dB, Shift by a tenth of that, Alt with
/// up and down its Q by the wheel's step; each press is one host gesture; Escape leaves
/// the view and the arrows no longer reach the band.
#[test]
fn arrow_keys_step_frequency_gain_and_q_with_shift_for_fine_steps() {
    use ferrofx_plugin::editor::nodes::{KEY_DB, KEY_FINE, KEY_OCTAVES};
    let mut r = rig();
    r.peak(2, 500.0, -4.0);
    r.peak(5, 2000.0, 3.0);
    let node = node_pos(&r.axes(), &r.params.bands[2].band());
    r.click(node, PointerButton::Primary, Modifiers::NONE);
    r.host.take();
    let other = r.params.bands[5].band();
    let b0 = r.params.bands[2].band();

    for _ in 0..3 {
        press(&mut r, Modifiers::NONE, Key::ArrowRight);
    }
    press(&mut r, Modifiers::SHIFT, Key::ArrowLeft);
    let f = r.params.bands[2].band().freq_hz;
    let want = b0.freq_hz * (3.0 * KEY_OCTAVES - KEY_FINE * KEY_OCTAVES).exp2();
    assert!(close(f, want, 1e-4), "frequency {f} vs {want}");

    press(&mut r, Modifiers::NONE, Key::ArrowUp);
    press(&mut r, Modifiers::NONE, Key::ArrowUp);
    press(&mut r, Modifiers::SHIFT, Key::ArrowDown);
    let g = r.params.bands[2].band().gain_db;
    let want = b0.gain_db + f64::from(2.0 * KEY_DB - KEY_FINE as f32 * KEY_DB);
    assert!((g - want).abs() < 1e-3, "gain {g} vs {want}");

    press(&mut r, Modifiers::ALT, Key::ArrowUp);
    press(&mut r, Modifiers::ALT | Modifiers::SHIFT, Key::ArrowDown);
    let q = r.params.bands[2].band().q;
    let want = b0.q * Q_PER_WHEEL_LINE.powf(1.0 - KEY_FINE);
    assert!(close(q, want, 1e-4), "Q {q} vs {want}");
    let log = r.host.take();
    assert_eq!(gestures(&log, "Band 3 Frequency"), 4, "one gesture per press");
    assert_eq!(gestures(&log, "Band 3 Gain"), 3);
    assert_eq!(gestures(&log, "Band 3 Q"), 2);
    assert_eq!(r.params.bands[5].band(), other, "the band not selected stays");

    press(&mut r, Modifiers::NONE, Key::Escape);
    press(&mut r, Modifiers::NONE, Key::ArrowRight);
    assert!(close(r.params.bands[2].band().freq_hz, f, 1e-6), "after Escape the arrows leave the band alone");
    assert!(r.host.take().is_empty());
}

/// Tab reaches the view like any control, its first band selected; there Tab and
/// Shift+Tab step through the enabled bands (wrapping), the arrows move the one selected,
/// and Delete removes it.
#[test]
fn tab_reaches_the_view_and_steps_through_the_bands() {
    let mut r = rig();
    r.peak(3, 300.0, 2.0);
    r.peak(7, 1000.0, -2.0);
    r.peak(11, 5000.0, 1.0);
    let mut presses = 0;
    while !r.harness.state().nodes.selected.iter().any(|&s| s) {
        presses += 1;
        assert!(presses <= 200, "Tab never reached the response view");
        press(&mut r, Modifiers::NONE, Key::Tab);
    }
    let selected = |r: &Rig| (0..24).filter(|&i| r.harness.state().nodes.selected[i]).collect::<Vec<_>>();
    assert_eq!(selected(&r), [3], "the first enabled band, after {presses} Tabs");
    press(&mut r, Modifiers::NONE, Key::Tab);
    assert_eq!(selected(&r), [7]);
    press(&mut r, Modifiers::NONE, Key::Tab);
    assert_eq!(selected(&r), [11]);
    press(&mut r, Modifiers::NONE, Key::Tab);
    assert_eq!(selected(&r), [3], "Tab wraps");
    press(&mut r, Modifiers::SHIFT, Key::Tab);
    assert_eq!(selected(&r), [11], "Shift+Tab goes back");
    let before: Vec<_> = (0..24).map(|i| r.params.bands[i].band()).collect();
    press(&mut r, Modifiers::NONE, Key::ArrowUp);
    let g = r.params.bands[11].band().gain_db;
    assert!((g - 1.5).abs() < 1e-3, "the selected band's gain: {g}");
    for i in [3, 7] {
        assert_eq!(r.params.bands[i].band(), before[i]);
    }
    press(&mut r, Modifiers::NONE, Key::Delete);
    assert!(!r.params.bands[11].enabled.value(), "Delete removed it");
    assert!(r.params.bands[3].enabled.value() && r.params.bands[7].enabled.value());
}
