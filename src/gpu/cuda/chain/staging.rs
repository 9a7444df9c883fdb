//! A chain's pinned staging slots: a job's block and state written for the device and
//! read back after it. Each slot holds the block (`channels x max_frames`), then the SOS
//! states in each section's delta form ([`super::state_words`]: the float32 cascades' as 2
//! floats per section and channel, then the float64 cascades' as 2 `f64` per section and
//! channel, each stored as two floats' bits), then the FIR histories. The host touches a
//! slot only while no copy that uses it is in flight.

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

impl CudaChain {
    /// Floats in one staging slot: the block, the SOS states, the FIR histories.
    pub(super) fn slot_len(&self) -> usize {
        self.channels * self.max_frames + state_words(self.channels * self.realizations.len()) + self.fir_len
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
        let host = self.slot_mut(slot)?;
        let pairs = host.chunks_mut(len).zip(buffers.iter()).map(|(h, b)| (h, &b.as_ref()[start..start + len]));
        copy_blocks(pairs, len * buffers.len());
        Ok(())
    }

    /// A slot's block back into frames `start..start + len` of the channel buffers.
    pub(super) fn unstage_block(&self, slot: usize, (start, len): (usize, usize), buffers: &mut [&mut [f32]]) -> Result<(), CudaError> {
        let host = self.slot(slot)?;
        let total = len * buffers.len();
        let pairs = buffers.iter_mut().zip(host.chunks(len)).map(|(b, h)| (&mut b[start..start + len], h));
        copy_blocks(pairs, total);
        Ok(())
    }

    /// `state` into a slot, each section's in its delta form in its cascade's precision,
    /// the FIR histories as they are.
    pub(super) fn stage_state(&mut self, slot: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total, block, fir_len) = (self.channels, self.realizations.len(), self.channels * self.max_frames, self.fir_len);
        let n = self.slot_len();
        let host = &mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n];
        let (f32s, rest) = host[block..].split_at_mut(2 * channels * total);
        let (f64s, hist) = rest.split_at_mut(4 * channels * total);
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
        hist[..fir_len].copy_from_slice(&state.fir);
        Ok(())
    }

    /// The end state of the job last run from `slot` (after its stream synchronised).
    pub(super) fn read_state(&self, slot: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let (channels, total, block) = (self.channels, self.realizations.len(), self.channels * self.max_frames);
        let host = self.slot(slot)?;
        let (f32s, rest) = host[block..].split_at(2 * channels * total);
        let (f64s, hist) = rest.split_at(4 * channels * total);
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
        for (o, &v) in state.fir.iter_mut().zip(&hist[..self.fir_len]) {
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
    use super::{copy_blocks, get_f64, put_f64};

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
