//! Auto-gain: an output gain that keeps loudness constant as the bands change.
//!
//! The gain is `-10 log10(P)`, where `P` is the bands' power response averaged over a
//! reference spectrum: pink noise (equal power per octave) from 20 Hz to 20 kHz (or to
//! 0.49 fs below 40.8 kHz), optionally K-weighted as ITU-R BS.1770 weights loudness. So
//! pink noise through any band setting keeps its level (or its BS.1770 loudness).
//!
//! How: each band's squared magnitude is kept on a grid of [`GRID_POINTS`] frequencies
//! spaced evenly in log frequency (0.01 octave apart, fine enough for the narrowest bell,
//! Q 18), recomputed only when that band's settings change, at most
//! [`BANDS_PER_UPDATE`] bands per host block (so a block's cost is bounded while
//! everything is automated). The bands' routes are combined for uncorrelated, equal-power
//! left and right channels: `P = P_both * (P_left + P_right) / 2 * (P_mid + P_side) / 2`
//! (exact when only one of the three groups is used). Only the bands count, not the chain
//! stages. The gain is clamped to +-24 dB and smoothed (one pole, [`SMOOTHING_MS`]).
//!
//! Realtime-safe: [`AutoGain::new`] allocates; [`AutoGain::update`] and the per-sample
//! [`AutoGain::next_db`] never do.

use crate::shared::bands::{Band, Route, BANDS, MAX_SECTIONS_PER_BAND};
use ferrofx::design::Sos;

use crate::shared::settings::Weighting;

/// Frequencies the power response is evaluated at.
pub const GRID_POINTS: usize = 1024;
/// Bands whose response is recomputed per host block, at most.
pub const BANDS_PER_UPDATE: usize = 2;
/// Smoothing time constant of the gain.
pub const SMOOTHING_MS: f64 = 30.0;
/// Largest compensation, either way.
pub const MAX_DB: f64 = 24.0;

/// The auto-gain state (grid, per-band responses, smoothed gain).
pub struct AutoGain {
    fs: f64,
    stereo: bool,
    /// `sin^2(w/2)` per grid point.
    phi1: Vec<f64>,
    /// Integration weight per grid point (trapezoid in log frequency), pink and K-weighted.
    weights_pink: Vec<f64>,
    weights_k: Vec<f64>,
    /// Each band's squared magnitude on the grid.
    band_power: Vec<Vec<f64>>,
    /// The settings each band's response was computed for (`None`: never).
    computed: [Option<Band>; BANDS],
    /// Scratch: the combined power per group.
    groups: [Vec<f64>; 5],
    weighting: Weighting,
    target_db: f64,
    value_db: f64,
    coef: f64,
    stale: bool,
}

/// `|H|^2` of a biquad from `sin^2(w/2)` (Vicanek's well-conditioned form: exact near
/// DC where `1 + a1 + a2` is tiny, unlike the expanded cosine form).
fn power(s: &Sos, phi1: f64) -> f64 {
    let n = s.normalized();
    let phi0 = 1.0 - phi1;
    let form = |c0: f64, c1: f64, c2: f64| {
        let (p0, p1, p2) = ((c0 + c1 + c2).powi(2), (c0 - c1 + c2).powi(2), -4.0 * c0 * c2);
        p0 * phi0 + p1 * phi1 + p2 * 4.0 * phi0 * phi1
    };
    let den = form(1.0, n.a[1], n.a[2]);
    let num = form(n.b[0], n.b[1], n.b[2]);
    if den > 0.0 {
        num / den
    } else {
        1.0
    }
}

/// BS.1770's K-weighting filters at `fs` (the pre-filter shelf and the RLB high-pass,
/// with the standard's analog parameters as libebur128 derives them for any rate).
fn k_weighting(fs: f64) -> [Sos; 2] {
    let (f0, g_db, q) = (1681.974450955533, 3.999843853973347, 0.7071752369554196);
    let k = (std::f64::consts::PI * f0 / fs).tan();
    let vh = 10f64.powf(g_db / 20.0);
    let vb = vh.powf(0.4996667741545416);
    let a0 = 1.0 + k / q + k * k;
    let shelf = Sos {
        b: [(vh + vb * k / q + k * k) / a0, 2.0 * (k * k - vh) / a0, (vh - vb * k / q + k * k) / a0],
        a: [1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0],
    };
    let (f0, q) = (38.13547087602444, 0.5003270373238773);
    let k = (std::f64::consts::PI * f0 / fs).tan();
    let d = 1.0 + k / q + k * k;
    let highpass = Sos { b: [1.0, -2.0, 1.0], a: [1.0, 2.0 * (k * k - 1.0) / d, (1.0 - k / q + k * k) / d] };
    [shelf, highpass]
}

impl AutoGain {
    /// Allocates the grid for rate `fs`; `stereo` says whether the bands' routes apply.
    pub fn new(fs: f64, stereo: bool) -> AutoGain {
        let lo = 20.0f64;
        let hi = 20_000.0f64.min(0.49 * fs).max(lo * 2.0);
        let freqs: Vec<f64> = (0..GRID_POINTS).map(|i| lo * (hi / lo).powf(i as f64 / (GRID_POINTS - 1) as f64)).collect();
        let phi1: Vec<f64> = freqs.iter().map(|f| (std::f64::consts::PI * f / fs).sin().powi(2)).collect();
        // Pink noise has equal power per octave: uniform weight in log frequency.
        let step = 1.0 / (GRID_POINTS - 1) as f64;
        let pink: Vec<f64> = (0..GRID_POINTS).map(|i| if i == 0 || i == GRID_POINTS - 1 { step / 2.0 } else { step }).collect();
        let kw = k_weighting(fs);
        let mut weights_k: Vec<f64> = pink.iter().zip(&phi1).map(|(w, &p)| w * power(&kw[0], p) * power(&kw[1], p)).collect();
        let total: f64 = weights_k.iter().sum();
        weights_k.iter_mut().for_each(|w| *w /= total);
        AutoGain {
            fs,
            stereo,
            phi1,
            weights_pink: pink,
            weights_k,
            band_power: vec![vec![1.0; GRID_POINTS]; BANDS],
            computed: [None; BANDS],
            groups: std::array::from_fn(|_| vec![1.0; GRID_POINTS]),
            weighting: Weighting::Pink,
            target_db: 0.0,
            value_db: 0.0,
            coef: 1.0 - (-1.0 / (SMOOTHING_MS * 1e-3 * fs)).exp(),
            stale: true,
        }
    }

    /// Brings the target gain up to date with `bands` (at most [`BANDS_PER_UPDATE`]
    /// changed bands recomputed per call; the rest in the next calls). Allocation-free.
    pub fn update(&mut self, bands: &[Band; BANDS], weighting: Weighting) {
        self.update_some(bands, weighting, BANDS_PER_UPDATE);
    }

    /// [`AutoGain::update`] for every changed band at once (activation, reset, tests).
    pub fn update_all(&mut self, bands: &[Band; BANDS], weighting: Weighting) {
        self.update_some(bands, weighting, BANDS);
    }

    fn update_some(&mut self, bands: &[Band; BANDS], weighting: Weighting, limit: usize) {
        if weighting != self.weighting {
            self.weighting = weighting;
            self.stale = true;
        }
        let mut done = 0;
        for (i, b) in bands.iter().enumerate() {
            if done == limit {
                break;
            }
            let b = b.clamped(self.fs);
            // Bypassed and disabled bands count as flat; a band's route only matters to
            // the combination.
            let same = self.computed[i].is_some_and(|c| Self::same_response(&c, &b));
            if same {
                if self.computed[i].is_some_and(|c| c.route != b.route) {
                    self.computed[i] = Some(b);
                    self.stale = true;
                }
                continue;
            }
            let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
            let n = b.design_into(self.fs, &mut buf);
            for (p, &phi1) in self.band_power[i].iter_mut().zip(&self.phi1) {
                *p = buf[..n].iter().map(|s| power(s, phi1)).product();
            }
            self.computed[i] = Some(b);
            self.stale = true;
            done += 1;
        }
        if self.stale {
            self.stale = false;
            self.target_db = self.compensation_db();
        }
    }

    /// Whether two settings give the same power response.
    fn same_response(a: &Band, b: &Band) -> bool {
        if !a.active() && !b.active() {
            return true;
        }
        Band { route: Route::Stereo, ..*a } == Band { route: Route::Stereo, ..*b }
    }

    /// The compensation for the responses computed so far, in dB (clamped).
    fn compensation_db(&mut self) -> f64 {
        for g in self.groups.iter_mut() {
            g.fill(1.0);
        }
        for (i, c) in self.computed.iter().enumerate() {
            let Some(b) = c else { continue };
            if !b.active() {
                continue;
            }
            let group = if self.stereo { Route::ALL.iter().position(|r| *r == b.route).unwrap_or(0) } else { 0 };
            for (g, p) in self.groups[group].iter_mut().zip(&self.band_power[i]) {
                *g *= p;
            }
        }
        let weights = match self.weighting {
            Weighting::Pink => &self.weights_pink,
            Weighting::KWeighted => &self.weights_k,
        };
        let [both, l, r, m, s] = &self.groups;
        let mut total = 0.0;
        for k in 0..GRID_POINTS {
            total += weights[k] * both[k] * 0.5 * (l[k] + r[k]) * 0.5 * (m[k] + s[k]);
        }
        if total.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !total.is_finite() {
            return 0.0;
        }
        (-10.0 * total.log10()).clamp(-MAX_DB, MAX_DB)
    }

    /// The gain the current bands ask for (unsmoothed), in dB.
    pub fn target_db(&self) -> f64 {
        self.target_db
    }

    /// The smoothed gain now, in dB.
    pub fn current_db(&self) -> f64 {
        self.value_db
    }

    /// The next sample's smoothed gain in dB (call once per sample; pass `on = false`
    /// to glide back to 0 dB).
    #[inline]
    pub fn next_db(&mut self, on: bool) -> f64 {
        let target = if on { self.target_db } else { 0.0 };
        self.value_db += (target - self.value_db) * self.coef;
        // Within a micro-dB the glide ends on its target (then it holds still exactly,
        // and the output stage takes its one-pass form).
        if (target - self.value_db).abs() < 1e-6 {
            self.value_db = target;
        }
        self.value_db
    }

    /// The gain in dB while it holds still (its value equals its target, so
    /// [`AutoGain::next_db`] would return it unchanged); `None` while it moves.
    pub fn settled_db(&self, on: bool) -> Option<f64> {
        let target = if on { self.target_db } else { 0.0 };
        (self.value_db == target).then_some(target)
    }

    /// Jumps the smoothed gain to its target (activation, reset).
    pub fn snap(&mut self, on: bool) {
        self.value_db = if on { self.target_db } else { 0.0 };
    }
}
