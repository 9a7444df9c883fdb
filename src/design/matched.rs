//! Analog-matched biquads and cuts: the cookbook's shapes (same `freq_hz`, `q`,
//! `gain_db`) and the Butterworth / Linkwitz-Riley low- and high-pass, with a magnitude
//! that follows their analog prototype up to Nyquist, instead of cramping toward it as
//! the bilinear transform does. Each biquad is two second-order sections (a fourth-order
//! digital filter); a cut is two sections per pole pair of its prototype
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
//! Accuracy (`tests/matched.rs`, against the analog prototypes evaluated there, on a grid
//! of `f0` from 20 Hz to 0.45 `fs`, Q 0.1-18, gains +-24 dB, at 44.1/48/96 kHz, up to 0.9
//! Nyquist, plus a seeded random sweep at rates to 192 kHz): every shape within 0.1 dB
//! (bells 0.03, shelves 0.08 at Q 18, notch, band-passes, low- and high-pass 0.05), and
//! cuts of every order to 24 within 0.1 dB (0.07). The all-pass has a magnitude of 1
//! either way and stays the cookbook's.
//!
//! Cost: about 0.1 ms per fit (0.3 ms where Lawson rounds run; no allocation,
//! fixed-size stack arrays), so it may run on the audio thread, but not at the
//! equaliser's 32-sample re-design rate for every moving band; see the plugin's
//! `bands.rs` for how it is scheduled.

use super::rbj::{self, BiquadKind};
use super::Sos;
use num_complex::Complex64;
use std::f64::consts::PI;

/// Sections a matched design has.
pub const MATCHED_SECTIONS: usize = 2;

const LOG_POINTS: usize = 128;
const CLUSTER: usize = 34;
/// Extra samples evenly spread over the top of the judged range (0.3 to 0.45 `fs`), where
/// the log grid is sparse against a matched band's features.
const EDGE: usize = 12;
const POINTS: usize = 1 + LOG_POINTS + CLUSTER + EDGE;
const ROUNDS: usize = 8;
/// Lawson rounds at most, where the least-squares fit's largest error is above
/// `LAWSON_TRIGGER_DB`.
const LAWSON_ROUNDS: usize = 12;
const LAWSON_TRIGGER_DB: f64 = 0.04;
/// dB per neper of a squared magnitude's log: `10 / ln 10`.
const DB_PER_NEPER: f64 = 4.342_944_819_032_518;
/// Unknowns: numerator coefficients (at most 5) and denominator ones after `d0 = 1` (4).
const MAX_UNKNOWNS: usize = 9;

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

/// Zeros the shape must have exactly (see the module docs).
#[derive(Clone, Copy, PartialEq)]
enum Fixed {
    None,
    /// `x^k` (`k` of 1 to 4): `k` zeros at DC (band-passes one, a second-order
    /// high-pass two, a cut of analog order `k` `k`).
    Dc(usize),
    /// `(x - 1)^2`: the pair on the unit circle at `f0`.
    Notch,
}

/// Designs an analog-matched `kind` (two sections; see the module docs). `gain_db` is
/// ignored by shapes without gain; `freq_hz` must lie in `(0, fs/2)` and `q > 0`, as for
/// [`rbj::biquad`]. Where the fit cannot be factorised (not seen on the tested grid), the
/// cookbook biquad is returned, so the result is always a stable filter of that shape.
/// No allocation.
pub fn biquad_matched(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: f64, fs: f64) -> [Sos; MATCHED_SECTIONS] {
    let cookbook = [rbj::biquad(kind, freq_hz, q, gain_db, fs), Sos::IDENTITY];
    if kind == BiquadKind::Allpass {
        return cookbook;
    }
    fit(kind, freq_hz, q, if kind.uses_gain() { gain_db } else { 0.0 }, fs).unwrap_or(cookbook)
}

fn fit(kind: BiquadKind, f0: f64, q: f64, gain_db: f64, fs: f64) -> Option<[Sos; MATCHED_SECTIONS]> {
    if !(f0 > 0.0 && f0 < fs / 2.0 && q > 0.0 && gain_db.is_finite()) {
        return None;
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
    let centres = if shelf { Some([f0 * a.sqrt(), f0 / a.sqrt()]) } else { None };
    let target = |om: f64| analog_mag2(&num, om) / analog_mag2(&den, om);
    fit_target(&target, fixed, f0, q, centres, fs)
}

/// The fit of the module docs for any squared analog magnitude `target` (a function of
/// frequency in units of `f0`) of at most fourth order: samples clustered around `f0`
/// (width from `q`) or around the two `centres` given, zeros `fixed` kept exact.
fn fit_target(target: &dyn Fn(f64) -> f64, fixed: Fixed, f0: f64, q: f64, centres: Option<[f64; 2]>, fs: f64) -> Option<[Sos; MATCHED_SECTIONS]> {
    if !(f0 > 0.0 && f0 < fs / 2.0 && q > 0.0) {
        return None;
    }
    let w0 = 2.0 * PI * f0 / fs;
    let s = (w0 / 2.0).sin().powi(2);
    let kn = match fixed {
        Fixed::None => 4,
        Fixed::Dc(k) => 4 - k.clamp(1, 4),
        Fixed::Notch => 2,
    };
    let unknowns = kn + 1 + 4;

    // Sample frequencies.
    let mut freqs = [0.0f64; POINTS];
    let lo = (f0 / 200.0).max(1.0).min(fs / 4.0);
    let hi = fs / 2.0;
    for (i, f) in freqs[1..=LOG_POINTS].iter_mut().enumerate() {
        *f = lo * (hi / lo).powf(i as f64 / (LOG_POINTS - 1) as f64);
    }
    let bw = (1.5 / q).min(2.0);
    let two = centres.is_some();
    let centres = centres.unwrap_or([f0, f0]);
    let per = CLUSTER / 2;
    for (c, centre) in centres.iter().enumerate() {
        for k in 0..per {
            let t = -3.0 + 6.0 * k as f64 / (per - 1) as f64;
            // Shift the second copy of a single centre by half a step.
            let t = if !two && c == 1 { t + 3.0 / (per - 1) as f64 } else { t };
            let f = centre * (t * bw).exp2();
            freqs[1 + LOG_POINTS + c * per + k] = if f < hi { f } else { hi * 0.999 };
        }
    }
    for (k, f) in freqs[1 + LOG_POINTS + CLUSTER..].iter_mut().enumerate() {
        *f = fs * (0.3 + 0.15 * k as f64 / (EDGE - 1) as f64);
    }

    // Targets and abscissae.
    let mut x = [0.0f64; POINTS];
    let mut t = [0.0f64; POINTS];
    let mut t_max = 0.0f64;
    for i in 0..POINTS {
        x[i] = (PI * freqs[i] / fs).sin().powi(2) / s;
        t[i] = target(freqs[i] / f0);
        t_max = t_max.max(t[i]);
    }
    if !(t_max.is_finite() && t_max > 0.0) {
        return None;
    }
    let floor = 1e-12 * t_max;
    let fix = |xi: f64| match fixed {
        Fixed::None => 1.0,
        Fixed::Dc(k) => xi.powi(k as i32),
        Fixed::Notch => (xi - 1.0) * (xi - 1.0),
    };

    // Sanathanan-Koerner rounds of weighted linear least squares; then, where the
    // largest error over the judged samples (within 60 dB of the peak, up to 0.9 of
    // Nyquist) is above `LAWSON_TRIGGER_DB`, Lawson rounds that weight each judged sample
    // by its error so far, moving the least-squares fit toward the minimax one. The best
    // round (by that largest error) is kept.
    let judged = |i: usize| t[i] > 1e-6 * t_max && freqs[i] <= 0.45 * fs;
    // Half the spread of the log ratio of design to target over the judged samples (the
    // largest dB error once the gain is set midway) and the midpoint.
    let spread = |c: &[f64; 5], d: &[f64; 5]| {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..POINTS {
            if judged(i) {
                let r = (fix(x[i]) * poly(&c[..=kn], x[i]) / (poly(d, x[i]) * t[i])).abs().ln();
                lo = lo.min(r);
                hi = hi.max(r);
            }
        }
        ((hi - lo) / 2.0, (hi + lo) / 2.0)
    };
    let mut d_prev = [1.0f64; POINTS];
    let mut u = [1.0f64; POINTS];
    let mut c = [0.0f64; 5];
    let mut d = [1.0f64, 0.0, 0.0, 0.0, 0.0];
    let mut best: Option<(f64, [f64; 5], [f64; 5])> = None;
    let mut lawson = 0;
    let mut m = [[0.0f64; MAX_UNKNOWNS]; POINTS];
    let mut rhs = [0.0f64; POINTS];
    for round in 0..ROUNDS + LAWSON_ROUNDS {
        let mut rows = 0;
        for i in 0..POINTS {
            if t[i] <= floor {
                continue;
            }
            let w = u[i] / (t[i] * d_prev[i].abs().max(1e-300));
            let mut p = fix(x[i]);
            for cell in m[rows][..=kn].iter_mut() {
                *cell = w * p;
                p *= x[i];
            }
            let mut p = x[i];
            for k in 0..4 {
                m[rows][kn + 1 + k] = -w * t[i] * p;
                p *= x[i];
            }
            rhs[rows] = w * t[i];
            rows += 1;
        }
        let Some(sol) = least_squares(&mut m[..rows], &mut rhs[..rows], unknowns) else {
            if best.is_some() {
                break;
            }
            return None;
        };
        // Converged when the denominator no longer moves (the weights would not change).
        let mut change = 0.0f64;
        for i in 0..POINTS {
            let v = poly(&[1.0, sol[kn + 1], sol[kn + 2], sol[kn + 3], sol[kn + 4]], x[i]);
            change = change.max(((v - d_prev[i]) / d_prev[i].abs().max(1e-300)).abs());
            d_prev[i] = v;
        }
        c[..=kn].copy_from_slice(&sol[..=kn]);
        d[1..5].copy_from_slice(&sol[kn + 1..unknowns]);
        if lawson == 0 && change >= 1e-6 && round + 1 < ROUNDS {
            continue;
        }
        let (err, mid) = spread(&c, &d);
        if err.is_finite() && best.as_ref().is_none_or(|b| err < b.0) {
            best = Some((err, c, d));
        }
        if lawson >= LAWSON_ROUNDS || (lawson == 0 && !(err * DB_PER_NEPER > LAWSON_TRIGGER_DB)) || !err.is_finite() {
            break;
        }
        lawson += 1;
        let mut total = 0.0;
        let mut count = 0.0;
        for i in 0..POINTS {
            if judged(i) {
                let r = (fix(x[i]) * poly(&c[..=kn], x[i]) / (poly(&d, x[i]) * t[i])).abs().ln();
                u[i] *= (r - mid).abs().max(1e-3 * err);
                total += u[i];
                count += 1.0;
            }
        }
        if !(total > 0.0 && total.is_finite()) {
            break;
        }
        for i in 0..POINTS {
            if judged(i) {
                u[i] *= count / total;
            }
        }
    }
    let (_, c, d) = best?;

    // Zeros and poles in z.
    let mut zeros = [Complex64::new(0.0, 0.0); 4];
    let mut nz = 0;
    match fixed {
        Fixed::None => {}
        Fixed::Dc(k) => {
            nz = k.clamp(1, 4);
            zeros[..nz].fill(Complex64::new(1.0, 0.0));
        }
        Fixed::Notch => {
            zeros[0] = Complex64::from_polar(1.0, w0);
            zeros[1] = zeros[0].conj();
            nz = 2;
        }
    }
    let (xr, nr) = roots(&c[..=kn], 1.0 / s)?;
    let (zr, n_free) = to_z(&xr[..nr], s)?;
    if nz + n_free > 4 {
        return None;
    }
    zeros[nz..nz + n_free].copy_from_slice(&zr[..n_free]);
    let (xp, np) = roots(&d, 1.0 / s)?;
    let (poles, _) = to_z(&xp[..np], s)?;
    // Missing degrees (a vanishing leading coefficient) are roots at the origin.
    let mut poles = poles;
    // A real pole and zero that (nearly) coincide cancel: both go to the origin, so no
    // section keeps a pole just inside the unit circle for nothing.
    for p in poles.iter_mut().filter(|p| p.im == 0.0 && p.re != 0.0) {
        if let Some(z) = zeros.iter_mut().find(|z| z.im == 0.0 && (z.re - p.re).abs() < 1e-6) {
            *z = Complex64::new(0.0, 0.0);
            *p = Complex64::new(0.0, 0.0);
        }
    }
    let zq = quadratics(&zeros)?;
    let pq = quadratics(&poles)?;
    // Each pole pair with the zero pair nearest to it; the pole pair with the lower
    // angle first (a stable order while a band's frequency moves).
    let angle = |q: &[f64; 2]| if q[1] > 0.0 { (-q[0] / (2.0 * q[1].sqrt())).clamp(-1.0, 1.0).acos() } else { 0.0 };
    let (p_first, p_second) = if angle(&pq[0]) <= angle(&pq[1]) { (pq[0], pq[1]) } else { (pq[1], pq[0]) };
    let dist = |a: &[f64; 2], b: &[f64; 2]| (a[0] - b[0]).abs() + (a[1] - b[1]).abs();
    let (z_first, z_second) = if dist(&zq[0], &p_first) + dist(&zq[1], &p_second) <= dist(&zq[1], &p_first) + dist(&zq[0], &p_second) {
        (zq[0], zq[1])
    } else {
        (zq[1], zq[0])
    };
    let mut out = [
        Sos { b: [1.0, z_first[0], z_first[1]], a: [1.0, p_first[0], p_first[1]] },
        Sos { b: [1.0, z_second[0], z_second[1]], a: [1.0, p_second[0], p_second[1]] },
    ];

    // Gain: midway between the largest and smallest log ratio of target to design over
    // the samples within 60 dB of the peak (where the dB error is judged), which
    // minimises the largest dB error for the shape found.
    let (mut lo_ln, mut hi_ln) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..POINTS {
        if t[i] <= 1e-6 * t_max || freqs[i] > 0.45 * fs {
            continue;
        }
        let w = 2.0 * PI * freqs[i] / fs;
        let h = out[0].response(w) * out[1].response(w);
        let h2 = h.norm_sqr();
        if h2 > 0.0 && h2.is_finite() {
            let r = (t[i] / h2).ln();
            lo_ln = lo_ln.min(r);
            hi_ln = hi_ln.max(r);
        }
    }
    if !(lo_ln.is_finite() && hi_ln.is_finite()) {
        return None;
    }
    let (sum, count) = (lo_ln + hi_ln, 2.0);
    let k = (sum / count / 2.0).exp();
    for b in out[0].b.iter_mut() {
        *b *= k;
    }
    (out.iter().all(|s| s.is_finite() && s.is_stable())).then_some(out)
}

/// Highest analog order of a matched cut.
pub const MAX_CUT_ORDER: usize = 24;
/// Highest analog order of a piece fitted as two sections.
const PIECE_ORDER: usize = 2;

/// Sections a matched cut of analog `order` designs to: two per fourth order.
pub fn cut_sections(order: usize) -> usize {
    2 * order.div_ceil(PIECE_ORDER)
}

/// One factor of a Butterworth prototype: a pole pair of quality `q`, or the real pole
/// (`q` 0.5, order 1).
#[derive(Clone, Copy)]
struct Factor {
    order: usize,
    q: f64,
}

impl Factor {
    /// `|H(j omega)|^2` of the low-pass factor, `omega` in units of the cutoff.
    fn lowpass_mag2(self, om: f64) -> f64 {
        if self.order == 1 {
            1.0 / (1.0 + om * om)
        } else {
            let re = 1.0 - om * om;
            1.0 / (re * re + om * om / (self.q * self.q))
        }
    }
}

/// An analog-matched Butterworth (or, with `linkwitz_riley`, Linkwitz-Riley: the
/// Butterworth of `order / 2` twice) low- or high-pass of analog `order`, written to
/// `out`; returns the section count ([`cut_sections`]), 0 when the arguments are out of
/// range (another response, order 0 or above [`MAX_CUT_ORDER`], an odd Linkwitz-Riley
/// order, `cutoff_hz` outside `(0, fs/2)`, `out` too short).
///
/// The prototype's factors (pole pairs and the real pole) are grouped into pieces of at
/// most fourth order, each piece fitted as two sections by the method of the module docs
/// (a high-pass keeps its zeros at DC exactly), so the whole follows the analog
/// `1 / (1 + (f / fc)^(2 order))` (or its high-pass mirror) up to Nyquist instead of
/// cramping toward it. Where a piece cannot be factorised (not seen on the tested grid)
/// the bilinear design of [`super::butterworth_into`] is written instead, so the result is
/// always a stable cut of that order. No allocation.
pub fn cut_matched_into(response: super::Response, order: usize, linkwitz_riley: bool, cutoff_hz: f64, fs: f64, out: &mut [Sos]) -> usize {
    let highpass = match response {
        super::Response::Lowpass => false,
        super::Response::Highpass => true,
        _ => return 0,
    };
    let n_out = cut_sections(order);
    if order == 0 || order > MAX_CUT_ORDER || (linkwitz_riley && order % 2 != 0) || out.len() < n_out || !(cutoff_hz > 0.0 && cutoff_hz < fs / 2.0) {
        return 0;
    }
    // The prototype's factors, in order of rising q (the real pole first).
    let mut factors = [Factor { order: 0, q: 0.0 }; MAX_CUT_ORDER];
    let mut nf = 0;
    let butterworth = if linkwitz_riley { order / 2 } else { order };
    for _ in 0..if linkwitz_riley { 2 } else { 1 } {
        if butterworth % 2 == 1 {
            factors[nf] = Factor { order: 1, q: 0.5 };
            nf += 1;
        }
        for m in 0..butterworth / 2 {
            let zeta = (PI * (2 * m + 1) as f64 / (2 * butterworth) as f64).sin();
            factors[nf] = Factor { order: 2, q: 0.5 / zeta };
            nf += 1;
        }
    }
    factors[..nf].sort_by(|a, b| a.q.total_cmp(&b.q));
    // Pieces: the highest q left with the lowest ones that still fit in fourth order.
    let (mut lo, mut hi) = (0, nf);
    let mut written = 0;
    while lo < hi {
        hi -= 1;
        let mut piece = [factors[hi]; 4];
        let mut np = 1;
        let mut piece_order = factors[hi].order;
        while lo < hi && piece_order + factors[lo].order <= PIECE_ORDER {
            piece[np] = factors[lo];
            piece_order += factors[lo].order;
            np += 1;
            lo += 1;
        }
        let piece = &piece[..np];
        let target = |om: f64| {
            let lp = piece.iter().fold(1.0, |acc, f| acc * f.lowpass_mag2(om));
            if highpass {
                lp * om.powi(2 * piece_order as i32)
            } else {
                lp
            }
        };
        let fixed = if highpass { Fixed::Dc(piece_order) } else { Fixed::None };
        match fit_target(&target, fixed, cutoff_hz, factors[hi].q, None, fs) {
            Some(pair) => {
                out[written..written + MATCHED_SECTIONS].copy_from_slice(&pair);
                written += MATCHED_SECTIONS;
            }
            None => return bilinear_cut(response, order, linkwitz_riley, cutoff_hz, fs, out),
        }
    }
    // Pieces of less than fourth order leave sections unused: identities.
    out[written..n_out].fill(Sos::IDENTITY);
    n_out
}

/// The bilinear cut of [`super::butterworth_into`] in the matched cut's section count.
fn bilinear_cut(response: super::Response, order: usize, linkwitz_riley: bool, cutoff_hz: f64, fs: f64, out: &mut [Sos]) -> usize {
    let n_out = cut_sections(order);
    let n = if linkwitz_riley {
        let half = super::butterworth_into(response, order / 2, cutoff_hz, fs, out);
        let (first, second) = out.split_at_mut(half);
        second[..half].copy_from_slice(&first[..half]);
        2 * half
    } else {
        super::butterworth_into(response, order, cutoff_hz, fs, out)
    };
    out[n..n_out].fill(Sos::IDENTITY);
    n_out
}

/// `sum c_k x^k`.
fn poly(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck)
}

/// Least squares `min |M y - r|` for the first `n` columns of `m`, by Householder QR with
/// column scaling. `None` when the system is rank deficient or not finite.
fn least_squares(m: &mut [[f64; MAX_UNKNOWNS]], r: &mut [f64], n: usize) -> Option<[f64; MAX_UNKNOWNS]> {
    let rows = m.len();
    if rows < n {
        return None;
    }
    let mut scale = [1.0f64; MAX_UNKNOWNS];
    for (j, sc) in scale.iter_mut().enumerate().take(n) {
        let norm = m.iter().map(|row| row[j] * row[j]).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        *sc = norm;
        for row in m.iter_mut() {
            row[j] /= norm;
        }
    }
    for j in 0..n {
        // Householder reflection of column j below the diagonal.
        let norm = m[j..].iter().map(|row| row[j] * row[j]).sum::<f64>().sqrt();
        if norm == 0.0 {
            return None;
        }
        let alpha = if m[j][j] > 0.0 { -norm } else { norm };
        let v0 = m[j][j] - alpha;
        // v = (v0, m[j+1..][j]); H = I - 2 v v^T / (v^T v).
        let vtv = v0 * v0 + m[j + 1..].iter().map(|row| row[j] * row[j]).sum::<f64>();
        if vtv == 0.0 {
            continue;
        }
        for k in j + 1..n {
            let dot = v0 * m[j][k] + m[j + 1..].iter().map(|row| row[j] * row[k]).sum::<f64>();
            let f = 2.0 * dot / vtv;
            m[j][k] -= f * v0;
            for row in m[j + 1..].iter_mut() {
                row[k] -= f * row[j];
            }
        }
        let dot = v0 * r[j] + m[j + 1..].iter().zip(&r[j + 1..]).map(|(row, ri)| row[j] * ri).sum::<f64>();
        let f = 2.0 * dot / vtv;
        r[j] -= f * v0;
        for (row, ri) in m[j + 1..].iter().zip(r[j + 1..].iter_mut()) {
            *ri -= f * row[j];
        }
        m[j][j] = alpha;
    }
    let mut y = [0.0f64; MAX_UNKNOWNS];
    for j in (0..n).rev() {
        let mut acc = r[j];
        for k in j + 1..n {
            acc -= m[j][k] * y[k];
        }
        if m[j][j].abs() < 1e-13 {
            return None;
        }
        y[j] = acc / m[j][j];
    }
    for j in 0..n {
        y[j] /= scale[j];
    }
    y[..n].iter().all(|v| v.is_finite()).then_some(y)
}

/// Roots of `sum c_k x^k` (degree at most 4 after dropping leading terms that vanish
/// over the whole range `0..=x_max`), by Durand-Kerner iteration with a Newton polish;
/// conjugate pairs made exact.
fn roots(c: &[f64], x_max: f64) -> Option<([Complex64; 4], usize)> {
    let term = |k: usize| c[k].abs() * x_max.powi(k as i32);
    let max = (0..c.len()).map(term).fold(0.0f64, f64::max);
    let mut deg = c.len() - 1;
    while deg > 0 && term(deg) <= 1e-14 * max {
        deg -= 1;
    }
    let mut out = [Complex64::new(0.0, 0.0); 4];
    if deg == 0 {
        return Some((out, 0));
    }
    // Monic coefficients.
    let lead = c[deg];
    let mono: [f64; 5] = std::array::from_fn(|k| if k <= deg { c[k] / lead } else { 0.0 });
    let eval = |z: Complex64| (0..=deg).rev().fold(Complex64::new(0.0, 0.0), |acc, k| acc * z + mono[k]);
    let deriv = |z: Complex64| (1..=deg).rev().fold(Complex64::new(0.0, 0.0), |acc, k| acc * z + mono[k] * k as f64);
    // Cauchy bound for the starting circle.
    let bound = 1.0 + mono[..deg].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut z: [Complex64; 4] = std::array::from_fn(|k| Complex64::from_polar(0.5 * bound, 0.4 + 2.0 * PI * k as f64 / deg as f64));
    for _ in 0..500 {
        let mut moved = 0.0f64;
        for i in 0..deg {
            let mut den = Complex64::new(1.0, 0.0);
            for j in 0..deg {
                if j != i {
                    den *= z[i] - z[j];
                }
            }
            if den.norm() == 0.0 {
                den = Complex64::new(1e-12, 0.0);
            }
            let step = eval(z[i]) / den;
            z[i] -= step;
            moved = moved.max(step.norm() / z[i].norm().max(1e-300));
        }
        if moved < 1e-11 {
            break;
        }
    }
    for zi in z.iter_mut().take(deg) {
        for _ in 0..3 {
            let d = deriv(*zi);
            if d.norm() == 0.0 {
                break;
            }
            let step = eval(*zi) / d;
            if !step.is_finite() {
                break;
            }
            *zi -= step;
        }
    }
    // Make conjugate pairs exact and near-real roots real.
    let mut used = [false; 4];
    let mut n = 0;
    for i in 0..deg {
        if used[i] {
            continue;
        }
        used[i] = true;
        let zi = z[i];
        if zi.im.abs() <= 1e-9 * zi.norm() {
            out[n] = Complex64::new(zi.re, 0.0);
            n += 1;
            continue;
        }
        // Its conjugate partner: the closest unused root to conj(zi).
        let partner = (0..deg).filter(|&j| !used[j]).min_by(|&a, &b| (z[a] - zi.conj()).norm().total_cmp(&(z[b] - zi.conj()).norm()))?;
        used[partner] = true;
        let mid = (zi + z[partner].conj()) / 2.0;
        out[n] = mid;
        out[n + 1] = mid.conj();
        n += 2;
    }
    out[..n].iter().all(|v| v.is_finite()).then_some((out, n))
}

/// The `z` of roots `x` (conjugate pairs adjacent, as [`roots`] leaves them), conjugate
/// pairs adjacent again. A real root inside the audio range (`0 < phi < 1`) means the
/// fitted polynomial touches zero there; such roots come in close pairs (a double root
/// split by rounding, usually cancelled by the same pair in the other polynomial), and
/// each pair becomes one conjugate pair at their mean.
fn to_z(x: &[Complex64], s: f64) -> Option<([Complex64; 4], usize)> {
    let mut out = [Complex64::new(0.0, 0.0); 4];
    let mut n = 0;
    let mut inside = [0.0f64; 4];
    let mut ni = 0;
    let mut i = 0;
    while i < x.len() {
        let r = x[i];
        if r.im != 0.0 {
            let z = z_of_x(r, s);
            if n + 2 > 4 {
                return None;
            }
            out[n] = z;
            out[n + 1] = z.conj();
            n += 2;
            i += 2;
            continue;
        }
        let phi = r.re * s;
        if phi > 0.0 && phi < 1.0 {
            inside[ni] = r.re;
            ni += 1;
        } else {
            if n + 1 > 4 {
                return None;
            }
            out[n] = Complex64::new(z_of_x(r, s).re, 0.0);
            n += 1;
        }
        i += 1;
    }
    inside[..ni].sort_by(|a, b| a.total_cmp(b));
    if ni % 2 != 0 {
        // One of a pair split across an edge of the range (its partner is just outside,
        // a real zero near z = 1 or -1): the one nearest an edge goes to that edge.
        let edge = |x: f64| (x * s).min(1.0 - x * s);
        let (first, last) = (inside[0], inside[ni - 1]);
        let take_first = edge(first) <= edge(last);
        let x_edge = if take_first { first } else { last };
        if n + 1 > 4 {
            return None;
        }
        out[n] = Complex64::new(if x_edge * s < 0.5 { 1.0 - 1e-9 } else { -(1.0 - 1e-9) }, 0.0);
        n += 1;
        if take_first {
            inside.copy_within(1..ni, 0);
        }
        ni -= 1;
    }
    for pair in inside[..ni].chunks(2) {
        let z = z_of_x(Complex64::new((pair[0] + pair[1]) / 2.0, 0.0), s);
        let z = if z.im < 0.0 { z.conj() } else { z };
        if n + 2 > 4 {
            return None;
        }
        out[n] = z;
        out[n + 1] = z.conj();
        n += 2;
    }
    Some((out, n))
}

/// The `z` inside the unit circle with `z + 1/z = 2 - 4 phi`, `phi = x s`; kept just
/// inside the circle where the fit puts it on it.
fn z_of_x(x: Complex64, s: f64) -> Complex64 {
    let phi = x * s;
    let m = Complex64::new(1.0, 0.0) - phi * 2.0;
    // m^2 - 1 without cancellation: (m - 1)(m + 1) = -4 phi (1 - phi).
    let root = (-phi * 4.0 * (Complex64::new(1.0, 0.0) - phi)).sqrt();
    let (z1, z2) = (m + root, m - root);
    let z = if z1.norm() <= z2.norm() { z1 } else { z2 };
    let r = z.norm();
    const LIMIT: f64 = 1.0 - 1e-9;
    if r > LIMIT {
        z * (LIMIT / r)
    } else {
        z
    }
}

/// Four roots (conjugate pairs adjacent, as [`roots`] leaves them; unused ones zero) as two
/// real quadratics `[c1, c2]` of `1 + c1 z^-1 + c2 z^-2`.
fn quadratics(r: &[Complex64; 4]) -> Option<[[f64; 2]; 2]> {
    let mut pairs = [[0.0f64; 2]; 2];
    let mut reals = [0.0f64; 4];
    let mut nr = 0;
    let mut np = 0;
    let mut i = 0;
    while i < 4 {
        let z = r[i];
        if z.im != 0.0 {
            if i + 1 >= 4 || np >= 2 {
                return None;
            }
            pairs[np] = [-2.0 * z.re, z.norm_sqr()];
            np += 1;
            i += 2;
        } else {
            reals[nr] = z.re;
            nr += 1;
            i += 1;
        }
    }
    // Reals pair up in order of size.
    reals[..nr].sort_by(|a, b| a.total_cmp(b));
    let mut k = 0;
    while k < nr {
        if np >= 2 {
            return None;
        }
        let (a, b) = (reals[k], if k + 1 < nr { reals[k + 1] } else { 0.0 });
        pairs[np] = [-(a + b), a * b];
        np += 1;
        k += 2;
    }
    Some(pairs)
}

