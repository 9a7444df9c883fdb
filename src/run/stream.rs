//! The pipelined block loop over any backend: what offline rendering, the benchmarks and
//! the Python package use, so none of them keeps a queue loop of its own.
//!
//! A [`BlockStream`] takes owned planar blocks in order and hands them back filtered, in
//! order. On a backend with depth (a GPU: two blocks in flight) block `k + 1` is uploaded
//! and started before block `k` is read back; on the CPU each block is filtered when it
//! arrives. [`open_stream`] picks the backend from a [`Choice`], `auto` included.

use super::backend::{open_gpu, Backend, CpuBackend, Prepared, RunError, GPU_BACKENDS};
use super::router::{Route, Router, RouterConfig};
use crate::chain::DesignedChain;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// One planar block: a buffer per channel and the frames used in each.
pub type Block = (Vec<Vec<f32>>, usize);

/// A prepared chain with its blocks in flight.
pub struct BlockStream {
    prepared: Box<dyn Prepared>,
    waiting: VecDeque<Block>,
    max_block: usize,
}

impl BlockStream {
    pub fn new(prepared: Box<dyn Prepared>, max_block: usize) -> BlockStream {
        BlockStream { prepared, waiting: VecDeque::with_capacity(2), max_block: max_block.max(1) }
    }

    /// Takes the next block (at most the stream's largest); returns the oldest filtered
    /// block once one is ready. Blocks come back in the order they went in.
    pub fn push(&mut self, block: Block) -> Result<Option<Block>, RunError> {
        let (mut buf, n) = block;
        if n > self.max_block {
            return Err(RunError::BlockTooLong { max: self.max_block, found: n });
        }
        if self.prepared.depth() == 0 {
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
            self.prepared.process(&mut slices)?;
            return Ok(Some((buf, n)));
        }
        let views: Vec<&[f32]> = buf.iter().map(|c| &c[..n]).collect();
        self.prepared.submit(&views, n)?;
        self.waiting.push_back((buf, n));
        if self.prepared.in_flight() < self.prepared.depth() {
            return Ok(None);
        }
        self.collect_oldest().map(Some)
    }

    /// After the last [`BlockStream::push`]: the blocks still in flight, one per call,
    /// `None` when all are out.
    pub fn drain(&mut self) -> Result<Option<Block>, RunError> {
        if self.waiting.is_empty() {
            return Ok(None);
        }
        self.collect_oldest().map(Some)
    }

    fn collect_oldest(&mut self) -> Result<Block, RunError> {
        let (mut buf, n) = self.waiting.pop_front().expect("a block is in flight");
        let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
        self.prepared.collect(&mut slices)?;
        Ok((buf, n))
    }

    /// Filters the buffers in place, synchronously (any length).
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        self.prepared.process(buffers)
    }

    /// Filters whole buffers in place as pieces of the stream's largest block, with the
    /// backend's depth of pieces in flight. Same output as [`BlockStream::process`].
    pub fn process_pipelined(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        let depth = self.prepared.depth();
        if depth == 0 {
            return self.prepared.process(buffers);
        }
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let mut pieces = VecDeque::with_capacity(depth);
        let mut next = 0;
        while next < frames || !pieces.is_empty() {
            if next < frames && self.prepared.in_flight() < depth {
                let n = (frames - next).min(self.max_block);
                let views: Vec<&[f32]> = buffers.iter().map(|b| &b[next..next + n]).collect();
                self.prepared.submit(&views, n)?;
                pieces.push_back((next, n));
                next += n;
                continue;
            }
            let Some((at, n)) = pieces.pop_front() else { break };
            let mut outs: Vec<&mut [f32]> = buffers.iter_mut().map(|b| &mut b[at..at + n]).collect();
            self.prepared.collect(&mut outs)?;
        }
        Ok(())
    }

    /// Clears the filter state and forgets blocks in flight.
    pub fn reset(&mut self) {
        self.waiting.clear();
        self.prepared.reset();
    }
}

/// Which backend a stream asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Cpu,
    /// A GPU backend by name (one of [`GPU_BACKENDS`]).
    Gpu(String),
    /// The GPU when a probe shows it faster on this chain, otherwise the CPU.
    Auto,
}

/// Inputs with fewer samples (frames x channels) than this stay on the CPU under `auto`:
/// they end before a GPU's set-up and probing would pay for themselves.
pub const AUTO_MIN_SAMPLES: u64 = 4 << 20;

/// The backends of one run: the CPU (with its thread count) and a GPU backend opened at
/// most once, on first use.
pub struct Backends {
    pub cpu: CpuBackend,
    gpu: OnceLock<Result<Arc<dyn Backend>, RunError>>,
}

impl Backends {
    pub fn new(cpu_threads: usize) -> Backends {
        Backends { cpu: CpuBackend { threads: cpu_threads.max(1) }, gpu: OnceLock::new() }
    }

    /// The GPU backend called `name` (`None`: the first of [`GPU_BACKENDS`] that opens),
    /// opened once per run; later calls get the first answer.
    pub fn gpu(&self, name: Option<&str>) -> Result<&Arc<dyn Backend>, RunError> {
        self.gpu
            .get_or_init(|| match name {
                Some(n) => open_gpu(n),
                None => super::backend::open_first_gpu().map_err(|why| RunError::Unavailable { name: "gpu".into(), why }),
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Prepares `chain` for `channels` channels and blocks of up to `max_block` frames on the
/// backend `choice` asks for. Returns the stream and one line saying what was used and,
/// for `auto`, why. `expected_frames` (the input's length when known) lets `auto` keep
/// short inputs on the CPU without probing.
pub fn open_stream(
    backends: &Backends,
    choice: &Choice,
    chain: &DesignedChain,
    channels: usize,
    max_block: usize,
    expected_frames: Option<u64>,
) -> Result<(BlockStream, String), RunError> {
    match choice {
        Choice::Cpu => Ok((BlockStream::new(backends.cpu.prepare(chain, channels, max_block)?, max_block), "cpu".to_string())),
        Choice::Gpu(name) => {
            let gpu = backends.gpu(Some(name))?;
            Ok((BlockStream::new(gpu.prepare(chain, channels, max_block)?, max_block), gpu.describe()))
        }
        Choice::Auto => choose_auto(backends, chain, channels, max_block, expected_frames),
    }
}

/// The `auto` choice: times a probe block of noise on both paths and asks the router
/// (offline: no deadline, so only speed counts).
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
    let gpu_backend = match backends.gpu(None) {
        Ok(g) => g,
        Err(RunError::Unavailable { why, .. }) => return Ok((cpu()?, format!("cpu (auto: {why})"))),
        Err(e) => return Ok((cpu()?, format!("cpu (auto: {e})"))),
    };
    let mut gpu = match gpu_backend.prepare(chain, channels, max_block) {
        Ok(g) => BlockStream::new(g, max_block),
        Err(e) => return Ok((cpu()?, format!("cpu (auto: {e})"))),
    };
    let mut cpu_stream = cpu()?;
    let config = RouterConfig { hold: 1, min_samples: 3, ..RouterConfig::default() };
    let mut router = Router::new(config);
    let mut block: Vec<Vec<f32>> = (0..channels)
        .map(|c| (0..max_block).map(|n| (((n * 7919 + c * 104_729) % 2003) as f32 / 1001.5) - 1.0).collect())
        .collect();
    for _ in 0..4 {
        for (stream, gpu_side) in [(&mut cpu_stream, false), (&mut gpu, true)] {
            let mut slices: Vec<&mut [f32]> = block.iter_mut().map(|c| &mut c[..]).collect();
            let t = Instant::now();
            if stream.process(&mut slices).is_err() {
                router.set_gpu_available(false);
            }
            let s = t.elapsed().as_secs_f64();
            if gpu_side {
                router.record_gpu(s)
            } else {
                router.record_cpu(s)
            }
        }
    }
    let d = router.decide(f64::INFINITY);
    let figures = format!(
        "CPU {:.2} ms, GPU {:.2} ms per {max_block}-frame block on {}",
        d.cpu_median_s * 1e3,
        d.gpu_median_s * 1e3,
        gpu_backend.describe()
    );
    let (mut chosen, name) = match d.route {
        Route::Gpu => (gpu, gpu_backend.name()),
        Route::Cpu => (cpu_stream, "cpu"),
    };
    // The probe ran noise through the chosen path: start from silence.
    chosen.reset();
    Ok((chosen, format!("{name} (auto: {}; {figures})", d.reason)))
}

/// The names `open_stream` accepts for a GPU: this build's list.
pub fn gpu_backend_names() -> Vec<&'static str> {
    GPU_BACKENDS.iter().map(|e| e.name).collect()
}
