//! The CUDA backend as a [`Backend`]: [`CudaChain`] as the offload executor (each job
//! carries its state) and, for streams, a chain that keeps its state between blocks.

use super::{CudaChain, CudaDevice, CudaError, CudaResident};
use crate::chain::DesignedChain;
use crate::engine::ChainState;
use crate::run::backend::{median_s, Backend, Prepared, ResidentTiming, RunError};
use crate::run::offload::{ExecError, Executor, Job};
use std::sync::Arc;

/// The CUDA backend on one device.
pub struct CudaBackend {
    dev: Arc<CudaDevice>,
}

impl CudaBackend {
    /// Opens the first CUDA device.
    pub fn open() -> Result<CudaBackend, CudaError> {
        Self::open_tuned(super::CudaTuning::default())
    }

    /// Opens the first CUDA device with `tuning` for its chains.
    pub fn open_tuned(tuning: super::CudaTuning) -> Result<CudaBackend, CudaError> {
        Ok(CudaBackend { dev: CudaDevice::open_tuned(0, tuning)? })
    }
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }
}

/// Opens the first CUDA device (the cuda entry of the list in `src/backends.rs`) with the
/// tuning's CUDA fields.
pub fn open_backend(tuning: &crate::gpu::GpuTuning) -> Result<Arc<dyn Backend>, String> {
    let tuning = super::CudaTuning { sequential_max_frames: tuning.cuda_sequential_max_frames, overlap: tuning.cuda_overlap, fused_sections: tuning.cuda_fused_sections, register_host: tuning.cuda_register_host, pipeline_max_frames: tuning.cuda_pipeline_max_frames, staging_write_combined: tuning.cuda_staging_write_combined };
    CudaBackend::open_tuned(tuning).map(|b| Arc::new(b) as Arc<dyn Backend>).map_err(|e| e.to_string())
}

fn declined(e: CudaError) -> RunError {
    RunError::Declined { backend: "cuda", why: e.to_string() }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn describe(&self) -> String {
        format!("cuda on {}", self.dev.describe())
    }
    fn prepare(&self, chain: &DesignedChain, channels: usize, max_block: usize) -> Result<Box<dyn Prepared>, RunError> {
        let chain = CudaChain::new(&self.dev, chain, channels, max_block).map_err(declined)?;
        let state = chain.new_state();
        Ok(Box::new(CudaPrepared { chain, state }))
    }
    fn executor(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<Box<dyn Executor>, RunError> {
        Ok(Box::new(CudaChain::new(&self.dev, chain, channels, block).map_err(declined)?))
    }
    fn accepts(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<(), RunError> {
        CudaChain::accepts(&self.dev, chain, channels, block).map_err(declined)
    }
    fn time_resident(&self, chain: &DesignedChain, input: &[f32], rows: usize, frames: usize, unit_frames: usize, runs: usize) -> Result<ResidentTiming, RunError> {
        time_resident(&self.dev, chain, input, rows, frames, unit_frames, runs).map_err(declined)
    }
    fn time_host_copy(&self, bytes: usize, runs: usize) -> Result<f64, RunError> {
        time_host_copy(&self.dev, bytes, runs).map_err(declined)
    }
}

/// [`Backend::time_host_copy`] on CUDA: the bare copy floor, pinned host memory to the
/// device on one stream while other bytes come back from the device into pinned host
/// memory on another (PCIe carries both directions at once), both waited for.
fn time_host_copy(dev: &Arc<CudaDevice>, bytes: usize, runs: usize) -> Result<f64, CudaError> {
    use std::time::Instant;
    let n = bytes.div_ceil(4).max(1);
    // SAFETY: the allocations are plain pinned host memory of `n` f32s (any bit pattern is
    // a valid f32); `host_in` is filled before it is read, `host_out` is only written by
    // the copies and never read.
    let (mut host_in, mut host_out) = unsafe { (dev.ctx.alloc_pinned_with_flags::<f32>(n, 0)?, dev.ctx.alloc_pinned_with_flags::<f32>(n, 0)?) };
    host_in.as_mut_slice()?.fill(0.5);
    let (up, down) = (dev.ctx.new_stream()?, dev.ctx.new_stream()?);
    let mut on_device = up.alloc_zeros::<f32>(n)?;
    let coming_back = down.alloc_zeros::<f32>(n)?;
    up.synchronize()?;
    down.synchronize()?;
    let mut times = Vec::new();
    for run in 0..=runs {
        let t0 = Instant::now();
        up.memcpy_htod(&host_in, &mut on_device)?;
        down.memcpy_dtoh(&coming_back, &mut host_out)?;
        up.synchronize()?;
        down.synchronize()?;
        if run > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    Ok(median_s(times))
}

/// [`Backend::time_resident`] on CUDA: device allocations in and out, [`CudaResident`] on
/// its own stream, each run synchronised.
fn time_resident(dev: &Arc<CudaDevice>, chain: &DesignedChain, input: &[f32], rows: usize, frames: usize, unit: usize, runs: usize) -> Result<ResidentTiming, CudaError> {
    use std::time::Instant;
    let n = rows * frames;
    if input.len() < n {
        return Err(CudaError::Gpu(crate::gpu::GpuError::Job { why: format!("{} samples for {rows} rows x {frames} frames", input.len()) }));
    }
    let mut resident = CudaResident::new(dev, chain, rows, unit)?;
    let stream = resident.stream().clone();
    let src = stream.clone_htod(&input[..n])?;
    let mut dst = stream.alloc_zeros::<f32>(n.max(1))?;
    stream.synchronize()?;
    let (mut filter, mut copy) = (Vec::new(), Vec::new());
    let mut output = Vec::new();
    for run in 0..=runs {
        resident.reset();
        let t0 = Instant::now();
        resident.process(&src, &mut dst, frames)?;
        stream.synchronize()?;
        let dt = t0.elapsed().as_secs_f64();
        if run == 0 {
            output = stream.clone_dtoh(&dst)?;
        } else {
            filter.push(dt);
        }
        let t0 = Instant::now();
        stream.memcpy_dtod(&src, &mut dst)?;
        stream.synchronize()?;
        if run > 0 {
            copy.push(t0.elapsed().as_secs_f64());
        }
    }
    output.truncate(n);
    Ok(ResidentTiming { filter_s: median_s(filter), copy_s: median_s(copy), output })
}

impl Executor for CudaChain {
    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError> {
        // Straight from the job's input to the pinned slot and back into its output.
        self.process_into(&job.input, &mut job.output, job.frames, &mut job.state).map_err(exec_error)
    }

    fn updates_in_place(&self) -> bool {
        true
    }

    /// The device buffers the captured graphs read are rewritten: no capture.
    fn update(&mut self, chain: &DesignedChain) -> Result<(), ExecError> {
        self.set_coefficients(chain).map_err(exec_error)
    }
}

fn exec_error(e: CudaError) -> ExecError {
    match e {
        CudaError::Driver(d) => ExecError::DeviceLost(d.to_string()),
        other => ExecError::Failed(other.to_string()),
    }
}

/// A stream's chain: blocks submitted and collected through the overlapped stream (the
/// state on the device while blocks are in flight, on the host between streams).
struct CudaPrepared {
    chain: CudaChain,
    state: ChainState,
}

impl Prepared for CudaPrepared {
    fn depth(&self) -> usize {
        // Without the overlap (`CudaTuning::overlap` off), each block is one synchronous job.
        if self.chain.overlap() {
            super::chain::OVERLAP_DEPTH
        } else {
            0
        }
    }
    fn submit(&mut self, buffers: &[&[f32]], frames: usize) -> Result<(), RunError> {
        self.chain.submit_block(buffers, 0, frames, &self.state).map_err(declined)
    }
    fn collect(&mut self, buffers: &mut [&mut [f32]]) -> Result<usize, RunError> {
        if self.chain.blocks_in_flight() == 0 {
            return Err(RunError::NothingInFlight { backend: "cuda" });
        }
        self.chain.collect_block(buffers, 0, &mut self.state).map_err(declined)
    }
    fn in_flight(&self) -> usize {
        self.chain.blocks_in_flight()
    }
    fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        let channels = self.chain.channels();
        if buffers.len() != channels {
            return Err(RunError::Channels { expected: channels, found: buffers.len() });
        }
        // Blocks of up to the chain's largest, the host's copies overlapping the device.
        self.chain.process_slices(buffers, &mut self.state).map_err(declined)
    }
    fn reset(&mut self) {
        self.chain.abandon();
        self.state = self.chain.new_state();
    }
}
