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

/// The input rule every path applies before filtering: NaN, infinities and subnormals
/// become zero (`+0.0`), every other value passes unchanged.
#[inline(always)]
pub fn sanitize_sample(v: f32) -> f32 {
    // False for NaN (unordered), zero and subnormals (below the smallest normal) and
    // infinities (above the largest finite).
    if (f32::MIN_POSITIVE..=f32::MAX).contains(&v.abs()) {
        v
    } else {
        0.0
    }
}
