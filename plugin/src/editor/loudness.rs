//! Input and output levels and loudness: the input's peak and RMS (the output's are the
//! bars of `meters.rs`), and for both the loudness of ITU-R BS.1770-4 / EBU R 128:
//! momentary (400 ms), short-term (3 s) and integrated (gated, since the last reset),
//! measured here on the GUI thread by the `ebur128` crate from every frame the audio
//! thread hands over while the editor is open (`shared/loudness.rs`). So integrated
//! loudness covers what played while the editor was open; a reset, a new channel count
//! or a new sample rate starts it again. Channels are weighted by the crate's default
//! map for the count (1: mono; 2: left, right; 4: left, right, surrounds; 6: 5.1 with
//! the LFE left out; 8: the 5.1 map and two channels more).

use ebur128::{EbuR128, Mode};

use super::meters::{average_mean_square, hold_peak, FLOOR_DB};
use crate::shared::loudness::{LoudnessFeed, HEADER};

/// One side (input or output): its loudness meter and the peak and RMS shown.
pub struct Side {
    meter: Option<EbuR128>,
    /// Largest magnitude and sum of squares of what arrived since the last display
    /// update, and its samples.
    block_peak: f32,
    block_sum: f64,
    block_samples: u64,
    pub peak_db: f32,
    held_s: f32,
    mean_square: f64,
}

impl Default for Side {
    fn default() -> Side {
        Side { meter: None, block_peak: 0.0, block_sum: 0.0, block_samples: 0, peak_db: FLOOR_DB, held_s: 0.0, mean_square: 0.0 }
    }
}

fn lufs(r: Result<f64, ebur128::Error>) -> Option<f64> {
    r.ok().filter(|v| v.is_finite())
}

impl Side {
    fn add(&mut self, interleaved: &[f32]) {
        for &v in interleaved {
            self.block_peak = self.block_peak.max(v.abs());
            self.block_sum += f64::from(v) * f64::from(v);
        }
        self.block_samples += interleaved.len() as u64;
        if let Some(m) = self.meter.as_mut() {
            // Only a wrong length fails, and every record holds whole frames.
            let _ = m.add_frames_f32(interleaved);
        }
    }

    /// Advances the peak hold and the RMS average by what arrived over `dt` seconds.
    fn settle(&mut self, dt: f32, sample_rate_hz: f64, channels: usize) {
        hold_peak(&mut self.peak_db, &mut self.held_s, 20.0 * self.block_peak.max(1e-9).log10(), dt);
        if self.block_samples > 0 {
            let frames = self.block_samples as f64 / channels.max(1) as f64;
            average_mean_square(&mut self.mean_square, self.block_sum / self.block_samples as f64, frames, sample_rate_hz);
        }
        (self.block_peak, self.block_sum, self.block_samples) = (0.0, 0.0, 0);
    }

    /// RMS over the last 0.3 s (all channels; `meters::average_mean_square`), in dBFS.
    pub fn rms_db(&self) -> f32 {
        (10.0 * self.mean_square.max(1e-18).log10()) as f32
    }
    /// Momentary loudness (400 ms) in LUFS; `None` before any audio or in silence.
    pub fn momentary_lufs(&self) -> Option<f64> {
        self.meter.as_ref().and_then(|m| lufs(m.loudness_momentary()))
    }
    /// Short-term loudness (3 s) in LUFS.
    pub fn short_term_lufs(&self) -> Option<f64> {
        self.meter.as_ref().and_then(|m| lufs(m.loudness_shortterm()))
    }
    /// Integrated (gated) loudness since the last reset, in LUFS.
    pub fn integrated_lufs(&self) -> Option<f64> {
        self.meter.as_ref().and_then(|m| lufs(m.loudness_global()))
    }
}

/// The meters' state on the GUI thread.
#[derive(Default)]
pub struct Loudness {
    pub input: Side,
    pub output: Side,
    /// (channels, sample rate in Hz) the meters measure.
    layout: Option<(usize, u32)>,
    scratch: Vec<f32>,
    /// Blocks the audio thread left out (the editor fell behind), as last read.
    pub dropped_blocks: u64,
}

impl Loudness {
    /// Starts every measurement again (integrated loudness included).
    pub fn reset(&mut self) {
        for side in [&mut self.input, &mut self.output] {
            if let Some(m) = side.meter.as_mut() {
                m.reset();
            }
            *side = Side { meter: side.meter.take(), ..Side::default() };
        }
    }

    fn relayout(&mut self, channels: usize, rate: u32) {
        for side in [&mut self.input, &mut self.output] {
            *side = Side { meter: EbuR128::new(channels as u32, rate, Mode::I | Mode::S | Mode::M).ok(), ..Side::default() };
        }
        self.layout = Some((channels, rate));
    }

    /// Asks the audio thread for samples (until the editor closes), takes every complete
    /// record it handed over and advances the displays by `dt` seconds. Returns whether
    /// samples arrived.
    pub fn update(&mut self, feed: &LoudnessFeed, dt: f32) -> bool {
        feed.wanted.store(true, std::sync::atomic::Ordering::Relaxed);
        self.dropped_blocks = feed.dropped_blocks.load(std::sync::atomic::Ordering::Relaxed);
        let mut arrived = false;
        {
            let Ok(mut rings) = feed.rings.lock() else { return false };
            let Some((input, output)) = rings.as_mut() else { return false };
            // A record is complete once the output ring holds it (its input went first);
            // its header is read without taking it.
            while let Ok(head) = output.read_chunk(HEADER) {
                let (a, b) = head.as_slices();
                let mut h = a.iter().chain(b).copied();
                let mut next = || h.next().unwrap_or(0.0);
                let (channels, frames, rate) = (next() as usize, next() as usize, next() as u32);
                let need = HEADER + channels * frames;
                if output.slots() < need || input.slots() < need {
                    break;
                }
                if self.layout != Some((channels, rate)) {
                    self.relayout(channels, rate);
                }
                for (ring, side) in [(&mut *input, &mut self.input), (&mut *output, &mut self.output)] {
                    let Ok(chunk) = ring.read_chunk(need) else { break };
                    let (a, b) = chunk.as_slices();
                    self.scratch.clear();
                    self.scratch.extend(a.iter().chain(b).skip(HEADER));
                    chunk.commit_all();
                    side.add(&self.scratch);
                }
                arrived = true;
            }
        }
        if let Some((channels, rate)) = self.layout {
            self.input.settle(dt, f64::from(rate), channels);
            self.output.settle(dt, f64::from(rate), channels);
        }
        arrived
    }

    /// The figures, a line per side, and a reset button.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        let level = |db: f32| if db <= FLOOR_DB { String::from("–∞") } else { format!("{db:.1}") };
        let loud = |v: Option<f64>| v.map_or(String::from("–∞"), |v| format!("{v:.1}"));
        ui.vertical(|ui| {
            ui.spacing_mut().item_spacing.y = 0.0;
            for (name, side) in [("In", &self.input), ("Out", &self.output)] {
                ui.label(
                    egui::RichText::new(format!(
                        // Fixed-width fields: the line never changes length, so the
                        // layout around it stays put while the figures move.
                        "{name:<3} peak {:>5} RMS {:>5} dBFS  M {:>5} S {:>5} I {:>5} LUFS",
                        level(side.peak_db),
                        level(side.rms_db()),
                        loud(side.momentary_lufs()),
                        loud(side.short_term_lufs()),
                        loud(side.integrated_lufs())
                    ))
                    .monospace()
                    .size(10.0),
                );
            }
        });
        let reset = ui.small_button("Reset loudness").on_hover_text(if self.dropped_blocks > 0 {
            format!("Integrated loudness since the last reset, while the editor was open ({} blocks not metered: the editor fell behind)", self.dropped_blocks)
        } else {
            String::from("Integrated loudness since the last reset, while the editor was open")
        });
        if reset.clicked() {
            self.reset();
        }
    }
}
