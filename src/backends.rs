//! The backends of this build and the choice between them: the list of GPU backends
//! (the router's list), opening them, and [`open_stream`], which prepares a chain on the
//! CPU, on a GPU backend by name, or on whichever a probe finds faster (`auto`).
//!
//! This layer sits above [`crate::run`] (the device-neutral `Backend` trait, streams and
//! offload) and [`crate::gpu`] (the backends that implement it), so neither of those
//! names the other's list. Adding a GPU backend is one folder under `src/gpu/` and one
//! entry in [`GPU_BACKENDS`].

use crate::chain::DesignedChain;
use crate::run::backend::{Backend, CpuBackend, RunError};
use crate::run::blocks::{stream_block_frames, LinkCost, PROBE_FRAMES, STREAM_BLOCK_RANGE};
use crate::run::router::{Route, Router, RouterConfig};
use crate::run::stream::BlockStream;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// One GPU backend of this build: its name and how to open it.
pub struct GpuBackendEntry {
    pub name: &'static str,
    /// Opens the device with the given tuning (a backend takes the fields that are its
    /// own); the error says why there is none.
    pub open: fn(&GpuTuning) -> Result<Arc<dyn Backend>, String>,
}

pub use crate::gpu::GpuTuning;

/// The GPU backends of this build, in order of preference (the plugin takes the first
/// that opens; `auto` probes every one that opens). CUDA first: it opens only with an
/// NVIDIA driver and device, and there it was ahead of wgpu (Vulkan) on every workload
/// measured but one (an H200: the IIR workloads 2.8-3.7x, fir_chain 2.1-2.9x, realtime
/// blocks 1.6-9.2x; long_fir 25.2 against wgpu's 21.9 ms; docs/perf-history.md).
pub const GPU_BACKENDS: &[GpuBackendEntry] = &[
    #[cfg(feature = "cuda")]
    GpuBackendEntry { name: "cuda", open: crate::gpu::cuda::open_backend },
    #[cfg(feature = "wgpu")]
    GpuBackendEntry { name: "wgpu", open: crate::gpu::wgpu::open_backend },
];

/// Opens the GPU backend called `name` with the default tuning.
pub fn open_gpu(name: &str) -> Result<Arc<dyn Backend>, RunError> {
    open_gpu_tuned(name, &GpuTuning::default())
}

/// Opens the GPU backend called `name` with `tuning`.
pub fn open_gpu_tuned(name: &str, tuning: &GpuTuning) -> Result<Arc<dyn Backend>, RunError> {
    let entry = GPU_BACKENDS.iter().find(|e| e.name == name).ok_or_else(|| RunError::Unavailable {
        name: name.to_string(),
        why: if GPU_BACKENDS.is_empty() {
            "this build has no GPU backend".to_string()
        } else {
            format!("this build's GPU backends are {}", GPU_BACKENDS.iter().map(|e| e.name).collect::<Vec<_>>().join(", "))
        },
    })?;
    (entry.open)(tuning).map_err(|why| RunError::Unavailable { name: name.to_string(), why })
}

/// Opens the first GPU backend that opens (default tuning); the error lists why each
/// did not.
pub fn open_first_gpu() -> Result<Arc<dyn Backend>, RunError> {
    open_first_gpu_tuned(&GpuTuning::default())
}

/// [`open_first_gpu`] with `tuning`.
pub fn open_first_gpu_tuned(tuning: &GpuTuning) -> Result<Arc<dyn Backend>, RunError> {
    let mut why = Vec::new();
    for entry in GPU_BACKENDS {
        match (entry.open)(tuning) {
            Ok(b) => return Ok(b),
            Err(e) => why.push(format!("{}: {e}", entry.name)),
        }
    }
    let why = if why.is_empty() { "this build has no GPU backend".to_string() } else { why.join("; ") };
    Err(RunError::Unavailable { name: "gpu".to_string(), why })
}

/// Which backend a run asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Cpu,
    /// A GPU backend by name (one of [`GPU_BACKENDS`]).
    Gpu(String),
    /// The fastest path a probe finds on this chain: the CPU or any GPU backend that opens.
    Auto,
}

impl Choice {
    /// Every name a choice can be given by, in the order a command line lists them:
    /// `auto`, `cpu`, then each of [`GPU_BACKENDS`] (so a new backend is offered by every
    /// tool with no other change).
    pub fn names() -> Vec<&'static str> {
        ["auto", "cpu"].into_iter().chain(GPU_BACKENDS.iter().map(|e| e.name)).collect()
    }

    /// The choice called `name` (one of [`Choice::names`]); the error lists them.
    pub fn parse(name: &str) -> Result<Choice, String> {
        match name {
            "auto" => Ok(Choice::Auto),
            "cpu" => Ok(Choice::Cpu),
            n if GPU_BACKENDS.iter().any(|e| e.name == n) => Ok(Choice::Gpu(n.to_string())),
            other => Err(format!("no backend called {other:?}; this build has {}", Choice::names().join(", "))),
        }
    }

    /// The name it was given by.
    pub fn name(&self) -> &str {
        match self {
            Choice::Auto => "auto",
            Choice::Cpu => "cpu",
            Choice::Gpu(n) => n,
        }
    }
}

/// A stream's block length: given (the same on every backend), or chosen for the backend
/// that runs it ([`CPU_BLOCK_FRAMES`] on the CPU; on a GPU from its link's measured cost,
/// `run::blocks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockFrames {
    Given(usize),
    Chosen,
}

/// The CPU's block where none is given.
pub const CPU_BLOCK_FRAMES: usize = 4096;
/// A GPU stream's block where none is given and the chain's round trips could not be
/// measured.
pub const GPU_FALLBACK_BLOCK_FRAMES: usize = 65_536;
/// The input length a GPU's block is chosen for where the length is not known (ten
/// minutes at 48 kHz).
const UNKNOWN_FRAMES: u64 = 48_000 * 600;
/// Round trips of each probe length the cost is measured from (the median is taken).
const COST_PROBE_RUNS: usize = 3;

/// What a measured stream cost is kept for: the backend, the channels, the chain's
/// sections and FIR taps (chains of one shape cost alike).
type CostKey = (&'static str, usize, usize, usize);

/// Inputs with fewer samples (frames x channels) than this stay on the CPU under `auto`:
/// they end before a GPU's set-up and probing would pay for themselves.
pub const AUTO_MIN_SAMPLES: u64 = 4 << 20;

/// A GPU backend of the list by name, opened or why not.
pub type OpenedGpu = (&'static str, Result<Arc<dyn Backend>, String>);

/// The backends of one run (a render of many files, a benchmark): the choice, the CPU
/// with its thread count, and the GPU backend the choice names, opened at most once, on
/// first use.
pub struct Backends {
    choice: Choice,
    cpu: CpuBackend,
    tuning: GpuTuning,
    gpu: OnceLock<Result<Arc<dyn Backend>, RunError>>,
    /// For `auto`: every GPU backend of the list, opened or why not.
    all_gpus: OnceLock<Vec<OpenedGpu>>,
    /// Measured stream costs, one per backend and chain shape (`None`: it could not be).
    costs: Mutex<Vec<(CostKey, Option<LinkCost>)>>,
}

impl Backends {
    pub fn new(choice: Choice, cpu_threads: usize) -> Backends {
        Backends { choice, cpu: CpuBackend { threads: cpu_threads.max(1) }, tuning: GpuTuning::default(), gpu: OnceLock::new(), all_gpus: OnceLock::new(), costs: Mutex::new(Vec::new()) }
    }

    /// The same, opening the GPU backends with `tuning` (before any is opened).
    pub fn with_tuning(mut self, tuning: GpuTuning) -> Backends {
        self.tuning = tuning;
        self
    }

    /// The GPU backend of this run: the one [`Choice::Gpu`] names, or for the other
    /// choices the first of [`GPU_BACKENDS`] that opens. Opened once; later calls get the
    /// same answer.
    pub fn gpu(&self) -> Result<&Arc<dyn Backend>, RunError> {
        self.gpu
            .get_or_init(|| match &self.choice {
                Choice::Gpu(name) => open_gpu_tuned(name, &self.tuning),
                Choice::Cpu | Choice::Auto => open_first_gpu_tuned(&self.tuning),
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// [`stream_cost`] kept for the run, one measurement per backend and chain shape.
    pub fn stream_cost(&self, gpu: &dyn Backend, chain: &DesignedChain, channels: usize) -> Option<LinkCost> {
        let taps = chain.stages.iter().map(|s| if let crate::chain::DesignedStage::Fir(t) = s { t.len() } else { 0 }).sum();
        let key = (gpu.name(), channels, chain.sections(), taps);
        let mut costs = self.costs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, cost)) = costs.iter().find(|(k, _)| *k == key) {
            return *cost;
        }
        let cost = stream_cost(gpu, chain, channels);
        costs.push((key, cost));
        cost
    }

    /// [`gpu_block`] with the run's kept costs.
    pub fn gpu_block(&self, gpu: &dyn Backend, chain: &DesignedChain, channels: usize, frames: Option<u64>) -> (usize, String) {
        choose_gpu_block(frames, channels, || self.stream_cost(gpu, chain, channels))
    }

    /// Every GPU backend of [`GPU_BACKENDS`], each opened once (`auto` probes them all).
    pub fn all_gpus(&self) -> &[OpenedGpu] {
        self.all_gpus.get_or_init(|| GPU_BACKENDS.iter().map(|e| (e.name, (e.open)(&self.tuning))).collect())
    }
}

/// The cost of `chain`'s blocks on `gpu` for `channels` channels (copies and kernels:
/// `run::blocks`), measured now on a stream prepared for the long probe; `None` where it
/// cannot be measured.
pub fn stream_cost(gpu: &dyn Backend, chain: &DesignedChain, channels: usize) -> Option<LinkCost> {
    let prepared = gpu.prepare(chain, channels, PROBE_FRAMES.1).ok()?;
    LinkCost::measure_stream(&mut BlockStream::new(prepared, PROBE_FRAMES.1), channels, COST_PROBE_RUNS)
}

/// The block for a stream of `frames` frames (unknown: ten minutes at 48 kHz) of `chain`
/// on `gpu`, and how it was chosen: an input no longer than the long probe is one block
/// (measuring would cost more than it could save); a longer one takes the length with
/// the least predicted time for the chain's measured cost ([`stream_cost`]).
pub fn gpu_block(gpu: &dyn Backend, chain: &DesignedChain, channels: usize, frames: Option<u64>) -> (usize, String) {
    choose_gpu_block(frames, channels, || stream_cost(gpu, chain, channels))
}

fn choose_gpu_block(frames: Option<u64>, channels: usize, cost: impl FnOnce() -> Option<LinkCost>) -> (usize, String) {
    if let Some(f) = frames.filter(|&f| f <= PROBE_FRAMES.1 as u64) {
        let b = (f as usize).max(1);
        return (b, format!("one block of {b} frames"));
    }
    match cost() {
        Some(cost) => {
            let b = stream_block_frames(frames.unwrap_or(UNKNOWN_FRAMES), channels, &cost, STREAM_BLOCK_RANGE);
            let ns = 4e9 / cost.bytes_per_s;
            (b, format!("blocks of {b} frames for a measured {:.0} us + {ns:.2} ns per sample a block", cost.fixed_s * 1e6))
        }
        None => (GPU_FALLBACK_BLOCK_FRAMES, format!("blocks of {GPU_FALLBACK_BLOCK_FRAMES} frames (the chain's round trips could not be measured)")),
    }
}

/// Prepares `chain` for `channels` channels on the backend the run's choice asks for, in
/// blocks of `block` frames (given, or chosen for the backend: [`BlockFrames`]). Returns
/// the stream, one line saying what was used (the block, and for `auto` why), and the
/// block length to feed it. `expected_frames` (the input's length when known) lets
/// `auto` keep short inputs on the CPU without probing, and sizes a GPU's block.
pub fn open_stream(
    backends: &Backends,
    chain: &DesignedChain,
    channels: usize,
    block: BlockFrames,
    expected_frames: Option<u64>,
) -> Result<(BlockStream, String, usize), RunError> {
    let cpu_block = match block {
        BlockFrames::Given(b) => b,
        BlockFrames::Chosen => CPU_BLOCK_FRAMES,
    };
    match &backends.choice {
        Choice::Cpu => Ok((BlockStream::new(backends.cpu.prepare(chain, channels, cpu_block)?, cpu_block), "cpu".to_string(), cpu_block)),
        Choice::Gpu(_) => {
            let gpu = backends.gpu()?;
            let (b, how) = match block {
                BlockFrames::Given(b) => (b, format!("blocks of {b} frames")),
                BlockFrames::Chosen => backends.gpu_block(gpu.as_ref(), chain, channels, expected_frames),
            };
            let (prepared, b, how) = match gpu.prepare(chain, channels, b) {
                Ok(p) => (p, b, how),
                // A chosen block longer than the fallback that the backend declines (a
                // launch or buffer limit): the fallback, said.
                Err(e) if block == BlockFrames::Chosen && b > GPU_FALLBACK_BLOCK_FRAMES => {
                    let f = GPU_FALLBACK_BLOCK_FRAMES;
                    (gpu.prepare(chain, channels, f)?, f, format!("blocks of {f} frames: {b} were declined ({e})"))
                }
                Err(e) => return Err(e),
            };
            Ok((BlockStream::new(prepared, b), format!("{} ({how})", gpu.describe()), b))
        }
        Choice::Auto => choose_auto(backends, chain, channels, (cpu_block, block), expected_frames),
    }
}

/// The `auto` choice: times a probe of noise on the CPU and on every GPU backend that
/// opens and takes the chain, each in its own blocks (the same frames through each),
/// keeps the fastest GPU, and asks the router between it and the CPU (offline: no
/// deadline, so only speed counts). The line says why, with each path's figures and why
/// any GPU backend was not tried.
fn choose_auto(
    backends: &Backends,
    chain: &DesignedChain,
    channels: usize,
    (cpu_block, block): (usize, BlockFrames),
    expected_frames: Option<u64>,
) -> Result<(BlockStream, String, usize), RunError> {
    let cpu = || backends.cpu.prepare(chain, channels, cpu_block).map(|p| BlockStream::new(p, cpu_block));
    if let Some(f) = expected_frames.filter(|f| f * channels as u64 <= AUTO_MIN_SAMPLES) {
        return Ok((cpu()?, format!("cpu (auto: {f} frames are too short to repay GPU set-up)"), cpu_block));
    }
    let mut skipped = Vec::new();
    let mut gpus = Vec::new();
    for (name, opened) in backends.all_gpus() {
        match opened {
            Ok(b) => {
                let gpu_block = match block {
                    BlockFrames::Given(n) => n,
                    BlockFrames::Chosen => backends.gpu_block(b.as_ref(), chain, channels, expected_frames).0,
                };
                match b.prepare(chain, channels, gpu_block) {
                    Ok(p) => gpus.push((b.clone(), BlockStream::new(p, gpu_block), gpu_block)),
                    Err(e) => skipped.push(format!("{name}: {e}")),
                }
            }
            Err(why) => skipped.push(format!("{name}: {why}")),
        }
    }
    let not_tried = if skipped.is_empty() { String::new() } else { format!("; not tried: {}", skipped.join("; ")) };
    if gpus.is_empty() {
        let why = if skipped.is_empty() { "this build has no GPU backend".to_string() } else { skipped.join("; ") };
        return Ok((cpu()?, format!("cpu (auto: {why})"), cpu_block));
    }
    let mut cpu_stream = cpu()?;
    // Every path filters the same frames: the longest block of any path (no longer than
    // the input), each in its own blocks.
    let probe = gpus.iter().map(|g| g.2).chain([cpu_block]).max().unwrap_or(cpu_block);
    let probe = expected_frames.map_or(probe, |f| probe.min(f.max(1) as usize));
    let mut data: Vec<Vec<f32>> = (0..channels)
        .map(|c| (0..probe).map(|n| (((n * 7919 + c * 104_729) % 2003) as f32 / 1001.5) - 1.0).collect())
        .collect();
    // Each path as the render runs it: pieces of its block, its depth of them in flight.
    let mut time = |stream: &mut BlockStream| -> Option<f64> {
        let mut slices: Vec<&mut [f32]> = data.iter_mut().map(|c| &mut c[..]).collect();
        let t = Instant::now();
        stream.process_pipelined(&mut slices).ok().map(|_| t.elapsed().as_secs_f64())
    };
    // Four rounds, the paths interleaved, so that a busy moment hits them alike.
    let mut cpu_times = Vec::new();
    let mut gpu_times: Vec<Vec<Option<f64>>> = vec![Vec::new(); gpus.len()];
    for _ in 0..4 {
        cpu_times.push(time(&mut cpu_stream).unwrap_or(f64::INFINITY));
        for (g, times) in gpus.iter_mut().zip(gpu_times.iter_mut()) {
            times.push(time(&mut g.1));
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    // The fastest GPU that ran every probe block.
    let best = gpu_times
        .iter()
        .enumerate()
        .filter(|(_, t)| t.iter().all(Option::is_some))
        .map(|(i, t)| (i, median(&t.iter().map(|v| v.unwrap_or(f64::INFINITY)).collect::<Vec<_>>())))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let gpu_figures: Vec<String> = gpus
        .iter()
        .zip(&gpu_times)
        .map(|((b, _, block), t)| match t.iter().all(Option::is_some) {
            true => format!("{} {:.2} ms in blocks of {block}", b.describe(), median(&t.iter().map(|v| v.unwrap_or(0.0)).collect::<Vec<_>>()) * 1e3),
            false => format!("{} failed a probe block", b.describe()),
        })
        .collect();
    let config = RouterConfig { hold: 1, min_samples: 3, ..RouterConfig::default() };
    let mut router = Router::new(config);
    match best {
        Some((i, _)) => {
            for (c, g) in cpu_times.iter().zip(&gpu_times[i]) {
                router.record_cpu(*c);
                router.record_gpu(g.unwrap_or(f64::INFINITY));
            }
        }
        None => router.set_gpu_available(false),
    }
    let d = router.decide(f64::INFINITY);
    let figures = format!("{probe} frames: CPU {:.2} ms in blocks of {cpu_block}, GPU {}{not_tried}", median(&cpu_times) * 1e3, gpu_figures.join(", "));
    let (mut chosen, name, used) = match (d.route, best) {
        (Route::Gpu, Some((i, _))) => {
            let (backend, stream, block) = gpus.swap_remove(i);
            (stream, backend.name(), block)
        }
        _ => (cpu_stream, "cpu", cpu_block),
    };
    // The probe ran noise through the chosen path: start from silence.
    chosen.reset();
    Ok((chosen, format!("{name} (auto: {}; {figures})", d.reason), used))
}

