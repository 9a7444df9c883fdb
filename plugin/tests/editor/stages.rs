//! The chain stages panel: names for every input, contract errors, every stage type,
//! reordering, impulse-response files.

use egui::{Key, Modifiers, PointerButton, Pos2};
use ferrofx_plugin::editor::nodes::node_pos;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use ferrofx::chain::Elliptic;
use ferrofx::{Chain, StageKind};

use super::rig::*;

/// Every input widget on every tab, with a stage of every type and a few bands of every
/// shape, has an accessible name (what a screen reader announces; the harness also checks
/// this after each frame of the other tests).
#[test]
fn every_input_widget_on_every_tab_has_a_name() {
    use ferrofx_plugin::editor::stage_fields::ADDABLE;
    use ferrofx_plugin::editor::Tab;
    let mut r = rig();
    for (name, _) in ADDABLE {
        r.add_stage(name);
    }
    assert_eq!(r.chain().stages.len(), ADDABLE.len());
    r.peak(0, 100.0, 3.0);
    r.peak(1, 1000.0, -3.0);
    for tab in Tab::ALL {
        r.harness.state_mut().tab = tab;
        r.harness.state_mut().drawer = true;
        r.harness.run();
        let unnamed = r.harness.unnamed_widgets();
        assert!(unnamed.is_empty(), "{tab:?}: {unnamed:#?}");
    }
    // A node's menu, open.
    let a = r.axes();
    r.click(node_pos(&a, &r.params.bands[0].band()), PointerButton::Secondary, Modifiers::NONE);
    let unnamed = r.harness.unnamed_widgets();
    assert!(unnamed.is_empty(), "the node menu: {unnamed:#?}");
}

#[test]
fn an_elliptic_stage_with_an_invalid_cutoff_shows_the_contract_error_and_changes_nothing() {
    let mut r = rig();
    r.add_stage("Elliptic");
    let added = r.chain();
    assert_eq!(added.stages.len(), 1);
    let StageKind::Iir { family, .. } = &added.stages[0].kind else {
        panic!("{added:?}")
    };
    assert_eq!(family.name(), "elliptic");
    let running = r.params.chain.json();

    // 30 kHz is above Nyquist at 48 kHz: the contract refuses it.
    r.harness
        .get_by_role_and_label(Role::SpinButton, "Cutoff (Hz)")
        .set_value_accesskit(30_000.0);
    r.harness.run();
    let StageKind::Iir {
        family,
        response,
        order,
        ..
    } = added.stages[0].kind.clone()
    else {
        unreachable!()
    };
    let ferrofx::design::IirFamily::Elliptic {
        ripple_db,
        attenuation_db,
    } = family
    else {
        unreachable!()
    };
    let expected = match response {
        ferrofx::design::Response::Lowpass => {
            Elliptic::lowpass(30_000.0, order, ripple_db, attenuation_db)
        }
        _ => panic!("the default elliptic is a lowpass"),
    };
    let error = Chain::from(expected)
        .design(48_000.0)
        .expect_err("30 kHz at 48 kHz is refused")
        .to_string();
    assert!(
        error.contains("cutoff_hz") && error.contains("Nyquist"),
        "{error}"
    );
    r.harness.get_by_label_contains(&error);
    // And beside the field: the message without the stage prefix.
    let ferrofx::ChainError::Stage { message, .. } = Chain::from(Elliptic::lowpass(
        30_000.0,
        order,
        ripple_db,
        attenuation_db,
    ))
    .design(48_000.0)
    .unwrap_err() else {
        unreachable!()
    };
    r.harness.get_by_label(&message);
    assert_eq!(
        r.params.chain.json(),
        running,
        "the running chain is unchanged"
    );

    // Back in range: applied.
    r.harness
        .get_by_role_and_label(Role::SpinButton, "Cutoff (Hz)")
        .set_value_accesskit(5_000.0);
    r.harness.run();
    assert_eq!(
        r.chain(),
        Chain::from(Elliptic::lowpass(5_000.0, order, ripple_db, attenuation_db))
    );
    assert!(r.harness.query_by_label_contains("Not applied").is_none());
}

#[test]
fn every_stage_type_is_added_from_the_menu_and_runs() {
    let mut r = rig();
    let items = [
        "Butterworth",
        "Chebyshev I",
        "Chebyshev II",
        "Elliptic",
        "Bessel",
        "Linkwitz-Riley",
        "Biquad",
        "FIR (designed)",
        "Gain",
        "SOS (rows)",
    ];
    for item in items {
        r.add_stage(item);
    }
    let types: Vec<&str> = r
        .chain()
        .stages
        .iter()
        .map(|s| s.kind.type_name())
        .collect();
    assert_eq!(
        types,
        [
            "butterworth",
            "chebyshev1",
            "chebyshev2",
            "elliptic",
            "bessel",
            "linkwitz_riley",
            "biquad",
            "fir",
            "gain",
            "sos"
        ]
    );
    // What was installed designs at the session rate (the status says it runs).
    r.chain()
        .design(48_000.0)
        .expect("every default stage is valid");
}

#[test]
fn stages_are_reordered_by_dragging_disabled_deleted_and_undone() {
    let mut r = rig();
    for item in ["Gain", "Butterworth", "Biquad"] {
        r.add_stage(item);
    }
    let names = |r: &Rig| {
        r.chain()
            .stages
            .iter()
            .map(|s| s.kind.type_name())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&r), ["gain", "butterworth", "biquad"]);
    let before_drag = r.chain();

    // Drag the third stage's handle onto the first row.
    let handles: Vec<Pos2> = r
        .harness
        .get_all_by_label("Reorder")
        .map(|n| n.rect().center())
        .collect();
    assert_eq!(handles.len(), 3);
    r.drag(
        handles[2],
        handles[0] + egui::vec2(40.0, 0.0),
        Modifiers::NONE,
    );
    assert_eq!(names(&r), ["biquad", "gain", "butterworth"]);
    let mut expected = before_drag.clone();
    let moved = expected.stages.remove(2);
    expected.stages.insert(0, moved);
    assert_eq!(
        r.chain(),
        expected,
        "the stages themselves moved, unchanged"
    );

    // The arrows move one place.
    r.pause();
    r.harness.get_all_by_label("Down").next().unwrap().click();
    r.harness.run();
    assert_eq!(names(&r), ["gain", "biquad", "butterworth"]);

    // Disable the second stage: kept in the file, not run.
    r.pause();
    r.harness
        .get_all_by_role(Role::CheckBox)
        .filter(|n| n.rect().min.y > r.axes().rect.max.y)
        .nth(1)
        .unwrap()
        .click();
    r.harness.run();
    assert!(!r.chain().stages[1].enabled);
    assert!(
        r.chain.status().contains("2 chain stage(s)"),
        "{}",
        r.chain.status()
    );

    // Delete the first.
    r.pause();
    r.harness.get_all_by_label("×").next().unwrap().click();
    r.harness.run();
    assert_eq!(names(&r), ["biquad", "butterworth"]);

    // Undo walks back through each edit to the exact chain before the drag.
    for _ in 0..4 {
        r.pause();
        r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
        r.harness.run();
    }
    assert_eq!(r.chain(), before_drag);
}

#[test]
fn an_impulse_response_file_becomes_a_given_fir_stage() {
    let dir = std::env::temp_dir().join(format!("ferrofx-editor-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("room.wav");
    let mut rng = ferrofx_testkit::Rng::new(7);
    let taps: Vec<f32> = (0..777)
        .map(|i| (rng.unit() as f32 * 2.0 - 1.0) * (-(i as f32) / 200.0).exp())
        .collect();
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    for &t in &taps {
        w.write_sample(t).unwrap();
    }
    w.finalize().unwrap();

    let mut r = rig_with_file_dialog();
    r.harness.check_accessibility();
    r.add_stage("Biquad");
    r.add_stage("Impulse response file (FIR)…");
    // The dialog's file-name field takes a full path; Enter opens it.
    let field = r
        .harness
        .get_all_by_role(Role::TextInput)
        .last()
        .expect("the dialog's file field");
    field.focus();
    field.type_text(path.to_str().unwrap());
    r.harness.run();
    r.harness.key_press(Key::Enter);
    r.harness.run();
    r.pause();
    let chain = r.chain();
    assert_eq!(chain.stages.len(), 2, "{:?}", r.harness.state().stages.note);
    let StageKind::FirGiven { coefficients } = &chain.stages[1].kind else {
        panic!("{:?}", chain.stages[1])
    };
    let expected: Vec<f64> = taps.iter().map(|&t| f64::from(t)).collect();
    assert_eq!(coefficients.len(), expected.len());
    let first_difference = coefficients.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "the file's samples, exactly");
    assert_eq!(chain.stages[1].label.as_deref(), Some("room.wav"));
    r.harness.get_by_label("777 taps");
    // The dialog closed: every input widget of the editor has a name again.
    r.harness.check_accessibility();

    // A file at another rate is refused with a message and changes nothing.
    let other = dir.join("at44k.wav");
    let mut w = hound::WavWriter::create(
        &other,
        hound::WavSpec {
            sample_rate: 44_100,
            ..spec
        },
    )
    .unwrap();
    w.write_sample(1.0f32).unwrap();
    w.finalize().unwrap();
    let state = r.harness.state_mut();
    state
        .stages
        .add_impulse_response(&other, &r.params, 48_000.0);
    assert!(
        state.stages.note.contains("44100 Hz") && state.stages.note.contains("48000 Hz"),
        "{}",
        state.stages.note
    );
    assert_eq!(r.chain(), chain);
    let _ = std::fs::remove_dir_all(&dir);
}
