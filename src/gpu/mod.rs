//! Offloading blocks to a worker thread that owns an accelerator, without ever risking the
//! audio stream.
//!
//! Groundwork for the GPU issue: the audio-side scheduler ([`offload::Offload`]), its jobs,
//! lock-free rings and the exact CPU fallback exist and are tested with a CPU executor
//! running on the worker thread. The wgpu and CUDA executors (shaders, kernels, device
//! set-up) and the cost-model router are not built yet; nothing here is used by the engine
//! or the renderer so far.

pub mod offload;
