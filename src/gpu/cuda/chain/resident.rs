//! [`CudaResident`]: a designed chain over memory that already lives on the device (a
//! PyTorch tensor's, a CuPy array's, a `CudaSlice`), on the caller's CUDA stream, the
//! state kept on the device between calls. The same grid as the wgpu backend's
//! `WgpuResident` (see its module): the stream is cut into units of the chain's largest
//! block, each run with a whole unit's chunking, and a call that ends inside a unit keeps
//! that input and the unit's start state on the device, so a stream of calls equals one
//! call bit for bit (FFT-partitioned FIRs: within the tolerance).
//!
//! Per unit: the rows are gathered into the chain's work buffer by one 2-D copy (the
//! caller's rows are `frames` apart, the work buffer's are packed), the stages run as the
//! chain's captured graph for that block length, and one 2-D copy scatters the output.
//! The chain's stream waits for the caller's stream before, and the caller's stream for
//! the chain's after (events: no host synchronisation).
//!
//! A caller's float64 arrays ([`Sample::F64`]) are gathered and scattered by the row
//! kernels of `kernels/convert.cu` instead of 2-D copies: the chain runs on float32
//! samples (float64 inside the cascades that need it), so a float64 array's output is
//! the float32 path's, widened: within the reference tolerance, not float64-exact.

use super::CudaChain;
use crate::chain::DesignedChain;
use crate::gpu::cuda::{CudaDevice, CudaError};
use crate::gpu::realize::chunking;
use crate::gpu::GpuError;
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

fn job(why: String) -> CudaError {
    CudaError::Gpu(GpuError::Job { why })
}

/// The sample type of a caller's device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    F32,
    /// Converted to float32 on the way in and back on the way out (on the device).
    F64,
}

impl Sample {
    fn bytes(self) -> usize {
        match self {
            Sample::F32 => 4,
            Sample::F64 => 8,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sample::F32 => "float32",
            Sample::F64 => "float64",
        }
    }
}

/// One side of a row copy: a device address, its row stride and first sample (in
/// samples of its type), and the type.
#[derive(Clone, Copy)]
struct Rows {
    ptr: u64,
    stride: usize,
    at: usize,
    sample: Sample,
}

fn rows32(ptr: u64, stride: usize, at: usize) -> Rows {
    Rows { ptr, stride, at, sample: Sample::F32 }
}

/// A designed chain on a CUDA device for `rows` rows: the channels of a
/// `(channels, frames)` array or the rows of a `(batch, channels, frames)` one, float32
/// (or float64: [`CudaResident::process_raw_as`]), row-major and contiguous (row `r`
/// starts `r * frames` samples in).
pub struct CudaResident {
    chain: CudaChain,
    unit: usize,
    /// Frames of the current unit that earlier calls already gave (0..unit).
    carried: usize,
    /// The current unit's input so far, row `r` at `r * unit` frames.
    carry: CudaSlice<f32>,
    /// The device state at the current unit's start.
    saved_states: CudaSlice<f32>,
    saved_history: CudaSlice<f32>,
    clear: bool,
    /// Recorded on the caller's stream (the chain's waits for it), and on the chain's
    /// (the caller's waits for it).
    caller_ready: CudaEvent,
    chain_done: CudaEvent,
}

impl CudaResident {
    /// Prepares `chain` for `rows` rows in units of `unit_frames` frames. Declined as
    /// [`CudaChain::new`] declines (precision, size), with the reason.
    pub fn new(dev: &Arc<CudaDevice>, chain: &DesignedChain, rows: usize, unit_frames: usize) -> Result<CudaResident, CudaError> {
        if rows == 0 {
            return Err(job("a resident chain needs at least one row".into()));
        }
        // No host staging: the data never passes through host memory here.
        let mut chain = CudaChain::build(dev, chain, rows, unit_frames, false)?;
        let unit = chain.max_frames;
        chain.fixed_chunking = Some(chunking(unit, chain.sequential_limit()));
        // Resident calls run the kernels alone; the overlapped stream is not used.
        let stream = chain.stream.clone();
        let carry = stream.alloc_zeros::<f32>(rows * unit)?;
        let saved_states = stream.alloc_zeros::<f32>(chain.states.len())?;
        let saved_history = stream.alloc_zeros::<f32>(chain.history.len())?;
        let caller_ready = dev.ctx.new_event(None)?;
        let chain_done = dev.ctx.new_event(None)?;
        stream.synchronize()?;
        Ok(CudaResident { chain, unit, carried: 0, carry, saved_states, saved_history, clear: true, caller_ready, chain_done })
    }

    /// Rows filtered per call.
    pub fn rows(&self) -> usize {
        self.chain.channels
    }

    /// Frames per unit of the stream's grid.
    pub fn unit_frames(&self) -> usize {
        self.unit
    }

    /// The chain's own stream (for callers that keep their buffers on it).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.chain.stream
    }

    /// [`super::CudaChain::set_fused`] on the chain (decided by the unit's frames: every
    /// call of the stream runs the same kernels).
    pub fn set_fused(&mut self, group_max: usize) -> Result<(), CudaError> {
        self.chain.set_fused(group_max)
    }

    /// [`super::CudaChain::fused_status`].
    pub fn fused_status(&self) -> (usize, Vec<bool>) {
        self.chain.fused_status()
    }

    /// Back to silence at the start of a new grid.
    pub fn reset(&mut self) {
        self.carried = 0;
        self.clear = true;
    }

    /// [`CudaResident::process_raw`] over buffers of this process's own, on the chain's
    /// stream: `input` into `output`.
    pub fn process(&mut self, input: &CudaSlice<f32>, output: &mut CudaSlice<f32>, frames: usize) -> Result<(), CudaError> {
        let stream = self.chain.stream.clone();
        self.check_len(input.len().min(output.len()), frames)?;
        let (src, dst) = (input.device_ptr(&stream).0, output.device_ptr(&stream).0);
        // SAFETY: both pointers come from live allocations of this context holding at least
        // rows x frames floats (checked above), the stream is the chain's own, and the
        // borrows keep the buffers alive for the call; the copies that use them are
        // ordered on that stream before any later use of the buffers on it.
        unsafe { self.process_raw(src, dst, frames, stream.cu_stream() as u64) }
    }

    /// The same in place.
    pub fn process_in_place(&mut self, data: &mut CudaSlice<f32>, frames: usize) -> Result<(), CudaError> {
        let stream = self.chain.stream.clone();
        self.check_len(data.len(), frames)?;
        let ptr = data.device_ptr(&stream).0;
        // SAFETY: as in `process`; `data` is borrowed mutably for the call.
        unsafe { self.process_raw(ptr, ptr, frames, stream.cu_stream() as u64) }
    }

    fn check_len(&self, len: usize, frames: usize) -> Result<(), CudaError> {
        if len < self.rows() * frames {
            return Err(job(format!("a buffer of {len} floats for {} rows x {frames} frames", self.rows())));
        }
        Ok(())
    }

    /// Filters `frames` frames of every row from device memory at `input` into `output`
    /// (the same address: in place), continuing the stream from the state on the device,
    /// ordered on the caller's CUDA stream `stream` (0: the legacy default stream): the
    /// work starts after what the caller enqueued before, and what the caller enqueues
    /// after sees the output. Returns without waiting for the device. Addresses that are
    /// not device memory of this context, or whose allocation is too short for
    /// `rows x frames` floats, are refused by name. On a driver error the stream is reset
    /// to silence and the error says so.
    ///
    /// # Safety
    /// `stream` must be a live stream of this device's primary context (or 0), and no
    /// other work may write `input` or touch `output` until this call's work is done on
    /// that stream.
    pub unsafe fn process_raw(&mut self, input: u64, output: u64, frames: usize, stream: u64) -> Result<(), CudaError> {
        // SAFETY: the caller's contract, for float32 memory.
        unsafe { self.process_raw_as(input, output, frames, stream, Sample::F32) }
    }

    /// [`CudaResident::process_raw`] over memory of samples of type `sample` (input and
    /// output alike): float64 is converted to float32 rows on the way in and back on the
    /// way out, on the device (see the module's note on its accuracy).
    ///
    /// # Safety
    /// As [`CudaResident::process_raw`].
    pub unsafe fn process_raw_as(&mut self, input: u64, output: u64, frames: usize, stream: u64, sample: Sample) -> Result<(), CudaError> {
        let rows = self.rows();
        self.chain.dev.ctx.bind_to_thread()?;
        let bytes = (rows * frames * sample.bytes()) as u64;
        for (name, ptr) in [("input", input), ("output", output)] {
            let (start, size) = range_of(ptr).map_err(|e| job(format!("the {name} address {ptr:#x} is not device memory of this context ({e})")))?;
            if ptr + bytes > start + size {
                return Err(job(format!(
                    "the {name} allocation holds {} bytes from {ptr:#x}; {rows} rows x {frames} frames of {} need {bytes}",
                    start + size - ptr,
                    sample.name()
                )));
            }
        }
        if frames == 0 {
            return Ok(());
        }
        let caller = stream as sys::CUstream;
        let ours = self.chain.stream.cu_stream();
        // SAFETY: both events and streams are live in this context (bound above).
        let ordered = unsafe { order(self.caller_ready.cu_event(), caller, ours) };
        let ran = ordered.and_then(|()| self.units(input, output, frames, sample));
        // SAFETY: as above, the other way round.
        let ordered = ran.and_then(|()| unsafe { order(self.chain_done.cu_event(), ours, caller) });
        if let Err(e) = ordered {
            self.reset();
            return Err(job(format!("the device refused the job ({e}); the stream was reset to silence")));
        }
        Ok(())
    }

    /// The grid's units of this call on the chain's stream.
    fn units(&mut self, input: u64, output: u64, frames: usize, sample: Sample) -> Result<(), CudaError> {
        let (rows, unit) = (self.rows(), self.unit);
        let stream = self.chain.stream.clone();
        let dev = self.chain.dev.clone();
        let work = self.chain.work.device_ptr(&stream).0;
        let carry = self.carry.device_ptr(&stream).0;
        let caller = |ptr: u64, at: usize| Rows { ptr, stride: frames, at, sample };
        let mut at = 0;
        while self.carried + (frames - at) >= unit {
            let (c, n) = (self.carried, unit - self.carried);
            self.begin_unit(c == 0)?;
            // SAFETY (all copies here): every range lies inside its allocation: the
            // caller's were checked in `process_raw_as` (for its sample type), `work` and
            // `carry` hold rows x unit floats.
            unsafe {
                copy_rows(&dev, rows32(carry, unit, 0), rows32(work, unit, 0), rows, c, &stream)?;
                copy_rows(&dev, caller(input, at), rows32(work, unit, c), rows, n, &stream)?;
            }
            self.chain.launch_kernels(0, unit)?;
            unsafe { copy_rows(&dev, rows32(work, unit, c), caller(output, at), rows, n, &stream)? };
            self.carried = 0;
            at += n;
        }
        if at < frames {
            let (c, n) = (self.carried, frames - at);
            let len = c + n;
            self.begin_unit(c == 0)?;
            unsafe {
                // Kept before the output is written (it may be the input's memory).
                copy_rows(&dev, caller(input, at), rows32(carry, unit, c), rows, n, &stream)?;
                copy_rows(&dev, rows32(carry, unit, 0), rows32(work, len, 0), rows, len, &stream)?;
            }
            self.chain.launch_kernels(0, len)?;
            unsafe { copy_rows(&dev, rows32(work, len, c), caller(output, at), rows, n, &stream)? };
            self.carried = len;
        }
        Ok(())
    }

    /// A unit's start: the state cleared (new stream), saved (a new unit) or put back to
    /// the unit's start (a unit begun by an earlier call).
    fn begin_unit(&mut self, fresh: bool) -> Result<(), CudaError> {
        let stream = self.chain.stream.clone();
        if self.clear {
            stream.memset_zeros(&mut self.chain.states)?;
            stream.memset_zeros(&mut self.chain.history)?;
            self.clear = false;
        }
        if fresh {
            stream.memcpy_dtod(&self.chain.states, &mut self.saved_states)?;
            stream.memcpy_dtod(&self.chain.history, &mut self.saved_history)?;
        } else {
            stream.memcpy_dtod(&self.saved_states, &mut self.chain.states)?;
            stream.memcpy_dtod(&self.saved_history, &mut self.chain.history)?;
        }
        Ok(())
    }
}

/// `to` waits for what `from` has enqueued so far.
///
/// # Safety
/// `event`, `from` and `to` are live in the current context.
pub(in crate::gpu::cuda) unsafe fn order(event: sys::CUevent, from: sys::CUstream, to: sys::CUstream) -> Result<(), CudaError> {
    // SAFETY: the caller's contract.
    unsafe {
        sys::cuEventRecord(event, from).result()?;
        sys::cuStreamWaitEvent(to, event, 0).result()?;
    }
    Ok(())
}

/// The allocation `ptr` lies in: its start and size in bytes.
pub(in crate::gpu::cuda) fn range_of(ptr: u64) -> Result<(u64, u64), CudaError> {
    let mut start: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: each query writes one value of the attribute's type (a device pointer, a
    // size_t) to the given address; the driver validates `ptr` itself.
    unsafe {
        sys::cuPointerGetAttribute((&mut start as *mut sys::CUdeviceptr).cast(), sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr).result()?;
        sys::cuPointerGetAttribute((&mut size as *mut usize).cast(), sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr).result()?;
    }
    Ok((start, size as u64))
}

/// `fx_rows_params` of kernels/convert_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RowsParams {
    src_stride: u32,
    src_at: u32,
    dst_stride: u32,
    dst_at: u32,
    rows: u32,
    n: u32,
    pad0: u32,
    pad1: u32,
}
// SAFETY: plain 32-bit fields, `#[repr(C)]`, laid out as the kernels' struct.
unsafe impl cudarc::driver::DeviceRepr for RowsParams {}

/// `n` samples of each of `rows` rows from `src` to `dst` on `stream`: one 2-D copy
/// where both are float32, else one launch of a row-conversion kernel (convert.cu).
///
/// # Safety
/// Both ranges lie inside live device allocations of the current context.
unsafe fn copy_rows(dev: &CudaDevice, src: Rows, dst: Rows, rows: usize, n: usize, stream: &Arc<CudaStream>) -> Result<(), CudaError> {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    if n == 0 || rows == 0 {
        return Ok(());
    }
    let function = match (src.sample, dst.sample) {
        (Sample::F32, Sample::F32) => {
            let copy = sys::CUDA_MEMCPY2D {
                srcXInBytes: src.at * 4,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                srcHost: std::ptr::null(),
                srcDevice: src.ptr,
                srcArray: std::ptr::null_mut(),
                srcPitch: src.stride * 4,
                dstXInBytes: dst.at * 4,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: dst.ptr,
                dstArray: std::ptr::null_mut(),
                dstPitch: dst.stride * 4,
                WidthInBytes: n * 4,
                Height: rows,
            };
            // SAFETY: the caller's contract; `copy` lives across the call (the driver
            // reads the descriptor before returning).
            unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()).result()? };
            return Ok(());
        }
        (Sample::F64, Sample::F32) => &dev.rows_f64_to_f32,
        (Sample::F32, Sample::F64) => &dev.rows_f32_to_f64,
        // Not formed here: one side of every copy is the chain's own float32 buffer.
        (Sample::F64, Sample::F64) => return Err(job("a float64-to-float64 row copy".into())),
    };
    let fits = |v: usize| u32::try_from(v).map_err(|_| job(format!("a row copy of {rows} rows x {n} samples (stride {v}) is too large for one launch")));
    let p = RowsParams {
        src_stride: fits(src.stride)?,
        src_at: fits(src.at)?,
        dst_stride: fits(dst.stride)?,
        dst_at: fits(dst.at)?,
        rows: fits(rows)?,
        n: fits(n)?,
        ..RowsParams::default()
    };
    let cfg = LaunchConfig { grid_dim: (p.n.div_ceil(256), p.rows.min(65_535), 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let mut launch = stream.launch_builder(function);
    launch.arg(&p).arg(&src.ptr).arg(&dst.ptr);
    // SAFETY: the arguments match ferrofx_rows_f64_to_f32(fx_rows_params, const double*,
    // float*) and ferrofx_rows_f32_to_f64(fx_rows_params, const float*, double*) (device
    // addresses passed as 64-bit values); every row's range lies inside its allocation
    // (the caller's contract), the kernel forms no other index.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}
