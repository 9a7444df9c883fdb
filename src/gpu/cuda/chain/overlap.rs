//! The overlapped stream: blocks submitted and collected in order, up to two in flight,
//! on three CUDA streams (uploads, kernels, downloads) with the filter state kept on the
//! device from the first block to the last. While the kernels run block k, the upload
//! stream brings block k+1 in, the download stream takes block k-1 out, and the host
//! copies blocks between the caller's channels and three pinned staging slots; events
//! order them:
//!
//! ```text
//! upload:   [wait freed(k-1)] up(k+1) ........................ [wait freed(k)] up(k+2)
//! kernels:  [wait uploaded(k)] kernels(k) ..... [wait uploaded(k+1)] kernels(k+1)
//! download: [wait computed(k-1)] down(k-1) ..... [wait computed(k)] down(k)
//! host:     in(k+1) ... out(k-1) ................ in(k+2) ... out(k)
//! ```
//!
//! Block k uses work buffer `k % 2` and staging slot `k % 3`. The buffer is written again
//! by block k+2's upload, which waits for `freed(k % 2)` (block k downloaded); the slot
//! is written again by the host staging block k+3, which happens only after block k was
//! collected (at most two in flight), and collecting waits for `downloaded(k % 3)`.

use super::{CudaChain, STAGING_SLOTS};
use crate::engine::ChainState;
use crate::gpu::cuda::CudaError;
use crate::gpu::GpuError;

/// Blocks the overlapped stream has submitted and collected, and each slot's frames.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flight {
    submitted: usize,
    collected: usize,
    frames: [usize; STAGING_SLOTS],
}

impl Flight {
    pub(super) fn in_flight(&self) -> usize {
        self.submitted - self.collected
    }
}

/// Blocks the overlapped stream keeps in flight at most.
pub const OVERLAP_DEPTH: usize = 2;

impl CudaChain {
    /// Blocks submitted to the overlapped stream and not yet collected.
    pub fn blocks_in_flight(&self) -> usize {
        self.flight.in_flight()
    }

    /// Starts the next block of the overlapped stream: frames `start..start + frames` of
    /// each channel buffer (`frames` at most the chain's largest block). The first block
    /// of a stream (nothing in flight) starts from `state`; later ones continue from the
    /// state the previous block left on the device. Returns before the device is done;
    /// at most [`OVERLAP_DEPTH`] blocks in flight (collect one first).
    pub fn submit_block<B: AsRef<[f32]>>(&mut self, buffers: &[B], start: usize, frames: usize, state: &ChainState) -> Result<(), CudaError> {
        if self.flight.in_flight() >= OVERLAP_DEPTH {
            return Err(CudaError::Gpu(GpuError::Job { why: format!("{OVERLAP_DEPTH} blocks in flight: collect one first") }));
        }
        if buffers.len() != self.channels || buffers.iter().any(|b| b.as_ref().len() < start + frames) || frames == 0 {
            return Err(CudaError::Gpu(GpuError::Job {
                why: format!("{} channel buffers for {} channels x frames {start}..{}", buffers.len(), self.channels, start + frames),
            }));
        }
        self.check_job(frames, state)?;
        let submitted = self.enqueue_block(buffers, start, frames, state);
        self.settled(submitted)
    }

    fn enqueue_block<B: AsRef<[f32]>>(&mut self, buffers: &[B], start: usize, frames: usize, state: &ChainState) -> Result<(), CudaError> {
        if self.flight.in_flight() == 0 {
            self.upload_state(state)?;
        }
        let k = self.flight.submitted;
        let (b, s) = (k % 2, k % STAGING_SLOTS);
        self.stage_block(s, (start, frames), buffers)?;
        let n = self.channels * frames;
        // SAFETY: the slot's block part starts `block.start` floats into the slot.
        let base = unsafe { self.slot_ptr(s)?.add(self.slot_layout().block.start) };
        // SAFETY: the slot's block holds at least `n` floats; the host writes it again
        // only after this block is collected, which waits for its download (after this
        // upload).
        let host = unsafe { std::slice::from_raw_parts(base, n) };
        self.copy_in.wait(&self.freed[b])?;
        let work = if b == 0 { &mut self.work } else { &mut self.work2 };
        self.copy_in.memcpy_htod(host, &mut work.slice_mut(..n))?;
        self.uploaded[b].record(&self.copy_in)?;
        self.stream.wait(&self.uploaded[b])?;
        self.launch_kernels(b, frames)?;
        self.computed[b].record(&self.stream)?;
        self.copy_out.wait(&self.computed[b])?;
        // SAFETY: as above; the host reads the slot only after `downloaded[s]` completed.
        let host = unsafe { std::slice::from_raw_parts_mut(base, n) };
        let work = if b == 0 { &self.work } else { &self.work2 };
        self.copy_out.memcpy_dtoh(&work.slice(..n), host)?;
        self.freed[b].record(&self.copy_out)?;
        self.downloaded[s].record(&self.copy_out)?;
        self.flight.frames[s] = frames;
        self.flight.submitted += 1;
        Ok(())
    }

    /// Waits for the oldest block in flight and copies it into frames `start..` of each
    /// channel buffer; returns its frame count. When it was the last block in flight, the
    /// stream's end state is read back into `state`.
    pub fn collect_block(&mut self, buffers: &mut [&mut [f32]], start: usize, state: &mut ChainState) -> Result<usize, CudaError> {
        if self.flight.in_flight() == 0 {
            return Err(CudaError::Gpu(GpuError::Job { why: "no block in flight to collect".into() }));
        }
        let s = self.flight.collected % STAGING_SLOTS;
        let frames = self.flight.frames[s];
        if buffers.len() != self.channels || buffers.iter().any(|b| b.len() < start + frames) {
            return Err(CudaError::Gpu(GpuError::Job {
                why: format!("{} channel buffers for {} channels x frames {start}..{}", buffers.len(), self.channels, start + frames),
            }));
        }
        let collected = self.take_block(buffers, start, state);
        self.settled(collected)
    }

    fn take_block(&mut self, buffers: &mut [&mut [f32]], start: usize, state: &mut ChainState) -> Result<usize, CudaError> {
        let s = self.flight.collected % STAGING_SLOTS;
        let frames = self.flight.frames[s];
        self.downloaded[s].synchronize()?;
        self.unstage_block(s, (start, frames), buffers)?;
        self.flight.collected += 1;
        if self.flight.in_flight() == 0 {
            self.download_state(state)?;
        }
        Ok(frames)
    }

    /// Drops the blocks in flight (after waiting for every stream): a reset, or a failure.
    pub fn abandon(&mut self) {
        let _ = self.copy_in.synchronize();
        let _ = self.stream.synchronize();
        let _ = self.copy_out.synchronize();
        self.flight = Flight::default();
    }

    /// `state` onto the device, through slot 0's state part, on the compute stream.
    pub(super) fn upload_state(&mut self, state: &ChainState) -> Result<(), CudaError> {
        let layout = self.slot_layout();
        let (ns, fir_len) = (layout.states.len(), layout.history.len());
        self.stage_state(0, state)?;
        let base = self.slot_ptr(0)?;
        // SAFETY: slot 0 holds `layout.len()` floats, the states and histories at their
        // layout's places; the views only hand their addresses to the asynchronous copies,
        // and the host writes slot 0's state part again only after the compute stream is
        // synchronised (`download_state`).
        let (states, hist) = unsafe { (std::slice::from_raw_parts(base, ns), std::slice::from_raw_parts(base.add(layout.history.start), fir_len)) };
        if ns > 0 {
            self.stream.memcpy_htod(states, &mut self.states.slice_mut(..ns))?;
        }
        if fir_len > 0 {
            self.stream.memcpy_htod(hist, &mut self.history.slice_mut(..fir_len))?;
        }
        Ok(())
    }

    /// The device's state after the last kernels into `state` (waits for the compute
    /// stream).
    pub(super) fn download_state(&mut self, state: &mut ChainState) -> Result<(), CudaError> {
        let layout = self.slot_layout();
        let (ns, fir_len) = (layout.states.len(), layout.history.len());
        let base = self.slot_ptr(0)?;
        // SAFETY: as in `upload_state`; the host reads it after the stream is synchronised.
        let (states, hist) = unsafe { (std::slice::from_raw_parts_mut(base, ns), std::slice::from_raw_parts_mut(base.add(layout.history.start), fir_len)) };
        if ns > 0 {
            self.stream.memcpy_dtoh(&self.states.slice(..ns), states)?;
        }
        if fir_len > 0 {
            self.stream.memcpy_dtoh(&self.history.slice(..fir_len), hist)?;
        }
        self.stream.synchronize()?;
        self.read_state(0, state)
    }

    /// The whole of `blocks` through the overlapped stream, two blocks in flight.
    pub(super) fn stream_overlapped(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<(), CudaError> {
        let mut oldest = 0;
        for &(start, len) in blocks {
            if self.flight.in_flight() == OVERLAP_DEPTH {
                self.collect_block(buffers, blocks[oldest].0, state)?;
                oldest += 1;
            }
            self.submit_block(buffers, start, len, state)?;
        }
        while self.flight.in_flight() > 0 {
            self.collect_block(buffers, blocks[oldest].0, state)?;
            oldest += 1;
        }
        Ok(())
    }
}
