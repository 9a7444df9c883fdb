//! Gradients through `sosfilt` from zero state: the arithmetic a differentiable layer
//! (PyTorch's autograd, JAX's VJPs) needs, below any such layer so it is tested on its own.
//!
//! For one second-order section with input `x`, output `y` and the difference equation
//! `a0 y[n] + a1 y[n-1] + a2 y[n-2] = b0 x[n] + b1 x[n-1] + b2 x[n-2]` (`a0 = 1` in `sosfilt`'s
//! sections), and the gradient `g = dL/dy` of a loss `L`:
//!
//! - the adjoint `lambda` runs the all-pole part backwards in time:
//!   `lambda[n] = g[n] - a1 lambda[n+1] - a2 lambda[n+2]` (zero past the end);
//! - `dL/dx[m] = b0 lambda[m] + b1 lambda[m+1] + b2 lambda[m+2]` (the section's adjoint: the
//!   same filter run backwards in time);
//! - `dL/db_k = sum_n lambda[n] x[n-k]` and `dL/da_k = -sum_n lambda[n] y[n-k]` for
//!   `k = 0, 1, 2` (zero before the start). The `a0` column's gradient is that of the
//!   equation above, so moving `a0` means scaling the whole section by `1 / a0`.
//!
//! A cascade repeats this from the last section to the first, each section's `dL/dx` the
//! `g` of the one before it; the forward pass is recomputed to know each section's input.
//! The gradient is for zero initial state (`zi` is not an input of the layer).

use super::{sosfilt_rows, RowsError};

/// dL/dx and dL/dsos for one row of `y = sosfilt(sos, x)` from zero state, given
/// `grad_y = dL/dy`. `grad_x` receives dL/dx; dL/dsos is **added** to `grad_sos` (so the
/// rows of a batch accumulate). `scratch` is reused between calls (it grows to
/// `(sections + 1) * frames`).
pub fn sosfilt_backward_row(
    sos: &[[f64; 6]],
    x: &[f64],
    grad_y: &[f64],
    grad_x: &mut [f64],
    grad_sos: &mut [[f64; 6]],
    scratch: &mut Vec<f64>,
) -> Result<(), RowsError> {
    let n = x.len();
    for (row, len) in [(1, grad_y.len()), (2, grad_x.len())] {
        if len != n {
            return Err(RowsError::RowLength { row, expected: n, found: len });
        }
    }
    if grad_sos.len() != sos.len() {
        return Err(RowsError::StateLength { rows: 1, per_row: sos.len(), expected: sos.len(), found: grad_sos.len() });
    }
    let sections = sos.len();
    // signals[s] is section s's input; signals[sections] the cascade's output.
    scratch.clear();
    scratch.resize((sections + 1) * n, 0.0);
    scratch[..n].copy_from_slice(x);
    for s in 0..sections {
        let (done, rest) = scratch.split_at_mut((s + 1) * n);
        let next = &mut rest[..n];
        next.copy_from_slice(&done[s * n..]);
        sosfilt_rows(&sos[s..s + 1], &mut [next], &mut [0.0, 0.0])?;
    }
    // One backward pass per section: lambda[i] from g[i] and the two later lambdas, the
    // six sums and dL/dx[i] (which needs lambda[i..i + 3]: all known at step i) in the same
    // pass; g[i] is replaced by dL/dx[i] once lambda[i] has read it.
    let mut g = grad_y.to_vec();
    for s in (0..sections).rev() {
        let [b0, b1, b2, _, a1, a2] = sos[s];
        let xs = &scratch[s * n..(s + 1) * n];
        let ys = &scratch[(s + 1) * n..(s + 2) * n];
        let (mut l1, mut l2) = (0.0f64, 0.0f64);
        let (mut db, mut da) = ([0.0f64; 3], [0.0f64; 3]);
        for i in (0..n).rev() {
            let l = g[i] - a1 * l1 - a2 * l2;
            for k in 0..3.min(i + 1) {
                db[k] += l * xs[i - k];
                da[k] += l * ys[i - k];
            }
            g[i] = b0 * l + b1 * l1 + b2 * l2;
            (l1, l2) = (l, l1);
        }
        let gs = &mut grad_sos[s];
        for k in 0..3 {
            gs[k] += db[k];
            gs[3 + k] -= da[k];
        }
    }
    grad_x.copy_from_slice(&g);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn loss(sos: &[[f64; 6]], x: &[f64], g: &[f64]) -> f64 {
        // The a0 column enters as the equation's: the section divided through by a0.
        let norm: Vec<[f64; 6]> = sos.iter().map(|r| r.map(|v| v / r[3])).collect();
        let mut y = x.to_vec();
        sosfilt_rows(&norm, &mut [&mut y[..]], &mut vec![0.0; 2 * sos.len()]).unwrap();
        y.iter().zip(g).map(|(a, b)| a * b).sum()
    }

    /// Every gradient entry against a central difference of the loss `sum(g * y)`.
    #[test]
    fn gradients_match_central_differences() {
        let mut seed = 5u64;
        for case in 0..12 {
            let sections = 1 + case % 4;
            let n = 5 + case * 7;
            let sos: Vec<[f64; 6]> = (0..sections)
                .map(|_| {
                    let (r, th) = (0.3 + 0.6 * lcg(&mut seed).abs(), 3.0 * lcg(&mut seed).abs());
                    [lcg(&mut seed), lcg(&mut seed), lcg(&mut seed), 1.0, -2.0 * r * th.cos(), r * r]
                })
                .collect();
            let x: Vec<f64> = (0..n).map(|_| lcg(&mut seed)).collect();
            let g: Vec<f64> = (0..n).map(|_| lcg(&mut seed)).collect();
            let mut gx = vec![0.0; n];
            let mut gs = vec![[0.0; 6]; sections];
            sosfilt_backward_row(&sos, &x, &g, &mut gx, &mut gs, &mut Vec::new()).unwrap();
            let h = 1e-6;
            for i in 0..n {
                let (mut p, mut m) = (x.clone(), x.clone());
                p[i] += h;
                m[i] -= h;
                let fd = (loss(&sos, &p, &g) - loss(&sos, &m, &g)) / (2.0 * h);
                assert!((fd - gx[i]).abs() < 1e-6 * (1.0 + fd.abs()), "case {case} x[{i}]: {} against {fd}", gx[i]);
            }
            for s in 0..sections {
                for k in 0..6 {
                    let (mut p, mut m) = (sos.clone(), sos.clone());
                    p[s][k] += h;
                    m[s][k] -= h;
                    let fd = (loss(&p, &x, &g) - loss(&m, &x, &g)) / (2.0 * h);
                    assert!((fd - gs[s][k]).abs() < 1e-5 * (1.0 + fd.abs()), "case {case} sos[{s}][{k}]: {} against {fd}", gs[s][k]);
                }
            }
        }
    }

    #[test]
    fn lengths_are_checked() {
        let sos = [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]];
        let mut gs = [[0.0; 6]];
        let e = sosfilt_backward_row(&sos, &[1.0, 2.0], &[1.0], &mut [0.0, 0.0], &mut gs, &mut Vec::new());
        assert!(matches!(e, Err(RowsError::RowLength { row: 1, expected: 2, found: 1 })));
    }
}
