//! One row of a cascade with its sections as the lanes of a vector (a wavefront): the
//! cascade's speed on a single channel, where rows-as-lanes has nothing to fill lanes with.

/// Sections per [`wavefront`] pass: four vectors of four lanes.
pub(super) const WAVE_SECTIONS: usize = 16;

/// Up to `4 V` sections of one row with the sections as lanes: slot `(v, lane)` holds
/// section `s = V lane + v`, and in step `t` every section takes its frame `t - s`, the
/// output section `s - 1` made in step `t - 1` (the same lane of vector `v - 1`, or for
/// `v = 0` the lane below in vector `V - 1`, the new frame entering lane 0). So one step
/// is `V` independent vector recurrences, and each section still sees its frames in order
/// with SciPy's operations: the same bits as one frame through all sections at a time.
/// Slots past the last section hold zeros and feed nothing. In place: step `t` reads
/// frame `t` and writes frame `t - (S - 1)`.
///
/// # Safety
/// The CPU must have AVX2 and FMA: the steps where every slot has a frame run in AVX2
/// vectors (the first and last `S - 1`, where some slots have none, as scalars).
#[inline(always)]
pub(super) unsafe fn wavefront<const V: usize>(chunk: &[[f64; 5]], zc: &mut [f64], data: &mut [f64]) {
    let sections = chunk.len();
    let n = data.len();
    if n == 0 || sections == 0 {
        return;
    }
    let mut c = [[[0.0f64; 4]; 5]; V];
    let mut z0 = [[0.0f64; 4]; V];
    let mut z1 = [[0.0f64; 4]; V];
    // The section number of each slot, for the prologue's and epilogue's masks.
    let mut slot = [[usize::MAX; 4]; V];
    for (s, cs) in chunk.iter().enumerate() {
        let (v, lane) = (s % V, s / V);
        for k in 0..5 {
            c[v][k][lane] = cs[k];
        }
        z0[v][lane] = zc[2 * s];
        z1[v][lane] = zc[2 * s + 1];
        slot[v][lane] = s;
    }
    let (out_v, out_lane) = ((sections - 1) % V, (sections - 1) / V);
    let lag = sections - 1;
    let steps = n + lag;
    let mut y = [[0.0f64; 4]; V];
    // One step; `masked`: only the slots with a frame in this step keep their new state.
    let step = |t: usize,
                y: &mut [[f64; 4]; V],
                z0: &mut [[f64; 4]; V],
                z1: &mut [[f64; 4]; V],
                data: &mut [f64]| {
        let x = if t < n { data[t] } else { 0.0 };
        let mut input = [[0.0f64; 4]; V];
        input[0] = [x, y[V - 1][0], y[V - 1][1], y[V - 1][2]];
        input[1..V].copy_from_slice(&y[..V - 1]);
        for v in 0..V {
            let mut nz0 = [0.0f64; 4];
            let mut nz1 = [0.0f64; 4];
            for l in 0..4 {
                let xv = input[v][l];
                let yv = c[v][0][l] * xv + z0[v][l];
                nz0[l] = c[v][1][l] * xv - c[v][3][l] * yv + z1[v][l];
                nz1[l] = c[v][2][l] * xv - c[v][4][l] * yv;
                y[v][l] = yv;
            }
            for l in 0..4 {
                let s = slot[v][l];
                if s <= t && t - s < n {
                    z0[v][l] = nz0[l];
                    z1[v][l] = nz1[l];
                }
            }
        }
        if t >= lag {
            data[t - lag] = y[out_v][out_lane];
        }
    };
    for t in 0..lag.min(steps) {
        step(t, &mut y, &mut z0, &mut z1, data);
    }
    if lag < n {
        // SAFETY: this function's contract (AVX2 and FMA).
        unsafe { wavefront_steps_avx2::<V>(&c, &mut z0, &mut z1, &mut y, data, lag..n, (out_v, out_lane)) };
    }
    for t in n.max(lag)..steps {
        step(t, &mut y, &mut z0, &mut z1, data);
    }
    for s in 0..sections {
        let (v, lane) = (s % V, s / V);
        zc[2 * s] = z0[v][lane];
        zc[2 * s + 1] = z1[v][lane];
    }
}

/// [`wavefront`]'s steps `range` (every slot has its frame) in AVX2 vectors: the same
/// multiplies, subtractions and additions in the same order, so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn wavefront_steps_avx2<const V: usize>(
    c: &[[[f64; 4]; 5]; V],
    z0s: &mut [[f64; 4]; V],
    z1s: &mut [[f64; 4]; V],
    ys: &mut [[f64; 4]; V],
    data: &mut [f64],
    range: std::ops::Range<usize>,
    (out_v, out_lane): (usize, usize),
) {
    use std::arch::x86_64::*;
    let lag = range.start;
    assert!(range.end <= data.len() && out_lane < 4 && out_v < V);
    // SAFETY: the loads and stores below touch `[f64; 4]` arrays through pointers to them
    // (4 doubles each); the data indices are checked by the assertion (t < range.end <=
    // data.len(), t - lag >= 0).
    unsafe {
        let mut c_ = [[_mm256_setzero_pd(); 5]; V];
        let mut z0 = [_mm256_setzero_pd(); V];
        let mut z1 = [_mm256_setzero_pd(); V];
        let mut y = [_mm256_setzero_pd(); V];
        for v in 0..V {
            for k in 0..5 {
                c_[v][k] = _mm256_loadu_pd(c[v][k].as_ptr());
            }
            z0[v] = _mm256_loadu_pd(z0s[v].as_ptr());
            z1[v] = _mm256_loadu_pd(z1s[v].as_ptr());
            y[v] = _mm256_loadu_pd(ys[v].as_ptr());
        }
        let mut out = [0.0f64; 4];
        let p = data.as_mut_ptr();
        for t in range {
            let x = _mm256_set1_pd(*p.add(t));
            // [x, y[V-1][0], y[V-1][1], y[V-1][2]]: the lane below, the new frame in lane 0.
            let below = _mm256_permute4x64_pd::<0b10_01_00_00>(y[V - 1]);
            let mut input = [_mm256_blend_pd::<0b0001>(below, x); V];
            input[1..V].copy_from_slice(&y[..V - 1]);
            for v in 0..V {
                let xv = input[v];
                let yv = _mm256_add_pd(_mm256_mul_pd(c_[v][0], xv), z0[v]);
                z0[v] = _mm256_add_pd(
                    _mm256_sub_pd(_mm256_mul_pd(c_[v][1], xv), _mm256_mul_pd(c_[v][3], yv)),
                    z1[v],
                );
                z1[v] = _mm256_sub_pd(_mm256_mul_pd(c_[v][2], xv), _mm256_mul_pd(c_[v][4], yv));
                y[v] = yv;
            }
            _mm256_storeu_pd(out.as_mut_ptr(), y[out_v]);
            *p.add(t - lag) = out[out_lane];
        }
        for v in 0..V {
            _mm256_storeu_pd(z0s[v].as_mut_ptr(), z0[v]);
            _mm256_storeu_pd(z1s[v].as_mut_ptr(), z1[v]);
            _mm256_storeu_pd(ys[v].as_mut_ptr(), y[v]);
        }
    }
}

