//! Offline only: a long block's time segments run side by side as extra SIMD lanes.
//!
//! A cascade's recurrence serialises time, so with one or two channels most lanes of a
//! vector idle (or the sections-in-lanes kernel waits on its recurrence's latency). When a
//! block is long enough, [`Segments`] cuts it into `S` segments of `L` frames that run as
//! `S x channels` lanes of the ordinary channel-lane kernel:
//!
//! * segment 0 continues from the state the block starts with;
//! * segment `k >= 1` starts from the state it would have had, found by running the
//!   cascade from zero state over the `D` frames before it (its *warm-up*);
//! * the last segment's final state is carried into the next block; frames after the
//!   last whole segment run on the ordinary path.
//!
//! **Exactness.** Truncating the history at `D` frames changes an output sample by at most
//! `T(D) * max|x|`, where `T(D) = sum_{n >= D} |h(n)|` is the tail of the cascade's impulse
//! response (every output depends on the input through `h` alone, and each segment sees at
//! least its `D` frames of exact history). [`warmup_frames`] picks `D` so that
//! `T(D) <= TAIL_BOUND` (1e-12), measured on the `f64` impulse response with its tail
//! past the measured window bounded by the window's own decay rate (and never faster than
//! the slowest pole allows), then adds a quarter for margin. That is five orders below the
//! float32 rounding of a full-scale output (6e-8); a cascade whose response is too long for
//! the block (or not decaying: a pole on or outside the unit circle) is not segmented.
//! Lanes run the same kernel arithmetic as a single channel (the kernels are bit-identical
//! per lane), so the only difference from unsegmented processing is that bounded tail.
//!
//! Engines use this only when built with `EngineOptions::time_segments` (the engine, a layer above)
//! (offline rendering, the Python package, benchmarks). Like the rest of `dsp`, it
//! allocates only when built; a segmented block costs its warm-ups (at most a quarter of
//! the block) and so is for offline work, not an audio thread's small blocks.

use super::{SosCascade, SosCoefs};

/// The most truncation error per unit of input peak that segmenting may add.
pub const TAIL_BOUND: f64 = 1e-12;

/// The longest warm-up considered, in frames (about 2.7 s at 48 kHz).
pub const MAX_WARMUP_FRAMES: usize = 1 << 17;

/// Most lanes (channels x segments) a segmented block may use; more are not segmented.
/// Room for 64 channels of one item, or eight 7-channel items in 8 segments each (the
/// Python package's groups).
pub const MAX_SEGMENT_LANES: usize = 512;

/// A block is segmented only when all warm-ups together cost at most this share of it.
const WARMUP_SHARE: usize = 4; // 1/4

/// Samples per partial sum of the impulse response's magnitude.
const SUM_BLOCK: usize = 64;

/// The segmented path of one cascade: its lane cascades, the warm-up input copies and the
/// warm-up length. Built with the engine; coefficients follow the main cascade's.
#[derive(Clone, Debug)]
pub struct Segments {
    /// Most segments per channel (a power of two).
    max_segments: usize,
    channels: usize,
    /// `D`, or `None` when this cascade is not segmented.
    warmup: Option<usize>,
    /// The longest warm-up measured for (what all segments allow in the largest block).
    max_warmup: usize,
    /// `channels * max_segments` lanes.
    lanes: SosCascade,
    /// `channels * (max_segments - 1)` warm-up lanes.
    warm: SosCascade,
    /// Warm-up input copies, `[lane][D]`: a quarter of the largest block per channel.
    warm_input: Vec<f32>,
    /// Partial sums of `|h|` and the cascade's state, for [`warmup_frames`].
    sums: Vec<f64>,
    sim_state: Vec<[f64; 2]>,
}

impl Segments {
    /// The segmented path for `main`'s coefficients over blocks of up to
    /// `max_block_frames`, with up to `max_segments` segments per channel (rounded down to
    /// a power of two; below 2 nothing is ever segmented).
    pub fn new(main: &SosCascade, max_segments: usize, max_block_frames: usize) -> Segments {
        let max_segments = if max_segments < 2 { 1 } else { 1 << max_segments.ilog2() };
        let channels = main.channels();
        // Only all segments are ever used (see `segments_for`), so the warm-up is measured
        // up to what they allow in the largest block.
        let max_warmup =
            if max_segments < 2 { 0 } else { (max_block_frames / WARMUP_SHARE / (max_segments - 1)).min(MAX_WARMUP_FRAMES) };
        let sections = main.capacity();
        let mut s = Segments {
            max_segments,
            channels,
            warmup: None,
            max_warmup,
            lanes: SosCascade::with_capacity(sections, channels * max_segments, main.isa()),
            warm: SosCascade::with_capacity(sections, channels * (max_segments - 1).max(1), main.isa()),
            warm_input: vec![0.0; channels * max_block_frames / WARMUP_SHARE],
            sums: vec![0.0; (2 * max_warmup).div_ceil(SUM_BLOCK) + 4],
            sim_state: vec![[0.0; 2]; sections],
        };
        s.follow(main);
        s
    }

    /// Takes `main`'s coefficients and re-measures the warm-up. No allocation.
    pub fn follow(&mut self, main: &SosCascade) {
        let coefs = main.coefficients();
        self.lanes.set_coefs(coefs);
        self.warm.set_coefs(coefs);
        self.warmup = if self.max_segments < 2 || self.max_warmup == 0 {
            None
        } else {
            warmup_frames(coefs, self.max_warmup, &mut self.sums, &mut self.sim_state)
        };
    }

    /// The warm-up length in frames, when this cascade can be segmented at all.
    pub fn warmup(&self) -> Option<usize> {
        self.warmup
    }

    /// Segments per channel for a block of `frames`: all of them when their warm-ups cost
    /// at most a quarter of the block, else 1 (not segmented: fewer segments would leave
    /// lanes idle, and the unsegmented kernels for one or two channels are faster than a
    /// half-filled group; measured).
    pub fn segments_for(&self, frames: usize) -> usize {
        let (Some(d), s) = (self.warmup, self.max_segments) else { return 1 };
        let warmups = (s - 1) * d;
        if s >= 2 && warmups <= frames / WARMUP_SHARE && warmups * self.channels <= self.warm_input.len() && d <= frames / s {
            s
        } else {
            1
        }
    }

    /// Filters `frames` frames of `buffers` (at most `main`'s channels) through `main`,
    /// segmented; with `clean`, on input that first goes through
    /// [`crate::dsp::sanitize_sample`], applied as each piece reads it (the same bits as a
    /// pass of its own before; see [`SosCascade::process_sanitized`]). Returns `false`,
    /// having done nothing (the input not sanitised either), when the block is too short
    /// for this cascade's warm-up; the caller then runs `main` as usual.
    pub fn process(&mut self, main: &mut SosCascade, buffers: &mut [&mut [f32]], frames: usize, clean: bool) -> bool {
        let s = self.segments_for(frames);
        let used = buffers.len().min(self.channels);
        if s < 2 || used == 0 || main.sections() == 0 || used * s > MAX_SEGMENT_LANES {
            return false;
        }
        let (d, len) = (self.warmup.unwrap_or(0), frames / s);
        let buffers = &mut buffers[..used];
        // Warm-ups: copy the D frames before each segment k >= 1 and run them from zero.
        let slot_len = d.max(1);
        if d > 0 {
            let mut slots = self.warm_input.chunks_exact_mut(slot_len);
            for buf in buffers.iter() {
                for k in 1..s {
                    let slot = slots.next().expect("sized for every channel's segments");
                    slot[..d].copy_from_slice(&buf[k * len - d..k * len]);
                    if clean {
                        slot[..d].iter_mut().for_each(|v| *v = crate::dsp::sanitize_sample(*v));
                    }
                }
            }
        }
        self.warm.reset();
        let mut warm = slice_list(self.warm_input.chunks_exact_mut(slot_len).take(used * (s - 1)));
        self.warm.process(&mut warm.0[..warm.1], d);
        // Lane (c, 0) carries the block's state in, lane (c, k) its warm-up's.
        for c in 0..used {
            self.lanes.channel_state_mut(c * s).copy_from_slice(main.channel_state(c));
            for k in 1..s {
                self.lanes.channel_state_mut(c * s + k).copy_from_slice(self.warm.channel_state(c * (s - 1) + k - 1));
            }
        }
        let mut lanes = slice_list(buffers.iter_mut().flat_map(|b| b[..s * len].chunks_exact_mut(len)));
        self.lanes.run(&mut lanes.0[..lanes.1], 0, len, clean);
        for c in 0..used {
            main.channel_state_mut(c).copy_from_slice(self.lanes.channel_state(c * s + s - 1));
        }
        main.run(buffers, s * len, frames - s * len, clean);
        true
    }
}

/// Up to [`MAX_SEGMENT_LANES`] slices in a list on the stack (no allocation), and how many.
fn slice_list<'a>(slices: impl Iterator<Item = &'a mut [f32]>) -> ([&'a mut [f32]; MAX_SEGMENT_LANES], usize) {
    let mut list: [&'a mut [f32]; MAX_SEGMENT_LANES] = std::array::from_fn(|_| Default::default());
    let mut n = 0;
    for (slot, slice) in list.iter_mut().zip(slices) {
        *slot = slice;
        n += 1;
    }
    (list, n)
}

/// The warm-up length `D` (frames) after which the tail of the cascade's impulse response
/// is at most [`TAIL_BOUND`], with a quarter added for margin; `None` when that is not
/// shown within `max_frames` (or a pole is not inside the unit circle). Simulates the
/// impulse response in `f64` over `2 * max_frames` samples; `sums` must hold
/// `2 * max_frames / 64 + 4` partial sums and `state` one entry per section. No allocation.
pub fn warmup_frames(coefs: &[SosCoefs], max_frames: usize, sums: &mut [f64], state: &mut [[f64; 2]]) -> Option<usize> {
    if coefs.is_empty() {
        return Some(0);
    }
    let radius = coefs.iter().map(pole_radius).fold(0.0, f64::max);
    if !radius.is_finite() || radius >= 1.0 - 1e-12 || coefs.iter().any(|c| ![c.b0, c.b1, c.b2].iter().all(|v| v.is_finite())) {
        return None;
    }
    let blocks = (2 * max_frames).div_ceil(SUM_BLOCK).max(4) & !3; // whole quarters
    if sums.len() < blocks || state.len() < coefs.len() {
        return None;
    }
    // The impulse response, in partial sums of |h| per SUM_BLOCK samples.
    let state = &mut state[..coefs.len()];
    state.fill([0.0; 2]);
    let mut x = 1.0;
    for sum in sums[..blocks].iter_mut() {
        let mut acc = 0.0;
        for _ in 0..SUM_BLOCK {
            let mut v = x;
            // Plain products and sums (`mul_add` is a library call in the baseline build);
            // the bound has margin far beyond their rounding.
            for (c, s) in coefs.iter().zip(state.iter_mut()) {
                let y = c.b0 * v + s[0];
                s[0] = c.b1 * v + s[1] - c.a1 * y;
                s[1] = c.b2 * v - c.a2 * y;
                v = y;
            }
            acc += v.abs();
            x = 0.0;
        }
        *sum = acc;
    }
    // Beyond the window: the last quarter's decay against the one before, never faster
    // than the slowest pole (a repeated pole decays slower than its radius alone says).
    let quarter = blocks / 4;
    let last: f64 = sums[3 * quarter..blocks].iter().sum();
    let before: f64 = sums[2 * quarter..3 * quarter].iter().sum();
    let pole_ratio = radius.powi((quarter * SUM_BLOCK) as i32);
    // Sums this small are at the floor of f64 (subnormal steps, flushed states): their
    // ratio says nothing; the slowest pole's decay still bounds what could follow.
    let ratio = if last < 1e-200 { pole_ratio } else { (last / before).max(pole_ratio) };
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN ratio (0/0) declines too
    if !(ratio < 0.5) {
        return None;
    }
    let beyond = last * ratio / (1.0 - ratio);
    if beyond > TAIL_BOUND {
        return None;
    }
    // The first block boundary from which the whole tail is within the bound.
    let (mut tail, mut first) = (beyond, blocks);
    for i in (0..blocks).rev() {
        if tail + sums[i] > TAIL_BOUND {
            break;
        }
        tail += sums[i];
        first = i;
    }
    let d = first * SUM_BLOCK;
    let d = d + d / 4 + SUM_BLOCK;
    (d <= max_frames).then_some(d)
}

/// The largest pole magnitude of one section (`z^2 + a1 z + a2`).
fn pole_radius(c: &SosCoefs) -> f64 {
    let disc = c.a1 * c.a1 - 4.0 * c.a2;
    if disc < 0.0 {
        c.a2.abs().sqrt()
    } else {
        let r = disc.sqrt();
        ((-c.a1 + r) / 2.0).abs().max(((-c.a1 - r) / 2.0).abs())
    }
}
