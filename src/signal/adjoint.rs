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
use crate::dsp::simd::Isa;

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

/// Rows [`sosfilt_backward_rows`] takes through one pass together: 8 fills an AVX-512
/// vector of doubles (and two AVX2 ones; measured no slower there than 4 on the Zen 4 with
/// its kernels capped to AVX2).
pub const BACKWARD_GROUP: usize = 8;

/// [`sosfilt_backward_row`] over several rows of one length, each row's `grad_x` and the
/// sums added to `grad_sos` (in row order) **bit for bit** what calling it row by row
/// gives, several times faster: rows go [`BACKWARD_GROUP`] at a time as the lanes of
/// vectors, in chunks of frames that stay in the cache (the forward signals recomputed per
/// chunk from checkpoints, sections time-skewed so their recurrences overlap; the backward
/// steps two sections at a time, for the same reason) instead of `sections + 1` whole
/// signals per row. One thread on a Zen 4 (`adjoint_probe`, 441,000 frames, 15 sections):
/// 1 row 32 ms, 8 rows 90-100 ms, 5.3-5.9x the forward filter on the same 8 rows
/// (`benchmarks/results/adjoint_pairs_zen4_2026-11-29.txt`; 50 and 124 ms with groups of 4,
/// one section at a time and the first pass always the time-skewed loop).
pub fn sosfilt_backward_rows(
    sos: &[[f64; 6]],
    x: &[&[f64]],
    grad_y: &[&[f64]],
    grad_x: &mut [&mut [f64]],
    grad_sos: &mut [[f64; 6]],
) -> Result<(), RowsError> {
    for (what, found) in [("grad_y", grad_y.len()), ("grad_x", grad_x.len())] {
        if found != x.len() {
            return Err(RowsError::RowCount { what, expected: x.len(), found });
        }
    }
    let n = x.first().map_or(0, |r| r.len());
    let short = |lengths: &mut dyn Iterator<Item = usize>| lengths.enumerate().find(|&(_, len)| len != n);
    let found = short(&mut x.iter().map(|r| r.len()))
        .or_else(|| short(&mut grad_y.iter().map(|r| r.len())))
        .or_else(|| short(&mut grad_x.iter().map(|r| r.len())));
    if let Some((row, found)) = found {
        return Err(RowsError::RowLength { row, expected: n, found });
    }
    if grad_sos.len() != sos.len() {
        return Err(RowsError::StateLength { rows: 1, per_row: sos.len(), expected: sos.len(), found: grad_sos.len() });
    }
    super::check_a0(sos)?;
    let mut start = 0;
    while start < x.len() {
        let m = (x.len() - start).min(BACKWARD_GROUP);
        let rows = start..start + m;
        let (xg, gy, gx) = (&x[rows.clone()], &grad_y[rows.clone()], &mut grad_x[rows]);
        match m {
            1 => backward_group::<1>(sos, xg, gy, gx, grad_sos),
            2 => backward_group::<2>(sos, xg, gy, gx, grad_sos),
            3 => backward_group::<3>(sos, xg, gy, gx, grad_sos),
            4 => backward_group::<4>(sos, xg, gy, gx, grad_sos),
            5 => backward_group::<5>(sos, xg, gy, gx, grad_sos),
            6 => backward_group::<6>(sos, xg, gy, gx, grad_sos),
            7 => backward_group::<7>(sos, xg, gy, gx, grad_sos),
            _ => backward_group::<BACKWARD_GROUP>(sos, xg, gy, gx, grad_sos),
        }
        start += m;
    }
    Ok(())
}

/// Frames the grouped backward recomputes and walks back at a time (its signals stay in
/// the cache: `(sections + 1) x (CHUNK + 2)` frames of a group's lanes).
const CHUNK: usize = 2048;

/// [`sosfilt_backward_rows`] for exactly `M` rows (lengths checked by the caller), on the
/// widest vectors this CPU has (the operations, and so the bits, are the same on each).
fn backward_group<const M: usize>(
    sos: &[[f64; 6]],
    x: &[&[f64]],
    grad_y: &[&[f64]],
    grad_x: &mut [&mut [f64]],
    grad_sos: &mut [[f64; 6]],
) {
    match Isa::detect() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detect` returns `Avx512` only where the CPU reports AVX-512F/VL and FMA.
        Isa::Avx512 => unsafe { group_avx512::<M>(sos, x, grad_y, grad_x, grad_sos) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `detect` returns `Avx2` only where the CPU reports AVX2 and FMA.
        Isa::Avx2 => unsafe { group_avx2::<M>(sos, x, grad_y, grad_x, grad_sos) },
        _ => group_lanes::<M>(sos, x, grad_y, grad_x, grad_sos),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
fn group_avx512<const M: usize>(sos: &[[f64; 6]], x: &[&[f64]], grad_y: &[&[f64]], grad_x: &mut [&mut [f64]], grad_sos: &mut [[f64; 6]]) {
    group_lanes::<M>(sos, x, grad_y, grad_x, grad_sos)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn group_avx2<const M: usize>(sos: &[[f64; 6]], x: &[&[f64]], grad_y: &[&[f64]], grad_x: &mut [&mut [f64]], grad_sos: &mut [[f64; 6]]) {
    group_lanes::<M>(sos, x, grad_y, grad_x, grad_sos)
}

/// The `M` rows as the lanes of `[f64; M]` frames, per row the operations of
/// [`sosfilt_backward_row`] in its order, in chunks of [`CHUNK`] frames from the end
/// instead of whole signals: a first forward pass keeps, at each chunk's start, every
/// section's state and every signal's two frames before it; the backward pass then
/// recomputes one chunk's signals from there (the same operations as `sosfilt_rows`,
/// [`super::section`], so the same values) and runs every section's step over it, each
/// section's two later adjoint values carried from the chunk after. Memory: one chunk's
/// signals and the checkpoints, not `sections + 1` whole signals.
#[inline(always)]
fn group_lanes<const M: usize>(sos: &[[f64; 6]], x: &[&[f64]], grad_y: &[&[f64]], grad_x: &mut [&mut [f64]], grad_sos: &mut [[f64; 6]]) {
    let n = x[0].len();
    let sections = sos.len();
    for (g, y) in grad_x.iter_mut().zip(grad_y) {
        g.copy_from_slice(y);
    }
    if n == 0 {
        return;
    }
    let coefs = super::section_coefs(sos);
    let chunks = n.div_ceil(CHUNK);
    let width = CHUNK + 2;
    // Chunk k's checkpoint: per section its [z0, z1] lanes, then per signal its two frames
    // before the chunk (zero before frame 0).
    let per_chunk = 2 * sections + 2 * (sections + 1);
    let mut checkpoints = vec![[0.0f64; M]; chunks * per_chunk];
    // Signal s's frame t of the chunk at s * width + 2 + t (its two frames before at +0, +1).
    let mut buf = vec![[0.0f64; M]; (sections + 1) * width];
    let mut z = vec![[0.0f64; M]; 2 * sections];
    // One or two rows fill few lanes here, while SciPy's own recursion (`sosfilt_rows`, the
    // same operations and so the same values as `forward_chunk`'s) runs a row's sections
    // side by side: there the first pass is that recursion over a copy of the rows, stopped
    // two frames before each chunk, and a chunk's checkpoint is the sections' states
    // there, from which the backward pass recomputes those two frames of every signal and
    // then the chunk's (one row x 441,000 x 15 sections: 42 -> 32 ms; with more rows the
    // copy costs more than it saves: `adjoint_probe`).
    let by_rows = M <= 2 && chunks > 1;
    if by_rows {
        let mut copy: Vec<Vec<f64>> = x.iter().map(|r| r[..(chunks - 1) * CHUNK - 2].to_vec()).collect();
        let mut state = vec![0.0f64; M * 2 * sections];
        let mut from = 0;
        for k in 1..chunks {
            let to = k * CHUNK - 2;
            let mut part: Vec<&mut [f64]> = copy.iter_mut().map(|r| &mut r[from..to]).collect();
            super::sosfilt_rows(sos, &mut part, &mut state).expect("rows of one length, a0 = 1: checked by the caller");
            for (i, lanes) in checkpoints[k * per_chunk..k * per_chunk + 2 * sections].iter_mut().enumerate() {
                for (j, v) in lanes.iter_mut().enumerate() {
                    *v = state[j * 2 * sections + i];
                }
            }
            from = to;
        }
    } else {
        for k in 0..chunks {
            let len = CHUNK.min(n - k * CHUNK);
            let cp = &mut checkpoints[k * per_chunk..(k + 1) * per_chunk];
            cp[..2 * sections].copy_from_slice(&z);
            if k > 0 {
                for sig in 0..=sections {
                    // The previous chunk's last two frames (it was at least two long).
                    cp[2 * sections + 2 * sig] = buf[sig * width + CHUNK];
                    cp[2 * sections + 2 * sig + 1] = buf[sig * width + CHUNK + 1];
                }
            }
            forward_chunk::<M, 2>(&coefs, x, k * CHUNK, len, &mut buf, &mut z);
        }
    }
    let (mut l1, mut l2) = (vec![[0.0f64; M]; sections], vec![[0.0f64; M]; sections]);
    let (mut db, mut da) = (vec![[[0.0f64; M]; 3]; sections], vec![[[0.0f64; M]; 3]; sections]);
    #[allow(clippy::useless_vec)] // up to 128 KiB: kept off the stack
    let mut g = vec![[0.0f64; M]; CHUNK];
    for k in (0..chunks).rev() {
        let (c0, len) = (k * CHUNK, CHUNK.min(n - k * CHUNK));
        let cp = &checkpoints[k * per_chunk..(k + 1) * per_chunk];
        z.copy_from_slice(&cp[..2 * sections]);
        if by_rows && k > 0 {
            forward_chunk::<M, 0>(&coefs, x, c0 - 2, len + 2, &mut buf, &mut z);
        } else {
            for sig in 0..=sections {
                buf[sig * width] = cp[2 * sections + 2 * sig];
                buf[sig * width + 1] = cp[2 * sections + 2 * sig + 1];
            }
            forward_chunk::<M, 2>(&coefs, x, c0, len, &mut buf, &mut z);
        }
        for (j, row) in grad_x.iter().enumerate() {
            for (frame, &v) in g[..len].iter_mut().zip(&row[c0..c0 + len]) {
                frame[j] = v;
            }
        }
        // Frames 0 and 1 of the signal (first chunk) take the row function's shorter sums,
        // so the bits stay its own: they come after the main part, section by section.
        let low = if k == 0 { 2.min(len) } else { 0 };
        // The main part, sections in pairs from the last: the later section takes frame t
        // while the one before it takes t + 1 (which the later one gave it a step before),
        // so two independent recurrences overlap in the pipeline where one section at a
        // time waited on each sample's predecessor; each section still walks its frames
        // from the last, so every sum and gradient is the same bits. Local frame t sits at
        // t + 2 in a signal's stretch of `buf`.
        let mut hi = sections;
        while hi > 0 {
            if hi >= 2 {
                let (a, b) = (hi - 1, hi - 2);
                let (mut pa, mut sba, mut saa) = ([l1[a], l2[a]], db[a], da[a]);
                let (mut pb, mut sbb, mut sab) = ([l1[b], l2[b]], db[b], da[b]);
                let xa = &buf[a * width..a * width + len + 2];
                let xb = &buf[b * width..b * width + len + 2];
                // Section a's output is section a + 1's input: ys of a is xs of a + 1.
                let ya = &buf[(a + 1) * width..(a + 1) * width + len + 2];
                for u in (low..len + 1).rev() {
                    // Section a at frame u - 1 (while u > low), section b at frame u (u < len).
                    if u > low {
                        let t = u - 1;
                        g[t] = back_step::<M>(&sos[a], g[t], &mut pa, &xa[t..t + 3], &ya[t..t + 3], &mut sba, &mut saa);
                    }
                    if u < len {
                        g[u] = back_step::<M>(&sos[b], g[u], &mut pb, &xb[u..u + 3], &xa[u..u + 3], &mut sbb, &mut sab);
                    }
                }
                ([l1[a], l2[a]], db[a], da[a]) = (pa, sba, saa);
                ([l1[b], l2[b]], db[b], da[b]) = (pb, sbb, sab);
                hi -= 2;
            } else {
                let a = hi - 1;
                let (mut pa, mut sba, mut saa) = ([l1[a], l2[a]], db[a], da[a]);
                let xa = &buf[a * width..a * width + len + 2];
                let ya = &buf[(a + 1) * width..(a + 1) * width + len + 2];
                for t in (low..len).rev() {
                    g[t] = back_step::<M>(&sos[a], g[t], &mut pa, &xa[t..t + 3], &ya[t..t + 3], &mut sba, &mut saa);
                }
                ([l1[a], l2[a]], db[a], da[a]) = (pa, sba, saa);
                hi -= 1;
            }
        }
        for s in (0..sections).rev() {
            let [b0, b1, b2, _, a1, a2] = sos[s];
            let xs = &buf[s * width..s * width + len + 2];
            let ys = &buf[(s + 1) * width..(s + 1) * width + len + 2];
            let (l1, l2, db, da) = (&mut l1[s], &mut l2[s], &mut db[s], &mut da[s]);
            for t in (0..low).rev() {
                for j in 0..M {
                    let l = g[t][j] - a1 * l1[j] - a2 * l2[j];
                    for q in 0..=t {
                        db[q][j] += l * xs[t + 2 - q][j];
                        da[q][j] += l * ys[t + 2 - q][j];
                    }
                    g[t][j] = b0 * l + b1 * l1[j] + b2 * l2[j];
                    (l1[j], l2[j]) = (l, l1[j]);
                }
            }
        }
        for (j, row) in grad_x.iter_mut().enumerate() {
            for (v, frame) in row[c0..c0 + len].iter_mut().zip(&g[..len]) {
                *v = frame[j];
            }
        }
    }
    // Rows in order, as the row function adds them.
    for s in (0..sections).rev() {
        let gs = &mut grad_sos[s];
        for j in 0..M {
            for q in 0..3 {
                gs[q] += db[s][q][j];
                gs[3 + q] -= da[s][q][j];
            }
        }
    }
}

/// One frame of one section's backward step (the row function's operations, in its
/// order): the adjoint `l` from the incoming gradient `gt` and the two later adjoint values
/// `p = [l(t+1), l(t+2)]` (moved on), the six sums over the section's input and output
/// windows `xw`, `yw` (frames t-2..=t), and the gradient handed to the section before.
#[inline(always)]
fn back_step<const M: usize>(coefs: &[f64; 6], gt: [f64; M], p: &mut [[f64; M]; 2], xw: &[[f64; M]], yw: &[[f64; M]], sb: &mut [[f64; M]; 3], sa: &mut [[f64; M]; 3]) -> [f64; M] {
    let [b0, b1, b2, _, a1, a2] = *coefs;
    let [p1, p2] = *p;
    let mut l = [0.0f64; M];
    let mut out = [0.0f64; M];
    for j in 0..M {
        l[j] = gt[j] - a1 * p1[j] - a2 * p2[j];
        sb[0][j] += l[j] * xw[2][j];
        sa[0][j] += l[j] * yw[2][j];
        sb[1][j] += l[j] * xw[1][j];
        sa[1][j] += l[j] * yw[1][j];
        sb[2][j] += l[j] * xw[0][j];
        sa[2][j] += l[j] * yw[0][j];
        out[j] = b0 * l[j] + b1 * p1[j] + b2 * p2[j];
    }
    *p = [l, p1];
    out
}

/// Frames `c0..c0 + len` of every signal into `buf` from place `AT` of each signal's
/// stretch (2: after the two frames before them, already there; 0: those two frames are
/// the first two computed): the input's, then each section over the one before from its
/// state in `z` (left at the last frame's), SciPy's operations ([`super::section`]).
#[inline(always)]
fn forward_chunk<const M: usize, const AT: usize>(coefs: &[[f64; 5]], x: &[&[f64]], c0: usize, len: usize, buf: &mut [[f64; M]], z: &mut [[f64; M]]) {
    let width = CHUNK + 2;
    for (j, row) in x.iter().enumerate() {
        for (frame, &v) in buf[AT..AT + len].iter_mut().zip(&row[c0..c0 + len]) {
            frame[j] = v;
        }
    }
    // Time-skewed: in step `u` section `s` takes frame `u - s`, whose input section
    // `s - 1` wrote in step `u - 1`, so one step's sections are independent recurrences
    // that overlap in the pipeline; each section still sees its frames in order.
    let sections = coefs.len();
    for u in 0..len + sections - 1 {
        for (s, c) in coefs.iter().enumerate().take(u + 1) {
            let t = u - s;
            if t >= len {
                continue;
            }
            let v = buf[s * width + AT + t];
            let (z0z1, _) = z[2 * s..].split_at_mut(2);
            let [z0, z1] = z0z1 else { unreachable!("two state lanes per section") };
            buf[(s + 1) * width + AT + t] = super::section::<M>(c, z0, z1, &v);
        }
    }
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

    /// The grouped rows equal the row function row by row, bit for bit (dL/dx and the
    /// accumulated dL/dsos), over a seeded sweep of row counts (groups of every size),
    /// lengths (0-2 frames included) and cascades.
    #[test]
    fn grouped_rows_equal_the_row_function_bit_for_bit() {
        let mut seed = 11u64;
        for case in 0..72 {
            let sections = 1 + case % 5;
            let rows = 1 + (case * 7) % 11;
            // Lengths around the chunk's: a last chunk of 1, 2 and 3 frames, several chunks.
            let n = [0, 1, 2, 3, 17, 300, CHUNK - 1, CHUNK, CHUNK + 1, CHUNK + 2, 2 * CHUNK + 3, 3 * CHUNK + 500][case % 12] + (case / 12) % 2;
            let sos: Vec<[f64; 6]> = (0..sections)
                .map(|_| {
                    let (r, th) = (0.99 * lcg(&mut seed).abs(), 3.1 * lcg(&mut seed).abs());
                    [lcg(&mut seed), lcg(&mut seed), lcg(&mut seed), 1.0, -2.0 * r * th.cos(), r * r]
                })
                .collect();
            let x: Vec<Vec<f64>> = (0..rows).map(|_| (0..n).map(|_| lcg(&mut seed)).collect()).collect();
            let g: Vec<Vec<f64>> = (0..rows).map(|_| (0..n).map(|_| lcg(&mut seed)).collect()).collect();
            let (mut want_x, mut want_s) = (vec![vec![0.0; n]; rows], vec![[0.5; 6]; sections]);
            for r in 0..rows {
                sosfilt_backward_row(&sos, &x[r], &g[r], &mut want_x[r], &mut want_s, &mut Vec::new()).unwrap();
            }
            let (mut got_x, mut got_s) = (vec![vec![f64::NAN; n]; rows], vec![[0.5; 6]; sections]);
            let xr: Vec<&[f64]> = x.iter().map(|r| &r[..]).collect();
            let gr: Vec<&[f64]> = g.iter().map(|r| &r[..]).collect();
            let mut gxr: Vec<&mut [f64]> = got_x.iter_mut().map(|r| &mut r[..]).collect();
            sosfilt_backward_rows(&sos, &xr, &gr, &mut gxr, &mut got_s).unwrap();
            let bits = |v: &[Vec<f64>]| v.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got_x), bits(&want_x), "case {case}: {rows} rows x {n}, {sections} sections");
            let sbits = |v: &[[f64; 6]]| v.iter().flatten().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(sbits(&got_s), sbits(&want_s), "case {case}: dL/dsos");
        }
        // Refusals, nothing written: a row of another length, a0 != 1.
        let sos = [[1.0, 0.5, 0.0, 1.0, -0.3, 0.1]];
        let (x0, x1) = ([1.0, 2.0, 3.0], [1.0, 2.0]);
        let mut gs = [[0.0; 6]];
        let (mut a, mut b) = ([0.0; 3], [0.0; 2]);
        let e = sosfilt_backward_rows(&sos, &[&x0, &x1], &[&x0, &x1], &mut [&mut a, &mut b], &mut gs);
        assert!(matches!(e, Err(RowsError::RowLength { row: 1, expected: 3, found: 2 })), "{e:?}");
        let e = sosfilt_backward_rows(&[[1.0, 0.0, 0.0, 2.0, 0.0, 0.0]], &[&x0], &[&x0], &mut [&mut a], &mut gs);
        assert!(matches!(e, Err(RowsError::SectionA0 { section: 0, .. })), "{e:?}");
        let e = sosfilt_backward_rows(&sos, &[&x0, &x0], &[&x0], &mut [&mut a], &mut gs);
        assert_eq!(e, Err(RowsError::RowCount { what: "grad_y", expected: 2, found: 1 }));
        assert_eq!(gs, [[0.0; 6]]);
    }

    #[test]
    fn lengths_are_checked() {
        let sos = [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]];
        let mut gs = [[0.0; 6]];
        let e = sosfilt_backward_row(&sos, &[1.0, 2.0], &[1.0], &mut [0.0, 0.0], &mut gs, &mut Vec::new());
        assert!(matches!(e, Err(RowsError::RowLength { row: 1, expected: 2, found: 1 })));
    }
}
