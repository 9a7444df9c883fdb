//! The overlapped offline stream: two device work buffers, three pinned staging slots,
//! a copy stream beside the chain's compute stream, and the filter state kept on the
//! device from the first block to the last. While the kernels run block k from one
//! buffer, the host copies block k+1 into pinned memory and block k-1 out, and the copy
//! stream uploads block k+1 into the other buffer and downloads block k; events order
//! them:
//!
//! ```text
//! compute: [wait uploaded(k)] kernels(k) ...... [wait uploaded(k+1)] kernels(k+1)
//! copy:    up(k+1) [wait computed(k)] down(k) . up(k+2) [wait computed(k+1)] ...
//! host:    in(k+1), out(k-1) ................... in(k+2), out(k)
//! ```
//!
//! Block k uses buffer `k % 2` and slot `k % 3`. Buffer `k % 2` is written again by the
//! upload of block k+2, which the copy stream runs after block k's download; slot
//! `k % 3` is written again by the host staging block k+3, after it copied block k out
//! (which waits for `downloaded(k)`).

use super::{CudaChain, STAGING_SLOTS};
use crate::engine::ChainState;
use crate::gpu::cuda::CudaError;

impl CudaChain {
    pub(super) fn stream_overlapped(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<(), CudaError> {
        let block = self.channels * self.max_frames;
        let ns = 2 * self.channels * self.realizations.len();
        let fir_len = self.fir_len;
        // The state once, through slot 0's state part, on the compute stream (the
        // kernels' own stream).
        self.stage_state(0, state)?;
        let base0 = self.slot_ptr(0)?;
        {
            // SAFETY: slot 0 holds `block + ns + fir_len` floats; the views only hand the
            // state's addresses to the asynchronous copies, and the host writes slot 0's
            // state part again only after the compute stream is synchronised (at the end).
            let (host_states, host_hist) = unsafe { (std::slice::from_raw_parts(base0.add(block), ns), std::slice::from_raw_parts(base0.add(block + ns), fir_len)) };
            if ns > 0 {
                self.stream.memcpy_htod(host_states, &mut self.states.slice_mut(..ns))?;
            }
            if fir_len > 0 {
                self.stream.memcpy_htod(host_hist, &mut self.history.slice_mut(..fir_len))?;
            }
        }
        self.stage_block(0, blocks[0], buffers)?;
        self.upload(0, 0, blocks[0].1)?;
        for (k, &(_, len)) in blocks.iter().enumerate() {
            let (b, s) = (k % 2, k % STAGING_SLOTS);
            self.stream.wait(&self.uploaded[b])?;
            self.launch_kernels(b, len)?;
            self.computed[b].record(&self.stream)?;
            if let Some(&next) = blocks.get(k + 1) {
                // Slot (k+1) % 3 was copied out last round; buffer (k+1) % 2 is free once
                // the copy stream has downloaded block k-1 (it runs in order).
                let s1 = (k + 1) % STAGING_SLOTS;
                self.stage_block(s1, next, buffers)?;
                self.upload(1 - b, s1, next.1)?;
            }
            self.copy.wait(&self.computed[b])?;
            self.download(b, s, len)?;
            if k >= 1 {
                let s0 = (k - 1) % STAGING_SLOTS;
                self.downloaded[s0].synchronize()?;
                self.unstage_block(s0, blocks[k - 1], buffers)?;
            }
        }
        // The end state after the last kernels, into slot 0's state part.
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
        let last = blocks.len() - 1;
        self.downloaded[last % STAGING_SLOTS].synchronize()?;
        self.unstage_block(last % STAGING_SLOTS, blocks[last], buffers)?;
        self.stream.synchronize()?;
        self.read_state(0, state)
    }

    /// Slot `slot`'s block (`frames` frames, planar) into work buffer `b` on the copy
    /// stream; records `uploaded[b]`.
    fn upload(&mut self, b: usize, slot: usize, frames: usize) -> Result<(), CudaError> {
        let n = self.channels * frames;
        let base = self.slot_ptr(slot)?;
        // SAFETY: the slot holds at least `n` floats; the host writes it again only after
        // copying the block out, which waits for the block's download (later on this
        // stream).
        let host = unsafe { std::slice::from_raw_parts(base, n) };
        let work = if b == 0 { &mut self.work } else { &mut self.work2 };
        self.copy.memcpy_htod(host, &mut work.slice_mut(..n))?;
        self.uploaded[b].record(&self.copy)?;
        Ok(())
    }

    /// Work buffer `b`'s block back into slot `slot` on the copy stream; records
    /// `downloaded[slot]`.
    fn download(&mut self, b: usize, slot: usize, frames: usize) -> Result<(), CudaError> {
        let n = self.channels * frames;
        let base = self.slot_ptr(slot)?;
        // SAFETY: the slot holds at least `n` floats; the host reads it only after
        // `downloaded[slot]` has completed.
        let host = unsafe { std::slice::from_raw_parts_mut(base, n) };
        let work = if b == 0 { &self.work } else { &self.work2 };
        self.copy.memcpy_dtoh(&work.slice(..n), host)?;
        self.downloaded[slot].record(&self.copy)?;
        Ok(())
    }
}
