//! Every change the editor makes goes through the host's parameter API as a gesture
//! (begin, values, end), so hosts record it as automation and in their own undo.

use nice_plug::prelude::*;

use crate::shared::bands::{Band, Shape};
use crate::control::params::{BandParams, ShapeChoice};

/// Every band shape, in menu order.
pub const SHAPES: [ShapeChoice; 9] = [
    ShapeChoice::Peak,
    ShapeChoice::LowShelf,
    ShapeChoice::HighShelf,
    ShapeChoice::LowCut,
    ShapeChoice::HighCut,
    ShapeChoice::Notch,
    ShapeChoice::BandPass,
    ShapeChoice::AllPass,
    ShapeChoice::TiltShelf,
];

pub fn shape_name(s: ShapeChoice) -> &'static str {
    match s {
        ShapeChoice::Peak => "Peak",
        ShapeChoice::LowShelf => "Low shelf",
        ShapeChoice::HighShelf => "High shelf",
        ShapeChoice::LowCut => "Low cut",
        ShapeChoice::HighCut => "High cut",
        ShapeChoice::Notch => "Notch",
        ShapeChoice::BandPass => "Band pass",
        ShapeChoice::AllPass => "All pass",
        ShapeChoice::TiltShelf => "Tilt shelf",
    }
}

/// Whether a shape's gain parameter acts (its node moves vertically).
pub fn has_gain(shape: Shape) -> bool {
    matches!(shape, Shape::Peak | Shape::LowShelf | Shape::HighShelf | Shape::TiltShelf)
}

/// Whether a shape's slope and Linkwitz-Riley parameters act.
pub fn has_slope(shape: Shape) -> bool {
    matches!(shape, Shape::LowCut | Shape::HighCut)
}

/// One complete host gesture setting `p` to `v`.
pub fn set_param<P: Param>(setter: &ParamSetter, p: &P, v: P::Plain) {
    setter.begin_set_parameter(p);
    setter.set_parameter(p, v);
    setter.end_set_parameter(p);
}

/// Names a combo box for screen readers and tests (egui's `from_id_salt` combo boxes
/// have no name of their own), keeping the chosen item as its value.
pub fn name_combo(response: &egui::Response, name: &str, chosen: &str) {
    response.widget_info(|| {
        let mut info = egui::WidgetInfo::labeled(egui::accesskit::Role::ComboBox, response.enabled(), name);
        info.current_text_value = Some(chosen.to_string());
        info
    });
}

/// A checkbox bound to a boolean parameter, named after it for screen readers (the
/// table's column heading is what a sighted user reads).
pub fn param_checkbox(ui: &mut egui::Ui, setter: &ParamSetter, p: &BoolParam) {
    let mut checked = p.value();
    let response = ui.checkbox(&mut checked, "");
    if response.changed() {
        set_param(setter, p, checked);
    }
    response.widget_info(|| egui::WidgetInfo::selected(egui::accesskit::Role::CheckBox, true, checked, p.name()));
}

/// Sets every parameter of a band that differs from `band` (one gesture each).
pub fn set_band(setter: &ParamSetter, bp: &BandParams, band: &Band) {
    let now = bp.band();
    if now.enabled != band.enabled {
        set_param(setter, &bp.enabled, band.enabled);
    }
    if now.shape != band.shape {
        set_param(setter, &bp.shape, ShapeChoice::from_shape(band.shape));
    }
    if bp.freq_hz.value() != band.freq_hz as f32 {
        set_param(setter, &bp.freq_hz, band.freq_hz as f32);
    }
    if bp.gain_db.value() != band.gain_db as f32 {
        set_param(setter, &bp.gain_db, band.gain_db as f32);
    }
    if bp.q.value() != band.q as f32 {
        set_param(setter, &bp.q, band.q as f32);
    }
    let poles = (band.slope.db_per_oct / 6) as i32;
    if bp.slope_poles.value() != poles {
        set_param(setter, &bp.slope_poles, poles);
    }
    if now.slope.linkwitz_riley != band.slope.linkwitz_riley {
        set_param(setter, &bp.linkwitz_riley, band.slope.linkwitz_riley);
    }
    if now.bypassed != band.bypassed {
        set_param(setter, &bp.bypassed, band.bypassed);
    }
    if now.route != band.route {
        set_param(setter, &bp.route, crate::control::params::RouteChoice::from_route(band.route));
    }
}
