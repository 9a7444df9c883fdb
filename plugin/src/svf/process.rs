//! [`SvfCascade::process_at`]: the filtering, in pieces of [`PIECE`] frames, each slot
//! over the whole piece before the next. No allocation.

use super::{SvfCascade, SvfCoefs};
use ferrofx::dsp::simd::Isa;

/// Frames filtered at a time: each slot runs the whole piece before the next slot (see
/// [`SvfCascade::process_at`]).
pub(super) const PIECE: usize = 32;

/// Slots filtered at once in a wavefront ([`SvfCascade::run_wave`]): one per vector lane
/// (eight float64 lanes: one AVX-512 vector, two AVX2 ones, four SSE2 ones).
pub(super) const WAVE: usize = 8;

/// A wavefront's coefficients for each step of a piece, `[step][row][lane]`, the rows
/// `a1, a2, a3, m0, m1, m2` (lane `j` at step `t`: its slot's for frame `t - j`).
pub(super) type WaveCoefs = [[[f64; WAVE]; 6]; PIECE + WAVE - 1];

/// One slot's coefficients for each frame of a piece: the update's `a1, a2, a3` and the
/// output mix `m0, m1, m2`, and the glide's `g, k` they come from.
#[derive(Clone, Default)]
pub(super) struct PieceCoefs {
    g: [f64; PIECE],
    k: [f64; PIECE],
    a: [[f64; PIECE]; 3],
    m: [[f64; PIECE]; 3],
}

impl SvfCascade {
    /// Filters `frames` samples at `offset` of each channel in place.
    ///
    /// In pieces of [`PIECE`] frames, each slot in turn filters the whole piece (all
    /// channels) before the next slot, its coefficients for every frame of the piece
    /// computed first: the recurrence of one slot is then the only chain of dependent
    /// operations, and the slots' work overlaps where a frame-by-frame walk through all
    /// slots waited on each one in turn. Per frame and slot the arithmetic (the glide's
    /// steps, the update coefficients, the fades' weights, the filter) is the
    /// frame-by-frame order's, so the output is the same bit for bit (tested against it).
    pub fn process_at(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        let channels = buffers.len().min(self.channels);
        let mut done = 0;
        while done < frames {
            let n = (frames - done).min(PIECE);
            for (w, buf) in self.work.iter_mut().zip(buffers.iter()).take(channels) {
                for (v, &x) in w[..n].iter_mut().zip(&buf[offset + done..offset + done + n]) {
                    *v = f64::from(x);
                }
            }
            self.piece(channels, n);
            for (w, buf) in self.work.iter().zip(buffers.iter_mut()).take(channels) {
                for (y, &v) in buf[offset + done..offset + done + n].iter_mut().zip(&w[..n]) {
                    *y = v as f32;
                }
            }
            done += n;
        }
        self.flush_states();
    }

    /// Filters `self.work[..channels][..n]` in place (`1 <= n <= PIECE`).
    fn piece(&mut self, channels: usize, n: usize) {
        let mut r = 0;
        while r < self.runs.len() {
            let run = self.runs[r];
            r += 1;
            if run.incoming.is_none() {
                // Bands that do not fade (their fade weight is idle) with the bands after
                // them that do not either: one cascade of slots, `run_slots[start..end]`.
                let (start, mut end) = run.live;
                while let Some(next) = self.runs.get(r).filter(|next| next.incoming.is_none() && next.live.0 == end) {
                    end = next.live.1;
                    r += 1;
                }
                self.run_stretch((start, end), channels, n);
                continue;
            }
            // The band's fade weights for each frame of the piece (a fade moves on one
            // step per frame, before the frame is filtered).
            let mut weight = [0.0f64; PIECE];
            if let Some(fade) = self.fades.get_mut(run.band) {
                for w in weight[..n].iter_mut() {
                    *w = fade.advance();
                }
            }
            if let Some(range) = run.incoming {
                for (inc, w) in self.incoming_work.iter_mut().zip(&self.work).take(channels) {
                    inc[..n].copy_from_slice(&w[..n]);
                }
                self.run_range(range, true, channels, n);
            }
            self.run_range(run.live, false, channels, n);
            if run.incoming.is_some() {
                for (y, y_new) in self.work.iter_mut().zip(&self.incoming_work).take(channels) {
                    for i in 0..n {
                        y[i] += weight[i] * (y_new[i] - y[i]);
                    }
                }
            }
        }
    }

    /// Runs `run_slots[range]` in turn over `n` frames of `work`: in wavefronts of up to
    /// [`WAVE`] slots ([`SvfCascade::run_wave`]), a single slot left over on its own.
    fn run_stretch(&mut self, range: (usize, usize), channels: usize, n: usize) {
        let mut first = range.0;
        while first < range.1 {
            let size = (range.1 - first).min(WAVE);
            if size == 1 {
                self.run_range((first, first + 1), false, channels, n);
            } else {
                self.run_wave(first, size, channels, n);
            }
            first += size;
        }
    }

    /// Runs the `size` slots `run_slots[first..first + size]` (`2 <= size <= WAVE`) over
    /// `n` frames of `work` as one wavefront: slot `j` of the group in vector lane `j`,
    /// `j` frames behind slot 0, so that at each step every lane filters its own frame
    /// and hands its output to the next lane for the next step. The cascade's chain of
    /// dependent operations then covers `size` slots per step where one slot at a time
    /// waited on each frame's recurrence. Per frame and slot the arithmetic is
    /// [`step`]'s, and the glide's the same sums in the same order, so the output is the
    /// same bit for bit (tested against the frame-by-frame order on every kernel).
    fn run_wave(&mut self, first: usize, size: usize, channels: usize, n: usize) {
        let mut lanes = [usize::MAX; WAVE];
        lanes[..size].copy_from_slice(&self.run_slots[first..first + size]);
        self.wave_coefs(&lanes[..size], n);
        let slots = self.slots();
        let isa = self.isa;
        for (p, chunk) in self.work[..channels].chunks_mut(2).enumerate() {
            match chunk {
                [w0, w1] => filter_wave(isa, &self.wave_coefs, [w0, w1], &mut self.state, [2 * p * slots, (2 * p + 1) * slots], &lanes, size, n),
                [w0] => filter_wave(isa, &self.wave_coefs, [w0], &mut self.state, [2 * p * slots], &lanes, size, n),
                _ => {}
            }
        }
    }

    /// Writes the wavefront's coefficients for each of its `n + lanes.len() - 1` steps
    /// into `wave_coefs` (lane `j` at step `t` holds slot `lanes[j]`'s for frame `t - j`)
    /// and moves the slots' glides on by `n` frames, as [`SvfCascade::frame_coefs`] does
    /// for one slot.
    fn wave_coefs(&mut self, lanes: &[usize], n: usize) {
        let mut glide = WaveGlide::idle(self.identity);
        for (j, &slot) in lanes.iter().enumerate() {
            let q = self.coefs[slot];
            let at = [q.g, q.k, q.m0, q.m1, q.m2];
            let d = self.derived[slot];
            (glide.fixed[0][j], glide.fixed[1][j], glide.fixed[2][j]) = d;
            for r in 0..5 {
                glide.at[r][j] = at[r];
                glide.target[r][j] = at[r];
            }
            if self.left[slot] == 0 {
                continue;
            }
            let steps = n.min(self.left[slot] - 1);
            let (d, to) = (self.step[slot], self.target[slot]);
            let (d, to) = ([d.g, d.k, d.m0, d.m1, d.m2], [to.g, to.k, to.m0, to.m1, to.m2]);
            for r in 0..5 {
                glide.step[r][j] = d[r];
                glide.target[r][j] = to[r];
            }
            glide.steps[j] = steps as f64;
            glide.gliding[j] = 1.0;
            if steps < n {
                self.left[slot] = 0;
                self.gliding -= 1;
            } else {
                self.left[slot] -= steps;
            }
        }
        wave_glide(self.isa, &mut glide, &mut self.wave_coefs, lanes.len(), n);
        for (j, &slot) in lanes.iter().enumerate() {
            if glide.gliding[j] != 0.0 {
                let at = SvfCoefs { g: glide.at[0][j], k: glide.at[1][j], m0: glide.at[2][j], m1: glide.at[3][j], m2: glide.at[4][j] };
                self.coefs[slot] = at;
                // The last frame's update coefficients: the same operations on the same
                // values as the wavefront's.
                self.derived[slot] = at.update_coefs();
            }
        }
    }

    /// Runs `run_slots[range]` in turn over `n` frames of `work` (or `incoming_work`).
    fn run_range(&mut self, range: (usize, usize), incoming: bool, channels: usize, n: usize) {
        let slots = self.slots();
        for k in range.0..range.1 {
            let slot = self.run_slots[k];
            self.frame_coefs(slot, n);
            let work = if incoming { &mut self.incoming_work[..channels] } else { &mut self.work[..channels] };
            for (p, chunk) in work.chunks_mut(2).enumerate() {
                let at = |c: usize| (2 * p + c) * slots + slot;
                match chunk {
                    [w0, w1] => filter_pair(&self.piece_coefs, [w0, w1], &mut self.state, [at(0), at(1)], n),
                    [w0] => filter(&self.piece_coefs, [w0], &mut self.state, [at(0)], n),
                    _ => {}
                }
            }
        }
    }

    /// Writes slot `slot`'s coefficients for each of the next `n` frames into
    /// `piece_coefs`, its glide moved on by `n` steps (one before each frame, as the
    /// glide is defined: `left - 1` steps of `step`, then the target): first the glide's
    /// values frame by frame, then the update coefficients of all frames at once
    /// (independent of each other, so they vectorise; the same operations as
    /// [`SvfCoefs::update_coefs`]).
    fn frame_coefs(&mut self, slot: usize, n: usize) {
        let c = &mut *self.piece_coefs;
        if self.left[slot] == 0 {
            let (q, d) = (self.coefs[slot], self.derived[slot]);
            for (row, v) in c.a.iter_mut().zip([d.0, d.1, d.2]).chain(c.m.iter_mut().zip([q.m0, q.m1, q.m2])) {
                row[..n].fill(v);
            }
            return;
        }
        let steps = n.min(self.left[slot] - 1);
        let d = self.step[slot];
        // A local copy, so that the glide's sums stay in registers from frame to frame
        // (through `self.coefs` each step was a store and a reload on the sum's chain).
        let mut at = self.coefs[slot];
        for i in 0..steps {
            at.add(&d);
            (c.g[i], c.k[i], c.m[0][i], c.m[1][i], c.m[2][i]) = (at.g, at.k, at.m0, at.m1, at.m2);
        }
        self.left[slot] -= steps;
        if steps < n {
            // The glide's last frame lands on the target exactly.
            self.left[slot] = 0;
            self.gliding -= 1;
            at = self.target[slot];
            for i in steps..n {
                (c.g[i], c.k[i], c.m[0][i], c.m[1][i], c.m[2][i]) = (at.g, at.k, at.m0, at.m1, at.m2);
            }
        }
        self.coefs[slot] = at;
        let [a1, a2, a3] = &mut c.a;
        for i in 0..n {
            let g = c.g[i];
            a1[i] = 1.0 / (1.0 + g * (g + c.k[i]));
            a2[i] = g * a1[i];
            a3[i] = g * a2[i];
        }
        // The last frame's are the slot's coefficients' (`n >= 1`).
        self.derived[slot] = (a1[n - 1], a2[n - 1], a3[n - 1]);
    }

    /// Contains non-finite states; flushes what would linger as subnormals. Only the
    /// running slots' states can hold anything: every other slot's state is cleared when
    /// it stops running (`refresh`, `set_at_rest`, `load_from_tdf2`) and no filtering
    /// touches it.
    fn flush_states(&mut self) {
        let slots = self.slots();
        for ch in 0..self.channels {
            let state = &mut self.state[ch * slots..(ch + 1) * slots];
            for &slot in &self.run_slots {
                flush(&mut state[slot]);
            }
        }
    }
}

/// One frame of one slot: the SVF update of state `s` with update coefficients `a` and
/// the output mix `m` for input `x`. [`filter_pair`] does the same operations in the same
/// order on two channels at once: a change here belongs there too (the piece-wise test
/// compares the two bit for bit).
#[inline(always)]
pub(super) fn step(a: (f64, f64, f64), m: [f64; 3], s: &mut [f64; 2], x: f64) -> f64 {
    let (a1, a2, a3) = a;
    let v3 = x - s[1];
    let v1 = a1 * s[0] + a2 * v3;
    let v2 = s[1] + a2 * s[0] + a3 * v3;
    *s = [2.0 * v1 - s[0], 2.0 * v2 - s[1]];
    m[0] * x + m[1] * v1 + m[2] * v2
}

/// [`step`] with frame `i`'s coefficients of a piece.
#[inline(always)]
fn tick(c: &PieceCoefs, i: usize, s: &mut [f64; 2], x: f64) -> f64 {
    step((c.a[0][i], c.a[1][i], c.a[2][i]), [c.m[0][i], c.m[1][i], c.m[2][i]], s, x)
}

/// Zeroes a non-finite state and what would linger as subnormals.
#[inline]
pub(super) fn flush(s: &mut [f64; 2]) {
    for v in s.iter_mut() {
        if !v.is_finite() || v.abs() < ferrofx::dsp::sos::FLUSH_BELOW {
            *v = 0.0;
        }
    }
}

/// One slot over `n` frames of `M` channels (`states`: their state indices); the
/// channels' recurrences are independent and overlap.
#[inline(always)]
fn filter<const M: usize>(c: &PieceCoefs, mut work: [&mut [f64; PIECE]; M], state: &mut [[f64; 2]], states: [usize; M], n: usize) {
    let mut s: [[f64; 2]; M] = states.map(|at| state[at]);
    for i in 0..n {
        for (w, s) in work.iter_mut().zip(s.iter_mut()) {
            w[i] = tick(c, i, s, w[i]);
        }
    }
    for (at, s) in states.into_iter().zip(s) {
        state[at] = s;
    }
}

/// [`filter`] for two channels with both in one SSE2 vector: [`step`]'s operations in its
/// order on the pair (no fused multiply-add, as in [`step`]), so the output is the same
/// bit for bit with half the arithmetic instructions.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn filter_pair(c: &PieceCoefs, work: [&mut [f64; PIECE]; 2], state: &mut [[f64; 2]], states: [usize; 2], n: usize) {
    use std::arch::x86_64::*;
    let [w0, w1] = work;
    let (p, q) = (state[states[0]], state[states[1]]);
    // SAFETY: SSE2 is part of the x86-64 baseline; these intrinsics only compute on
    // registers (no pointer is read or written).
    unsafe {
        let (mut s0, mut s1) = (_mm_set_pd(q[0], p[0]), _mm_set_pd(q[1], p[1]));
        let two = _mm_set1_pd(2.0);
        for i in 0..n {
            let x = _mm_set_pd(w1[i], w0[i]);
            let (a1, a2, a3) = (_mm_set1_pd(c.a[0][i]), _mm_set1_pd(c.a[1][i]), _mm_set1_pd(c.a[2][i]));
            let (m0, m1, m2) = (_mm_set1_pd(c.m[0][i]), _mm_set1_pd(c.m[1][i]), _mm_set1_pd(c.m[2][i]));
            let v3 = _mm_sub_pd(x, s1);
            let v1 = _mm_add_pd(_mm_mul_pd(a1, s0), _mm_mul_pd(a2, v3));
            let v2 = _mm_add_pd(_mm_add_pd(s1, _mm_mul_pd(a2, s0)), _mm_mul_pd(a3, v3));
            (s0, s1) = (_mm_sub_pd(_mm_mul_pd(two, v1), s0), _mm_sub_pd(_mm_mul_pd(two, v2), s1));
            let y = _mm_add_pd(_mm_add_pd(_mm_mul_pd(m0, x), _mm_mul_pd(m1, v1)), _mm_mul_pd(m2, v2));
            w0[i] = _mm_cvtsd_f64(y);
            w1[i] = _mm_cvtsd_f64(_mm_unpackhi_pd(y, y));
        }
        state[states[0]] = [_mm_cvtsd_f64(s0), _mm_cvtsd_f64(s1)];
        state[states[1]] = [_mm_cvtsd_f64(_mm_unpackhi_pd(s0, s0)), _mm_cvtsd_f64(_mm_unpackhi_pd(s1, s1))];
    }
}

/// Elsewhere the two channels go through the generic [`filter`].
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn filter_pair(c: &PieceCoefs, work: [&mut [f64; PIECE]; 2], state: &mut [[f64; 2]], states: [usize; 2], n: usize) {
    filter(c, work, state, states, n)
}

/// A wavefront's glides for one piece, per lane: where each glide is (`at`: `g, k, m0, m1,
/// m2`), its step, its target, how many of the piece's frames step (`steps`; from then on
/// the target), whether the lane glides at all (1.0) and, where not, its fixed update
/// coefficients. Numbers in float64 lanes so that each step's choices are vector compares.
pub(super) struct WaveGlide {
    at: [[f64; WAVE]; 5],
    step: [[f64; WAVE]; 5],
    target: [[f64; WAVE]; 5],
    steps: [f64; WAVE],
    gliding: [f64; WAVE],
    fixed: [[f64; WAVE]; 3],
}

impl WaveGlide {
    /// Every lane the identity section, not gliding (what unused lanes keep).
    fn idle(identity: SvfCoefs) -> WaveGlide {
        let q = [identity.g, identity.k, identity.m0, identity.m1, identity.m2];
        let (a1, a2, a3) = identity.update_coefs();
        WaveGlide {
            at: q.map(|v| [v; WAVE]),
            step: [[0.0; WAVE]; 5],
            target: q.map(|v| [v; WAVE]),
            steps: [0.0; WAVE],
            gliding: [0.0; WAVE],
            fixed: [[a1; WAVE], [a2; WAVE], [a3; WAVE]],
        }
    }
}

/// [`wave_glide_body`] on the best kernel of `isa`.
#[inline]
fn wave_glide(isa: Isa, glide: &mut WaveGlide, out: &mut WaveCoefs, size: usize, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2")]
        unsafe fn avx512(glide: &mut WaveGlide, out: &mut WaveCoefs, size: usize, n: usize) {
            wave_glide_body(glide, out, size, n)
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(glide: &mut WaveGlide, out: &mut WaveCoefs, size: usize, n: usize) {
            wave_glide_body(glide, out, size, n)
        }
        match isa.or_portable() {
            // SAFETY: `or_portable` returns a kernel this CPU runs (detected at run time).
            Isa::Avx512 => return unsafe { avx512(glide, out, size, n) },
            // SAFETY: as above.
            Isa::Avx2 => return unsafe { avx2(glide, out, size, n) },
            Isa::Portable => {}
        }
    }
    let _ = isa;
    wave_glide_body(glide, out, size, n)
}

/// The glides of a wavefront's lanes through steps `0..n + size - 1`: lane `j` at step
/// `t` is at frame `f = t - j`; frames `0..steps` add the step, frames `steps..n` hold the
/// target (the glide's last frame lands on it exactly), as [`SvfCascade::frame_coefs`]
/// does frame by frame; then the update coefficients of [`SvfCoefs::update_coefs`] (or
/// the fixed ones of a lane that does not glide).
#[inline(always)]
fn wave_glide_body(glide: &mut WaveGlide, out: &mut WaveCoefs, size: usize, n: usize) {
    // Local copies, so that the lanes stay in registers from step to step.
    let (mut at, step, target, steps, gliding, fixed) = (glide.at, glide.step, glide.target, glide.steps, glide.gliding, glide.fixed);
    let n_f = n as f64;
    for (t, row) in out.iter_mut().enumerate().take(n + size - 1) {
        let t_f = t as f64;
        let mut add = [false; WAVE];
        let mut land = [false; WAVE];
        for j in 0..WAVE {
            // `&`, not `&&`: no branch, so the lanes vectorise.
            let f = t_f - j as f64;
            add[j] = (f >= 0.0) & (f < steps[j]);
            land[j] = (f >= steps[j]) & (f < n_f);
        }
        for r in 0..5 {
            for j in 0..WAVE {
                let (now, added, to) = (at[r][j], at[r][j] + step[r][j], target[r][j]);
                let v = if add[j] { added } else { now };
                at[r][j] = if land[j] { to } else { v };
            }
        }
        let mut a = [[0.0f64; WAVE]; 3];
        for j in 0..WAVE {
            let g = at[0][j];
            a[0][j] = 1.0 / (1.0 + g * (g + at[1][j]));
            a[1][j] = g * a[0][j];
            a[2][j] = g * a[1][j];
        }
        for r in 0..3 {
            for j in 0..WAVE {
                row[r][j] = if gliding[j] == 0.0 { fixed[r][j] } else { a[r][j] };
            }
        }
        row[3] = at[2];
        row[4] = at[3];
        row[5] = at[4];
    }
    glide.at = at;
}

/// [`filter_wave_body`] on the best kernel of `isa`, for `M` channels (`bases`: each
/// channel's first state index).
#[allow(clippy::too_many_arguments)]
#[inline]
fn filter_wave<const M: usize>(isa: Isa, c: &WaveCoefs, work: [&mut [f64; PIECE]; M], state: &mut [[f64; 2]], bases: [usize; M], lanes: &[usize; WAVE], size: usize, n: usize) {
    // The group's states into lanes (unused lanes: zero, never written back).
    let mut s = [[[0.0f64; WAVE]; 2]; M];
    for (s, &base) in s.iter_mut().zip(&bases) {
        for (j, &slot) in lanes.iter().enumerate().take(size) {
            [s[0][j], s[1][j]] = state[base + slot];
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<const M: usize>(c: &WaveCoefs, work: [&mut [f64; PIECE]; M], s: &mut [[[f64; WAVE]; 2]; M], size: usize, n: usize) {
            filter_wave_body(c, work, s, size, n)
        }
        match isa.or_portable() {
            // SAFETY: `or_portable` returns a kernel this CPU runs (detected at run time).
            Isa::Avx512 => unsafe { filter_wave_avx512(c, work, &mut s, size, n) },
            // SAFETY: as above.
            Isa::Avx2 => unsafe { avx2(c, work, &mut s, size, n) },
            Isa::Portable => filter_wave_body(c, work, &mut s, size, n),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        filter_wave_body(c, work, &mut s, size, n);
    }
    for (s, &base) in s.iter().zip(&bases) {
        for (j, &slot) in lanes.iter().enumerate().take(size) {
            state[base + slot] = [s[0][j], s[1][j]];
        }
    }
}

/// A wavefront of `size` slots over `n` frames of `M` channels (`s`: per channel, the
/// lanes' `[ic1eq, ic2eq]`): at step `t` lane `j` filters frame `t - j` with [`step`]'s
/// operations in its order, its input the lane before's output of the step before (lane
/// 0: the piece's frame `t`), and keeps its state where that frame is outside the piece
/// (before its first frame, after its last, or an unused lane). Lane `size - 1`'s output
/// is the group's, written back in place (to a frame already read).
#[inline(always)]
fn filter_wave_body<const M: usize>(c: &WaveCoefs, mut work: [&mut [f64; PIECE]; M], states: &mut [[[f64; WAVE]; 2]; M], size: usize, n: usize) {
    // A local copy, so that the states stay in registers from step to step.
    let mut s = *states;
    let mut y = [[0.0f64; WAVE]; M];
    let (n_f, size_f) = (n as f64, size as f64);
    for (t, row) in c.iter().enumerate().take(n + size - 1) {
        let t_f = t as f64;
        let mut active = [false; WAVE];
        for (j, a) in active.iter_mut().enumerate() {
            let j_f = j as f64;
            *a = (j_f <= t_f) & (t_f < n_f + j_f) & (j_f < size_f);
        }
        for ((w, s), y) in work.iter_mut().zip(s.iter_mut()).zip(y.iter_mut()) {
            let mut x = [0.0f64; WAVE];
            x[0] = if t < n { w[t] } else { 0.0 };
            x[1..].copy_from_slice(&y[..WAVE - 1]);
            for j in 0..WAVE {
                let (p, q) = (s[0][j], s[1][j]);
                let v3 = x[j] - q;
                let v1 = row[0][j] * p + row[1][j] * v3;
                let v2 = q + row[1][j] * p + row[2][j] * v3;
                let (p_new, q_new) = (2.0 * v1 - p, 2.0 * v2 - q);
                y[j] = row[3][j] * x[j] + row[4][j] * v1 + row[5][j] * v2;
                s[0][j] = if active[j] { p_new } else { p };
                s[1][j] = if active[j] { q_new } else { q };
            }
            if t + 1 >= size {
                w[t + 1 - size] = y[size - 1];
            }
        }
    }
    *states = s;
}

/// The lanes of a wavefront step that filter a frame of the piece: lane `j` where
/// `0 <= t - j < n` and `j < size`, as a bit mask.
#[inline(always)]
fn active_lanes(t: usize, size: usize, n: usize) -> u8 {
    let first = (t + 1).saturating_sub(n);
    let last = t.min(size - 1);
    (((1u32 << (last + 1)) - 1) & !((1u32 << first) - 1)) as u8
}

/// [`filter_wave_body`] in one AVX-512 vector per channel: the lane shift one `valignq`,
/// the kept states a masked subtraction; the same operations in the same order, so the
/// same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2")]
unsafe fn filter_wave_avx512<const M: usize>(c: &WaveCoefs, work: [&mut [f64; PIECE]; M], states: &mut [[[f64; WAVE]; 2]; M], size: usize, n: usize) {
    use std::arch::x86_64::*;
    // SAFETY (every block below): the loads and stores are of whole `[f64; 8]` arrays
    // through their own pointers; the rest computes on registers.
    let mut s0: [__m512d; M] = std::array::from_fn(|ch| unsafe { _mm512_loadu_pd(states[ch][0].as_ptr()) });
    let mut s1: [__m512d; M] = std::array::from_fn(|ch| unsafe { _mm512_loadu_pd(states[ch][1].as_ptr()) });
    let mut y = [_mm512_setzero_pd(); M];
    let two = _mm512_set1_pd(2.0);
    let out_lane = _mm512_set1_epi64(size as i64 - 1);
    for (t, row) in c.iter().enumerate().take(n + size - 1) {
        let active = active_lanes(t, size, n);
        let [a1, a2, a3, m0, m1, m2] = row.each_ref().map(|r| unsafe { _mm512_loadu_pd(r.as_ptr()) });
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
}
