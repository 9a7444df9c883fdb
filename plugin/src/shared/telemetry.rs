//! What the audio thread tells the editor: atomics written once per host block, read by
//! the editor at its own pace, plus two lock-free hand-overs only the editor drains (the
//! analyser's windows and the processing times). The audio thread never allocates,
//! locks or waits on anything here.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::shared::spectrum::SpectrumFeed;

use ferrofx::run::offload::Offload;
use ferrofx::run::realtime::{Policy, RealtimeOffload};
use ferrofx::run::router::{Reason, Route};

/// What the audio thread reports to the editor (atomics, written once per block).
/// `Telemetry::default()` has no audio side connected; the plugin builds its own with
/// `audio::taps::connect`.
#[derive(Default)]
pub struct Telemetry {
    /// Sample rate in Hz (f32 bits).
    pub sample_rate_bits: AtomicU32,
    pub channels: AtomicU32,
    pub max_block_frames: AtomicU32,
    /// Latency reported to the host.
    pub latency_samples: AtomicU32,
    /// The settings want a latency this activation cannot switch to: the plugin asked the
    /// host for a restart, and keeps the latency reported until then.
    pub restart_pending: std::sync::atomic::AtomicBool,
    /// Last block size seen.
    pub last_block_frames: AtomicU32,
    /// Sections the equaliser runs.
    pub eq_sections: AtomicU32,
    /// Each band's dynamic gain change now, in dB (`f32` bits; 0 where none), written
    /// every block while dynamic bands act.
    pub dynamic_gain_db_bits: [AtomicU32; crate::shared::bands::BANDS],
    /// The auto-gain the bands ask for, in dB (`f32` bits; 0 when off).
    pub auto_gain_db_bits: AtomicU32,
    /// The GPU path's route and figures.
    pub gpu: GpuTelemetry,
    /// Output level per channel (the first [`METERED_CHANNELS`]).
    pub meters: [ChannelMeter; METERED_CHANNELS],
    /// An output sample reached 0 dBFS since the editor last cleared this.
    pub clipped: AtomicBool,
    /// How long each `process` call took: (nanoseconds << 32) | frames, oldest first.
    /// The audio thread pushes (dropping the figure when the ring is full); the editor
    /// drains under this lock, which the audio thread never takes.
    pub process_times: Mutex<Option<rtrb::Consumer<u64>>>,
    /// The analyser's windows.
    pub spectrum: SpectrumFeed,
    /// The loudness meters' samples (input and output).
    pub loudness: crate::shared::loudness::LoudnessFeed,
}

/// Channels with a meter: every channel of every layout.
pub const METERED_CHANNELS: usize = crate::shared::MAX_CHANNELS;

/// One channel's output level. The audio thread raises `peak` (f32 bits of a
/// non-negative number, whose order as integers is their order as numbers) and adds to
/// the running sums; the editor takes the peak (swapping in 0) and differences the sums.
///
/// One writer, the audio thread ([`ChannelMeter::record`]); the editor reads, and resets only
/// the peak. So the audio thread updates the sums and the frame count with plain loads
/// and stores (a locked read-modify-write costs ~20 cycles, and two per channel were
/// about a fifteenth of an idle stereo 64-frame block), and takes the peak's atomic maximum only when the
/// block's peak is above the one held.
#[derive(Default)]
pub struct ChannelMeter {
    pub peak_bits: AtomicU32,
    /// Sum of squares of every output sample (f64 bits; written by the audio thread only).
    pub sum_squares_bits: AtomicU64,
    /// Frames summed (written by the audio thread only).
    pub frames: AtomicU64,
}

impl ChannelMeter {
    /// Adds a measured block (audio thread: `audio::output` measures it; `peak` the
    /// largest magnitude, `sum_squares` the sum of squares of its `frames` frames);
    /// returns its peak.
    pub fn record(&self, peak: f32, sum_squares: f64, frames: usize) -> f32 {
        // Non-negative floats order like their bits.
        if peak.to_bits() > self.peak_bits.load(Ordering::Relaxed) {
            self.peak_bits.fetch_max(peak.to_bits(), Ordering::Relaxed);
        }
        let total = f64::from_bits(self.sum_squares_bits.load(Ordering::Relaxed)) + sum_squares;
        self.sum_squares_bits.store(total.to_bits(), Ordering::Relaxed);
        // Release: a reader that sees the new count sees the sum it belongs to.
        let frames = self.frames.load(Ordering::Relaxed) + frames as u64;
        self.frames.store(frames, Ordering::Release);
        peak
    }

    /// The peak since the last call (editor).
    pub fn take_peak(&self) -> f32 {
        f32::from_bits(self.peak_bits.swap(0, Ordering::Relaxed))
    }

    /// (sum of squares, frames) so far (editor).
    pub fn sums(&self) -> (f64, u64) {
        let frames = self.frames.load(Ordering::Acquire);
        (f64::from_bits(self.sum_squares_bits.load(Ordering::Relaxed)), frames)
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

impl Telemetry {
    /// Each band's dynamic gain change now, in dB.
    pub fn dynamic_gain_db(&self) -> [f32; crate::shared::bands::BANDS] {
        std::array::from_fn(|i| f32::from_bits(self.dynamic_gain_db_bits[i].load(Ordering::Relaxed)))
    }
}
