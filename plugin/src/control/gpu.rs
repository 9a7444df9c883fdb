//! The plugin's GPU path: one GPU backend shared by every instance in the process (the
//! first of the core's list that opens: CUDA where an NVIDIA driver and device are
//! present, else wgpu), the offload (with its worker thread) built for a chain, and what
//! the audio thread tells the editor about the route.
//!
//! The GPU path runs the *chain-file stages*: the equaliser's bands move per sample
//! while automated and stay on the CPU (a few microseconds a block). With the `GPU` or
//! `Auto` backend, a host block size of at least "GPU Min Block", an adapter, and
//! enabled chain stages, the plugin re-blocks into blocks of the host's maximum size
//! (`ferrofx::run::realtime`) and reports exactly that block as latency; the stages'
//! blocks then go to the GPU worker (`GPU`) or wherever the router finds them cheaper
//! (`Auto`), with the exact CPU fallback for late ones.

use std::sync::{Arc, Mutex};

use ferrofx::backends::open_first_gpu;
use ferrofx::run::backend::Backend;
use ferrofx::run::offload::Offload;
use ferrofx::{DesignedChain, DesignedStage};

/// Longest FIR the offload takes. Its CPU side (the fallback for late blocks, and the
/// `Auto` route's CPU blocks) runs FIRs directly, since a job's state is the
/// time-domain history; beyond this a block would cost the CPU too much. Longer FIRs
/// run on the CPU's partitioned FFT path, still delayed to the reported latency.
pub const OFFLOAD_MAX_FIR_TAPS: usize = 16_384;

/// The process-wide GPU backend (the first of the core's list that opens), opened on
/// first use and again after a device loss.
pub fn backend() -> Result<Arc<dyn Backend>, String> {
    static SHARED: Mutex<Option<Arc<dyn Backend>>> = Mutex::new(None);
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = shared.as_ref().filter(|b| !b.is_lost()) {
        return Ok(b.clone());
    }
    let b = open_first_gpu().map_err(|e| e.to_string())?;
    *shared = Some(b.clone());
    Ok(b)
}

/// Why a chain cannot be offloaded, or `None` when it can.
pub fn offload_refusal(chain: &DesignedChain) -> Option<String> {
    chain.stages.iter().find_map(|s| match s {
        DesignedStage::Fir(taps) if taps.len() > OFFLOAD_MAX_FIR_TAPS => Some(format!(
            "a FIR of {} taps is longer than the {OFFLOAD_MAX_FIR_TAPS} the GPU offload takes; it runs on the CPU",
            taps.len()
        )),
        _ => None,
    })
}

/// Whether the running offload's worker can take `chain` as new coefficients in place
/// (the offload takes it, and so does the GPU backend's precision rule), so that a
/// coefficient change needs no new offload.
pub fn retune_accepted(chain: &DesignedChain, channels: usize, block: usize) -> bool {
    offload_refusal(chain).is_none() && backend().is_ok_and(|b| b.accepts(chain, channels, block).is_ok())
}

/// Builds the offload of `chain` (allocates, starts its worker; not for the audio
/// thread): on the GPU when it can, otherwise CPU-only with the reason.
pub fn build_offload(chain: &DesignedChain, channels: usize, block: usize) -> (Option<Offload>, String) {
    if let Some(why) = offload_refusal(chain) {
        return (None, why);
    }
    let gpu = backend().and_then(|b| {
        let device = b.describe();
        b.executor(chain, channels, block).map(|e| (e, device)).map_err(|e| e.to_string())
    });
    match gpu {
        Ok((executor, device)) => match Offload::new(chain, channels, block, executor) {
            Ok(off) => (Some(off), format!("GPU worker: {device}")),
            Err(e) => (None, format!("offload not built: {e}")),
        },
        Err(why) => match Offload::cpu_only(chain, channels, block) {
            // A precision decline says itself what it is; anything else means no GPU.
            Ok(off) if why.starts_with("declined") => (Some(off), format!("{why}; blocks run on the CPU")),
            Ok(off) => (Some(off), format!("GPU unavailable ({why}); blocks run on the CPU")),
            Err(e) => (None, format!("offload not built: {e}")),
        },
    }
}
