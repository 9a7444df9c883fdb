//! The spectrum analyser, computed on the GUI thread from the windows the audio thread
//! hands over (`crate::spectrum`): Hann window, real FFT (`realfft`), power smoothed over
//! 1/6 octave around each display frequency and averaged over time, optional 4.5 dB/oct
//! tilt (pink noise reads flat), peak hold. Drawn under the response curves on its own
//! dBFS scale (a full-scale sine reads 0 dBFS).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use egui::{Color32, Mesh, Pos2, Shape, Stroke};
use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use crate::shared::spectrum::{SpectrumFeed, WINDOW};

use super::axes::{Axes, F_MIN_HZ};

/// Display points across the frequency axis.
pub const POINTS: usize = 400;
/// The analyser scale: top and bottom of the view in dBFS.
pub const TOP_DBFS: f32 = 6.0;
pub const BOTTOM_DBFS: f32 = -102.0;
/// Tilt slope and the frequency it pivots on.
pub const TILT_DB_PER_OCTAVE: f32 = 4.5;
pub const TILT_PIVOT_HZ: f32 = 1000.0;
/// Smoothing bandwidth in octaves.
pub const SMOOTHING_OCTAVES: f32 = 1.0 / 6.0;
/// Share of each new window in the time average (of power).
const NEW_SHARE: f32 = 0.4;

/// What the analyser shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    /// The output.
    Post,
    /// The input and the output.
    PrePost,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Off, Mode::Post, Mode::PrePost];
    pub fn title(self) -> &'static str {
        match self {
            Mode::Off => "Off",
            Mode::Post => "Output",
            Mode::PrePost => "In + out",
        }
    }
}

/// The analyser's state (GUI thread).
pub struct Analyser {
    pub mode: Mode,
    pub tilt: bool,
    pub peak_hold: bool,
    fft: Arc<dyn RealToComplex<f32>>,
    window: Vec<f32>,
    input: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
    /// Power per FFT bin, scaled so a sine of amplitude 1 peaks at 1.
    power: Vec<f32>,
    /// Prefix sums of `power` for band averages.
    prefix: Vec<f64>,
    last_seq: u64,
    sample_rate_hz: f32,
    /// Display frequencies and smoothed levels in dBFS (before tilt); empty until data.
    pub freqs_hz: Vec<f32>,
    pub pre_db: Vec<f32>,
    pub post_db: Vec<f32>,
    pub peak_db: Vec<f32>,
}

impl Default for Analyser {
    fn default() -> Analyser {
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(WINDOW);
        // Periodic Hann.
        let window = (0..WINDOW).map(|i| (std::f32::consts::PI * i as f32 / WINDOW as f32).sin().powi(2)).collect();
        Analyser {
            mode: Mode::Post,
            tilt: false,
            peak_hold: false,
            input: fft.make_input_vec(),
            spectrum: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            fft,
            window,
            power: vec![0.0; WINDOW / 2 + 1],
            prefix: vec![0.0; WINDOW / 2 + 2],
            last_seq: 0,
            sample_rate_hz: 0.0,
            freqs_hz: Vec::new(),
            pre_db: Vec::new(),
            post_db: Vec::new(),
            peak_db: Vec::new(),
        }
    }
}

impl Analyser {
    /// Tells the audio thread whether to feed windows, and takes the newest one.
    /// True when the picture changed.
    pub fn update(&mut self, feed: &SpectrumFeed) -> bool {
        let on = self.mode != Mode::Off;
        feed.wanted.store(on, Ordering::Relaxed);
        if !on {
            self.freqs_hz.clear();
            return false;
        }
        // Only the GUI thread takes this lock.
        let Ok(mut output) = feed.output.try_lock() else { return false };
        output.update();
        let snap = output.output_buffer();
        if snap.seq == self.last_seq || snap.sample_rate_hz <= 0.0 {
            return false;
        }
        self.last_seq = snap.seq;
        if snap.sample_rate_hz != self.sample_rate_hz || self.freqs_hz.len() != POINTS {
            self.sample_rate_hz = snap.sample_rate_hz;
            let top = 0.5 * snap.sample_rate_hz;
            self.freqs_hz = (0..POINTS).map(|i| F_MIN_HZ as f32 * (top / F_MIN_HZ as f32).powf(i as f32 / (POINTS - 1) as f32)).collect();
            self.pre_db.clear();
            self.post_db.clear();
            self.peak_db.clear();
        }
        let post_now = self.levels(&snap.post);
        let pre_now = (self.mode == Mode::PrePost).then(|| self.levels(&snap.pre));
        drop(output);
        average(&mut self.post_db, &post_now);
        match pre_now {
            Some(pre_now) => average(&mut self.pre_db, &pre_now),
            None => self.pre_db.clear(),
        }
        if self.peak_hold {
            if self.peak_db.len() != self.post_db.len() {
                self.peak_db = self.post_db.clone();
            }
            for (p, &v) in self.peak_db.iter_mut().zip(&self.post_db) {
                *p = p.max(v);
            }
        } else {
            self.peak_db.clear();
        }
        true
    }

    /// Forgets the held peaks.
    pub fn reset_peaks(&mut self) {
        self.peak_db.clear();
    }

    /// 1/6-octave smoothed levels in dBFS at the display frequencies.
    fn levels(&mut self, samples: &[f32]) -> Vec<f32> {
        for ((x, &s), &w) in self.input.iter_mut().zip(samples).zip(&self.window) {
            *x = s * w;
        }
        if self.fft.process_with_scratch(&mut self.input, &mut self.spectrum, &mut self.scratch).is_err() {
            return Vec::new();
        }
        // A sine of amplitude A gives |X| = A * sum(w) / 2 at its bin.
        let norm = 2.0 / self.window.iter().sum::<f32>();
        for (p, c) in self.power.iter_mut().zip(&self.spectrum) {
            *p = (c.norm() * norm).powi(2);
        }
        self.prefix[0] = 0.0;
        for k in 0..self.power.len() {
            self.prefix[k + 1] = self.prefix[k] + f64::from(self.power[k]);
        }
        let bin_hz = self.sample_rate_hz / WINDOW as f32;
        let half = 2f32.powf(SMOOTHING_OCTAVES / 2.0);
        let last = self.power.len() - 1;
        self.freqs_hz
            .iter()
            .map(|&f| {
                let (lo, hi) = (f / half / bin_hz, f * half / bin_hz);
                let (a, b) = (lo.ceil() as usize, (hi.floor() as usize).min(last));
                // Three bins or more: their mean; fewer (low frequencies): interpolate,
                // so the curve stays smooth and peaks where the tone is.
                let p = if b >= a + 2 && a <= last {
                    ((self.prefix[b + 1] - self.prefix[a]) / (b + 1 - a) as f64) as f32
                } else {
                    // Narrower than a bin: interpolate between the two nearest bins.
                    let x = (f / bin_hz).min(last as f32);
                    let k = (x.floor() as usize).min(last - 1);
                    let t = x - k as f32;
                    self.power[k] * (1.0 - t) + self.power[k + 1] * t
                };
                10.0 * p.max(1e-14).log10()
            })
            .collect()
    }

    /// The display frequency with the highest output level, if any data arrived.
    pub fn peak_hz(&self) -> Option<f32> {
        let (i, _) = self.post_db.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
        Some(self.freqs_hz[i])
    }

    /// The tilt added at `freq_hz`, in dB.
    pub fn tilt_db(&self, freq_hz: f32) -> f32 {
        if self.tilt {
            TILT_DB_PER_OCTAVE * (freq_hz / TILT_PIVOT_HZ).log2()
        } else {
            0.0
        }
    }

    /// Screen y of a level in dBFS.
    pub fn y_of_dbfs(axes: &Axes, dbfs: f32) -> f32 {
        let u = ((dbfs - BOTTOM_DBFS) / (TOP_DBFS - BOTTOM_DBFS)).clamp(0.0, 1.0);
        axes.rect.bottom() - u * axes.rect.height()
    }

    /// Draws the output filled, the input as a line and the held peaks as a line.
    pub fn draw(&self, painter: &egui::Painter, axes: &Axes) {
        if self.mode == Mode::Off || self.post_db.len() != self.freqs_hz.len() || self.freqs_hz.is_empty() {
            return;
        }
        let points = |db: &[f32]| -> Vec<Pos2> {
            self.freqs_hz.iter().zip(db).map(|(&f, &v)| Pos2::new(axes.x_of_hz(f64::from(f)), Analyser::y_of_dbfs(axes, v + self.tilt_db(f)))).collect()
        };
        let post = points(&self.post_db);
        let mut mesh = Mesh::default();
        let fill = Color32::from_rgba_unmultiplied(110, 160, 220, 46);
        let bottom = axes.rect.bottom();
        for p in &post {
            mesh.colored_vertex(*p, fill);
            mesh.colored_vertex(Pos2::new(p.x, bottom), fill);
        }
        for k in 1..post.len() as u32 {
            let (a, b, c, d) = (2 * k - 2, 2 * k - 1, 2 * k, 2 * k + 1);
            mesh.add_triangle(a, b, c);
            mesh.add_triangle(b, d, c);
        }
        painter.add(Shape::mesh(mesh));
        painter.add(Shape::line(post, Stroke::new(1.0, Color32::from_rgb(120, 170, 230))));
        if self.pre_db.len() == self.freqs_hz.len() {
            painter.add(Shape::line(points(&self.pre_db), Stroke::new(1.0, Color32::from_gray(120))));
        }
        if self.peak_db.len() == self.freqs_hz.len() {
            painter.add(Shape::line(points(&self.peak_db), Stroke::new(1.0, Color32::from_rgb(230, 120, 150))));
        }
        painter.text(
            axes.rect.left_top() + egui::vec2(40.0, 4.0),
            egui::Align2::LEFT_TOP,
            format!("analyser {TOP_DBFS:+.0} to {BOTTOM_DBFS:.0} dBFS{}", if self.tilt { ", tilt 4.5 dB/oct" } else { "" }),
            egui::FontId::proportional(10.0),
            Color32::from_gray(120),
        );
    }
}

/// Averages `now` into `held` in power (the first window is taken as it is).
fn average(held: &mut Vec<f32>, now: &[f32]) {
    if held.len() != now.len() {
        *held = now.to_vec();
        return;
    }
    for (h, &n) in held.iter_mut().zip(now) {
        let p = (1.0 - NEW_SHARE) * 10f32.powf(*h / 10.0) + NEW_SHARE * 10f32.powf(n / 10.0);
        *h = 10.0 * p.max(1e-14).log10();
    }
}
