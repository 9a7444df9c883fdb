//! Normalised analog lowpass prototypes (cutoff 1 rad/s), equal to SciPy's `buttap`,
//! `cheb1ap`, `cheb2ap`, `ellipap` and `besselap(norm="phase")`.

use super::elliptic_fn::{arc_jac_sc1, ellipdeg, ellipj, ellipk};
use super::Zpk;
use num_complex::Complex64;
use std::f64::consts::PI;

fn c(re: f64, im: f64) -> Complex64 {
    Complex64::new(re, im)
}

/// `10^x - 1` without cancellation for small `x` (SciPy `_pow10m1`).
fn pow10m1(x: f64) -> f64 {
    (x * std::f64::consts::LN_10).exp_m1()
}

/// `m` values `-N+1, -N+3, ..., N-1`.
fn symmetric_indices(n: usize) -> impl Iterator<Item = f64> {
    (0..n).map(move |i| (2 * i) as f64 - (n as f64 - 1.0))
}

/// Product of `-x` over `xs`.
fn prod_neg(xs: &[Complex64]) -> Complex64 {
    xs.iter().fold(c(1.0, 0.0), |acc, &x| acc * -x)
}

/// Butterworth: poles evenly spaced on the left half of the unit circle.
pub fn buttap(n: usize) -> Zpk {
    let poles = symmetric_indices(n).map(|m| -Complex64::from_polar(1.0, PI * m / (2.0 * n as f64))).collect();
    Zpk { zeros: vec![], poles, gain: 1.0 }
}

/// Chebyshev type I with `ripple_db` of passband ripple; the passband edge is where the
/// response first leaves the ripple band (as SciPy).
pub fn cheb1ap(n: usize, ripple_db: f64) -> Zpk {
    let eps = pow10m1(0.1 * ripple_db).sqrt();
    let mu = (1.0 / eps).asinh() / n as f64;
    let poles: Vec<Complex64> =
        symmetric_indices(n).map(|m| -(c(mu, PI * m / (2.0 * n as f64))).sinh()).collect();
    let mut gain = prod_neg(&poles).re;
    if n.is_multiple_of(2) {
        gain /= (1.0 + eps * eps).sqrt();
    }
    Zpk { zeros: vec![], poles, gain }
}

/// Chebyshev type II with the stopband `attenuation_db` down from the passband; the
/// cutoff is where the stopband begins (as SciPy).
pub fn cheb2ap(n: usize, attenuation_db: f64) -> Zpk {
    let nf = n as f64;
    let de = 1.0 / pow10m1(0.1 * attenuation_db).sqrt();
    let mu = (1.0 / de).asinh() / nf;
    // Zeros at j / sin(m pi / 2N), skipping m = 0 for odd orders.
    let zeros: Vec<Complex64> = symmetric_indices(n)
        .filter(|&m| m != 0.0)
        .map(|m| (c(0.0, 1.0) / (m * PI / (2.0 * nf)).sin()).conj() * -1.0)
        .collect();
    let poles: Vec<Complex64> = symmetric_indices(n)
        .map(|m| {
            let p = -Complex64::from_polar(1.0, PI * m / (2.0 * nf));
            1.0 / c(mu.sinh() * p.re, mu.cosh() * p.im)
        })
        .collect();
    let gain = (prod_neg(&poles) / prod_neg(&zeros)).re;
    Zpk { zeros, poles, gain }
}

/// Elliptic (Cauer) with `ripple_db` passband ripple and `attenuation_db` stopband
/// attenuation; the cutoff is the passband edge (as SciPy's `ellipap`).
pub fn ellipap(n: usize, ripple_db: f64, attenuation_db: f64) -> Zpk {
    if n == 1 {
        let p = -(1.0 / pow10m1(0.1 * ripple_db)).sqrt();
        return Zpk { zeros: vec![], poles: vec![c(p, 0.0)], gain: -p };
    }
    let eps_sq = pow10m1(0.1 * ripple_db);
    let eps = eps_sq.sqrt();
    let ck1_sq = eps_sq / pow10m1(0.1 * attenuation_db);
    let val0 = ellipk(ck1_sq);
    let m = ellipdeg(n, ck1_sq);
    let capk = ellipk(m);

    let js: Vec<f64> = ((1 - n % 2)..n).step_by(2).map(|j| j as f64).collect();
    let sncndn: Vec<(f64, f64, f64)> = js.iter().map(|&j| ellipj(j * capk / n as f64, m)).collect();

    let mut zeros: Vec<Complex64> = sncndn
        .iter()
        .filter(|(s, _, _)| s.abs() > f64::EPSILON)
        .map(|&(s, _, _)| c(0.0, 1.0 / (m.sqrt() * s)))
        .collect();
    let conj_zeros: Vec<Complex64> = zeros.iter().map(|z| z.conj()).collect();
    zeros.extend(conj_zeros);

    let r = arc_jac_sc1(1.0 / eps, ck1_sq);
    let v0 = capk * r / (n as f64 * val0);
    let (sv, cv, dv) = ellipj(v0, 1.0 - m);
    let mut poles: Vec<Complex64> = sncndn
        .iter()
        .map(|&(s, cc, d)| -c(cc * d * sv * cv, s * dv) / (1.0 - (d * sv).powi(2)))
        .collect();
    let conj_poles: Vec<Complex64> = if n % 2 == 1 {
        let norm = poles.iter().map(|p| p.norm_sqr()).sum::<f64>().sqrt();
        poles.iter().filter(|p| p.im.abs() > f64::EPSILON * norm).map(|p| p.conj()).collect()
    } else {
        poles.iter().map(|p| p.conj()).collect()
    };
    poles.extend(conj_poles);

    let mut gain = (prod_neg(&poles) / prod_neg(&zeros)).re;
    if n.is_multiple_of(2) {
        gain /= (1.0 + eps_sq).sqrt();
    }
    Zpk { zeros, poles, gain }
}

/// The reverse Bessel polynomial `theta_n(s)` and its derivative, by the three-term
/// recurrence `theta_k = (2k - 1) theta_{k-1} + s^2 theta_{k-2}` (no coefficient blow-up).
fn reverse_bessel(n: usize, s: Complex64) -> (Complex64, Complex64) {
    let (mut t0, mut d0) = (c(1.0, 0.0), c(0.0, 0.0));
    let (mut t1, mut d1) = (s + 1.0, c(1.0, 0.0));
    if n == 0 {
        return (t0, d0);
    }
    for k in 2..=n {
        let kf = (2 * k - 1) as f64;
        let t2 = kf * t1 + s * s * t0;
        let d2 = kf * d1 + 2.0 * s * t0 + s * s * d0;
        (t0, d0, t1, d1) = (t1, d1, t2, d2);
    }
    (t1, d1)
}

/// Double-double arithmetic (about 32 significant digits) for the Bessel root polish:
/// Dekker's and Knuth's error-free transformations, with the product error from FMA.
mod dd {
    use num_complex::Complex64;

    /// An unevaluated sum `hi + lo` with `|lo| <= ulp(hi) / 2`.
    #[derive(Clone, Copy, Debug)]
    pub struct Real {
        hi: f64,
        lo: f64,
    }

    fn two_sum(a: f64, b: f64) -> (f64, f64) {
        let s = a + b;
        let bb = s - a;
        (s, (a - (s - bb)) + (b - bb))
    }

    fn quick_two_sum(a: f64, b: f64) -> Real {
        let s = a + b;
        Real { hi: s, lo: b - (s - a) }
    }

    impl Real {
        pub fn new(v: f64) -> Real {
            Real { hi: v, lo: 0.0 }
        }
        pub fn to_f64(self) -> f64 {
            self.hi + self.lo
        }
        pub fn add(self, o: Real) -> Real {
            let (s, e) = two_sum(self.hi, o.hi);
            quick_two_sum(s, e + self.lo + o.lo)
        }
        pub fn neg(self) -> Real {
            Real { hi: -self.hi, lo: -self.lo }
        }
        pub fn mul(self, o: Real) -> Real {
            let p = self.hi * o.hi;
            let e = self.hi.mul_add(o.hi, -p);
            quick_two_sum(p, e + self.hi * o.lo + self.lo * o.hi)
        }
        pub fn scale(self, k: f64) -> Real {
            self.mul(Real::new(k))
        }
    }

    /// A complex double-double.
    #[derive(Clone, Copy, Debug)]
    pub struct Complex {
        re: Real,
        im: Real,
    }

    impl From<Complex64> for Complex {
        fn from(c: Complex64) -> Complex {
            Complex { re: Real::new(c.re), im: Real::new(c.im) }
        }
    }

    impl Complex {
        pub fn to_f64(self) -> Complex64 {
            Complex64::new(self.re.to_f64(), self.im.to_f64())
        }
        fn add(self, o: Complex) -> Complex {
            Complex { re: self.re.add(o.re), im: self.im.add(o.im) }
        }
        fn mul(self, o: Complex) -> Complex {
            Complex {
                re: self.re.mul(o.re).add(self.im.mul(o.im).neg()),
                im: self.re.mul(o.im).add(self.im.mul(o.re)),
            }
        }
        fn scale(self, k: f64) -> Complex {
            Complex { re: self.re.scale(k), im: self.im.scale(k) }
        }
        /// `self - d` for a double-precision step `d`.
        pub fn sub_f64(self, d: Complex64) -> Complex {
            Complex { re: self.re.add(Real::new(-d.re)), im: self.im.add(Real::new(-d.im)) }
        }
    }

    /// `theta_n(s)` by the three-term recurrence, in double-double.
    pub fn reverse_bessel(n: usize, s: Complex) -> Complex64 {
        let one = Complex::from(Complex64::new(1.0, 0.0));
        if n == 0 {
            return one.to_f64();
        }
        let s2 = s.mul(s);
        let (mut t0, mut t1) = (one, s.add(one));
        for k in 2..=n {
            let t2 = t1.scale((2 * k - 1) as f64).add(s2.mul(t0));
            (t0, t1) = (t1, t2);
        }
        t1.to_f64()
    }
}

/// Campos & Calderon's asymptotic starting points for the zeros of the ordinary Bessel
/// polynomial `y_n(x)` (as SciPy `_campos_zeros`).
fn campos_zeros(n: usize) -> Vec<Complex64> {
    if n == 1 {
        return vec![c(-1.0, 0.0)];
    }
    let nf = n as f64;
    let poly = |x: f64, coef: &[f64]| coef.iter().rev().fold(0.0, |acc, &k| acc * x + k);
    let s = poly(nf, &[0.0, 0.0, 2.0, 0.0, -3.0, 1.0]);
    let b3 = poly(nf, &[16.0, -8.0]) / s;
    let b2 = poly(nf, &[-24.0, -12.0, 12.0]) / s;
    let b1 = poly(nf, &[8.0, 24.0, -12.0, -2.0]) / s;
    let b0 = poly(nf, &[0.0, -6.0, 0.0, 5.0, -1.0]) / s;
    let r = poly(nf, &[0.0, 0.0, 2.0, 1.0]);
    let a1 = poly(nf, &[-6.0, -6.0]) / r;
    let a2 = 6.0 / r;
    (1..=n)
        .map(|k| {
            let k = k as f64;
            c(poly(k, &[0.0, a1, a2]), poly(k, &[b0, b1, b2, b3]))
        })
        .collect()
}

/// Bessel (Thomson) prototype normalised so the phase response is -N*pi/4 at 1 rad/s
/// (SciPy `besselap(norm="phase")`): its asymptotes equal Butterworth's.
///
/// The poles are the roots of the reverse Bessel polynomial, found by the Aberth-Ehrlich
/// iteration from Campos-Calderon's starting points, polished by Newton steps and
/// symmetrised into exact conjugate pairs; then scaled by `a_0^(-1/N)` where
/// `a_0 = (2N)! / (2^N N!)` is the polynomial's constant term.
///
/// The final Newton steps evaluate the polynomial in double-double arithmetic: in plain
/// double precision the recurrence cancels near the real axis (order-24 poles were off by
/// 5e-5); polished, they agree with SciPy's to about 1e-15 at every order.
pub fn besselap(n: usize) -> Zpk {
    if n == 0 {
        return Zpk { zeros: vec![], poles: vec![], gain: 1.0 };
    }
    // Poles of theta_n are the reciprocals of the zeros of y_n.
    let mut roots: Vec<Complex64> = campos_zeros(n).into_iter().map(|z| 1.0 / z).collect();
    for _ in 0..500 {
        let mut max_step = 0.0f64;
        for i in 0..n {
            let (f, fp) = reverse_bessel(n, roots[i]);
            let ratio = f / fp;
            let sum: Complex64 = (0..n).filter(|&j| j != i).map(|j| 1.0 / (roots[i] - roots[j])).sum();
            let step = ratio / (1.0 - ratio * sum);
            if step.is_finite() {
                roots[i] -= step;
                max_step = max_step.max(step.norm() / roots[i].norm());
            }
        }
        if max_step < 1e-15 {
            break;
        }
    }
    // Polish each root by Newton steps with the polynomial evaluated in double-double
    // arithmetic: near the real axis the double-precision recurrence cancels (roots of
    // order 24 were off by 5e-5 with it); in double-double they agree with SciPy to ~1e-15.
    for r in roots.iter_mut() {
        let mut root = dd::Complex::from(*r);
        for _ in 0..6 {
            let f = dd::reverse_bessel(n, root);
            let (_, fp) = reverse_bessel(n, root.to_f64());
            let step = f / fp;
            if !step.is_finite() {
                break;
            }
            root = root.sub_f64(step);
            if step.norm() <= 1e-30 * root.to_f64().norm() {
                break;
            }
        }
        *r = root.to_f64();
    }
    // Exact conjugate symmetry: sort by imaginary part and average each root with the
    // conjugate of its mirror.
    roots.sort_by(|a, b| a.im.total_cmp(&b.im));
    let sym: Vec<Complex64> = (0..n).map(|i| 0.5 * (roots[i] + roots[n - 1 - i].conj())).collect();
    // a_0 = (2N)! / (2^N N!) = prod_{k=N+1}^{2N} k / 2^N, accumulated in logs.
    let log10_a0: f64 = ((n + 1)..=(2 * n)).map(|k| (k as f64).log10()).sum::<f64>() - n as f64 * 2f64.log10();
    let scale = 10f64.powf(-log10_a0 / n as f64);
    let poles: Vec<Complex64> = sym.into_iter().map(|p| p * scale).collect();
    // Exactly 1 in theory (SciPy uses k = 1); taking the product keeps the DC gain at 1
    // despite the rounding of the roots.
    let gain = prod_neg(&poles).re;
    Zpk { zeros: vec![], poles, gain }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analog_response(zpk: &Zpk, w: f64) -> Complex64 {
        let s = c(0.0, w);
        let num = zpk.zeros.iter().fold(c(zpk.gain, 0.0), |acc, &z| acc * (s - z));
        zpk.poles.iter().fold(num, |acc, &p| acc / (s - p))
    }

    #[test]
    fn butterworth_is_minus_3db_at_1_rad() {
        for n in 1..=24 {
            let h = analog_response(&buttap(n), 1.0).norm();
            assert!((h - 0.5f64.sqrt()).abs() < 1e-12, "order {n}: {h}");
        }
    }

    #[test]
    fn chebyshev1_ripple_edge() {
        // |H(j1)| = 1/sqrt(1+eps^2) at the passband edge, DC gain 1 (odd) or 1/sqrt(1+eps^2) (even).
        for n in 1..=12 {
            let z = cheb1ap(n, 1.0);
            let edge = 1.0 / (1.0 + pow10m1(0.1)).sqrt();
            assert!((analog_response(&z, 1.0).norm() - edge).abs() < 1e-10, "order {n}");
        }
    }

    #[test]
    fn chebyshev2_stopband_edge() {
        for n in 1..=12 {
            let z = cheb2ap(n, 40.0);
            assert!((analog_response(&z, 1.0).norm() - 0.01).abs() < 1e-10, "order {n}");
            assert!((analog_response(&z, 0.0).norm() - 1.0).abs() < 1e-10, "order {n}");
        }
    }

    #[test]
    fn elliptic_edges() {
        for n in 1..=10 {
            let z = ellipap(n, 0.5, 50.0);
            let edge = 1.0 / (1.0 + pow10m1(0.05)).sqrt();
            assert!((analog_response(&z, 1.0).norm() - edge).abs() < 1e-8, "order {n}");
        }
    }

    #[test]
    fn bessel_roots_satisfy_polynomial_identities() {
        for n in 1..=24 {
            let z = besselap(n);
            // Scaled back to the monic reverse Bessel polynomial, the roots sum to
            // -a_{N-1} = -N(N+1)/2 and each is a root of theta_N.
            let log10_a0: f64 =
                ((n + 1)..=(2 * n)).map(|k| (k as f64).log10()).sum::<f64>() - n as f64 * 2f64.log10();
            let scale = 10f64.powf(log10_a0 / n as f64);
            // Roots polished in double-double: a double-precision Newton step from them is
            // at rounding level (it was ~1e-4 at order 24 before the polish).
            let tol = 1e-12;
            let sum: Complex64 = z.poles.iter().map(|p| p * scale).sum();
            let expected = -((n * (n + 1)) as f64) / 2.0;
            assert!((sum.re - expected).abs() < tol * expected.abs() && sum.im.abs() < 1e-9, "order {n}: {sum}");
            for p in &z.poles {
                // The residual in double-double (the plain recurrence cancels near the axis).
                let f = dd::reverse_bessel(n, dd::Complex::from(p * scale));
                let (_, fp) = reverse_bessel(n, p * scale);
                assert!((f / fp).norm() < tol * (p * scale).norm(), "order {n}: residual at {p}");
            }
            let dc = analog_response(&z, 0.0);
            assert!((dc.re - 1.0).abs() < 1e-9 && dc.im.abs() < 1e-12, "order {n}: dc {dc}");
        }
        // N = 1, 2 are phase -N pi / 4 at 1 rad/s exactly (higher orders only approach it).
        for n in 1..=2 {
            let phase: f64 = besselap(n).poles.iter().map(|&p| -(c(0.0, 1.0) - p).arg()).sum();
            assert!((phase + n as f64 * PI / 4.0).abs() < 1e-12);
        }
    }
}
