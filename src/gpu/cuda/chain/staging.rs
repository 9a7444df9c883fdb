//! A chain's pinned staging slots: a job's block and state written for the device and
//! read back after it. Each slot holds the block (`channels x max_frames`), then the SOS
//! states in each section's delta form (2 floats per section and channel), then the FIR
//! histories. The host touches a slot only while no copy that uses it is in flight.

use super::{CudaChain, Plan};
use crate::engine::ChainState;
use crate::gpu::cuda::CudaError;

impl CudaChain {
    /// Floats in one staging slot: the block, the SOS states, the FIR histories.
    pub(super) fn slot_len(&self) -> usize {
        self.channels * self.max_frames + 2 * self.channels * self.realizations.len() + self.fir_len
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
    pub(super) fn stage_block(&mut self, slot: usize, (start, len): (usize, usize), buffers: &[&mut [f32]]) -> Result<(), CudaError> {
        let host = self.slot_mut(slot)?;
        for (c, b) in buffers.iter().enumerate() {
            host[c * len..(c + 1) * len].copy_from_slice(&b[start..start + len]);
        }
        Ok(())
    }

    /// A slot's block back into frames `start..start + len` of the channel buffers.
    pub(super) fn unstage_block(&self, slot: usize, (start, len): (usize, usize), buffers: &mut [&mut [f32]]) -> Result<(), CudaError> {
        let host = self.slot(slot)?;
        for (c, b) in buffers.iter_mut().enumerate() {
            b[start..start + len].copy_from_slice(&host[c * len..(c + 1) * len]);
        }
        Ok(())
    }

    /// `state` into a slot, each section's in its delta form, the FIR histories as they are.
    pub(super) fn stage_state(&mut self, slot: usize, state: &ChainState) -> Result<(), CudaError> {
        let (channels, total, block, fir_len) = (self.channels, self.realizations.len(), self.channels * self.max_frames, self.fir_len);
        let n = self.slot_len();
        let host = &mut self.pinned.as_mut_slice()?[slot * n..(slot + 1) * n];
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count } = *plan {
                for _ in 0..channels {
                    for r in &self.realizations[first..first + count] {
                        let s = r.state_to_gpu(state.sos[at]);
                        host[block + 2 * at..block + 2 * at + 2].copy_from_slice(&s);
                        at += 1;
                    }
                }
            }
        }
        let hist = block + 2 * channels * total;
        host[hist..hist + fir_len].copy_from_slice(&state.fir);
        Ok(())
    }

    /// The end state of the job last run from `slot` (after its stream synchronised).
    pub(super) fn read_state(&self, slot: usize, state: &mut ChainState) -> Result<(), CudaError> {
        let (channels, total, block) = (self.channels, self.realizations.len(), self.channels * self.max_frames);
        let host = self.slot(slot)?;
        let mut at = 0;
        for plan in &self.plans {
            if let Plan::Sos { first, count } = *plan {
                for _ in 0..channels {
                    let start = at;
                    for r in &self.realizations[first..first + count] {
                        state.sos[at] = r.state_from_gpu([host[block + 2 * at], host[block + 2 * at + 1]]);
                        at += 1;
                    }
                    crate::dsp::sos::sanitize_state(&mut state.sos[start..at]);
                }
            }
        }
        let hist = block + 2 * channels * total;
        for (o, &v) in state.fir.iter_mut().zip(&host[hist..hist + self.fir_len]) {
            *o = if v.is_finite() { v } else { 0.0 };
        }
        Ok(())
    }
}
