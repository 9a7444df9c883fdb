//! [`WgpuChain`]: a designed chain's buffers, bind groups and dispatch plan on a device,
//! and one job's round trip (write input and state, encode the stages, submit, read
//! back).
//!
//! Files: `build.rs` (construction: the design checked for this device, its buffers, the
//! stages' bind groups), `job.rs` (a job: submit, encode the stages' passes, collect),
//! `state.rs` (a job's state between the engine's TDF-II form and the shaders' delta forms
//! in float32 or float64).

mod build;
pub(in crate::gpu::wgpu) use build::SOFTWARE_LOOP_LIMIT;
mod job;
mod state;

use super::fir::{FftKit, FftPlan};
use super::{AdapterReport, WgpuContext, PARAM_SLOT};
use crate::gpu::design::StageForm;
use crate::gpu::realize::{GpuPrecision, Realization};

/// Per-stage dispatch plan.
enum StagePlan {
    /// `bind64`: the float64 shader's bindings, on a device with float64 (a retune may
    /// move the cascade between precisions in place).
    Sos { first: usize, count: usize, bind: wgpu::BindGroup, bind64: Option<wgpu::BindGroup>, precision: GpuPrecision },
    Fir { tap_base: usize, taps: usize, hist_base: usize, bind: wgpu::BindGroup, fft: Option<FftPlan> },
}

/// A job submitted into a read-back slot.
#[derive(Clone, Copy)]
struct SlotJob {
    frames: usize,
    /// The end state was copied out too.
    with_state: bool,
}

/// What a chain on a device with float64 adds, so new coefficients can move any cascade
/// between float32 and float64 in place: the float64 shader, every section's float64
/// record and scan tables (the float32 cascades' too, indexed alike), and the float64
/// states' place in [`WgpuChain::states`]. The float64 samples' buffer is held by the
/// stages' float64 bind groups.
pub(super) struct Float64Stages {
    pipeline: wgpu::ComputePipeline,
    pub(in crate::gpu::wgpu) sections: wgpu::Buffer,
    tables: wgpu::Buffer,
    /// Where the float64 states start in the states buffer (a storage binding's offset).
    states_at: u64,
    /// Scratch for the float64 states and tables.
    state: Vec<[f64; 2]>,
    table_scratch: Vec<[f64; 4]>,
}

/// A designed chain prepared on a device for `channels` channels and blocks of up to
/// `max_frames` frames.
pub struct WgpuChain {
    pub(super) ctx: WgpuContext,
    pub(super) channels: usize,
    pub(super) max_frames: usize,
    sos_pipeline: wgpu::ComputePipeline,
    fir_pipeline: wgpu::ComputePipeline,
    hist_pipeline: wgpu::ComputePipeline,
    stages: Vec<StagePlan>,
    /// The stages' places in the buffers (new coefficients must fit them).
    pub(super) forms: Vec<StageForm>,
    pub(super) realizations: Vec<Realization>,
    pub(super) sections: wgpu::Buffer,
    pub(super) taps: wgpu::Buffer,
    params: wgpu::Buffer,
    pub(in crate::gpu::wgpu) work: wgpu::Buffer,
    tmp: wgpu::Buffer,
    tables: wgpu::Buffer,
    /// Every SOS state: the float32 states (`vec2<f32>`, one per channel and section) from
    /// 0, and on a device with float64 the float64 ones (`vec2<f64>`, the same indexing)
    /// from [`Float64Stages::states_at`]. One buffer, so saving and restoring it keeps both.
    pub(in crate::gpu::wgpu) states: wgpu::Buffer,
    /// The bytes of `states` in use.
    states_bytes: u64,
    pub(super) history: wgpu::Buffer,
    hist_out: wgpu::Buffer,
    /// Two read-back buffers, so a job can be submitted while the previous one's
    /// output is still to be read ([`WgpuChain::submit`], [`WgpuChain::collect`]).
    readback: [wgpu::Buffer; 2],
    /// Per read-back slot: the job submitted into it, if any.
    slots: [Option<SlotJob>; 2],
    /// Chunk length the tables were last written for.
    pub(super) table_chunk_len: usize,
    pub(super) fir_len: usize,
    /// Scratch for state conversion and tables.
    state_f32: Vec<[f32; 2]>,
    table_scratch: Vec<[f32; 4]>,
    /// The float64 half, on a device with float64.
    pub(super) float64: Option<Float64Stages>,
    pub(super) sequential_max: usize,
    pub(super) fft: Option<FftKit>,
    /// A cascade changed precision in place: the next job must bring its state.
    pub(super) state_required: bool,
    /// The fused cascade scan (opt-in), where some cascade runs through it, and the
    /// group size asked for (0: off).
    pub(in crate::gpu::wgpu) fused: Option<super::fused::WgpuFused>,
    pub(in crate::gpu::wgpu) fused_group_max: usize,
    /// The pipeline for short blocks (opt-in), where some cascade runs through it, and
    /// the frame limit asked for (0: off).
    pub(in crate::gpu::wgpu) pipe: Option<super::pipe::WgpuPipe>,
    pub(in crate::gpu::wgpu) pipe_max_frames: usize,
}

impl WgpuChain {
    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    pub fn report(&self) -> &AdapterReport {
        self.ctx.report()
    }

    /// Blocks up to `frames` take the sequential path (tests use this to force either path).
    pub fn set_sequential_max(&mut self, frames: usize) {
        self.sequential_max = frames;
    }
}
