//! The GPU path: route blocks to a worker thread that owns an accelerator, without ever
//! risking the audio stream.
//!
//! - [`realize`]: sections in the delta state-space form the shaders run (accurate in
//!   `f32` near `z = 1`), scan tables, and a CPU model of the shader arithmetic.
//! - [`wgpu_backend`] (feature `wgpu`, on by default): adapter selection and
//!   [`wgpu_backend::GpuChain`], which runs a designed chain over blocks on the device.
//! - [`offload`]: the audio side: pipelined jobs through lock-free rings, each carrying
//!   its filter state in and out, with an exact CPU fallback for late jobs.
//! - [`router`]: the cost model that decides CPU or GPU, with hysteresis.
//! - [`realtime`]: a host's blocks of any size re-blocked through an offload, routed by
//!   policy (GPU or the router), one offload block of latency: what the plugin runs.

pub mod offload;
pub mod realize;
pub mod realtime;
pub mod router;
#[cfg(feature = "wgpu")]
pub mod wgpu_backend;

/// Why the GPU path cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found (searched backends {backends}): {why}")]
    NoAdapter { backends: String, why: String },
    #[error("the adapter {adapter} refused to open a device: {why}")]
    Device { adapter: String, why: String },
    #[error("not supported on the GPU path: {what}")]
    Unsupported { what: String },
    /// The GPU's float32 form of a cascade would miss the accuracy the CPU keeps.
    /// `stage` counts the designed chain's processors (each run of consecutive IIR,
    /// biquad, `sos` and `gain` stages is one cascade).
    #[error("declined by the GPU path: in float32, cascade {stage} of the chain would be off by about {estimate:.1e} of the output peak (the tolerance is 1e-4; the CPU backend runs it in float64)")]
    Precision { stage: usize, estimate: f64 },
    #[error("bad GPU job: {why}")]
    Job { why: String },
    #[error("the GPU device was lost: {why}")]
    DeviceLost { why: String },
}
