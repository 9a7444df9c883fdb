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

    /// Registers every buffer, or none (the reason kept in `register_note`).
    fn register(&mut self, buffers: &mut [&mut [f32]]) -> Option<Registered> {
        if let Err(e) = self.dev.ctx.bind_to_thread() {
            self.register_note = format!("binding the context: {e}");
            return None;
        }
        let mut registered = Registered { ptrs: Vec::with_capacity(buffers.len()) };
        for b in buffers.iter_mut() {
            let p: *mut std::ffi::c_void = b.as_mut_ptr().cast();
            // SAFETY: `p` and its byte length are the caller's live buffer, mutably borrowed
            // for the whole call; it is unregistered before the call returns.
            let r = unsafe { sys::cuMemHostRegister_v2(p, std::mem::size_of_val(&**b), 0) };
            if r != sys::CUresult::CUDA_SUCCESS {
                self.register_note = format!("the driver did not register a buffer of {} bytes ({r:?}): staged instead", std::mem::size_of_val(&**b));
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
