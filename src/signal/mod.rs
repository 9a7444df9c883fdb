//! SciPy's `sosfilt` and `lfilter` recurrences in `f64`, rows side by side as SIMD lanes.
//!
//! Each function does SciPy's operations in SciPy's order (separate multiplies and adds,
//! no fused multiply-add, the same association), so every row's output and final state
//! are SciPy's bit for bit on any instruction set; the speed comes from running up to 8
//! rows in the lanes of a vector (SciPy filters one row, one sample at a time) and,
//! for cascades, several sections time-skewed so their recurrences overlap.
//!
//! - [`sosfilt_rows`]: second-order sections (`sos` rows `[b0, b1, b2, 1, a1, a2]`), per
//!   section and sample `y = b0 x + z0; z0 = b1 x - a1 y + z1; z1 = b2 x - a2 y`.
//! - [`lfilter_rows`]: a transfer function `b / a` of any order, feedback included, in
//!   transposed direct form II with `b` and `a` divided by `a[0]` and padded to one length
//!   `k + 1`: `y = z0 + b0 x; z_j = z_{j+1} + x b_{j+1} - y a_{j+1}; z_{k-1} = x b_k - y a_k`.
//!
//! Offline code, outside `dsp/` on purpose: the functions allocate their scratch per call;
//! nothing here is for the audio thread (whose cascades are `dsp::sos`, fused and
//! sanitised). The Python package's `ferrofx.signal` drop-ins are built on it.
//!
//! [`adjoint`]: the gradients through `sosfilt` (for differentiable layers).

use crate::dsp::simd::Isa;

pub mod adjoint;
#[cfg(target_arch = "x86_64")]
mod wavefront;
#[cfg(test)]
mod tests;

pub use adjoint::{sosfilt_backward_row, sosfilt_backward_rows};
#[cfg(target_arch = "x86_64")]
use wavefront::{wavefront, WAVE_SECTIONS};

/// Filters up to this order keep their state in registers (longer ones in a small array
/// in L1, the same arithmetic).
pub const REGISTER_ORDER: usize = 8;

/// Frames per pass through the interleaved scratch.
const SUB_BLOCK: usize = 256;

/// Why a function here refused its arguments; nothing was written.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RowsError {
    #[error(
        "a[0] is {0}: the filter's leading denominator coefficient must be finite and non-zero"
    )]
    LeadingCoefficient(f64),
    #[error("section {section}: a0 is {a0}; sosfilt's sections have a0 = 1")]
    SectionA0 { section: usize, a0: f64 },
    #[error("b and a are empty: a filter needs at least one coefficient in each")]
    Empty,
    #[error("state holds {found} values where {rows} rows of {per_row} state values each need {expected}")]
    StateLength {
        rows: usize,
        per_row: usize,
        expected: usize,
        found: usize,
    },
    #[error("{what} has {found} rows where x has {expected}")]
    RowCount {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("row {row} has {found} samples where the first has {expected}")]
    RowLength {
        row: usize,
        expected: usize,
        found: usize,
    },
}

/// Rows per lane group on the kernels of `isa` (8 with AVX-512, else 4): a caller that
/// splits rows over threads gives each a multiple of this.
pub fn rows_per_group(isa: Isa) -> usize {
    match isa.or_portable() {
        Isa::Avx512 => 8,
        _ => 4,
    }
}

/// Refuses a section whose `a0` is not 1 (SciPy's sections have `a0 = 1`).
fn check_a0(sos: &[[f64; 6]]) -> Result<(), RowsError> {
    match sos.iter().enumerate().find(|(_, r)| r[3] != 1.0) {
        Some((section, row)) => Err(RowsError::SectionA0 { section, a0: row[3] }),
        None => Ok(()),
    }
}

/// The sections as the kernels take them: `[b0, b1, b2, a1, a2]` (`a0 = 1`).
fn section_coefs(sos: &[[f64; 6]]) -> Vec<[f64; 5]> {
    sos.iter().map(|r| [r[0], r[1], r[2], r[4], r[5]]).collect()
}

fn check_rows(rows: &[&mut [f64]], state: &[f64], per_row: usize) -> Result<(), RowsError> {
    let expected = rows.len() * per_row;
    if state.len() != expected {
        return Err(RowsError::StateLength {
            rows: rows.len(),
            per_row,
            expected,
            found: state.len(),
        });
    }
    let frames = rows.first().map_or(0, |r| r.len());
    if let Some((row, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != frames) {
        return Err(RowsError::RowLength {
            row,
            expected: frames,
            found: r.len(),
        });
    }
    Ok(())
}

/// SciPy's `sosfilt` along each row of `rows`, in place, from and into `state`
/// (`rows.len()` blocks of `sections x 2` values: SciPy's `zi` / `zf` per row). Rows must
/// have one length; every section's `a0` must be 1 (as SciPy requires).
pub fn sosfilt_rows(
    sos: &[[f64; 6]],
    rows: &mut [&mut [f64]],
    state: &mut [f64],
) -> Result<(), RowsError> {
    sosfilt_rows_with(Isa::detect(), sos, rows, state)
}

/// [`sosfilt_rows`] on the vector width of `isa` (the portable one where this CPU lacks
/// it); the result is the same bits either way, which the tests check.
pub fn sosfilt_rows_with(
    isa: Isa,
    sos: &[[f64; 6]],
    rows: &mut [&mut [f64]],
    state: &mut [f64],
) -> Result<(), RowsError> {
    check_a0(sos)?;
    check_rows(rows, state, 2 * sos.len())?;
    if sos.is_empty() {
        return Ok(());
    }
    let coefs = section_coefs(sos);
    let job = Job::Sos(&coefs);
    run_isa(isa, job, rows, state);
    Ok(())
}

/// SciPy's `lfilter` along each row of `rows`, in place, from and into `state`
/// (`rows.len()` blocks of `k` values, `k = max(len(a), len(b)) - 1`: SciPy's `zi` / `zf`
/// per row). Rows must have one length.
pub fn lfilter_rows(
    b: &[f64],
    a: &[f64],
    rows: &mut [&mut [f64]],
    state: &mut [f64],
) -> Result<(), RowsError> {
    lfilter_rows_with(Isa::detect(), b, a, rows, state)
}

/// [`lfilter_rows`] on the vector width of `isa` (the portable one where this CPU lacks
/// it); the same bits either way.
pub fn lfilter_rows_with(
    isa: Isa,
    b: &[f64],
    a: &[f64],
    rows: &mut [&mut [f64]],
    state: &mut [f64],
) -> Result<(), RowsError> {
    if b.is_empty() || a.is_empty() {
        return Err(RowsError::Empty);
    }
    let a0 = a[0];
    if a0 == 0.0 || !a0.is_finite() {
        return Err(RowsError::LeadingCoefficient(a0));
    }
    let n = a.len().max(b.len());
    check_rows(rows, state, n - 1)?;
    let mut bn = vec![0.0; n];
    let mut an = vec![0.0; n];
    for (d, s) in bn.iter_mut().zip(b) {
        *d = s / a0;
    }
    for (d, s) in an.iter_mut().zip(a) {
        *d = s / a0;
    }
    run_isa(isa, Job::Tf { b: &bn, a: &an }, rows, state);
    Ok(())
}

/// What a group of rows runs: sections `[b0, b1, b2, a1, a2]`, or a normalised transfer
/// function (`b` and `a` of one length `k + 1`).
#[derive(Clone, Copy)]
enum Job<'a> {
    Sos(&'a [[f64; 5]]),
    Tf { b: &'a [f64], a: &'a [f64] },
}

impl Job<'_> {
    /// A cascade long enough (8 sections or more) that each row's own [`wavefront`] beats
    /// rows as lanes (`rows_probe`, AMD EPYC AVX2, 15 sections, ns per section and
    /// sample: 0.31 against 0.70 with 2 rows, 0.31 against 0.34 with 4 to 16).
    fn long_cascade(self) -> bool {
        matches!(self, Job::Sos(c) if c.len() >= 8)
    }

    fn state_per_row(self) -> usize {
        match self {
            Job::Sos(c) => 2 * c.len(),
            Job::Tf { a, .. } => a.len() - 1,
        }
    }
}

fn run_isa(isa: Isa, job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    match isa.or_portable() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `or_portable` keeps `Avx512` only when the CPU reports AVX-512F/VL and FMA.
        Isa::Avx512 => unsafe { rows_avx512(job, rows, state) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `or_portable` keeps `Avx2` only when the CPU reports AVX2 and FMA.
        Isa::Avx2 => unsafe { rows_avx2(job, rows, state) },
        // The portable build: one row as scalars (sections time-skewed), more as lanes.
        _ => match rows.len() {
            1 => all_rows::<1>(job, rows, state),
            _ => all_rows::<4>(job, rows, state),
        },
    }
}

/// The lane counts per instruction set: a long cascade (and any cascade on one row) runs
/// row by row with its sections as lanes ([`wavefront`]), one row of a transfer function
/// as plain scalars, more rows one vector's worth at a time (4 with AVX2, 4 or 8 with
/// AVX-512). Two vectors per group (8 rows with AVX2) measured 2.2x slower for cascades:
/// the time-skewed chunk's state, carries and frames no longer fit the registers
/// (`benchmarks/probes/examples/rows_probe.rs`). A narrower last group fills the lanes with
/// zeros. The instruction set changes the speed only: the operations, and so the bits,
/// are the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
fn rows_avx512(job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    match rows.len() {
        // SAFETY (both): this function's target features include AVX2 and FMA.
        1 => unsafe { one_row(job, rows, state) },
        _ if job.long_cascade() => unsafe { each_row(job, rows, state) },
        2..=4 => all_rows::<4>(job, rows, state),
        _ => all_rows::<8>(job, rows, state),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rows_avx2(job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    match rows.len() {
        // SAFETY (both): this function's target features include AVX2 and FMA.
        1 => unsafe { one_row(job, rows, state) },
        _ if job.long_cascade() => unsafe { each_row(job, rows, state) },
        _ => all_rows::<4>(job, rows, state),
    }
}

/// One row: a cascade's sections as the lanes ([`wavefront`], in place, chunks of up to
/// [`WAVE_SECTIONS`] sections); a transfer function (one recurrence) as scalars.
///
/// # Safety
/// The CPU must have AVX2 and FMA (the AVX2 and AVX-512 dispatchers call it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn one_row(job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    match job {
        Job::Sos(coefs) => {
            let row = &mut *rows[0];
            for (ci, chunk) in coefs.chunks(WAVE_SECTIONS).enumerate() {
                let zc = &mut state[2 * ci * WAVE_SECTIONS..][..2 * chunk.len()];
                // SAFETY: as this function's own contract.
                unsafe {
                    match chunk.len().div_ceil(4) {
                        1 => wavefront::<1>(chunk, zc, row),
                        2 => wavefront::<2>(chunk, zc, row),
                        3 => wavefront::<3>(chunk, zc, row),
                        _ => wavefront::<4>(chunk, zc, row),
                    }
                }
            }
        }
        Job::Tf { .. } => all_rows::<1>(job, rows, state),
    }
}

/// Row after row, each through [`one_row`].
///
/// # Safety
/// As [`one_row`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn each_row(job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    let per_row = job.state_per_row();
    for (r, row) in rows.iter_mut().enumerate() {
        // SAFETY: as this function's own contract.
        unsafe { one_row(job, std::slice::from_mut(row), &mut state[r * per_row..][..per_row]) };
    }
}

/// The rows in groups of `L`, each group's state moved into lanes and back.
#[inline(always)]
fn all_rows<const L: usize>(job: Job, rows: &mut [&mut [f64]], state: &mut [f64]) {
    let per_row = job.state_per_row();
    let mut scratch = vec![[0.0f64; L]; SUB_BLOCK];
    let mut z = vec![[0.0f64; L]; per_row];
    for (g, group) in rows.chunks_mut(L).enumerate() {
        let st = &mut state[g * L * per_row..][..group.len() * per_row];
        z.fill([0.0; L]);
        if per_row > 0 {
            for (l, zr) in st.chunks_exact(per_row).enumerate() {
                for (j, v) in zr.iter().enumerate() {
                    z[j][l] = *v;
                }
            }
        }
        group_rows::<L>(job, group, &mut z, &mut scratch);
        if per_row > 0 {
            for (l, zr) in st.chunks_exact_mut(per_row).enumerate() {
                for (j, v) in zr.iter_mut().enumerate() {
                    *v = z[j][l];
                }
            }
        }
    }
}

/// One group of up to `L` rows through the whole length, sub-block by sub-block.
#[inline(always)]
fn group_rows<const L: usize>(
    job: Job,
    group: &mut [&mut [f64]],
    z: &mut [[f64; L]],
    scratch: &mut [[f64; L]],
) {
    let frames = group.first().map_or(0, |r| r.len());
    let lanes = group.len();
    let mut t0 = 0;
    while t0 < frames {
        let n = (frames - t0).min(SUB_BLOCK);
        let data = &mut scratch[..n];
        // Row by row (sequential reads; the scratch is in L1), empty lanes zero.
        for (l, row) in group.iter().enumerate() {
            for (frame, &v) in data.iter_mut().zip(&row[t0..t0 + n]) {
                frame[l] = v;
            }
        }
        if lanes < L {
            for frame in data.iter_mut() {
                frame[lanes..].fill(0.0);
            }
        }
        match job {
            Job::Sos(coefs) => cascade::<L>(coefs, z, data),
            Job::Tf { b, a } => transfer_function::<L>(b, a, z, data),
        }
        for (l, row) in group.iter_mut().enumerate() {
            for (v, frame) in row[t0..t0 + n].iter_mut().zip(data.iter()) {
                *v = frame[l];
            }
        }
        t0 += n;
    }
}

/// Sections per time-skewed chunk: eight for one row (scalars), four for vectors (their
/// state, carries and frames fill the registers).
const fn chunk_sections(lanes: usize) -> usize {
    if lanes == 1 {
        8
    } else {
        4
    }
}

/// The cascade over one sub-block, in chunks of sections.
#[inline(always)]
fn cascade<const L: usize>(coefs: &[[f64; 5]], z: &mut [[f64; L]], data: &mut [[f64; L]]) {
    let m = chunk_sections(L);
    for (ci, chunk) in coefs.chunks(m).enumerate() {
        let zc = &mut z[2 * ci * m..][..2 * chunk.len()];
        macro_rules! run {
            ($($n:literal)*) => {
                match chunk.len() {
                    $($n => skewed::<L, $n>(chunk.try_into().expect("length matched"), zc, data),)*
                    _ => unreachable!("chunks of at most 8 sections"),
                }
            };
        }
        run!(1 2 3 4 5 6 7 8);
    }
}

/// One section on one frame of `L` lanes, SciPy's operations in SciPy's order.
#[inline(always)]
fn section<const L: usize>(
    c: &[f64; 5],
    z0: &mut [f64; L],
    z1: &mut [f64; L],
    v: &[f64; L],
) -> [f64; L] {
    let mut y = [0.0f64; L];
    for l in 0..L {
        y[l] = c[0] * v[l] + z0[l];
        z0[l] = c[1] * v[l] - c[3] * y[l] + z1[l];
        z1[l] = c[2] * v[l] - c[4] * y[l];
    }
    y
}

/// `N` sections over `data` in place (`zc`: their `[z0, z1]` pairs), time-skewed: in
/// iteration `t` section `k` takes frame `t - k`, its input the output section `k - 1`
/// made in iteration `t - 1`, so the `N` recurrences of one iteration are independent and
/// overlap in the pipeline. Each section still sees its frames in order with SciPy's
/// operations: the same bits as one frame through all sections at a time.
#[inline(always)]
fn skewed<const L: usize, const N: usize>(
    c: &[[f64; 5]; N],
    zc: &mut [[f64; L]],
    data: &mut [[f64; L]],
) {
    let mut z0 = [[0.0f64; L]; N];
    let mut z1 = [[0.0f64; L]; N];
    for k in 0..N {
        z0[k] = zc[2 * k];
        z1[k] = zc[2 * k + 1];
    }
    let n = data.len();
    let mut carry = [[0.0f64; L]; N];
    for t in 0..N - 1 {
        iteration::<L, N>(c, &mut z0, &mut z1, &mut carry, data, t, true);
    }
    for t in N - 1..n {
        iteration::<L, N>(c, &mut z0, &mut z1, &mut carry, data, t, false);
    }
    for t in n.max(N - 1)..n + N - 1 {
        iteration::<L, N>(c, &mut z0, &mut z1, &mut carry, data, t, true);
    }
    for k in 0..N {
        zc[2 * k] = z0[k];
        zc[2 * k + 1] = z1[k];
    }
}

/// Iteration `t` of [`skewed`]: the last section first, so each section reads the carry
/// of the section before it from iteration `t - 1`. `checked`: the prologue and epilogue,
/// where some sections have no frame.
#[inline(always)]
fn iteration<const L: usize, const N: usize>(
    c: &[[f64; 5]; N],
    z0: &mut [[f64; L]; N],
    z1: &mut [[f64; L]; N],
    carry: &mut [[f64; L]; N],
    data: &mut [[f64; L]],
    t: usize,
    checked: bool,
) {
    let n = data.len();
    for k in (0..N).rev() {
        if checked && (t < k || t - k >= n) {
            continue;
        }
        let v = if k == 0 { data[t] } else { carry[k - 1] };
        let y = section(&c[k], &mut z0[k], &mut z1[k], &v);
        if k == N - 1 {
            data[t - k] = y;
        } else {
            carry[k] = y;
        }
    }
}

/// The transfer function over one sub-block, its state in locals for orders up to
/// [`REGISTER_ORDER`].
#[inline(always)]
fn transfer_function<const L: usize>(
    b: &[f64],
    a: &[f64],
    z: &mut [[f64; L]],
    data: &mut [[f64; L]],
) {
    macro_rules! fixed {
        ($($k:literal)*) => {
            match z.len() {
                $($k => recurrence_fixed::<L, $k>(b, a, (&mut z[..]).try_into().expect("length matched"), data),)*
                _ => recurrence_any::<L>(b, a, z, data),
            }
        };
    }
    fixed!(0 1 2 3 4 5 6 7 8);
}

/// The recurrence with `K` state values per lane held in locals (registers).
#[inline(always)]
fn recurrence_fixed<const L: usize, const K: usize>(
    bs: &[f64],
    as_: &[f64],
    z: &mut [[f64; L]; K],
    data: &mut [[f64; L]],
) {
    let mut b = [0.0f64; REGISTER_ORDER + 1];
    let mut a = [0.0f64; REGISTER_ORDER + 1];
    b[..=K].copy_from_slice(bs);
    a[..=K].copy_from_slice(as_);
    let mut zs = *z;
    for frame in data.iter_mut() {
        let x = *frame;
        let mut y = [0.0f64; L];
        for l in 0..L {
            y[l] = if K == 0 {
                x[l] * b[0]
            } else {
                zs[0][l] + b[0] * x[l]
            };
        }
        for j in 0..K {
            for l in 0..L {
                zs[j][l] = if j + 1 < K {
                    zs[j + 1][l] + x[l] * b[j + 1] - y[l] * a[j + 1]
                } else {
                    x[l] * b[j + 1] - y[l] * a[j + 1]
                };
            }
        }
        *frame = y;
    }
    *z = zs;
}

/// The recurrence for any order, its state in `z` (L1-resident).
#[inline(always)]
fn recurrence_any<const L: usize>(b: &[f64], a: &[f64], z: &mut [[f64; L]], data: &mut [[f64; L]]) {
    let k = z.len();
    for frame in data.iter_mut() {
        let x = *frame;
        let mut y = [0.0f64; L];
        for l in 0..L {
            y[l] = z[0][l] + b[0] * x[l];
        }
        for j in 0..k - 1 {
            let (bj, aj) = (b[j + 1], a[j + 1]);
            for l in 0..L {
                z[j][l] = z[j + 1][l] + x[l] * bj - y[l] * aj;
            }
        }
        for l in 0..L {
            z[k - 1][l] = x[l] * b[k] - y[l] * a[k];
        }
        *frame = y;
    }
}
