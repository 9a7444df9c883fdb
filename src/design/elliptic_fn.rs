//! Complete elliptic integrals of the first kind and Jacobi elliptic functions, as
//! needed by the elliptic (Cauer) prototype.
//!
//! Methods (all with the parameter convention `m = k^2`, as SciPy's `ellipk`/`ellipj`):
//! * `K(m) = pi / (2 * AGM(1, sqrt(1 - m)))` — the arithmetic-geometric mean, which
//!   converges quadratically (Abramowitz & Stegun 17.6). [`ellipkm1`] takes `p = 1 - m`
//!   directly so `K` near `m = 1` keeps full precision.
//! * `sn, cn, dn` by the descending Landen / AGM scale followed by the backward
//!   recurrence for the amplitude (Abramowitz & Stegun 16.4), with the series used by
//!   Cephes' `ellpj` near `m = 0` and `m = 1`.
//! * The degree equation and the inverse of `sc` by the nome series and Landen sequence
//!   used by SciPy's `_ellipdeg` and `_arc_jac_sc1` (Orfanidis, "Lecture notes on
//!   elliptic filter design", 2006).

use num_complex::Complex64;
use std::f64::consts::{FRAC_PI_2, PI};

/// Arithmetic-geometric mean of two positive numbers.
fn agm(mut a: f64, mut b: f64) -> f64 {
    for _ in 0..64 {
        if (a - b).abs() <= f64::EPSILON * a {
            break;
        }
        let next_a = 0.5 * (a + b);
        b = (a * b).sqrt();
        a = next_a;
    }
    a
}

/// Complete elliptic integral of the first kind `K(m)` for `0 <= m < 1`.
pub fn ellipk(m: f64) -> f64 {
    ellipkm1(1.0 - m)
}

/// `K(1 - p)`, accurate for small `p` (SciPy's `ellipkm1`).
pub fn ellipkm1(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    PI / (2.0 * agm(1.0, p.sqrt()))
}

/// Jacobi elliptic functions `(sn, cn, dn)` of real argument `u` and parameter `m`.
pub fn ellipj(u: f64, m: f64) -> (f64, f64, f64) {
    if m < 1e-9 {
        let (t, b) = (u.sin(), u.cos());
        let ai = 0.25 * m * (u - t * b);
        return (t - ai * b, b + ai * t, 1.0 - 0.5 * m * t * t);
    }
    if m >= 0.999_999_999_9 {
        let ai = 0.25 * (1.0 - m);
        let b = u.cosh();
        let t = u.tanh();
        let phi = 1.0 / b;
        let twon = b * u.sinh();
        let sn = t + ai * (twon - u) / (b * b);
        let ai = ai * t * phi;
        return (sn, phi - ai * (twon - u), phi + ai * (twon + u));
    }
    let mut a = [0.0f64; 10];
    let mut c = [0.0f64; 10];
    a[0] = 1.0;
    let mut b = (1.0 - m).sqrt();
    c[0] = m.sqrt();
    let mut twon = 1.0;
    let mut i = 0;
    while (c[i] / a[i]).abs() > f64::EPSILON && i < 8 {
        let ai = a[i];
        i += 1;
        c[i] = 0.5 * (ai - b);
        let t = (ai * b).sqrt();
        a[i] = 0.5 * (ai + b);
        b = t;
        twon *= 2.0;
    }
    let mut phi = twon * a[i] * u;
    let mut prev = phi;
    while i > 0 {
        let t = c[i] * phi.sin() / a[i];
        prev = phi;
        phi = 0.5 * (t.asin() + phi);
        i -= 1;
    }
    let (sn, cn) = (phi.sin(), phi.cos());
    (sn, cn, cn / (phi - prev).cos())
}

/// Solve the degree equation: the modulus `m` of an order-`n` elliptic filter whose
/// discrimination parameter is `m1` (SciPy `_ellipdeg`, nome series with 7 terms).
pub fn ellipdeg(n: usize, m1: f64) -> f64 {
    const MMAX: i32 = 7;
    let k1 = ellipk(m1);
    let k1p = ellipkm1(m1);
    let q1 = (-PI * k1p / k1).exp();
    let q = q1.powf(1.0 / n as f64);
    let num: f64 = (0..=MMAX).map(|j| q.powi(j * (j + 1))).sum();
    let den: f64 = 1.0 + 2.0 * (1..=MMAX + 1).map(|j| q.powi(j * j)).sum::<f64>();
    16.0 * q * (num / den).powi(4)
}

/// Principal complex square root of `(1 - x)(1 + x)`.
fn complement(x: Complex64) -> Complex64 {
    ((1.0 - x) * (1.0 + x)).sqrt()
}

/// Inverse Jacobi `sn` for complex `w` (SciPy `_arc_jac_sn`, Landen sequence).
fn arc_jac_sn(w: Complex64, m: f64) -> Complex64 {
    let k = m.sqrt();
    if k >= 1.0 {
        return w.atanh();
    }
    let mut ks = vec![k];
    while *ks.last().unwrap_or(&0.0) != 0.0 && ks.len() < 12 {
        let kn = ks[ks.len() - 1];
        let kp = ((1.0 - kn) * (1.0 + kn)).sqrt();
        ks.push((1.0 - kp) / (1.0 + kp));
    }
    let big_k: f64 = ks[1..].iter().map(|k| 1.0 + k).product::<f64>() * FRAC_PI_2;
    let mut wn = w;
    for pair in ks.windows(2) {
        let (kn, knext) = (pair[0], pair[1]);
        wn = 2.0 * wn / ((1.0 + knext) * (1.0 + complement(kn * wn)));
    }
    let u = 2.0 / PI * wn.asin();
    big_k * u
}

/// Real inverse of the Jacobi `sc` function, `sc(u, 1 - m) = w` (SciPy `_arc_jac_sc1`).
pub fn arc_jac_sc1(w: f64, m: f64) -> f64 {
    arc_jac_sn(Complex64::new(0.0, w), m).im
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipk_known_values() {
        // K(0) = pi/2; K(0.5) = 1.8540746773013719 (A&S table 17.1, m = 0.5).
        assert!((ellipk(0.0) - FRAC_PI_2).abs() < 1e-15);
        assert!((ellipk(0.5) - 1.854_074_677_301_371_9).abs() < 1e-14);
        // K(1 - 1e-12) ~ ln(4 / sqrt(1e-12)) = ln(4e6) = 15.201804919084164 (+ O(p log p)).
        assert!((ellipkm1(1e-12) - 15.201_804_919_084_164).abs() < 1e-9);
    }

    #[test]
    fn ellipj_identities_and_limits() {
        for &m in &[1e-12, 0.1, 0.5, 0.9, 0.999_999, 1.0 - 1e-11] {
            for &u in &[0.0, 0.3, 1.0, 2.5] {
                let (sn, cn, dn) = ellipj(u, m);
                assert!((sn * sn + cn * cn - 1.0).abs() < 1e-12, "sn^2+cn^2 at u={u} m={m}");
                assert!((dn * dn + m * sn * sn - 1.0).abs() < 1e-12, "dn^2+m sn^2 at u={u} m={m}");
            }
        }
        // m = 0: sn = sin; m -> 1: sn = tanh.
        assert!((ellipj(0.7, 0.0).0 - 0.7f64.sin()).abs() < 1e-15);
        assert!((ellipj(0.7, 1.0).0 - 0.7f64.tanh()).abs() < 1e-12);
        // sn(K(m), m) = 1.
        let m = 0.7;
        assert!((ellipj(ellipk(m), m).0 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn arc_jac_sc1_inverts_sc() {
        for &m in &[0.01, 0.3, 0.8] {
            for &w in &[0.1, 1.0, 3.0] {
                let u = arc_jac_sc1(w, m);
                let (sn, cn, _) = ellipj(u, 1.0 - m);
                assert!((sn / cn - w).abs() < 1e-10 * w.max(1.0), "sc(u) = {} vs {w}", sn / cn);
            }
        }
    }
}
