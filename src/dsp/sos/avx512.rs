//! The AVX-512 kernels: one or two channels with the sections in the vector's lanes,
//! the 8-lane channel wavefront, the 8x8 in-register transpose, and the entry point.

use super::kernel::{active_lanes, lane_coefficients, masked_iteration, process_all, transpose_io, wavefront, Wave};
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

/// Most vectors of section lanes [`section_lanes_multi_avx512`] runs side by side: three
/// keep the FMA units busy while each vector waits on its own recurrence (measured with
/// `benchmarks/probes/examples/sos_probe.rs`, see docs/perf-history.md).
pub(super) const LANE_VECTORS: usize = 3;

/// One or two channels with AVX-512, the sections in the lanes of up to `V` vectors side
/// by side (lane `g = k * C + ch` of the chunk, vector `g / 8`, is section `k` of channel
/// `ch`), time-skewed by one frame per section (two with one vector, as in
/// [`section_lanes_avx512`]). A
/// vector's first lanes take the previous vector's last section's output through a
/// two-source permute, so the `V` vectors of one iteration are independent and their
/// recurrences overlap: one vector alone leaves the FMA units idle for most of each
/// section's two-FMA recurrence. The pipeline fills and drains in the same vector code,
/// with the lanes of sections that have no frame in an iteration masked off (their
/// state kept). The five operations per section are those of every other kernel, in the
/// same order: the results are bit-identical. `c.len() * C` lanes must need exactly `V`
/// vectors; `data` is the chunk's interleaved frames, filtered in place.
#[target_feature(enable = "avx512f,avx512vl,fma")]
pub(super) fn section_lanes_multi_avx512<const C: usize, const V: usize>(
    c: &[SosCoefs],
    s1: &mut [[f64; 8]; V],
    s2: &mut [[f64; 8]; V],
    data: &mut [[f64; C]],
) {
    use std::arch::x86_64::*;
    // Frames of skew per section: with one vector, two (the permute off the recurrence's
    // path, as in `section_lanes_avx512`); with more, the vectors' recurrences overlap
    // and a skew of one halves the frames spent filling and draining (measured faster).
    let skew: usize = if V == 1 { 2 } else { 1 };
    let sections = c.len();
    let n = data.len();
    assert!(C <= 2 && sections >= 1 && sections * C <= 8 * V && sections * C > 8 * (V - 1), "lanes and vectors");
    if n == 0 {
        return;
    }
    let fill = skew * (sections - 1);
    let coef = lane_coefficients::<C, 8, V>(c);
    // Lane `l` of the first vector takes lane `l - C` (lanes below `C`: the input); of
    // the others, lane `l - C` of the same vector or, below `C`, lane `8 - C + l` of the
    // previous one (indices from 8 select the permute's second source).
    let mut first = [0i64; 8];
    let mut next = [0i64; 8];
    for l in 0..8 {
        first[l] = l.saturating_sub(C) as i64;
        next[l] = if l < C { (8 - C + l) as i64 } else { (8 + l - C) as i64 };
    }
    let last_lane = ((sections - 1) * C - 8 * (V - 1)) as i64;
    // Lanes of the sections with a frame in iteration `t`.
    let active = |t: usize| active_lanes::<C>(t, n, skew, sections);
    let in_mask: __mmask8 = ((1u32 << C) - 1) as __mmask8;
    // SAFETY: vector loads and stores use `[f64; 8]` arrays, or exactly the `C` values
    // of frame `t < n` (input: masked load of the first `C` lanes) and of frame
    // `t - fill < n` (output: the last section's lanes permuted to the first `C`, then a
    // 64- or 128-bit store); `data` holds `n` frames of `C` values. The target features
    // are enabled on this function, called only after detection.
    unsafe {
        let load = |a: &[f64; 8]| _mm512_loadu_pd(a.as_ptr());
        let b0: [__m512d; V] = std::array::from_fn(|j| load(&coef[j][0]));
        let b1: [__m512d; V] = std::array::from_fn(|j| load(&coef[j][1]));
        let b2: [__m512d; V] = std::array::from_fn(|j| load(&coef[j][2]));
        let a1: [__m512d; V] = std::array::from_fn(|j| load(&coef[j][3]));
        let a2: [__m512d; V] = std::array::from_fn(|j| load(&coef[j][4]));
        let mut sv1: [__m512d; V] = std::array::from_fn(|j| load(&s1[j]));
        let mut sv2: [__m512d; V] = std::array::from_fn(|j| load(&s2[j]));
        let mut y1 = [_mm512_setzero_pd(); V];
        let mut y2 = [_mm512_setzero_pd(); V];
        let first = _mm512_loadu_epi64(first.as_ptr());
        let next = _mm512_loadu_epi64(next.as_ptr());
        let out_idx = _mm512_add_epi64(_mm512_set1_epi64(last_lane), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
        let base = data.as_mut_ptr().cast::<f64>();
        // One iteration; with a lane mask, the state of the lanes outside it is kept.
        macro_rules! iteration {
            ($t:expr, $keep:ident $(, $mask:expr)?) => {{
                let t: usize = $t;
                let x = if t < n { _mm512_maskz_loadu_pd(in_mask, base.add(t * C)) } else { _mm512_setzero_pd() };
                let mut y = [_mm512_setzero_pd(); V];
                for j in 0..V {
                    let prev = if skew == 1 { &y1 } else { &y2 };
                    let v = if j == 0 {
                        _mm512_mask_mov_pd(_mm512_permutexvar_pd(first, prev[0]), in_mask, x)
                    } else {
                        _mm512_permutex2var_pd(prev[j - 1], next, prev[j])
                    };
                    let p1 = _mm512_fmadd_pd(b1[j], v, sv2[j]);
                    let p2 = _mm512_mul_pd(b2[j], v);
                    let yj = _mm512_fmadd_pd(b0[j], v, sv1[j]);
                    let n1 = _mm512_fnmadd_pd(a1[j], yj, p1);
                    let n2 = _mm512_fnmadd_pd(a2[j], yj, p2);
                    iteration!(@$keep j, n1, n2 $(, $mask)?);
                    y[j] = yj;
                }
                if t >= fill {
                    let out = _mm512_castpd512_pd128(_mm512_permutexvar_pd(out_idx, y[V - 1]));
                    if C == 1 {
                        _mm_store_sd(base.add(t - fill), out);
                    } else {
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
                let k = ($mask >> (8 * $j)) as __mmask8;
                sv1[$j] = _mm512_mask_blend_pd(k, sv1[$j], $n1);
                sv2[$j] = _mm512_mask_blend_pd(k, sv2[$j], $n2);
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
            _mm512_storeu_pd(s1[j].as_mut_ptr(), sv1[j]);
            _mm512_storeu_pd(s2[j].as_mut_ptr(), sv2[j]);
        }
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

    /// [`crate::dsp::sanitize_sample`] on 8 samples: zero where `|v|` is not in
    /// `[MIN_POSITIVE, MAX]` (ordered compares: NaN fails both).
    #[inline(always)]
    unsafe fn clean(v: __m256) -> __m256 {
        // SAFETY: register-only intrinsics; the caller enables AVX-512F/VL (AVX with it).
        unsafe {
            let a = _mm256_andnot_ps(_mm256_set1_ps(-0.0), v);
            let lo = _mm256_cmp_ps::<_CMP_GE_OQ>(a, _mm256_set1_ps(f32::MIN_POSITIVE));
            let hi = _mm256_cmp_ps::<_CMP_LE_OQ>(a, _mm256_set1_ps(f32::MAX));
            _mm256_and_ps(v, _mm256_and_ps(lo, hi))
        }
    }

    transpose_io!(8, "avx512f,avx512vl", __m512d, _mm512_setzero_pd, _mm256_loadu_ps, _mm256_storeu_ps, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_cvtps_pd, _mm512_cvtpd_ps, clean);
}

#[target_feature(enable = "avx512f,avx512vl,fma")]
pub(super) fn process_avx512(
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
    clean: bool,
) {
    process_all::<8, 8, Fused>(Wave::Avx512, coefs, state, scratch, buffers, start, end, clean)
}

/// Most sections per chunk of [`wavefront_pairs_avx512`]: three pairs (state, frame and
/// coefficient vectors of three pairs fill 24 of the 32 registers).
pub(super) const PAIR_SECTIONS: usize = 6;

/// Four channels with AVX-512, two sections per vector: lanes 0-3 are section `2p` of the
/// four channels, lanes 4-7 section `2p + 1`, for pair `p` of a chunk of `N` sections
/// (`N` even). In iteration `t` section `k` works on frame `t - k` (the channel
/// wavefront's schedule), so a pair's upper half takes its lower half's output of the
/// previous iteration, and its lower half the previous pair's upper half: one 256-bit
/// lane shuffle per pair and iteration. A 4-lane vector per section (the AVX2
/// wavefront) costs an instruction per section and frame as a full vector does; here
/// two sections share one. The five operations per section are those of every other
/// kernel, in the same order: the results are bit-identical.
#[target_feature(enable = "avx512f,avx512vl,fma")]
pub(super) fn wavefront_pairs_avx512<const N: usize>(
    c: &[SosCoefs; N],
    s1: &mut [[f64; 4]; N],
    s2: &mut [[f64; 4]; N],
    data: &mut [[f64; 4]],
) {
    use std::arch::x86_64::*;
    const MAX_PAIRS: usize = PAIR_SECTIONS / 2;
    let n = data.len();
    if !N.is_multiple_of(2) || N > PAIR_SECTIONS || n < N {
        for t in 0..n + N - 1 {
            masked_iteration::<4, N, 1, Fused>(c, s1, s2, data, t);
        }
        return;
    }
    let pairs = N / 2;
    let fill = N - 1;
    for t in 0..fill {
        masked_iteration::<4, N, 1, Fused>(c, s1, s2, data, t);
    }
    // Per pair: the five coefficient rows, the two states and the outputs of iteration
    // `fill - 1` (section k's frame `fill - 1 - k`, in place in `data` after the
    // prologue; the chunk's last section's is never fed forward: left zero).
    let mut coef = [[[0.0f64; 8]; 5]; MAX_PAIRS];
    let (mut s1a, mut s2a, mut ya) = ([[0.0f64; 8]; MAX_PAIRS], [[0.0f64; 8]; MAX_PAIRS], [[0.0f64; 8]; MAX_PAIRS]);
    for k in 0..N {
        let (p, h) = (k / 2, 4 * (k % 2));
        let ck = &c[k];
        for l in 0..4 {
            for (row, v) in coef[p].iter_mut().zip([ck.b0, ck.b1, ck.b2, ck.a1, ck.a2]) {
                row[h + l] = v;
            }
            s1a[p][h + l] = s1[k][l];
            s2a[p][h + l] = s2[k][l];
            if k + 1 < N {
                ya[p][h + l] = data[fill - 1 - k][l];
            }
        }
    }
    // SAFETY: vector loads and stores use `[f64; 8]` arrays or one frame of `data`
    // (`[f64; 4]`, 256 bits: `t < n` for the input, `t - fill < n` for the output). The
    // target features are enabled on this function, called only after detection.
    unsafe {
        let load = |a: &[f64; 8]| _mm512_loadu_pd(a.as_ptr());
        let mut b0 = [_mm512_setzero_pd(); MAX_PAIRS];
        let (mut b1, mut b2, mut a1, mut a2) = (b0, b0, b0, b0);
        let (mut sv1, mut sv2, mut y) = (b0, b0, b0);
        for p in 0..pairs {
            b0[p] = load(&coef[p][0]);
            b1[p] = load(&coef[p][1]);
            b2[p] = load(&coef[p][2]);
            a1[p] = load(&coef[p][3]);
            a2[p] = load(&coef[p][4]);
            sv1[p] = load(&s1a[p]);
            sv2[p] = load(&s2a[p]);
            y[p] = load(&ya[p]);
        }
        let base = data.as_mut_ptr().cast::<f64>();
        for t in fill..n {
            let x = _mm512_castpd256_pd512(_mm256_loadu_pd(base.add(4 * t)));
            let mut ny = [_mm512_setzero_pd(); MAX_PAIRS];
            for p in 0..pairs {
                // Lower half: the input, or the previous pair's upper section's output;
                // upper half: this pair's lower section's output (both of iteration t-1).
                let v = if p == 0 { _mm512_shuffle_f64x2::<0b01_00_01_00>(x, y[0]) } else { _mm512_shuffle_f64x2::<0b01_00_11_10>(y[p - 1], y[p]) };
                let p1 = _mm512_fmadd_pd(b1[p], v, sv2[p]);
                let p2 = _mm512_mul_pd(b2[p], v);
                let yp = _mm512_fmadd_pd(b0[p], v, sv1[p]);
                sv1[p] = _mm512_fnmadd_pd(a1[p], yp, p1);
                sv2[p] = _mm512_fnmadd_pd(a2[p], yp, p2);
                ny[p] = yp;
            }
            _mm256_storeu_pd(base.add(4 * (t - fill)), _mm512_extractf64x4_pd::<1>(ny[pairs - 1]));
            y = ny;
        }
        for p in 0..pairs {
            _mm512_storeu_pd(s1a[p].as_mut_ptr(), sv1[p]);
            _mm512_storeu_pd(s2a[p].as_mut_ptr(), sv2[p]);
            _mm512_storeu_pd(ya[p].as_mut_ptr(), y[p]);
        }
    }
    for k in 0..N {
        let (p, h) = (k / 2, 4 * (k % 2));
        for l in 0..4 {
            s1[k][l] = s1a[p][h + l];
            s2[k][l] = s2a[p][h + l];
            // Frames still in flight go back in place for the draining iterations:
            // section k's last output is frame n-1-k.
            if k + 1 < N {
                data[n - 1 - k][l] = ya[p][h + l];
            }
        }
    }
    for t in n..n + N - 1 {
        masked_iteration::<4, N, 1, Fused>(c, s1, s2, data, t);
    }
}
