//! The CUDA backend: the kernels of `kernels/` (PTX embedded from `kernels/ptx/`, built
//! by `scripts/build-ptx.sh`) launched through `cudarc`'s driver API, loaded at run time.
//!
//! - [`context`]: opening the device. Every build has this module; without an NVIDIA
//!   driver or device, opening returns [`CudaError::Unavailable`] (`CUDA unavailable:
//!   ...`) and the router does not offer CUDA. Nothing here panics or aborts for a
//!   missing driver: the library's presence is checked before `cudarc` touches it.
//! - [`chain`]: [`CudaChain`], a designed chain's device buffers and launches for one
//!   channel count and largest block, and one job's round trip through pinned host
//!   memory: the upload, the stages' kernels and the download captured once per block
//!   length as a CUDA graph and replayed (one launch per block); coefficient tables are
//!   written to device buffers, never into the graph, so new coefficients of the same
//!   shape are written in place without a new capture. Offline streams keep two blocks
//!   in flight on three CUDA streams (uploads, kernels, downloads), the state on the
//!   device.
//!   [`CudaResident`] filters buffers that already live on the device (the caller's
//!   pointers, on the caller's stream), the state kept there, a stream of calls equal to
//!   one call bit for bit (the grid of `gpu::wgpu::WgpuResident`).
//! - [`sos64`]: [`CudaSos64`], one cascade in float64 over a caller's float64 device rows
//!   (the PyTorch operator's device path: forward and adjoint filters).
//! - [`adjoint`]: [`CudaAdjoint64`], the rest of each section's backward step for the
//!   PyTorch operator's gradients (the next gradient and the coefficients' sums, one pass).
//! - [`backend`]: [`CudaBackend`], the [`crate::run::backend::Backend`] the router lists.
//!
//! The arithmetic is the wgpu backend's (the delta state-space form of
//! [`crate::gpu::realize`], with the same error estimate choosing each cascade's
//! precision: float32, or float64 (`kernels/sos64.cu`) where float32 would miss, or
//! declined where both would) and is tested on the CPU without a GPU
//! (`crates/kernel-host`). FIRs up to [`DIRECT_MAX_TAPS`] taps
//! run by the tiled direct kernel, longer ones (up to the chain format's million taps)
//! by uniformly partitioned FFT convolution (`kernels/fft_fir.cu`: a Stockham radix-2 FFT
//! with twiddles computed in float64 on the host; no cuFFT, so only the driver is needed).
//!
//! Invariant: nothing outside this folder names a CUDA type.

pub mod adjoint;
pub mod backend;
pub mod chain;
pub mod context;
pub mod sos64;

pub use adjoint::CudaAdjoint64;
pub use backend::{open_backend, CudaBackend};
pub use chain::{CudaChain, CudaResident, Sample};
pub use sos64::CudaSos64;
pub use context::CudaDevice;

use crate::gpu::GpuError;

/// Blocks up to this many frames run on the channel-parallel kernel (one thread per
/// channel); longer ones on the time-parallel scan. Measured on an H200 (realtime_block,
/// 24 sections, stereo, round trip): the channel-parallel kernel 41 and 57 us at 32 and
/// 64 frames against the scan's 73; at 128 frames the scan is ahead (82 against 90 us),
/// and from 256 frames far ahead (90 against 156 us).
pub const SEQUENTIAL_MAX_FRAMES: usize = 64;

/// How a device's chains run, fixed when the device is opened (from the core's
/// [`crate::gpu::GpuTuning`], whose defaults these are): for measuring the two
/// kernels and the overlap on a given GPU (`cargo xtask bench --backend cuda
/// --cuda-sequential-max 0`, `--cuda-overlap off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaTuning {
    /// Blocks up to this many frames run on the channel-parallel kernel (0: every block
    /// on the scan). The float32 estimate that declines a cascade is made for this value.
    pub sequential_max_frames: usize,
    /// Offline streams overlap uploads, kernels and downloads (see
    /// [`CudaChain::process_slices`]); off, each block is one synchronous job.
    pub overlap: bool,
    /// Float32 cascades run through the fused scan (`kernels/sos_fused.cu`) on blocks of
    /// at least [`chain::FUSED_MIN_FRAMES`] frames, in groups of up to this many sections
    /// (at most 8; 0: off); so do [`CudaSos64`]'s float64 rows (the PyTorch operator's),
    /// in the kernels' double form. Off by default until a device has measured it
    /// (`cargo xtask bench --backend cuda --cuda-fused 8`; `FERROFX_CUDA_FUSED=8` for the
    /// Python package).
    pub fused_sections: usize,
    /// Long calls of [`CudaChain::process_slices`] (at least [`chain::REGISTER_MIN_BYTES`])
    /// register the caller's buffers with the driver and copy blocks by DMA straight from
    /// and into them, no pinned staging copy (off by default until a device has measured
    /// it: `--cuda-register-host on`).
    pub register_host: bool,
    /// Blocks up to this many frames run sequentially, each run of consecutive float32
    /// cascades through the warp pipeline (`kernels/sos_pipe.cu`: the sections at once,
    /// a lane each, frames + sections - 1 steps; the sequential kernel's bits; 0: off). Off by
    /// default until a device has measured it (`--cuda-pipeline 4096`).
    pub pipeline_max_frames: usize,
    /// The chains' pinned staging slots are write-combined host memory (faster for the
    /// device to read, uncached for the host, which reads every block back out of
    /// them). Off by default: cached pinned memory, which NVIDIA's guide recommends for
    /// memory the host reads; the write-combined slots were the chains' until
    /// 2026-11-28, and both are timed by `gpu-check.sh throughput`
    /// (`--cuda-staging-wc on`).
    pub staging_write_combined: bool,
}

impl Default for CudaTuning {
    fn default() -> CudaTuning {
        CudaTuning { sequential_max_frames: SEQUENTIAL_MAX_FRAMES, overlap: true, fused_sections: 0, register_host: false, pipeline_max_frames: 0, staging_write_combined: false }
    }
}
/// FIRs up to this many taps run by direct convolution, longer ones by FFT (as on wgpu).
pub const DIRECT_MAX_TAPS: usize = crate::gpu::design::DIRECT_MAX_TAPS;
/// The longest FIR the backend runs: the chain format's limit.
pub const MAX_CUDA_FIR_TAPS: usize = crate::gpu::design::MAX_FIR_TAPS;

/// Why the CUDA backend cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// No driver, no device, or a device too old for the kernels.
    #[error("CUDA unavailable: {0}")]
    Unavailable(String),
    /// The driver refused a call (out of memory, a launch failure, a lost device).
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// The chain or job does not fit this path (precision, size, shape).
    #[error(transparent)]
    Gpu(#[from] GpuError),
}
