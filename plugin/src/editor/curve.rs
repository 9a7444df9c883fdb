//! The response view's picture: grid with Hz and dB labels, each enabled band's own
//! response filled faintly in its colour, and the total (bands, chain stages and output
//! gain) drawn bold.

use egui::{Color32, Pos2, Shape, Stroke, Vec2};
use ferrofx::design::{sos_response, Sos};
use ferrofx::DesignedChain;

use crate::bands::{Band, BANDS, MAX_SECTIONS_PER_BAND};

use super::axes::{hz_label, Axes};

/// Points across the view at which responses are evaluated.
pub const POINTS: usize = 256;

/// Band `i`'s colour (12 hues, repeating).
pub fn band_colour(i: usize) -> Color32 {
    let hue = (i % 12) as f32 / 12.0;
    egui::ecolor::Hsva::new(hue, 0.6, 0.95, 1.0).into()
}

/// The responses the view draws, in dB at each of [`POINTS`] frequencies.
pub struct Responses {
    pub freqs_hz: Vec<f64>,
    /// Per enabled band: (index, dB per point).
    pub bands: Vec<(usize, Vec<f32>)>,
    pub total_db: Vec<f32>,
}

/// Evaluates every band, the chain stages and the output gain at the view's frequencies
/// (below Nyquist).
pub fn responses(axes: &Axes, bands: &[Band; BANDS], chain: Option<&DesignedChain>, output_gain_db: f32, fs: f64) -> Responses {
    let freqs_hz: Vec<f64> = (0..POINTS)
        .map(|i| axes.hz_at_x(axes.rect.left() + axes.rect.width() * i as f32 / (POINTS - 1) as f32).min(0.4999 * fs))
        .collect();
    let db = |h: f64| (20.0 * h.max(1e-12).log10()) as f32;
    let mut total: Vec<f64> = freqs_hz.iter().map(|&f| chain.map_or(1.0, |c| c.response(f).norm())).collect();
    let mut per_band = Vec::new();
    for (i, b) in bands.iter().enumerate() {
        if !b.enabled {
            continue;
        }
        let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
        let n = b.clamped(fs).design_into(fs, &mut buf);
        let mags: Vec<f64> = freqs_hz.iter().map(|&f| sos_response(&buf[..n], f, fs).norm()).collect();
        for (t, m) in total.iter_mut().zip(&mags) {
            *t *= m;
        }
        per_band.push((i, mags.into_iter().map(db).collect()));
    }
    Responses { freqs_hz, bands: per_band, total_db: total.into_iter().map(|h| db(h) + output_gain_db).collect() }
}

/// Draws the grid and its labels.
pub fn draw_grid(painter: &egui::Painter, axes: &Axes) {
    let rect = axes.rect;
    painter.rect_filled(rect, 4.0, Color32::from_gray(18));
    let grid = Stroke::new(1.0, Color32::from_gray(42));
    let label = |pos: Pos2, align, text: String| {
        painter.text(pos, align, text, egui::FontId::proportional(10.0), Color32::from_gray(125));
    };
    for f in axes.grid_hz() {
        let x = axes.x_of_hz(f);
        painter.line_segment([Pos2::new(x, rect.top()), Pos2::new(x, rect.bottom())], grid);
        let lead = f / 10f64.powi(f.log10().floor() as i32);
        if (lead - 2.0).abs() > 1e-9 || f < 1000.0 {
            label(Pos2::new(x + 2.0, rect.bottom() - 12.0), egui::Align2::LEFT_TOP, hz_label(f));
        }
    }
    for db in axes.grid_db() {
        let y = axes.y_of_db(db);
        let stroke = if db == 0.0 { Stroke::new(1.0, Color32::from_gray(85)) } else { grid };
        painter.line_segment([Pos2::new(rect.left(), y), Pos2::new(rect.right(), y)], stroke);
        if db.abs() < axes.range.db() {
            label(Pos2::new(rect.left() + 3.0, y), egui::Align2::LEFT_BOTTOM, if db == 0.0 { String::from("0 dB") } else { format!("{db:+} dB") });
        }
    }
}

/// Draws each band's response filled faintly toward 0 dB, then the total bold.
pub fn draw_responses(painter: &egui::Painter, axes: &Axes, r: &Responses, selected: &[bool; BANDS]) {
    let lim = axes.range.db();
    let y0 = axes.y_of_db(0.0);
    let xs: Vec<f32> = r.freqs_hz.iter().map(|&f| axes.x_of_hz(f)).collect();
    for (i, db) in &r.bands {
        let colour = band_colour(*i);
        let fill = colour.gamma_multiply(if selected[*i] { 0.28 } else { 0.14 });
        // One quad per step between neighbouring points: exact for curves that cross 0 dB.
        for k in 1..xs.len() {
            let (a, b) = (db[k - 1].clamp(-lim, lim), db[k].clamp(-lim, lim));
            let quad = vec![
                Pos2::new(xs[k - 1], y0),
                Pos2::new(xs[k - 1], axes.y_of_db(a)),
                Pos2::new(xs[k], axes.y_of_db(b)),
                Pos2::new(xs[k], y0),
            ];
            painter.add(Shape::convex_polygon(quad, fill, Stroke::NONE));
        }
        let line: Vec<Pos2> = xs.iter().zip(db).map(|(&x, &v)| Pos2::new(x, axes.y_of_db(v.clamp(-lim, lim)))).collect();
        painter.add(Shape::line(line, Stroke::new(1.0, colour.gamma_multiply(0.7))));
    }
    let total: Vec<Pos2> = xs
        .iter()
        .zip(&r.total_db)
        .filter(|(_, v)| v.is_finite())
        .map(|(&x, &v)| Pos2::new(x, axes.y_of_db(v.clamp(-lim, lim))))
        .collect();
    painter.add(Shape::line(total, Stroke::new(2.5, Color32::from_rgb(255, 196, 90))));
    painter.text(
        axes.rect.right_top() + Vec2::new(-6.0, 4.0),
        egui::Align2::RIGHT_TOP,
        format!("to {} Hz (Nyquist)", hz_label(axes.f_max_hz)),
        egui::FontId::proportional(10.0),
        Color32::from_gray(130),
    );
}
