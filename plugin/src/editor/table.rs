//! Every band's parameters as a table (the same parameters the nodes move).

use nice_plug::prelude::*;
use nice_plug_egui::widgets::ParamSlider;

use crate::params::FerroParams;

use super::edits::{param_checkbox, set_param, shape_name, SHAPES};

pub fn bands_table(ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter) {
    egui::ScrollArea::vertical().auto_shrink([false, false]).show(ui, |ui| {
        egui::Grid::new("bands").striped(true).spacing([8.0, 3.0]).show(ui, |ui| {
            for h in ["", "On", "Shape", "Frequency", "Gain", "Q", "Slope", "LR"] {
                ui.strong(h);
            }
            ui.end_row();
            for (i, bp) in params.bands.iter().enumerate() {
                ui.label(format!("{}", i + 1));
                param_checkbox(ui, setter, &bp.enabled);
                let shape = bp.shape.value();
                egui::ComboBox::from_id_salt(("shape", i)).width(90.0).selected_text(shape_name(shape)).show_ui(ui, |ui| {
                    for s in SHAPES {
                        if ui.selectable_label(s == shape, shape_name(s)).clicked() {
                            set_param(setter, &bp.shape, s);
                        }
                    }
                });
                ui.add(ParamSlider::for_param(&bp.freq_hz, setter).with_width(110.0));
                ui.add(ParamSlider::for_param(&bp.gain_db, setter).with_width(90.0));
                ui.add(ParamSlider::for_param(&bp.q, setter).with_width(70.0));
                ui.add(ParamSlider::for_param(&bp.slope_poles, setter).with_width(80.0));
                param_checkbox(ui, setter, &bp.linkwitz_riley);
                ui.end_row();
            }
        });
    });
}
