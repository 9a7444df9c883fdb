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
//! # Data layout
//!
//! Channels are processed in groups of [`LANES`]; the state of a group is stored as
//! `[section][s1/s2][lane]`, so one section update is a handful of `f64x4` operations
//! on contiguous memory and compiles to SIMD across channels without intrinsics.
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
//! overflow an unstable-looking transient) is reset to zero, and state magnitudes below
//! [`FLUSH_BELOW`] are flushed to zero, so a decaying state never lingers in the
//! subnormal range (where a pole close to 1 can otherwise hold it forever, slowly).

use crate::design::Sos;

/// Channels per SIMD group.
pub const LANES: usize = 4;

/// State magnitudes below this are set to zero at the end of each block (about -600 dB:
/// far below anything a float32 output can carry relative to a signal).
pub const FLUSH_BELOW: f64 = 1e-30;

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

/// A cascade of second-order sections over a fixed number of channels.
#[derive(Clone, Debug)]
pub struct SosCascade {
    coefs: Vec<SosCoefs>,
    /// `groups * sections * 2` lane vectors: `[group][section][s1, s2]`.
    state: Vec<[f64; LANES]>,
    channels: usize,
}

impl SosCascade {
    /// Builds the cascade and allocates its state (zero).
    pub fn new(sections: &[Sos], channels: usize) -> SosCascade {
        let groups = channels.div_ceil(LANES);
        SosCascade {
            coefs: sections.iter().map(SosCoefs::from).collect(),
            state: vec![[0.0; LANES]; groups * sections.len() * 2],
            channels,
        }
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
        for (c, s) in self.coefs.iter_mut().zip(sections) {
            *c = SosCoefs::from(s);
        }
        Ok(())
    }

    /// Clears the state of every channel.
    pub fn reset(&mut self) {
        self.state.fill([0.0; LANES]);
    }

    /// Filters `frames` samples of each channel in place. Channels beyond the cascade's
    /// channel count are left untouched; so are samples beyond a shorter buffer's end
    /// (the call processes `min(frames, shortest buffer)` samples).
    pub fn process(&mut self, buffers: &mut [&mut [f32]], frames: usize) {
        let sections = self.coefs.len();
        if sections == 0 {
            return;
        }
        let used = buffers.len().min(self.channels);
        let frames = buffers[..used].iter().map(|b| b.len()).min().unwrap_or(0).min(frames);
        for (group, bufs) in buffers[..used].chunks_mut(LANES).enumerate() {
            let state = &mut self.state[group * sections * 2..(group + 1) * sections * 2];
            process_group(&self.coefs, state, bufs, frames);
            sanitize_state(state);
        }
    }
}

/// Runs one group of up to `LANES` channels through the cascade.
#[inline(always)]
fn process_group(coefs: &[SosCoefs], state: &mut [[f64; LANES]], bufs: &mut [&mut [f32]], frames: usize) {
    let lanes = bufs.len();
    for t in 0..frames {
        let mut x = [0.0f64; LANES];
        for (xl, buf) in x.iter_mut().zip(bufs.iter()) {
            *xl = f64::from(buf[t]);
        }
        for (c, s) in coefs.iter().zip(state.chunks_exact_mut(2)) {
            let (s1, s2) = s.split_at_mut(1);
            let (s1, s2) = (&mut s1[0], &mut s2[0]);
            let mut y = [0.0f64; LANES];
            for l in 0..LANES {
                y[l] = c.b0 * x[l] + s1[l];
                s1[l] = c.b1 * x[l] - c.a1 * y[l] + s2[l];
                s2[l] = c.b2 * x[l] - c.a2 * y[l];
            }
            x = y;
        }
        for (buf, &xl) in bufs.iter_mut().zip(x.iter()).take(lanes) {
            buf[t] = xl as f32;
        }
    }
}

/// Resets lanes whose state is non-finite and flushes tiny state values to zero.
fn sanitize_state(state: &mut [[f64; LANES]]) {
    for l in 0..LANES {
        if state.iter().any(|v| !v[l].is_finite()) {
            state.iter_mut().for_each(|v| v[l] = 0.0);
        }
    }
    for v in state.iter_mut().flat_map(|v| v.iter_mut()) {
        if v.abs() < FLUSH_BELOW {
            *v = 0.0;
        }
    }
}
