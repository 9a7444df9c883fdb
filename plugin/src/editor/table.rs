//! Every band's parameters as a table (the same parameters the nodes move).

use nice_plug::prelude::*;
use nice_plug_egui::widgets::ParamSlider;

use crate::control::params::{FerroParams, RouteChoice};

use super::edits::{name_combo, param_checkbox, set_param, shape_name, SHAPES};

/// nice-plug-egui's slider for `p`, named after the parameter for screen readers and
/// tests (the slider itself carries no accessible name).
pub(super) fn param_slider<P: Param>(ui: &mut egui::Ui, setter: &ParamSetter, p: &P, width: f32) {
    let response = ui.add(ParamSlider::for_param(p, setter).with_width(width));
    response.widget_info(|| egui::WidgetInfo::slider(true, f64::from(p.modulated_normalized_value()), p.name()));
}

/// A band's shape as a combo box (its id from `salt`), named after the parameter.
fn shape_combo(ui: &mut egui::Ui, setter: &ParamSetter, bp: &crate::control::params::BandParams, salt: (&str, usize)) {
    let shape = bp.shape.value();
    let combo = egui::ComboBox::from_id_salt(salt)
        .width(84.0)
        .selected_text(shape_name(shape))
        .show_ui(ui, |ui| {
            for s in SHAPES {
                if ui.selectable_label(s == shape, shape_name(s)).clicked() {
                    set_param(setter, &bp.shape, s);
                }
            }
        })
        .response;
    name_combo(&combo, bp.shape.name(), shape_name(shape));
}

pub fn bands_table(ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter) {
    // Scrolls both ways: the table never widens the window.
    egui::ScrollArea::both().auto_shrink([false, false]).show(ui, |ui| {
        egui::Grid::new("bands").striped(true).spacing([8.0, 3.0]).show(ui, |ui| {
            for h in ["", "On", "Bypass", "Shape", "Frequency", "Gain", "Q", "Slope", "LR", "Channels"] {
                ui.strong(h);
            }
            ui.end_row();
            for (i, bp) in params.bands.iter().enumerate() {
                ui.label(format!("{}", i + 1));
                param_checkbox(ui, setter, &bp.enabled);
                param_checkbox(ui, setter, &bp.bypassed);
                shape_combo(ui, setter, bp, ("shape", i));
                param_slider(ui, setter, &bp.freq_hz, 100.0);
                param_slider(ui, setter, &bp.gain_db, 80.0);
                param_slider(ui, setter, &bp.q, 64.0);
                param_slider(ui, setter, &bp.slope_poles, 74.0);
                param_checkbox(ui, setter, &bp.linkwitz_riley);
                let route = bp.route.value();
                let combo = egui::ComboBox::from_id_salt(("route", i))
                    .width(64.0)
                    .selected_text(route.name())
                    .show_ui(ui, |ui| {
                        for r in RouteChoice::ALL {
                            if ui.selectable_label(r == route, r.name()).clicked() {
                                set_param(setter, &bp.route, r);
                            }
                        }
                    })
                    .response;
                name_combo(&combo, bp.route.name(), route.name());
                ui.end_row();
            }
        });
    });
}

/// One band's controls, for the view's floating panel beside its node: shape, frequency,
/// gain, Q (the slope for cuts) and bypass; named after their parameters like the
/// table's (the panel is hidden while the table shows).
pub fn band_controls(ui: &mut egui::Ui, params: &FerroParams, setter: &ParamSetter, i: usize) {
    let bp = &params.bands[i];
    ui.horizontal(|ui| {
        ui.strong(format!("Band {}", i + 1));
        shape_combo(ui, setter, bp, ("floating shape", i));
        param_checkbox(ui, setter, &bp.bypassed);
        ui.label("Bypass");
    });
    egui::Grid::new(("floating band", i)).spacing([6.0, 2.0]).show(ui, |ui| {
        ui.label("Frequency");
        param_slider(ui, setter, &bp.freq_hz, 140.0);
        ui.end_row();
        let cut = matches!(bp.shape.value(), crate::control::params::ShapeChoice::LowCut | crate::control::params::ShapeChoice::HighCut);
        if cut {
            ui.label("Slope");
            param_slider(ui, setter, &bp.slope_poles, 140.0);
        } else {
            ui.label("Gain");
            param_slider(ui, setter, &bp.gain_db, 140.0);
        }
        ui.end_row();
        ui.label("Q");
        param_slider(ui, setter, &bp.q, 140.0);
        ui.end_row();
    });
}
