//! The plugin's GPU path: one wgpu device shared by every instance in the process, the
//! offload (with its worker thread) built for a chain, and what the audio thread tells
//! the editor about the route.
//!
//! The GPU path runs the *chain-file stages*: the equaliser's bands move per sample
//! while automated and stay on the CPU (a few microseconds a block). With the `GPU` or
//! `Auto` backend, a host block size of at least "GPU Min Block", an adapter, and
//! enabled chain stages, the plugin re-blocks into blocks of the host's maximum size
//! (`ferrofx::run::realtime`) and reports exactly that block as latency; the stages'
//! blocks then go to the GPU worker (`GPU`) or wherever the router finds them cheaper
//! (`Auto`), with the exact CPU fallback for late ones.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ferrofx::run::offload::{Faults, Offload};
use ferrofx::run::realtime::{Policy, RealtimeOffload};
use ferrofx::run::router::{Reason, Route};
use ferrofx::gpu::wgpu::{GpuChain, WgpuContext};
use ferrofx::{DesignedChain, DesignedStage};

/// Longest FIR the offload takes. Its CPU side (the fallback for late blocks, and the
/// `Auto` route's CPU blocks) runs FIRs directly, since a job's state is the
/// time-domain history; beyond this a block would cost the CPU too much. Longer FIRs
/// run on the CPU's partitioned FFT path, still delayed to the reported latency.
pub const OFFLOAD_MAX_FIR_TAPS: usize = 16_384;

/// The process-wide device, opened on first use and again after a device loss.
pub fn context() -> Result<Arc<WgpuContext>, String> {
    static SHARED: Mutex<Option<Arc<WgpuContext>>> = Mutex::new(None);
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = shared.as_ref().filter(|c| !c.is_lost()) {
        return Ok(ctx.clone());
    }
    let ctx = Arc::new(WgpuContext::new().map_err(|e| e.to_string())?);
    *shared = Some(ctx.clone());
    Ok(ctx)
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

/// Builds the offload of `chain` (allocates, starts its worker; not for the audio
/// thread): on the GPU when it can, otherwise CPU-only with the reason.
pub fn build_offload(chain: &DesignedChain, channels: usize, block: usize) -> (Option<Offload>, String) {
    if let Some(why) = offload_refusal(chain) {
        return (None, why);
    }
    let gpu = context().and_then(|ctx| {
        let report = ctx.report().to_string();
        GpuChain::new(&ctx, chain, channels, block).map(|g| (g, report)).map_err(|e| e.to_string())
    });
    match gpu {
        Ok((g, report)) => match Offload::new(chain, channels, block, g, Faults::default()) {
            Ok(off) => (Some(off), format!("GPU worker on {report}")),
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

/// The policy a backend choice asks for (`None`: the CPU path, no latency).
pub fn policy(backend: crate::params::BackendChoice) -> Option<Policy> {
    match backend {
        crate::params::BackendChoice::Cpu => None,
        crate::params::BackendChoice::Auto => Some(Policy::Auto),
        crate::params::BackendChoice::Gpu => Some(Policy::Gpu),
    }
}

/// What the editor shows about the GPU path, written by the audio thread once per host
/// block (atomics only). The text saying where the offload runs is the chain slot's
/// (`ChainSlot::gpu_status`), written off the audio thread.
#[derive(Default)]
pub struct GpuTelemetry {
    /// Offload block (= latency) in frames; 0 when the CPU path runs.
    pub block_frames: AtomicU32,
    /// 0: CPU, 1: GPU (the router's route, or forced).
    pub route_gpu: AtomicBool,
    /// [`reason_code`] of the latest decision.
    pub reason: AtomicU32,
    /// Medians and tail of the router's windows in microseconds (f32 bits; NaN unmeasured).
    pub cpu_median_us: AtomicU32,
    pub gpu_median_us: AtomicU32,
    pub gpu_tail_us: AtomicU32,
    pub deadline_us: AtomicU32,
    pub on_worker: AtomicU64,
    pub on_cpu: AtomicU64,
    pub late: AtomicU64,
    pub worker_lost: AtomicBool,
}

fn reason_code(r: Reason) -> u32 {
    match r {
        Reason::GpuUnavailable => 0,
        Reason::Measuring => 1,
        Reason::GpuFaster => 2,
        Reason::GpuNotFastEnough => 3,
        Reason::GpuTailTooLong => 4,
        Reason::Holding => 5,
    }
}

/// The reason behind [`GpuTelemetry::reason`].
pub fn reason_of(code: u32) -> Reason {
    match code {
        0 => Reason::GpuUnavailable,
        1 => Reason::Measuring,
        2 => Reason::GpuFaster,
        3 => Reason::GpuNotFastEnough,
        4 => Reason::GpuTailTooLong,
        _ => Reason::Holding,
    }
}

impl GpuTelemetry {
    /// Publishes the stream's figures (audio thread: atomics only).
    pub fn publish(&self, stream: &RealtimeOffload, offload: Option<&Offload>) {
        let d = stream.decision();
        let st = stream.stats();
        let us = |s: f64| ((s * 1e6) as f32).to_bits();
        let forced = stream.policy() == Policy::Gpu;
        let has_worker = offload.is_some_and(|o| o.has_worker());
        self.route_gpu.store(has_worker && (forced || d.route == Route::Gpu), Ordering::Relaxed);
        self.reason.store(reason_code(d.reason), Ordering::Relaxed);
        self.cpu_median_us.store(us(d.cpu_median_s), Ordering::Relaxed);
        self.gpu_median_us.store(us(d.gpu_median_s), Ordering::Relaxed);
        self.gpu_tail_us.store(us(d.gpu_tail_s), Ordering::Relaxed);
        self.deadline_us.store(us(d.deadline_s), Ordering::Relaxed);
        self.on_worker.store(st.on_worker, Ordering::Relaxed);
        self.on_cpu.store(st.on_cpu, Ordering::Relaxed);
        self.late.store(st.late, Ordering::Relaxed);
        self.worker_lost.store(offload.is_some_and(|o| o.worker_lost()), Ordering::Relaxed);
    }
}
