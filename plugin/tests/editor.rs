//! The editor driven as a user would (egui_kittest feeding pointer, wheel and key events
//! to the editor's own app object), with a host context that applies parameter changes
//! and records the gestures. Expected values come from the view's coordinate mapping
//! (a log frequency axis and a linear dB axis), not from the editor's own arithmetic.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use egui::{Event, Key, Modifiers, MouseWheelSource, MouseWheelUnit, PointerButton, Pos2, TouchPhase};
use egui_kittest::Harness;
use ferrofx_plugin::shared::bands::Shape;
use ferrofx_plugin::editor::nodes::{node_pos, Q_PER_WHEEL_LINE};
use ferrofx_plugin::editor::EditorApp;
use ferrofx_plugin::control::params::{FerroParams, ShapeChoice};
use ferrofx_plugin::control::chain::ChainSlot;
use ferrofx_plugin::shared::telemetry::Telemetry;
use nice_plug::context::gui::{GuiContext, GuiContextInner};
use nice_plug::context::PluginApi;
use nice_plug::params::internals::ParamPtr;
use nice_plug::plugin::PluginState;
use nice_plug::prelude::*;

/// What the host saw: (kind, parameter name, normalised value) with kind `b`egin,
/// `s`et or `e`nd.
#[derive(Default)]
struct Host {
    log: Mutex<Vec<(char, String, f32)>>,
}

impl Host {
    fn take(&self) -> Vec<(char, String, f32)> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl GuiContextInner for Host {
    fn plugin_api(&self) -> PluginApi {
        PluginApi::Clap
    }
    unsafe fn raw_begin_set_parameter(&self, param: ParamPtr) {
        // SAFETY: the parameters outlive the test's editor (both held by the test).
        let name = unsafe { param.name() }.to_string();
        self.log.lock().unwrap().push(('b', name, 0.0));
    }
    unsafe fn raw_set_parameter_normalized(&self, param: ParamPtr, normalized: f32) {
        // SAFETY: as above; the host applies the value as a wrapper would.
        let name = unsafe {
            param._internal_set_normalized_value(normalized);
            param.name()
        }
        .to_string();
        self.log.lock().unwrap().push(('s', name, normalized));
    }
    unsafe fn raw_end_set_parameter(&self, param: ParamPtr) {
        // SAFETY: as above.
        let name = unsafe { param.name() }.to_string();
        self.log.lock().unwrap().push(('e', name, 0.0));
    }
    fn get_state(&self) -> PluginState {
        PluginState { version: String::new(), params: Default::default(), fields: Default::default() }
    }
    fn set_state(&self, _state: PluginState) {}
    fn request_restart(&self) {}
}

struct Rig {
    harness: Harness<'static, EditorApp>,
    params: Arc<FerroParams>,
    chain: ChainSlot,
    host: Arc<Host>,
    gui: GuiContext,
}

fn rig() -> Rig {
    rig_with(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()))
}

fn rig_with(params: Arc<FerroParams>, telemetry: Arc<Telemetry>) -> Rig {
    rig_rendered(params, telemetry, false)
}

/// With `wgpu`, the harness can render the editor to an image. The harness checks after
/// every frame that each input widget has an accessible name (a screen reader's, and the
/// tests' way of finding it).
fn rig_rendered(params: Arc<FerroParams>, telemetry: Arc<Telemetry>, wgpu: bool) -> Rig {
    rig_built(params, None, telemetry, wgpu, true)
}

/// A rig whose harness does not check accessible names after each frame: for tests that
/// open the file dialog (egui_file's path and file-name fields have no names; it is a
/// third-party widget). Such a test calls `check_accessibility` itself once it is closed.
fn rig_with_file_dialog() -> Rig {
    rig_built(Arc::new(FerroParams::default()), None, Arc::new(Telemetry::default()), false, false)
}

/// An editor rig; `chain` is the chain slot of an audio state on the same parameters
/// (one slot builds a chain file), else the editor gets a slot of its own.
fn rig_built(params: Arc<FerroParams>, chain: Option<ChainSlot>, telemetry: Arc<Telemetry>, wgpu: bool, a11y_check: bool) -> Rig {
    telemetry.sample_rate_bits.store(48_000f32.to_bits(), Ordering::Relaxed);
    telemetry.channels.store(2, Ordering::Relaxed);
    telemetry.max_block_frames.store(512, Ordering::Relaxed);
    let host = Arc::new(Host::default());
    let gui = GuiContext::new(host.clone());
    let chain = chain.unwrap_or_else(|| ChainSlot::new(&params.chain));
    let app_chain = chain.clone();
    let mut app = EditorApp::new(params.clone(), chain, telemetry);
    app.attach(gui.clone());
    let mut builder = Harness::builder();
    if wgpu {
        builder = builder.wgpu();
    }
    let mut harness = builder
        .with_size(if wgpu { [1000.0, 720.0] } else { [920.0, 1000.0] })
        .with_step_dt(1.0 / 60.0)
        .with_accessibility_check(a11y_check)
        .build_ui_state(|ui, app: &mut EditorApp| app.show(ui), app);
    harness.run();
    Rig { harness, params, chain: app_chain, host, gui }
}

impl Rig {
    fn axes(&self) -> ferrofx_plugin::editor::axes::Axes {
        self.harness.state().axes().expect("the view was drawn")
    }
    /// Lets half a second pass, so that clicks before are not counted with the next ones.
    fn pause(&mut self) {
        self.harness.run_steps(30);
    }
    fn click(&mut self, pos: Pos2, button: PointerButton, modifiers: Modifiers) {
        self.pause();
        self.harness.hover_at(pos);
        for pressed in [true, false] {
            self.harness.event(Event::PointerButton { pos, button, pressed, modifiers });
        }
        self.harness.run();
    }
    fn double_click(&mut self, pos: Pos2) {
        self.pause();
        self.harness.hover_at(pos);
        for pressed in [true, false, true, false] {
            self.harness.event(Event::PointerButton { pos, button: PointerButton::Primary, pressed, modifiers: Modifiers::NONE });
        }
        self.harness.run();
    }
    fn drag(&mut self, from: Pos2, to: Pos2, modifiers: Modifiers) {
        self.harness.hover_at(from);
        self.harness.event(Event::PointerButton { pos: from, button: PointerButton::Primary, pressed: true, modifiers });
        for k in 1..=10 {
            self.harness.event_modifiers(Event::PointerMoved(from + (to - from) * (k as f32 / 10.0)), modifiers);
        }
        self.harness.event(Event::PointerButton { pos: to, button: PointerButton::Primary, pressed: false, modifiers });
        self.harness.run();
    }
    /// A Peak band at `freq_hz`/`gain_db` in band slot `i`, set as a host would.
    fn peak(&mut self, i: usize, freq_hz: f32, gain_db: f32) {
        let setter = self.gui.param_setter();
        let bp = &self.params.bands[i];
        setter.set_parameter(&bp.enabled, true);
        setter.set_parameter(&bp.shape, ShapeChoice::Peak);
        setter.set_parameter(&bp.freq_hz, freq_hz);
        setter.set_parameter(&bp.gain_db, gain_db);
        self.harness.run();
        self.host.take();
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

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

// ---- The chain stages panel ----

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use ferrofx::chain::Elliptic;
use ferrofx::{Chain, StageKind};

impl Rig {
    /// Opens the "Add stage" menu and picks `item`.
    fn add_stage(&mut self, item: &str) {
        self.pause();
        self.harness.get_by_label("Add stage").click();
        self.harness.run();
        self.harness.get_by_label(item).click();
        self.harness.run();
        self.pause();
    }
    fn chain(&self) -> Chain {
        self.params.chain.chain()
    }
}

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

// ---- Analyser, engine panel, meters ----

use ferrofx_plugin::audio::state::{AudioState, LatencyPolicy};
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::AudioConfig;
use ferrofx_plugin::editor::analyser::Mode;
use ferrofx_plugin::shared::spectrum::HOP;

/// The plugin's audio-thread state at 48 kHz stereo, and an editor on the same
/// parameters and telemetry.
fn audio_rig() -> (Rig, AudioState, Arc<Telemetry>) {
    let params = Arc::new(FerroParams::default());
    let (telemetry, taps) = connect();
    let telemetry = Arc::new(telemetry);
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    let config = AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false };
    audio.activate(&params, config, None, None, 0, LatencyPolicy::Restart);
    (rig_built(params, Some(audio.chain().clone()), telemetry.clone(), false, true), audio, telemetry)
}

/// `seconds` of a sine at `freq_hz` through the plugin, the editor drawing between
/// windows as it would.
fn play_sine(r: &mut Rig, audio: &mut AudioState, telemetry: &Telemetry, freq_hz: f64, amplitude: f32, seconds: f64) {
    let frames = (48_000.0 * seconds) as usize;
    let mut n = 0;
    while n < frames {
        let mut l: Vec<f32> = (n..n + 512).map(|i| amplitude * (2.0 * std::f64::consts::PI * freq_hz * i as f64 / 48_000.0).sin() as f32).collect();
        let mut rr = l.clone();
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(&r.params, telemetry, &mut bufs, None, 512);
        n += 512;
        if n % HOP < 512 {
            r.harness.run();
        }
    }
}

#[test]
fn the_analyser_shows_a_test_sine_at_its_frequency() {
    let twelfth = 2f64.powf(1.0 / 12.0);
    for freq_hz in [45.0, 1234.0, 9_876.0, 19_000.0] {
        let (mut r, mut audio, telemetry) = audio_rig();
        assert!(telemetry.spectrum.is_wanted(), "the open editor asks for windows");
        play_sine(&mut r, &mut audio, &telemetry, freq_hz, 0.5, 1.0);
        let a = &r.harness.state().analyser;
        let peak = f64::from(a.peak_hz().expect("the analyser has data"));
        assert!(peak > freq_hz / twelfth && peak < freq_hz * twelfth, "{freq_hz} Hz shown at {peak} Hz");
        // Far from the tone the level is far below it (the window's sidelobes are low).
        let at = |f: f64| {
            let i = a.freqs_hz.iter().position(|&x| f64::from(x) >= f).unwrap();
            a.post_db[i]
        };
        let top = a.post_db.iter().cloned().fold(f32::MIN, f32::max);
        let far = if freq_hz < 1000.0 { freq_hz * 8.0 } else { freq_hz / 8.0 };
        assert!(top - at(far) > 60.0, "{freq_hz} Hz: {top} dB at the tone, {} dB three octaves away", at(far));
    }
    // The analyser off: the audio thread stops copying (no new window arrives).
    let (mut r, mut audio, telemetry) = audio_rig();
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 0.2);
    r.harness.state_mut().analyser.mode = Mode::Off;
    r.harness.run();
    assert!(!telemetry.spectrum.is_wanted());
    let before = {
        let mut out = telemetry.spectrum.output.lock().unwrap();
        out.update();
        out.output_buffer().seq
    };
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 0.5);
    let mut out = telemetry.spectrum.output.lock().unwrap();
    out.update();
    assert_eq!(out.output_buffer().seq, before, "no window while the analyser is off");
}

#[test]
fn the_engine_panel_and_meters_show_the_given_figures() {
    let (telemetry, mut taps) = connect();
    let telemetry = Arc::new(telemetry);
    let mut r = rig_with(Arc::new(FerroParams::default()), telemetry.clone());
    // Ten blocks of 512 frames at 48 kHz (10.667 ms each) taking 1 % .. 10 % of that.
    let budget_ns = 512.0 / 48_000.0 * 1e9;
    for k in 1..=10u64 {
        let ns = (budget_ns * k as f64 / 100.0).round() as u64;
        taps.process_times.push((ns << 32) | 512).unwrap();
    }
    telemetry.latency_samples.store(1024, Ordering::Relaxed);
    telemetry.channels.store(2, Ordering::Relaxed);
    let g = &telemetry.gpu;
    g.block_frames.store(1024, Ordering::Relaxed);
    g.route_gpu.store(true, Ordering::Relaxed);
    g.on_worker.store(4321, Ordering::Relaxed);
    g.on_cpu.store(12, Ordering::Relaxed);
    g.late.store(3, Ordering::Relaxed);
    ferrofx_plugin::audio::output::meter(&telemetry.meters[0], &vec![0.5; 4_800]);
    ferrofx_plugin::audio::output::meter(&telemetry.meters[1], &vec![0.25; 4_800]);
    telemetry.clipped.store(true, Ordering::Relaxed);
    r.harness.run();
    r.harness.get_by_label("process 5.5 % median, 10.0 % worst of real time (last 1 s, 10 blocks)");
    r.harness.get_by_label_contains("latency 1024 samples (21.33 ms)");
    r.harness.get_by_label_contains("blocks GPU 4321 CPU 12 late 3");
    assert!(ferrofx_plugin::editor::gpu_line(&r.params, &telemetry).starts_with("GPU ("), "the GPU route is named first");
    r.harness.get_by_label("peak -6.0 dB");
    let (peak, rms) = r.harness.state().meters.levels(1);
    assert!((peak - -12.04).abs() < 0.05, "{peak}");
    assert!(rms < peak + 1e-3 && rms > -40.0, "{rms}");
    // The clip light stays on until clicked.
    r.pause();
    r.harness.get_by_label("CLIP").click();
    r.harness.run();
    assert!(!telemetry.clipped.load(Ordering::Relaxed));
}

// ---- The audio thread never waits for the editor ----

#[test]
fn the_audio_thread_never_allocates_or_waits_while_the_editor_is_driven() {
    use nice_assert_no_alloc::{assert_no_alloc, violation_count};
    use nice_plug_egui::NiceEguiApp;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    let (mut r, mut audio, telemetry) = audio_rig();
    assert!(telemetry.spectrum.is_wanted());
    let params = r.params.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let blocks_done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let audio_thread = {
        let (stop, blocks_done, telemetry) = (stop.clone(), blocks_done.clone(), telemetry.clone());
        std::thread::spawn(move || {
            let before = violation_count();
            let (mut l, mut rr) = (vec![0.0f32; 256], vec![0.0f32; 256]);
            let mut worst = Duration::ZERO;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (i, (a, b)) in l.iter_mut().zip(rr.iter_mut()).enumerate() {
                    let t = (n as usize * 256 + i) as f32 / 48_000.0;
                    *a = 0.3 * (2.0 * std::f32::consts::PI * 440.0 * t).sin();
                    *b = 0.3 * (2.0 * std::f32::consts::PI * 3000.0 * t).sin();
                }
                let started = Instant::now();
                assert_no_alloc(|| {
                    let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
                    audio.process(&params, &telemetry, &mut bufs, None, 256);
                });
                worst = worst.max(started.elapsed());
                assert!(l.iter().chain(&rr).all(|v| v.is_finite()));
                n += 1;
                blocks_done.store(n, Ordering::Relaxed);
            }
            (violation_count() - before, n, worst)
        })
    };
    let wait_for = |blocks: u64| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while blocks_done.load(Ordering::Relaxed) < blocks {
            assert!(Instant::now() < deadline, "the audio thread stalled at block {}", blocks_done.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(1));
        }
    };

    // The editor sits on its ends of the hand-overs (as a stalled GUI thread would):
    // the analyser's buffer and the processing-time ring fill up; audio goes on.
    {
        let _analyser = telemetry.spectrum.output.lock().unwrap();
        let _times = telemetry.process_times.lock().unwrap();
        let from = blocks_done.load(Ordering::Relaxed);
        wait_for(from + 3_000);
    }

    // The editor driven: stages added and edited (chains built and handed over), nodes
    // dragged and added, undo, the analyser switched, the editor closed and reopened.
    for item in ["Elliptic", "FIR (designed)", "Gain"] {
        r.add_stage(item);
        wait_for(blocks_done.load(Ordering::Relaxed) + 50);
    }
    r.peak(2, 700.0, 4.0);
    let a = r.axes();
    let from = node_pos(&a, &r.params.bands[2].band());
    r.drag(from, from + egui::vec2(120.0, -40.0), Modifiers::NONE);
    r.double_click(a.pos(3000.0, -5.0));
    r.harness.get_all_by_role_and_label(Role::SpinButton, "Cutoff (Hz)").next().unwrap().set_value_accesskit(2_500.0);
    r.harness.run();
    for _ in 0..3 {
        r.pause();
        r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
        r.harness.run();
    }
    r.harness.state_mut().analyser.mode = Mode::PrePost;
    r.harness.run();
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);
    r.harness.state_mut().editor_closed();
    assert!(!telemetry.spectrum.is_wanted(), "closed: no more copies");
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);
    let gui = r.gui.clone();
    r.harness.state_mut().attach(gui);
    r.harness.run();
    assert!(telemetry.spectrum.is_wanted(), "reopened");
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);

    stop.store(true, Ordering::Relaxed);
    let (violations, blocks, worst) = audio_thread.join().unwrap();
    assert_eq!(violations, 0, "allocations on the audio thread");
    assert!(blocks > 4_000, "{blocks} blocks");
    // Not a timing test: a block is 5.3 ms of audio; a wait on the editor would be
    // the length of the locks held above (seconds).
    println!("{blocks} blocks, worst {worst:?}");
}

// ---- A/B and presets ----

fn band_values(p: &FerroParams) -> Vec<f32> {
    p.bands
        .iter()
        .flat_map(|b| [b.enabled.unmodulated_normalized_value(), b.shape.unmodulated_normalized_value(), b.freq_hz.unmodulated_normalized_value(), b.gain_db.unmodulated_normalized_value(), b.q.unmodulated_normalized_value()])
        .chain([p.output_gain_db.unmodulated_normalized_value()])
        .collect()
}

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

// ---- Rendered snapshots ----

/// Renders the editor in four states (wgpu; lavapipe on machines without a GPU) and
/// checks each picture is a drawn editor. `FERROFX_UPDATE_SNAPSHOTS=1` writes them to
/// `docs/editor/` (the images the README shows).
#[test]
fn rendered_snapshots_of_four_states() {
    use ferrofx_plugin::editor::presets::{apply, FACTORY};
    use ferrofx_plugin::editor::Tab;
    let out_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/editor");
    let update = std::env::var_os("FERROFX_UPDATE_SNAPSHOTS").is_some();
    let mut shots = Vec::new();

    // 1. Empty.
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    r.harness.run();
    shots.push(("empty", r));

    // 2. A six-band mastering curve (the factory preset), band table shown.
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    apply(&Chain::from_json(FACTORY[0].1).unwrap(), &r.params, &r.gui.param_setter(), 48_000.0).unwrap();
    r.harness.state_mut().tab = Tab::Bands;
    r.harness.run();
    shots.push(("mastering-6-band", r));

    // 2b. The same curve with a band on the side and one on the left, a dynamic band,
    // auto gain and linear phase chosen (the status row shows them; routed bands carry their letter).
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    let setter = r.gui.param_setter();
    apply(&Chain::from_json(FACTORY[0].1).unwrap(), &r.params, &setter, 48_000.0).unwrap();
    let enabled: Vec<usize> = (0..24).filter(|&i| r.params.bands[i].enabled.value()).collect();
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[1]].route, ferrofx_plugin::control::params::RouteChoice::Side);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[2]].route, ferrofx_plugin::control::params::RouteChoice::Left);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.auto_gain, ferrofx_plugin::control::params::AutoGainChoice::Pink);
    // And one dynamic band (its dashed curve shows how far its 6 dB range takes it).
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[3]].dyn_on, true);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.phase, ferrofx_plugin::control::params::PhaseChoice::Linear16384);
    r.harness.run();
    shots.push(("mastering-routed", r));

    // 3. Chain stages: an elliptic band limit and an impulse response, group delay shown.
    let dir = std::env::temp_dir().join(format!("ferrofx-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ir = dir.join("plate.wav");
    let spec = hound::WavSpec { channels: 1, sample_rate: 48_000, bits_per_sample: 32, sample_format: hound::SampleFormat::Float };
    let mut w = hound::WavWriter::create(&ir, spec).unwrap();
    let noise = ferrofx_testkit::noise(2_400, 11);
    for (i, &v) in noise.iter().enumerate() {
        w.write_sample(if i == 0 { 1.0 } else { 0.05 * v * (-(i as f32) / 300.0).exp() }).unwrap();
    }
    w.finalize().unwrap();
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    r.peak(0, 120.0, 2.0);
    r.add_stage("Elliptic");
    r.harness.state_mut().stages.add_impulse_response(&ir, &r.params, 48_000.0);
    r.harness.state_mut().overlay = ferrofx_plugin::editor::curve::Overlay::GroupDelay;
    r.harness.run();
    assert_eq!(r.chain().stages.len(), 2);
    shots.push(("chain-elliptic-ir", r));

    // 4. The analyser on noise through the mastering curve, input and output.
    let (mut r, mut audio, telemetry) = {
        let params = Arc::new(FerroParams::default());
        let (telemetry, taps) = connect();
        let telemetry = Arc::new(telemetry);
        let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
        audio.activate(&params, AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false }, None, None, 0, LatencyPolicy::Restart);
        (rig_built(params, Some(audio.chain().clone()), telemetry.clone(), true, true), audio, telemetry)
    };
    apply(&Chain::from_json(FACTORY[0].1).unwrap(), &r.params, &r.gui.param_setter(), 48_000.0).unwrap();
    r.harness.state_mut().analyser.mode = Mode::PrePost;
    r.harness.state_mut().analyser.tilt = true;
    r.harness.run();
    for k in 0..200u64 {
        let mut l = ferrofx_testkit::noise_amp(512, 2 * k + 1, 0.25);
        let mut rr = ferrofx_testkit::noise_amp(512, 2 * k + 2, 0.25);
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(&r.params, &telemetry, &mut bufs, None, 512);
        if k % 4 == 3 {
            r.harness.run();
        }
    }
    shots.push(("analyser-noise", r));

    for (name, mut r) in shots {
        let image = match r.harness.render() {
            Ok(image) => image,
            Err(e) => {
                println!("skipped: no wgpu adapter to render the editor ({e}); install mesa-vulkan-drivers");
                return;
            }
        };
        let mut colours = std::collections::HashSet::new();
        for p in image.pixels() {
            colours.insert(p.0);
        }
        assert!(colours.len() > 200, "{name}: a drawn editor has many colours, this has {}", colours.len());
        if update {
            std::fs::create_dir_all(&out_dir).unwrap();
            image.save(out_dir.join(format!("{name}.png"))).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Another plugin's audio side at 48 kHz stereo, no editor: the reference the solo and
/// bypass tests compare with.
fn plain_audio() -> (Arc<FerroParams>, AudioState, Telemetry) {
    let params = Arc::new(FerroParams::default());
    let (telemetry, taps) = connect();
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    audio.activate(&params, AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false }, None, None, 0, LatencyPolicy::Restart);
    (params, audio, telemetry)
}

/// `x` on both channels through `audio` in blocks of 512; the left channel's output.
fn run_left(audio: &mut AudioState, params: &FerroParams, telemetry: &Telemetry, x: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for block in x.chunks(512) {
        let (mut l, mut rr) = (block.to_vec(), block.to_vec());
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(params, telemetry, &mut bufs, None, block.len());
        out.extend_from_slice(&l);
    }
    out
}

// ---- Band solo ----

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
    let resp = responses(&a, &r.params.bands(), &r.params.dynamics(), None, 0.0, 48_000.0, false, true, None);
    // In linear phase (4,096 taps) the same bands show a flat group delay of 2,048 samples.
    let lin = responses(&a, &r.params.bands(), &r.params.dynamics(), None, 0.0, 48_000.0, true, true, Some(4096));
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
