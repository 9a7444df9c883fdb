//! The chain stages panel: the chain-file stages that run after the bands, built in the
//! editor. Stages are added from a menu of every stage type in the chain format (and an
//! impulse-response file as a given FIR), edited in place, enabled or disabled,
//! reordered by dragging their handle (or with the arrows), and deleted.
//!
//! The panel edits a draft of the chain. After each edit the draft is checked exactly as
//! the renderer checks a chain file (written as chain-file text, read back, designed at
//! the session's rate); a draft that passes is installed (built off the audio thread and
//! handed over, see `control/chain.rs`), one that fails is not: the running chain stays as it
//! was and the contract's error text is shown, in full above the stages and beside the
//! failing field. A chain installed from elsewhere (undo, A/B, a preset, the host)
//! replaces the draft.

use std::path::Path;

use egui::{Color32, Id, Ui};
use ferrofx::{Chain, ChainError, Stage, StageKind};

use crate::control::chain::ChainSlot;
use crate::control::params::FerroParams;

use super::files::Picker;
use super::stage_fields::{self, FieldError, ADDABLE};

/// A structural edit, applied after the rows are drawn.
enum Edit {
    Remove(usize),
    Move { from: usize, to: usize },
}

/// The panel's state (GUI thread).
#[derive(Default)]
pub struct StagesPanel {
    draft: Chain,
    /// The chain slot's revision the draft was taken from or last installed as.
    synced: Option<u64>,
    /// Why the draft is not what runs.
    pub error: Option<ChainError>,
    /// The outcome of the last impulse-response load.
    pub note: String,
    ir_picker: Picker,
}

impl StagesPanel {
    fn sync(&mut self, params: &FerroParams) {
        let installed = params.chain.revision();
        if self.synced != Some(installed) {
            self.draft = params.chain.chain();
            self.synced = Some(installed);
            self.error = None;
        }
    }

    /// Checks the draft as the renderer checks a chain file and installs it if it passes.
    fn commit(&mut self, params: &FerroParams, fs: f64) {
        let text = self.draft.to_json();
        match Chain::from_json(&text).and_then(|c| c.design(fs).map(|_| c)) {
            Ok(chain) => {
                self.synced = Some(params.chain.install(chain));
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Appends a given-FIR stage made from the impulse response in `path` (WAV or FLAC,
    /// mono, at `fs`); on error nothing changes and the note says why.
    pub fn add_impulse_response(&mut self, path: &Path, params: &FerroParams, fs: f64) {
        self.sync(params);
        match crate::control::ir::fir_stage(path, fs) {
            Ok(stage) => {
                let taps = match &stage.kind {
                    StageKind::FirGiven { coefficients } => coefficients.len(),
                    _ => 0,
                };
                self.draft.push(stage);
                self.commit(params, fs);
                self.note = format!("{}: {taps} taps", path.display());
            }
            Err(e) => self.note = e.to_string(),
        }
    }

    pub fn show(&mut self, ui: &mut Ui, params: &FerroParams, slot: &ChainSlot, fs: f64) {
        self.sync(params);
        let mut changed = false;
        ui.horizontal(|ui| {
            ui.strong("Chain stages");
            ui.label("run after the bands, top to bottom");
            ui.menu_button("Add stage", |ui| {
                for (name, make) in ADDABLE {
                    if ui.button(name).clicked() {
                        self.draft.push(Stage::new(make()));
                        changed = true;
                        ui.close();
                    }
                }
                ui.separator();
                if ui.button("Impulse response file (FIR)…").clicked() {
                    self.ir_picker
                        .open_file("Impulse response (WAV, FLAC)", &["wav", "flac"]);
                    ui.close();
                }
            });
            if ui
                .add_enabled(
                    !self.draft.stages.is_empty(),
                    egui::Button::new("Remove all"),
                )
                .clicked()
            {
                self.draft.stages.clear();
                changed = true;
            }
            ui.label(&self.note);
        });
        ui.horizontal(|ui| {
            ui.label(slot.status());
            ui.separator();
            ui.label(slot.gpu_status());
        });
        if let Some(e) = &self.error {
            ui.colored_label(
                ui.visuals().error_fg_color,
                format!("Not applied (the running chain is unchanged): {e}"),
            );
        }
        let mut edit = None;
        let count = self.draft.stages.len();
        for i in 0..count {
            let (row_changed, row_edit, dropped) = self.row(ui, i, count);
            changed |= row_changed;
            edit = edit.or(row_edit).or(dropped);
        }
        if count == 0 {
            ui.weak("No chain stages: add one from the menu (every design of the chain format, or an impulse response).");
        }
        match edit {
            Some(Edit::Remove(i)) => {
                self.draft.stages.remove(i);
                changed = true;
            }
            Some(Edit::Move { from, to }) if from != to && from < count && to < count => {
                let stage = self.draft.stages.remove(from);
                self.draft.stages.insert(to, stage);
                changed = true;
            }
            _ => {}
        }
        if changed {
            self.commit(params, fs);
        }
        if let Some(path) = self.ir_picker.show(ui.ctx()) {
            self.add_impulse_response(&path, params, fs);
        }
    }

    /// One stage's row: (a field changed, a button's edit, a drop onto this row).
    fn row(&mut self, ui: &mut Ui, i: usize, count: usize) -> (bool, Option<Edit>, Option<Edit>) {
        let mut changed = false;
        let mut edit = None;
        let failing = self.error.as_ref().filter(|e| e.stage_index() == Some(i));
        let message = failing.map(|e| match e {
            ChainError::Stage { message, .. } => message.clone(),
            other => other.to_string(),
        });
        let field_error = failing
            .and_then(|e| e.field())
            .zip(message.as_deref())
            .map(|(field, message)| FieldError { field, message });
        let mut shown = false;
        let stage = &mut self.draft.stages[i];
        let frame = egui::Frame::group(ui.style())
            .stroke(if failing.is_some() {
                egui::Stroke::new(1.0, ui.visuals().error_fg_color)
            } else {
                ui.visuals().widgets.noninteractive.bg_stroke
            })
            .show(ui, |ui| {
                ui.horizontal_wrapped(|ui| {
                    let handle = ui.dnd_drag_source(Id::unique(("stage_handle", i)), i, grip);
                    handle.response.on_hover_text("Drag to reorder");
                    let on = ui.checkbox(&mut stage.enabled, "").on_hover_text(
                        "Run this stage (a disabled stage is kept and still checked)",
                    );
                    changed |= on.changed();
                    ui.strong(format!("{}. {}", i + 1, type_title(&stage.kind)));
                    if let Some(label) = &stage.label {
                        ui.weak(label);
                    }
                    changed |= stage_fields::fields(
                        ui,
                        i,
                        &mut stage.kind,
                        field_error.as_ref(),
                        &mut shown,
                    );
                    if ui
                        .add_enabled(i > 0, egui::Button::new("Up"))
                        .on_hover_text("Move up one place")
                        .clicked()
                    {
                        edit = Some(Edit::Move { from: i, to: i - 1 });
                    }
                    if ui
                        .add_enabled(i + 1 < count, egui::Button::new("Down"))
                        .on_hover_text("Move down one place")
                        .clicked()
                    {
                        edit = Some(Edit::Move { from: i, to: i + 1 });
                    }
                    if ui.button("×").on_hover_text("Delete this stage").clicked() {
                        edit = Some(Edit::Remove(i));
                    }
                });
                if let (false, Some(m)) = (shown, &message) {
                    ui.colored_label(ui.visuals().error_fg_color, m);
                }
            });
        let row = frame.response;
        if row.dnd_hover_payload::<usize>().is_some() {
            let y = row.rect.top();
            ui.painter().hline(
                row.rect.x_range(),
                y,
                egui::Stroke::new(2.0, Color32::from_rgb(120, 170, 255)),
            );
        }
        let dropped = row
            .dnd_release_payload::<usize>()
            .map(|from| Edit::Move { from: *from, to: i });
        (changed, edit, dropped)
    }
}

/// The drag handle: three bars (drawn; the bundled fonts have no such glyph), named
/// "Reorder" for screen readers.
fn grip(ui: &mut Ui) {
    let (rect, response) = ui.allocate_exact_size(egui::vec2(14.0, 16.0), egui::Sense::hover());
    let colour = ui.visuals().widgets.inactive.fg_stroke.color;
    for k in 0..3 {
        let y = rect.top() + 4.0 + 4.0 * k as f32;
        ui.painter().hline(
            rect.x_range().shrink(2.0),
            y,
            egui::Stroke::new(1.5, colour),
        );
    }
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, "Reorder"));
}

/// The stage's type as a title.
fn type_title(kind: &StageKind) -> &'static str {
    match kind {
        StageKind::Iir { .. } => "IIR",
        StageKind::LinkwitzRiley { .. } => "Linkwitz-Riley",
        StageKind::Biquad { .. } => "Biquad",
        StageKind::FirDesign { .. } => "FIR (designed)",
        StageKind::FirGiven { .. } => "FIR (given)",
        StageKind::Sos { .. } => "SOS",
        StageKind::Gain { .. } => "Gain",
    }
}
