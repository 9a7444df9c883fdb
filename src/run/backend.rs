//! Backends: the one answer to "where does this chain run?".
//!
//! A [`Backend`] prepares a designed chain for a channel count and a largest block in
//! two forms:
//! - [`Backend::prepare`]: a [`Prepared`] chain that filters blocks in order, with up to
//!   [`Prepared::depth`] blocks in flight (offline rendering, benchmarks, the Python
//!   package; driven by [`crate::run::stream::BlockStream`]);
//! - [`Backend::executor`]: an [`Executor`] for the realtime offload worker
//!   ([`crate::run::offload`]), where each job carries its state.
//!
//! The CPU backend ([`CpuBackend`]) is always there. GPU backends live under `src/gpu/`,
//! implement [`Backend`], and are listed in `GPU_BACKENDS` of `src/backends.rs` (the layer
//! above this one and `gpu`): adding a backend is one folder and one entry in that list.

use crate::chain::{DesignedChain, DesignedStage};
use crate::dsp::fir::{choose_mode_for, FirMode};
use crate::engine::{offline_segments, Engine, EngineOptions};
use crate::run::offload::Executor;

/// Why a backend could not run a chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// No backend of this name is in this build, or it could not be opened here.
    #[error("backend {name} is not available: {why}")]
    Unavailable { name: String, why: String },
    /// The backend opened but declined or failed this chain or block (a GPU's float32
    /// form would miss the tolerance, a buffer too large, a lost device); `why` says which.
    #[error("backend {backend}: {why}")]
    Declined { backend: &'static str, why: String },
    /// `collect` with no block in flight, or `submit` on a backend that filters in place.
    #[error("no block in flight on backend {backend}")]
    NothingInFlight { backend: &'static str },
    #[error("{found} channel buffers for a stream set up for {expected}")]
    Channels { expected: usize, found: usize },
    #[error("a block of {found} frames is longer than the stream's largest, {max}")]
    BlockTooLong { max: usize, found: usize },
}

/// A chain prepared on a backend for a channel count and a largest block: filters planar
/// blocks in order, keeping the filter state between them.
pub trait Prepared: Send {
    /// Blocks this form keeps in flight before [`Prepared::collect`] must be called (0:
    /// `submit` filters at once, as on the CPU).
    fn depth(&self) -> usize;
    /// Starts filtering a block of `frames` frames (at most the prepared largest).
    fn submit(&mut self, buffers: &[&[f32]], frames: usize) -> Result<(), RunError>;
    /// Writes the oldest submitted block's output into `buffers`; returns its frames.
    fn collect(&mut self, buffers: &mut [&mut [f32]]) -> Result<usize, RunError>;
    /// Blocks submitted and not yet collected.
    fn in_flight(&self) -> usize;
    /// One block in place, synchronously (any length: longer ones go in pieces).
    fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError>;
    /// [`Prepared::process`] with up to [`Prepared::depth`] pieces in flight (the next
    /// uploaded while the previous one computes); the same output, bit for bit.
    fn process_pipelined(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        self.process(buffers)
    }
    /// Clears the filter state and drops blocks in flight.
    fn reset(&mut self);
}

/// A place a chain can run.
pub trait Backend: Send + Sync {
    /// The name users type (`cpu`, `wgpu`).
    fn name(&self) -> &'static str;
    /// One line: the backend and the device it opened (`wgpu on NVIDIA H100 (Vulkan, ...)`).
    fn describe(&self) -> String;
    /// True when the "device" is software on the CPU (lavapipe): its figures are not GPU speed.
    fn is_software(&self) -> bool {
        false
    }
    /// True once the device was lost (a driver reset): open the backend again.
    fn is_lost(&self) -> bool {
        false
    }
    /// The chain as a block filter for `channels` channels and blocks up to `max_block` frames.
    fn prepare(&self, chain: &DesignedChain, channels: usize, max_block: usize) -> Result<Box<dyn Prepared>, RunError>;
    /// The chain as an offload executor for jobs of exactly `block` frames.
    fn executor(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<Box<dyn Executor>, RunError>;
    /// Whether [`Backend::executor`] would take `chain` (its precision and size rules),
    /// without building anything on the device: for new coefficients of a running
    /// executor's shape ([`crate::run::offload::Offload::retune`]), which the executor
    /// would otherwise decline only after the change.
    fn accepts(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<(), RunError> {
        let _ = (chain, channels, block);
        Ok(())
    }
    /// Times the backend's device-resident path (`cargo xtask bench --resident`): `input`
    /// (`rows x frames`, row-major) is put on the device once; then, `runs` times each,
    /// one call filters it there from zero state into another device buffer (in units of
    /// `unit_frames`), waited for, and a device-to-device copy of the same bytes, waited
    /// for. Backends without a resident path decline.
    fn time_resident(&self, chain: &DesignedChain, input: &[f32], rows: usize, frames: usize, unit_frames: usize, runs: usize) -> Result<ResidentTiming, RunError> {
        let _ = (chain, input, rows, frames, unit_frames, runs);
        Err(RunError::Declined { backend: self.name(), why: "no device-resident path".into() })
    }
    /// The host-to-host floor of this backend (`cargo xtask bench` prints it beside every
    /// offline GPU workload): `bytes` from host memory to the device and `bytes` back to
    /// host memory, both directions at once where the device can, nothing computed; the
    /// median of `runs` (after one warm-up) in seconds. Backends without a device decline.
    fn time_host_copy(&self, bytes: usize, runs: usize) -> Result<f64, RunError> {
        let _ = (bytes, runs);
        Err(RunError::Declined { backend: self.name(), why: "no device to copy to".into() })
    }
}

/// [`Backend::time_resident`]'s figures: the median of the runs, in seconds, and the
/// first run's output (read back after the timing, for checking).
#[derive(Clone, Debug)]
pub struct ResidentTiming {
    pub filter_s: f64,
    pub copy_s: f64,
    pub output: Vec<f32>,
}

/// The median of `times` (seconds; empty: NaN).
pub fn median_s(mut times: Vec<f64>) -> f64 {
    if times.is_empty() {
        return f64::NAN;
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The CPU: the engine, with a file's channels split over up to `threads` engines that
/// run each block in parallel (channels are independent, so the output is the same as
/// one engine's, bit for bit).
#[derive(Clone, Copy, Debug)]
pub struct CpuBackend {
    pub threads: usize,
}

impl Default for CpuBackend {
    fn default() -> CpuBackend {
        CpuBackend { threads: 1 }
    }
}

/// Largest block [`CpuBackend::filter_batch`] prepares an engine for; longer inputs are
/// filtered in pieces. 262,144 frames: long enough for the time segments of designs down
/// to ~60 Hz at 48 kHz (their warm-up must fit 1/28 of the block in mono); measured as
/// fast per sample as 65,536.
pub const BATCH_MAX_BLOCK: usize = 262_144;

impl CpuBackend {
    /// Filters a batch in place: `data` is `items x channels x frames` (rows of `frames`,
    /// each item's channels together), each item as if alone (the Python package's
    /// `Chain.process`). Chains of cascades only take items in groups whose channels fill
    /// whole SIMD groups of lanes (mono: eight items side by side): the cascade kernels
    /// compute each lane alone, and every group runs as many time segments as one item
    /// would, so an item's output is the same bits in any group. Chains with a FIR stage
    /// take one item at a time (a FIR's path, and with it its rounding, depends on the
    /// channel count). Groups are spread over up to [`CpuBackend::threads`] threads.
    pub fn filter_batch(&self, designed: &DesignedChain, data: &mut [f32], items: usize, channels: usize, frames: usize) {
        let threads = self.threads.max(1);
        let per_item = channels * frames;
        if per_item == 0 {
            return;
        }
        let run = |group: &mut [f32]| {
            let lanes = group.len() / frames;
            // Offline: long blocks run in time segments (see the core's `dsp::sos::segments`),
            // as many as one item's channels take, in every group, so that an item's output is
            // the same bits whatever group it falls in.
            let options = EngineOptions::offline(channels);
            let mut engine = Engine::with_options(designed, lanes, frames.clamp(1, BATCH_MAX_BLOCK), options);
            let mut start = 0;
            while start < frames {
                let end = (start + BATCH_MAX_BLOCK).min(frames);
                let mut rows: Vec<&mut [f32]> = group.chunks_mut(frames).map(|r| &mut r[start..end]).collect();
                engine.process(&mut rows);
                start = end;
            }
        };
        let cascades_only = designed.stages.iter().all(|s| matches!(s, DesignedStage::Sos(_)));
        let per_group = if cascades_only { offline_segments(channels).min(items.max(1)) } else { 1 };
        let groups = items.div_ceil(per_group);
        if groups <= 1 || threads <= 1 {
            data.chunks_mut(per_group * per_item).for_each(run);
            return;
        }
        let per_thread = groups.div_ceil(threads.min(groups));
        std::thread::scope(|s| {
            for share in data.chunks_mut(per_thread * per_group * per_item) {
                s.spawn(move || share.chunks_mut(per_group * per_item).for_each(run));
            }
        });
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn describe(&self) -> String {
        "cpu".to_string()
    }
    fn prepare(&self, chain: &DesignedChain, channels: usize, max_block: usize) -> Result<Box<dyn Prepared>, RunError> {
        let bounds = channel_groups(channels, self.threads, pairs_channels(chain));
        // Offline: time segments as SIMD lanes, counted for the whole stream's channels so
        // that every split computes the same bits.
        let options = EngineOptions::offline(channels);
        let engines = bounds.windows(2).map(|g| Engine::with_options(chain, g[1] - g[0], max_block, options)).collect();
        Ok(Box::new(CpuPrepared { engines, channels, max_block }))
    }
    fn executor(&self, chain: &DesignedChain, channels: usize, block: usize) -> Result<Box<dyn Executor>, RunError> {
        Ok(Box::new(crate::run::offload::CpuExecutor::new(chain, channels, block)))
    }
}

impl Executor for Box<dyn Executor> {
    fn execute(&mut self, job: &mut crate::run::offload::Job) -> Result<(), crate::run::offload::ExecError> {
        (**self).execute(job)
    }
    fn updates_in_place(&self) -> bool {
        (**self).updates_in_place()
    }
    fn update(&mut self, chain: &DesignedChain) -> Result<(), crate::run::offload::ExecError> {
        (**self).update(chain)
    }
}

/// The CPU's prepared chain: filters at `submit`; `collect` hands the block back.
struct CpuPrepared {
    engines: Vec<Engine>,
    channels: usize,
    max_block: usize,
}

impl Prepared for CpuPrepared {
    fn depth(&self) -> usize {
        0
    }
    fn submit(&mut self, _: &[&[f32]], _: usize) -> Result<(), RunError> {
        // With depth 0 a stream calls `process` instead.
        Err(RunError::NothingInFlight { backend: "cpu" })
    }
    fn collect(&mut self, _: &mut [&mut [f32]]) -> Result<usize, RunError> {
        Err(RunError::NothingInFlight { backend: "cpu" })
    }
    fn in_flight(&self) -> usize {
        0
    }
    fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        if buffers.len() != self.channels {
            return Err(RunError::Channels { expected: self.channels, found: buffers.len() });
        }
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let mut start = 0;
        while start < frames {
            let end = (start + self.max_block).min(frames);
            let mut slices: Vec<&mut [f32]> = buffers.iter_mut().map(|b| &mut b[start..end]).collect();
            process_split(&mut self.engines, &mut slices);
            start = end;
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.engines.iter_mut().for_each(Engine::reset);
    }
}

/// Whether the chain has a FIR stage that may run on the partitioned path, which runs
/// channels `(0, 1)`, `(2, 3)`, ... through shared complex FFTs and picks its path by
/// whether it has a pair.
fn pairs_channels(designed: &DesignedChain) -> bool {
    designed.stages.iter().any(|s| matches!(s, DesignedStage::Fir(t) if choose_mode_for(t.len(), 2) != FirMode::Direct))
}

/// Where a file's channels are split into up to `threads` engines: boundaries from `0`
/// to `channels`, as even as possible. With `keep_pairs` (see [`pairs_channels`]) groups
/// start at even channels and hold two or more channels (an odd last channel joins the
/// last pair), so every split computes every channel exactly as one engine would.
fn channel_groups(channels: usize, threads: usize, keep_pairs: bool) -> Vec<usize> {
    let unit = if keep_pairs { 2 } else { 1 };
    let units = (channels / unit).max(1);
    let per = units.div_ceil(threads.clamp(1, units));
    let mut bounds: Vec<usize> = (0..units).step_by(per).map(|u| u * unit).collect();
    bounds.push(channels);
    bounds
}

/// Each engine takes the next `engine.channels()` buffers; all but the first run on
/// scoped threads.
fn process_split(engines: &mut [Engine], slices: &mut [&mut [f32]]) {
    if let [engine] = engines {
        engine.process(slices);
        return;
    }
    std::thread::scope(|s| {
        let mut rest = slices;
        let mut jobs = Vec::with_capacity(engines.len());
        for engine in engines.iter_mut() {
            let (mine, others) = rest.split_at_mut(engine.channels().min(rest.len()));
            rest = others;
            jobs.push((engine, mine));
        }
        let mut jobs = jobs.into_iter();
        let first = jobs.next();
        for (engine, mine) in jobs {
            s.spawn(move || engine.process(mine));
        }
        if let Some((engine, mine)) = first {
            engine.process(mine);
        }
    });
}
