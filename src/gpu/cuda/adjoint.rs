//! [`CudaAdjoint64`]: one backward step of a second-order section over a caller's float64
//! device rows (`kernels/adjoint.cu`), for the PyTorch layer's gradients on CUDA tensors
//! (`python/ferrofx/torch.py`, `_adjoint`): from the section's adjoint `lambda` (its
//! all-pole part already run over the reversed gradient by [`super::CudaSos64`]) and the
//! section's input and output, the gradient of the section before and the six sums of
//! the coefficients' gradient, in one pass over the four arrays instead of six dot
//! products and three shifted multiply-adds. `lambda` and the gradients are in reversed
//! time, each row padded with two leading zeros; the section's input and output in
//! forward time as the forward pass wrote them (read backwards: no reversed copy of
//! them is made; the layout `kernels/adjoint_math.h` describes); the kernel's
//! arithmetic is tested on the host inside the whole adjoint against the core's
//! (`crates/kernel-host/tests/adjoint.rs`).

use super::chain::resident::{order, range_of};
use super::{CudaDevice, CudaError};
use crate::gpu::GpuError;
use cudarc::driver::{CudaEvent, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// `fx_adjoint_params` of kernels/adjoint_math.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct AdjointParams {
    total: u64,
    row_len: u32,
    pad0: u32,
    b0: f64,
    b1: f64,
    b2: f64,
}
// SAFETY: `#[repr(C)]`, a u64, two u32 and three f64: the kernels' struct, no padding.
unsafe impl DeviceRepr for AdjointParams {}

/// Threads per block (`FX_ADJ_THREADS`).
const THREADS: u32 = 256;
/// The most blocks one step launches: the size of the sums' partials a caller provides
/// (`6 x MAX_BLOCKS` doubles at most).
pub const ADJOINT_MAX_BLOCKS: usize = 1024;

fn job(why: String) -> CudaError {
    CudaError::Gpu(GpuError::Job { why })
}

/// The step kernel on one device, ordered on callers' streams.
pub struct CudaAdjoint64 {
    dev: Arc<CudaDevice>,
    stream: Arc<CudaStream>,
    caller_ready: CudaEvent,
    done: CudaEvent,
}

impl CudaAdjoint64 {
    pub fn new(dev: &Arc<CudaDevice>) -> Result<CudaAdjoint64, CudaError> {
        let stream = dev.stream()?;
        let (caller_ready, done) = (dev.ctx.new_event(None)?, dev.ctx.new_event(None)?);
        Ok(CudaAdjoint64 { dev: dev.clone(), stream, caller_ready, done })
    }

    /// Blocks a step over `total` doubles launches (the rows of sums it writes to
    /// `partial`): one per [`THREADS`] samples, at most [`ADJOINT_MAX_BLOCKS`].
    pub fn blocks_for(total: usize) -> usize {
        total.div_ceil(THREADS as usize).clamp(1, ADJOINT_MAX_BLOCKS)
    }

    /// One step over `rows` rows of `row_len` float64 samples (frames + 2) at device
    /// addresses `lam` (reversed, two leading zeros per row), `xs` and `ys` (forward, the
    /// two samples after the frames never read): the next gradient (reversed, as `lam`)
    /// into `g`, each block's six sums (`[db0, db1, db2, da0, da1, da2]`) into `partial`
    /// (6 per block, [`CudaAdjoint64::blocks_for`] blocks: the number returned), ordered on
    /// the caller's CUDA stream `stream` (0: the legacy default stream). Returns without
    /// waiting for the device. Refused by name: an address that is not device memory of
    /// this context or whose allocation is too short, `g` overlapping `lam`, `xs` or
    /// `ys`, rows shorter than 2.
    ///
    /// # Safety
    /// `stream` must be a live stream of this device's primary context (or 0), and no
    /// other work may touch the memory until this call's work is done on that stream.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn step_raw(&mut self, b: [f64; 3], lam: u64, xs: u64, ys: u64, g: u64, partial: u64, rows: usize, row_len: usize, stream: u64) -> Result<usize, CudaError> {
        self.dev.ctx.bind_to_thread()?;
        if row_len < 2 {
            return Err(job(format!("rows of {row_len} samples (frames + 2, at least 2)")));
        }
        if rows == 0 {
            return Ok(0);
        }
        let total = rows.checked_mul(row_len).filter(|t| t.checked_mul(8).is_some()).ok_or_else(|| job(format!("{rows} rows x {row_len} samples")))?;
        let row_len32 = u32::try_from(row_len).map_err(|_| job(format!("rows of {row_len} samples (at most 2^32 - 1)")))?;
        let blocks = Self::blocks_for(total);
        let held = |name: &str, at: u64, doubles: usize| -> Result<(u64, u64), CudaError> {
            let (start, size) = range_of(at).map_err(|e| job(format!("{name}: the address {at:#x} is not device memory of this context ({e})")))?;
            let bytes = doubles as u64 * 8;
            if at + bytes > start + size {
                return Err(job(format!("{name}: the allocation holds {} bytes from {at:#x}; {doubles} doubles need {bytes}", start + size - at)));
            }
            Ok((at, at + bytes))
        };
        let lam_range = held("lambda", lam, total)?;
        let xs_range = held("xs", xs, total)?;
        let ys_range = held("ys", ys, total)?;
        let g_range = held("g", g, total)?;
        held("partial", partial, 6 * blocks)?;
        let overlaps = |r: (u64, u64)| g_range.0 < r.1 && r.0 < g_range.1;
        if overlaps(lam_range) {
            return Err(job("g overlaps lambda (each sample reads the two before it): give g its own buffer".into()));
        }
        if overlaps(xs_range) || overlaps(ys_range) {
            return Err(job("g overlaps xs or ys (they are read in the other time order): give g its own buffer".into()));
        }
        let p = AdjointParams { total: total as u64, row_len: row_len32, pad0: 0, b0: b[0], b1: b[1], b2: b[2] };
        let caller = stream as cudarc::driver::sys::CUstream;
        let ours = self.stream.cu_stream();
        // SAFETY: both events and streams are live in this context (bound above).
        let ordered = unsafe { order(self.caller_ready.cu_event(), caller, ours) };
        let ran = ordered.and_then(|()| {
            let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
            let mut launch = self.stream.launch_builder(&self.dev.adjoint_step64);
            launch.arg(&p).arg(&lam).arg(&xs).arg(&ys).arg(&g).arg(&partial);
            // SAFETY: the arguments match ferrofx_adjoint_step64(fx_adjoint_params, const
            // double*, const double*, const double*, double*, double*): lam, xs, ys and g
            // hold `total` doubles each and partial 6 x blocks (checked above), g does not
            // overlap lam (checked), and the kernel forms no other index.
            unsafe { launch.launch(cfg) }.map(|_| ()).map_err(CudaError::from)
        });
        // SAFETY: as above, the other way round.
        let ordered = ran.and_then(|()| unsafe { order(self.done.cu_event(), ours, caller) });
        ordered.map_err(|e| job(format!("the device refused the step ({e})")))?;
        Ok(blocks)
    }
}
