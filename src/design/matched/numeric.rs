//! The fit's numerical parts: weighted least squares by Householder QR, polynomial roots
//! by Durand-Kerner, and the spectral factorisation from roots in `x` to roots in `z`.

use num_complex::Complex64;
use std::f64::consts::PI;

/// Unknowns of the least squares at most: numerator coefficients (at most 5) and
/// denominator ones after `d0 = 1` (4). The single-section fit has at most 5 (3 and 2).
pub(super) const MAX_UNKNOWNS: usize = 9;
pub(super) const MAX_UNKNOWNS_SINGLE: usize = 5;

/// `sum c_k x^k`.
pub(super) fn poly(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck)
}

/// Least squares `min |M y - r|` for the first `n` columns of `m`, by Householder QR with
/// column scaling. `None` when the system is rank deficient or not finite.
///
/// Every pass runs over the rows with all `W` columns side by side (each
/// column's sums in row order, as a column at a time adds them; the columns beyond the
/// `n` used, and below the diagonal once reflected, get arithmetic whose results are never
/// read): a column at a time, each sum was a chain of dependent additions, latency-bound.
/// The operations and their order on every element that is read are those of the
/// column-at-a-time form, so the result is the same bit for bit (tested against it).
///
/// With AVX2 on the CPU the same code runs compiled for it (wider vectors, no fused
/// multiply-add: the same bits).
pub(super) fn least_squares<const W: usize>(m: &mut [[f64; W]], r: &mut [f64], n: usize) -> Option<[f64; W]> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU reports AVX2, the only feature the function is compiled with.
        return unsafe { least_squares_avx2(m, r, n) };
    }
    householder(m, r, n)
}

/// [`householder`] compiled with AVX2 (and without FMA, so the arithmetic is unchanged).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn least_squares_avx2<const W: usize>(m: &mut [[f64; W]], r: &mut [f64], n: usize) -> Option<[f64; W]> {
    householder(m, r, n)
}

/// [`least_squares`]' arithmetic.
#[inline(always)]
fn householder<const W: usize>(m: &mut [[f64; W]], r: &mut [f64], n: usize) -> Option<[f64; W]> {
    let rows = m.len();
    if rows < n || n > W {
        return None;
    }
    // Sums start from -0.0, as `Iterator::sum` does for floats.
    let mut sums = [-0.0f64; W];
    for row in m.iter() {
        for (acc, v) in sums.iter_mut().zip(row) {
            *acc += v * v;
        }
    }
    // Columns beyond `n` are divided by 1 (unchanged).
    let mut scale = [1.0f64; W];
    for (sc, sum) in scale[..n].iter_mut().zip(&sums) {
        let norm = sum.sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        *sc = norm;
    }
    for row in m.iter_mut() {
        for (v, sc) in row.iter_mut().zip(&scale) {
            *v /= sc;
        }
    }
    for j in 0..n {
        // Householder reflection of column j below the diagonal. Column j's squares from
        // the diagonal down and from below it: two sums side by side.
        let (mut from_diagonal, mut below) = (-0.0f64 + m[j][j] * m[j][j], -0.0f64);
        for row in &m[j + 1..] {
            let square = row[j] * row[j];
            from_diagonal += square;
            below += square;
        }
        let norm = from_diagonal.sqrt();
        if norm == 0.0 {
            return None;
        }
        let alpha = if m[j][j] > 0.0 { -norm } else { norm };
        let v0 = m[j][j] - alpha;
        // v = (v0, m[j+1..][j]); H = I - 2 v v^T / (v^T v).
        let vtv = v0 * v0 + below;
        if vtv == 0.0 {
            continue;
        }
        // v . (column k below the diagonal) for every column (those after j are used),
        // and v . r.
        let mut dots = [-0.0f64; W];
        let mut dot_r = -0.0f64;
        for (row, ri) in m[j + 1..].iter().zip(&r[j + 1..]) {
            let v = row[j];
            for (acc, x) in dots.iter_mut().zip(row) {
                *acc += v * x;
            }
            dot_r += v * ri;
        }
        // The reflection's factor per column: zero outside j+1..n.
        let mut f = [0.0f64; W];
        for k in j + 1..n {
            f[k] = 2.0 * (v0 * m[j][k] + dots[k]) / vtv;
            m[j][k] -= f[k] * v0;
        }
        let f_r = 2.0 * (v0 * r[j] + dot_r) / vtv;
        r[j] -= f_r * v0;
        for (row, ri) in m[j + 1..].iter_mut().zip(r[j + 1..].iter_mut()) {
            let v = row[j];
            for (x, fk) in row.iter_mut().zip(&f) {
                *x -= fk * v;
            }
            *ri -= f_r * v;
        }
        m[j][j] = alpha;
    }
    back_substitute(m, r, n, &scale)
}

/// `y` from the triangular `R y = Q^T r` that the reflections left in the first `n` rows
/// of `m` and `r`, unscaled by the columns' `scale`; `None` if `R` is (nearly) singular
/// or `y` not finite.
fn back_substitute<const W: usize>(m: &[[f64; W]], r: &[f64], n: usize, scale: &[f64; W]) -> Option<[f64; W]> {
    let mut y = [0.0f64; W];
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
pub(super) fn roots(c: &[f64], x_max: f64) -> Option<([Complex64; 4], usize)> {
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
pub(super) fn to_z(x: &[Complex64], s: f64) -> Option<([Complex64; 4], usize)> {
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
pub(super) fn z_of_x(x: Complex64, s: f64) -> Complex64 {
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
pub(super) fn quadratics(r: &[Complex64; 4]) -> Option<[[f64; 2]; 2]> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The column-at-a-time Householder QR that [`least_squares`] was first written as
    /// (the back substitution is shared): the reference its row-wise passes must equal
    /// bit for bit.
    fn least_squares_reference(m: &mut [[f64; MAX_UNKNOWNS]], r: &mut [f64], n: usize) -> Option<[f64; MAX_UNKNOWNS]> {
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
        back_substitute(m, r, n, &scale)
    }

    /// Seeded random systems of every shape the fit uses and more (1-9 unknowns, 9-200
    /// rows, entries over many magnitudes, some exact zeros and negative zeros): the
    /// solution, or the refusal, is the reference's bit for bit, from the dispatched
    /// build and from the baseline one.
    #[test]
    fn least_squares_equals_the_column_at_a_time_form_bit_for_bit() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut solved = 0;
        for case in 0..3_000 {
            let n = 1 + (next() % 9) as usize;
            let rows = n.max(9) + (next() % 192) as usize;
            let mut m = vec![[0.0f64; MAX_UNKNOWNS]; rows];
            let mut r = vec![0.0f64; rows];
            for v in m.iter_mut().flat_map(|row| row[..n].iter_mut()).chain(r.iter_mut()) {
                let u = next();
                *v = match u % 50 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => {
                        let mantissa = (u >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        mantissa * 10f64.powi(((u >> 3) % 13) as i32 - 6)
                    }
                };
            }
            // A copy of one column now and then: rank deficient.
            if case % 17 == 0 && n > 1 {
                for row in m.iter_mut() {
                    row[n - 1] = row[0];
                }
            }
            let (mut m_ref, mut r_ref) = (m.clone(), r.clone());
            let (mut m_base, mut r_base) = (m.clone(), r.clone());
            let want = least_squares_reference(&mut m_ref, &mut r_ref, n);
            // The baseline build as well as the AVX2 one `least_squares` picks here.
            let baseline = householder(&mut m_base, &mut r_base, n);
            assert_eq!(baseline.map(|y| y.map(f64::to_bits)), want.map(|y| y.map(f64::to_bits)), "case {case}: the baseline build");
            // The single section's narrower rows: the same bits.
            if n <= MAX_UNKNOWNS_SINGLE {
                let mut narrow: Vec<[f64; MAX_UNKNOWNS_SINGLE]> = m.iter().map(|row| std::array::from_fn(|k| row[k])).collect();
                let got = least_squares(&mut narrow, &mut r.clone(), n).map(|y| y.map(f64::to_bits));
                assert_eq!(got.map(|y| y[..n].to_vec()), want.map(|y| y[..n].iter().map(|v| v.to_bits()).collect()), "case {case}: rows of {MAX_UNKNOWNS_SINGLE}");
            }
            let got = least_squares(&mut m, &mut r, n);
            match (got, want) {
                (Some(a), Some(b)) => {
                    solved += 1;
                    for k in 0..n {
                        assert_eq!(a[k].to_bits(), b[k].to_bits(), "case {case} ({rows} x {n}), unknown {k}: {} vs {}", a[k], b[k]);
                    }
                }
                (None, None) => {}
                (a, b) => panic!("case {case} ({rows} x {n}): {a:?} vs the reference's {b:?}"),
            }
        }
        assert!(solved > 2_000, "only {solved} of 3,000 systems solved");
    }
}
