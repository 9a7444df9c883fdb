//! Second-order sections in the form the GPU runs them: a *delta* state-space form that
//! stays accurate in `f32` when poles crowd `z = 1`, plus the chunk-transfer tables the
//! time-parallel scan needs. Pure arithmetic, no device code; the CPU model at the end
//! mirrors the shader's operation order and is what the unit tests hold to the reference.
//!
//! # Why not transposed direct form II in `f32`
//! A low-frequency section has `a1 ≈ -2`, `a2 ≈ 1`; rounding those to `f32` moves the
//! poles by a large share of their (tiny) distance from `z = 1`, so the filter itself
//! changes (the shared reference notes that plain `f32` TDF-II fails about a third of its
//! cases). Here each section is a 2-state system `s' = s + Δ·s + B·x`, `y = C·s + d·x`
//! whose `Δ = A - I` is computed in `f64` from the section and only then rounded: the
//! small quantities that place the poles (`σ - 1`, `ω`, `1 - p`) keep `f32`'s relative
//! precision instead of being the last bits of numbers near 1.
//!
//! The realisation is a similarity transform of TDF-II, `s = T·z` (`z` the TDF-II state
//! the CPU cascade keeps), so a job's state converts both ways exactly (in `f64`) for any
//! section, including ones with cancelling poles and zeros:
//! - complex poles `σ ± jω`: `A = [[σ, -ω], [ω, σ]]`, `C = [1, 0]` (normal form);
//! - real poles `p1`, `p2` (also equal ones): `A = [[p1, 0], [1, p2]]`, `C = [0, 1]`.
//!
//! `T = O_alt⁻¹·O_tdf2` from the two observability matrices; TDF-II is always observable
//! and so is each form above, so `T` is always invertible.

use crate::dsp::sos::SosCoefs;

/// Chunks the scan splits a block into at most (one workgroup of this many invocations).
pub const MAX_CHUNKS: usize = 256;
/// `log2(MAX_CHUNKS)`: the scan's steps.
pub const SCAN_STEPS: usize = 8;

type M2 = [[f64; 2]; 2];

fn mul(a: &M2, b: &M2) -> M2 {
    [
        [a[0][0] * b[0][0] + a[0][1] * b[1][0], a[0][0] * b[0][1] + a[0][1] * b[1][1]],
        [a[1][0] * b[0][0] + a[1][1] * b[1][0], a[1][0] * b[0][1] + a[1][1] * b[1][1]],
    ]
}

fn apply(m: &M2, v: [f64; 2]) -> [f64; 2] {
    [m[0][0] * v[0] + m[0][1] * v[1], m[1][0] * v[0] + m[1][1] * v[1]]
}

fn inverse(m: &M2) -> M2 {
    let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
    [[m[1][1] / det, -m[0][1] / det], [-m[1][0] / det, m[0][0] / det]]
}

/// The float types a GPU path runs sections in: `f32` (every device) and `f64` (devices
/// with double precision, for the cascades whose `f32` form would miss the tolerance).
pub trait GpuFloat: Copy + Default + PartialEq + std::fmt::Debug + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl GpuFloat for f32 {
    #[inline]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
    #[inline]
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl GpuFloat for f64 {
    #[inline]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
    #[inline]
    fn from_f64(v: f64) -> f64 {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
}

/// One section as the shader reads it (12 words, std430-compatible): `f32` by default, `f64`
/// for a cascade run in double precision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct DeltaSection<T = f32> {
    /// `A - I`, row-major.
    pub delta: [T; 4],
    pub b: [T; 2],
    pub c: [T; 2],
    pub d: T,
    pub _pad: [T; 3],
}

impl<T: GpuFloat> DeltaSection<T> {
    /// The record as the shader's `Section` struct lays it out.
    pub fn words(&self) -> [T; 12] {
        let (d, b, c, z) = (self.delta, self.b, self.c, T::default());
        [d[0], d[1], d[2], d[3], b[0], b[1], c[0], c[1], self.d, z, z, z]
    }
}

/// A section's delta form with its `f64` pieces for state conversion and scan tables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Realization {
    /// `A - I` in `f64`.
    pub delta: M2,
    pub b: [f64; 2],
    pub c: [f64; 2],
    pub d: f64,
    /// TDF-II state -> this form's state.
    pub to_alt: M2,
    /// This form's state -> TDF-II state.
    pub to_tdf2: M2,
}

impl Realization {
    pub fn new(s: &SosCoefs) -> Realization {
        let (a1, a2) = (s.a1, s.a2);
        // Pole placement relative to z = 1, without cancellation: with t = 1 - p the
        // poles' offsets solve t² - u·t + q = 0.
        let u = 2.0 + a1;
        let q = 1.0 + a1 + a2;
        let disc = u * u - 4.0 * q; // = a1² - 4·a2
        let (delta, c, o_alt) = if disc < 0.0 {
            let sigma_m1 = -u / 2.0;
            let omega = (-disc).sqrt() / 2.0;
            let sigma = 1.0 + sigma_m1;
            ([[sigma_m1, -omega], [omega, sigma_m1]], [1.0, 0.0], [[1.0, 0.0], [sigma, -omega]])
        } else {
            let root = disc.sqrt();
            let t_big = (u + if u >= 0.0 { root } else { -root }) / 2.0;
            let t_small = if t_big != 0.0 { q / t_big } else { 0.0 };
            let p2 = 1.0 - t_small;
            ([[-t_big, 0.0], [1.0, -t_small]], [0.0, 1.0], [[0.0, 1.0], [1.0, p2]])
        };
        let o_tdf2: M2 = [[1.0, 0.0], [-a1, 1.0]];
        let to_alt = mul(&inverse(&o_alt), &o_tdf2);
        let to_tdf2 = inverse(&to_alt);
        let b_tdf2 = [s.b1 - a1 * s.b0, s.b2 - a2 * s.b0];
        Realization { delta, b: apply(&to_alt, b_tdf2), c, d: s.b0, to_alt, to_tdf2 }
    }

    /// `A` itself (`f64`).
    pub fn a(&self) -> M2 {
        let d = &self.delta;
        [[1.0 + d[0][0], d[0][1]], [d[1][0], 1.0 + d[1][1]]]
    }

    /// The `f32` record the shader reads.
    pub fn to_gpu(&self) -> DeltaSection {
        self.to_gpu_as()
    }

    /// The record in `T` (`f32` or `f64`).
    pub fn to_gpu_as<T: GpuFloat>(&self) -> DeltaSection<T> {
        let d = &self.delta;
        let f = T::from_f64;
        DeltaSection {
            delta: [f(d[0][0]), f(d[0][1]), f(d[1][0]), f(d[1][1])],
            b: [f(self.b[0]), f(self.b[1])],
            c: [f(self.c[0]), f(self.c[1])],
            d: f(self.d),
            _pad: [T::default(); 3],
        }
    }

    /// TDF-II state -> this form's state (`f32` for the shader).
    pub fn state_to_gpu(&self, z: [f64; 2]) -> [f32; 2] {
        self.state_to_gpu_as(z)
    }

    /// TDF-II state -> this form's state in `T`.
    pub fn state_to_gpu_as<T: GpuFloat>(&self, z: [f64; 2]) -> [T; 2] {
        apply(&self.to_alt, z).map(T::from_f64)
    }

    /// This form's state -> TDF-II state.
    pub fn state_from_gpu<T: GpuFloat>(&self, s: [T; 2]) -> [f64; 2] {
        apply(&self.to_tdf2, s.map(T::to_f64))
    }

    /// Scan table for chunks of `chunk_len` samples: `A^(chunk_len·2^k) - I` for
    /// `k = 0..SCAN_STEPS`, row-major `f32`.
    pub fn scan_table(&self, chunk_len: usize) -> [[f32; 4]; SCAN_STEPS] {
        self.scan_table_as(chunk_len)
    }

    /// [`Realization::scan_table`] in `T`.
    pub fn scan_table_as<T: GpuFloat>(&self, chunk_len: usize) -> [[T; 4]; SCAN_STEPS] {
        let mut p = mat_pow(&self.a(), chunk_len);
        let mut out = [[T::default(); 4]; SCAN_STEPS];
        for entry in out.iter_mut() {
            *entry = [p[0][0] - 1.0, p[0][1], p[1][0], p[1][1] - 1.0].map(T::from_f64);
            p = mul(&p, &p);
        }
        out
    }
}

fn mat_pow(a: &M2, mut n: usize) -> M2 {
    let mut result: M2 = [[1.0, 0.0], [0.0, 1.0]];
    let mut base = *a;
    while n > 0 {
        if n & 1 == 1 {
            result = mul(&result, &base);
        }
        base = mul(&base, &base);
        n >>= 1;
    }
    result
}

/// How a block is split: `chunks` chunks of `chunk_len` samples (the last may be shorter).
/// Blocks up to `sequential_max` frames run as one chunk (the sequential path).
pub fn chunking(frames: usize, sequential_max: usize) -> (usize, usize) {
    if frames <= sequential_max.max(1) {
        return (1, frames.max(1));
    }
    let chunk_len = frames.div_ceil(MAX_CHUNKS).max(1);
    (frames.div_ceil(chunk_len), chunk_len)
}

/// One sample of the delta recursion, in the shader's operation order.
#[inline]
pub fn step<T: GpuFloat>(sec: &DeltaSection<T>, s: &mut [T; 2], x: T) -> T {
    let y = sec.c[0].mul_add(s[0], sec.c[1].mul_add(s[1], sec.d * x));
    let i0 = sec.delta[0].mul_add(s[0], sec.delta[1].mul_add(s[1], sec.b[0] * x));
    let i1 = sec.delta[2].mul_add(s[0], sec.delta[3].mul_add(s[1], sec.b[1] * x));
    *s = [s[0] + i0, s[1] + i1];
    y
}

/// `v + (M - I)·v` with `m` holding `M - I` row-major.
#[inline]
pub fn advance<T: GpuFloat>(m: &[T; 4], v: [T; 2]) -> [T; 2] {
    [v[0] + m[0].mul_add(v[0], m[1] * v[1]), v[1] + m[2].mul_add(v[0], m[3] * v[1])]
}

/// CPU model of the shader for one channel and one section: sequential when the block is
/// one chunk, else zero-state chunk passes, a Hillis-Steele scan of the chunk end states
/// and a re-run of every chunk from its true start state.
pub fn model_section<T: GpuFloat>(sec: &DeltaSection<T>, table: &[[T; 4]; SCAN_STEPS], x: &mut [T], state: &mut [T; 2], chunk_len: usize) {
    let chunks = x.len().div_ceil(chunk_len.max(1)).max(1);
    if chunks == 1 {
        for v in x.iter_mut() {
            *v = step(sec, state, *v);
        }
        return;
    }
    // Pass 1: end state of each chunk from zero state; chunk 0 from the real state.
    let mut ends: Vec<[T; 2]> = x
        .chunks(chunk_len)
        .enumerate()
        .map(|(j, chunk)| {
            let mut s = if j == 0 { *state } else { [T::default(); 2] };
            for &v in chunk {
                step(sec, &mut s, v);
            }
            s
        })
        .collect();
    // Pass 2: inclusive scan, ends[j] <- sum_{i<=j} A^{(j-i)L} ends[i].
    let mut offset = 1;
    let mut k = 0;
    while offset < chunks {
        let prev = ends.clone();
        for j in offset..chunks {
            let carried = advance(&table[k], prev[j - offset]);
            ends[j] = [prev[j][0] + carried[0], prev[j][1] + carried[1]];
        }
        offset *= 2;
        k += 1;
    }
    // Pass 3: every chunk again from its true start.
    let start0 = *state;
    for (j, chunk) in x.chunks_mut(chunk_len).enumerate() {
        let mut s = if j == 0 { start0 } else { ends[j - 1] };
        for v in chunk.iter_mut() {
            *v = step(sec, &mut s, *v);
        }
        *state = s;
    }
}

/// Partition size of the FFT-partitioned FIR path for `taps` taps: about 64 partitions,
/// 256..=16384 taps each (FFTs of twice that).
pub fn fft_partition_for(taps: usize) -> usize {
    (taps.next_power_of_two() / 64).clamp(256, 16_384)
}

/// `H_q = FFT_2P(taps[qP, (q+1)P))` for every partition, all `2P` bins, rounded to `f32`.
pub fn partition_spectra(taps: &[f64], part: usize) -> Vec<[f32; 2]> {
    let n = 2 * part;
    let mut planner = realfft::RealFftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(n);
    let mut time = fwd.make_input_vec();
    let mut spec = fwd.make_output_vec();
    let mut out = Vec::with_capacity(taps.len().div_ceil(part) * n);
    for chunk in taps.chunks(part) {
        time.fill(0.0);
        time[..chunk.len()].copy_from_slice(chunk);
        // Same plan and lengths: cannot fail.
        let _ = fwd.process(&mut time, &mut spec);
        for k in 0..n {
            let c = if k <= part { spec[k] } else { spec[n - k].conj() };
            out.push([c.re as f32, c.im as f32]);
        }
    }
    out
}

/// The error a GPU path may have, as a share of the output peak, before it declines a
/// cascade: a fifth of the reference tolerance (1e-4), since the estimate comes from one
/// probe signal and the input will be another.
pub const GPU_ERROR_BUDGET: f64 = 2e-5;

/// The float type a cascade runs in on a GPU path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuPrecision {
    /// The delta form in `f32` (every device).
    F32,
    /// The delta form in `f64`, the samples still `f32` in and out of the cascade: for the
    /// cascades whose `f32` form would miss the tolerance, on devices with double precision.
    F64,
}

impl GpuPrecision {
    pub fn bits(self) -> u32 {
        match self {
            GpuPrecision::F32 => 32,
            GpuPrecision::F64 => 64,
        }
    }
}

/// The delta forms of cascade `stage` of a chain for a GPU backend and the precision it
/// runs in: `f32` where its estimated error ([`error_estimate`] for blocks of
/// `max_frames`) is within [`GPU_ERROR_BUDGET`]; else `f64` where the device has it
/// (`float64`) and that is within the budget; else
/// [`crate::gpu::GpuError::Precision`] (a NaN estimate declines too). The one decline
/// rule every GPU backend applies.
pub fn realize_cascade(
    sections: &[crate::design::Sos],
    stage: usize,
    max_frames: usize,
    sequential_max: usize,
    float64: bool,
) -> Result<(Vec<Realization>, GpuPrecision), crate::gpu::GpuError> {
    let coefs: Vec<SosCoefs> = sections.iter().map(SosCoefs::from).collect();
    let mut estimate = remembered_estimate(&coefs, max_frames, sequential_max, GpuPrecision::F32);
    let mut precision = GpuPrecision::F32;
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
    if !(estimate <= GPU_ERROR_BUDGET) && float64 {
        precision = GpuPrecision::F64;
        estimate = remembered_estimate(&coefs, max_frames, sequential_max, GpuPrecision::F64);
    }
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
    if !(estimate <= GPU_ERROR_BUDGET) {
        return Err(crate::gpu::GpuError::Precision { stage, estimate, float_bits: precision.bits() });
    }
    Ok((coefs.iter().map(Realization::new).collect(), precision))
}

/// [`error_estimate`], remembered for the last cascades asked about (exact coefficient
/// bits, block, limit and precision): the estimate takes milliseconds (10.8 ms for a
/// 12-section cascade on the development machine), and a coefficient change on the GPU
/// path asks twice, once where it is designed (is it accepted?) and once on the offload
/// worker that takes it (`GpuDesign::new`), which must not stall there.
fn remembered_estimate(coefs: &[SosCoefs], frames: usize, sequential_max: usize, precision: GpuPrecision) -> f64 {
    type Entry = (Vec<SosCoefs>, usize, usize, GpuPrecision, f64);
    const KEPT: usize = 32;
    static MEMORY: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());
    let same = |a: &[SosCoefs], b: &[SosCoefs]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| [x.b0, x.b1, x.b2, x.a1, x.a2].map(f64::to_bits) == [y.b0, y.b1, y.b2, y.a1, y.a2].map(f64::to_bits))
    };
    let lock = || MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = lock().iter().find(|e| e.1 == frames && e.2 == sequential_max && e.3 == precision && same(&e.0, coefs)) {
        return e.4;
    }
    let estimate = error_estimate(coefs, frames, sequential_max, precision);
    let mut memory = lock();
    if memory.len() == KEPT {
        memory.remove(0);
    }
    memory.push((coefs.to_vec(), frames, sequential_max, precision, estimate));
    estimate
}

/// [`error_estimate`] of the `f32` form.
pub fn f32_error_estimate(sections: &[SosCoefs], frames: usize, sequential_max: usize) -> f64 {
    error_estimate(sections, frames, sequential_max, GpuPrecision::F32)
}

/// Estimates the error of running `sections` (one cascade) the way the GPU does in
/// `precision`: a seeded white-noise probe of `frames` samples through the delta form (the
/// CPU model of the shader, [`model_cascade`]: sequentially, and scanned in the chunks a
/// block of `frames` would use past `sequential_max`) against the same cascade in `f64`
/// TDF-II. Returns `max |y_gpu - y_f64| / max |y_f64|`, the worse of the two paths
/// (infinite when the model's output is not finite). The probe is long enough (16,384
/// samples, less for very long cascades) for the coefficient rounding of a low-frequency
/// pole to show.
pub fn error_estimate(sections: &[SosCoefs], frames: usize, sequential_max: usize, precision: GpuPrecision) -> f64 {
    let probe_len = (1usize << 24).checked_div(sections.len().max(1)).unwrap_or(0).clamp(1024, 16_384);
    let probe: Vec<f32> = crate::design::probe_noise(probe_len).iter().map(|&v| v as f32).collect();
    let mut exact: Vec<f64> = probe.iter().map(|&v| f64::from(v)).collect();
    for s in sections {
        let mut z = [0.0f64; 2];
        for v in exact.iter_mut() {
            let y = s.b0 * *v + z[0];
            z[0] = s.b1 * *v - s.a1 * y + z[1];
            z[1] = s.b2 * *v - s.a2 * y;
            *v = y;
        }
    }
    let peak = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (_, chunk_len) = chunking(frames.max(sequential_max + 1), sequential_max);
    let realizations: Vec<Realization> = sections.iter().map(Realization::new).collect();
    fn modelled<T: GpuFloat>(realizations: &[Realization], probe: &[f32], block: usize, chunk_len: usize) -> Vec<f32> {
        let mut y = probe.to_vec();
        let mut states = vec![[T::default(); 2]; realizations.len()];
        for block in y.chunks_mut(block) {
            run_cascade(realizations, block, &mut states, chunk_len.min(block.len()));
        }
        y
    }
    let mut worst = 0.0f64;
    // Sequential (one chunk per block), then scanned in blocks of `MAX_CHUNKS` chunks.
    for (block, chunk_len) in [(probe.len(), probe.len()), (chunk_len * MAX_CHUNKS, chunk_len)] {
        let y = match precision {
            GpuPrecision::F32 => modelled::<f32>(&realizations, &probe, block, chunk_len),
            GpuPrecision::F64 => modelled::<f64>(&realizations, &probe, block, chunk_len),
        };
        worst = worst.max(peak_error(&y, &exact, peak));
    }
    worst
}

/// `max |y - exact| / peak` (the absolute error where `peak` is 0), infinite where any
/// difference is not a number or the result is not finite (`max` would skip a NaN): the
/// error estimates' measure.
pub fn peak_error<T: GpuFloat>(y: &[T], exact: &[f64], peak: f64) -> f64 {
    let err = y.iter().zip(exact).fold(0.0f64, |m, (a, b)| {
        let d = (a.to_f64() - b).abs();
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d)
        }
    });
    let rel = if peak > 0.0 { err / peak } else { err };
    if rel.is_finite() {
        rel
    } else {
        f64::INFINITY
    }
}

/// One block of one channel through a cascade the way a GPU path runs it in `T`: the `f32`
/// samples into `T`, every section through [`model_section`] from its state in the delta
/// form (`states`, one per section, left at the block's end), the result rounded to `f32`
/// once at the cascade's end. `chunk_len >= x.len()`: sequential; else scanned chunks.
pub fn run_cascade<T: GpuFloat>(realizations: &[Realization], x: &mut [f32], states: &mut [[T; 2]], chunk_len: usize) {
    let mut y: Vec<T> = x.iter().map(|&v| T::from_f64(f64::from(v))).collect();
    for (r, s) in realizations.iter().zip(states.iter_mut()) {
        model_section(&r.to_gpu_as::<T>(), &r.scan_table_as::<T>(chunk_len), &mut y, s, chunk_len);
    }
    for (o, v) in x.iter_mut().zip(&y) {
        *o = v.to_f64() as f32;
    }
}

/// [`run_cascade`] in `precision` with the sections' TDF-II states (`f64`, the engine's),
/// converted in and out as the backends convert a job's state.
pub fn model_cascade(realizations: &[Realization], precision: GpuPrecision, x: &mut [f32], states: &mut [[f64; 2]], chunk_len: usize) {
    fn run<T: GpuFloat>(realizations: &[Realization], x: &mut [f32], states: &mut [[f64; 2]], chunk_len: usize) {
        let mut alt: Vec<[T; 2]> = realizations.iter().zip(states.iter()).map(|(r, z)| r.state_to_gpu_as::<T>(*z)).collect();
        run_cascade(realizations, x, &mut alt, chunk_len);
        for ((r, z), s) in realizations.iter().zip(states.iter_mut()).zip(&alt) {
            *z = r.state_from_gpu(*s);
        }
    }
    match precision {
        GpuPrecision::F32 => run::<f32>(realizations, x, states, chunk_len),
        GpuPrecision::F64 => run::<f64>(realizations, x, states, chunk_len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Sos;

    fn coefs(b: [f64; 3], a: [f64; 3]) -> SosCoefs {
        SosCoefs::from(&Sos { b, a })
    }

    /// f64 TDF-II, the CPU cascade's arithmetic.
    fn tdf2(s: &SosCoefs, z: &mut [f64; 2], x: f64) -> f64 {
        let y = s.b0 * x + z[0];
        z[0] = s.b1 * x - s.a1 * y + z[1];
        z[1] = s.b2 * x - s.a2 * y;
        y
    }

    #[test]
    fn remembered_estimates_are_the_estimates_of_exactly_those_coefficients() {
        let a = [coefs([0.2, 0.4, 0.2], [1.0, -0.9, 0.3]), coefs([1.0, -1.99, 1.0], [1.0, -1.995, 0.99501])];
        let mut b = a;
        b[1].a2 = f64::from_bits(b[1].a2.to_bits() + 1); // one bit away: another cascade
        for (cascade, frames, limit) in [(&a[..], 4096, 64), (&a[..], 4096, 512), (&a[..], 512, 64), (&b[..], 4096, 64)] {
            let direct = f32_error_estimate(cascade, frames, limit);
            // Asked twice: the first computes and keeps it, the second finds it.
            for _ in 0..2 {
                assert_eq!(remembered_estimate(cascade, frames, limit, GpuPrecision::F32).to_bits(), direct.to_bits());
            }
        }
    }

    /// The decline rule: float32 where it meets the budget, float64 where the device has it
    /// and float32 would miss, a `Precision` error naming the precision otherwise.
    #[test]
    fn cascades_float32_would_miss_run_in_float64_or_are_declined_by_name() {
        use crate::chain::{Butterworth, Chebyshev1, DesignedStage};
        let sos = |chain: crate::chain::Chain, fs: f64| match chain.design(fs).unwrap().stages.remove(0) {
            DesignedStage::Sos(v) => v,
            DesignedStage::Fir(_) => unreachable!(),
        };
        let easy = sos(Butterworth::lowpass(1000.0, 4).into(), 48_000.0);
        let hard = sos(Chebyshev1::bandstop(715.08, 2461.27, 12, 1.12).into(), 48_000.0);
        for float64 in [false, true] {
            assert_eq!(realize_cascade(&easy, 0, 4096, 64, float64).unwrap().1, GpuPrecision::F32);
        }
        let e = realize_cascade(&hard, 3, 4096, 64, false).unwrap_err();
        assert!(matches!(e, crate::gpu::GpuError::Precision { stage: 3, float_bits: 32, estimate } if estimate > GPU_ERROR_BUDGET), "{e}");
        let (forms, precision) = realize_cascade(&hard, 3, 4096, 64, true).unwrap();
        assert_eq!((forms.len(), precision), (hard.len(), GpuPrecision::F64));
        // Not a number: float64 declines too (a NaN estimate declines) and says so.
        let broken = [crate::design::Sos { b: [1.0, 0.0, 0.0], a: [1.0, f64::NAN, 0.5] }];
        let e = realize_cascade(&broken, 0, 4096, 64, true).unwrap_err();
        assert!(matches!(e, crate::gpu::GpuError::Precision { float_bits: 64, .. }), "{e}");
        assert!(e.to_string().contains("in float64"), "{e}");
    }

    #[test]
    fn realisation_matches_tdf2_and_states_convert_both_ways() {
        let sections = [
            coefs([0.2, 0.4, 0.2], [1.0, -0.3, 0.2]),      // complex poles
            coefs([1.0, -2.0, 1.0], [1.0, -1.9, 0.9025]),  // double real pole 0.95
            coefs([0.5, 0.1, 0.0], [1.0, -0.5, 0.0]),      // first order
            coefs([1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),       // identity
            coefs([1.0, -0.5, 0.0], [1.0, -0.5, 0.0]),     // cancelling pole and zero
            coefs([0.3, -0.2, 0.1], [1.0, -0.1, -0.56]),   // real poles of both signs
        ];
        for s in &sections {
            let r = Realization::new(s);
            let mut z = [0.3, -0.7];
            let mut alt = crate::gpu::realize::apply(&r.to_alt, z);
            let back = r.state_from_gpu([alt[0] as f32, alt[1] as f32]);
            assert!((back[0] - z[0]).abs() < 1e-6 && (back[1] - z[1]).abs() < 1e-6, "{s:?}: {back:?} vs {z:?}");
            let a = r.a();
            for n in 0..50 {
                let x = ((n * 7919) % 13) as f64 / 6.0 - 1.0;
                let want = tdf2(s, &mut z, x);
                let got = r.c[0] * alt[0] + r.c[1] * alt[1] + r.d * x;
                let next = apply(&a, alt);
                alt = [next[0] + r.b[0] * x, next[1] + r.b[1] * x];
                assert!((got - want).abs() < 1e-12, "{s:?} sample {n}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn scan_equals_sequential_in_the_model() {
        let s = coefs([0.01, 0.02, 0.01], [1.0, -1.96, 0.9608]);
        let r = Realization::new(&s);
        let sec = r.to_gpu();
        let x: Vec<f32> = (0..5000).map(|n| (((n * 48271) % 2147) as f32 / 1073.5) - 1.0).collect();
        let mut seq = x.clone();
        let mut st = [0.25f32, -0.5];
        let mut st_seq = st;
        model_section(&sec, &r.scan_table(5000), &mut seq, &mut st_seq, 5000);
        let (chunks, chunk_len) = chunking(x.len(), 64);
        assert!(chunks > 1);
        let mut par = x.clone();
        model_section(&sec, &r.scan_table(chunk_len), &mut par, &mut st, chunk_len);
        let peak = seq.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let err = seq.iter().zip(&par).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(err / peak < 1e-5, "scan vs sequential: {err} / {peak}");
        assert!((st[0] - st_seq[0]).abs() < 1e-4 * peak && (st[1] - st_seq[1]).abs() < 1e-4 * peak);
    }
}
