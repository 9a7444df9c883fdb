//! Output meters: peak and RMS per channel (bars with the figures), and a clip light that
//! stays on until clicked.

use std::sync::atomic::Ordering;

use egui::{Color32, Sense, Stroke, Vec2};

use crate::shared::telemetry::{Telemetry, METERED_CHANNELS};

/// Time over which the RMS is taken, and how fast the peak display falls.
const RMS_SECONDS: f64 = 0.3;
const PEAK_FALL_DB_PER_S: f32 = 20.0;
/// How long a peak is held before it falls.
const PEAK_HOLD_S: f32 = 1.0;
/// Bottom of the bars; below it a level reads as silence.
pub const FLOOR_DB: f32 = -60.0;

/// A shown peak (`shown_db`, held for `held_s`) after a new reading `peak_db` over `dt`
/// seconds: a higher reading is taken at once, a lower one after [`PEAK_HOLD_S`], the
/// display falling toward it at [`PEAK_FALL_DB_PER_S`]. (The output bars and the
/// input figures of `loudness.rs` alike.)
pub fn hold_peak(shown_db: &mut f32, held_s: &mut f32, peak_db: f32, dt: f32) {
    if peak_db >= *shown_db {
        (*shown_db, *held_s) = (peak_db, 0.0);
    } else {
        *held_s += dt;
        if *held_s > PEAK_HOLD_S {
            *shown_db = peak_db.max(shown_db.max(FLOOR_DB) - PEAK_FALL_DB_PER_S * dt);
        }
    }
}

/// A running mean square after `frames` new frames whose mean square is `block`: an
/// exponential average over [`RMS_SECONDS`] of audio.
pub fn average_mean_square(mean_square: &mut f64, block: f64, frames: f64, sample_rate_hz: f64) {
    if frames > 0.0 {
        let share = (frames / (RMS_SECONDS * sample_rate_hz.max(1.0))).min(1.0);
        *mean_square += share * (block.max(0.0) - *mean_square);
    }
}

/// Per channel: what is shown.
#[derive(Clone, Copy)]
struct Shown {
    peak_db: f32,
    /// Seconds the shown peak has been held.
    held_s: f32,
    rms_db: f32,
    /// (sum of squares, frames) at the last read.
    last: (f64, u64),
    mean_square: f64,
}

impl Default for Shown {
    fn default() -> Shown {
        Shown { peak_db: FLOOR_DB, held_s: 0.0, rms_db: FLOOR_DB, last: (0.0, 0), mean_square: 0.0 }
    }
}

#[derive(Default)]
pub struct Meters {
    shown: [Shown; METERED_CHANNELS],
}

fn db(x: f64) -> f32 {
    (20.0 * x.max(1e-9).log10()) as f32
}

impl Meters {
    /// Reads the audio thread's figures; `dt` is the time since the last frame.
    pub fn update(&mut self, t: &Telemetry, dt: f32, sample_rate_hz: f64) {
        for (s, m) in self.shown.iter_mut().zip(&t.meters) {
            hold_peak(&mut s.peak_db, &mut s.held_s, db(f64::from(m.take_peak())), dt);
            let (sum, frames) = m.sums();
            let (d_sum, d_frames) = (sum - s.last.0, frames.saturating_sub(s.last.1));
            s.last = (sum, frames);
            if d_frames > 0 {
                average_mean_square(&mut s.mean_square, d_sum / d_frames as f64, d_frames as f64, sample_rate_hz);
            }
            s.rms_db = db(s.mean_square.sqrt());
        }
    }

    /// (peak, RMS) in dBFS as shown for `channel`.
    pub fn levels(&self, channel: usize) -> (f32, f32) {
        let s = &self.shown[channel];
        (s.peak_db, s.rms_db)
    }

    /// One bar per channel, then the clip light.
    pub fn show(&self, ui: &mut egui::Ui, t: &Telemetry) {
        let channels = (t.channels.load(Ordering::Relaxed) as usize).clamp(1, METERED_CHANNELS);
        ui.vertical(|ui| {
            ui.spacing_mut().item_spacing.y = 1.0;
            for s in self.shown.iter().take(channels) {
                let (rect, _) = ui.allocate_exact_size(Vec2::new(110.0, 5.0), Sense::hover());
                let x = |v: f32| rect.left() + rect.width() * ((v - FLOOR_DB) / -FLOOR_DB).clamp(0.0, 1.0);
                ui.painter().rect_filled(rect, 1.0, Color32::from_gray(30));
                let colour = if s.peak_db >= 0.0 { Color32::from_rgb(230, 70, 60) } else { Color32::from_rgb(90, 190, 120) };
                ui.painter().rect_filled(egui::Rect::from_min_max(rect.min, egui::pos2(x(s.rms_db), rect.max.y)), 1.0, colour);
                ui.painter().vline(x(s.peak_db), rect.y_range(), Stroke::new(1.5, Color32::WHITE));
            }
        });
        let loudest = self.shown.iter().take(channels).map(|s| s.peak_db).fold(FLOOR_DB, f32::max);
        ui.label(format!("peak {}", if loudest <= FLOOR_DB { String::from("–∞") } else { format!("{loudest:.1} dB") }));
        let clipped = t.clipped.load(Ordering::Relaxed);
        let light = egui::Button::new(egui::RichText::new("CLIP").color(if clipped { Color32::WHITE } else { Color32::from_gray(90) }))
            .fill(if clipped { Color32::from_rgb(190, 40, 40) } else { Color32::from_gray(35) });
        if ui.add(light).on_hover_text("An output sample reached 0 dBFS; click to clear").clicked() {
            t.clipped.store(false, Ordering::Relaxed);
        }
    }
}
