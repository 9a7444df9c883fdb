//! Bands as nodes on the response view: drag for frequency and gain (Shift for fine),
//! wheel or Alt-drag for Q, double-click on empty space to add a band (its shape chosen
//! by where), a right-click menu, Delete to remove, and a rubber band to select several
//! and move them together. From the keyboard (the view focused by Tab or a click): Tab
//! and Shift+Tab step through the bands, the arrows move frequency (left, right) and gain
//! (up, down), Alt with up and down changes Q, Shift makes any step a tenth, Delete
//! removes, Escape leaves the view. Every change is a host gesture.

use egui::{Color32, Event, Key, MouseWheelUnit, Pos2, Rect, Response, Stroke};
use nice_plug::prelude::*;

use crate::shared::bands::{ranges, Band, Shape, Slope, BANDS};
use crate::control::params::{FerroParams, RouteChoice, ShapeChoice};

use super::axes::Axes;
use super::curve::band_colour;
use super::edits::{has_gain, has_slope, set_band, set_param, shape_name, SHAPES};

/// Node radius in points.
pub const NODE_RADIUS: f32 = 7.0;
/// Pointer travel is scaled by this while Shift is held.
pub const FINE: f32 = 0.1;
/// Q is multiplied by this per wheel line (up raises Q).
pub const Q_PER_WHEEL_LINE: f64 = 1.122_462_048_309_373; // 2^(1/6)
/// Alt-drag: Q doubles per this many points upward.
pub const Q_DOUBLING_POINTS: f32 = 100.0;
/// Wheel points per line (for wheels that report points).
const POINTS_PER_LINE: f32 = 50.0;
/// An arrow key moves a band's frequency by this many octaves (a semitone).
pub const KEY_OCTAVES: f64 = 1.0 / 12.0;
/// An arrow key moves a band's gain by this many dB.
pub const KEY_DB: f32 = 0.5;
/// Shift makes an arrow key's step this share of the usual one (as [`FINE`] for drags).
pub const KEY_FINE: f64 = 0.1;

/// Selection and the gesture in progress (GUI thread only).
#[derive(Default)]
pub struct Nodes {
    pub selected: [bool; BANDS],
    drag: Option<Drag>,
    rubber_from: Option<Pos2>,
    /// The band the context menu is open for.
    menu_band: Option<usize>,
}

/// A node drag: where the pointer started and each moved band's starting values.
struct Drag {
    origin: Pos2,
    fine: bool,
    q_mode: bool,
    start: Vec<(usize, f64, f32, f32)>,
}

/// Where band `b`'s node sits: its frequency, and its gain for shapes that have one
/// (0 dB otherwise), kept inside the view.
pub fn node_pos(axes: &Axes, b: &Band) -> Pos2 {
    let lim = axes.range.db();
    let gain = if has_gain(b.shape) { (b.gain_db as f32).clamp(-lim, lim) } else { 0.0 };
    let p = axes.pos(b.freq_hz, gain);
    Pos2::new(p.x.clamp(axes.rect.left(), axes.rect.right()), p.y)
}

/// The shape a double-click at `pos` adds: a low cut near the bottom left, a high cut
/// near the top right, a bell elsewhere.
pub fn shape_for_position(axes: &Axes, pos: Pos2) -> Shape {
    let share = axes.x_share(pos.x);
    let db = axes.db_at_y(pos.y);
    let third = axes.range.db() / 3.0;
    if share < 0.15 && db < -third {
        Shape::LowCut
    } else if share > 0.85 && db > third {
        Shape::HighCut
    } else {
        Shape::Peak
    }
}

fn clamp_hz(f: f64) -> f64 {
    let (lo, hi) = ranges::freq_hz();
    f.clamp(lo, hi)
}

fn clamp_db(g: f32) -> f32 {
    let (lo, hi) = ranges::gain_db();
    g.clamp(lo as f32, hi as f32)
}

fn clamp_q(q: f64) -> f64 {
    let (lo, hi) = ranges::q();
    q.clamp(lo, hi)
}

impl Nodes {
    /// The enabled band whose node is nearest `pos`, within reach.
    pub fn hit(axes: &Axes, bands: &[Band; BANDS], pos: Pos2) -> Option<usize> {
        bands
            .iter()
            .enumerate()
            .filter(|(_, b)| b.enabled)
            .map(|(i, b)| (i, node_pos(axes, b).distance(pos)))
            .filter(|(_, d)| *d <= NODE_RADIUS + 3.0)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }

    /// Handles the pointer and keys over the view (`response` senses clicks and drags
    /// over `axes.rect`). Returns a line for the user when something could not be done.
    pub fn interact(&mut self, ui: &egui::Ui, response: &Response, axes: &Axes, params: &FerroParams, setter: &ParamSetter) -> Option<String> {
        let bands = params.bands();
        let pointer = response.interact_pointer_pos().or(response.hover_pos());
        let hovered = pointer.and_then(|p| Self::hit(axes, &bands, p));
        let modifiers = ui.input(|i| i.modifiers);
        let mut note = None;
        for (i, b) in bands.iter().enumerate() {
            if !b.enabled {
                self.selected[i] = false;
            }
        }

        if response.double_clicked() && hovered.is_none() {
            if let Some(pos) = pointer {
                note = self.add_band(axes, params, setter, pos);
            }
        } else if response.clicked() {
            match hovered {
                Some(i) if modifiers.command || modifiers.shift => self.selected[i] = !self.selected[i],
                Some(i) => self.select_only(i),
                None => self.selected = [false; BANDS],
            }
        }

        if response.secondary_clicked() {
            self.menu_band = hovered;
            if let Some(i) = hovered {
                if !self.selected[i] {
                    self.select_only(i);
                }
            }
        }
        if let Some(i) = self.menu_band {
            response.context_menu(|ui| self.menu(ui, i, params, setter));
        }

        if response.drag_started() {
            let origin = ui.input(|i| i.pointer.press_origin()).or(pointer).unwrap_or_default();
            match Self::hit(axes, &bands, origin) {
                Some(i) => {
                    if !self.selected[i] {
                        self.select_only(i);
                    }
                    self.begin_drag(origin, modifiers, params, setter);
                }
                None => self.rubber_from = Some(origin),
            }
        }
        if let (Some(drag), Some(now)) = (&mut self.drag, pointer) {
            if response.dragged() {
                // Shift changed mid-drag: continue from here at the new scale.
                if drag.fine != modifiers.shift {
                    let bands_now = params.bands();
                    for s in drag.start.iter_mut() {
                        let b = &bands_now[s.0];
                        *s = (s.0, b.freq_hz, b.gain_db as f32, b.q as f32);
                    }
                    drag.origin = now;
                    drag.fine = modifiers.shift;
                }
                Self::drag_to(drag, now, axes, params, setter);
            }
        }
        if response.drag_stopped() {
            if let Some(drag) = self.drag.take() {
                Self::end_drag(&drag, params, setter);
            }
            if let (Some(from), Some(to)) = (self.rubber_from.take(), pointer) {
                let area = Rect::from_two_pos(from, to);
                if !(modifiers.command || modifiers.shift) {
                    self.selected = [false; BANDS];
                }
                for (i, b) in bands.iter().enumerate() {
                    if b.enabled && area.contains(node_pos(axes, b)) {
                        self.selected[i] = true;
                    }
                }
            }
        }

        // Wheel over a node: its Q.
        if let Some(i) = hovered {
            let lines: f32 = ui.input(|inp| {
                inp.events
                    .iter()
                    .map(|e| match e {
                        Event::MouseWheel { unit, delta, .. } => match unit {
                            MouseWheelUnit::Point => delta.y / POINTS_PER_LINE,
                            MouseWheelUnit::Line => delta.y,
                            MouseWheelUnit::Page => delta.y * 10.0,
                        },
                        _ => 0.0,
                    })
                    .sum()
            });
            if lines != 0.0 {
                let bp = &params.bands[i];
                let q = clamp_q(f64::from(bp.q.value()) * Q_PER_WHEEL_LINE.powf(f64::from(lines)));
                set_param(setter, &bp.q, q as f32);
            }
        }

        self.keys(ui, response, &bands, params, setter);

        // Delete removes the selected bands, with the view focused or no other widget
        // (a text field, say) taking keys.
        let delete = ui.input(|i| i.key_pressed(Key::Delete) || i.key_pressed(Key::Backspace));
        if delete && (response.has_focus() || !ui.ctx().egui_wants_keyboard_input()) {
            for (i, bp) in params.bands.iter().enumerate() {
                if self.selected[i] {
                    set_param(setter, &bp.enabled, false);
                    self.selected[i] = false;
                }
            }
        }
        note
    }

    /// The keyboard, while the view has focus (reached by Tab like any control, or by a
    /// click on it): Tab and the arrows come here instead of moving egui's focus, Escape
    /// leaves. Tab / Shift+Tab select the next / previous enabled band (the first when
    /// the view gains focus with none selected); the arrows step every selected band:
    /// left and right its frequency by [`KEY_OCTAVES`], up and down its gain by
    /// [`KEY_DB`] (shapes with a gain), Alt with up and down its Q by
    /// [`Q_PER_WHEEL_LINE`]; Shift takes a tenth of any step. Each step is one gesture.
    fn keys(&mut self, ui: &egui::Ui, response: &Response, bands: &[Band; BANDS], params: &FerroParams, setter: &ParamSetter) {
        if response.clicked() || response.drag_started() {
            response.request_focus();
        }
        if !response.has_focus() {
            return;
        }
        ui.memory_mut(|m| {
            m.set_focus_lock_filter(response.id, egui::EventFilter { tab: true, horizontal_arrows: true, vertical_arrows: true, escape: false })
        });
        let enabled: Vec<usize> = (0..BANDS).filter(|&i| bands[i].enabled).collect();
        // The Tab that brought the focus here is not a step through the bands.
        let arrived = response.gained_focus();
        if arrived && !self.selected.iter().any(|&s| s) {
            if let Some(&first) = enabled.first() {
                self.select_only(first);
            }
        }
        let presses: Vec<(Key, egui::Modifiers)> = ui.input(|i| {
            i.events
                .iter()
                .filter_map(|e| match e {
                    Event::Key { key, pressed: true, modifiers, .. } => Some((*key, *modifiers)),
                    _ => None,
                })
                .collect()
        });
        for (key, modifiers) in presses {
            let fine = if modifiers.shift { KEY_FINE } else { 1.0 };
            match key {
                Key::Tab if !enabled.is_empty() && !arrived => {
                    // From the last selected band (or before the first / after the last).
                    let current = (0..BANDS).rev().find(|&i| self.selected[i]);
                    let at = current.and_then(|c| enabled.iter().position(|&i| i == c));
                    let n = enabled.len();
                    let next = match (at, modifiers.shift) {
                        (Some(k), false) => (k + 1) % n,
                        (Some(k), true) => (k + n - 1) % n,
                        (None, false) => 0,
                        (None, true) => n - 1,
                    };
                    self.select_only(enabled[next]);
                }
                Key::ArrowLeft | Key::ArrowRight => {
                    let octaves = if key == Key::ArrowRight { KEY_OCTAVES } else { -KEY_OCTAVES } * fine;
                    for i in (0..BANDS).filter(|&i| self.selected[i]) {
                        let bp = &params.bands[i];
                        let f = clamp_hz(f64::from(bp.freq_hz.value()) * octaves.exp2());
                        set_param(setter, &bp.freq_hz, f as f32);
                    }
                }
                Key::ArrowUp | Key::ArrowDown => {
                    let up = key == Key::ArrowUp;
                    for i in (0..BANDS).filter(|&i| self.selected[i]) {
                        let bp = &params.bands[i];
                        if modifiers.alt {
                            let factor = Q_PER_WHEEL_LINE.powf(if up { fine } else { -fine });
                            set_param(setter, &bp.q, clamp_q(f64::from(bp.q.value()) * factor) as f32);
                        } else if has_gain(bp.shape.value().shape()) {
                            let step = KEY_DB * fine as f32;
                            set_param(setter, &bp.gain_db, clamp_db(bp.gain_db.value() + if up { step } else { -step }));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn select_only(&mut self, i: usize) {
        self.selected = [false; BANDS];
        self.selected[i] = true;
    }

    /// Enables the first free band at `pos` with the shape the position implies.
    fn add_band(&mut self, axes: &Axes, params: &FerroParams, setter: &ParamSetter, pos: Pos2) -> Option<String> {
        let Some(i) = params.bands.iter().position(|bp| !bp.enabled.value()) else {
            return Some(format!("all {BANDS} bands are in use: delete one to add another"));
        };
        let shape = shape_for_position(axes, pos);
        let band = Band {
            enabled: true,
            bypassed: false,
            shape,
            freq_hz: f64::from(clamp_hz(axes.hz_at_x(pos.x)) as f32),
            gain_db: if has_gain(shape) { f64::from(clamp_db(axes.db_at_y(pos.y))) } else { 0.0 },
            q: std::f64::consts::FRAC_1_SQRT_2,
            slope: Slope { db_per_oct: 24, linkwitz_riley: false },
            route: crate::shared::bands::Route::Stereo,
            // The instance's switch, not a band setting (set_band leaves it alone).
            matched: params.matched.value(),
            dynamic: false,
        };
        set_band(setter, &params.bands[i], &band);
        self.select_only(i);
        None
    }

    fn begin_drag(&mut self, origin: Pos2, modifiers: egui::Modifiers, params: &FerroParams, setter: &ParamSetter) {
        let q_mode = modifiers.alt;
        let mut start = Vec::new();
        for (i, bp) in params.bands.iter().enumerate() {
            if !self.selected[i] {
                continue;
            }
            let b = bp.band();
            if q_mode {
                setter.begin_set_parameter(&bp.q);
            } else {
                setter.begin_set_parameter(&bp.freq_hz);
                if has_gain(b.shape) {
                    setter.begin_set_parameter(&bp.gain_db);
                }
            }
            start.push((i, b.freq_hz, b.gain_db as f32, b.q as f32));
        }
        self.drag = Some(Drag { origin, fine: modifiers.shift, q_mode, start });
    }

    fn drag_to(drag: &Drag, now: Pos2, axes: &Axes, params: &FerroParams, setter: &ParamSetter) {
        let scale = if drag.fine { FINE } else { 1.0 };
        let d = (now - drag.origin) * scale;
        for &(i, freq_hz, gain_db, q) in &drag.start {
            let bp = &params.bands[i];
            if drag.q_mode {
                let q = clamp_q(f64::from(q) * 2f64.powf(f64::from(-d.y / Q_DOUBLING_POINTS)));
                setter.set_parameter(&bp.q, q as f32);
                continue;
            }
            let f = clamp_hz(axes.hz_at_x(axes.x_of_hz(freq_hz) + d.x));
            setter.set_parameter(&bp.freq_hz, f as f32);
            if has_gain(bp.shape.value().shape()) {
                let g = clamp_db(axes.db_at_y(axes.y_of_db(gain_db) + d.y));
                setter.set_parameter(&bp.gain_db, g);
            }
        }
    }

    fn end_drag(drag: &Drag, params: &FerroParams, setter: &ParamSetter) {
        for &(i, ..) in &drag.start {
            let bp = &params.bands[i];
            if drag.q_mode {
                setter.end_set_parameter(&bp.q);
            } else {
                setter.end_set_parameter(&bp.freq_hz);
                if has_gain(bp.shape.value().shape()) {
                    setter.end_set_parameter(&bp.gain_db);
                }
            }
        }
    }

    /// The right-click menu of band `i`.
    fn menu(&mut self, ui: &mut egui::Ui, i: usize, params: &FerroParams, setter: &ParamSetter) {
        let bp = &params.bands[i];
        ui.label(format!("Band {}", i + 1));
        ui.menu_button("Shape", |ui| {
            let current = bp.shape.value();
            for s in SHAPES {
                if ui.radio(current == s, shape_name(s)).clicked() {
                    set_param(setter, &bp.shape, s);
                    ui.close();
                }
            }
        });
        if has_slope(bp.shape.value().shape()) {
            ui.menu_button("Slope", |ui| {
                let (lo, hi) = ranges::slope_db_per_oct();
                let current = bp.slope_poles.value() as u32 * 6;
                for db in (lo..=hi).step_by(6) {
                    if ui.radio(current == db, format!("{db} dB/oct")).clicked() {
                        set_param(setter, &bp.slope_poles, (db / 6) as i32);
                        ui.close();
                    }
                }
            });
            let lr = bp.linkwitz_riley.value();
            if ui.radio(!lr, "Butterworth").clicked() {
                set_param(setter, &bp.linkwitz_riley, false);
            }
            if ui.radio(lr, "Linkwitz-Riley").clicked() {
                set_param(setter, &bp.linkwitz_riley, true);
            }
        }
        ui.menu_button("Channels", |ui| {
            let current = bp.route.value();
            for r in RouteChoice::ALL {
                if ui.radio(current == r, r.name()).clicked() {
                    set_param(setter, &bp.route, r);
                    ui.close();
                }
            }
        });
        ui.menu_button("Dynamic", |ui| {
            let on = bp.dyn_on.value();
            if ui.radio(on, "Dynamic (the gain follows the band's level)").clicked() {
                set_param(setter, &bp.dyn_on, !on);
            }
            let sc = bp.dyn_sidechain.value();
            if ui.radio(sc, "Listen to the sidechain input").clicked() {
                set_param(setter, &bp.dyn_sidechain, !sc);
            }
            egui::Grid::new(("dynamic", i)).show(ui, |ui| {
                for (label, p) in [
                    ("Threshold", &bp.dyn_threshold_db),
                    ("Ratio", &bp.dyn_ratio),
                    ("Range", &bp.dyn_range_db),
                    ("Attack", &bp.dyn_attack_ms),
                    ("Release", &bp.dyn_release_ms),
                ] {
                    ui.label(label);
                    super::table::param_slider(ui, setter, p, 120.0);
                    ui.end_row();
                }
            });
        });
        ui.separator();
        let bypassed = bp.bypassed.value();
        if ui.radio(bypassed, "Bypass (keep the band, don't apply it)").clicked() {
            set_param(setter, &bp.bypassed, !bypassed);
            ui.close();
        }
        let soloed = params.solo.get() == Some(i);
        if ui.radio(soloed, "Solo (listen to this band)").clicked() {
            params.solo.set(if soloed { None } else { Some(i) });
            ui.close();
        }
        if ui.button("Delete band").clicked() {
            set_param(setter, &bp.enabled, false);
            self.selected[i] = false;
            self.menu_band = None;
            ui.close();
        }
    }

    /// Draws the nodes (selected ones ringed) and, for the hovered or single selected
    /// band, its values.
    pub fn draw(&self, painter: &egui::Painter, axes: &Axes, bands: &[Band; BANDS], hover: Option<Pos2>) {
        for (i, b) in bands.iter().enumerate() {
            if !b.enabled {
                continue;
            }
            let p = node_pos(axes, b);
            if b.bypassed {
                // Bypassed: a hollow ring in the band's colour, still draggable.
                painter.circle_filled(p, NODE_RADIUS, Color32::from_gray(30));
                painter.circle_stroke(p, NODE_RADIUS - 0.75, Stroke::new(1.5, band_colour(i).gamma_multiply(0.6)));
            } else {
                painter.circle_filled(p, NODE_RADIUS, band_colour(i));
            }
            if self.selected[i] {
                painter.circle_stroke(p, NODE_RADIUS + 2.5, Stroke::new(1.5, Color32::WHITE));
            }
            let digit = if b.bypassed { band_colour(i) } else { Color32::BLACK };
            painter.text(p, egui::Align2::CENTER_CENTER, format!("{}", i + 1), egui::FontId::proportional(9.0), digit);
            // A band on one channel, mid or side carries its route's letter beside it.
            let tag = b.route.tag();
            if !tag.is_empty() {
                let at = p + egui::vec2(NODE_RADIUS + 1.0, -NODE_RADIUS - 1.0);
                painter.text(at, egui::Align2::LEFT_BOTTOM, tag, egui::FontId::proportional(10.0), band_colour(i));
            }
        }
        if let Some(r) = &self.rubber_from.zip(hover) {
            painter.rect_stroke(Rect::from_two_pos(r.0, r.1), 0.0, Stroke::new(1.0, Color32::from_gray(180)), egui::StrokeKind::Inside);
        }
        let shown = hover.and_then(|p| Self::hit(axes, bands, p)).or_else(|| {
            let mut sel = (0..BANDS).filter(|&i| self.selected[i]);
            match (sel.next(), sel.next()) {
                (Some(i), None) => Some(i),
                _ => None,
            }
        });
        if let Some(i) = shown {
            let b = &bands[i];
            let mut text = format!("Band {}: {} {:.1} Hz", i + 1, shape_name(ShapeChoice::from_shape(b.shape)), b.freq_hz);
            if b.route != crate::shared::bands::Route::Stereo {
                text += &format!(" on {}", RouteChoice::from_route(b.route).name().to_lowercase());
            }
            if b.bypassed {
                text = format!("{text} (bypassed)");
            }
            if has_gain(b.shape) {
                text += &format!(", {:+.2} dB", b.gain_db);
            }
            if has_slope(b.shape) {
                text += &format!(", {} dB/oct {}", b.slope.db_per_oct, if b.slope.linkwitz_riley { "LR" } else { "BW" });
            } else {
                text += &format!(", Q {:.2}", b.q);
            }
            painter.text(axes.rect.left_top() + egui::vec2(6.0, 4.0), egui::Align2::LEFT_TOP, text, egui::FontId::proportional(12.0), band_colour(i));
        }
    }
}
