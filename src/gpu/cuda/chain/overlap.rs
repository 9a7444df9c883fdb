//! The overlapped offline stream: two device work buffers, a copy stream beside the
//! chain's compute stream, and the filter state kept on the device from the first block
//! to the last. While the kernels run block k from one buffer, the copy stream uploads
//! block k+1 into the other and downloads block k-1, and the host copies blocks between
//! the caller's channels and the two pinned slots; events order the three:
//!
//! ```text
//! copy:    up(k+1) ........ [wait computed(k)] down(k)   up(k+2) ...
//! compute: [wait uploaded(k)] kernels(k) ........ [wait uploaded(k+1)] kernels(k+1)
//! host:    out(k-1), in(k+1) ..................... out(k), in(k+2)
//! ```
//!
//! Buffer and slot `k % 2` serve block k. Block k+2 reuses them only after block k's
//! download: the copy stream runs its uploads and downloads in order, and the host
//! waits for `downloaded(k)` before it copies block k out and block k+2 in.

use super::CudaChain;
use crate::engine::ChainState;
use crate::gpu::cuda::CudaError;

impl CudaChain {
    pub(super) fn stream_overlapped(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<(), CudaError> {
        let channels = self.channels;
        let block = channels * self.max_frames;
        let ns = 2 * channels * self.realizations.len();
        let fir_len = self.fir_len;
        // The state once, from slot 0, on the compute stream (the kernels' own stream).
        self.stage_state(0, state)?;
        let base0 = self.slot_ptr(0)?;
        {
            // SAFETY: slot 0 holds `block + ns + fir_len` floats; the views only hand the
            // state's addresses to the asynchronous copies, and the host writes slot 0's
            // state again only after the compute stream is synchronised (at the end).
            let (host_states, host_hist) = unsafe { (std::slice::from_raw_parts(base0.add(block), ns), std::slice::from_raw_parts(base0.add(block + ns), fir_len)) };
            if ns > 0 {
                self.stream.memcpy_htod(host_states, &mut self.states.slice_mut(..ns))?;
            }
            if fir_len > 0 {
                self.stream.memcpy_htod(host_hist, &mut self.history.slice_mut(..fir_len))?;
            }
        }
        self.stage_block(0, blocks[0], buffers)?;
        self.upload(0, blocks[0].1)?;
        for (k, &(_, len)) in blocks.iter().enumerate() {
            let b = k % 2;
            self.stream.wait(&self.uploaded[b])?;
            self.launch_kernels(b, len)?;
            self.computed[b].record(&self.stream)?;
            if k >= 1 {
                // Block k-1's download was enqueued last round: out of pinned memory while
                // the kernels run block k.
                self.downloaded[1 - b].synchronize()?;
                self.unstage_block(1 - b, blocks[k - 1], buffers)?;
            }
            if let Some(&next) = blocks.get(k + 1) {
                // Slot and buffer 1 - b are free: block k-1 is out.
                self.stage_block(1 - b, next, buffers)?;
                self.upload(1 - b, next.1)?;
            }
            self.copy.wait(&self.computed[b])?;
            self.download(b, len)?;
        }
        let last = blocks.len() - 1;
        // The end state after the last kernels, into slot 0's state (the compute stream).
        {
            // SAFETY: as above; the host reads it after the compute stream is synchronised.
            let (host_states, host_hist) =
                unsafe { (std::slice::from_raw_parts_mut(base0.add(block), ns), std::slice::from_raw_parts_mut(base0.add(block + ns), fir_len)) };
            if ns > 0 {
                self.stream.memcpy_dtoh(&self.states.slice(..ns), host_states)?;
            }
            if fir_len > 0 {
                self.stream.memcpy_dtoh(&self.history.slice(..fir_len), host_hist)?;
            }
        }
        self.downloaded[last % 2].synchronize()?;
        self.unstage_block(last % 2, blocks[last], buffers)?;
        self.stream.synchronize()?;
        self.read_state(0, state)
    }

    /// Slot `b`'s block (`frames` frames, planar) into work buffer `b` on the copy
    /// stream; records `uploaded[b]`.
    fn upload(&mut self, b: usize, frames: usize) -> Result<(), CudaError> {
        let n = self.channels * frames;
        let base = self.slot_ptr(b)?;
        // SAFETY: slot `b` holds at least `n` floats; the host writes it again only after
        // `downloaded[b]` (later on this stream) has completed.
        let host = unsafe { std::slice::from_raw_parts(base, n) };
        let work = if b == 0 { &mut self.work } else { &mut self.work2 };
        self.copy.memcpy_htod(host, &mut work.slice_mut(..n))?;
        self.uploaded[b].record(&self.copy)?;
        Ok(())
    }

    /// Work buffer `b`'s block back into slot `b` on the copy stream; records
    /// `downloaded[b]`.
    fn download(&mut self, b: usize, frames: usize) -> Result<(), CudaError> {
        let n = self.channels * frames;
        let base = self.slot_ptr(b)?;
        // SAFETY: slot `b` holds at least `n` floats; the host reads it only after
        // `downloaded[b]` has completed.
        let host = unsafe { std::slice::from_raw_parts_mut(base, n) };
        let work = if b == 0 { &self.work } else { &self.work2 };
        self.copy.memcpy_dtoh(&work.slice(..n), host)?;
        self.downloaded[b].record(&self.copy)?;
        Ok(())
    }
}
