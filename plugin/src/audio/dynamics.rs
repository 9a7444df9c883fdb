//! Dynamic EQ: a band whose gain follows the level of its own frequency region.
//!
//! Per dynamic band:
//! - **Detector**: the input (all channels, before the equaliser; or the sidechain input,
//!   for a band set to it, where the host connects one) through the band's own
//!   band-pass (the cookbook's 0 dB-peak band-pass at the band's frequency and Q), its
//!   power averaged by a one-pole of [`DETECTOR_MS`] (or two periods of the band's
//!   frequency, if longer); the level in dB is that power plus
//!   3.01 dB, so a sine at the band's frequency reads its peak level (0 dBFS at full
//!   scale), whatever the channel count (the loudest channel counts).
//! - **Gain computer** ([`static_delta_db`]): above the threshold, the band's gain moves
//!   by `(level - threshold) (1 - 1/ratio)` dB down for ratios above 1 (compression), or
//!   `(level - threshold) (1/ratio - 1)` dB up for ratios below 1 (upward expansion),
//!   at most `range_db` either way; below the threshold it stays at its set gain.
//! - **Ballistics**: that change is smoothed in dB by a one-pole with the attack time
//!   while it grows and the release time while it shrinks (the "branching" smoother of
//!   Giannoulis, Massberg and Reiss, JAES 2012). The attack smoother is shortened by half
//!   the detector's time constant, so that the gain change's time constant after a step
//!   in level is the attack time, detector included (measured within 10 % at 1 kHz,
//!   `tests/dynamics.rs`), as far as a fifth of the attack allows: low bands, whose
//!   detector averages two periods, attack somewhat slower than set. The release time is
//!   the smoother's own (the detector adds a few ms).
//!
//! The equaliser applies the change every 32 samples through the same coefficient glide
//! as automation (see `equaliser/cascade.rs`). A dynamic band uses the cookbook design, not the
//! analog-matched one: its gain moves all the time, and a matched design costs a hundred
//! times more. Realtime-safe: [`Dynamics::new`] allocates, nothing else does.

use crate::shared::settings::{static_delta_db, DynamicSettings};
use ferrofx::design::{rbj, BiquadKind};

use crate::shared::bands::{Band, BANDS};

/// Time constant of the detector's power average.
pub const DETECTOR_MS: f64 = 2.0;

/// One band's detector state.
#[derive(Clone, Copy, Debug, Default)]
struct Detector {
    /// Band-pass coefficients (normalised) and the frequency/Q they are for.
    b: [f64; 3],
    a: [f64; 2],
    designed_for: (f64, f64),
    /// Smoothing coefficients (detector power, attack, release) and the band frequency,
    /// attack and release they are for.
    coefs: [f64; 3],
    coefs_for: (f64, f64, f64),
    /// Smoothed power and the smoothed gain change.
    power: f64,
    delta_db: f64,
}

/// The detectors of all bands.
pub struct Dynamics {
    fs: f64,
    detectors: [Detector; BANDS],
    /// Band-pass state per band and channel (TDF-II).
    state: Vec<[f64; 2]>,
    channels: usize,
}

impl Dynamics {
    /// Allocates the detectors for `channels` channels at `fs`.
    pub fn new(fs: f64, channels: usize) -> Dynamics {
        Dynamics {
            fs,
            detectors: [Detector::default(); BANDS],
            state: vec![[0.0; 2]; BANDS * channels.max(1)],
            channels: channels.max(1),
        }
    }

    /// Clears the detectors (the host's reset). Allocation-free.
    pub fn reset(&mut self) {
        for d in self.detectors.iter_mut() {
            d.power = 0.0;
            d.delta_db = 0.0;
        }
        self.state.fill([0.0; 2]);
    }

    /// Runs the detectors of the dynamic bands over planar `input` (the signal before the
    /// equaliser). Bands that are not dynamic, or not active, glide back to no change.
    /// No allocation.
    pub fn process(&mut self, input: &[&mut [f32]], sidechain: Option<&[&[f32]]>, bands: &[Band; BANDS], settings: &[DynamicSettings; BANDS]) {
        let frames = input.iter().map(|c| c.len()).min().unwrap_or(0);
        let frames = sidechain.map_or(frames, |sc| sc.iter().map(|c| c.len()).min().unwrap_or(0).min(frames));
        let fs = self.fs;
        for (i, (d, (band, s))) in self.detectors.iter_mut().zip(bands.iter().zip(settings)).enumerate() {
            if !(s.on && band.active()) {
                // Switched off: the change releases back to none (no jump).
                if d.delta_db != 0.0 {
                    let release = 1.0 - (-1.0 / (s.release_ms.max(0.01) * 1e-3 * fs)).exp();
                    d.delta_db *= (1.0 - release).powi(frames as i32);
                    if d.delta_db.abs() < 1e-6 {
                        d.delta_db = 0.0;
                    }
                }
                d.power = 0.0;
                continue;
            }
            let band = band.clamped(fs);
            if d.designed_for != (band.freq_hz, band.q) {
                let n = rbj::biquad(BiquadKind::Bandpass, band.freq_hz, band.q, 0.0, fs).normalized();
                d.b = n.b;
                d.a = [n.a[1], n.a[2]];
                d.designed_for = (band.freq_hz, band.q);
            }
            if d.coefs_for != (band.freq_hz, s.attack_ms, s.release_ms) {
                // The power average spans at least two periods of the band's frequency,
                // so a low band's level does not ripple.
                let tau_s = (DETECTOR_MS * 1e-3).max(2.0 / band.freq_hz);
                // The detector's averaging delays a rising level by about half its time
                // constant; the attack smoother takes that off, so the attack time is the
                // gain change's time constant for a step in level, detector included.
                let attack_s = (s.attack_ms.max(0.01) * 1e-3 - 0.5 * tau_s).max(0.8 * s.attack_ms.max(0.01) * 1e-3);
                let coef = |t_s: f64| 1.0 - (-1.0 / (t_s * fs)).exp();
                d.coefs = [coef(tau_s), coef(attack_s), coef(s.release_ms.max(0.01) * 1e-3)];
                d.coefs_for = (band.freq_hz, s.attack_ms, s.release_ms);
            }
            let [power_coef, attack, release] = d.coefs;
            // The detector's input: the sidechain where asked for and connected.
            let side = sidechain.filter(|_| s.sidechain);
            let channels = side.map_or(input.len(), |sc| sc.len()).min(self.channels);
            let states = &mut self.state[i * self.channels..i * self.channels + channels];
            for k in 0..frames {
                // The loudest channel's band-passed power.
                let mut p = 0.0f64;
                for (c, st) in states.iter_mut().enumerate() {
                    let x = f64::from(match side {
                        Some(sc) => sc[c][k],
                        None => input[c][k],
                    });
                    let y = d.b[0] * x + st[0];
                    st[0] = d.b[1] * x - d.a[0] * y + st[1];
                    st[1] = d.b[2] * x - d.a[1] * y;
                    p = p.max(y * y);
                }
                d.power += (p - d.power) * power_coef;
                let level_db = 10.0 * (2.0 * d.power).max(1e-30).log10();
                let target = static_delta_db(s, level_db);
                // Attack while the change grows, release while it shrinks.
                let coef = if target.abs() > d.delta_db.abs() { attack } else { release };
                d.delta_db += (target - d.delta_db) * coef;
            }
            // Denormal guard on silence.
            if d.delta_db.abs() < 1e-12 {
                d.delta_db = 0.0;
            }
        }
    }

    /// Whether any band's gain is changed now (a band switched off may still be releasing).
    pub fn any_change(&self) -> bool {
        self.detectors.iter().any(|d| d.delta_db != 0.0)
    }

    /// Band `i`'s current gain change in dB.
    pub fn delta_db(&self, i: usize) -> f64 {
        self.detectors.get(i).map_or(0.0, |d| d.delta_db)
    }
}
