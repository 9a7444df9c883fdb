//! Settings the control side hands to the audio thread besides the bands: a band's
//! dynamics (and the gain curve they ask for), the auto gain's weighting, and the band
//! the editor listens to (solo).

use std::sync::atomic::{AtomicU32, Ordering};

/// One band's dynamic settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DynamicSettings {
    pub on: bool,
    pub threshold_db: f64,
    /// Above 1: the gain goes down above the threshold; below 1: up.
    pub ratio: f64,
    pub attack_ms: f64,
    pub release_ms: f64,
    /// Largest change of the band's gain, in dB.
    pub range_db: f64,
    /// The detector listens to the sidechain input instead of the band's input (where
    /// the host connects one; otherwise to the input).
    pub sidechain: bool,
}

impl Default for DynamicSettings {
    fn default() -> DynamicSettings {
        DynamicSettings { on: false, threshold_db: -20.0, ratio: 2.0, attack_ms: 10.0, release_ms: 150.0, range_db: 6.0, sidechain: false }
    }
}

/// The gain change (dB) the settings ask for at a steady detector level (dB).
pub fn static_delta_db(s: &DynamicSettings, level_db: f64) -> f64 {
    let over = level_db - s.threshold_db;
    if over.is_nan() || over <= 0.0 || s.ratio.is_nan() || s.ratio <= 0.0 {
        return 0.0;
    }
    let delta = if s.ratio >= 1.0 { -over * (1.0 - 1.0 / s.ratio) } else { over * (1.0 / s.ratio - 1.0) };
    delta.clamp(-s.range_db.abs(), s.range_db.abs())
}

/// What loudness is kept constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighting {
    /// Pink noise's plain power.
    Pink,
    /// Pink noise's BS.1770 K-weighted power.
    KWeighted,
}

/// The band being listened to (editor → audio thread).
#[derive(Default)]
pub struct SoloControl {
    /// 0: none; otherwise the band index plus one.
    band: AtomicU32,
}

impl SoloControl {
    pub fn get(&self) -> Option<usize> {
        match self.band.load(Ordering::Relaxed) {
            0 => None,
            b => Some(b as usize - 1),
        }
    }

    pub fn set(&self, band: Option<usize>) {
        self.band.store(band.map_or(0, |b| b as u32 + 1), Ordering::Relaxed);
    }
}

