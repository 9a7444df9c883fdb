//! The PyTorch layer's backward step kernel (kernels/adjoint.cu), run on the host, inside
//! the whole adjoint of a cascade as `python/ferrofx/torch.py` composes it on CUDA
//! tensors (the gradients in reversed time, rows padded with two zeros, each section's
//! all-pole part run over the reversed gradient, then the step reading the forward
//! signals backwards), against the core's adjoint
//! (`ferrofx::signal::sosfilt_backward_row`, itself checked against finite differences):
//! over a seeded sweep of cascades, batch shapes, frame counts and grid sizes.

use ferrofx_kernel_host::{adjoint_step64, AdjointParams, ADJ_THREADS};
use ferrofx_testkit::Rng;

/// A stable section `[b0, b1, b2, 1, a1, a2]`: poles inside radius 0.97, any zeros.
fn section(rng: &mut Rng) -> [f64; 6] {
    let (r, th) = (0.97 * rng.unit().sqrt(), std::f64::consts::PI * rng.unit());
    let b = |rng: &mut Rng| 2.0 * rng.unit() - 1.0;
    [b(rng), b(rng), b(rng), 1.0, -2.0 * r * th.cos(), r * r]
}

/// `[1, 0, 0, 1, a1, a2]` run causally over each row of `rows` (length `row_len`) in place.
fn all_pole(rows: &mut [f64], row_len: usize, a1: f64, a2: f64) {
    for row in rows.chunks_mut(row_len) {
        let (mut y1, mut y2) = (0.0, 0.0);
        for v in row.iter_mut() {
            let y = *v - a1 * y1 - a2 * y2;
            (y2, y1) = (y1, y);
            *v = y;
        }
    }
}

/// A direct-form section over one row (the forward signals).
fn section_row(s: &[f64; 6], x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for t in 0..x.len() {
        let at = |v: &[f64], k: usize| if t >= k { v[t - k] } else { 0.0 };
        y[t] = s[0] * x[t] + s[1] * at(x, 1) + s[2] * at(x, 2) - s[4] * at(&y, 1) - s[5] * at(&y, 2);
    }
    y
}

/// Rows of `frames` into the reversed, padded layout: `[0, 0, v[n-1], ..., v[0]]`.
fn reversed_padded(rows: &[Vec<f64>]) -> Vec<f64> {
    rows.iter().flat_map(|r| [0.0, 0.0].into_iter().chain(r.iter().rev().copied())).collect()
}

/// Rows of `frames` as the forward pass leaves them: `[v[0], ..., v[n-1], ?, ?]`, the two
/// samples after the frames NaN here (the step must never read them).
fn forward_padded(rows: &[Vec<f64>]) -> Vec<f64> {
    rows.iter().flat_map(|r| r.iter().copied().chain([f64::NAN, f64::NAN])).collect()
}

#[test]
fn the_step_kernel_composes_the_cores_adjoint() {
    let mut rng = Rng::new(4401);
    for case in 0..40 {
        let sections = 1 + rng.below(5);
        let rows = 1 + rng.below(4);
        let frames = match case {
            0 => 1,
            1 => 2,
            2 => 3,
            _ => 1 + rng.below(700),
        };
        let row_len = frames + 2;
        let total = rows * row_len;
        // Grids from one block to more threads than samples.
        let blocks = [1, 1 + rng.below(4), total.div_ceil(ADJ_THREADS) + 1][case % 3] as u32;
        let sos: Vec<[f64; 6]> = (0..sections).map(|_| section(&mut rng)).collect();
        let x: Vec<Vec<f64>> = (0..rows).map(|_| (0..frames).map(|_| 2.0 * rng.unit() - 1.0).collect()).collect();
        let gy: Vec<Vec<f64>> = (0..rows).map(|_| (0..frames).map(|_| 2.0 * rng.unit() - 1.0).collect()).collect();

        // The core's adjoint, row by row (dL/dsos accumulates over the rows).
        let mut want_x = vec![vec![0.0; frames]; rows];
        let mut want_s = vec![[0.0; 6]; sections];
        let mut scratch = Vec::new();
        for r in 0..rows {
            ferrofx::signal::sosfilt_backward_row(&sos, &x[r], &gy[r], &mut want_x[r], &mut want_s, &mut scratch).unwrap();
        }

        // The layer's composition on the device, with the step on the host.
        let mut signals = vec![forward_padded(&x)];
        let mut forward = x.clone();
        for s in &sos {
            forward = forward.iter().map(|row| section_row(s, row)).collect();
            signals.push(forward_padded(&forward));
        }
        let mut g = reversed_padded(&gy);
        let mut got_s = vec![[0.0; 6]; sections];
        for s in (0..sections).rev() {
            let [b0, b1, b2, _, a1, a2] = sos[s];
            all_pole(&mut g, row_len, a1, a2);
            let lam = g;
            let p = AdjointParams { total: total as u64, row_len: row_len as u32, pad0: 0, b0, b1, b2 };
            let mut next = vec![f64::NAN; total];
            let mut partial = vec![f64::NAN; 6 * blocks as usize];
            adjoint_step64(p, blocks, &lam, &signals[s], &signals[s + 1], &mut next, &mut partial);
            // The next gradient: the formula's bits, zero in each row's padding.
            for i in 0..total {
                let want = if i % row_len < 2 { 0.0 } else { b0 * lam[i] + b1 * lam[i - 1] + b2 * lam[i - 2] };
                assert_eq!(next[i].to_bits(), want.to_bits(), "case {case} section {s} sample {i}");
            }
            for (j, v) in got_s[s].iter_mut().enumerate() {
                *v = partial.chunks(6).map(|b| b[j]).sum();
            }
            g = next;
        }
        let got_x: Vec<Vec<f64>> = g.chunks(row_len).map(|r| r[2..].iter().rev().copied().collect()).collect();

        let peak_x = want_x.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        for (r, (got, want)) in got_x.iter().zip(&want_x).enumerate() {
            for (t, (a, b)) in got.iter().zip(want).enumerate() {
                assert!((a - b).abs() <= 1e-12 * peak_x, "case {case}: dL/dx row {r} frame {t}: {a} against {b}");
            }
        }
        let peak_s = want_s.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        for s in 0..sections {
            for j in 0..6 {
                let (a, b) = (got_s[s][j], want_s[s][j]);
                assert!((a - b).abs() <= 1e-11 * peak_s, "case {case}: dL/dsos[{s}][{j}]: {a} against {b}");
            }
        }
    }
}
