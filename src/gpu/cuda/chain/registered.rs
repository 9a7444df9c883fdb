//! Host-to-host without the host copies (opt-in: [`crate::gpu::cuda::CudaTuning`]'s
//! `register_host`, or [`CudaChain::set_register_host`]): for a long call of
//! [`CudaChain::process_slices`], the caller's channel buffers are registered with the
//! driver (`cuMemHostRegister`) for the length of the call, so each block goes from them
//! to the device and back by DMA, on the overlapped stream's upload and download streams,
//! with no copy through the pinned staging slots. The kernels, their graphs and the
//! state's way are the overlapped stream's, so the output is the same bits.
//!
//! Registration pins every page of the buffers: a cost per call that only long calls
//! repay, so calls under [`REGISTER_MIN_BYTES`] keep the staging; where the driver
//! refuses (memory it cannot pin, or already registered by someone else) the call runs
//! the staged way and [`CudaChain::register_status`] says why.

use super::{CudaChain, ChainState};
use crate::gpu::cuda::CudaError;
use cudarc::driver::sys;

/// Calls whose buffers hold fewer bytes than this (all channels) keep the pinned
/// staging. A guess until a device has measured registration against staging.
pub const REGISTER_MIN_BYTES: usize = 16 << 20;

/// The caller's buffers registered for one call; unregistered when dropped (after the
/// streams that copy them were synchronised).
struct Registered {
    ptrs: Vec<*mut std::ffi::c_void>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        for &p in &self.ptrs {
            // SAFETY: `p` was registered by `register` below and no copy that uses it is in
            // flight (the call synchronised its streams before dropping this).
            let _ = unsafe { sys::cuMemHostUnregister(p) };
        }
    }
}

/// The host's page size (4 KiB where it cannot be asked).
fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads a system constant.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if n > 0 {
            return n as usize;
        }
    }
    4096
}

/// The pages of `(address, bytes)` buffers as sorted `[start, end)` ranges, merged where
/// two buffers' pages overlap (only there: a gap between buffers is never included).
fn page_ranges(buffers: impl Iterator<Item = (usize, usize)>, page: usize) -> Vec<(usize, usize)> {
    let mut pages: Vec<(usize, usize)> = buffers.filter(|b| b.1 > 0).map(|(a, n)| (a / page * page, (a + n).div_ceil(page) * page)).collect();
    pages.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(pages.len());
    for (s, e) in pages {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

impl CudaChain {
    /// Registers (or not) the caller's buffers for long calls of
    /// [`CudaChain::process_slices`] (with the overlapped stream).
    pub fn set_register_host(&mut self, on: bool) {
        self.register_host = on;
    }

    /// Whether long calls register the caller's buffers, and why the last one that tried
    /// did not (empty when it did).
    pub fn register_status(&self) -> (bool, &str) {
        (self.register_host, &self.register_note)
    }

    /// Whether a call over `buffers` should register them.
    pub(super) fn registers(&self, buffers: &[&mut [f32]]) -> bool {
        self.register_host && self.overlap && buffers.iter().map(|b| b.len() * 4).sum::<usize>() >= REGISTER_MIN_BYTES
    }

    /// Registers the pages of every buffer, or none (the reason kept in `register_note`).
    /// The driver refuses a range that overlaps one already registered, and channels of
    /// one allocation (the rows of a NumPy array) share pages, so the buffers' page ranges
    /// are merged where they overlap and each merged range is registered once.
    fn register(&mut self, buffers: &mut [&mut [f32]]) -> Option<Registered> {
        if let Err(e) = self.dev.ctx.bind_to_thread() {
            self.register_note = format!("binding the context: {e}");
            return None;
        }
        let ranges = page_ranges(buffers.iter().map(|b| (b.as_ptr() as usize, std::mem::size_of_val(&**b))), page_size());
        let mut registered = Registered { ptrs: Vec::with_capacity(ranges.len()) };
        for (start, end) in ranges {
            let p = start as *mut std::ffi::c_void;
            // SAFETY: every page of `start..end` holds part of a caller's live buffer (the
            // ranges are the buffers' own pages, merged only where they share one), all
            // mutably borrowed for the whole call; unregistered before the call returns.
            let r = unsafe { sys::cuMemHostRegister_v2(p, end - start, 0) };
            if r != sys::CUresult::CUDA_SUCCESS {
                self.register_note = format!("the driver did not register {} bytes of the buffers ({r:?}): staged instead", end - start);
                return None; // `registered` unregisters the earlier ones
            }
            registered.ptrs.push(p);
        }
        self.register_note.clear();
        Some(registered)
    }

    /// The whole of `blocks` with the buffers registered, or `Ok(false)` where they could
    /// not be (nothing run: the caller stages instead).
    pub(super) fn stream_registered(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<bool, CudaError> {
        let Some(registered) = self.register(buffers) else { return Ok(false) };
        let r = self.registered_blocks(buffers, blocks, state);
        // On an error the streams are waited for before the buffers are let go.
        let r = self.settled(r);
        drop(registered);
        r.map(|()| true)
    }

    fn registered_blocks(&mut self, buffers: &mut [&mut [f32]], blocks: &[(usize, usize)], state: &mut ChainState) -> Result<(), CudaError> {
        self.upload_state(state)?;
        for (k, &(start, frames)) in blocks.iter().enumerate() {
            let b = k % 2;
            // Block k+2 reuses this work buffer once block k is downloaded (`freed`).
            self.copy_in.wait(&self.freed[b])?;
            {
                let work = if b == 0 { &mut self.work } else { &mut self.work2 };
                for (ch, buf) in buffers.iter().enumerate() {
                    // The copy reads the registered buffer by DMA after this returns; the
                    // host does not touch the buffers until the streams are synchronised.
                    self.copy_in.memcpy_htod(&buf[start..start + frames], &mut work.slice_mut(ch * frames..(ch + 1) * frames))?;
                }
            }
            self.uploaded[b].record(&self.copy_in)?;
            self.stream.wait(&self.uploaded[b])?;
            self.launch_kernels(b, frames)?;
            self.computed[b].record(&self.stream)?;
            self.copy_out.wait(&self.computed[b])?;
            {
                let work = if b == 0 { &self.work } else { &self.work2 };
                for (ch, buf) in buffers.iter_mut().enumerate() {
                    // Frames of block k: no upload in flight reads them any more (block k's
                    // upload finished before its kernels), later uploads read other frames.
                    self.copy_out.memcpy_dtoh(&work.slice(ch * frames..(ch + 1) * frames), &mut buf[start..start + frames])?;
                }
            }
            self.freed[b].record(&self.copy_out)?;
        }
        self.copy_in.synchronize()?;
        self.copy_out.synchronize()?;
        self.download_state(state)
    }
}

#[cfg(test)]
mod tests {
    use super::page_ranges;

    /// Buffers sharing a page merge into one range, buffers on pages of their own stay
    /// apart (no gap between them registered), empty ones are left out; every byte of
    /// every buffer is in a range.
    #[test]
    fn page_ranges_cover_every_buffer_and_merge_only_shared_pages() {
        let page = 4096;
        // Rows of one allocation (shared pages), a buffer far away, an empty one, a
        // buffer ending exactly on a page boundary and one starting on it.
        let bufs = [(10_000, 8_000), (18_000, 8_000), (1_000_000, 100), (5_000_000, 0), (2 * page * 100, page), (2 * page * 100 + page, 10)];
        let r = page_ranges(bufs.iter().copied(), page);
        let x = 2 * page * 100;
        assert_eq!(r, vec![(8192, 28672), (x, x + page), (x + page, x + 2 * page), (999_424, 1_003_520)]);
        for &(a, n) in bufs.iter().filter(|b| b.1 > 0) {
            assert!(r.iter().any(|&(s, e)| s <= a && a + n <= e), "buffer at {a} ({n} bytes) not covered by {r:?}");
        }
        for w in r.windows(2) {
            assert!(w[0].1 <= w[1].0, "ranges overlap: {r:?}");
        }
    }
}
