//! Offloading blocks to a worker thread that owns an accelerator, without ever risking the
//! audio stream.

pub mod offload;
pub mod realize;
