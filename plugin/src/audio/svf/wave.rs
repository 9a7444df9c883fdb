//! The wavefront kernels of the automated path (x86-64 with AVX2 or AVX-512): a
//! stretch of the cascade's slots, up to [`WAVE`] at once, slot `j` in vector lane `j`
//! and `j` frames behind slot 0. At each step every lane filters its own frame and hands
//! its output to the next lane for the next step, so the chain of dependent operations
//! covers eight slots per step where one slot at a time waited on each frame's
//! recurrence. Per frame and slot the arithmetic is [`super::process::step`]'s and the
//! glide's sums are [`SvfCascade::frame_coefs`]'s, in the same order, so the output is
//! the same bit for bit (the piece-wise test holds every kernel to the frame-by-frame
//! order). No allocation.

use super::process::PIECE;
use super::{SvfCascade, SvfCoefs};
use ferrofx::dsp::simd::Isa;
use std::arch::x86_64::*;

/// Slots filtered at once in a wavefront ([`SvfCascade::run_wave`]): one per float64 vector
/// lane (one AVX-512 vector, two AVX2 ones).
pub(super) const WAVE: usize = 8;

/// A wavefront's coefficients for each step of a piece, `[step][row][lane]`, the rows
/// `a1, a2, a3, m0, m1, m2` (lane `j` at step `t`: its slot's for frame `t - j`).
pub(super) type WaveCoefs = [[[f64; WAVE]; 6]; PIECE + WAVE - 1];

/// The wavefront kernels; `None` from [`WaveKernel::for_isa`] where the CPU has neither
/// (the portable path then runs a slot at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaveKernel {
    Avx2,
    Avx512,
}

impl WaveKernel {
    pub(super) fn for_isa(isa: Isa) -> Option<WaveKernel> {
        match isa.or_portable() {
            Isa::Avx512 => Some(WaveKernel::Avx512),
            Isa::Avx2 => Some(WaveKernel::Avx2),
            Isa::Portable => None,
        }
    }
}

impl SvfCascade {
    /// Runs the `size` slots `run_slots[first..first + size]` (`2 <= size <= WAVE`) over
    /// `n` frames of `work` as one wavefront on `kernel`, a pair of channels at a time.
    /// On AVX-512 the glides' coefficients for every step are computed on the way by the
    /// first pair's filter (in the shadow of its recurrence) and kept for the other
    /// pairs; on AVX2 beforehand.
    pub(super) fn run_wave(&mut self, kernel: WaveKernel, first: usize, size: usize, channels: usize, n: usize) {
        let mut lanes = [usize::MAX; WAVE];
        lanes[..size].copy_from_slice(&self.run_slots[first..first + size]);
        let mut glide = self.start_glides(&lanes[..size], n);
        let fused = kernel == WaveKernel::Avx512 && channels > 0;
        if !fused {
            // The glides alone first, their coefficients kept for the filter: with no
            // channel (the glides still move on), and on AVX2, whose sixteen registers do
            // not hold the glides and the filter together (measured slower so).
            filter_wave::<0>(kernel, &mut self.wave_coefs, Some(&mut glide), true, [], &mut self.state, [], &lanes, size, n);
        }
        let keep = channels > 2;
        let slots = self.slots();
        for (p, chunk) in self.work[..channels].chunks_mut(2).enumerate() {
            let glide = (fused && p == 0).then_some(&mut glide);
            match chunk {
                [w0, w1] => filter_wave(kernel, &mut self.wave_coefs, glide, keep, [w0, w1], &mut self.state, [2 * p * slots, (2 * p + 1) * slots], &lanes, size, n),
                [w0] => filter_wave(kernel, &mut self.wave_coefs, glide, keep, [w0], &mut self.state, [2 * p * slots], &lanes, size, n),
                _ => {}
            }
        }
        self.end_glides(&glide, &lanes[..size]);
    }

    /// The wavefront's glides for the next `n` frames (lane `j`: slot `lanes[j]`), their
    /// slots' glides counted on by `n` frames, as [`SvfCascade::frame_coefs`] does for one
    /// slot; [`SvfCascade::end_glides`] stores where they end.
    fn start_glides(&mut self, lanes: &[usize], n: usize) -> WaveGlide {
        let mut glide = WaveGlide::idle(self.identity);
        for (j, &slot) in lanes.iter().enumerate() {
            for (r, v) in self.coefs[slot].to_array().into_iter().enumerate() {
                (glide.at[r][j], glide.target[r][j]) = (v, v);
            }
            if self.left[slot] == 0 {
                continue;
            }
            let steps = n.min(self.left[slot] - 1);
            for (r, (d, to)) in self.step[slot].to_array().into_iter().zip(self.target[slot].to_array()).enumerate() {
                (glide.step[r][j], glide.target[r][j]) = (d, to);
            }
            glide.steps[j] = steps as f64;
            if steps < n {
                self.left[slot] = 0;
                self.gliding -= 1;
            } else {
                self.left[slot] -= steps;
            }
        }
        glide
    }

    /// Stores where the wavefront's glides ended (after the piece's steps; a lane that
    /// does not glide stays where it was).
    fn end_glides(&mut self, glide: &WaveGlide, lanes: &[usize]) {
        for (j, &slot) in lanes.iter().enumerate() {
            let at = SvfCoefs::from_array(glide.at.map(|row| row[j]));
            self.coefs[slot] = at;
            // The last frame's update coefficients: the same operations on the same
            // values as the wavefront's.
            self.derived[slot] = at.update_coefs();
        }
    }
}

/// A wavefront's glides for one piece, per lane: where each glide is (`at`: `g, k, m0, m1,
/// m2`), its step, its target, how many of the piece's frames step (`steps`; from then on
/// the target; 0 where the lane does not glide, its target then where it is). Numbers in
/// float64 lanes so that each step's choices are vector compares.
struct WaveGlide {
    at: [[f64; WAVE]; 5],
    step: [[f64; WAVE]; 5],
    target: [[f64; WAVE]; 5],
    steps: [f64; WAVE],
}

impl WaveGlide {
    /// Every lane the identity section, not gliding (what unused lanes keep).
    fn idle(identity: SvfCoefs) -> WaveGlide {
        let q = identity.to_array();
        WaveGlide {
            at: q.map(|v| [v; WAVE]),
            step: [[0.0; WAVE]; 5],
            target: q.map(|v| [v; WAVE]),
            steps: [0.0; WAVE],
        }
    }
}

/// A wavefront of `size` slots (`lanes`) over `n` frames of `M` channels (`bases`: each
/// channel's first state index) on `kernel`: at step `t` lane `j` filters frame `t - j`
/// with [`super::process::step`]'s operations in its order, its input the lane before's
/// output of the step before (lane 0: the piece's frame `t`), and keeps its state where
/// that frame is outside the piece (before its first frame, after its last, or an unused
/// lane). Lane `size - 1`'s output is the group's, written back in place (to a frame
/// already read). With `glide`, the kernel steps the glides itself (and stores each
/// step's coefficients into `c` where `keep`); without, it reads them from `c`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn filter_wave<const M: usize>(
    kernel: WaveKernel,
    c: &mut WaveCoefs,
    glide: Option<&mut WaveGlide>,
    keep: bool,
    work: [&mut [f64; PIECE]; M],
    state: &mut [[f64; 2]],
    bases: [usize; M],
    lanes: &[usize; WAVE],
    size: usize,
    n: usize,
) {
    // The group's states into lanes (unused lanes: zero, never written back).
    let mut s = [[[0.0f64; WAVE]; 2]; M];
    for (s, &base) in s.iter_mut().zip(&bases) {
        for (j, &slot) in lanes.iter().enumerate().take(size) {
            [s[0][j], s[1][j]] = state[base + slot];
        }
    }
    match kernel {
        // SAFETY: a `WaveKernel` comes from `for_isa`, which checks that this CPU runs it.
        WaveKernel::Avx512 => match glide {
            // SAFETY: as above.
            Some(glide) => unsafe { filter_wave_avx512::<M, true>(c, glide, keep, work, &mut s, size, n) },
            // SAFETY: as above.
            None => unsafe { filter_wave_avx512::<M, false>(c, &mut WaveGlide::idle(SvfCoefs::default()), false, work, &mut s, size, n) },
        },
        WaveKernel::Avx2 => match glide {
            // SAFETY: as above.
            Some(glide) => unsafe { filter_wave_avx2::<M, true>(c, glide, keep, work, &mut s, size, n) },
            // SAFETY: as above.
            None => unsafe { filter_wave_avx2::<M, false>(c, &mut WaveGlide::idle(SvfCoefs::default()), false, work, &mut s, size, n) },
        },
    }
    for (s, &base) in s.iter().zip(&bases) {
        for (j, &slot) in lanes.iter().enumerate().take(size) {
            state[base + slot] = [s[0][j], s[1][j]];
        }
    }
}

/// The lanes of a wavefront step that filter a frame of the piece: lane `j` where
/// `0 <= t - j < n` and `j < size`, as a bit mask.
#[inline(always)]
fn active_lanes(t: usize, size: usize, n: usize) -> u8 {
    let first = (t + 1).saturating_sub(n);
    let last = t.min(size - 1);
    (((1u32 << (last + 1)) - 1) & !((1u32 << first) - 1)) as u8
}

/// [`filter_wave`] in one AVX-512 vector per channel: the lane shift one `valignq`,
/// the kept states a masked subtraction; the same operations in the same order, so the
/// same bits. `GLIDE`: each step's coefficients are computed here from `glide` (stored
/// into `c` too where `keep`), else read from `c`: lane `j` at step `t` is at frame
/// `f = t - j`; frames `0..steps` add the step, frames `steps..n` hold the target (the
/// glide's last frame lands on it exactly), as [`SvfCascade::frame_coefs`] does frame by
/// frame; then the update coefficients of [`SvfCoefs::update_coefs`] (for a lane that
/// does not glide, the same as its slot's `derived`, which always equals its
/// coefficients' `update_coefs`).
#[target_feature(enable = "avx512f,avx512vl,avx2")]
unsafe fn filter_wave_avx512<const M: usize, const GLIDE: bool>(
    c: &mut WaveCoefs,
    glide: &mut WaveGlide,
    keep: bool,
    work: [&mut [f64; PIECE]; M],
    states: &mut [[[f64; WAVE]; 2]; M],
    size: usize,
    n: usize,
) {
    // SAFETY (every block below): the loads and stores are of whole `[f64; 8]` arrays
    // through their own pointers; the rest computes on registers.
    let load = |v: &[f64; WAVE]| unsafe { _mm512_loadu_pd(v.as_ptr()) };
    let mut s0: [__m512d; M] = std::array::from_fn(|ch| load(&states[ch][0]));
    let mut s1: [__m512d; M] = std::array::from_fn(|ch| load(&states[ch][1]));
    let mut y = [_mm512_setzero_pd(); M];
    let two = _mm512_set1_pd(2.0);
    let out_lane = _mm512_set1_epi64(size as i64 - 1);
    // The glides.
    let (zero, one, n_f) = (_mm512_setzero_pd(), _mm512_set1_pd(1.0), _mm512_set1_pd(n as f64));
    let lane = _mm512_setr_pd(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0);
    let mut at = glide.at.each_ref().map(load);
    let steps = load(&glide.steps);
    for t in 0..n + size - 1 {
        let active = active_lanes(t, size, n);
        let [a1, a2, a3, m0, m1, m2] = if GLIDE {
            let f = _mm512_sub_pd(_mm512_set1_pd(t as f64), lane);
            let add = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(f, zero) & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(f, steps);
            let land = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(f, steps) & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(f, n_f);
            for (r, at) in at.iter_mut().enumerate() {
                let added = _mm512_add_pd(*at, load(&glide.step[r]));
                *at = _mm512_mask_mov_pd(_mm512_mask_mov_pd(*at, add, added), land, load(&glide.target[r]));
            }
            let g = at[0];
            let a1 = _mm512_div_pd(one, _mm512_add_pd(one, _mm512_mul_pd(g, _mm512_add_pd(g, at[1]))));
            let a2 = _mm512_mul_pd(g, a1);
            let a3 = _mm512_mul_pd(g, a2);
            let row = [a1, a2, a3, at[2], at[3], at[4]];
            if keep {
                for (out, v) in c[t].iter_mut().zip(row) {
                    unsafe { _mm512_storeu_pd(out.as_mut_ptr(), v) };
                }
            }
            row
        } else {
            c[t].each_ref().map(load)
        };
        for ch in 0..M {
            let input = if t < n { work[ch][t] } else { 0.0 };
            // [input, y0, .., y6]: each lane takes the lane before's output.
            let x = _mm512_castsi512_pd(_mm512_alignr_epi64::<7>(_mm512_castpd_si512(y[ch]), _mm512_castpd_si512(_mm512_set1_pd(input))));
            let (p, q) = (s0[ch], s1[ch]);
            let v3 = _mm512_sub_pd(x, q);
            let v1 = _mm512_add_pd(_mm512_mul_pd(a1, p), _mm512_mul_pd(a2, v3));
            let v2 = _mm512_add_pd(_mm512_add_pd(q, _mm512_mul_pd(a2, p)), _mm512_mul_pd(a3, v3));
            s0[ch] = _mm512_mask_sub_pd(p, active, _mm512_mul_pd(two, v1), p);
            s1[ch] = _mm512_mask_sub_pd(q, active, _mm512_mul_pd(two, v2), q);
            y[ch] = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(m0, x), _mm512_mul_pd(m1, v1)), _mm512_mul_pd(m2, v2));
            if t + 1 >= size {
                work[ch][t + 1 - size] = _mm512_cvtsd_f64(_mm512_permutexvar_pd(out_lane, y[ch]));
            }
        }
    }
    for ch in 0..M {
        unsafe {
            _mm512_storeu_pd(states[ch][0].as_mut_ptr(), s0[ch]);
            _mm512_storeu_pd(states[ch][1].as_mut_ptr(), s1[ch]);
        }
    }
    if GLIDE {
        for (out, v) in glide.at.iter_mut().zip(at) {
            unsafe { _mm512_storeu_pd(out.as_mut_ptr(), v) };
        }
    }
}

/// [`filter_wave`] in two AVX2 vectors per channel (lanes 0-3 and 4-7): the lane
/// shift a rotation of each half and a blend, the kept states a blend; the same
/// operations in the same order, so the same bits. `GLIDE` and `keep` as for
/// [`filter_wave_avx512`].
#[target_feature(enable = "avx2")]
unsafe fn filter_wave_avx2<const M: usize, const GLIDE: bool>(
    c: &mut WaveCoefs,
    glide: &mut WaveGlide,
    keep: bool,
    work: [&mut [f64; PIECE]; M],
    states: &mut [[[f64; WAVE]; 2]; M],
    size: usize,
    n: usize,
) {
    /// Four lanes' bits as a blend mask.
    #[inline(always)]
    unsafe fn lanes(bits: u8) -> __m256d {
        let b = i64::from(bits);
        _mm256_castsi256_pd(_mm256_set_epi64x(-(b >> 3 & 1), -(b >> 2 & 1), -(b >> 1 & 1), -(b & 1)))
    }
    // SAFETY (every block below): the loads and stores are of whole `[f64; 8]` arrays
    // (as two halves) through their own pointers; the rest computes on registers.
    let load = |v: &[f64; WAVE]| unsafe { [_mm256_loadu_pd(v.as_ptr()), _mm256_loadu_pd(v.as_ptr().add(4))] };
    let store = |out: &mut [f64; WAVE], v: [__m256d; 2]| unsafe {
        _mm256_storeu_pd(out.as_mut_ptr(), v[0]);
        _mm256_storeu_pd(out.as_mut_ptr().add(4), v[1]);
    };
    let mut s0: [[__m256d; 2]; M] = std::array::from_fn(|ch| load(&states[ch][0]));
    let mut s1: [[__m256d; 2]; M] = std::array::from_fn(|ch| load(&states[ch][1]));
    let mut y = [[_mm256_setzero_pd(); 2]; M];
    let two = _mm256_set1_pd(2.0);
    // The output lane: its half, and its place in that half as two 32-bit indices.
    let (out_half, out_at) = ((size - 1) / 4, ((size - 1) % 4) as i32);
    let out_index = _mm256_setr_epi32(2 * out_at, 2 * out_at + 1, 0, 0, 0, 0, 0, 0);
    // The glides (see `filter_wave_avx512`).
    let (zero, one, n_f) = (_mm256_setzero_pd(), _mm256_set1_pd(1.0), _mm256_set1_pd(n as f64));
    let lane = [_mm256_setr_pd(0.0, 1.0, 2.0, 3.0), _mm256_setr_pd(4.0, 5.0, 6.0, 7.0)];
    let mut at = glide.at.each_ref().map(load);
    let steps = load(&glide.steps);
    for t in 0..n + size - 1 {
        let active = active_lanes(t, size, n);
        let active = [lanes(active & 15), lanes(active >> 4)];
        let [a1, a2, a3, m0, m1, m2] = if GLIDE {
            let mut row = [[zero; 2]; 6];
            for h in 0..2 {
                let f = _mm256_sub_pd(_mm256_set1_pd(t as f64), lane[h]);
                let add = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GE_OQ>(f, zero), _mm256_cmp_pd::<_CMP_LT_OQ>(f, steps[h]));
                let land = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GE_OQ>(f, steps[h]), _mm256_cmp_pd::<_CMP_LT_OQ>(f, n_f));
                for (r, at) in at.iter_mut().enumerate() {
                    let added = _mm256_add_pd(at[h], load(&glide.step[r])[h]);
                    at[h] = _mm256_blendv_pd(_mm256_blendv_pd(at[h], added, add), load(&glide.target[r])[h], land);
                }
                let g = at[0][h];
                let a1 = _mm256_div_pd(one, _mm256_add_pd(one, _mm256_mul_pd(g, _mm256_add_pd(g, at[1][h]))));
                let a2 = _mm256_mul_pd(g, a1);
                for (row, v) in row.iter_mut().zip([a1, a2, _mm256_mul_pd(g, a2), at[2][h], at[3][h], at[4][h]]) {
                    row[h] = v;
                }
            }
            if keep {
                for (out, v) in c[t].iter_mut().zip(row) {
                    store(out, v);
                }
            }
            row
        } else {
            c[t].each_ref().map(load)
        };
        for ch in 0..M {
            let input = if t < n { work[ch][t] } else { 0.0 };
            // [input, y0, .., y6]: each lane takes the lane before's output.
            let rot = [_mm256_permute4x64_pd::<0b10_01_00_11>(y[ch][0]), _mm256_permute4x64_pd::<0b10_01_00_11>(y[ch][1])];
            let x = [_mm256_blend_pd::<0b0001>(rot[0], _mm256_set1_pd(input)), _mm256_blend_pd::<0b0001>(rot[1], rot[0])];
            for h in 0..2 {
                let (p, q) = (s0[ch][h], s1[ch][h]);
                let v3 = _mm256_sub_pd(x[h], q);
                let v1 = _mm256_add_pd(_mm256_mul_pd(a1[h], p), _mm256_mul_pd(a2[h], v3));
                let v2 = _mm256_add_pd(_mm256_add_pd(q, _mm256_mul_pd(a2[h], p)), _mm256_mul_pd(a3[h], v3));
                s0[ch][h] = _mm256_blendv_pd(p, _mm256_sub_pd(_mm256_mul_pd(two, v1), p), active[h]);
                s1[ch][h] = _mm256_blendv_pd(q, _mm256_sub_pd(_mm256_mul_pd(two, v2), q), active[h]);
                y[ch][h] = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(m0[h], x[h]), _mm256_mul_pd(m1[h], v1)), _mm256_mul_pd(m2[h], v2));
            }
            if t + 1 >= size {
                let out = _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(y[ch][out_half]), out_index));
                work[ch][t + 1 - size] = _mm256_cvtsd_f64(out);
            }
        }
    }
    for ch in 0..M {
        store(&mut states[ch][0], s0[ch]);
        store(&mut states[ch][1], s1[ch]);
    }
    if GLIDE {
        for (out, v) in glide.at.iter_mut().zip(at) {
            store(out, v);
        }
    }
}
