//! [`WgpuResident`]: a designed chain over buffers that already live on the device. The
//! caller's `wgpu::Buffer`s go in and come out; nothing passes through host memory, and
//! the filter state stays on the device between calls.
//!
//! **A stream of calls equals one call, bit for bit.** The scan kernel's rounding depends
//! on how a block is cut into chunks, so the resident path cuts the stream on a fixed grid:
//! *units* of the chain's largest block, counted from the start (or the last reset), each
//! run with the chunking of a whole unit. A call that ends inside a unit runs the unit so
//! far (the samples after the call's end cannot change the earlier outputs: a chunk's
//! output depends only on the chunks before it), keeps that input on the device, and puts
//! the state back to the unit's start; the next call runs the whole unit again from there
//! and writes only its new part. So a call costs at most one unit of extra work, and no
//! split of the stream changes a bit of the output. This holds for SOS cascades and direct
//! FIRs; FIR stages longer than [`super::DIRECT_MAX_TAPS`] taps are FFT-partitioned, whose
//! sums mix a segment's samples, so there a split stream stays within the reference
//! tolerance but is not bit-identical.

use super::{WgpuChain, WgpuContext};
use crate::chain::DesignedChain;
use crate::gpu::realize::chunking;
use crate::gpu::GpuError;

/// A designed chain on a device for `rows` rows of samples: the channels of a
/// `(channels, frames)` buffer or the rows of a `(batch, channels, frames)` one (row-major,
/// float32, so row `r` starts at byte `4 * r * frames`), all in one launch plan. The state
/// of each row stays on the device between calls ([`WgpuResident::process`]).
pub struct WgpuResident {
    chain: WgpuChain,
    /// Frames per unit of the grid (the chain's largest block), and its scan chunking.
    unit: usize,
    chunks: (usize, usize),
    /// Frames of the current unit that earlier calls already gave (0..unit).
    carried: usize,
    /// The current unit's input so far, row `r` at `r * unit` frames.
    carry: wgpu::Buffer,
    /// The device state at the current unit's start (SOS states and FIR histories).
    saved_states: wgpu::Buffer,
    saved_history: wgpu::Buffer,
    /// The device state must be cleared before the next unit (new or reset).
    clear: bool,
}

impl WgpuResident {
    /// Prepares `chain` for `rows` rows, cutting streams into units of `unit_frames` frames
    /// (larger units: fewer launches; a unit is the most one call recomputes). Declined as
    /// [`WgpuChain::new`] declines (precision, size), with the reason.
    pub fn new(ctx: &WgpuContext, chain: &DesignedChain, rows: usize, unit_frames: usize) -> Result<WgpuResident, GpuError> {
        if rows == 0 {
            return Err(GpuError::Job { why: "a resident chain needs at least one row".into() });
        }
        let chain = WgpuChain::new(ctx, chain, rows, unit_frames)?;
        let unit = chain.max_frames();
        let chunks = chunking(unit, chain.sequential_limit());
        let device = &ctx.device;
        use wgpu::BufferUsages as U;
        let buffer = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage: U::COPY_SRC | U::COPY_DST, mapped_at_creation: false })
        };
        let carry = buffer("resident carry", (rows * unit * 4) as u64);
        let saved_states = buffer("resident saved states", chain.states.size());
        let saved_history = buffer("resident saved history", chain.history.size());
        Ok(WgpuResident { chain, unit, chunks, carried: 0, carry, saved_states, saved_history, clear: true })
    }

    /// [`WgpuChain::set_fused`] on the chain (every call runs with the unit's chunking,
    /// so every call of the stream runs the same shaders).
    pub fn set_fused(&mut self, group_max: usize) -> Result<(), GpuError> {
        self.chain.set_fused(group_max)
    }

    /// [`WgpuChain::fused_status`].
    pub fn fused_status(&self) -> (usize, Vec<bool>) {
        self.chain.fused_status()
    }

    /// Rows this chain filters per call.
    pub fn rows(&self) -> usize {
        self.chain.channels()
    }

    /// Frames per unit of the stream's grid.
    pub fn unit_frames(&self) -> usize {
        self.unit
    }

    /// Back to silence at the start of a new grid (as at construction).
    pub fn reset(&mut self) {
        self.carried = 0;
        self.clear = true;
    }

    /// Filters `frames` frames of every row of `input` into `output` (which may be the
    /// same buffer: in place), continuing the stream from the state the last call left on
    /// the device. Both hold `rows x frames` float32 from byte 0; `input` needs
    /// `COPY_SRC`, `output` `COPY_DST` usage. Returns the last submission (the caller
    /// waits on it, e.g. with [`WgpuContext::wait`], before reading `output` on the host;
    /// later GPU work on the same queue needs no wait). Non-finite input is not cleaned
    /// (SciPy's semantics: NaN in, NaN out). On an error nothing is submitted, or the stream
    /// is reset to silence and the error says so.
    pub fn process(&mut self, input: &wgpu::Buffer, output: &wgpu::Buffer, frames: usize) -> Result<Option<wgpu::SubmissionIndex>, GpuError> {
        let rows = self.rows();
        let bytes = (rows * frames * 4) as u64;
        for (name, buffer, usage) in [("input", input, wgpu::BufferUsages::COPY_SRC), ("output", output, wgpu::BufferUsages::COPY_DST)] {
            if buffer.size() < bytes {
                return Err(GpuError::Job {
                    why: format!("the {name} buffer holds {} bytes; {rows} rows x {frames} frames of float32 need {bytes}", buffer.size()),
                });
            }
            if !buffer.usage().contains(usage) {
                return Err(GpuError::Job { why: format!("the {name} buffer lacks the usage {usage:?} (it has {:?})", buffer.usage()) });
            }
        }
        if self.chain.ctx.is_lost() {
            return Err(GpuError::DeviceLost { why: "the device was lost earlier".into() });
        }
        if frames == 0 {
            return Ok(None);
        }
        let device = self.chain.ctx.device.clone();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut last = None;
        let mut at = 0;
        // Whole units first, in one submission (one set of stage parameters)...
        let mut whole = None;
        while self.carried + (frames - at) >= self.unit {
            let encoder = whole.get_or_insert_with(|| device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("resident units") }));
            let (c, n) = (self.carried, self.unit - self.carried);
            self.begin_unit(encoder, c == 0);
            // The unit's input: the part earlier calls gave, then this call's.
            if c > 0 {
                copy_rows(encoder, &self.carry, self.unit, 0, &self.chain.work, self.unit, 0, rows, c);
            }
            copy_rows(encoder, input, frames, at, &self.chain.work, self.unit, c, rows, n);
            self.chain.encode_stages(encoder, self.unit, self.chunks);
            copy_rows(encoder, &self.chain.work, self.unit, c, output, frames, at, rows, n);
            self.carried = 0;
            at += n;
        }
        if let Some(encoder) = whole {
            last = Some(self.submit(encoder));
        }
        // ...then the unit the call ends in, run so far and kept.
        if at < frames {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("resident part") });
            let (c, n) = (self.carried, frames - at);
            self.begin_unit(&mut encoder, c == 0);
            // Saved before the output is written (which may be the input's buffer).
            copy_rows(&mut encoder, input, frames, at, &self.carry, self.unit, c, rows, n);
            let len = c + n;
            if c == 0 {
                copy_rows(&mut encoder, input, frames, at, &self.chain.work, len, 0, rows, n);
            } else {
                copy_rows(&mut encoder, &self.carry, self.unit, 0, &self.chain.work, len, 0, rows, len);
            }
            self.chain.encode_stages(&mut encoder, len, self.chunks);
            copy_rows(&mut encoder, &self.chain.work, len, c, output, frames, at, rows, n);
            last = Some(self.submit(encoder));
            self.carried = len;
        }
        if let Some(error) = pollster::block_on(scope.pop()) {
            self.reset();
            return Err(GpuError::Job { why: format!("the device refused the job ({error}); the stream was reset to silence") });
        }
        Ok(last)
    }

    /// A unit's start: the device state cleared (new stream), saved (a new unit, which may
    /// end inside this call) or put back to the unit's start (a unit begun earlier).
    fn begin_unit(&mut self, encoder: &mut wgpu::CommandEncoder, fresh: bool) {
        let chain = &self.chain;
        if self.clear {
            encoder.clear_buffer(&chain.states, 0, None);
            encoder.clear_buffer(&chain.history, 0, None);
            self.clear = false;
        }
        let (states, history) = (chain.states.size(), chain.history.size());
        if fresh {
            encoder.copy_buffer_to_buffer(&chain.states, 0, &self.saved_states, 0, states);
            encoder.copy_buffer_to_buffer(&chain.history, 0, &self.saved_history, 0, history);
        } else {
            encoder.copy_buffer_to_buffer(&self.saved_states, 0, &chain.states, 0, states);
            encoder.copy_buffer_to_buffer(&self.saved_history, 0, &chain.history, 0, history);
        }
    }

    fn submit(&self, encoder: wgpu::CommandEncoder) -> wgpu::SubmissionIndex {
        let _turn = self.chain.ctx.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.chain.ctx.queue.submit([encoder.finish()])
    }
}

/// `n` frames of each of `rows` rows from `src` (rows `src_stride` frames apart, from
/// frame `src_at`) to `dst` (rows `dst_stride` apart, from `dst_at`): one copy where both
/// sides' rows are contiguous, else one per row.
#[allow(clippy::too_many_arguments)]
fn copy_rows(
    encoder: &mut wgpu::CommandEncoder,
    src: &wgpu::Buffer,
    src_stride: usize,
    src_at: usize,
    dst: &wgpu::Buffer,
    dst_stride: usize,
    dst_at: usize,
    rows: usize,
    n: usize,
) {
    if n == 0 {
        return;
    }
    if src_stride == n && dst_stride == n {
        encoder.copy_buffer_to_buffer(src, (src_at * 4) as u64, dst, (dst_at * 4) as u64, (rows * n * 4) as u64);
        return;
    }
    for r in 0..rows {
        let from = ((r * src_stride + src_at) * 4) as u64;
        let to = ((r * dst_stride + dst_at) * 4) as u64;
        encoder.copy_buffer_to_buffer(src, from, dst, to, (n * 4) as u64);
    }
}
