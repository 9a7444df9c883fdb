//! The fused cascade scan on wgpu (opt-in: [`crate::gpu::GpuTuning`]'s
//! `wgpu_fused_sections`, or [`WgpuChain::set_fused`]): `shaders/sos_fused.wgsl`, the
//! design of CUDA's `kernels/sos_fused.cu` (see [`crate::gpu::fused`]). Which float32
//! cascades run through it on long blocks, their groups' tables, the shader's scratch
//! buffers, a parameter slot and bind group per group, and the three dispatches.
//!
//! A cascade runs fused where its fused estimate meets the error budget; a float64
//! cascade, one that misses it, and every block whose chunking spans fewer than
//! [`FUSED_MIN_FRAMES`] frames keep the per-section shader. A resident chain passes its
//! unit's chunking for every call, so it decides by the unit and a stream of calls equals
//! one call.

use super::chain::WgpuChain;
use super::PARAM_SLOT;
use crate::gpu::fused::{cascade_status, FusedPlace, FusedPlan, FUSED_CHUNK_FRAMES, FUSED_MAX_SECTIONS, FUSED_MIN_FRAMES, FUSED_TILE, FUSED_WIDTH};
use crate::gpu::GpuError;
use wgpu::BufferUsages as U;

fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    b.as_entire_binding()
}

/// One group's place (`gpu::fused`), its parameter slot and bindings.
pub(super) struct Group {
    place: FusedPlace,
    slot: usize,
    bind: wgpu::BindGroup,
}

/// A chain's fused scan: the groups of each stage that runs fused, and the buffers.
pub(super) struct WgpuFused {
    /// Per stage: its groups where it runs fused.
    pub(super) stages: Vec<Option<Vec<Group>>>,
    params: wgpu::Buffer,
    /// Kept alive for the bind groups.
    _buffers: [wgpu::Buffer; 3],
}

impl WgpuChain {
    /// Runs the float32 cascades whose fused estimate meets the budget through the fused
    /// shader on blocks whose chunking spans at least [`FUSED_MIN_FRAMES`] frames, in
    /// groups of up to `group_max` sections (at most 8; 0: off). Builds the shader's
    /// buffers (an eighth of the block for the prefixes) and bind groups. Not for an
    /// audio thread.
    pub fn set_fused(&mut self, group_max: usize) -> Result<(), GpuError> {
        let group_max = group_max.min(FUSED_MAX_SECTIONS);
        let FusedPlan { stages: plans, tables: words } = FusedPlan::new(&self.forms, &self.realizations, group_max, self.max_frames);
        if plans.iter().all(Option::is_none) {
            self.fused = None;
            self.fused_group_max = group_max;
            return Ok(());
        }
        let device = self.ctx.device.clone();
        let chunks = self.max_frames.div_ceil(FUSED_CHUNK_FRAMES);
        let prefix_bytes = (self.channels * FUSED_WIDTH * chunks * 4) as u64;
        if prefix_bytes > self.ctx.limits.max_storage_buffer_binding_size {
            return Err(GpuError::Unsupported {
                what: format!("the fused scan's prefix buffer of {prefix_bytes} bytes; the adapter binds at most {}", self.ctx.limits.max_storage_buffer_binding_size),
            });
        }
        let buffer = |label: &str, size: u64, usage: wgpu::BufferUsages| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage, mapped_at_creation: false });
        let tables = buffer("fused tables", (words.len() * 4) as u64, U::STORAGE | U::COPY_DST);
        let prefix = buffer("fused prefix", prefix_bytes, U::STORAGE);
        let carry = buffer("fused carry", (self.channels * chunks.div_ceil(FUSED_TILE) * FUSED_WIDTH * 4) as u64, U::STORAGE);
        let groups_total: usize = plans.iter().flatten().map(Vec::len).sum();
        let params = buffer("fused params", groups_total as u64 * PARAM_SLOT, U::UNIFORM | U::COPY_DST);
        self.ctx.queue.write_buffer(&tables, 0, bytemuck::cast_slice(&words));
        let layout = &self.ctx.pipelines().fused(&device).layout;
        let mut slot = 0;
        let stages = plans
            .into_iter()
            .map(|p| {
                p.map(|groups| {
                    groups
                        .into_iter()
                        .map(|place| {
                            let params_at = wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &params, offset: slot as u64 * PARAM_SLOT, size: std::num::NonZeroU64::new(48) });
                            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                                label: Some("fused group"),
                                layout,
                                entries: &[
                                    wgpu::BindGroupEntry { binding: 0, resource: params_at },
                                    wgpu::BindGroupEntry { binding: 1, resource: whole(&self.work) },
                                    wgpu::BindGroupEntry { binding: 2, resource: whole(&self.sections) },
                                    wgpu::BindGroupEntry { binding: 3, resource: whole(&tables) },
                                    wgpu::BindGroupEntry { binding: 4, resource: whole(&self.states) },
                                    wgpu::BindGroupEntry { binding: 5, resource: whole(&prefix) },
                                    wgpu::BindGroupEntry { binding: 6, resource: whole(&carry) },
                                ],
                            });
                            slot += 1;
                            Group { place, slot: slot - 1, bind }
                        })
                        .collect()
                })
            })
            .collect();
        self.fused = Some(WgpuFused { stages, params, _buffers: [tables, prefix, carry] });
        self.fused_group_max = group_max;
        Ok(())
    }

    /// Sections fused per group (0: off) and, per cascade of the chain, whether it runs
    /// fused on long blocks.
    pub fn fused_status(&self) -> (usize, Vec<bool>) {
        (self.fused_group_max, cascade_status(&self.forms, |i| self.fused.as_ref().is_some_and(|f| f.runs(i))))
    }

    /// The fused choice and tables again after new coefficients.
    pub(super) fn refresh_fused(&mut self) -> Result<(), GpuError> {
        if self.fused_group_max > 0 {
            self.set_fused(self.fused_group_max)?;
        }
        Ok(())
    }
}

/// Whether a block cut into `(chunks, chunk_len)` is long enough for the fused shader.
pub(super) fn fused_block((chunks, chunk_len): (usize, usize)) -> bool {
    chunks > 1 && chunks * chunk_len >= FUSED_MIN_FRAMES
}

impl WgpuFused {
    /// Writes stage `index`'s groups' parameters for a block of `frames` frames (channel
    /// stride `frames`), its states from `state_base`, `count` sections from `first`.
    pub(super) fn write_params(&self, queue: &wgpu::Queue, index: usize, (first, count, state_base): (usize, usize, usize), frames: usize, channels: usize) {
        let Some(Some(groups)) = self.stages.get(index) else { return };
        let chunks = frames.div_ceil(FUSED_CHUNK_FRAMES);
        for g in groups {
            let words: [u32; 12] = [
                frames,
                FUSED_CHUNK_FRAMES,
                chunks,
                chunks.div_ceil(FUSED_TILE),
                frames,
                first + g.place.first,
                g.place.count,
                state_base + g.place.first,
                count,
                g.place.table_base,
                channels,
                0,
            ]
            .map(|v| v as u32);
            queue.write_buffer(&self.params, g.slot as u64 * PARAM_SLOT, bytemuck::cast_slice(&words));
        }
    }

    /// Whether stage `index` runs fused.
    pub(super) fn runs(&self, index: usize) -> bool {
        matches!(self.stages.get(index), Some(Some(_)))
    }

    /// Stage `index`'s dispatches for a block of `frames` frames: per group, the ends,
    /// the carry and the run (wgpu orders the dispatches of a pass).
    pub(super) fn encode(&self, pass: &mut wgpu::ComputePass<'_>, pipes: &super::pipelines::FusedPipelines, index: usize, frames: usize, channels: usize) {
        let Some(Some(groups)) = self.stages.get(index) else { return };
        let tiles = frames.div_ceil(FUSED_CHUNK_FRAMES).div_ceil(FUSED_TILE) as u32;
        for g in groups {
            pass.set_bind_group(0, &g.bind, &[]);
            pass.set_pipeline(&pipes.ends);
            pass.dispatch_workgroups(tiles, channels as u32, 1);
            pass.set_pipeline(&pipes.carry);
            pass.dispatch_workgroups(channels as u32, 1, 1);
            pass.set_pipeline(&pipes.run);
            pass.dispatch_workgroups(tiles, channels as u32, 1);
        }
    }
}
