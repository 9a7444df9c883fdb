//! The pipeline for short blocks on wgpu (opt-in: [`crate::gpu::GpuTuning`]'s
//! `wgpu_pipeline_max_frames`, or [`WgpuChain::set_pipeline`]): `shaders/sos_pipe.wgsl`,
//! the design of CUDA's `kernels/sos_pipe.cu` ([`crate::gpu::pipe`]). Blocks up to the
//! limit run sequentially, and each run of consecutive float32 cascades takes one
//! dispatch per 32 sections, its sections at the same time (an invocation each); the
//! per-sample arithmetic is the sequential path's, so its output is that path's.

use super::chain::WgpuChain;
use super::PARAM_SLOT;
use crate::gpu::pipe::{PipeGroup, PipePlan};
use crate::gpu::GpuError;
use wgpu::BufferUsages as U;

/// The longest block the pipeline takes on wgpu: its loop runs `frames + 31` steps, and
/// lavapipe's shader loops stop at 65,535 iterations.
pub const WGPU_PIPE_MAX_FRAMES: usize = 32_768;

/// A chain's pipeline: its frame limit, plan, and a parameter slot and bind group per
/// dispatch (the plan's runs in order).
pub(super) struct WgpuPipe {
    pub(super) max_frames: usize,
    plan: PipePlan,
    params: wgpu::Buffer,
    binds: Vec<wgpu::BindGroup>,
    /// Kept alive for the bind groups.
    _lanes: wgpu::Buffer,
}

impl WgpuChain {
    /// Runs blocks of up to `max_frames` frames sequentially, each run of consecutive
    /// float32 cascades through the pipeline shader (0: off, the default). The output is
    /// the sequential path's; blocks between the adapter's sequential limit and
    /// `max_frames` move from the scan to it (within the same tolerance). Refused above
    /// [`WGPU_PIPE_MAX_FRAMES`]. Not for an audio thread, and not on a resident chain
    /// (its chunking is fixed when built: give the context the limit instead).
    pub fn set_pipeline(&mut self, max_frames: usize) -> Result<(), GpuError> {
        if max_frames > WGPU_PIPE_MAX_FRAMES {
            return Err(GpuError::Unsupported { what: format!("a pipeline limit of {max_frames} frames (at most {WGPU_PIPE_MAX_FRAMES} on wgpu)") });
        }
        // On a software adapter every cascade must also fit the sequential shader's loop
        // at that length (a float64 cascade runs there, and new coefficients may move a
        // float32 one out of the pipeline): exact, or a clear refusal.
        if self.ctx.report().is_cpu() {
            let longest = self.forms.iter().filter_map(|f| if let crate::gpu::design::StageForm::Sos { count, .. } = *f { Some(count) } else { None }).max().unwrap_or(0);
            if longest * max_frames > super::chain::SOFTWARE_LOOP_LIMIT {
                return Err(GpuError::Unsupported {
                    what: format!(
                        "a pipeline limit of {max_frames} frames on a software adapter: a cascade of {longest} sections would loop {} times sequentially, and lavapipe stops loops after {} (at most {} frames here)",
                        longest * max_frames,
                        super::chain::SOFTWARE_LOOP_LIMIT,
                        super::chain::SOFTWARE_LOOP_LIMIT / longest.max(1)
                    ),
                });
            }
        }
        self.pipe_max_frames = max_frames;
        self.refresh_pipe();
        Ok(())
    }

    /// The pipeline's frame limit (0: off) and its dispatches per block.
    pub fn pipeline_status(&self) -> (usize, usize) {
        (self.pipe_max_frames, self.pipe.as_ref().map_or(0, |p| p.binds.len()))
    }

    /// The plan and bind groups again from the stages (new coefficients may move a
    /// cascade between float32 and float64).
    /// Nothing is rebuilt where the plan and limit are unchanged (a retune that keeps
    /// every cascade's precision).
    pub(super) fn refresh_pipe(&mut self) {
        if self.pipe_max_frames == 0 {
            self.pipe = None;
            return;
        }
        let plan = PipePlan::new(&self.forms, self.channels);
        if self.pipe.as_ref().is_some_and(|p| p.plan == plan && p.max_frames == self.pipe_max_frames) {
            return;
        }
        let runs: usize = plan.groups.iter().map(|g| g.runs.len()).sum();
        if runs == 0 {
            self.pipe = None;
            return;
        }
        let device = self.ctx.device.clone();
        let words = plan.words();
        let lanes = device.create_buffer(&wgpu::BufferDescriptor { label: Some("pipe lanes"), size: (words.len() * 16) as u64, usage: U::STORAGE | U::COPY_DST, mapped_at_creation: false });
        self.ctx.queue.write_buffer(&lanes, 0, bytemuck::cast_slice(&words));
        let params = device.create_buffer(&wgpu::BufferDescriptor { label: Some("pipe params"), size: runs as u64 * PARAM_SLOT, usage: U::UNIFORM | U::COPY_DST, mapped_at_creation: false });
        let layout = &self.ctx.pipelines().pipe(&device).layout;
        let binds = (0..runs)
            .map(|slot| {
                let params_at = wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &params, offset: slot as u64 * PARAM_SLOT, size: std::num::NonZeroU64::new(32) });
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("pipe run"),
                    layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: params_at },
                        wgpu::BindGroupEntry { binding: 1, resource: self.work.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 2, resource: self.sections.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 3, resource: lanes.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 4, resource: self.states.as_entire_binding() },
                    ],
                })
            })
            .collect();
        self.pipe = Some(WgpuPipe { max_frames: self.pipe_max_frames, plan, params, binds, _lanes: lanes });
    }

    /// Blocks up to this many frames run sequentially: the adapter's limit, or the
    /// pipeline's where it is on and higher.
    pub(in crate::gpu::wgpu) fn sequential_limit(&self) -> usize {
        self.sequential_max.max(self.pipe_max_frames)
    }
}

impl WgpuPipe {
    /// The group starting at stage `stage` where a block of `frames` frames cut into
    /// `chunks` chunks takes the pipeline.
    pub(super) fn group_at(&self, stage: usize, chunks: usize, frames: usize) -> Option<&PipeGroup> {
        if chunks != 1 || frames > self.max_frames {
            return None;
        }
        self.plan.group_at(stage)
    }

    /// Every dispatch's parameters for a block of `frames` frames (channel stride
    /// `frames`).
    pub(super) fn write_params(&self, queue: &wgpu::Queue, frames: usize) {
        for (slot, run) in self.plan.groups.iter().flat_map(|g| &g.runs).enumerate() {
            let words = [frames, frames, run.lanes, run.lane_base, 0, 0, 0, 0].map(|v| v as u32);
            queue.write_buffer(&self.params, slot as u64 * PARAM_SLOT, bytemuck::cast_slice(&words));
        }
    }

    /// `group`'s dispatches, one workgroup of `PIPE_LANES` invocations per channel.
    pub(super) fn encode(&self, pass: &mut wgpu::ComputePass<'_>, pipeline: &wgpu::ComputePipeline, group: &PipeGroup, channels: usize) {
        // The group's runs' slots: the runs of the groups before it come first.
        let before: usize = self.plan.groups.iter().take_while(|g| g.stages.start != group.stages.start).map(|g| g.runs.len()).sum();
        pass.set_pipeline(pipeline);
        for k in 0..group.runs.len() {
            pass.set_bind_group(0, &self.binds[before + k], &[]);
            pass.dispatch_workgroups(channels as u32, 1, 1);
        }
    }
}
