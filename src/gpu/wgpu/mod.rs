//! The wgpu backend: adapter selection, and a [`WgpuChain`] that runs a designed chain
//! (SOS cascades and direct FIRs) over blocks on the GPU.
//!
//! Everything is built once per (chain shape, channels, largest block): device, pipelines,
//! bind groups, buffers. A job then only writes its input and state, encodes the stages,
//! submits, and reads output and state back (the shape of wgpu's `repeated_compute`
//! example). Waiting on the device happens on the caller's thread, which is never the
//! audio thread: the realtime path goes through [`crate::run::offload`].
//!
//! Shaders: `shaders/sos.wgsl` (sequential and time-parallel scan of the delta form of
//! [`crate::gpu::realize`]), the same body in float64 after `shaders/sos_f64.wgsl` (float32:
//! after `sos_f32.wgsl`), for the cascades whose float32 form would miss the tolerance, on
//! devices with `SHADER_F64`; both with the section record and step of
//! `shaders/sos_step.wgsl`, which the opt-in `shaders/sos_pipe.wgsl` (short blocks, a
//! section per invocation) and `shaders/sos_fused.wgsl` (long blocks) sit beside),
//! `shaders/fir.wgsl` (direct convolution with workgroup
//! tiling for FIRs up to [`DIRECT_MAX_TAPS`], plus the history update) and
//! `shaders/fft_fir.wgsl` (uniformly partitioned overlap-save with a radix-2 Stockham FFT
//! for longer FIRs). A FIR's job state is its time-domain history either way.

//!
//! Files: `context.rs` (adapter and device), `chain/` ([`WgpuChain`]: buffers, bind
//! groups, one job's round trip), `pipelines.rs` (pipelines and layouts, built once per
//! device), `fir.rs` (the FFT-partitioned FIR path), `stream.rs`
//! ([`WgpuStream`], pipelined blocks for offline use), `resident.rs` ([`WgpuResident`]:
//! buffers that already live on the device, state kept there, a stream of calls equal to
//! one call bit for bit) and `executor.rs` (the offload
//! worker's executor), `backend.rs` (all of it as a `run::backend::Backend`).

mod backend;
mod chain;
mod context;
mod executor;
mod fused;
mod pipe;
pub use pipe::WGPU_PIPE_MAX_FRAMES;
mod fir;
mod pipelines;
mod resident;
mod stream;
mod update;

pub use backend::{open_backend, WgpuBackend};
pub use chain::WgpuChain;
pub use context::{AdapterReport, WgpuContext};
pub use resident::WgpuResident;
pub use stream::WgpuStream;

use std::time::Duration;

// One SOS body for both precisions, after the prelude that names the float type.
const SOS_WGSL: &str = concat!(include_str!("../../../shaders/sos_f32.wgsl"), include_str!("../../../shaders/sos_step.wgsl"), include_str!("../../../shaders/sos.wgsl"));
const SOS64_WGSL: &str = concat!(include_str!("../../../shaders/sos_f64.wgsl"), include_str!("../../../shaders/sos_step.wgsl"), include_str!("../../../shaders/sos.wgsl"));
// Both FIR shaders read their input through `input_at` (shaders/fir_input.wgsl).
const FUSED_WGSL: &str = include_str!("../../../shaders/sos_fused.wgsl");
// The pipeline for short blocks: float32, the same section arithmetic.
const PIPE_WGSL: &str = concat!(include_str!("../../../shaders/sos_f32.wgsl"), include_str!("../../../shaders/sos_step.wgsl"), include_str!("../../../shaders/sos_pipe.wgsl"));
const FIR_WGSL: &str = concat!(include_str!("../../../shaders/fir.wgsl"), include_str!("../../../shaders/fir_input.wgsl"));
const FFT_WGSL: &str = concat!(include_str!("../../../shaders/fft_fir.wgsl"), include_str!("../../../shaders/fir_input.wgsl"));

/// On a GPU, blocks up to this many frames take the sequential path (one invocation per
/// channel); longer ones the scan. On an NVIDIA H200 (Vulkan) the sequential path took
/// 286, 474 and 856 us per round trip at 128, 256 and 512 frames (24 sections, stereo)
/// while the scan took 161 us at 1,024 frames, more work; CUDA's two kernels, measured
/// side by side there, cross between 64 and 128 frames.
pub const SEQUENTIAL_MAX_FRAMES: usize = 64;
/// The same on a CPU adapter (lavapipe), where the scan's barriers are costly: measured
/// there, the scan took 1.9-2.3x the sequential path's time from 128 to 512 frames.
pub const SEQUENTIAL_MAX_FRAMES_CPU: usize = 512;

/// The sequential path's limit for `report`'s adapter.
pub fn sequential_max_for(report: &AdapterReport) -> usize {
    if report.is_cpu() {
        SEQUENTIAL_MAX_FRAMES_CPU
    } else {
        SEQUENTIAL_MAX_FRAMES
    }
}
/// Longest FIR the GPU runs (the chain format's limit).
pub const MAX_GPU_FIR_TAPS: usize = crate::gpu::design::MAX_FIR_TAPS;
/// FIRs up to this many taps run by direct convolution, longer ones FFT-partitioned.
pub const DIRECT_MAX_TAPS: usize = crate::gpu::design::DIRECT_MAX_TAPS;
/// Uniform slots are this far apart (WebGPU's guaranteed minimum alignment).
const PARAM_SLOT: u64 = 256;
/// Longest wait for one job before the device is considered lost.
const JOB_TIMEOUT: Duration = Duration::from_secs(60);
