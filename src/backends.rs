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
use crate::run::router::{Route, Router, RouterConfig};
use crate::run::stream::BlockStream;
use std::sync::{Arc, OnceLock};
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
}

impl Backends {
    pub fn new(choice: Choice, cpu_threads: usize) -> Backends {
        Backends { choice, cpu: CpuBackend { threads: cpu_threads.max(1) }, tuning: GpuTuning::default(), gpu: OnceLock::new(), all_gpus: OnceLock::new() }
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

    /// Every GPU backend of [`GPU_BACKENDS`], each opened once (`auto` probes them all).
    pub fn all_gpus(&self) -> &[OpenedGpu] {
        self.all_gpus.get_or_init(|| GPU_BACKENDS.iter().map(|e| (e.name, (e.open)(&self.tuning))).collect())
    }
}

/// Prepares `chain` for `channels` channels and blocks of up to `max_block` frames on the
/// backend the run's choice asks for. Returns the stream and one line saying what was
/// used and, for `auto`, why. `expected_frames` (the input's length when known) lets
/// `auto` keep short inputs on the CPU without probing.
pub fn open_stream(
    backends: &Backends,
    chain: &DesignedChain,
    channels: usize,
    max_block: usize,
    expected_frames: Option<u64>,
) -> Result<(BlockStream, String), RunError> {
    match &backends.choice {
        Choice::Cpu => Ok((BlockStream::new(backends.cpu.prepare(chain, channels, max_block)?, max_block), "cpu".to_string())),
        Choice::Gpu(_) => {
            let gpu = backends.gpu()?;
            Ok((BlockStream::new(gpu.prepare(chain, channels, max_block)?, max_block), gpu.describe()))
        }
        Choice::Auto => choose_auto(backends, chain, channels, max_block, expected_frames),
    }
}

/// The `auto` choice: times a probe block of noise on the CPU and on every GPU backend
/// that opens and takes the chain, keeps the fastest GPU, and asks the router between it
/// and the CPU (offline: no deadline, so only speed counts). The line says why, with
/// each path's figures and why any GPU backend was not tried.
fn choose_auto(
    backends: &Backends,
    chain: &DesignedChain,
    channels: usize,
    max_block: usize,
    expected_frames: Option<u64>,
) -> Result<(BlockStream, String), RunError> {
    let cpu = || backends.cpu.prepare(chain, channels, max_block).map(|p| BlockStream::new(p, max_block));
    if let Some(f) = expected_frames.filter(|f| f * channels as u64 <= AUTO_MIN_SAMPLES) {
        return Ok((cpu()?, format!("cpu (auto: {f} frames are too short to repay GPU set-up)")));
    }
    let mut skipped = Vec::new();
    let mut gpus = Vec::new();
    for (name, opened) in backends.all_gpus() {
        match opened {
            Ok(b) => match b.prepare(chain, channels, max_block) {
                Ok(p) => gpus.push((b.clone(), BlockStream::new(p, max_block))),
                Err(e) => skipped.push(format!("{name}: {e}")),
            },
            Err(why) => skipped.push(format!("{name}: {why}")),
        }
    }
    let not_tried = if skipped.is_empty() { String::new() } else { format!("; not tried: {}", skipped.join("; ")) };
    if gpus.is_empty() {
        let why = if skipped.is_empty() { "this build has no GPU backend".to_string() } else { skipped.join("; ") };
        return Ok((cpu()?, format!("cpu (auto: {why})")));
    }
    let mut cpu_stream = cpu()?;
    let mut block: Vec<Vec<f32>> = (0..channels)
        .map(|c| (0..max_block).map(|n| (((n * 7919 + c * 104_729) % 2003) as f32 / 1001.5) - 1.0).collect())
        .collect();
    let mut time = |stream: &mut BlockStream| -> Option<f64> {
        let mut slices: Vec<&mut [f32]> = block.iter_mut().map(|c| &mut c[..]).collect();
        let t = Instant::now();
        stream.process(&mut slices).ok().map(|_| t.elapsed().as_secs_f64())
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
        .map(|((b, _), t)| match t.iter().all(Option::is_some) {
            true => format!("{} {:.2} ms", b.describe(), median(&t.iter().map(|v| v.unwrap_or(0.0)).collect::<Vec<_>>()) * 1e3),
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
    let figures = format!("CPU {:.2} ms, GPU {} per {max_block}-frame block{not_tried}", median(&cpu_times) * 1e3, gpu_figures.join(", "));
    let (mut chosen, name) = match (d.route, best) {
        (Route::Gpu, Some((i, _))) => {
            let (backend, stream) = gpus.swap_remove(i);
            (stream, backend.name())
        }
        _ => (cpu_stream, "cpu"),
    };
    // The probe ran noise through the chosen path: start from silence.
    chosen.reset();
    Ok((chosen, format!("{name} (auto: {}; {figures})", d.reason)))
}

