//! The AVX2 kernels: the 4-lane channel wavefront, the 4x4 in-register transpose (AVX),
//! and the entry point.

use super::kernel::{active_lanes, lane_coefficients, masked_iteration, process_all, transpose_io, wavefront, Wave};
use super::SosCoefs;
use crate::dsp::simd::Fused;

/// Most vectors of section lanes [`section_lanes_multi_avx2`] runs side by side (2, 3
/// and 4 measured on an AVX-512 Xeon running its AVX2 kernels: 3 fastest at 64 and 4,096
/// frames; not measured on an AVX2-only CPU).
pub(super) const LANE_VECTORS: usize = 3;

/// One or two channels with AVX2: the sections in the lanes of up to `V` 4-lane vectors
/// side by side, time-skewed, filling and draining with the idle lanes masked; the
/// AVX2 twin of `avx512::section_lanes_multi_avx512` (see there). A vector's input is
/// its lanes shifted up by `C` with the previous vector's last `C` lanes (or the input)
/// shifted in: one cross-half permute for two channels, a permute and an in-half shuffle
/// for one. Same five operations per section in the same order as every other kernel.
#[target_feature(enable = "avx2,fma")]
pub(super) fn section_lanes_multi_avx2<const C: usize, const V: usize>(
    c: &[SosCoefs],
    s1: &mut [[f64; 4]; V],
    s2: &mut [[f64; 4]; V],
    data: &mut [[f64; C]],
) {
    use std::arch::x86_64::*;
    let skew: usize = if V == 1 { 2 } else { 1 };
    let sections = c.len();
    let n = data.len();
    assert!(C <= 2 && sections >= 1 && sections * C <= 4 * V && sections * C > 4 * (V - 1), "lanes and vectors");
    if n == 0 {
        return;
    }
    let fill = skew * (sections - 1);
    let coef = lane_coefficients::<C, 4, V>(c);
    let last_lane = (sections - 1) * C - 4 * (V - 1);
    let active = |t: usize| active_lanes::<C>(t, n, skew, sections);
    // Blend masks by 4-bit lane pattern.
    let mut patterns = [[0i64; 4]; 16];
    for (p, m) in patterns.iter_mut().enumerate() {
        for (l, v) in m.iter_mut().enumerate() {
            *v = if p >> l & 1 == 1 { -1 } else { 0 };
        }
    }
    // SAFETY: vector loads and stores use `[f64; 4]` / `[i64; 4]` arrays, or exactly the
    // `C` values of frame `t < n` (input) and of frame `t - fill < n` (output); `data`
    // holds `n` frames of `C` values. The target features are enabled on this function,
    // called only after detection.
    unsafe {
        let load = |a: &[f64; 4]| _mm256_loadu_pd(a.as_ptr());
        let b0: [__m256d; V] = std::array::from_fn(|j| load(&coef[j][0]));
        let b1: [__m256d; V] = std::array::from_fn(|j| load(&coef[j][1]));
        let b2: [__m256d; V] = std::array::from_fn(|j| load(&coef[j][2]));
        let a1: [__m256d; V] = std::array::from_fn(|j| load(&coef[j][3]));
        let a2: [__m256d; V] = std::array::from_fn(|j| load(&coef[j][4]));
        let mut sv1: [__m256d; V] = std::array::from_fn(|j| load(&s1[j]));
        let mut sv2: [__m256d; V] = std::array::from_fn(|j| load(&s2[j]));
        let mut y1 = [_mm256_setzero_pd(); V];
        let mut y2 = [_mm256_setzero_pd(); V];
        let base = data.as_mut_ptr().cast::<f64>();
        macro_rules! iteration {
            ($t:expr, $keep:ident $(, $mask:expr)?) => {{
                let t: usize = $t;
                // The input in the high lanes (where the shift takes a previous vector's).
                let x = if t >= n {
                    _mm256_setzero_pd()
                } else if C == 1 {
                    _mm256_set1_pd(*base.add(t))
                } else {
                    let x = _mm_loadu_pd(base.add(t * C));
                    _mm256_set_m128d(x, x)
                };
                let mut y = [_mm256_setzero_pd(); V];
                for j in 0..V {
                    let prev = if skew == 1 { &y1 } else { &y2 };
                    let below = if j == 0 { x } else { prev[j - 1] };
                    // [below's high half, own low half]; one channel: shifted by one lane.
                    let half = _mm256_permute2f128_pd::<0x21>(below, prev[j]);
                    let v = if C == 1 { _mm256_shuffle_pd::<0b0101>(half, prev[j]) } else { half };
                    let p1 = _mm256_fmadd_pd(b1[j], v, sv2[j]);
                    let p2 = _mm256_mul_pd(b2[j], v);
                    let yj = _mm256_fmadd_pd(b0[j], v, sv1[j]);
                    let n1 = _mm256_fnmadd_pd(a1[j], yj, p1);
                    let n2 = _mm256_fnmadd_pd(a2[j], yj, p2);
                    iteration!(@$keep j, n1, n2 $(, $mask)?);
                    y[j] = yj;
                }
                if t >= fill {
                    let last = y[V - 1];
                    if C == 1 {
                        let out = match last_lane {
                            0 => last,
                            1 => _mm256_permute4x64_pd::<1>(last),
                            2 => _mm256_permute4x64_pd::<2>(last),
                            _ => _mm256_permute4x64_pd::<3>(last),
                        };
                        _mm_store_sd(base.add(t - fill), _mm256_castpd256_pd128(out));
                    } else {
                        let out = if last_lane == 0 { _mm256_castpd256_pd128(last) } else { _mm256_extractf128_pd::<1>(last) };
                        _mm_storeu_pd(base.add((t - fill) * C), out);
                    }
                }
                y2 = y1;
                y1 = y;
            }};
            (@all $j:ident, $n1:ident, $n2:ident) => {{
                sv1[$j] = $n1;
                sv2[$j] = $n2;
            }};
            (@masked $j:ident, $n1:ident, $n2:ident, $mask:expr) => {{
                let keep = _mm256_loadu_pd(patterns[(($mask >> (4 * $j)) & 15) as usize].as_ptr().cast::<f64>());
                sv1[$j] = _mm256_blendv_pd(sv1[$j], $n1, keep);
                sv2[$j] = _mm256_blendv_pd(sv2[$j], $n2, keep);
            }};
        }
        for t in 0..fill {
            let m = active(t);
            iteration!(t, masked, m);
        }
        for t in fill..n {
            iteration!(t, all);
        }
        for t in n.max(fill)..n + fill {
            let m = active(t);
            iteration!(t, masked, m);
        }
        for j in 0..V {
            _mm256_storeu_pd(s1[j].as_mut_ptr(), sv1[j]);
            _mm256_storeu_pd(s2[j].as_mut_ptr(), sv2[j]);
        }
    }
}

wavefront!(wavefront_avx2, 4, __m256d, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_fnmadd_pd, _mm256_mul_pd, _mm256_setzero_pd, "avx2,fma");

/// 4 channels x 4 frames with AVX (the 4-lane groups): 4 conversions and 8 shuffles
/// per tile.
pub(super) mod transpose {
    use super::transpose_io;
    use std::arch::x86_64::*;

    /// Rows in, columns out (its own inverse).
    #[inline(always)]
    unsafe fn transpose(r: [__m256d; 4]) -> [__m256d; 4] {
        // SAFETY: register-only intrinsics; the caller enables AVX.
        unsafe {
            let t0 = _mm256_unpacklo_pd(r[0], r[1]);
            let t1 = _mm256_unpackhi_pd(r[0], r[1]);
            let t2 = _mm256_unpacklo_pd(r[2], r[3]);
            let t3 = _mm256_unpackhi_pd(r[2], r[3]);
            [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ]
        }
    }

    /// [`crate::dsp::sanitize_sample`] on 4 samples: zero where `|v|` is not in
    /// `[MIN_POSITIVE, MAX]` (ordered compares: NaN fails both).
    #[inline(always)]
    unsafe fn clean(v: __m128) -> __m128 {
        // SAFETY: register-only intrinsics; the caller enables AVX (VEX compares).
        unsafe {
            let a = _mm_andnot_ps(_mm_set1_ps(-0.0), v);
            let lo = _mm_cmp_ps::<_CMP_GE_OQ>(a, _mm_set1_ps(f32::MIN_POSITIVE));
            let hi = _mm_cmp_ps::<_CMP_LE_OQ>(a, _mm_set1_ps(f32::MAX));
            _mm_and_ps(v, _mm_and_ps(lo, hi))
        }
    }

    transpose_io!(4, "avx", __m256d, _mm256_setzero_pd, _mm_loadu_ps, _mm_storeu_ps, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_cvtps_pd, _mm256_cvtpd_ps, clean);
}

#[target_feature(enable = "avx2,fma")]
pub(super) fn process_avx2(
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
    clean: bool,
) {
    process_all::<4, 4, Fused>(Wave::Avx2, coefs, state, scratch, buffers, start, end, clean)
}
