//! Presets: factory presets shipped inside the plugin, the user's folder (the platform's
//! data directory, e.g. `~/.local/share/ferrofx/presets` on Linux), and any file through
//! a file dialog. A preset is a chain file (the shared contract) as `preset.rs` exports
//! it: it renders the same with `cargo xtask render`.
//!
//! A file that cannot be read, parsed or designed at the session's rate shows its error
//! here and changes nothing.

use std::path::{Path, PathBuf};

use ferrofx::Chain;
use nice_plug::prelude::*;

use crate::shared::bands::Band;
use crate::control::params::FerroParams;
use crate::control::preset;

use super::edits::{set_band, set_param};
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
    saving: bool,
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
        PresetsPanel { folder, listed: Vec::new(), listed_once: false, name: String::from("My preset"), outcome: None, picker: Picker::default(), saving: false }
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
                    self.outcome = Some(match Chain::from_json(text) {
                        Ok(chain) => apply(&chain, params, setter, fs).map_or_else(Outcome::Failed, |()| Outcome::Done(format!("loaded {name}"))),
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
                    self.outcome = Some(save(&path, params, fs));
                    self.relist();
                }
            }
            ui.separator();
            if ui.button("Load file…").clicked() {
                self.saving = false;
                self.picker.open_file("Load a preset (chain file)", &["json"]);
            }
            if ui.button("Save file…").clicked() {
                self.saving = true;
                let name = format!("{}.json", file_safe(&self.name));
                self.picker.save_file("Save the preset (chain file)", self.folder.as_deref(), &name);
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
            self.outcome = Some(if self.saving { save(&path, params, fs) } else { load_file(&path, params, setter, fs) });
            self.relist();
        }
    }
}

/// A name usable as a file name on every platform.
fn file_safe(name: &str) -> String {
    name.trim().chars().map(|c| if c.is_alphanumeric() || " -_.".contains(c) { c } else { '_' }).collect()
}

fn load_file(path: &Path, params: &FerroParams, setter: &ParamSetter, fs: f64) -> Outcome {
    // Read with the chain-file size cap: a mistyped path to a recording is an error.
    match Chain::from_file(path) {
        Ok(chain) => match apply(&chain, params, setter, fs) {
            Ok(()) => Outcome::Done(format!("loaded {}", path.display())),
            Err(e) => Outcome::Failed(format!("{}: {e}", path.display())),
        },
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Makes `chain` the plugin's state (bands, chain stages, output gain), after checking
/// that it designs at `fs`; on error nothing changes.
pub fn apply(chain: &Chain, params: &FerroParams, setter: &ParamSetter, fs: f64) -> Result<(), String> {
    chain.design(fs).map_err(|e| e.to_string())?;
    let imported = preset::import(chain);
    for (i, bp) in params.bands.iter().enumerate() {
        let band = imported.bands.iter().find(|(n, _)| *n == i).map(|(_, b)| *b);
        let band = band.unwrap_or(Band { enabled: false, ..bp.band() });
        set_band(setter, bp, &band);
    }
    set_param(setter, &params.output_gain_db, imported.output_gain_db.unwrap_or(0.0) as f32);
    if let Some(matched) = imported.matched {
        if params.matched.value() != matched {
            set_param(setter, &params.matched, matched);
        }
    }
    params.chain.install(imported.stages);
    Ok(())
}

/// Writes the plugin's state as a chain file (a temporary file renamed into place, so a
/// failed save leaves any earlier file whole).
fn save(path: &Path, params: &FerroParams, fs: f64) -> Outcome {
    let chain = match preset::export(&params.bands(), &params.chain.chain(), crate::control::params::decimal(params.output_gain_db.value()), fs) {
        Ok(chain) => chain,
        Err(e) => return Outcome::Failed(format!("cannot save {}: {e}", path.display())),
    };
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.partial");
        std::fs::write(&tmp, chain.to_json())?;
        std::fs::rename(&tmp, path)
    };
    match write() {
        Ok(()) => Outcome::Done(format!("saved {}", path.display())),
        Err(e) => Outcome::Failed(format!("cannot save {}: {e}", path.display())),
    }
}
