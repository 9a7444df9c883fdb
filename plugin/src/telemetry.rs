//! What the audio thread tells the editor: atomics written once per host block, read by
//! the editor at its own pace. Nothing here allocates or locks.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use ferrofx::run::offload::Offload;
use ferrofx::run::realtime::{Policy, RealtimeOffload};
use ferrofx::run::router::{Reason, Route};

/// What the audio thread reports to the editor (atomics, written once per block).
#[derive(Default)]
pub struct Telemetry {
    /// Sample rate in Hz (f32 bits).
    pub sample_rate_bits: AtomicU32,
    pub channels: AtomicU32,
    pub max_block_frames: AtomicU32,
    /// Latency reported to the host.
    pub latency_samples: AtomicU32,
    /// Last block size seen.
    pub last_block_frames: AtomicU32,
    /// Sections the equaliser runs.
    pub eq_sections: AtomicU32,
    /// The GPU path's route and figures.
    pub gpu: GpuTelemetry,
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
