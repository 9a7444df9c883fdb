//! The wgpu backend as a [`Backend`]: [`WgpuStream`] as the prepared chain, [`WgpuChain`]
//! as the offload executor.

use super::{WgpuChain, WgpuStream, WgpuContext};
use crate::chain::DesignedChain;
use crate::gpu::GpuError;
use crate::run::backend::{Backend, Prepared, RunError};
use crate::run::offload::Executor;
use std::sync::Arc;

/// The wgpu backend on one device.
pub struct WgpuBackend {
    ctx: WgpuContext,
}

impl WgpuBackend {
    pub fn new(ctx: WgpuContext) -> WgpuBackend {
        WgpuBackend { ctx }
    }
    pub fn context(&self) -> &WgpuContext {
        &self.ctx
    }
}

/// Opens the best adapter (the wgpu entry of the list in `src/backends.rs`).
pub fn open_backend(_tuning: &crate::gpu::GpuTuning) -> Result<Arc<dyn Backend>, String> {
    WgpuContext::new().map(|ctx| Arc::new(WgpuBackend::new(ctx)) as Arc<dyn Backend>).map_err(|e| e.to_string())
}

/// A refusal or failure of this backend, as the run layer reports it.
fn declined(e: GpuError) -> RunError {
    RunError::Declined { backend: "wgpu", why: e.to_string() }
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }
    fn describe(&self) -> String {
        format!("wgpu on {}", self.ctx.report())
    }
    fn is_software(&self) -> bool {
        self.ctx.report().is_cpu()
    }
    fn is_lost(&self) -> bool {
        self.ctx.is_lost()
    }
    fn prepare(&self, chain: &DesignedChain, channels: usize, max_block: usize) -> Result<Box<dyn Prepared>, RunError> {
        Ok(Box::new(WgpuStream::new(&self.ctx, chain, channels, max_block).map_err(declined)?))
    }
    fn executor(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<Box<dyn Executor>, RunError> {
        Ok(Box::new(WgpuChain::new(&self.ctx, chain, channels, block).map_err(declined)?))
    }
    fn accepts(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<(), RunError> {
        let sequential_max = super::sequential_max_for(self.ctx.report());
        crate::gpu::design::GpuDesign::new(chain, channels.max(1), block.max(1), sequential_max, "wgpu").map(|_| ()).map_err(declined)
    }
}

impl Prepared for WgpuStream {
    fn depth(&self) -> usize {
        2
    }
    fn submit(&mut self, buffers: &[&[f32]], frames: usize) -> Result<(), RunError> {
        WgpuStream::submit(self, buffers, frames).map_err(declined)
    }
    fn collect(&mut self, buffers: &mut [&mut [f32]]) -> Result<usize, RunError> {
        WgpuStream::collect(self, buffers).map_err(declined)
    }
    fn in_flight(&self) -> usize {
        WgpuStream::in_flight(self)
    }
    fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        WgpuStream::process(self, buffers).map_err(declined)
    }
    fn process_pipelined(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        WgpuStream::process_pipelined(self, buffers).map_err(declined)
    }
    fn reset(&mut self) {
        WgpuStream::reset(self)
    }
}
