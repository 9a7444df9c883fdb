//! The chain stages' status and the chain-file import/export row.

use ferrofx::Chain;
use nice_plug::prelude::*;

use crate::bands::Band;
use crate::params::FerroParams;
use crate::preset;

use super::edits::{set_band, set_param};

/// The row's own state: the file path typed and the last outcome.
pub struct ChainRow {
    pub preset_path: String,
    pub message: String,
}

impl Default for ChainRow {
    fn default() -> ChainRow {
        ChainRow { preset_path: String::from("preset.json"), message: String::new() }
    }
}

impl ChainRow {
    pub fn show(&mut self, ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter, fs: f64) {
        ui.horizontal(|ui| {
            ui.label("Chain stages run:");
            ui.label(params.chain.gpu_status());
        });
        ui.horizontal(|ui| {
            ui.label("Chain:");
            ui.label(params.chain.status());
        });
        ui.horizontal(|ui| {
            ui.label("Preset file");
            ui.text_edit_singleline(&mut self.preset_path);
            if ui.button("Import").clicked() {
                self.message = match self.import(params, setter) {
                    Ok(()) => format!("imported {}", self.preset_path),
                    Err(e) => e,
                };
            }
            if ui.button("Export").clicked() {
                self.message = match self.export(params, fs) {
                    Ok(()) => format!("exported {}", self.preset_path),
                    Err(e) => e,
                };
            }
            if ui.button("Clear chain").clicked() {
                params.chain.install(Chain::new());
            }
            ui.label(&self.message);
        });
    }

    fn import(&self, params: &FerroParams, setter: &ParamSetter) -> Result<(), String> {
        // Read with the chain-file size cap: a mistyped path to a recording is an error.
        let chain = Chain::from_file(std::path::Path::new(&self.preset_path)).map_err(|e| format!("{}: {e}", self.preset_path))?;
        let imported = preset::import(&chain);
        for (i, bp) in params.bands.iter().enumerate() {
            let band = imported.bands.iter().find(|(n, _)| *n == i).map(|(_, b)| *b);
            let band = band.unwrap_or(Band { enabled: false, ..bp.band() });
            set_band(setter, bp, &band);
        }
        if let Some(g) = imported.output_gain_db {
            set_param(setter, &params.output_gain_db, g as f32);
        }
        params.chain.install(imported.stages);
        Ok(())
    }

    fn export(&self, params: &FerroParams, fs: f64) -> Result<(), String> {
        let chain = preset::export(&params.bands(), &params.chain.chain(), crate::params::decimal(params.output_gain_db.value()), fs);
        std::fs::write(&self.preset_path, chain.to_json()).map_err(|e| format!("{}: {e}", self.preset_path))
    }
}
