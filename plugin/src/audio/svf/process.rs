//! [`SvfCascade::process_at`]: the filtering, in pieces of [`PIECE`] frames, each slot
//! over the whole piece before the next (on AVX2 and AVX-512, the slots of bands that do
//! not cross-fade eight at a time instead, as wavefronts: `wave.rs`). No allocation.

use super::SvfCascade;

/// Frames filtered at a time: each slot runs the whole piece before the next slot (see
/// [`SvfCascade::process_at`]).
pub(super) const PIECE: usize = 32;

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

    /// Runs `run_slots[range]` in turn over `n` frames of `work`: where the CPU has a
    /// wavefront kernel, in wavefronts of up to eight slots (`wave.rs`), a single slot
    /// left over on its own; elsewhere a slot at a time.
    fn run_stretch(&mut self, range: (usize, usize), channels: usize, n: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(kernel) = self.wave_kernel {
            let mut first = range.0;
            while first < range.1 {
                let size = (range.1 - first).min(super::wave::WAVE);
                if size == 1 {
                    self.run_range((first, first + 1), false, channels, n);
                } else {
                    self.run_wave(kernel, first, size, channels, n);
                }
                first += size;
            }
            return;
        }
        self.run_range(range, false, channels, n);
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
