//! The wgpu backend as a [`Backend`]: [`WgpuStream`] as the prepared chain, [`WgpuChain`]
//! as the offload executor.

use super::{WgpuChain, WgpuContext, WgpuResident, WgpuStream};
use crate::chain::DesignedChain;
use crate::gpu::GpuError;
use crate::run::backend::{median_s, Backend, Prepared, ResidentTiming, RunError};
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
pub fn open_backend(tuning: &crate::gpu::GpuTuning) -> Result<Arc<dyn Backend>, String> {
    WgpuContext::new()
        .map(|ctx| Arc::new(WgpuBackend::new(ctx.with_fused_sections(tuning.wgpu_fused_sections).with_pipeline_frames(tuning.wgpu_pipeline_max_frames))) as Arc<dyn Backend>)
        .map_err(|e| e.to_string())
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
        crate::gpu::design::GpuDesign::new(chain, channels.max(1), block.max(1), sequential_max, "wgpu", self.ctx.has_float64()).map(|_| ()).map_err(declined)
    }
    fn time_resident(&self, chain: &DesignedChain, input: &[f32], rows: usize, frames: usize, unit_frames: usize, runs: usize) -> Result<ResidentTiming, RunError> {
        time_resident(&self.ctx, chain, input, rows, frames, unit_frames, runs).map_err(declined)
    }
    fn time_host_copy(&self, bytes: usize, runs: usize) -> Result<f64, RunError> {
        time_host_copy(&self.ctx, bytes, runs).map_err(declined)
    }
}

/// [`Backend::time_host_copy`] on wgpu: what a job's round trip must move at least, a
/// queue write of the bytes into a storage buffer, a copy into a read-back buffer, the
/// map and the read into host memory (wgpu has no concurrent upload and download).
fn time_host_copy(ctx: &WgpuContext, bytes: usize, runs: usize) -> Result<f64, GpuError> {
    use std::time::Instant;
    use wgpu::BufferUsages as U;
    let size = (bytes.max(4) as u64).div_ceil(4) * 4;
    let host_in = vec![0x3Fu8; size as usize];
    let mut host_out = vec![0u8; size as usize];
    let buffer = |label: &str, usage: wgpu::BufferUsages| {
        ctx.device().create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
    };
    let on_device = buffer("copy floor", U::STORAGE | U::COPY_DST | U::COPY_SRC);
    let read = buffer("copy floor read-back", U::MAP_READ | U::COPY_DST);
    let mut times = Vec::new();
    for run in 0..=runs {
        let t0 = Instant::now();
        ctx.queue().write_buffer(&on_device, 0, &host_in);
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&on_device, 0, &read, 0, size);
        let index = ctx.submit(encoder);
        let slice = read.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        ctx.wait(Some(index))?;
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(GpuError::DeviceLost { why: e.to_string() }),
            Err(_) => return Err(GpuError::DeviceLost { why: "the copy's read-back never completed".into() }),
        }
        {
            let view = slice.get_mapped_range().map_err(|e| GpuError::DeviceLost { why: e.to_string() })?;
            host_out.copy_from_slice(&view);
        }
        read.unmap();
        if run > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    if host_out != host_in {
        return Err(GpuError::Job { why: "the copy floor's bytes came back changed".into() });
    }
    Ok(crate::run::backend::median_s(times))
}

/// [`Backend::time_resident`] on wgpu: storage buffers in and out, [`WgpuResident`].
fn time_resident(ctx: &WgpuContext, chain: &DesignedChain, input: &[f32], rows: usize, frames: usize, unit: usize, runs: usize) -> Result<ResidentTiming, GpuError> {
    use std::time::Instant;
    use wgpu::BufferUsages as U;
    let bytes = (rows * frames * 4) as u64;
    if input.len() < rows * frames {
        return Err(GpuError::Job { why: format!("{} samples for {rows} rows x {frames} frames", input.len()) });
    }
    let buffer = |label, usage| ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(4), usage, mapped_at_creation: false });
    let src = buffer("resident bench in", U::STORAGE | U::COPY_SRC | U::COPY_DST);
    let dst = buffer("resident bench out", U::STORAGE | U::COPY_SRC | U::COPY_DST);
    let read = buffer("resident bench read", U::MAP_READ | U::COPY_DST);
    ctx.queue.write_buffer(&src, 0, bytemuck::cast_slice(&input[..rows * frames]));
    ctx.wait(Some(ctx.submit(ctx.device.create_command_encoder(&Default::default()))))?;
    let mut resident = WgpuResident::new(ctx, chain, rows, unit)?;
    let (mut filter, mut copy) = (Vec::new(), Vec::new());
    let mut output = Vec::new();
    for run in 0..=runs {
        resident.reset();
        let t0 = Instant::now();
        let index = resident.process(&src, &dst, frames)?;
        ctx.wait(index)?;
        let dt = t0.elapsed().as_secs_f64();
        if run == 0 {
            // The first run warms up (and its output is read back, outside the timing).
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&dst, 0, &read, 0, bytes);
            ctx.wait(Some(ctx.submit(encoder)))?;
            let slice = read.slice(..bytes);
            let (tx, rx) = std::sync::mpsc::channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            ctx.wait(None)?;
            rx.recv().map_err(|e| GpuError::DeviceLost { why: e.to_string() })?.map_err(|e| GpuError::DeviceLost { why: e.to_string() })?;
            output = bytemuck::cast_slice::<u8, f32>(&slice.get_mapped_range().map_err(|e| GpuError::DeviceLost { why: e.to_string() })?).to_vec();
            read.unmap();
        } else {
            filter.push(dt);
        }
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
        let t0 = Instant::now();
        ctx.wait(Some(ctx.submit(encoder)))?;
        if run > 0 {
            copy.push(t0.elapsed().as_secs_f64());
        }
    }
    Ok(ResidentTiming { filter_s: median_s(filter), copy_s: median_s(copy), output })
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
