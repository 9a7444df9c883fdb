//! Mixed precision: which sections of a cascade may run in `f32` with a guaranteed error.
//!
//! Every section runs in `f64` by default (see the module above for why). A cascade built
//! with a plan from [`plan_f32_pairs`] runs the chosen sections in `f32` instead: twice
//! the lanes per vector, so eight channels take two sections per AVX-512 vector. The
//! choice is made once, at build time, by a worst-case bound, so that the whole cascade's
//! output differs from the all-`f64` cascade's by at most `budget * max|x|` for *every*
//! input `x` (the output's own `f32` rounding aside).
//!
//! The bound for section `k` in `f32` transposed direct form II, relative to the input's
//! peak, adds three parts:
//! - **coefficients**: rounding section `k`'s coefficients to `f32` changes the cascade's
//!   impulse response from `h` to `h_k`; its effect is at most `||h_k - h||_1`;
//! - **arithmetic**: each of the section's roundings per sample (the five results `p1`,
//!   `p2`, `y`, `s1`, `s2`, and the four products a kernel without fused multiply-adds
//!   rounds too) is at most `u = 2^-24` of its value, which is at most the `l1` norm of
//!   its impulse response from the cascade's input; each reaches the output through
//!   `1 / A_k(z)` and the later sections (impulse response `g_k`), so the part is
//!   `u * ||g_k||_1 * (the nine l1 norms summed)`;
//! - **input**: a section whose input comes from an `f64` section rounds it to `f32`
//!   first (`u` of its value), which reaches the output through the section and all later
//!   ones.
//!
//! Sections are chosen in adjacent pairs (the kernel's unit), cheapest first, while the
//! parts add up to at most 90 % of the budget; then the chosen set's coefficients are
//! rounded together and the sum is checked again (dropping the dearest pair until it
//! holds). The 10 % margin covers the second-order terms the sum leaves out (an
//! arithmetic error passing through already-rounded coefficients: `u` times a relative
//! coefficient change, orders of magnitude below it). A cascade whose impulse response has
//! not decayed within [`MAX_RESPONSE`] samples gets no `f32` section (its poles crowd
//! `z = 1`: the designs that `f32` serves worst).
//!
//! `benchmarks/f32_bound.py` computes the same bound with SciPy; `tests/precision.rs`
//! checks it against measured errors of the real kernels.

use super::SosCoefs;

/// `f32`'s unit roundoff.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// The default budget: the reference tolerance's aim (`1e-5` of the peak), relative to
/// the input's peak.
pub const F32_BUDGET: f64 = 1e-5;

/// Longest impulse response the bound is computed over (samples).
pub const MAX_RESPONSE: usize = 1 << 17;

/// The response is long enough when its last eighth holds at most this share of its `l1`
/// norm.
const TAIL_SHARE: f64 = 1e-13;

/// Share of the budget the first-order parts may use (the rest covers second-order terms).
const FIRST_ORDER_SHARE: f64 = 0.9;

/// One section over a signal (transposed direct form II, `f64`), in place.
fn section(c: &SosCoefs, x: &mut [f64]) {
    let (mut s1, mut s2) = (0.0, 0.0);
    for v in x.iter_mut() {
        let y = c.b0 * *v + s1;
        s1 = c.b1 * *v - c.a1 * y + s2;
        s2 = c.b2 * *v - c.a2 * y;
        *v = y;
    }
}

fn l1(x: &[f64]) -> f64 {
    x.iter().map(|v| v.abs()).sum()
}

/// The cascade's impulse response over `n` samples.
fn impulse(coefs: &[SosCoefs], n: usize) -> Vec<f64> {
    let mut x = vec![0.0; n];
    x[0] = 1.0;
    for c in coefs {
        section(c, &mut x);
    }
    x
}

/// Whether `h`'s last eighth is negligible (and `h` finite).
fn decayed(h: &[f64]) -> bool {
    let total = l1(h);
    total.is_finite() && l1(&h[h.len() - h.len() / 8..]) <= TAIL_SHARE * total.max(f64::MIN_POSITIVE)
}

fn rounded(c: &SosCoefs) -> SosCoefs {
    let r = |v: f64| f64::from(v as f32);
    SosCoefs { b0: r(c.b0), b1: r(c.b1), b2: r(c.b2), a1: r(c.a1), a2: r(c.a2) }
}

/// The first-order parts of the bound per section: `(coefficients + arithmetic, input)`.
struct Parts {
    own: Vec<f64>,
    input: Vec<f64>,
}

fn parts(coefs: &[SosCoefs], n: usize, h: &[f64]) -> Option<Parts> {
    let count = coefs.len();
    let mut own = Vec::with_capacity(count);
    let mut input = Vec::with_capacity(count);
    let mut v = vec![0.0; n];
    v[0] = 1.0;
    for (k, c) in coefs.iter().enumerate() {
        // The section's signals for an impulse at the cascade's input.
        let (mut s1, mut s2) = (0.0f64, 0.0f64);
        let mut values = 0.0;
        let mut y_all = vec![0.0; n];
        for (t, &x) in v.iter().enumerate() {
            let p1 = c.b1 * x + s2;
            let p2 = c.b2 * x;
            let y = c.b0 * x + s1;
            s1 = p1 - c.a1 * y;
            s2 = p2 - c.a2 * y;
            values += y.abs() + p1.abs() + s1.abs() + p2.abs() + s2.abs();
            values += (c.b1 * x).abs() + (c.b0 * x).abs() + (c.a1 * y).abs() + (c.a2 * y).abs();
            y_all[t] = y;
        }
        // g_k: 1 / A_k(z), then the later sections.
        let pole_only = SosCoefs { b0: 1.0, b1: 0.0, b2: 0.0, a1: c.a1, a2: c.a2 };
        let mut g = vec![0.0; n];
        g[0] = 1.0;
        section(&pole_only, &mut g);
        for later in &coefs[k + 1..] {
            section(later, &mut g);
        }
        // The cascade with this section's coefficients rounded.
        let mut with = coefs.to_vec();
        with[k] = rounded(c);
        let hk = impulse(&with, n);
        if !decayed(&hk) {
            return None;
        }
        let coef = hk.iter().zip(h).map(|(a, b)| (a - b).abs()).sum::<f64>();
        // The input's rounding through this section and all later ones.
        let tail = impulse(&coefs[k..], n);
        own.push(coef + U * l1(&g) * values);
        input.push(if k == 0 { 0.0 } else { U * l1(&v) * l1(&tail) });
        v = y_all;
    }
    let all = own.iter().chain(&input);
    all.clone().all(|p| p.is_finite()).then_some(Parts { own, input })
}

/// The sections that may run in `f32` within `budget` (relative to the input's peak), as
/// one flag per section, set in adjacent pairs; all `false` when no pair fits or the
/// impulse response does not decay within [`MAX_RESPONSE`] samples. Allocates and runs
/// the cascade over its impulse response a few times per section: a build-time call.
pub fn plan_f32_pairs(coefs: &[SosCoefs], budget: f64) -> Vec<bool> {
    let count = coefs.len();
    let mut plan = vec![false; count];
    if count < 2 || !(budget > 0.0) {
        return plan;
    }
    let mut n = 1 << 12;
    let h = loop {
        let h = impulse(coefs, n);
        if decayed(&h) {
            break h;
        }
        if n >= MAX_RESPONSE {
            return plan;
        }
        n *= 4;
    };
    let Some(p) = parts(coefs, n, &h) else { return plan };
    // Candidate pairs (k, k + 1), cheapest first; the input part is the pair's first
    // section's (the second takes the first's f32 output).
    let cost = |k: usize| p.own[k] + p.own[k + 1] + p.input[k];
    let mut candidates: Vec<usize> = (0..count - 1).collect();
    candidates.sort_by(|&a, &b| cost(a).total_cmp(&cost(b)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut spent = 0.0;
    for k in candidates {
        if chosen.iter().any(|&c| c.abs_diff(k) < 2) {
            continue;
        }
        if spent + cost(k) > FIRST_ORDER_SHARE * budget {
            continue;
        }
        spent += cost(k);
        chosen.push(k);
    }
    // The chosen set's coefficients rounded together, checked against the whole budget.
    chosen.sort_by(|&a, &b| cost(a).total_cmp(&cost(b)));
    while !chosen.is_empty() {
        let mut with = coefs.to_vec();
        for &k in &chosen {
            with[k] = rounded(&coefs[k]);
            with[k + 1] = rounded(&coefs[k + 1]);
        }
        let hs = impulse(&with, n);
        let coef_all = hs.iter().zip(&h).map(|(a, b)| (a - b).abs()).sum::<f64>();
        let arith: f64 = chosen.iter().map(|&k| cost(k)).sum::<f64>();
        if decayed(&hs) && coef_all + arith <= budget {
            break;
        }
        chosen.pop();
    }
    for k in chosen {
        plan[k] = true;
        plan[k + 1] = true;
    }
    plan
}

/// The bound itself for a given plan (relative to the input's peak): what
/// [`plan_f32_pairs`] kept within its budget; `None` when it cannot be computed (the
/// response does not decay within [`MAX_RESPONSE`] samples). For tests and reports.
pub fn f32_bound(coefs: &[SosCoefs], plan: &[bool]) -> Option<f64> {
    let mut n = 1 << 12;
    let h = loop {
        let h = impulse(coefs, n);
        if decayed(&h) {
            break h;
        }
        if n >= MAX_RESPONSE {
            return None;
        }
        n *= 4;
    };
    let p = parts(coefs, n, &h)?;
    let mut with = coefs.to_vec();
    let mut total = 0.0;
    for k in 0..coefs.len() {
        if plan.get(k) == Some(&true) {
            with[k] = rounded(&coefs[k]);
            // Each section's own part (its coefficients alone and its arithmetic), the
            // input's rounding where a pair starts, and below the whole set's
            // coefficients rounded together: the coefficients count twice, as in
            // `plan_f32_pairs`'s check (conservative).
            total += p.own[k];
            if k == 0 || plan.get(k - 1) != Some(&true) {
                total += p.input[k];
            }
        }
    }
    let hs = impulse(&with, n);
    Some(total + hs.iter().zip(&h).map(|(a, b)| (a - b).abs()).sum::<f64>())
}
