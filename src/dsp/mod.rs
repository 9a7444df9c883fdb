//! CPU kernels, realtime-safe by construction: each processor allocates in its
//! constructor only; `process`, `reset` and coefficient updates never allocate, lock,
//! log or panic.
//!
//! - [`sos`]: cascades of second-order sections in `f64` for many channels (the IIR path).
//! - [`fir`]: direct and partitioned-FFT convolution with zero latency.
//! - [`simd`]: the instruction set detected at run time and the multiply-add flavours the
//!   kernels are instantiated with.

pub mod fir;
pub mod simd;
pub mod sos;
