//! The AVX-512 kernels: one or two channels with the sections in the vector's lanes,
//! the 8-lane channel wavefront, the 8x8 in-register transpose, and the entry point.

use super::kernel::{masked_iteration, process_all, transpose_io, wavefront, Wave};
use super::SosCoefs;
use crate::dsp::simd::Fused;


/// One or two channels with AVX-512: the sections go in the vector's lanes instead
/// (lane `k * C + ch` is section `k` of channel `ch`), time-skewed by two frames per
/// section: in iteration `t`, section `k` works on frame `t - 2k`, so its input is
/// the previous section's output of *two* iterations ago (a lane permute of a saved
/// vector) and the permute is off the loop's critical path, which is then only each
/// section's own recurrence (`y -> s1 -> y`, two FMA latencies); with a skew of one
/// the permute and blend sat on it (measured 1.4x slower). `N` sections cost one
/// vector update per frame; the arithmetic is the same five operations in the same
/// order as every other kernel, so the results are bit-identical. `C * N <= 8`.
#[target_feature(enable = "avx512f,avx512vl,fma")]
pub(super) fn section_lanes_avx512<const C: usize, const N: usize>(
    c: &[SosCoefs; N],
    s1: &mut [[f64; C]; N],
    s2: &mut [[f64; C]; N],
    data: &mut [[f64; C]],
) {
    use std::arch::x86_64::*;
    const S: usize = 2;
    let n = data.len();
    let fill = S * (N - 1);
    if n < fill + 2 || C * N > 8 || C > 2 {
        for t in 0..n + fill {
            masked_iteration::<C, N, S, Fused>(c, s1, s2, data, t);
        }
        return;
    }
    for t in 0..fill {
        masked_iteration::<C, N, S, Fused>(c, s1, s2, data, t);
    }
    let mut coef = [[0.0f64; 8]; 5];
    let (mut s1a, mut s2a) = ([0.0f64; 8], [0.0f64; 8]);
    // The outputs of the two iterations before `fill`: section k's lane holds frame
    // `fill - 1 - 2k` (`y1`) and `fill - 2 - 2k` (`y2`), in place in `data` after the
    // prologue. The last section's outputs are never fed forward: left zero.
    let (mut y1a, mut y2a) = ([0.0f64; 8], [0.0f64; 8]);
    for k in 0..N {
        for ch in 0..C {
            let l = k * C + ch;
            let ck = &c[k];
            coef[0][l] = ck.b0;
            coef[1][l] = ck.b1;
            coef[2][l] = ck.b2;
            coef[3][l] = ck.a1;
            coef[4][l] = ck.a2;
            s1a[l] = s1[k][ch];
            s2a[l] = s2[k][ch];
            if k + 1 < N {
                y1a[l] = data[fill - 1 - S * k][ch];
                y2a[l] = data[fill - 2 - S * k][ch];
            }
        }
    }
    let mut shift = [0i64; 8];
    for (l, v) in shift.iter_mut().enumerate() {
        *v = l.saturating_sub(C) as i64;
    }
    let in_mask: __mmask8 = ((1u32 << C) - 1) as __mmask8;
    // SAFETY: loads and stores use `[f64; 8]` arrays, or exactly the `C` values of
    // frame `t` (input, masked load of the first `C` lanes) and of frame
    // `t - fill` (output: the last section's lanes moved to the first `C` by a
    // permute, then a 64- or 128-bit store; `C` is 1 or 2, see `wave_chunk`). The target features are enabled
    // on this function, called only after detection.
    unsafe {
        let b0 = _mm512_loadu_pd(coef[0].as_ptr());
        let b1 = _mm512_loadu_pd(coef[1].as_ptr());
        let b2 = _mm512_loadu_pd(coef[2].as_ptr());
        let a1 = _mm512_loadu_pd(coef[3].as_ptr());
        let a2 = _mm512_loadu_pd(coef[4].as_ptr());
        let idx = _mm512_loadu_epi64(shift.as_ptr());
        let last = _mm512_set1_epi64(((N - 1) * C) as i64);
        let last = _mm512_add_epi64(last, _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
        let mut sv1 = _mm512_loadu_pd(s1a.as_ptr());
        let mut sv2 = _mm512_loadu_pd(s2a.as_ptr());
        let mut y1 = _mm512_loadu_pd(y1a.as_ptr());
        let mut y2 = _mm512_loadu_pd(y2a.as_ptr());
        let base = data.as_mut_ptr().cast::<f64>();
        for t in fill..n {
            let x = _mm512_maskz_loadu_pd(in_mask, base.add(t * C));
            let v = _mm512_mask_mov_pd(_mm512_permutexvar_pd(idx, y2), in_mask, x);
            let p1 = _mm512_fmadd_pd(b1, v, sv2);
            let p2 = _mm512_mul_pd(b2, v);
            let y = _mm512_fmadd_pd(b0, v, sv1);
            sv1 = _mm512_fnmadd_pd(a1, y, p1);
            sv2 = _mm512_fnmadd_pd(a2, y, p2);
            // Exactly `C` values: a masked 512-bit store would span the next
            // frames' input and hold their loads back.
            let out = _mm512_castpd512_pd128(_mm512_permutexvar_pd(last, y));
            if C == 1 {
                _mm_store_sd(base.add(t - fill), out);
            } else {
                _mm_storeu_pd(base.add((t - fill) * C), out);
            }
            y2 = y1;
            y1 = y;
        }
        _mm512_storeu_pd(y1a.as_mut_ptr(), y1);
        _mm512_storeu_pd(y2a.as_mut_ptr(), y2);
        _mm512_storeu_pd(s1a.as_mut_ptr(), sv1);
        _mm512_storeu_pd(s2a.as_mut_ptr(), sv2);
    }
    for k in 0..N {
        for ch in 0..C {
            let l = k * C + ch;
            s1[k][ch] = s1a[l];
            s2[k][ch] = s2a[l];
            // Frames still in flight go back in place for the draining iterations:
            // section k's last two outputs are frames n-1-2k and n-2-2k.
            if k + 1 < N {
                data[n - 1 - S * k][ch] = y1a[l];
                data[n - 2 - S * k][ch] = y2a[l];
            }
        }
    }
    for t in n..n + fill {
        masked_iteration::<C, N, S, Fused>(c, s1, s2, data, t);
    }
}

wavefront!(wavefront_avx512, 8, __m512d, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_fnmadd_pd, _mm512_mul_pd, _mm512_setzero_pd, "avx512f,avx512vl,fma");

/// 8 channels x 8 frames with AVX-512: 8 conversions and 24 shuffles per tile
/// (unpack, two-source permute, 128-bit lane shuffle).
pub(super) mod transpose {
    use super::transpose_io;
    use std::arch::x86_64::*;

    /// Rows in, columns out (its own inverse).
    #[inline(always)]
    unsafe fn transpose(r: [__m512d; 8]) -> [__m512d; 8] {
        // SAFETY: register-only intrinsics; the caller enables AVX-512F.
        unsafe {
            let a = [
                _mm512_unpacklo_pd(r[0], r[1]),
                _mm512_unpackhi_pd(r[0], r[1]),
                _mm512_unpacklo_pd(r[2], r[3]),
                _mm512_unpackhi_pd(r[2], r[3]),
                _mm512_unpacklo_pd(r[4], r[5]),
                _mm512_unpackhi_pd(r[4], r[5]),
                _mm512_unpacklo_pd(r[6], r[7]),
                _mm512_unpackhi_pd(r[6], r[7]),
            ];
            let lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
            let hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
            let b = [
                _mm512_permutex2var_pd(a[0], lo, a[2]),
                _mm512_permutex2var_pd(a[1], lo, a[3]),
                _mm512_permutex2var_pd(a[0], hi, a[2]),
                _mm512_permutex2var_pd(a[1], hi, a[3]),
                _mm512_permutex2var_pd(a[4], lo, a[6]),
                _mm512_permutex2var_pd(a[5], lo, a[7]),
                _mm512_permutex2var_pd(a[4], hi, a[6]),
                _mm512_permutex2var_pd(a[5], hi, a[7]),
            ];
            [
                _mm512_shuffle_f64x2::<0b01_00_01_00>(b[0], b[4]),
                _mm512_shuffle_f64x2::<0b01_00_01_00>(b[1], b[5]),
                _mm512_shuffle_f64x2::<0b01_00_01_00>(b[2], b[6]),
                _mm512_shuffle_f64x2::<0b01_00_01_00>(b[3], b[7]),
                _mm512_shuffle_f64x2::<0b11_10_11_10>(b[0], b[4]),
                _mm512_shuffle_f64x2::<0b11_10_11_10>(b[1], b[5]),
                _mm512_shuffle_f64x2::<0b11_10_11_10>(b[2], b[6]),
                _mm512_shuffle_f64x2::<0b11_10_11_10>(b[3], b[7]),
            ]
        }
    }

    transpose_io!(8, "avx512f,avx512vl", __m512d, _mm512_setzero_pd, _mm256_loadu_ps, _mm256_storeu_ps, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_cvtps_pd, _mm512_cvtpd_ps);
}

#[target_feature(enable = "avx512f,avx512vl,fma")]
pub(super) fn process_avx512(
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
) {
    process_all::<8, 8, Fused>(Wave::Avx512, coefs, state, scratch, buffers, start, end)
}
