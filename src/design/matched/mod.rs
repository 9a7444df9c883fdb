//! Analog-matched biquads and cuts: the cookbook's shapes (same `freq_hz`, `q`,
//! `gain_db`) and the Butterworth / Linkwitz-Riley low- and high-pass, with a magnitude
//! that follows their analog prototype up to Nyquist, instead of cramping toward it as
//! the bilinear transform does. A biquad is one section wherever one section comes within
//! [`COOKBOOK_WITHIN_DB`] of the prototype: the cookbook biquad itself where that one is
//! already (most bells and shelves below a few kHz at 48 kHz: the bilinear transform's
//! cramping grows toward Nyquist), else a single section fitted as below (a bell of Q 0.7
//! at +-3 dB up to about 10 kHz at 48 kHz); only where neither is, two sections (a
//! fourth-order digital filter). A cut is two sections per pole pair of its prototype
//! ([`cut_matched_into`]).
//!
//! Method: a rational least-squares fit of the squared magnitude, in the spirit of M.
//! Vicanek, "Matched Second Order Digital Filters" (2016), who writes a biquad's squared
//! magnitude as a polynomial in `phi = sin^2(w/2)` and matches it to the analog one at
//! chosen frequencies; here two sections give room for a least-squares fit instead of
//! three matched points. Steps:
//! 1. The analog prototype `|H(j omega)|^2` (evaluated analytically) is sampled at
//!    `POINTS` frequencies: DC, a log-spaced grid from `f0/200` to Nyquist, clusters
//!    around the shape's features (`f0`, or a shelf's two corners) and an even grid over
//!    0.3-0.45 `fs`, the top of the judged range.
//! 2. The digital squared magnitude is `F(x) N(x) / D(x)` with `x = phi / phi(f0)`
//!    (polynomials of degree 4 in `x`; scaling by `phi(f0)` keeps the fit well conditioned
//!    for any `f0`, 20 Hz included). `F` holds the zeros the shape must have exactly: a
//!    zero at DC for band-passes, two for the high-pass (one per pole of a cut's piece),
//!    the notch's pair on the unit circle at `f0`.
//! 3. `N` and `D` (with `D(0) = 1`) minimise the relative error, linearised as in
//!    Sanathanan and Koerner (1963): up to eight rounds of weighted linear least squares
//!    (Householder QR), each weighted by the last round's `1 / (T D)`, stopping early once
//!    the denominator no longer moves. Where the largest error over the judged samples
//!    (within 60 dB of the peak, up to 0.9 Nyquist) is still above 0.04 dB, up to twelve
//!    Lawson rounds (C. L. Lawson, 1961: each sample's weight multiplied by its error)
//!    move the fit toward the minimax one; the best round is kept.
//! 4. Spectral factorisation: each root `x_r` of `N` and `D` gives `phi_r`, hence the pair
//!    `z + 1/z = 2 - 4 phi_r`, of which the root inside the unit circle is kept (minimum
//!    phase, stable). The roots pair into two sections; the gain is set midway between
//!    the largest and smallest ratio of target to design over the judged samples.
//!
//! The single section is the same fit with `N` and `D` of degree 2 (`fit::fit_one`), tried
//! only where the cookbook biquad misses and kept only where its own largest error over
//! the judged samples is within [`COOKBOOK_WITHIN_DB`]; `tests/matched.rs` checks that two
//! sections are never spent where an independent single-section design (Orfanidis' bell
//! with its Nyquist gain prescribed, 1997) is within 0.03 dB.
//!
//! Accuracy (`tests/matched.rs`, against the analog prototypes evaluated there, on a grid
//! of `f0` from 20 Hz to 0.45 `fs`, Q 0.1-18, gains +-24 dB, at 44.1/48/96 kHz, up to 0.9
//! Nyquist, plus a seeded random sweep at rates to 192 kHz): every shape within 0.1 dB
//! (measured worst: bells 0.054, a single fitted section for a Q 10, +24 dB bell at 11 kHz
//! at 48 kHz, whose narrow peak falls between the fit's samples; 0.041 before single
//! sections were fitted; shelves 0.08 at Q 18; notch, band-passes, low- and high-pass
//! 0.05), and
//! cuts of every order to 24 within 0.1 dB (0.07). The all-pass has a magnitude of 1
//! either way and stays the cookbook's.
//!
//! Code map: this file holds the public entry points and the cookbook prototypes;
//! `fit.rs` the fit itself (sampling, the weighted least squares and Lawson rounds,
//! factorisation into sections, the gain); `numeric.rs` its numerical parts (Householder
//! least squares, polynomial roots, the map from `x` roots to `z`); `cut.rs` the matched
//! Butterworth and Linkwitz-Riley cuts built from fourth-order pieces of the fit.
//!
//! Cost: about 0.06 ms per bell or shelf fit on an AMD Zen 5 core (0.1 ms on the Xeons
//! of `docs/perf-history.md` before the least squares' row-wise passes; several times that where
//! Lawson rounds run; no allocation, fixed-size stack arrays; `benchmarks/probes/examples/matched_probe.rs`
//! times it), so it may run on the audio thread, but not at the equaliser's 32-sample
//! re-design rate for every moving band; see the plugin's `bands/mod.rs` for how it is
//! scheduled.

mod cut;
mod fit;
mod numeric;

pub use cut::{cut_matched_into, cut_sections, MAX_CUT_ORDER};

use super::rbj::{self, BiquadKind};
use super::Sos;
use fit::{fit_one, fit_samples, Fixed, Samples};

/// Sections a matched design has.
pub const MATCHED_SECTIONS: usize = 2;

/// The cookbook's analog prototype of `kind`, as `(numerator, denominator)` polynomials in
/// `s` normalised to `f0` (`[c2, c1, c0]` for `c2 s^2 + c1 s + c0`).
pub fn analog_prototype(kind: BiquadKind, q: f64, gain_db: f64) -> ([f64; 3], [f64; 3]) {
    let a = 10f64.powf(gain_db / 40.0);
    let den = [1.0, 1.0 / q, 1.0];
    match kind {
        BiquadKind::Lowpass => ([0.0, 0.0, 1.0], den),
        BiquadKind::Highpass => ([1.0, 0.0, 0.0], den),
        BiquadKind::Bandpass => ([0.0, 1.0 / q, 0.0], den),
        BiquadKind::BandpassSkirt => ([0.0, 1.0, 0.0], den),
        BiquadKind::Notch => ([1.0, 0.0, 1.0], den),
        BiquadKind::Allpass => ([1.0, -1.0 / q, 1.0], den),
        BiquadKind::Peaking => ([1.0, a / q, 1.0], [1.0, 1.0 / (a * q), 1.0]),
        BiquadKind::LowShelf => ([a, a * a.sqrt() / q, a * a], [a, a.sqrt() / q, 1.0]),
        BiquadKind::HighShelf => ([a * a, a * a.sqrt() / q, a], [1.0, a.sqrt() / q, a]),
    }
}

/// `|H(j omega)|^2` of a prototype polynomial at `omega` (in units of `f0`).
pub fn analog_mag2(p: &[f64; 3], omega: f64) -> f64 {
    let re = p[2] - p[0] * omega * omega;
    let im = p[1] * omega;
    re * re + im * im
}

/// An analog-matched biquad keeps one section (the cookbook biquad, or a single fitted
/// section) where that one is within this many dB of the analog prototype, over the
/// samples the fit judges (within 60 dB of the peak, up to 0.9 Nyquist): the fit's own aim
/// (above it, the fit runs its minimax rounds). Below a few kHz at 48 kHz most bells and
/// shelves are within it as cookbook biquads already.
pub const COOKBOOK_WITHIN_DB: f64 = fit::LAWSON_TRIGGER_DB;

/// Designs an analog-matched `kind` into `out` and returns its section count: the
/// cookbook biquad alone (1) where it is within [`COOKBOOK_WITHIN_DB`] of the analog
/// prototype, else one fitted section (1) where that is, else the two sections of the fit
/// (see the module docs). `gain_db` is
/// ignored by shapes without gain; `freq_hz` must lie in `(0, fs/2)` and `q > 0`, as for
/// [`rbj::biquad`]. Where the fit cannot be factorised (not seen on the tested grid), the
/// cookbook biquad is returned, so the result is always a stable filter of that shape.
/// The all-pass is always the cookbook's (its magnitude is 1 either way). No allocation.
pub fn biquad_matched_into(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: f64, fs: f64, out: &mut [Sos; MATCHED_SECTIONS]) -> usize {
    let gain_db = if kind.uses_gain() { gain_db } else { 0.0 };
    let cookbook = rbj::biquad(kind, freq_hz, q, gain_db, fs);
    *out = [cookbook, Sos::IDENTITY];
    if kind == BiquadKind::Allpass || !(freq_hz > 0.0 && freq_hz < fs / 2.0 && q > 0.0 && gain_db.is_finite()) {
        return 1;
    }
    let (num, den) = analog_prototype(kind, q, gain_db);
    let fixed = match kind {
        BiquadKind::Bandpass | BiquadKind::BandpassSkirt => Fixed::Dc(1),
        BiquadKind::Highpass => Fixed::Dc(2),
        BiquadKind::Notch => Fixed::Notch,
        _ => Fixed::None,
    };
    let a = 10f64.powf(gain_db / 40.0);
    let shelf = matches!(kind, BiquadKind::LowShelf | BiquadKind::HighShelf);
    let centres = if shelf { Some([freq_hz * a.sqrt(), freq_hz / a.sqrt()]) } else { None };
    let target = |om: f64| analog_mag2(&num, om) / analog_mag2(&den, om);
    let Some(samples) = Samples::new(&target, freq_hz, q, centres, fs) else { return 1 };
    if samples.worst_db(&[cookbook]).is_some_and(|e| e <= COOKBOOK_WITHIN_DB) {
        return 1;
    }
    if let Some(one) = fit_one(&samples, fixed).filter(|one| samples.worst_db(&[*one]).is_some_and(|e| e <= COOKBOOK_WITHIN_DB)) {
        out[0] = one;
        return 1;
    }
    match fit_samples(&samples, fixed) {
        Some(sections) => {
            *out = sections;
            MATCHED_SECTIONS
        }
        None => 1,
    }
}

/// [`biquad_matched_into`] as two sections, the second the identity where one suffices.
pub fn biquad_matched(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: f64, fs: f64) -> [Sos; MATCHED_SECTIONS] {
    let mut out = [Sos::IDENTITY; MATCHED_SECTIONS];
    biquad_matched_into(kind, freq_hz, q, gain_db, fs, &mut out);
    out
}
