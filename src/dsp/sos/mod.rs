//! Realtime cascade of second-order sections for many channels.
//!
//! # Structure and precision (chosen by measurement)
//!
//! Each section runs in **transposed direct form II with `f64` coefficients and `f64`
//! state**; audio enters and leaves as `f32`, and a sample stays in `f64` through the
//! whole cascade (no rounding between sections).
//!
//! Measured on the 67 IIR and biquad cases of the shared SciPy reference set
//! (`cargo run --release --example structure_survey`; table in `docs/structures.md`):
//! plain `f32` TDF-II misses the 1e-4 tolerance on 25 cases (worst 8.4e-2, nearly all
//! `lowfreq`: with poles crowding `z = 1` the `f32` coefficients move the poles and the
//! `f32` state loses the small differences the filter lives on); `f32` direct form I is
//! no better (25, worst 8.6e-2); `f64` coefficients with an `f32` state still miss 7
//! (worst 2.3e-3). `f64` TDF-II misses none: worst 9.2e-8, the float32 rounding of input
//! and output, independent of section order and block size. The price is SIMD width
//! (4 `f64` lanes per AVX2 register instead of 8 `f32`), which the layout below is
//! designed to win back across channels.
//!
//! # Data layout and SIMD
//!
//! Channels are processed in groups of `L` SIMD lanes (8 with AVX-512, 4 with AVX2 or
//! the portable build), `L` channels per `f64` vector: one section update is five fused
//! multiply-adds on whole vectors. Audio moves through an interleaved `f64` scratch of
//! [`SUB_BLOCK`] frames (16 KiB, in L1); the cascade runs over it in chunks of up to 4
//! sections (8 for one channel with AVX-512) whose state lives in registers for the whole sub-block, so the sample loop
//! touches no state memory. The instruction set is detected at run time (portable
//! binaries: SSE2 baseline, AVX2+FMA and AVX-512 kernels selected when the CPU has them).
//!
//! # Realtime rules
//!
//! [`SosCascade::new`] is the only place memory is allocated. [`SosCascade::process`],
//! [`SosCascade::set_coefficients`] and [`SosCascade::reset`] never allocate, lock,
//! log or panic.
//!
//! # Non-finite values and subnormals
//!
//! Input sanitising is the engine's job (see `engine`). Here, at the end of every
//! `process` call, a lane whose state became non-finite (a finite but huge input can
//! overflow an unstable-looking transient) is reset to zero, and subnormal state values
//! (below [`FLUSH_BELOW`]) are flushed to zero, so a decaying state never lingers in the
//! subnormal range (where a pole close to 1 can otherwise hold it forever, slowly).

use crate::design::Sos;

/// Frames per pass through the scratch.
pub const SUB_BLOCK: usize = 256;
/// The widest SIMD group (AVX-512: 8 `f64` lanes).
pub const MAX_LANES: usize = 8;

/// State magnitudes below this are set to zero at the end of each block: the smallest
/// normal `f64`, so only what is subnormal at the precision the state is kept in goes
/// (subnormal arithmetic is what costs). An absolute threshold any higher would assume
/// unit gain per section: SciPy puts the whole gain of a high-order low-cutoff design
/// into its first section (b ~ 1e-39), whose state then lives far below 1e-30 while the
/// signal it carries is full scale after the later sections.
pub const FLUSH_BELOW: f64 = f64::MIN_POSITIVE;

/// One section normalised to `a0 = 1`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SosCoefs {
    pub b0: f64,
    pub b1: f64,
    pub b2: f64,
    pub a1: f64,
    pub a2: f64,
}

impl SosCoefs {
    /// Complex response at normalised angular frequency `omega` (radians per sample).
    pub fn response(&self, omega: f64) -> num_complex::Complex64 {
        Sos { b: [self.b0, self.b1, self.b2], a: [1.0, self.a1, self.a2] }.response(omega)
    }
}

impl From<&Sos> for SosCoefs {
    fn from(s: &Sos) -> Self {
        let n = s.normalized();
        SosCoefs { b0: n.b[0], b1: n.b[1], b2: n.b[2], a1: n.a[1], a2: n.a[2] }
    }
}

/// Returned when new coefficients do not have the shape the cascade was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the cascade has {expected} sections, the new design has {found}")]
pub struct SectionCountMismatch {
    pub expected: usize,
    pub found: usize,
}

pub use crate::dsp::simd::Isa;

/// The instruction set the cascade kernel runs with on this machine.
pub fn simd_level() -> &'static str {
    Isa::detect().name()
}

/// Returned when more sections are asked for than a cascade was built to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the cascade holds at most {capacity} sections, {requested} were asked for")]
pub struct CapacityExceeded {
    pub capacity: usize,
    pub requested: usize,
}

/// A cascade of second-order sections over a fixed number of channels.
#[derive(Clone, Debug)]
pub struct SosCascade {
    coefs: Vec<SosCoefs>,
    /// `[channel][section]` -> `[s1, s2]`.
    state: Vec<[f64; 2]>,
    channels: usize,
    /// `SUB_BLOCK * MAX_LANES` interleaved `f64` frames.
    scratch: Vec<f64>,
    isa: Isa,
    /// Most sections `coefs` and `state` have room for.
    capacity: usize,
}

impl SosCascade {
    /// Builds the cascade and allocates its state (zero) with the best kernel for this CPU.
    pub fn new(sections: &[Sos], channels: usize) -> SosCascade {
        SosCascade::with_isa(sections, channels, Isa::detect())
    }

    /// Builds the cascade with a given kernel (falls back to the portable one if this CPU
    /// lacks the instructions). For tests and benchmarks.
    pub fn with_isa(sections: &[Sos], channels: usize, isa: Isa) -> SosCascade {
        let mut c = SosCascade::with_capacity(sections.len(), channels, isa);
        // Within capacity by construction.
        let _ = c.set_sections(sections);
        c
    }

    /// An empty cascade with room for `capacity` sections, so that
    /// [`SosCascade::set_sections`] can later change the section count without
    /// allocating (a plugin band switching from a 12 dB/oct to a 96 dB/oct cut).
    pub fn with_capacity(capacity: usize, channels: usize, isa: Isa) -> SosCascade {
        SosCascade {
            coefs: Vec::with_capacity(capacity),
            state: vec![[0.0; 2]; channels * capacity],
            channels,
            scratch: vec![0.0; SUB_BLOCK * MAX_LANES],
            isa: isa.or_portable(),
            capacity,
        }
    }

    /// Most sections this cascade can run without allocating.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Replaces the coefficients with any number of sections up to the capacity. Section
    /// `k` keeps its state if it existed before; new sections start from zero. No
    /// allocation. When sections change shape (a cut going from 4 to 6 sections), the
    /// kept states belong to different poles: the output stays finite but may jump, so a
    /// caller that must be click-free crossfades topology changes.
    pub fn set_sections(&mut self, sections: &[Sos]) -> Result<(), CapacityExceeded> {
        if sections.len() > self.capacity {
            return Err(CapacityExceeded { capacity: self.capacity, requested: sections.len() });
        }
        let (old, new) = (self.coefs.len(), sections.len());
        // Re-lay the state `[channel][section]` from stride `old` to stride `new` in place.
        if new > old {
            for c in (0..self.channels).rev() {
                for k in (0..new).rev() {
                    self.state[c * new + k] = if k < old { self.state[c * old + k] } else { [0.0; 2] };
                }
            }
        } else if new < old {
            for c in 0..self.channels {
                for k in 0..new {
                    self.state[c * new + k] = self.state[c * old + k];
                }
            }
            self.state[self.channels * new..].fill([0.0; 2]);
        }
        self.coefs.clear();
        self.coefs.extend(sections.iter().map(SosCoefs::from));
        Ok(())
    }

    /// The kernel in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    pub fn sections(&self) -> usize {
        self.coefs.len()
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The coefficients the cascade runs (normalised to `a0 = 1`).
    pub fn coefficients(&self) -> &[SosCoefs] {
        &self.coefs
    }

    /// Replaces the coefficients, keeping the state. No allocation.
    pub fn set_coefficients(&mut self, sections: &[Sos]) -> Result<(), SectionCountMismatch> {
        if sections.len() != self.coefs.len() {
            return Err(SectionCountMismatch { expected: self.coefs.len(), found: sections.len() });
        }
        // The same count is within capacity and keeps every section's state.
        let _ = self.set_sections(sections);
        Ok(())
    }

    /// Clears the state of every channel.
    pub fn reset(&mut self) {
        self.state.fill([0.0; 2]);
    }

    /// The filter state, `[channel][section]` -> `[s1, s2]` (for handing a stream between
    /// processors, e.g. to a GPU job and back).
    pub fn state(&self) -> &[[f64; 2]] {
        &self.state[..self.channels * self.coefs.len()]
    }

    /// Loads a state saved by [`SosCascade::state`] from a cascade of the same shape. No
    /// allocation; a state of the wrong length is refused and nothing changes.
    pub fn set_state(&mut self, state: &[[f64; 2]]) -> Result<(), SectionCountMismatch> {
        let n = self.channels * self.coefs.len();
        if state.len() != n {
            return Err(SectionCountMismatch { expected: n, found: state.len() });
        }
        self.state[..n].copy_from_slice(state);
        Ok(())
    }

    /// Filters `frames` samples of each channel in place. Channels beyond the cascade's
    /// channel count are left untouched; so are samples beyond a shorter buffer's end
    /// (the call processes `min(frames, shortest buffer)` samples).
    pub fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        self.process_at(buffers, 0, frames);
    }

    /// [`SosCascade::process`] on `frames` samples starting at `offset` in every buffer
    /// (lets a caller slice a host block into sub-blocks without building new slice lists).
    pub fn process_at(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        if self.coefs.is_empty() {
            return;
        }
        let used = buffers.len().min(self.channels);
        let end = buffers[..used].iter().map(|b| b.len()).min().unwrap_or(0).min(offset.saturating_add(frames));
        if end <= offset {
            return;
        }
        let buffers = &mut buffers[..used];
        let active = self.channels * self.coefs.len();
        let (coefs, state, scratch) = (&self.coefs[..], &mut self.state[..active], &mut self.scratch[..]);
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_isa` only keeps `Avx512` when the CPU reports AVX-512F/VL and FMA.
            Isa::Avx512 => unsafe { kernels::process_avx512(coefs, state, scratch, buffers, offset, end) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `with_isa` only keeps `Avx2` when the CPU reports AVX2 and FMA.
            Isa::Avx2 => unsafe { kernels::process_avx2(coefs, state, scratch, buffers, offset, end) },
            _ => kernels::process_portable(coefs, state, scratch, buffers, offset, end),
        }
        let sections = self.coefs.len();
        for ch in self.state.chunks_exact_mut(sections).take(used) {
            sanitize_state(ch);
        }
    }
}

/// Resets a channel whose state became non-finite and flushes tiny state values to zero.
pub(crate) fn sanitize_state(state: &mut [[f64; 2]]) {
    if state.iter().flatten().any(|v| !v.is_finite()) {
        state.fill([0.0; 2]);
    }
    for v in state.iter_mut().flatten() {
        if v.abs() < FLUSH_BELOW {
            *v = 0.0;
        }
    }
}

mod kernels {
    //! The cascade kernel, generic over lanes `L`, sections per register-resident chunk
    //! `M` and the multiply-add flavour, instantiated per instruction set.
    use super::{SosCoefs, SUB_BLOCK};
    #[cfg(target_arch = "x86_64")]
    use crate::dsp::simd::Fused;
    use crate::dsp::simd::{MulAdd, PortableMulAdd};

    /// One section on one frame of `L` lanes (transposed direct form II).
    #[inline(always)]
    fn step<const L: usize, A: MulAdd>(c: &SosCoefs, s1: &mut [f64; L], s2: &mut [f64; L], v: &[f64; L]) -> [f64; L] {
        let mut y = [0.0f64; L];
        for l in 0..L {
            // Terms without `y` first, so each state update is one multiply-add after
            // `y`: the recurrence y -> s1 -> y is two FMA latencies long.
            let p1 = A::f64(c.b1, v[l], s2[l]);
            let p2 = c.b2 * v[l];
            y[l] = A::f64(c.b0, v[l], s1[l]);
            s1[l] = A::f64(-c.a1, y[l], p1);
            s2[l] = A::f64(-c.a2, y[l], p2);
        }
        y
    }

    /// Runs `N` sections over the sub-block `data` with their state in registers.
    ///
    /// With AVX2/AVX-512 and a full vector of channel lanes, or with AVX-512 and one or
    /// two channels (sections in lanes), the chunk runs as a time-skewed wavefront in
    /// explicit vectors ([`wave_chunk`]): the sections of one iteration are independent,
    /// so the loop is throughput-bound instead of latency-bound (measured 1.3-2x faster
    /// at 8 and 12 channels, 1.4-2.3x at one and two). Otherwise sample-outer,
    /// section-inner: a frame stays in registers through all `N` sections.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the state addressing of one chunk; inlined
    fn run_chunk<const L: usize, const N: usize, A: MulAdd>(
        wave: Wave,
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        first_channel: usize,
        lanes: usize,
        first_section: usize,
        sections: usize,
        data: &mut [[f64; L]],
    ) {
        let mut c = [SosCoefs::default(); N];
        c.copy_from_slice(&coefs[..N]);
        let mut s1 = [[0.0f64; L]; N];
        let mut s2 = [[0.0f64; L]; N];
        for l in 0..lanes {
            let st = &state[(first_channel + l) * sections + first_section..][..N];
            for k in 0..N {
                s1[k][l] = st[k][0];
                s2[k][l] = st[k][1];
            }
        }
        if !wave_chunk::<L, N>(wave, &c, &mut s1, &mut s2, data) {
            for x in data.iter_mut() {
                let mut v = *x;
                for k in 0..N {
                    v = step::<L, A>(&c[k], &mut s1[k], &mut s2[k], &v);
                }
                *x = v;
            }
        }
        for l in 0..lanes {
            let st = &mut state[(first_channel + l) * sections + first_section..][..N];
            for k in 0..N {
                st[k] = [s1[k][l], s2[k][l]];
            }
        }
    }

    /// One or two channels with AVX-512: the sections go in the vector's lanes instead
    /// (lane `k * C + ch` is section `k` of channel `ch`), time-skewed by two frames per
    /// section: in iteration `t`, section `k` works on frame `t - 2k`, so its input is
    /// the previous section's output of *two* iterations ago (a lane permute of a saved
    /// vector) and the permute is off the loop's critical path, which is then only each
    /// section's own recurrence (`y -> s1 -> y`, two FMA latencies); with a skew of one
    /// the permute and blend sat on it (measured 1.4x slower). `N` sections cost one
    /// vector update per frame; the arithmetic is the same five operations in the same
    /// order as every other kernel, so the results are bit-identical. `C * N <= 8`.
    #[cfg(target_arch = "x86_64")]
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

    /// Which explicit-vector wavefront kernel the caller's instruction set allows.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum Wave {
        None,
        #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
        Avx2,
        #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
        Avx512,
    }

    /// Runs the chunk with the wavefront kernel when one fits this lane count; false
    /// when the caller must run the sample-outer loop instead (always off x86-64, which
    /// has no explicit-vector kernels).
    #[inline(always)]
    fn wave_chunk<const L: usize, const N: usize>(
        wave: Wave,
        c: &[SosCoefs; N],
        s1: &mut [[f64; L]; N],
        s2: &mut [[f64; L]; N],
        data: &mut [[f64; L]],
    ) -> bool {
        #[cfg(not(target_arch = "x86_64"))]
        let ran = {
            let _ = (wave, c, s1, s2, data);
            false
        };
        #[cfg(target_arch = "x86_64")]
        let ran = {
            macro_rules! run_wave {
                ($lanes:literal, $($kernel:tt)+) => {{
                    let mut a = [[0.0f64; $lanes]; N];
                    let mut b = [[0.0f64; $lanes]; N];
                    for k in 0..N {
                        a[k].copy_from_slice(&s1[k]);
                        b[k].copy_from_slice(&s2[k]);
                    }
                    let (frames, _) = data.as_flattened_mut().as_chunks_mut::<$lanes>();
                    // SAFETY: `Wave::Avx512`/`Wave::Avx2` are only passed by the
                    // `#[target_feature]` entry points, reached after run-time detection.
                    unsafe { $($kernel)+(c, &mut a, &mut b, frames) };
                    for k in 0..N {
                        s1[k].copy_from_slice(&a[k]);
                        s2[k].copy_from_slice(&b[k]);
                    }
                    true
                }};
            }
            match (wave, L) {
                (Wave::Avx512, 1) if N <= 8 => run_wave!(1, section_lanes_avx512::<1, N>),
                (Wave::Avx512, 2) if N <= 4 => run_wave!(2, section_lanes_avx512::<2, N>),
                (Wave::Avx512, 8) => run_wave!(8, wavefront_avx512::<N>),
                (Wave::Avx512 | Wave::Avx2, 4) => run_wave!(4, wavefront_avx2::<N>),
                _ => false,
            }
        };
        ran
    }

    /// One iteration of the time-skewed schedule (section `k` on frame `t - S k`, in
    /// place) while the pipeline fills or drains: only the sections with a frame.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn masked_iteration<const L: usize, const N: usize, const S: usize, A: MulAdd>(
        c: &[SosCoefs; N],
        s1: &mut [[f64; L]; N],
        s2: &mut [[f64; L]; N],
        data: &mut [[f64; L]],
        t: usize,
    ) {
        let n = data.len();
        for k in 0..N {
            if S * k <= t && t - S * k < n {
                let f = t - S * k;
                data[f] = step::<L, A>(&c[k], &mut s1[k], &mut s2[k], &data[f]);
            }
        }
    }

    /// The time-skewed cascade with explicit vectors: in iteration `t`, section `k`
    /// works on frame `t - k`, so the `N` section updates of one iteration are
    /// independent; frames move from section to section in registers. Generated for
    /// AVX-512 (8 lanes) and AVX2 (4 lanes).
    macro_rules! wavefront {
        ($name:ident, $lanes:literal, $vec:ty, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $fnmadd:ident, $mul:ident, $zero:ident, $feat:literal) => {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = $feat)]
            pub(super) fn $name<const N: usize>(
                c: &[SosCoefs; N],
                s1: &mut [[f64; $lanes]; N],
                s2: &mut [[f64; $lanes]; N],
                data: &mut [[f64; $lanes]],
            ) {
                use std::arch::x86_64::*;
                let n = data.len();
                if n < N {
                    for t in 0..n + N - 1 {
                        masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
                    }
                    return;
                }
                for t in 0..N - 1 {
                    masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
                }
                // SAFETY: the pointers come from `[f64; LANES]` arrays of exactly one
                // vector's width (unaligned loads and stores); the target features are
                // enabled on this function, which is only called after detection.
                unsafe {
                    let mut s1v: [$vec; N] = [$zero(); N];
                    let mut s2v: [$vec; N] = [$zero(); N];
                    let mut v: [$vec; N] = [$zero(); N];
                    for k in 0..N {
                        s1v[k] = $load(s1[k].as_ptr());
                        s2v[k] = $load(s2[k].as_ptr());
                        if k > 0 {
                            // Frame N-1-k has been through sections 0..k in the prologue.
                            v[k] = $load(data[N - 1 - k].as_ptr());
                        }
                    }
                    for t in N - 1..n {
                        v[0] = $load(data[t].as_ptr());
                        let mut y: [$vec; N] = [$zero(); N];
                        for k in 0..N {
                            let ck = &c[k];
                            let p1 = $fmadd($set1(ck.b1), v[k], s2v[k]);
                            let p2 = $mul($set1(ck.b2), v[k]);
                            let yk = $fmadd($set1(ck.b0), v[k], s1v[k]);
                            s1v[k] = $fnmadd($set1(ck.a1), yk, p1);
                            s2v[k] = $fnmadd($set1(ck.a2), yk, p2);
                            y[k] = yk;
                        }
                        $store(data[t + 1 - N].as_mut_ptr(), y[N - 1]);
                        for k in (1..N).rev() {
                            v[k] = y[k - 1];
                        }
                    }
                    // Frames still in flight go back in place for the draining iterations.
                    for k in 1..N {
                        $store(data[n - k].as_mut_ptr(), v[k]);
                    }
                    for k in 0..N {
                        $store(s1[k].as_mut_ptr(), s1v[k]);
                        $store(s2[k].as_mut_ptr(), s2v[k]);
                    }
                }
                for t in n..n + N - 1 {
                    masked_iteration::<$lanes, N, 1, Fused>(c, s1, s2, data, t);
                }
            }
        };
    }
    wavefront!(wavefront_avx512, 8, __m512d, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_fnmadd_pd, _mm512_mul_pd, _mm512_setzero_pd, "avx512f,avx512vl,fma");
    wavefront!(wavefront_avx2, 4, __m256d, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_fnmadd_pd, _mm256_mul_pd, _mm256_setzero_pd, "avx2,fma");

    /// Planar `f32` channels (frames `t0..t0 + data.len()`) into interleaved `f64` frames;
    /// missing lanes are zero. Full groups of 8 (AVX-512) or 4 (AVX2) channels use the
    /// explicit in-register transposes below (the compiler leaves this transposition
    /// scalar: it cost more than four sections of the cascade itself at 8 channels);
    /// otherwise tiles of 8 frames.
    #[inline(always)]
    fn gather<const L: usize>(wave: Wave, bufs: &[&mut [f32]], t0: usize, data: &mut [[f64; L]]) {
        let done = match (wave, L, bufs.len() == L) {
            #[cfg(target_arch = "x86_64")]
            (Wave::Avx512, 8, true) => {
                let (tiles, _) = data.as_flattened_mut().as_chunks_mut::<8>();
                // SAFETY: `Wave::Avx512` is only passed after AVX-512F/VL detection; every
                // buffer holds at least `t0 + data.len()` samples (the caller's `end`).
                unsafe { transpose_avx512::gather(bufs, t0, tiles) }
            }
            #[cfg(target_arch = "x86_64")]
            (Wave::Avx512 | Wave::Avx2, 4, true) => {
                let (tiles, _) = data.as_flattened_mut().as_chunks_mut::<4>();
                // SAFETY: both waves are only passed after AVX (AVX2) detection; every
                // buffer holds at least `t0 + data.len()` samples.
                unsafe { transpose_avx::gather(bufs, t0, tiles) }
            }
            _ => 0,
        };
        let n = data.len();
        let lanes = bufs.len();
        let mut tiles = data[done..].chunks_exact_mut(8);
        let mut t = t0 + done;
        for tile in &mut tiles {
            let mut src = [[0.0f32; 8]; L];
            for l in 0..lanes {
                src[l].copy_from_slice(&bufs[l][t..t + 8]);
            }
            for (i, frame) in tile.iter_mut().enumerate() {
                for l in 0..L {
                    frame[l] = f64::from(src[l][i]);
                }
            }
            t += 8;
        }
        let rest = t0 + n - tiles.into_remainder().len();
        for (i, frame) in data[rest - t0..].iter_mut().enumerate() {
            *frame = [0.0; L];
            for l in 0..lanes {
                frame[l] = f64::from(bufs[l][rest + i]);
            }
        }
    }

    /// The inverse of [`gather`] for the channels present.
    #[inline(always)]
    fn scatter<const L: usize>(wave: Wave, data: &[[f64; L]], bufs: &mut [&mut [f32]], t0: usize) {
        let done = match (wave, L, bufs.len() == L) {
            #[cfg(target_arch = "x86_64")]
            (Wave::Avx512, 8, true) => {
                let (tiles, _) = data.as_flattened().as_chunks::<8>();
                // SAFETY: as in `gather`.
                unsafe { transpose_avx512::scatter(tiles, bufs, t0) }
            }
            #[cfg(target_arch = "x86_64")]
            (Wave::Avx512 | Wave::Avx2, 4, true) => {
                let (tiles, _) = data.as_flattened().as_chunks::<4>();
                // SAFETY: as in `gather`.
                unsafe { transpose_avx::scatter(tiles, bufs, t0) }
            }
            _ => 0,
        };
        let n = data.len();
        let lanes = bufs.len();
        let mut tiles = data[done..].chunks_exact(8);
        let mut t = t0 + done;
        for tile in &mut tiles {
            let mut dst = [[0.0f32; 8]; L];
            for (i, frame) in tile.iter().enumerate() {
                for l in 0..L {
                    dst[l][i] = frame[l] as f32;
                }
            }
            for l in 0..lanes {
                bufs[l][t..t + 8].copy_from_slice(&dst[l]);
            }
            t += 8;
        }
        let rest = t0 + n - tiles.remainder().len();
        for (i, frame) in data[rest - t0..].iter().enumerate() {
            for l in 0..lanes {
                bufs[l][rest + i] = frame[l] as f32;
            }
        }
    }

    /// The tile loops around an in-register transpose: `gather` fills whole tiles of
    /// `frames` (`L` channels x `L` frames) from `bufs[..L][t0..]`, `scatter` is its inverse;
    /// both return the frames moved (a multiple of `L`). Safety for both: the module's
    /// target features present, `L` buffers of at least `t0 + frames.len()` samples.
    /// `f32 -> f64` is exact and `f64 -> f32` rounds to nearest like `as f32`, so the
    /// result is bit-identical to the scalar loops.
    #[cfg(target_arch = "x86_64")]
    macro_rules! transpose_io {
        ($lanes:literal, $feat:literal, $vd:ty, $zero:ident, $ld_ps:ident, $st_ps:ident, $ld_pd:ident, $st_pd:ident, $widen:ident, $narrow:ident) => {
            #[target_feature(enable = $feat)]
            pub(super) unsafe fn gather(bufs: &[&mut [f32]], t0: usize, frames: &mut [[f64; $lanes]]) -> usize {
                let tiles = frames.len() / $lanes;
                for tile in 0..tiles {
                    let t = t0 + tile * $lanes;
                    let mut r: [$vd; $lanes] = [$zero(); $lanes];
                    for (l, row) in r.iter_mut().enumerate() {
                        let src = &bufs[l][t..t + $lanes];
                        // SAFETY: `src` holds exactly one vector of `f32` (bounds-checked).
                        *row = $widen(unsafe { $ld_ps(src.as_ptr()) });
                    }
                    // SAFETY: register-only; the target features are enabled here.
                    let f = unsafe { transpose(r) };
                    for (i, v) in f.into_iter().enumerate() {
                        // SAFETY: `frames[..]` is one `[f64; L]` (bounds-checked).
                        unsafe { $st_pd(frames[tile * $lanes + i].as_mut_ptr(), v) };
                    }
                }
                tiles * $lanes
            }

            #[target_feature(enable = $feat)]
            pub(super) unsafe fn scatter(frames: &[[f64; $lanes]], bufs: &mut [&mut [f32]], t0: usize) -> usize {
                let tiles = frames.len() / $lanes;
                for tile in 0..tiles {
                    let t = t0 + tile * $lanes;
                    let mut f: [$vd; $lanes] = [$zero(); $lanes];
                    for (i, v) in f.iter_mut().enumerate() {
                        // SAFETY: `frames[..]` is one `[f64; L]` (bounds-checked).
                        *v = unsafe { $ld_pd(frames[tile * $lanes + i].as_ptr()) };
                    }
                    // SAFETY: register-only; the target features are enabled here.
                    let r = unsafe { transpose(f) };
                    for (l, row) in r.into_iter().enumerate() {
                        let dst = &mut bufs[l][t..t + $lanes];
                        // SAFETY: `dst` holds exactly one vector of `f32` (bounds-checked).
                        unsafe { $st_ps(dst.as_mut_ptr(), $narrow(row)) };
                    }
                }
                tiles * $lanes
            }
        };
    }

    /// 8 channels x 8 frames with AVX-512: 8 conversions and 24 shuffles per tile
    /// (unpack, two-source permute, 128-bit lane shuffle).
    #[cfg(target_arch = "x86_64")]
    mod transpose_avx512 {
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

    /// 4 channels x 4 frames with AVX (the 4-lane groups): 4 conversions and 8 shuffles
    /// per tile.
    #[cfg(target_arch = "x86_64")]
    mod transpose_avx {
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

    /// One group of up to `L` channels starting at `first_channel`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // one channel group's view of the cascade; inlined
    fn process_group<const L: usize, const M: usize, A: MulAdd>(
        wave: Wave,
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        scratch: &mut [f64],
        bufs: &mut [&mut [f32]],
        first_channel: usize,
        start: usize,
        end: usize,
    ) {
        let sections = coefs.len();
        let lanes = bufs.len();
        let (data_all, _) = scratch[..SUB_BLOCK * L].as_chunks_mut::<L>();
        let mut t0 = start;
        while t0 < end {
            let n = (end - t0).min(SUB_BLOCK);
            let data = &mut data_all[..n];
            gather(wave, bufs, t0, data);
            // Sections per register-resident chunk. One channel in section lanes takes
            // up to `M` (eight with AVX-512: one vector); two channels in section lanes
            // take four per vector; the channel-lane wavefronts also run four at a time:
            // with eight, the 8-lane loop's state, frame and coefficient vectors exceed
            // the 32 registers, coefficients are reloaded and values copied every frame
            // (`examples/sos_probe.rs`, 8 and 12 channels: 1.15-1.3x slower at 8 to 15
            // sections). The arithmetic per section is the same either way.
            let m = if L == 1 { M } else { M.min(4) };
            for (ci, chunk) in coefs.chunks(m).enumerate() {
                let first_section = ci * m;
                macro_rules! run {
                    ($($n:literal)*) => {
                        match chunk.len() {
                            $($n => run_chunk::<L, $n, A>(wave, chunk, state, first_channel, lanes, first_section, sections, data),)*
                            _ => {}
                        }
                    };
                }
                run!(1 2 3 4 5 6 7 8);
            }
            scatter(wave, data, bufs, t0);
            t0 += n;
        }
    }

    /// All channels in groups of up to `LMAX`. A group narrower than `LMAX` (one or two
    /// channels, the last group of twelve) runs with the narrowest vector that holds it:
    /// the cascade is latency-bound, so narrow vectors cost the same per frame and save
    /// the conversion of empty lanes.
    #[inline(always)]
    pub fn process_all<const LMAX: usize, const M: usize, A: MulAdd>(
        wave: Wave,
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        scratch: &mut [f64],
        buffers: &mut [&mut [f32]],
        start: usize,
        end: usize,
    ) {
        for (g, bufs) in buffers.chunks_mut(LMAX).enumerate() {
            let first = g * LMAX;
            match bufs.len() {
                1 => process_group::<1, M, A>(wave, coefs, state, scratch, bufs, first, start, end),
                2 => process_group::<2, M, A>(wave, coefs, state, scratch, bufs, first, start, end),
                3 | 4 => process_group::<4, M, A>(wave, coefs, state, scratch, bufs, first, start, end),
                _ => process_group::<LMAX, M, A>(wave, coefs, state, scratch, bufs, first, start, end),
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,fma")]
    pub fn process_avx512(
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        scratch: &mut [f64],
        buffers: &mut [&mut [f32]],
        start: usize,
        end: usize,
    ) {
        process_all::<8, 8, Fused>(Wave::Avx512, coefs, state, scratch, buffers, start, end)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub fn process_avx2(
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        scratch: &mut [f64],
        buffers: &mut [&mut [f32]],
        start: usize,
        end: usize,
    ) {
        process_all::<4, 4, Fused>(Wave::Avx2, coefs, state, scratch, buffers, start, end)
    }

    pub fn process_portable(
        coefs: &[SosCoefs],
        state: &mut [[f64; 2]],
        scratch: &mut [f64],
        buffers: &mut [&mut [f32]],
        start: usize,
        end: usize,
    ) {
        process_all::<4, 4, PortableMulAdd>(Wave::None, coefs, state, scratch, buffers, start, end)
    }
}
