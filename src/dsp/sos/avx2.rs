//! The AVX2 kernels: the 4-lane channel wavefront, the 4x4 in-register transpose (AVX),
//! and the entry point.

use super::kernel::{masked_iteration, process_all, transpose_io, wavefront, Wave};
use super::SosCoefs;
use crate::dsp::simd::Fused;

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

    transpose_io!(4, "avx", __m256d, _mm256_setzero_pd, _mm_loadu_ps, _mm_storeu_ps, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_cvtps_pd, _mm256_cvtpd_ps);
}

#[target_feature(enable = "avx2,fma")]
pub(super) fn process_avx2(
    coefs: &[SosCoefs],
    state: &mut [[f64; 2]],
    scratch: &mut [f64],
    buffers: &mut [&mut [f32]],
    start: usize,
    end: usize,
) {
    process_all::<4, 4, Fused>(Wave::Avx2, coefs, state, scratch, buffers, start, end)
}
