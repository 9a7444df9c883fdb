//! A job's state between the engine's form (TDF-II in `f64`, [`ChainState`]) and the
//! shaders' delta forms: float32 states from the start of the `states` buffer, float64
//! ones from [`Float64Stages::states_at`](super::Float64Stages), the same indexing
//! (`[stage][channel][section]`, the engine's layout).

use super::{StagePlan, WgpuChain};
use crate::engine::ChainState;
use crate::gpu::design::StageForm;
use crate::gpu::realize::GpuPrecision;

impl WgpuChain {
    /// A zeroed state of this chain's shape (the same layout as
    /// [`crate::engine::Engine::new_state`] for the same chain and channels).
    pub fn new_state(&self) -> ChainState {
        ChainState { sos: vec![[0.0; 2]; self.state_f32.len()], fir: vec![0.0; self.fir_len] }
    }

    /// Takes each cascade's precision from `forms` (the same shape as this chain's);
    /// returns whether one changed.
    pub(in crate::gpu::wgpu) fn set_precisions(&mut self, forms: &[StageForm]) -> bool {
        let mut changed = false;
        for (plan, form) in self.stages.iter_mut().zip(forms) {
            if let (StagePlan::Sos { precision, .. }, StageForm::Sos { precision: new, .. }) = (plan, form) {
                changed |= *precision != *new;
                *precision = *new;
            }
        }
        changed
    }

    pub(super) fn convert_states_in(&mut self, state: &ChainState) {
        let channels = self.channels;
        let mut at = 0;
        for stage in &self.stages {
            if let StagePlan::Sos { first, count, precision, .. } = *stage {
                for _ in 0..channels {
                    for r in &self.realizations[first..first + count] {
                        match precision {
                            GpuPrecision::F32 => self.state_f32[at] = r.state_to_gpu(state.sos[at]),
                            GpuPrecision::F64 => {
                                if let Some(f64s) = self.float64.as_mut() {
                                    f64s.state[at] = r.state_to_gpu_as(state.sos[at]);
                                }
                            }
                        }
                        at += 1;
                    }
                }
            }
        }
    }

    /// Back to TDF-II; a non-finite channel state is reset and tiny values flushed, as the
    /// CPU cascade does.
    pub(super) fn convert_states_out(&self, state: &mut ChainState) {
        let channels = self.channels;
        let mut at = 0;
        for stage in &self.stages {
            if let StagePlan::Sos { first, count, precision, .. } = *stage {
                for _ in 0..channels {
                    let start = at;
                    for r in &self.realizations[first..first + count] {
                        state.sos[at] = match precision {
                            GpuPrecision::F32 => r.state_from_gpu(self.state_f32[at]),
                            GpuPrecision::F64 => r.state_from_gpu(self.float64.as_ref().map_or([0.0; 2], |f| f.state[at])),
                        };
                        at += 1;
                    }
                    crate::dsp::sos::sanitize_state(&mut state.sos[start..at]);
                }
            }
        }
        for v in state.fir.iter_mut() {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
    }

    /// The SOS states of a read-back (`bytes` from the states buffer's start) into the
    /// conversion scratch.
    pub(super) fn read_states(&mut self, bytes: &[u8]) {
        for (o, b) in self.state_f32.iter_mut().zip(bytes.chunks_exact(8)) {
            *o = [f32::from_le_bytes([b[0], b[1], b[2], b[3]]), f32::from_le_bytes([b[4], b[5], b[6], b[7]])];
        }
        if let Some(f64s) = self.float64.as_mut() {
            let at = (f64s.states_at as usize).min(bytes.len());
            for (o, b) in f64s.state.iter_mut().zip(bytes[at..].chunks_exact(16)) {
                let word = |k: usize| f64::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3], b[k + 4], b[k + 5], b[k + 6], b[k + 7]]);
                *o = [word(0), word(8)];
            }
        }
    }

    /// The converted states into the states buffer (queue writes: before the next submission).
    pub(super) fn write_states(&self) {
        let queue = &self.ctx.queue;
        if !self.state_f32.is_empty() {
            queue.write_buffer(&self.states, 0, bytemuck::cast_slice(&self.state_f32));
        }
        if let Some(f64s) = self.float64.as_ref().filter(|f| !f.state.is_empty()) {
            queue.write_buffer(&self.states, f64s.states_at, bytemuck::cast_slice(&f64s.state));
        }
    }
}
