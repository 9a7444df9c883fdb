//! Where a chain runs, device-neutral: nothing here names a device API.
//!
//! - [`backend`]: the [`backend::Backend`] trait and the CPU backend (the GPU backends in
//!   `src/gpu/` implement it; `src/backends.rs` lists them and chooses).
//! - [`stream`]: the pipelined block loop over a backend (offline render, benchmarks).
//! - [`blocks`]: the link's cost model that chooses a host-to-host GPU stream's block.
//! - [`offload`]: the audio side of any accelerator: pipelined jobs through lock-free
//!   rings, each carrying its filter state in and out, with an exact CPU fallback for
//!   late jobs; a backend plugs in as an [`offload::Executor`].
//! - [`router`]: the cost model that decides CPU or GPU per block, with hysteresis.
//! - [`realtime`]: a host's blocks of any size re-blocked through an offload, routed by
//!   policy (GPU or the router), one offload block of latency: what the plugin runs.

pub mod backend;
pub mod blocks;
pub mod offload;
pub mod realtime;
pub mod router;
pub mod stream;
