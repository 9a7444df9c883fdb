//! The warp pipeline on a chain (opt-in: [`crate::gpu::cuda::CudaTuning`]'s
//! `pipeline_max_frames`, or [`CudaChain::set_pipeline`]): blocks up to that many frames
//! run sequentially, and each run of consecutive float32 cascades takes one launch of
//! `kernels/sos_pipe.cu` per 32 sections, which runs its sections at the same time (a
//! lane each, frames + sections - 1 steps) where the sequential kernel runs them one
//! after another (sections x frames steps) and the scan passes over the block three
//! times per section (the realtime round trip's kernel time). The pipeline gives the
//! sequential kernel's bits (kernel-host tests), so a job's output does not depend on
//! whether it ran; only which blocks run sequentially does, and that is the option's
//! frame limit (at least the device's `sequential_max_frames`).

use super::CudaChain;
use crate::gpu::cuda::{CudaDevice, CudaError};
use crate::gpu::pipe::{PipeGroup, PipePlan, PIPE_LANES};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// `fx_pipe_params` of kernels/sos_pipe_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PipeParams {
    frames: u32,
    stride: u32,
    channels: u32,
    lanes: u32,
    lane_base: u32,
    pad: [u32; 3],
}
// SAFETY: plain 32-bit fields, `#[repr(C)]`, laid out as the kernel's struct.
unsafe impl DeviceRepr for PipeParams {}

/// A chain's pipeline: off (`max_frames` 0) or its plan and lane table on the device.
pub(super) struct Pipe {
    max_frames: usize,
    plan: PipePlan,
    /// The lane table (`fx_pipe_lane`, 4 words a lane).
    lanes: CudaSlice<u32>,
}

impl Pipe {
    /// Off: a one-record table, nothing planned.
    pub(super) fn off(stream: &Arc<CudaStream>) -> Result<Pipe, CudaError> {
        Ok(Pipe { max_frames: 0, plan: PipePlan::default(), lanes: stream.alloc_zeros(4)? })
    }

    /// The group of stages starting at `stage` where a block of `frames` frames (run
    /// sequentially) takes the pipeline.
    pub(super) fn group_at(&self, stage: usize, frames: usize) -> Option<&PipeGroup> {
        if frames > self.max_frames {
            return None;
        }
        self.plan.group_at(stage)
    }
}

impl CudaChain {
    /// Runs blocks of up to `max_frames` frames sequentially, their consecutive float32
    /// cascades through the warp pipeline (0: off, the default: the channel-parallel
    /// kernel below the device's sequential limit, the scan above it). The output is the
    /// sequential path's, bit for bit; blocks between the device's sequential limit and
    /// `max_frames` change from the scan to it (within the same tolerance). Uploads the
    /// lane table and drops the captured graphs. Not for an audio thread, and not on a
    /// resident chain (its chunking is fixed when it is built: open the device with the
    /// option instead).
    pub fn set_pipeline(&mut self, max_frames: usize) -> Result<(), CudaError> {
        self.pipe.max_frames = max_frames;
        self.refresh_pipe()?;
        // Which blocks run sequentially changed with the limit, whatever the plan.
        self.graphs = self.graphs.take().map(|_| Vec::new());
        Ok(())
    }

    /// The pipeline's frame limit (0: off) and its launches per block: one per 32
    /// sections of each run of float32 cascades (tests and the benchmark report it).
    pub fn pipeline_status(&self) -> (usize, usize) {
        (self.pipe.max_frames, self.pipe.plan.groups.iter().map(|g| g.runs.len()).sum())
    }

    /// The plan again from the stages (new coefficients may move a cascade between
    /// float32 and float64), its lane table uploaded in stream order.
    /// Nothing is done where the plan is unchanged (a retune that keeps every cascade's
    /// precision: the lane table depends only on the stages' places).
    pub(super) fn refresh_pipe(&mut self) -> Result<(), CudaError> {
        let plan = if self.pipe.max_frames > 0 { PipePlan::new(&self.plans, self.channels) } else { PipePlan::default() };
        if plan == self.pipe.plan {
            return Ok(());
        }
        let words: Vec<u32> = plan.words().concat();
        if self.pipe.lanes.len() < words.len() {
            self.pipe.lanes = self.stream.alloc_zeros(words.len())?;
        }
        // Stream-ordered after the jobs already enqueued, which read the old table.
        self.stream.memcpy_htod(&words, &mut self.pipe.lanes.slice_mut(..words.len()))?;
        self.pipe.plan = plan;
        Ok(())
    }

    /// Blocks up to this many frames run sequentially: the device's limit, or the
    /// pipeline's where it is on and higher.
    pub(super) fn sequential_limit(&self) -> usize {
        self.sequential_max.max(self.pipe.max_frames)
    }
}

/// A group's pipeline launches over `frames` frames of `work` (a sequential block).
#[allow(clippy::too_many_arguments)]
pub(super) fn enqueue_pipe(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    pipe: &Pipe,
    group: &PipeGroup,
    frames: usize,
    channels: usize,
    work: &mut CudaViewMut<'_, f32>,
    sections: &CudaSlice<f32>,
    states: &mut CudaViewMut<'_, f32>,
) -> Result<(), CudaError> {
    let cfg = LaunchConfig { grid_dim: (channels as u32, 1, 1), block_dim: (PIPE_LANES as u32, 1, 1), shared_mem_bytes: 0 };
    for run in &group.runs {
        let p = PipeParams { frames: frames as u32, stride: frames as u32, channels: channels as u32, lanes: run.lanes as u32, lane_base: run.lane_base as u32, pad: [0; 3] };
        let mut launch = stream.launch_builder(&dev.sos_pipe);
        launch.arg(&p).arg(&mut *work).arg(sections).arg(&pipe.lanes).arg(&mut *states);
        // SAFETY: the arguments match ferrofx_sos_pipe(fx_pipe_params, float*, const
        // fx_section*, const fx_pipe_lane*, fx_vec2*); `work` holds channels x frames,
        // the lane table (4 words a lane) covers lane_base + lanes, and each lane's
        // section and states (state + ch x count for every channel) lie in `sections`
        // and `states`: the plan was made from this chain's stages (PipePlan::new).
        unsafe { launch.launch(cfg) }?;
    }
    Ok(())
}
