//! The egui editor. The response view is the interface and takes most of the window:
//! each band is a node to drag, wheel or right-click, double-click adds one, and the
//! selected band's controls float beside its node; the curve shows every band and the
//! total of everything the plugin runs (bands, chain stages, output gain) over the
//! analyser's spectrum. Above it one bar of global controls (bypass, output, phase, undo,
//! A/B, the engine's settings and the view's in menus); below it a drawer that opens
//! and closes (chain stages, band table, presets), the status line (route, latency,
//! format, processing time) and the meters.
//!
//! One widget per file: [`axes`] (coordinates), [`curve`] (responses and their picture),
//! [`nodes`] (band nodes and their gestures), [`analyser`] (spectrum), [`stages`] and
//! [`stage_fields`] (chain stages panel), [`presets`] (factory/user presets and files),
//! [`files`] (file dialog), [`history`] (undo), [`ab`] (A/B slots), [`status`] (engine
//! line), [`load`] (processing time), [`meters`] (output meters), [`table`] (band
//! table); [`edits`] holds the host-gesture helpers they share. The editor reads
//! parameters and the audio thread's [`Telemetry`], changes parameters only through the
//! host's parameter API, and never makes the audio thread wait: what the audio thread
//! hands over goes through atomics and lock-free rings whose editor ends only the editor
//! locks.

pub mod analyser;
pub mod ab;
pub mod axes;
pub mod curve;
pub mod edits;
pub mod files;
pub mod history;
pub mod load;
pub mod loudness;
pub mod meters;
pub mod nodes;
pub mod presets;
pub mod stage_fields;
pub mod stages;
pub mod status;
pub mod table;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use egui::{Key, Modifiers, Vec2};
use nice_plug::context::gui::GuiContext;
use nice_plug::prelude::*;
use nice_plug_egui::{create_egui_editor, EguiEditor, EguiNiceSettings, NiceEguiApp, RepaintNotifier};

use crate::control::chain::ChainSlot;
use crate::control::params::FerroParams;
use crate::shared::telemetry::Telemetry;

pub use status::gpu_line;

/// The response view's least height in points (the window's least size keeps it).
pub const MIN_VIEW_HEIGHT: f32 = 200.0;

/// The drawer's share of the window's height when open.
pub const DRAWER_SHARE: f32 = 0.4;

/// The panels below the response view, one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Stages,
    Bands,
    Files,
}

impl Tab {
    pub const ALL: [Tab; 3] = [Tab::Stages, Tab::Bands, Tab::Files];
    pub fn title(self) -> &'static str {
        match self {
            Tab::Stages => "Chain stages",
            Tab::Bands => "Band table",
            Tab::Files => "Presets",
        }
    }
}

/// Editor state (GUI thread only).
pub struct EditorApp {
    params: Arc<FerroParams>,
    /// The chain stages' builder: its status lines, and what the audio thread returned.
    chain: ChainSlot,
    telemetry: Arc<Telemetry>,
    gui: Option<GuiContext>,
    pub presets: presets::PresetsPanel,
    pub ab: ab::AbSlots,
    pub nodes: nodes::Nodes,
    pub stages: stages::StagesPanel,
    pub analyser: analyser::Analyser,
    pub meters: meters::Meters,
    pub loudness: loudness::Loudness,
    pub load: load::Load,
    pub tab: Tab,
    /// Whether the drawer (the panels of [`Tab`]) is open; closed by default, so the
    /// response view has the window.
    pub drawer: bool,
    /// A press that began on the view is held (a node dragged, a selection drawn): the
    /// floating band controls wait for its end rather than sit under the pointer.
    view_pressed: bool,
    pub history: history::History,
    pub range: axes::DbRange,
    /// The chain's response at the view's frequencies (`None`: it does not design), keyed
    /// by (chain revision, rate, view left edge and width, group delay wanted).
    #[allow(clippy::type_complexity)]
    chain_h: Option<((u64, f32, f32, f32, bool), Option<Vec<num_complex::Complex64>>)>,
    /// What the view drew last (for tests and the status line).
    pub last_responses: Option<curve::Responses>,
    /// Phase or group delay over the magnitudes.
    pub overlay: curve::Overlay,
    /// The response view's coordinates in the last frame drawn.
    axes: Option<axes::Axes>,
    /// What could not be done, for the user.
    pub message: String,
}

pub fn create(params: Arc<FerroParams>, chain: ChainSlot, telemetry: Arc<Telemetry>) -> Option<EguiEditor<EditorApp>> {
    let state = params.editor_size.state();
    create_egui_editor(
        state,
        RepaintNotifier::new(),
        EguiNiceSettings::new()
            .with_tile("FerroFX")
            // Resizable (nice-plug's default is a fixed window, under which the corner's
            // and a loaded session's size requests were silently ignored), down to the
            // smallest size the layout holds.
            .with_resize_hint(nice_plug::editor::ResizeHint::resizable().with_min_logical_size(
                nice_plug::editor::dpi::LogicalSize::new(crate::control::editor_size::MIN_SIZE.0, crate::control::editor_size::MIN_SIZE.1),
            ))
            .with_repaint_poll_interval(std::time::Duration::from_millis(100)),
        EditorApp::new(params, chain, telemetry),
    )
}

impl EditorApp {
    pub fn new(params: Arc<FerroParams>, chain: ChainSlot, telemetry: Arc<Telemetry>) -> EditorApp {
        EditorApp {
            params,
            chain,
            telemetry,
            gui: None,
            presets: presets::PresetsPanel::default(),
            ab: ab::AbSlots::default(),
            nodes: nodes::Nodes::default(),
            stages: stages::StagesPanel::default(),
            analyser: analyser::Analyser::default(),
            meters: meters::Meters::default(),
            loudness: loudness::Loudness::default(),
            load: load::Load::default(),
            tab: Tab::Stages,
            drawer: false,
            view_pressed: false,
            history: history::History::default(),
            range: axes::DbRange::default(),
            axes: None,
            chain_h: None,
            last_responses: None,
            overlay: curve::Overlay::None,
            message: String::new(),
        }
    }

    /// Connects the editor to the host (the plugin wrapper's context, or a test's).
    pub fn attach(&mut self, gui: GuiContext) {
        self.gui = Some(gui);
    }

    /// The response view's coordinates as last drawn.
    pub fn axes(&self) -> Option<axes::Axes> {
        self.axes
    }

    fn sample_rate(&self) -> f32 {
        let fs = f32::from_bits(self.telemetry.sample_rate_bits.load(Ordering::Relaxed));
        if fs > 0.0 {
            fs
        } else {
            48_000.0
        }
    }

    /// Computes the chain stages' response at the view's frequencies when the chain, the
    /// rate or the view changed (a million-tap FIR costs seconds per evaluation).
    fn refresh_chain_response(&mut self, fs: f32, axes: &axes::Axes, group_delay: bool) {
        let key = (self.params.chain.revision(), fs, axes.rect.left(), axes.rect.width(), group_delay);
        if self.chain_h.as_ref().map(|(k, _)| *k) != Some(key) {
            let designed = self.params.chain.chain().design(f64::from(fs)).ok();
            let h = designed.map(|c| curve::chain_response(&c, &curve::eval_freqs(axes, f64::from(fs), group_delay)));
            self.chain_h = Some((key, h));
        }
    }

    /// The whole editor, one frame.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        let Some(gui) = self.gui.clone() else { return };
        let setter = gui.param_setter();
        let pressed = ui.input(|i| i.pointer.any_pressed() || i.events.iter().any(|e| matches!(e, egui::Event::Key { pressed: true, .. })));
        self.history.before_frame(&self.params, pressed);
        self.chain.collect_returned();

        // Undo: Ctrl+Z; redo: Ctrl+Shift+Z (the longer shortcut first).
        if ui.input_mut(|i| i.consume_key(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z)) {
            self.history.redo(&self.params, &setter);
        } else if ui.input_mut(|i| i.consume_key(Modifiers::COMMAND, Key::Z)) {
            self.history.undo(&self.params, &setter);
        }

        let fs = self.sample_rate();
        if self.analyser.update(&self.telemetry.spectrum) || self.analyser.mode != analyser::Mode::Off {
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(40));
        }
        let dt = ui.input(|i| i.stable_dt).min(0.5);
        self.meters.update(&self.telemetry, dt, f64::from(fs));
        // Every frame of audio goes through the loudness meters while the editor is open:
        // drawn often enough that the hand-over's ring never fills.
        self.loudness.update(&self.telemetry.loudness, dt);
        ui.ctx().request_repaint_after(std::time::Duration::from_millis(40));
        self.load.update(&self.telemetry, f64::from(fs));

        // One bar of global controls.
        ui.horizontal(|ui| {
            status::global_bar(ui, &self.params, &self.telemetry, &setter);
            ui.separator();
            if ui.add_enabled(self.history.can_undo(), egui::Button::new("Undo")).clicked() {
                self.history.undo(&self.params, &setter);
            }
            if ui.add_enabled(self.history.can_redo(), egui::Button::new("Redo")).clicked() {
                self.history.redo(&self.params, &setter);
            }
            ui.separator();
            self.ab.show(ui, &self.params, &setter);
            ui.separator();
            ui.menu_button("View", |ui| self.view_menu(ui));
        });
        // Below the view: the drawer's tab row (and the drawer when open), the status
        // line and the meters' row, each one line high; the view takes the rest.
        let line = ui.spacing().interact_size.y + ui.spacing().item_spacing.y;
        let drawer_h = if self.drawer { (DRAWER_SHARE * ui.ctx().content_rect().height()).round() } else { 0.0 };
        let view_h = (ui.available_height() - drawer_h - 3.5 * line).max(MIN_VIEW_HEIGHT);
        self.response_view(ui, &setter, view_h);
        self.band_controls(ui, &setter);
        ui.horizontal(|ui| {
            for tab in Tab::ALL {
                // A tab opens the drawer on it; the open tab's click closes it.
                if ui.selectable_label(self.drawer && self.tab == tab, tab.title()).clicked() {
                    self.drawer = !(self.drawer && self.tab == tab);
                    self.tab = tab;
                }
            }
            ui.separator();
            if let Some(b) = self.params.solo.get() {
                ui.colored_label(egui::Color32::from_rgb(240, 200, 90), format!("Listening to band {} (solo)", b + 1));
                if ui.small_button("Stop listening").clicked() {
                    self.params.solo.set(None);
                }
            }
            ui.label(if self.message.is_empty() { " " } else { &self.message });
        });
        if self.drawer {
            let fs = f64::from(self.sample_rate());
            egui::ScrollArea::vertical().max_height(drawer_h).min_scrolled_height(drawer_h).auto_shrink([false, false]).show(ui, |ui| match self.tab {
                Tab::Stages => self.stages.show(ui, &self.params, &self.chain, fs),
                Tab::Bands => table::bands_table(ui, &self.params, &setter),
                Tab::Files => self.presets.show(ui, &self.params, &setter, fs),
            });
        }
        ui.horizontal(|ui| {
            status::status_line(ui, &self.params, &self.telemetry);
            ui.separator();
            ui.label(load::describe(self.load.figures(f64::from(fs))));
        });
        // The meters in a row of a fixed size: figures arriving never move the view.
        ui.horizontal(|ui| {
            self.meters.show(ui, &self.telemetry);
            ui.separator();
            self.loudness.show(ui);
        });

        let held = ui.input(|i| i.pointer.any_down());
        self.history.after_frame(&self.params, held);
    }

    /// The view's settings: the dB range, the phase or group-delay overlay, the analyser.
    fn view_menu(&mut self, ui: &mut egui::Ui) {
        ui.label("Range");
        for r in axes::DbRange::ALL {
            if ui.selectable_label(self.range == r, format!("±{} dB", r.db())).clicked() {
                self.range = r;
            }
        }
        ui.separator();
        for o in curve::Overlay::ALL {
            if ui.selectable_label(self.overlay == o, o.title()).clicked() {
                self.overlay = o;
            }
        }
        ui.separator();
        ui.label("Analyser");
        for m in analyser::Mode::ALL {
            if ui.selectable_label(self.analyser.mode == m, m.title()).clicked() {
                self.analyser.mode = m;
            }
        }
        ui.checkbox(&mut self.analyser.tilt, "Tilt").on_hover_text("4.5 dB/octave around 1 kHz: pink noise reads flat");
        if ui.checkbox(&mut self.analyser.peak_hold, "Peak hold").changed() || (self.analyser.peak_hold && ui.small_button("Reset").clicked()) {
            self.analyser.reset_peaks();
        }
    }

    /// The selected band's controls (when one band is selected), floating beside its node
    /// inside the view.
    fn band_controls(&mut self, ui: &mut egui::Ui, setter: &ParamSetter) {
        let Some(axes) = self.axes else { return };
        // The band table shows the same controls (and names) already.
        // (Nor over a menu: a node's context menu opens at the node.)
        if (self.drawer && self.tab == Tab::Bands) || self.view_pressed || egui::Popup::is_any_open(ui.ctx()) {
            return;
        }
        let mut chosen = self.nodes.selected.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i);
        let (Some(i), None) = (chosen.next(), chosen.next()) else { return };
        let band = self.params.bands()[i];
        if !band.enabled {
            return;
        }
        let node = nodes::node_pos(&axes, &band.clamped(f64::from(self.sample_rate())));
        // Centred under the node (above it in the view's lower half), a little apart, so a
        // drag that starts on the node does not run into it; kept inside the view.
        let size = Vec2::new(250.0, 118.0);
        let gap = 36.0;
        let y = if node.y < axes.rect.center().y { node.y + gap } else { node.y - gap - size.y };
        let y = y.clamp(axes.rect.top() + 4.0, (axes.rect.bottom() - size.y - 4.0).max(axes.rect.top()));
        let x = (node.x - size.x / 2.0).clamp(axes.rect.left() + 4.0, (axes.rect.right() - size.x - 4.0).max(axes.rect.left()));
        let pos = egui::pos2(x, y);
        egui::Area::new(egui::Id::unique("band controls"))
            .fixed_pos(pos)
            .order(egui::Order::Foreground)
            .show(ui.ctx(), |ui| {
                egui::Frame::popup(ui.style()).show(ui, |ui| {
                    table::band_controls(ui, &self.params, setter, i);
                });
            });
    }

    fn response_view(&mut self, ui: &mut egui::Ui, setter: &ParamSetter, height: f32) {
        let fs = self.sample_rate();
        let (rect, response) = ui.allocate_exact_size(Vec2::new(ui.available_width(), height), egui::Sense::click_and_drag());
        let axes = axes::Axes::new(rect, f64::from(fs), self.range);
        self.axes = Some(axes);
        self.view_pressed = response.is_pointer_button_down_on();
        if let Some(note) = self.nodes.interact(ui, &response, &axes, &self.params, setter) {
            self.message = note;
        }
        let bands = self.params.bands();
        let group_delay = self.overlay == curve::Overlay::GroupDelay;
        self.refresh_chain_response(fs, &axes, group_delay);
        let chain_h = self.chain_h.as_ref().and_then(|(_, h)| h.as_deref());
        // Routing applies on stereo layouts (and before activation, when the layout is not
        // known yet, the default stereo one is assumed).
        let channels = self.telemetry.channels.load(Ordering::Relaxed);
        let stereo = channels == 2 || channels == 0;
        let linear = self.params.phase.value().fir_mode();
        // (The open editor redraws every 40 ms for the meters, so a moving dynamic band's
        // gain is drawn as it moves.)
        let live = self.telemetry.dynamic_gain_db();
        let r = curve::responses(&axes, &bands, &self.params.dynamics(), &live, chain_h, self.params.output_gain_db.value(), f64::from(fs), group_delay, stereo, linear);
        let painter = ui.painter_at(rect);
        curve::draw_grid(&painter, &axes);
        self.analyser.draw(&painter, &axes);
        curve::draw_responses(&painter, &axes, &r, &self.nodes.selected);
        curve::draw_overlay(&painter, &axes, &r, self.overlay);
        self.last_responses = Some(r);
        self.nodes.draw(&painter, &axes, &bands, response.hover_pos());
        if response.has_focus() {
            // The keyboard acts on the view (see `nodes.rs`): a frame says so.
            painter.rect_stroke(rect.shrink(1.0), 2.0, egui::Stroke::new(1.5, ui.visuals().selection.stroke.color), egui::StrokeKind::Inside);
        }
    }
}

impl NiceEguiApp for EditorApp {
    fn build(
        &mut self,
        _egui_ctx: egui::Context,
        nice_gui_ctx: GuiContext,
        _frame: &mut nice_plug_egui::Frame,
    ) -> Result<(), nice_plug_egui::baseview::HandlerError> {
        self.attach(nice_gui_ctx);
        Ok(())
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut nice_plug_egui::Frame) {
        // A session loaded with another window size: ask for it once (the host resizes).
        if let Some(size) = self.params.editor_size.take_wanted() {
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::InnerSize(Vec2::new(size.width, size.height)));
        }
        // A corner to drag: the host is asked for the new size.
        nice_plug_egui::resizable_window::ResizableWindow::new("ferrofx-editor")
            .min_size(Vec2::new(crate::control::editor_size::MIN_SIZE.0, crate::control::editor_size::MIN_SIZE.1))
            .show(ui, |ui| self.show(ui));
    }

    fn editor_closed(&mut self) {
        self.gui = None;
        // Solo is a monitoring aid while editing: it ends with the editor.
        self.params.solo.set(None);
        // The audio thread stops copying samples for the analyser.
        self.telemetry.spectrum.wanted.store(false, Ordering::Relaxed);
        self.telemetry.loudness.wanted.store(false, Ordering::Relaxed);
    }
}
