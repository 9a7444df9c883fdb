//! The output stage of a block in one pass per channel: the output gain, the flush of
//! subnormal results, the non-finite flag and the output meter's sums, and, when nothing
//! reads the signal before it, the input's sanitising too
//! ([`ferrofx::engine::sanitize_input`]'s rule). One pass reads and writes each sample
//! once where three or four passes did (an idle stereo 64-frame block spent a fair part
//! of its time in those loops).
//!
//! The meter's sums are the ones [`meter`] records of the
//! same samples, bit for bit ([`measure`] is that meter's pass): sixteen float32 lanes,
//! summed in float64 per [`METER_PART`] samples. On x86-64 the lanes are four SSE2
//! vectors (the baseline every x86-64 build has; the compiler's own vectorisation of
//! the meter reshuffled its lanes and cost more on short blocks, measured), elsewhere a
//! portable loop of the same sixteen lanes.
//!
//! No allocation, lock or panic: the audio thread runs all of it.

use crate::shared::telemetry::ChannelMeter;

/// What the pass does to each sample before measuring it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// Replace NaN, infinities and subnormals by zero first (the input's sanitising).
    pub sanitize: bool,
    /// Then multiply by this gain, flushing subnormal results to zero.
    pub gain: f32,
}

/// What one pass found in the samples it wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    /// The largest magnitude (a NaN sample leaves it to the others, as `f32::max` does).
    pub peak: f32,
    /// The sum of squares (the meter's float32 lanes, summed in float64 per part).
    pub sum_squares: f64,
    /// Some result is NaN or infinite.
    pub non_finite: bool,
}

/// Samples per float32 partial sum of the meter (then added in float64): a relative
/// error under 1e-5 of the level, for a display.
pub const METER_PART: usize = 4096;

/// Applies `stage` to `samples` in place and measures the results, in one pass.
pub fn apply_and_measure(samples: &mut [f32], stage: Stage) -> Measured {
    let mut total = Measured::default();
    for part in samples.chunks_mut(METER_PART) {
        let len = part.len();
        let ptr = part.as_mut_ptr();
        // SAFETY: `ptr` and `len` are `part`'s, which this loop holds mutably.
        let m = unsafe {
            if stage.sanitize {
                lanes::<true, true>(ptr, len, stage.gain)
            } else {
                lanes::<true, false>(ptr, len, stage.gain)
            }
        };
        total.add(m);
    }
    total
}

/// The peak and sum of squares of `samples` (the meter's pass; nothing is written).
pub fn measure(samples: &[f32]) -> Measured {
    let mut total = Measured::default();
    for part in samples.chunks(METER_PART) {
        // SAFETY: with `WRITE = false` the kernel only reads `part.len()` floats at
        // `part.as_ptr()` (the cast to `*mut` is never written through).
        total.add(unsafe { lanes::<false, false>(part.as_ptr().cast_mut(), part.len(), 1.0) });
    }
    total
}

/// Measures `samples` into `meter` (the meter's own pass); returns their peak.
pub fn meter(meter: &ChannelMeter, samples: &[f32]) -> f32 {
    let m = measure(samples);
    meter.record(m.peak, m.sum_squares, samples.len())
}

impl Measured {
    fn add(&mut self, part: (f32, f32, bool)) {
        let (peak, sum, bad) = part;
        self.peak = if peak > self.peak { peak } else { self.peak };
        self.sum_squares += f64::from(sum);
        self.non_finite |= bad;
    }
}

/// The rule for one sample: sanitise (when asked), scale, flush a subnormal result.
#[inline(always)]
fn stage_one<const SANITIZE: bool>(x: f32, gain: f32) -> f32 {
    // `abs() >= MIN_POSITIVE` is false for NaN, zero and subnormals.
    let x = if !SANITIZE || (x.abs() >= f32::MIN_POSITIVE && x.abs() <= f32::MAX) { x } else { 0.0 };
    let y = x * gain;
    if y.abs() < f32::MIN_POSITIVE {
        0.0
    } else {
        y
    }
}

/// One part (at most [`METER_PART`] samples) in sixteen lanes: four SSE2 vectors, the
/// samples past the last whole sixteen in the lanes `k % 4`. With `WRITE`, each sample
/// goes through [`stage_one`] and is stored; without, it is only measured. Returns
/// `(peak, float32 sum of squares, any result non-finite)`.
///
/// # Safety
/// `ptr` must point to `len` readable floats, writable too with `WRITE`.
#[cfg(target_arch = "x86_64")]
unsafe fn lanes<const WRITE: bool, const SANITIZE: bool>(ptr: *mut f32, len: usize, gain: f32) -> (f32, f32, bool) {
    use std::arch::x86_64::*;
    let whole = len / 16;
    // SAFETY: SSE2 is part of the x86-64 baseline; every load and store touches four
    // floats at offsets 0, 4, 8 and 12 of a whole 16-float chunk below `len`, and the
    // stores happen only with `WRITE` (the caller's contract).
    let (mut peaks, mut sums, mut bad) = unsafe {
        let abs = _mm_castsi128_ps(_mm_set1_epi32(0x7fff_ffff));
        let (tiny, huge, g) = (_mm_set1_ps(f32::MIN_POSITIVE), _mm_set1_ps(f32::MAX), _mm_set1_ps(gain));
        let mut p = [_mm_setzero_ps(); 4];
        let mut q = [_mm_setzero_ps(); 4];
        let mut b = _mm_setzero_ps();
        for c in 0..whole {
            for (j, (p, q)) in p.iter_mut().zip(q.iter_mut()).enumerate() {
                let at = ptr.add(16 * c + 4 * j);
                let mut y = _mm_loadu_ps(at);
                if WRITE {
                    if SANITIZE {
                        let a = _mm_and_ps(y, abs);
                        y = _mm_and_ps(y, _mm_and_ps(_mm_cmpge_ps(a, tiny), _mm_cmple_ps(a, huge)));
                    }
                    y = _mm_mul_ps(y, g);
                    y = _mm_andnot_ps(_mm_cmplt_ps(_mm_and_ps(y, abs), tiny), y);
                    // Not (|y| <= MAX): infinite or NaN.
                    b = _mm_or_ps(b, _mm_cmpnle_ps(_mm_and_ps(y, abs), huge));
                    _mm_storeu_ps(at, y);
                }
                // maxps returns its second operand when either is NaN: the lane's peak.
                *p = _mm_max_ps(_mm_and_ps(y, abs), *p);
                *q = _mm_add_ps(*q, _mm_mul_ps(y, y));
            }
        }
        let (mut pa, mut qa) = ([0.0f32; 4], [0.0f32; 4]);
        _mm_storeu_ps(pa.as_mut_ptr(), _mm_max_ps(_mm_max_ps(p[0], p[1]), _mm_max_ps(p[2], p[3])));
        _mm_storeu_ps(qa.as_mut_ptr(), _mm_add_ps(_mm_add_ps(q[0], q[1]), _mm_add_ps(q[2], q[3])));
        (pa, qa, _mm_movemask_ps(b) != 0)
    };
    for k in 0..len - 16 * whole {
        // SAFETY: index below `len` (the caller's contract).
        let at = unsafe { ptr.add(16 * whole + k) };
        // SAFETY: as above; written only with `WRITE`.
        let y = unsafe {
            if WRITE {
                let y = stage_one::<SANITIZE>(*at, gain);
                *at = y;
                y
            } else {
                *at
            }
        };
        bad |= WRITE && !y.is_finite();
        let a = y.abs();
        peaks[k % 4] = if a > peaks[k % 4] { a } else { peaks[k % 4] };
        sums[k % 4] += y * y;
    }
    let peak = peaks.iter().fold(0.0f32, |m, &p| if p > m { p } else { m });
    (peak, (sums[0] + sums[1]) + (sums[2] + sums[3]), bad)
}

#[cfg(not(target_arch = "x86_64"))]
use lanes_portable as lanes;

/// [`lanes`] without explicit vectors: sixteen lanes, the samples past the last whole
/// sixteen in the lanes `k` (the pass off x86-64; compiled for the tests everywhere,
/// which hold the two to each other).
///
/// # Safety
/// As [`lanes`].
#[cfg(any(test, not(target_arch = "x86_64")))]
unsafe fn lanes_portable<const WRITE: bool, const SANITIZE: bool>(ptr: *mut f32, len: usize, gain: f32) -> (f32, f32, bool) {
    const LANES: usize = 16;
    let (mut peaks, mut sums, mut bad) = ([0.0f32; LANES], [0.0f32; LANES], false);
    for i in 0..len {
        let k = i % LANES;
        // SAFETY: index below `len` (the caller's contract); written only with `WRITE`.
        let y = unsafe {
            let at = ptr.add(i);
            if WRITE {
                let y = stage_one::<SANITIZE>(*at, gain);
                *at = y;
                y
            } else {
                *at
            }
        };
        bad |= WRITE && !y.is_finite();
        let a = y.abs();
        peaks[k] = if a > peaks[k] { a } else { peaks[k] };
        sums[k] += y * y;
    }
    (peaks.iter().fold(0.0f32, |m, &p| if p > m { p } else { m }), sums.iter().sum(), bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded samples with NaN, infinities, subnormals, the largest float and signed
    /// zeros among ordinary values.
    fn samples(len: usize, seed: &mut u32, specials_every: u32) -> Vec<f32> {
        let specials = [f32::NAN, f32::INFINITY, -f32::INFINITY, 1e-39, -1e-40, f32::MAX, 0.0, -0.0, -f32::MAX];
        (0..len)
            .map(|i| {
                *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                if specials_every > 0 && seed.is_multiple_of(specials_every) {
                    specials[i % specials.len()]
                } else {
                    (*seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
                }
            })
            .collect()
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// The pass writes what the separate rules would (sanitise as the engine does, scale,
    /// flush subnormals), flags exactly the non-finite results, and measures exactly what
    /// the meter's own pass measures of its output: for every length across the parts,
    /// gains that overflow and underflow, with and without sanitising.
    #[test]
    fn one_pass_equals_the_separate_passes() {
        let mut seed = 11u32;
        for len in (0..70usize).chain([255, 4095, 4096, 4097, 9000]) {
            for gain in [1.0f32, 0.5, 3.0, 1e-30, 1e30] {
                for sanitize in [false, true] {
                    let x = samples(len, &mut seed, 7);
                    let mut got = x.clone();
                    let m = apply_and_measure(&mut got, Stage { sanitize, gain });
                    let mut want = x.clone();
                    if sanitize {
                        ferrofx::engine::sanitize_input(&mut want);
                    }
                    let mut want_bad = false;
                    for v in want.iter_mut() {
                        let y = *v * gain;
                        want_bad |= !y.is_finite();
                        *v = if y.abs() < f32::MIN_POSITIVE { 0.0 } else { y };
                    }
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(same(*g, *w), "len {len}, gain {gain}, sanitize {sanitize}, sample {i}: {g} vs {w}");
                    }
                    assert_eq!(m.non_finite, want_bad, "len {len}, gain {gain}, sanitize {sanitize}");
                    let meter = measure(&want);
                    assert!(same(m.peak, meter.peak), "len {len}, gain {gain}: peak {} vs {}", m.peak, meter.peak);
                    let (a, b) = (m.sum_squares, meter.sum_squares);
                    assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "len {len}, gain {gain}: sum {a} vs {b}");
                    assert!(!meter.non_finite, "the meter's pass flags nothing");
                }
            }
        }
    }

    /// Sanitising then scaling by one writes exactly what the engine's sanitising writes
    /// (a finite input passes untouched but for subnormals).
    #[test]
    fn sanitising_alone_is_the_engines_rule() {
        let mut seed = 5u32;
        for len in [0usize, 1, 15, 16, 17, 64, 100] {
            let x = samples(len, &mut seed, 3);
            let mut got = x.clone();
            let m = apply_and_measure(&mut got, Stage { sanitize: true, gain: 1.0 });
            let mut want = x;
            ferrofx::engine::sanitize_input(&mut want);
            assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "len {len}");
            assert!(!m.non_finite, "len {len}: nothing non-finite survives sanitising at gain 1");
        }
    }

    /// The vector lanes and the portable ones agree: the same output and flag, the same
    /// peak, the same sum of squares up to float32 rounding of the lanes' order.
    #[test]
    fn both_lane_kernels_agree() {
        let mut seed = 3u32;
        for len in (0..70usize).chain([255, 256, 4096]) {
            for (gain, sanitize, specials) in [(1.0f32, false, 0u32), (0.7, true, 5), (2.0, false, 11)] {
                let x = samples(len, &mut seed, specials);
                let (mut a, mut b) = (x.clone(), x.clone());
                // SAFETY: each call gets its own vector's pointer and length.
                let (ra, rb) = unsafe {
                    if sanitize {
                        (lanes::<true, true>(a.as_mut_ptr(), len, gain), lanes_portable::<true, true>(b.as_mut_ptr(), len, gain))
                    } else {
                        (lanes::<true, false>(a.as_mut_ptr(), len, gain), lanes_portable::<true, false>(b.as_mut_ptr(), len, gain))
                    }
                };
                assert!(a.iter().zip(&b).all(|(p, q)| same(*p, *q)), "len {len}: outputs differ");
                assert_eq!(ra.2, rb.2, "len {len}: non-finite flags differ");
                assert!(same(ra.0, rb.0), "len {len}: peaks {} vs {}", ra.0, rb.0);
                if ra.1.is_nan() || rb.1.is_nan() || ra.1.is_infinite() || rb.1.is_infinite() {
                    assert!(same(ra.1, rb.1), "len {len}: sums {} vs {}", ra.1, rb.1);
                } else {
                    assert!((ra.1 - rb.1).abs() <= 1e-6 * rb.1.max(1e-30), "len {len}: sums {} vs {}", ra.1, rb.1);
                }
            }
        }
    }
}

#[cfg(test)]
mod meter_tests {
    use super::meter;
    use crate::shared::telemetry::ChannelMeter;

    /// The lane-wise meter gives the block's peak exactly and its sum of squares within
    /// 1e-5 (float32 partial sums, a display's precision), for every length, across the
    /// 4096-sample parts too.
    #[test]
    fn meter_sums_equal_a_sequential_sum() {
        for len in (0..50usize).chain([4095, 4096, 4097, 10_000]) {
            let x: Vec<f32> = (0..len).map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0).collect();
            let m = ChannelMeter::default();
            let peak = meter(&m, &x);
            let want_peak = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let want_sum: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            assert_eq!(peak, want_peak, "len {len}");
            let (sum, frames) = m.sums();
            assert!((sum - want_sum).abs() <= 1e-5 * want_sum.max(1e-30), "len {len}: {sum} vs {want_sum}");
            assert_eq!(frames, len as u64);
        }
    }

    /// A NaN sample leaves the peak to the other samples (as `f32::max` does); the peak
    /// held is raised only by a larger one, and is back in force after the editor takes it.
    #[test]
    fn the_peak_ignores_nan_and_only_rises_until_taken() {
        let m = ChannelMeter::default();
        for lane in 0..20 {
            let mut x = vec![0.25f32; 40];
            x[lane] = f32::NAN;
            x[39 - lane] = -0.5;
            assert_eq!(meter(&m, &x), 0.5, "NaN in lane {lane}");
        }
        assert_eq!(meter(&m, &[0.1, -0.2]), 0.2);
        assert_eq!(m.take_peak(), 0.5, "the held peak is the largest block's");
        assert_eq!(meter(&m, &[0.1, -0.2]), 0.2);
        assert_eq!(m.take_peak(), 0.2, "after a take, a smaller block's peak is held");
        assert_eq!(m.take_peak(), 0.0);
        assert_eq!(m.sums().1, 20 * 40 + 4);
    }
}
