//! Frequency transforms, the bilinear transform and zeros/poles/gain to second-order
//! sections, following SciPy's `lp2*_zpk`, `bilinear_zpk` and `zpk2sos(pairing="nearest")`.

use super::{Sos, Zpk};
use num_complex::Complex64;

fn prod(xs: impl Iterator<Item = Complex64>) -> Complex64 {
    xs.fold(Complex64::new(1.0, 0.0), |acc, x| acc * x)
}

/// Lowpass prototype to lowpass with cutoff `wo` rad/s.
pub fn lp2lp(zpk: &Zpk, wo: f64) -> Zpk {
    let degree = zpk.poles.len() as i32 - zpk.zeros.len() as i32;
    Zpk {
        zeros: zpk.zeros.iter().map(|z| z * wo).collect(),
        poles: zpk.poles.iter().map(|p| p * wo).collect(),
        gain: zpk.gain * wo.powi(degree),
    }
}

/// Lowpass prototype to highpass with cutoff `wo` rad/s.
pub fn lp2hp(zpk: &Zpk, wo: f64) -> Zpk {
    let degree = zpk.poles.len() - zpk.zeros.len();
    let mut zeros: Vec<Complex64> = zpk.zeros.iter().map(|z| wo / z).collect();
    zeros.extend(std::iter::repeat_n(Complex64::new(0.0, 0.0), degree));
    let poles = zpk.poles.iter().map(|p| wo / p).collect();
    let gain = zpk.gain * (prod(zpk.zeros.iter().map(|z| -z)) / prod(zpk.poles.iter().map(|p| -p))).re;
    Zpk { zeros, poles, gain }
}

/// `x + sqrt(x^2 - wo^2)` and `x - sqrt(x^2 - wo^2)` for each `x`, first all `+` then all `-`.
fn split_roots(xs: &[Complex64], wo: f64) -> Vec<Complex64> {
    let roots: Vec<Complex64> = xs.iter().map(|&x| (x * x - wo * wo).sqrt()).collect();
    let plus = xs.iter().zip(&roots).map(|(x, r)| x + r);
    let minus = xs.iter().zip(&roots).map(|(x, r)| x - r);
    plus.chain(minus).collect()
}

/// Lowpass prototype to bandpass with centre `wo` and bandwidth `bw` (rad/s).
pub fn lp2bp(zpk: &Zpk, wo: f64, bw: f64) -> Zpk {
    let degree = zpk.poles.len() - zpk.zeros.len();
    let z_lp: Vec<Complex64> = zpk.zeros.iter().map(|z| z * (bw / 2.0)).collect();
    let p_lp: Vec<Complex64> = zpk.poles.iter().map(|p| p * (bw / 2.0)).collect();
    let mut zeros = split_roots(&z_lp, wo);
    zeros.extend(std::iter::repeat_n(Complex64::new(0.0, 0.0), degree));
    Zpk { zeros, poles: split_roots(&p_lp, wo), gain: zpk.gain * bw.powi(degree as i32) }
}

/// Lowpass prototype to bandstop with centre `wo` and bandwidth `bw` (rad/s).
pub fn lp2bs(zpk: &Zpk, wo: f64, bw: f64) -> Zpk {
    let degree = zpk.poles.len() - zpk.zeros.len();
    let z_hp: Vec<Complex64> = zpk.zeros.iter().map(|z| (bw / 2.0) / z).collect();
    let p_hp: Vec<Complex64> = zpk.poles.iter().map(|p| (bw / 2.0) / p).collect();
    let mut zeros = split_roots(&z_hp, wo);
    zeros.extend(std::iter::repeat_n(Complex64::new(0.0, wo), degree));
    zeros.extend(std::iter::repeat_n(Complex64::new(0.0, -wo), degree));
    let gain = zpk.gain * (prod(zpk.zeros.iter().map(|z| -z)) / prod(zpk.poles.iter().map(|p| -p))).re;
    Zpk { zeros, poles: split_roots(&p_hp, wo), gain }
}

/// Bilinear transform `s = 2 fs (z - 1) / (z + 1)` (SciPy `bilinear_zpk`).
pub fn bilinear(zpk: &Zpk, fs: f64) -> Zpk {
    let fs2 = 2.0 * fs;
    let degree = zpk.poles.len() - zpk.zeros.len();
    let mut zeros: Vec<Complex64> = zpk.zeros.iter().map(|z| (fs2 + z) / (fs2 - z)).collect();
    zeros.extend(std::iter::repeat_n(Complex64::new(-1.0, 0.0), degree));
    let poles = zpk.poles.iter().map(|p| (fs2 + p) / (fs2 - p)).collect();
    let gain = zpk.gain * (prod(zpk.zeros.iter().map(|z| fs2 - z)) / prod(zpk.poles.iter().map(|p| fs2 - p))).re;
    Zpk { zeros, poles, gain }
}

/// Keeps one of each complex-conjugate pair (the one with positive imaginary part) and
/// every real value (made exactly real), as SciPy's `_cplxreal`. Values within
/// `100 eps |x|` of the real axis count as real.
fn cplxreal(xs: &[Complex64]) -> Vec<Complex64> {
    let tol = |x: &Complex64| 100.0 * f64::EPSILON * x.norm().max(f64::MIN_POSITIVE);
    let mut out: Vec<Complex64> = Vec::with_capacity(xs.len());
    let mut negatives: Vec<Complex64> = Vec::new();
    for x in xs {
        if x.im.abs() <= tol(x) {
            out.push(Complex64::new(x.re, 0.0));
        } else if x.im > 0.0 {
            out.push(*x);
        } else {
            negatives.push(*x);
        }
    }
    // Average each positive member with its conjugate partner (closest negative) so the
    // pair is exactly symmetric.
    for x in out.iter_mut().filter(|x| x.im != 0.0) {
        if let Some((idx, _)) = negatives
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| (a.conj() - *x).norm().total_cmp(&(b.conj() - *x).norm()))
        {
            let partner = negatives.swap_remove(idx);
            *x = 0.5 * (*x + partner.conj());
        }
    }
    out
}

fn is_real(x: &Complex64) -> bool {
    x.im == 0.0
}

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Any,
    Real,
    Complex,
}

/// Index of the element of `from` nearest to `to`, restricted to real or complex values.
fn nearest(from: &[Complex64], to: Complex64, which: Which) -> Option<usize> {
    from.iter()
        .enumerate()
        .filter(|(_, x)| match which {
            Which::Any => true,
            Which::Real => is_real(x),
            Which::Complex => !is_real(x),
        })
        .min_by(|(_, a), (_, b)| (*a - to).norm().total_cmp(&(*b - to).norm()))
        .map(|(i, _)| i)
}

/// Polynomial coefficients (highest power first) of `prod (x - r)` for up to two roots,
/// right-aligned into three slots (SciPy's `_single_zpksos`).
fn poly2(roots: &[Complex64]) -> [f64; 3] {
    match roots {
        [] => [0.0, 0.0, 1.0],
        [r] => [0.0, 1.0, -r.re],
        [r1, r2] => [1.0, -(r1 + r2).re, (r1 * r2).re],
        _ => unreachable_poly(),
    }
}

#[cold]
fn unreachable_poly() -> [f64; 3] {
    // zpk2sos only ever asks for sections of at most two roots.
    [1.0, 0.0, 0.0]
}

/// Zeros/poles/gain of a digital filter to second-order sections with SciPy's "nearest"
/// pairing: poles closest to the unit circle first, each paired with its nearest zeros;
/// the order is reversed so those sections run last; the gain goes into the first
/// section. A real filter is assumed (conjugate pairs complete).
pub fn zpk2sos(zpk: &Zpk) -> Vec<Sos> {
    if zpk.zeros.is_empty() && zpk.poles.is_empty() {
        return vec![Sos::gain(zpk.gain)];
    }
    let mut p = zpk.poles.clone();
    let mut z = zpk.zeros.clone();
    let zero = Complex64::new(0.0, 0.0);
    let len = p.len().max(z.len());
    p.resize(len, zero);
    z.resize(len, zero);
    let n_sections = len.div_ceil(2);
    if len % 2 == 1 {
        p.push(zero);
        z.push(zero);
    }
    let mut p = cplxreal(&p);
    let mut z = cplxreal(&z);
    let mut sections: Vec<Sos> = Vec::with_capacity(n_sections);
    for _ in 0..n_sections {
        // The "worst" pole: closest to the unit circle.
        let Some(p1_idx) = p
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| (1.0 - a.norm()).abs().total_cmp(&(1.0 - b.norm()).abs()))
            .map(|(i, _)| i)
        else {
            break;
        };
        let p1 = p.remove(p1_idx);
        let n_real_p = p.iter().filter(|x| is_real(x)).count();
        let n_real_z = z.iter().filter(|x| is_real(x)).count();
        let (zs, ps): (Vec<Complex64>, Vec<Complex64>) = if is_real(&p1) && n_real_p == 0 {
            // Last remaining real pole: pair with the nearest real zero.
            let zs = match nearest(&z, p1, Which::Real) {
                Some(i) => vec![z.remove(i), zero],
                None => vec![zero],
            };
            (zs, vec![p1, zero])
        } else if p.len() + 1 == z.len() && !is_real(&p1) && n_real_p == 1 && n_real_z == 1 {
            // One real pole and one real zero left: p1 must take a complex zero pair.
            match nearest(&z, p1, Which::Complex) {
                Some(i) => {
                    let z1 = z.remove(i);
                    (vec![z1, z1.conj()], vec![p1, p1.conj()])
                }
                None => (vec![], vec![p1, p1.conj()]),
            }
        } else {
            let p2 = if is_real(&p1) {
                // Pair with the other real pole closest to the unit circle.
                let i = p
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| is_real(x))
                    .min_by(|(_, a), (_, b)| (a.norm() - 1.0).abs().total_cmp(&(b.norm() - 1.0).abs()))
                    .map(|(i, _)| i);
                match i {
                    Some(i) => p.remove(i),
                    None => zero,
                }
            } else {
                p1.conj()
            };
            let zs = match nearest(&z, p1, Which::Any) {
                Some(i) => {
                    let z1 = z.remove(i);
                    if !is_real(&z1) {
                        vec![z1, z1.conj()]
                    } else {
                        match nearest(&z, p1, Which::Real) {
                            Some(j) => vec![z1, z.remove(j)],
                            None => vec![z1],
                        }
                    }
                }
                None => vec![],
            };
            (zs, vec![p1, p2])
        };
        sections.push(Sos { b: poly2(&zs), a: poly2(&ps) });
    }
    sections.reverse();
    if let Some(first) = sections.first_mut() {
        for b in first.b.iter_mut() {
            *b *= zpk.gain;
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poly2_right_aligns() {
        let r = Complex64::new(0.5, 0.0);
        assert_eq!(poly2(&[r, Complex64::new(0.0, 0.0)]), [1.0, -0.5, 0.0]);
        assert_eq!(poly2(&[r]), [0.0, 1.0, -0.5]);
    }
}
