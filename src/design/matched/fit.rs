//! The fit of the module docs, in its four phases: [`Samples`] (the prototype sampled),
//! [`solve`] (Sanathanan-Koerner and Lawson rounds), [`factorise`] (roots to two
//! sections) and [`set_gain`]; [`fit_one`] the same with one section. No allocation:
//! fixed-size stack arrays throughout.

use super::numeric::{least_squares, poly, quadratics, roots, to_z, MAX_UNKNOWNS, MAX_UNKNOWNS_SINGLE};
use super::MATCHED_SECTIONS;
use crate::design::Sos;
use num_complex::Complex64;
use std::f64::consts::PI;

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
pub(super) const LAWSON_TRIGGER_DB: f64 = 0.04;
/// The single-section fit runs no minimax rounds where its least-squares error is above
/// this many times `LAWSON_TRIGGER_DB`: on `tests/matched.rs`' grid of shapes, of the
/// single sections that end within the aim, 94 % are within it after least squares alone
/// and the rest but a few started below 3 times it; of those that end above it, 88 %
/// started above 3 times it (their twelve rounds would be spent for nothing).
const SINGLE_HOPELESS: f64 = 3.0;
/// Minimax rounds of the single-section fit at most.
const SINGLE_LAWSON_ROUNDS: usize = 4;
/// dB per neper of a squared magnitude's log: `10 / ln 10`.
const DB_PER_NEPER: f64 = 4.342_944_819_032_518;

/// Zeros the shape must have exactly (see the module docs).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Fixed {
    None,
    /// `x^k` (`k` of 1 to 4): `k` zeros at DC (band-passes one, a second-order
    /// high-pass two, a cut of analog order `k` `k`).
    Dc(usize),
    /// `(x - 1)^2`: the pair on the unit circle at `f0`.
    Notch,
}

impl Fixed {
    /// How many zeros `F` holds.
    fn count(self) -> usize {
        match self {
            Fixed::None => 0,
            Fixed::Dc(k) => k.clamp(1, 4),
            Fixed::Notch => 2,
        }
    }

    /// Degree of the free numerator `N` when the whole numerator is of degree `order`
    /// (4 for two sections, 2 for one); `None` where `F` alone exceeds it.
    fn free_degree(self, order: usize) -> Option<usize> {
        order.checked_sub(self.count())
    }

    /// `F(x)`.
    fn at(self, x: f64) -> f64 {
        match self {
            Fixed::None => 1.0,
            Fixed::Dc(k) => x.powi(k as i32),
            Fixed::Notch => (x - 1.0) * (x - 1.0),
        }
    }

    /// Its zeros in `z` (for a notch at angular frequency `w0`), and how many.
    fn zeros(self, w0: f64) -> ([Complex64; 4], usize) {
        let mut zeros = [Complex64::new(0.0, 0.0); 4];
        let n = match self {
            Fixed::None => 0,
            Fixed::Dc(k) => {
                let n = k.clamp(1, 4);
                zeros[..n].fill(Complex64::new(1.0, 0.0));
                n
            }
            Fixed::Notch => {
                zeros[0] = Complex64::from_polar(1.0, w0);
                zeros[1] = zeros[0].conj();
                2
            }
        };
        (zeros, n)
    }
}

/// The analog target sampled: frequencies, their abscissae `x = phi / phi(f0)` and the
/// squared magnitudes there.
pub(super) struct Samples {
    freqs: [f64; POINTS],
    x: [f64; POINTS],
    t: [f64; POINTS],
    t_max: f64,
    /// `phi(f0) = sin^2(w0 / 2)`.
    s: f64,
    w0: f64,
    fs: f64,
}

impl Samples {
    /// DC, a log grid from `f0/200` to Nyquist, clusters around `f0` (width from `q`) or
    /// the two `centres`, and an even grid over 0.3-0.45 `fs`. `None` when the target is
    /// nowhere positive and finite.
    pub(super) fn new(target: &dyn Fn(f64) -> f64, f0: f64, q: f64, centres: Option<[f64; 2]>, fs: f64) -> Option<Samples> {
        let w0 = 2.0 * PI * f0 / fs;
        let s = (w0 / 2.0).sin().powi(2);
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
        let mut x = [0.0f64; POINTS];
        let mut t = [0.0f64; POINTS];
        let mut t_max = 0.0f64;
        for i in 0..POINTS {
            x[i] = (PI * freqs[i] / fs).sin().powi(2) / s;
            t[i] = target(freqs[i] / f0);
            t_max = t_max.max(t[i]);
        }
        (t_max.is_finite() && t_max > 0.0).then_some(Samples { freqs, x, t, t_max, s, w0, fs })
    }

    /// Whether sample `i` is where the error is judged: within 60 dB of the peak, up to
    /// 0.9 of Nyquist.
    fn judged(&self, i: usize) -> bool {
        self.t[i] > 1e-6 * self.t_max && self.freqs[i] <= 0.45 * self.fs
    }
}

/// The fit for any squared analog magnitude `target` (a function of frequency in units of
/// `f0`) of at most fourth order: samples clustered around `f0` (width from `q`) or around
/// the two `centres` given, zeros `fixed` kept exact.
pub(super) fn fit_target(target: &dyn Fn(f64) -> f64, fixed: Fixed, f0: f64, q: f64, centres: Option<[f64; 2]>, fs: f64) -> Option<[Sos; MATCHED_SECTIONS]> {
    if !(f0 > 0.0 && f0 < fs / 2.0 && q > 0.0) {
        return None;
    }
    let samples = Samples::new(target, f0, q, centres, fs)?;
    fit_samples(&samples, fixed)
}

/// [`fit_target`] on samples already taken.
pub(super) fn fit_samples(samples: &Samples, fixed: Fixed) -> Option<[Sos; MATCHED_SECTIONS]> {
    let (c, d) = solve::<MAX_UNKNOWNS>(samples, fixed, 4)?;
    let mut sections = factorise(samples, fixed, &c, &d)?;
    set_gain(samples, &mut sections)?;
    Some(sections)
}

/// The same fit with a single section (numerator and denominator of degree 2 in `x`): a
/// biquad whose poles and zeros are placed for the analog magnitude instead of by the
/// bilinear transform. Close to the prototype where the cookbook biquad's cramping is
/// mild (a bell or shelf up to a few kHz at 48 kHz); `None` where it cannot be factorised.
pub(super) fn fit_one(samples: &Samples, fixed: Fixed) -> Option<Sos> {
    let (c, d) = solve::<MAX_UNKNOWNS_SINGLE>(samples, fixed, 2)?;
    let (zeros, poles) = z_roots(samples, fixed, &c, &d, 2)?;
    // Unused roots are zero (at the origin): `(z - r1)(z - r2)` with either at 0.
    let quadratic = |r: &[Complex64]| {
        let (sum, product) = (r[0] + r[1], r[0] * r[1]);
        (sum.im.abs() <= 1e-9 * (1.0 + sum.re.abs()) && product.im.abs() <= 1e-9 * (1.0 + product.re.abs())).then_some([-sum.re, product.re])
    };
    let (b, a) = (quadratic(&zeros[..2])?, quadratic(&poles[..2])?);
    let mut section = [Sos { b: [1.0, b[0], b[1]], a: [1.0, a[0], a[1]] }];
    set_gain(samples, &mut section)?;
    Some(section[0])
}

impl Samples {
    /// The largest dB error of the cascade `sections` against the target over the judged
    /// samples (the fit's own measure); `None` where it is not finite.
    pub(super) fn worst_db(&self, sections: &[Sos]) -> Option<f64> {
        let mut worst = 0.0f64;
        for i in (0..POINTS).filter(|&i| self.judged(i)) {
            let w = 2.0 * PI * self.freqs[i] / self.fs;
            let h2: f64 = sections.iter().map(|s| s.response(w).norm_sqr()).product();
            let e = (DB_PER_NEPER * (h2 / self.t[i]).ln()).abs();
            if !e.is_finite() {
                return None;
            }
            worst = worst.max(e);
        }
        Some(worst)
    }
}

/// `N` (its first `fixed.free_degree(order) + 1` coefficients) and `D` (`d[0] = 1`, degree
/// `order`) minimising
/// the relative error of `F N / D`: Sanathanan-Koerner rounds of weighted linear least
/// squares; then, where the largest error over the judged samples is above
/// `LAWSON_TRIGGER_DB`, Lawson rounds that weight each judged sample by its error so far,
/// moving the fit toward the minimax one. The best round (by that largest error) is kept.
fn solve<const W: usize>(sm: &Samples, fixed: Fixed, order: usize) -> Option<([f64; 5], [f64; 5])> {
    let (x, t) = (&sm.x, &sm.t);
    let kn = fixed.free_degree(order)?;
    let unknowns = kn + 1 + order;
    if unknowns > W {
        return None;
    }
    let floor = 1e-12 * sm.t_max;
    // Half the spread of the log ratio of design to target over the judged samples (the
    // largest dB error once the gain is set midway) and the midpoint.
    let log_ratio = |c: &[f64; 5], d: &[f64; 5], i: usize| (fixed.at(x[i]) * poly(&c[..=kn], x[i]) / (poly(d, x[i]) * t[i])).abs().ln();
    let spread = |c: &[f64; 5], d: &[f64; 5]| {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in (0..POINTS).filter(|&i| sm.judged(i)) {
            let r = log_ratio(c, d, i);
            lo = lo.min(r);
            hi = hi.max(r);
        }
        ((hi - lo) / 2.0, (hi + lo) / 2.0)
    };
    let mut d_prev = [1.0f64; POINTS];
    let mut u = [1.0f64; POINTS];
    let mut c = [0.0f64; 5];
    let mut best: Option<(f64, [f64; 5], [f64; 5])> = None;
    let mut lawson = 0;
    let mut m = [[0.0f64; W]; POINTS];
    let mut rhs = [0.0f64; POINTS];
    for round in 0..ROUNDS + LAWSON_ROUNDS {
        let mut rows = 0;
        for i in (0..POINTS).filter(|&i| t[i] > floor) {
            let w = u[i] / (t[i] * d_prev[i].abs().max(1e-300));
            let mut p = fixed.at(x[i]);
            for cell in m[rows][..=kn].iter_mut() {
                *cell = w * p;
                p *= x[i];
            }
            let mut p = x[i];
            for k in 0..order {
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
        let mut next = [1.0f64, 0.0, 0.0, 0.0, 0.0];
        next[1..=order].copy_from_slice(&sol[kn + 1..unknowns]);
        let mut change = 0.0f64;
        for i in 0..POINTS {
            let v = poly(&next, x[i]);
            change = change.max(((v - d_prev[i]) / d_prev[i].abs().max(1e-300)).abs());
            d_prev[i] = v;
        }
        c[..=kn].copy_from_slice(&sol[..=kn]);
        let d = next;
        if lawson == 0 && change >= 1e-6 && round + 1 < ROUNDS {
            continue;
        }
        let (err, mid) = spread(&c, &d);
        if err.is_finite() && best.as_ref().is_none_or(|b| err < b.0) {
            best = Some((err, c, d));
        }
        if lawson >= LAWSON_ROUNDS || (lawson == 0 && err * DB_PER_NEPER <= LAWSON_TRIGGER_DB) || !err.is_finite() {
            break;
        }
        // A single section is only wanted within the aim: its minimax rounds stop there,
        // and are not tried where least squares misses by more than `SINGLE_HOPELESS`
        // times it (the two sections follow either way).
        if order == 2 && (err * DB_PER_NEPER <= LAWSON_TRIGGER_DB || lawson >= SINGLE_LAWSON_ROUNDS || (lawson == 0 && err * DB_PER_NEPER > SINGLE_HOPELESS * LAWSON_TRIGGER_DB)) {
            break;
        }
        lawson += 1;
        let (mut total, mut count) = (0.0, 0.0);
        for i in (0..POINTS).filter(|&i| sm.judged(i)) {
            u[i] *= (log_ratio(&c, &d, i) - mid).abs().max(1e-3 * err);
            total += u[i];
            count += 1.0;
        }
        if !(total > 0.0 && total.is_finite()) {
            break;
        }
        for i in (0..POINTS).filter(|&i| sm.judged(i)) {
            u[i] *= count / total;
        }
    }
    best.map(|(_, c, d)| (c, d))
}

/// The zeros (`F`'s and `N`'s) and poles (`D`'s) of a fit of `order` in `z`, each root in
/// `x` to the `z` inside the unit circle, at most `order` of each; the rest are zero (at
/// the origin), as are missing degrees (a vanishing leading coefficient).
fn z_roots(sm: &Samples, fixed: Fixed, c: &[f64; 5], d: &[f64; 5], order: usize) -> Option<([Complex64; 4], [Complex64; 4])> {
    let s = sm.s;
    let (mut zeros, nz) = fixed.zeros(sm.w0);
    let (xr, nr) = roots(&c[..=fixed.free_degree(order)?], 1.0 / s)?;
    let (zr, n_free) = to_z(&xr[..nr], s)?;
    if nz + n_free > order {
        return None;
    }
    zeros[nz..nz + n_free].copy_from_slice(&zr[..n_free]);
    let (xp, np) = roots(&d[..=order], 1.0 / s)?;
    let (poles, n_poles) = to_z(&xp[..np], s)?;
    (n_poles <= order).then_some((zeros, poles))
}

/// The roots of `F N` and `D` as two sections of unit gain: each root in `x` to the `z`
/// inside the unit circle, pole pairs with their nearest zero pairs, the pole pair with
/// the lower angle first (a stable order while a band's frequency moves).
fn factorise(sm: &Samples, fixed: Fixed, c: &[f64; 5], d: &[f64; 5]) -> Option<[Sos; MATCHED_SECTIONS]> {
    let (mut zeros, mut poles) = z_roots(sm, fixed, c, d, 4)?;
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
    let angle = |q: &[f64; 2]| if q[1] > 0.0 { (-q[0] / (2.0 * q[1].sqrt())).clamp(-1.0, 1.0).acos() } else { 0.0 };
    let (p_first, p_second) = if angle(&pq[0]) <= angle(&pq[1]) { (pq[0], pq[1]) } else { (pq[1], pq[0]) };
    let dist = |a: &[f64; 2], b: &[f64; 2]| (a[0] - b[0]).abs() + (a[1] - b[1]).abs();
    let (z_first, z_second) = if dist(&zq[0], &p_first) + dist(&zq[1], &p_second) <= dist(&zq[1], &p_first) + dist(&zq[0], &p_second) {
        (zq[0], zq[1])
    } else {
        (zq[1], zq[0])
    };
    Some([
        Sos { b: [1.0, z_first[0], z_first[1]], a: [1.0, p_first[0], p_first[1]] },
        Sos { b: [1.0, z_second[0], z_second[1]], a: [1.0, p_second[0], p_second[1]] },
    ])
}

/// Scales the first section so that the design lies midway between the largest and
/// smallest log ratio of target to design over the judged samples (which minimises the
/// largest dB error for the shape found); `None` unless the result is finite and stable.
fn set_gain(sm: &Samples, out: &mut [Sos]) -> Option<()> {
    let (mut lo_ln, mut hi_ln) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in (0..POINTS).filter(|&i| sm.judged(i)) {
        let w = 2.0 * PI * sm.freqs[i] / sm.fs;
        let h2: f64 = out.iter().map(|s| s.response(w)).product::<Complex64>().norm_sqr();
        if h2 > 0.0 && h2.is_finite() {
            let r = (sm.t[i] / h2).ln();
            lo_ln = lo_ln.min(r);
            hi_ln = hi_ln.max(r);
        }
    }
    if !(lo_ln.is_finite() && hi_ln.is_finite()) {
        return None;
    }
    // Half the mid log ratio of squared magnitudes: the log of the amplitude factor.
    let k = ((lo_ln + hi_ln) / 4.0).exp();
    for b in out[0].b.iter_mut() {
        *b *= k;
    }
    (out.iter().all(|s| s.is_finite() && s.is_stable())).then_some(())
}
