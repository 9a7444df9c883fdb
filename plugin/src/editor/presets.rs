//! Presets: factory presets shipped inside the plugin, the user's folder (the platform's
//! data directory, e.g. `~/.local/share/ferrofx/presets` on Linux), and any file through
//! a file dialog.
//!
//! A saved preset holds every setting (`control/instance_state.rs`: every parameter and
//! the chain stages). Chain files (the shared contract: the factory presets, presets of
//! earlier versions, files from `cargo xtask render`'s world) load too, as the bands,
//! output gain and chain stages they say with every other setting at its default. "Export
//! chain file" writes the plugin as one chain file that renders the same with
//! `cargo xtask render`, and refuses, naming them, settings a chain file cannot say.
//!
//! A file that cannot be read, parsed or designed at the session's rate shows its error
//! here and changes nothing.

use std::path::{Path, PathBuf};

use ferrofx::Chain;
use nice_plug::prelude::*;

use crate::control::instance_state::InstanceState;
use crate::control::params::FerroParams;
use crate::control::preset;

use super::files::Picker;

/// The factory presets: (name, chain file).
pub const FACTORY: [(&str, &str); 4] = [
    ("Mastering: air and weight", include_str!("../../presets/mastering-air-and-weight.json")),
    ("Vocal clean-up", include_str!("../../presets/vocal-clean-up.json")),
    ("Elliptic band limit", include_str!("../../presets/elliptic-band-limit.json")),
    ("Hum, rumble and hiss", include_str!("../../presets/hum-rumble-hiss.json")),
];

/// What a load or save did, for the user.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Done(String),
    Failed(String),
}

/// The presets panel (GUI thread).
pub struct PresetsPanel {
    folder: Option<PathBuf>,
    /// The user folder's preset files, as last listed.
    listed: Vec<PathBuf>,
    listed_once: bool,
    pub name: String,
    pub outcome: Option<Outcome>,
    picker: Picker,
    /// What the file dialog is open for.
    saving: Dialog,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialog {
    Load,
    Save,
    Export,
}

/// The platform's user preset folder, if the platform has a data directory.
pub fn user_folder() -> Option<PathBuf> {
    directories::ProjectDirs::from("org", "FerroFX", "ferrofx").map(|d| d.data_dir().join("presets"))
}

impl Default for PresetsPanel {
    fn default() -> PresetsPanel {
        PresetsPanel::with_folder(user_folder())
    }
}

impl PresetsPanel {
    /// A panel over another user folder (tests, portable setups).
    pub fn with_folder(folder: Option<PathBuf>) -> PresetsPanel {
        PresetsPanel { folder, listed: Vec::new(), listed_once: false, name: String::from("My preset"), outcome: None, picker: Picker::default(), saving: Dialog::Load }
    }

    fn relist(&mut self) {
        self.listed_once = true;
        self.listed = self
            .folder
            .as_ref()
            .and_then(|f| std::fs::read_dir(f).ok())
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "json")).collect())
            .unwrap_or_default();
        self.listed.sort();
    }

    pub fn show(&mut self, ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter, fs: f64) {
        if !self.listed_once {
            self.relist();
        }
        ui.horizontal(|ui| {
            ui.strong("Factory");
            for (name, text) in FACTORY {
                if ui.button(name).clicked() {
                    self.outcome = Some(match load_text(text, params, setter, fs) {
                        Ok(()) => Outcome::Done(format!("loaded {name}")),
                        Err(e) => Outcome::Failed(format!("{name}: {e}")),
                    });
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.strong("Yours");
            match &self.folder {
                Some(f) => ui.weak(f.display().to_string()),
                None => ui.weak("no user folder on this platform"),
            };
            if ui.small_button("Refresh").clicked() {
                self.relist();
            }
            let mut chosen = None;
            for p in &self.listed {
                let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                if ui.button(name).clicked() {
                    chosen = Some(p.clone());
                }
            }
            if self.listed.is_empty() {
                ui.weak("(none yet)");
            }
            if let Some(p) = chosen {
                self.outcome = Some(load_file(&p, params, setter, fs));
            }
        });
        ui.horizontal(|ui| {
            let label = ui.label("Name");
            ui.text_edit_singleline(&mut self.name).labelled_by(label.id);
            let can_save = self.folder.is_some() && !self.name.trim().is_empty();
            if ui.add_enabled(can_save, egui::Button::new("Save to your presets")).clicked() {
                if let Some(f) = self.folder.clone() {
                    let path = f.join(format!("{}.json", file_safe(&self.name)));
                    self.outcome = Some(save(&path, params));
                    self.relist();
                }
            }
            ui.separator();
            if ui.button("Load file…").clicked() {
                self.saving = Dialog::Load;
                self.picker.open_file("Load a preset or chain file", &["json"]);
            }
            if ui.button("Save file…").clicked() {
                self.saving = Dialog::Save;
                let name = format!("{}.json", file_safe(&self.name));
                self.picker.save_file("Save the preset", self.folder.as_deref(), &name);
            }
            if ui.button("Export chain file…").on_hover_text("The plugin as one chain file, which cargo xtask render plays the same").clicked() {
                self.saving = Dialog::Export;
                let name = format!("{}.chain.json", file_safe(&self.name));
                self.picker.save_file("Export as a chain file", self.folder.as_deref(), &name);
            }
        });
        match &self.outcome {
            Some(Outcome::Done(m)) => {
                ui.label(m);
            }
            Some(Outcome::Failed(m)) => {
                ui.colored_label(ui.visuals().error_fg_color, format!("Nothing changed: {m}"));
            }
            None => {}
        }
        if let Some(path) = self.picker.show(ui.ctx()) {
            self.outcome = Some(match self.saving {
                Dialog::Save => save(&path, params),
                Dialog::Export => export_chain_file(&path, params, fs),
                Dialog::Load => load_file(&path, params, setter, fs),
            });
            self.relist();
        }
    }
}

/// A name usable as a file name on every platform.
fn file_safe(name: &str) -> String {
    name.trim().chars().map(|c| if c.is_alphanumeric() || " -_.".contains(c) { c } else { '_' }).collect()
}

fn load_file(path: &Path, params: &FerroParams, setter: &ParamSetter, fs: f64) -> Outcome {
    match read_capped(path).and_then(|text| load_text(&text, params, setter, fs)) {
        Ok(()) => Outcome::Done(format!("loaded {}", path.display())),
        Err(e) => Outcome::Failed(format!("{}: {e}", path.display())),
    }
}

/// Reads a preset or chain file with the chain-file size cap (a mistyped path to a
/// recording is an error, not an exhausted memory).
fn read_capped(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(ferrofx::chain::MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > ferrofx::chain::MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB, the most a preset may hold", ferrofx::chain::MAX_FILE_BYTES >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
}

/// Makes a preset file or a chain file the plugin's state, after checking all of it
/// (and that its chain stages design at `fs`: for a chain file, its bands as stages too);
/// on error nothing changes.
pub fn load_text(text: &str, params: &FerroParams, setter: &ParamSetter, fs: f64) -> Result<(), String> {
    let (state, stages) = if InstanceState::is_preset(text) {
        let state = InstanceState::from_preset_json(text, params)?;
        let stages = Chain::from_json(&state.chain_json).map_err(|e| e.to_string())?;
        (state, stages)
    } else {
        let chain = Chain::from_json(text).map_err(|e| e.to_string())?;
        (InstanceState::from_chain_file(&chain, params, &InstanceState::of(params)), chain)
    };
    stages.design(fs).map_err(|e| e.to_string())?;
    state.apply(params, setter);
    Ok(())
}

/// Writes `text` to `path` through a temporary file renamed into place, so a failed save
/// leaves any earlier file whole.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.partial");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Writes the plugin's whole state as a preset file.
fn save(path: &Path, params: &FerroParams) -> Outcome {
    match write_whole(path, &InstanceState::of(params).to_preset_json(params)) {
        Ok(()) => Outcome::Done(format!("saved {}", path.display())),
        Err(e) => Outcome::Failed(format!("cannot save {}: {e}", path.display())),
    }
}

/// Writes the plugin as one chain file, or says what a chain file cannot hold.
fn export_chain_file(path: &Path, params: &FerroParams, fs: f64) -> Outcome {
    let unsaid = preset::unsaid_in_a_chain_file(params);
    if !unsaid.is_empty() {
        return Outcome::Failed(format!(
            "cannot export {} as a chain file: {} (a chain file cannot say that; save a preset instead, which holds every setting)",
            path.display(),
            unsaid.join(", ")
        ));
    }
    let chain = match preset::export(&params.bands(), &params.chain.chain(), crate::control::params::decimal(params.output_gain_db.value()), fs) {
        Ok(chain) => chain,
        Err(e) => return Outcome::Failed(format!("cannot export {}: {e}", path.display())),
    };
    match write_whole(path, &chain.to_json()) {
        Ok(()) => Outcome::Done(format!("exported {}", path.display())),
        Err(e) => Outcome::Failed(format!("cannot export {}: {e}", path.display())),
    }
}
