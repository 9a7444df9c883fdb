//! The fused cascade scan on a chain (opt-in: [`crate::gpu::cuda::CudaTuning`]'s
//! `fused_sections`, or [`CudaChain::set_fused`]): which float32 cascades run through
//! `kernels/sos_fused.cu` on long blocks, their groups' transfer tables on the device,
//! the kernels' scratch buffers, and the three launches per group.
//!
//! A cascade runs fused where its fused estimate (`gpu::fused::fusable`) meets the error
//! budget; otherwise, in float64, and on blocks shorter than [`FUSED_MIN_FRAMES`], it
//! keeps the per-section kernels. A resident chain decides by its unit, not by each
//! call's frames, so a stream of calls still equals one call bit for bit.

use super::launch::BLOCK_THREADS;
use super::CudaChain;
use crate::gpu::cuda::{CudaDevice, CudaError};
pub use crate::gpu::fused::FUSED_MIN_FRAMES;
use crate::gpu::fused::{cascade_status, FusedPlace, FusedPlan, FUSED_CHUNK_FRAMES, FUSED_MAX_SECTIONS, FUSED_TILE, FUSED_WIDTH};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// `fx_fused_params` of kernels/sos_fused_math.h (both precisions' kernels).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FusedParams {
    pub(crate) frames: u32,
    pub(crate) chunk_len: u32,
    pub(crate) chunks: u32,
    pub(crate) tiles: u32,
    pub(crate) stride: u32,
    pub(crate) first: u32,
    pub(crate) count: u32,
    pub(crate) state_base: u32,
    pub(crate) state_stride: u32,
    pub(crate) table_base: u32,
    pub(crate) channels: u32,
    pub(crate) pad: u32,
}
// SAFETY: plain 32-bit fields, `#[repr(C)]`, laid out as the kernels' struct.
unsafe impl DeviceRepr for FusedParams {}

/// A chain's fused scan: off (`group_max` 0) or the groups of each plan that runs fused.
pub(super) struct Fused {
    group_max: usize,
    /// Per plan: its groups where it runs fused.
    stages: Vec<Option<Vec<FusedPlace>>>,
    tables: CudaSlice<f32>,
    /// `channels x FUSED_WIDTH x chunks` floats: each chunk's in-tile prefix state.
    prefix: CudaSlice<f32>,
    /// `channels x tiles x FUSED_WIDTH` floats: each tile's true start state.
    carry: CudaSlice<f32>,
}

impl Fused {
    /// Whether plan `index` runs fused (on blocks long enough).
    pub(super) fn runs(&self, index: usize) -> bool {
        matches!(self.stages.get(index), Some(Some(_)))
    }

    /// Off: one-element buffers, no stage fused.
    pub(super) fn off(stream: &Arc<CudaStream>, plans: usize) -> Result<Fused, CudaError> {
        Ok(Fused { group_max: 0, stages: vec![None; plans], tables: stream.alloc_zeros(1)?, prefix: stream.alloc_zeros(1)?, carry: stream.alloc_zeros(1)? })
    }
}

impl CudaChain {
    /// Runs the float32 cascades whose fused estimate meets the budget through the fused
    /// kernels on blocks of at least [`FUSED_MIN_FRAMES`] frames, in groups of up to
    /// `group_max` sections (at most 8; 0: off, every cascade on the per-section kernels).
    /// Allocates the kernels' scratch buffers (an eighth of the block) and drops the
    /// captured graphs where the launches change. Not for an audio thread.
    pub fn set_fused(&mut self, group_max: usize) -> Result<(), CudaError> {
        let group_max = group_max.min(FUSED_MAX_SECTIONS);
        let FusedPlan { stages, tables: words } = FusedPlan::new(&self.plans, &self.realizations, group_max, self.max_frames);
        let any = stages.iter().any(Option::is_some);
        let stream = self.stream.clone();
        if any {
            let chunks = self.max_frames.div_ceil(FUSED_CHUNK_FRAMES);
            let (prefix, carry) = (self.channels * FUSED_WIDTH * chunks, self.channels * chunks.div_ceil(FUSED_TILE) * FUSED_WIDTH);
            if self.fused.prefix.len() < prefix {
                self.fused.prefix = stream.alloc_zeros(prefix)?;
                self.fused.carry = stream.alloc_zeros(carry)?;
            }
            if self.fused.tables.len() < words.len() {
                self.fused.tables = stream.alloc_zeros(words.len())?;
            }
            // Stream-ordered after the jobs already enqueued, which read the old tables.
            stream.memcpy_htod(&words, &mut self.fused.tables.slice_mut(..words.len()))?;
        }
        if stages != self.fused.stages {
            self.graphs = self.graphs.take().map(|_| Vec::new());
        }
        self.fused.stages = stages;
        self.fused.group_max = group_max;
        Ok(())
    }

    /// Sections fused per group (0: off) and, per cascade of the chain, whether it runs
    /// fused on long blocks (tests and the benchmark report it).
    pub fn fused_status(&self) -> (usize, Vec<bool>) {
        (self.fused.group_max, cascade_status(&self.plans, |i| self.fused.runs(i)))
    }

    /// The fused scan again after new coefficients (a cascade's estimate may change).
    pub(super) fn refresh_fused(&mut self) -> Result<(), CudaError> {
        let group_max = self.fused.group_max;
        self.set_fused(group_max)
    }

    /// Whether a block of `frames` frames is long enough for the fused kernels (a
    /// resident chain decides by its unit).
    pub(super) fn fused_block(&self, frames: usize) -> bool {
        let decide = if self.fixed_chunking.is_some() { self.max_frames } else { frames };
        decide >= FUSED_MIN_FRAMES
    }
}

/// Plan `index`'s fused launches over `frames` frames of `work` (its sections from
/// `first` in `sections`, `count` of them, its states from `state_base`).
#[allow(clippy::too_many_arguments)]
pub(super) fn enqueue_fused(
    dev: &CudaDevice,
    stream: &Arc<CudaStream>,
    fused: &mut Fused,
    index: usize,
    (first, count, state_base): (usize, usize, usize),
    frames: usize,
    channels: usize,
    work: &mut CudaViewMut<'_, f32>,
    sections: &CudaSlice<f32>,
    states: &mut CudaViewMut<'_, f32>,
) -> Result<(), CudaError> {
    let Fused { stages, tables, prefix, carry, .. } = fused;
    let Some(Some(groups)) = stages.get(index) else { return Ok(()) };
    let chunks = frames.div_ceil(FUSED_CHUNK_FRAMES);
    let tiles = chunks.div_ceil(FUSED_TILE);
    let tile_cfg = LaunchConfig { grid_dim: (tiles as u32, channels as u32, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
    let row_cfg = LaunchConfig { grid_dim: (channels as u32, 1, 1), block_dim: (FUSED_WIDTH as u32, 1, 1), shared_mem_bytes: 0 };
    for g in groups {
        let p = FusedParams {
            frames: frames as u32,
            chunk_len: FUSED_CHUNK_FRAMES as u32,
            chunks: chunks as u32,
            tiles: tiles as u32,
            stride: frames as u32,
            first: (first + g.first) as u32,
            count: g.count as u32,
            state_base: (state_base + g.first) as u32,
            state_stride: count as u32,
            table_base: g.table_base as u32,
            channels: channels as u32,
            pad: 0,
        };
        let work_in = work.as_view();
        let mut launch = stream.launch_builder(&dev.sos_fused_ends);
        launch.arg(&p).arg(&work_in).arg(sections).arg(&*tables).arg(&mut *prefix);
        // SAFETY: the arguments match ferrofx_sos_fused_ends(fx_fused_params, const
        // float*, const fx_section*, const float*, float*); `work` holds channels x
        // frames, `sections` the group's, `tables` FUSED_TABLE_FLOATS from table_base,
        // `prefix` channels x FUSED_WIDTH x chunks (allocated for the largest block).
        unsafe { launch.launch(tile_cfg) }?;
        let states_in = states.as_view();
        let mut launch = stream.launch_builder(&dev.sos_fused_carry);
        launch.arg(&p).arg(&*tables).arg(&*prefix).arg(&states_in).arg(&mut *carry);
        // SAFETY: ferrofx_sos_fused_carry(fx_fused_params, const float*, const float*,
        // const fx_vec2*, float*): `states` 2 floats per section and channel of the
        // stage from state_base, `carry` channels x tiles x FUSED_WIDTH.
        unsafe { launch.launch(row_cfg) }?;
        let mut launch = stream.launch_builder(&dev.sos_fused_run);
        launch.arg(&p).arg(&mut *work).arg(sections).arg(&*tables).arg(&*prefix).arg(&*carry).arg(&mut *states);
        // SAFETY: ferrofx_sos_fused_run(fx_fused_params, float*, const fx_section*, const
        // float*, const float*, const float*, fx_vec2*): the buffers as above.
        unsafe { launch.launch(tile_cfg) }?;
    }
    Ok(())
}
