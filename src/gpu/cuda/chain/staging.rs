//! A chain's pinned staging slots: a job's block and state written for the device and
//! read back after it. Each slot holds the SOS states in each section's delta form
//! ([`super::state_words`]: the float32 cascades' as 2 floats per section and channel,
//! then the float64 cascades' as 2 `f64` per section and channel, each stored as two
//! floats' bits), then the FIR histories, then the block (`channels x max_frames`), as
//! [`SlotLayout`] places them; the device's job buffer has the same layout, so a job of
//! any length is one upload and one download (the state, the histories and the block's
//! first `channels x frames` samples are one run of memory). The host touches a slot
//! only while no copy that uses it is in flight.

use super::{state_words, CudaChain, Plan};
use crate::engine::ChainState;
use crate::gpu::cuda::CudaError;
use crate::gpu::realize::GpuPrecision;

/// `v`'s bits as two floats (low word first: the device's little-endian `double`).
fn put_f64(out: &mut [f32], v: f64) {
    let bits = v.to_bits();
    out[0] = f32::from_bits(bits as u32);
    out[1] = f32::from_bits((bits >> 32) as u32);
}

/// The `f64` whose bits [`put_f64`] stored.
fn get_f64(words: &[f32]) -> f64 {
    f64::from_bits(u64::from(words[0].to_bits()) | (u64::from(words[1].to_bits()) << 32))
}

/// Where a staging slot (and the device's job buffer, laid out the same) keeps each part,
/// in floats from its start: the SOS states, the FIR histories, then the block, each part
/// starting on a 64-float (256-byte) boundary, so the kernels' rows start as aligned as
/// in an allocation of their own. The block comes last so that a job of `frames` frames
/// moves `0..copied(n)` each way: everything it needs in one copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SlotLayout {
    pub states: std::ops::Range<usize>,
    pub history: std::ops::Range<usize>,
    pub block: std::ops::Range<usize>,
}

/// The alignment of each part of a slot, in floats.
const PART_ALIGN_FLOATS: usize = 64;

impl SlotLayout {
    /// The parts for `state_words` state floats, `fir_len` history floats and a block of
    /// `block` floats.
    pub fn new(state_words: usize, fir_len: usize, block: usize) -> SlotLayout {
        let history_at = state_words.next_multiple_of(PART_ALIGN_FLOATS);
        let block_at = (history_at + fir_len).next_multiple_of(PART_ALIGN_FLOATS);
        SlotLayout { states: 0..state_words, history: history_at..history_at + fir_len, block: block_at..block_at + block }
    }

    /// Floats in the slot.
    pub fn len(&self) -> usize {
        self.block.end
    }

    /// The floats a job whose block holds `samples` samples moves each way.
    pub fn copied(&self, samples: usize) -> usize {
        debug_assert!(samples <= self.block.len());
        self.block.start + samples
    }
}

impl CudaChain {
    /// Where each part of a staging slot (and of the device's job buffer) lies.
    pub(super) fn slot_layout(&self) -> SlotLayout {
        SlotLayout::new(state_words(self.channels * self.realizations.len()), self.fir_len, self.channels * self.max_frames)
    }

    /// Floats in one staging slot.
    pub(super) fn slot_len(&self) -> usize {
        self.slot_layout().len()
    }

    /// A slot's block (`channels x max_frames` floats).
    pub(super) fn slot_block(&self, slot: usize) -> Result<&[f32], CudaError> {
        let block = self.slot_layout().block;
        Ok(&self.slot(slot)?[block])
    }

    pub(super) fn slot_block_mut(&mut self, slot: usize) -> Result<&mut [f32], CudaError> {
        let block = self.slot_layout().block;
        Ok(&mut self.slot_mut(slot)?[block])
    }

    pub(super) fn slot(&self, slot: usize) -> Result<&[f32], CudaError> {
        let n = self.slot_len();
        Ok(&self.pinned.as_slice()?[slot * n..(slot + 1) * n])
    }

    pub(super) fn slot_mut(&mut self, slot: usize) -> Result<&mut [f32], CudaError> {
        let n = self.slot_len();
        Ok(&mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n])
    }

    /// Frames `start..start + len` of the channel buffers into a slot's block, planar.
    pub(super) fn stage_block<B: AsRef<[f32]>>(&mut self, slot: usize, (start, len): (usize, usize), buffers: &[B]) -> Result<(), CudaError> {
        let host = self.slot_block_mut(slot)?;
        let pairs = host.chunks_mut(len).zip(buffers.iter()).map(|(h, b)| (h, &b.as_ref()[start..start + len]));
        copy_blocks(pairs, len * buffers.len());
        Ok(())
    }

    /// A slot's block back into frames `start..start + len` of the channel buffers.
    pub(super) fn unstage_block(&self, slot: usize, (start, len): (usize, usize), buffers: &mut [&mut [f32]]) -> Result<(), CudaError> {
        let host = self.slot_block(slot)?;
        let total = len * buffers.len();
        let pairs = buffers.iter_mut().zip(host.chunks(len)).map(|(b, h)| (&mut b[start..start + len], h));
        copy_blocks(pairs, total);
        Ok(())
    }

    /// `state` into a slot, each section's in its delta form in its cascade's precision,
    /// the FIR histories as they are.
    pub(super) fn stage_state(&mut self, slot: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total, layout) = (self.channels, self.realizations.len(), self.slot_layout());
        let n = layout.len();
        let host = &mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n];
        let (states, rest) = host.split_at_mut(layout.history.start);
        let hist = &mut rest[..layout.history.len()];
        let (f32s, f64s) = states[layout.states].split_at_mut(2 * channels * total);
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count, precision } = *plan {
                for _ in 0..channels {
                    for r in &self.realizations[first..first + count] {
                        match precision {
                            GpuPrecision::F32 => f32s[2 * at..2 * at + 2].copy_from_slice(&r.state_to_gpu(state.sos[at])),
                            GpuPrecision::F64 => {
                                let s = r.state_to_gpu_as::<f64>(state.sos[at]);
                                put_f64(&mut f64s[4 * at..], s[0]);
                                put_f64(&mut f64s[4 * at + 2..], s[1]);
                            }
                        }
                        at += 1;
                    }
                }
            }
        }
        hist.copy_from_slice(&state.fir);
        Ok(())
    }

    /// The end state of the job last run from `slot` (after its stream synchronised).
    pub(super) fn read_state(&self, slot: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let (channels, total, layout) = (self.channels, self.realizations.len(), self.slot_layout());
        let host = self.slot(slot)?;
        let (f32s, f64s) = host[layout.states].split_at(2 * channels * total);
        let hist = &host[layout.history];
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count, precision } = *plan {
                for _ in 0..channels {
                    let start = at;
                    for r in &self.realizations[first..first + count] {
                        state.sos[at] = match precision {
                            GpuPrecision::F32 => r.state_from_gpu([f32s[2 * at], f32s[2 * at + 1]]),
                            GpuPrecision::F64 => r.state_from_gpu([get_f64(&f64s[4 * at..]), get_f64(&f64s[4 * at + 2..])]),
                        };
                        at += 1;
                    }
                    crate::dsp::sos::sanitize_state(&mut state.sos[start..at]);
                }
            }
        }
        for (o, &v) in state.fir.iter_mut().zip(hist) {
            *o = if v.is_finite() { v } else { 0.0 };
        }
        Ok(())
    }
}

/// A block's host copies of at least this many floats (1 MiB) go over several threads.
const PARALLEL_COPY_FLOATS: usize = 1 << 18;
/// The most threads one block's host copies use.
const COPY_THREADS: usize = 4;

/// Copies each pair's source into its destination (`total` floats in all): on this
/// thread, or for large blocks split into equal pieces over up to [`COPY_THREADS`]
/// scoped threads (copying between the caller's channels and pinned memory is the host's
/// share of an offline stream, and one core's memory bandwidth limits it).
fn copy_blocks<'a>(pairs: impl Iterator<Item = (&'a mut [f32], &'a [f32])>, total: usize) {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let threads = if total >= PARALLEL_COPY_FLOATS {
        *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(COPY_THREADS))
    } else {
        1
    };
    if threads <= 1 {
        pairs.for_each(|(d, s)| d.copy_from_slice(s));
        return;
    }
    let piece = total.div_ceil(threads);
    let mut groups: Vec<Vec<(&mut [f32], &[f32])>> = (0..threads).map(|_| Vec::new()).collect();
    let (mut g, mut filled) = (0usize, 0usize);
    for (mut d, mut s) in pairs {
        while !d.is_empty() {
            let take = (piece - filled).min(d.len());
            let (d0, d1) = std::mem::take(&mut d).split_at_mut(take);
            let (s0, s1) = s.split_at(take);
            groups[g].push((d0, s0));
            (d, s) = (d1, s1);
            filled += take;
            if filled == piece {
                (g, filled) = ((g + 1).min(threads - 1), 0);
            }
        }
    }
    std::thread::scope(|scope| {
        let mut groups = groups.into_iter();
        let mine = groups.next();
        for group in groups {
            scope.spawn(move || group.into_iter().for_each(|(d, s)| d.copy_from_slice(s)));
        }
        mine.into_iter().flatten().for_each(|(d, s)| d.copy_from_slice(s));
    });
}

#[cfg(test)]
mod tests {
    use super::{copy_blocks, get_f64, put_f64, SlotLayout, PART_ALIGN_FLOATS};

    #[test]
    fn a_slot_keeps_its_parts_apart_aligned_and_a_job_in_one_run() {
        // A seeded generator (Knuth's MMIX LCG): `below(n)` in 0..n.
        let mut seed = 43u64;
        let mut below = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n.max(1)
        };
        for case in 0..2_000 {
            let (words, fir, block) = match case {
                0 => (0, 0, 1),
                1 => (64, 0, 64),
                2 => (0, 63, 2),
                _ => (below(3_000), below(5) * below(2_000), 1 + below(40_000)),
            };
            let l = SlotLayout::new(words, fir, block);
            assert_eq!((l.states.len(), l.history.len(), l.block.len()), (words, fir, block), "{l:?}");
            assert_eq!(l.states.start, 0);
            assert!(l.states.end <= l.history.start && l.history.end <= l.block.start, "{l:?}");
            assert_eq!((l.history.start % PART_ALIGN_FLOATS, l.block.start % PART_ALIGN_FLOATS), (0, 0), "{l:?}");
            // Padding below one alignment step per part, nothing after the block.
            assert!(l.history.start - l.states.end < PART_ALIGN_FLOATS && l.block.start - l.history.end < PART_ALIGN_FLOATS, "{l:?}");
            assert_eq!(l.len(), l.block.end);
            // A job of any length moves the states, the histories and its own samples,
            // and nothing past them.
            let samples = below(block + 1);
            let moved = 0..l.copied(samples);
            for part in [&l.states, &l.history] {
                assert!(part.is_empty() || (moved.contains(&part.start) && moved.contains(&(part.end - 1))), "{l:?}");
            }
            assert_eq!(moved.end, l.block.start + samples);
        }
    }

    #[test]
    fn doubles_stored_as_two_floats_come_back_bit_for_bit() {
        let mut words = [0.0f32; 2];
        for v in [0.0, -0.0, 1.0, -1e-300, 3.5e-320, f64::MAX, f64::INFINITY, 0.1 + 0.2, -7.25e12] {
            put_f64(&mut words, v);
            assert_eq!(get_f64(&words).to_bits(), v.to_bits(), "{v:e}");
            // The device reads the same bytes as a little-endian double.
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(f64::from_le_bytes(bytes.try_into().unwrap()).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn block_copies_split_over_threads_copy_every_float_once() {
        for (channels, len) in [(1usize, 300_000usize), (3, 100_000), (8, 65_536), (5, 7), (2, 131_073)] {
            let src: Vec<Vec<f32>> = (0..channels).map(|c| (0..len).map(|i| (c * len + i) as f32).collect()).collect();
            let mut dst = vec![vec![-1.0f32; len]; channels];
            copy_blocks(dst.iter_mut().map(|d| &mut d[..]).zip(src.iter().map(|s| &s[..])), channels * len);
            assert_eq!(dst, src, "{channels} x {len}");
        }
    }
}
