//! The response view's picture: grid with Hz and dB labels, each enabled band's own
//! response filled faintly in its colour (a bypassed band's as a dashed outline only, and
//! left out of the total), and the total (bands, chain stages and output gain) drawn bold.

use egui::{Color32, Pos2, Shape, Stroke, Vec2};
use ferrofx::design::{sos_response, Sos};
use ferrofx::DesignedChain;
use num_complex::Complex64;

use crate::shared::bands::{Band, BANDS, MAX_SECTIONS_PER_BAND};

use super::axes::{hz_label, Axes};

/// Points across the view at which responses are evaluated.
pub const POINTS: usize = 256;

/// Band `i`'s colour (12 hues, repeating).
pub fn band_colour(i: usize) -> Color32 {
    let hue = (i % 12) as f32 / 12.0;
    egui::ecolor::Hsva::new(hue, 0.6, 0.95, 1.0).into()
}

/// Relative frequency step of the group-delay difference quotient.
const GD_STEP: f64 = 1e-4;

/// The responses the view draws, in dB at each of [`POINTS`] frequencies.
pub struct Responses {
    pub freqs_hz: Vec<f64>,
    /// Per enabled band: (index, dB per point), bypassed ones included (what they would
    /// do); see [`Responses::bypassed`].
    pub bands: Vec<(usize, Vec<f32>)>,
    /// Which bands are bypassed (not in the total).
    pub bypassed: [bool; BANDS],
    /// Which bands act on one channel, mid or side of a stereo layout: drawn alone, not
    /// in the total (which is the response of the bands on both channels).
    pub routed: [bool; BANDS],
    /// Dynamic bands: (index, dB per point) of the band at the far end of its dynamic
    /// range (its set gain moved by the whole range, the way its ratio goes).
    pub dynamic_extremes: Vec<(usize, Vec<f32>)>,
    /// Dynamic bands moved by their dynamics now: (index, frequency in Hz, set gain and
    /// gain now in dB), for the node's marker. Their curves and the total are drawn at
    /// the gain now.
    pub live_nodes: Vec<(usize, f64, f32, f32)>,
    pub total_db: Vec<f32>,
    /// The total's phase in degrees (wrapped to ±180) and group delay in milliseconds
    /// (empty unless asked for).
    pub phase_deg: Vec<f32>,
    pub group_delay_ms: Vec<f32>,
}

/// The frequencies the view evaluates: its [`POINTS`] (below Nyquist) and, with
/// `group_delay`, each one again a relative step above (for the difference quotient).
pub fn eval_freqs(axes: &Axes, fs: f64, group_delay: bool) -> Vec<f64> {
    let view: Vec<f64> = (0..POINTS).map(|i| axes.hz_at_x(axes.rect.left() + axes.rect.width() * i as f32 / (POINTS - 1) as f32).min(0.4999 * fs)).collect();
    if !group_delay {
        return view;
    }
    let above: Vec<f64> = view.iter().map(|f| f * (1.0 + GD_STEP)).collect();
    [view, above].concat()
}

/// The chain stages' complex response at `freqs_hz` ([`eval_freqs`]). Costly for long
/// FIRs: the editor computes it once per chain, rate and view.
pub fn chain_response(chain: &DesignedChain, freqs_hz: &[f64]) -> Vec<Complex64> {
    freqs_hz.iter().map(|&f| chain.response(f)).collect()
}

/// Evaluates every band, the chain stages (`chain_h` from [`chain_response`] at the same
/// [`eval_freqs`]) and the output gain at the view's frequencies; the group delay only
/// with `group_delay`. With `stereo`, bands routed to one channel, mid or side are left out
/// of the total (see [`Responses::routed`]); on other layouts every band is in it.
/// `live_db`: each band's dynamic gain change now (the audio thread's, 0 where none): a
/// dynamic band's curve and its share of the total are drawn at its gain moved by it.
#[allow(clippy::too_many_arguments)]
pub fn responses(
    axes: &Axes,
    bands: &[Band; BANDS],
    dynamics: &[crate::shared::settings::DynamicSettings; BANDS],
    live_db: &[f32; BANDS],
    chain_h: Option<&[Complex64]>,
    output_gain_db: f32,
    fs: f64,
    group_delay: bool,
    stereo: bool,
    fir: Option<crate::control::linear::FirMode>,
) -> Responses {
    let mut extremes = Vec::new();
    let mut live_nodes = Vec::new();
    let routed: [bool; BANDS] = std::array::from_fn(|i| stereo && bands[i].enabled && bands[i].route != crate::shared::bands::Route::Stereo);
    let freqs = eval_freqs(axes, fs, group_delay);
    let db = |h: f64| (20.0 * h.max(1e-12).log10()) as f32;
    let mut total: Vec<Complex64> = match chain_h {
        Some(h) if h.len() == freqs.len() => h.to_vec(),
        _ => vec![Complex64::new(1.0, 0.0); freqs.len()],
    };
    let mut per_band = Vec::new();
    for (i, b) in bands.iter().enumerate() {
        if !b.enabled {
            continue;
        }
        let in_fir = fir.is_some() && crate::control::linear::in_fir(b, stereo);
        // Analog phase: the band with its correction is the analog prototype.
        let analog = in_fir && fir == Some(crate::control::linear::FirMode::Analog);
        let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
        // A bypassed band is designed as if it acted (its own curve is drawn), but left
        // out of the total.
        let live = if b.dynamic && live_db[i].is_finite() { f64::from(live_db[i]) } else { 0.0 };
        let now = Band { bypassed: false, gain_db: b.gain_db + live, ..*b }.clamped(fs);
        if live != 0.0 {
            live_nodes.push((i, now.freq_hz, b.gain_db as f32, now.gain_db as f32));
        }
        let n = now.design_into(fs, &mut buf);
        let mut mags = Vec::with_capacity(POINTS);
        for (k, (t, &f)) in total.iter_mut().zip(&freqs).enumerate() {
            let h = sos_response(&buf[..n], f, fs);
            if !b.bypassed && !routed[i] {
                // In linear phase the FIR carries this band's magnitude, not its phase;
                // in analog phase the band follows its analog prototype.
                *t *= if analog {
                    now.analog_response(f)
                } else if in_fir {
                    Complex64::new(h.norm(), 0.0)
                } else {
                    h
                };
            }
            if k < POINTS {
                mags.push(db(h.norm()));
            }
        }
        per_band.push((i, mags));
        if b.dynamic {
            let s = &dynamics[i];
            let moved = if s.ratio >= 1.0 { -s.range_db.abs() } else { s.range_db.abs() };
            let far = Band { bypassed: false, gain_db: b.gain_db + moved, ..b.clamped(fs) };
            let n = far.design_into(fs, &mut buf);
            extremes.push((i, freqs[..POINTS.min(freqs.len())].iter().map(|&f| db(sos_response(&buf[..n], f, fs).norm())).collect()));
        }
    }
    // Linear phase delays everything by half the FIR, analog phase by its correction's delay.
    if let Some(mode) = fir {
        let delay_s = mode.latency(fs) as f64 / fs;
        for (t, &f) in total.iter_mut().zip(&freqs) {
            *t *= Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * f * delay_s);
        }
    }
    let (view, above) = total.split_at(POINTS.min(total.len()));
    let group_delay_ms = view
        .iter()
        .zip(above)
        .zip(&freqs)
        .map(|((h, h2), &f)| {
            // -dφ/dω from the phase of h2/h over the step (no unwrapping needed).
            let dphi = (h2 / h).arg();
            (-dphi / (2.0 * std::f64::consts::PI * f * GD_STEP) * 1e3) as f32
        })
        .collect();
    Responses {
        freqs_hz: freqs[..view.len()].to_vec(),
        bands: per_band,
        bypassed: std::array::from_fn(|i| bands[i].enabled && bands[i].bypassed),
        routed,
        dynamic_extremes: extremes,
        live_nodes,
        total_db: view.iter().map(|h| db(h.norm()) + output_gain_db).collect(),
        phase_deg: view.iter().map(|h| h.arg().to_degrees() as f32).collect(),
        group_delay_ms,
    }
}

/// What the second curve over the magnitudes shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlay {
    None,
    Phase,
    GroupDelay,
}

impl Overlay {
    pub const ALL: [Overlay; 3] = [Overlay::None, Overlay::Phase, Overlay::GroupDelay];
    pub fn title(self) -> &'static str {
        match self {
            Overlay::None => "Magnitude",
            Overlay::Phase => "+ phase",
            Overlay::GroupDelay => "+ group delay",
        }
    }
}

/// Draws the total's phase (±180° over the view's height) or group delay (0 to the
/// largest value shown, at least 1 ms), with its scale on the right.
pub fn draw_overlay(painter: &egui::Painter, axes: &Axes, r: &Responses, overlay: Overlay) {
    let rect = axes.rect;
    let (values, top, bottom, unit): (&[f32], f32, f32, &str) = match overlay {
        Overlay::None => return,
        Overlay::Phase => (&r.phase_deg, 180.0, -180.0, "°"),
        Overlay::GroupDelay => {
            let max = r.group_delay_ms.iter().filter(|v| v.is_finite()).fold(1.0f32, |m, &v| m.max(v));
            (&r.group_delay_ms, (max * 1.1).ceil(), 0.0, " ms")
        }
    };
    let y = |v: f32| rect.bottom() - ((v - bottom) / (top - bottom)).clamp(0.0, 1.0) * rect.height();
    let colour = Color32::from_rgb(150, 220, 150);
    let mut run: Vec<Pos2> = Vec::new();
    for (&f, &v) in r.freqs_hz.iter().zip(values) {
        let p = Pos2::new(axes.x_of_hz(f), y(v));
        // Phase wraps: break the line where it jumps by more than half the range.
        if let Some(last) = run.last() {
            if (last.y - p.y).abs() > rect.height() / 2.0 && overlay == Overlay::Phase {
                painter.add(Shape::line(std::mem::take(&mut run), Stroke::new(1.5, colour)));
            }
        }
        if v.is_finite() {
            run.push(p);
        }
    }
    painter.add(Shape::line(run, Stroke::new(1.5, colour)));
    for (v, align) in [(top, egui::Align2::RIGHT_TOP), (bottom, egui::Align2::RIGHT_BOTTOM)] {
        let at = Pos2::new(rect.right() - 4.0, if v == top { rect.top() + 16.0 } else { rect.bottom() - 14.0 });
        painter.text(at, align, format!("{v:.0}{unit}"), egui::FontId::proportional(10.0), colour);
    }
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
        let line: Vec<Pos2> = xs.iter().zip(db).map(|(&x, &v)| Pos2::new(x, axes.y_of_db(v.clamp(-lim, lim)))).collect();
        if r.bypassed[*i] {
            painter.extend(Shape::dashed_line(&line, Stroke::new(1.0, colour.gamma_multiply(0.45)), 4.0, 4.0));
            continue;
        }
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
        painter.add(Shape::line(line, Stroke::new(1.0, colour.gamma_multiply(0.7))));
    }
    // Dynamic bands: how far their dynamics can take them, dashed.
    for (i, db) in &r.dynamic_extremes {
        let line: Vec<Pos2> = xs.iter().zip(db).map(|(&x, &v)| Pos2::new(x, axes.y_of_db(v.clamp(-lim, lim)))).collect();
        painter.extend(Shape::dashed_line(&line, Stroke::new(1.2, band_colour(*i)), 6.0, 3.0));
    }
    // A dynamic band moved by its dynamics: a line from its node to a ring at the gain now.
    for &(i, f, set_db, now_db) in &r.live_nodes {
        let x = axes.x_of_hz(f);
        let (from, to) = (Pos2::new(x, axes.y_of_db(set_db.clamp(-lim, lim))), Pos2::new(x, axes.y_of_db(now_db.clamp(-lim, lim))));
        painter.line_segment([from, to], Stroke::new(1.5, band_colour(i)));
        painter.circle_stroke(to, 4.0, Stroke::new(1.5, band_colour(i)));
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
    if r.routed.iter().any(|&x| x) {
        painter.text(
            axes.rect.right_top() + Vec2::new(-6.0, 18.0),
            egui::Align2::RIGHT_TOP,
            "bold: bands on both channels; L/R/M/S bands shown alone",
            egui::FontId::proportional(10.0),
            Color32::from_gray(150),
        );
    }
}
