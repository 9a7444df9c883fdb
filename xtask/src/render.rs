//! `cargo xtask render`: offline rendering of audio files through a chain file
//! (contract: `../shared/spec/command-line.md`).

use crate::audio::AudioReader;
use crate::header::{MAX_CHANNELS, SAMPLE_RATES_HZ};
use crate::output::{check_output_name, WavOutput};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use ferrofx::run::router::{Route, Router, RouterConfig};
use ferrofx::gpu::wgpu::{GpuStream, WgpuContext};
use ferrofx::dsp::fir::{choose_mode_for, FirMode};
use ferrofx::{Chain, DesignedChain, DesignedStage, Engine};
use std::panic::AssertUnwindSafe;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The engine's own choice: inputs under ~4M samples stay on the CPU; longer ones time
    /// a probe block on both and take the GPU only when it is at least 1.5x faster
    Auto,
    /// The CPU engine (float64 cascades, exact to SciPy within ~1e-7 of the peak)
    Cpu,
    /// The GPU through wgpu (Vulkan, Metal, DX12; lavapipe without a GPU), exact within
    /// 1e-4 of the peak or declined with an error
    Wgpu,
    /// Not in this build: accepted so that asking for it says so (exit 2)
    #[value(hide = true)]
    Cuda,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The chain file (ferrofx-chain JSON).
    #[arg(long)]
    chain: PathBuf,
    /// Where the chain runs (output aligned and of the same length on every backend).
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    backend: Backend,
    /// Frames per engine call, the way a host feeds a plugin (1..=1048576).
    #[arg(long, default_value_t = 4096, value_parser = parse_block_size)]
    block_size: usize,
    /// Output file (one input).
    #[arg(long, conflicts_with = "out_dir", required_unless_present = "out_dir")]
    output: Option<PathBuf>,
    /// Output folder (many inputs; same file names, `.wav` extension).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Engines a single file's channels are split over (default: the cores left by the
    /// reader and writer threads; with a long FIR, whole channel pairs). Results do not
    /// depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Replace frames that cannot be decoded (a damaged FLAC frame, a stream shorter than
    /// its header says) by silence and say how many and where, instead of failing.
    #[arg(long)]
    allow_damaged: bool,
    /// Input audio files (WAV, FLAC).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
}

/// The largest `--block-size` (`docs/limits.md`): a block of every channel is held in
/// a few buffers at once (64 channels x 2^20 frames x 4 bytes = 256 MiB each).
pub const MAX_BLOCK_FRAMES: usize = 1 << 20;

fn parse_block_size(text: &str) -> Result<usize, String> {
    let n: u64 = text.trim().parse().map_err(|_| format!("`{text}` is not a whole number of frames"))?;
    if n == 0 || n > MAX_BLOCK_FRAMES as u64 {
        return Err(format!("{n} is out of range (1..={MAX_BLOCK_FRAMES} frames; see docs/limits.md)"));
    }
    Ok(n as usize)
}

/// The output became non-finite: where, so the stage can be found.
#[derive(Debug)]
struct NonFinite {
    frame: u64,
    channel: usize,
}

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "the output becomes non-finite at frame {} (channel {})", self.frame, self.channel)
    }
}

impl std::error::Error for NonFinite {}

/// The first non-finite sample of a block: (channel, frame within the block).
fn first_non_finite(buf: &[Vec<f32>], n: usize) -> Option<(usize, usize)> {
    buf.iter().enumerate().find_map(|(c, ch)| ch[..n].iter().position(|v| !v.is_finite()).map(|i| (c, i)))
}

/// What one render produced.
pub struct Rendered {
    pub frames: u64,
    pub channels: usize,
    pub sample_rate: u32,
    /// With `--allow-damaged`: what was replaced by silence.
    pub damage: Option<String>,
}

/// Inputs with fewer samples (frames x channels) than this stay on the CPU under `auto`:
/// they end before a GPU's set-up and probing would pay for themselves.
const AUTO_MIN_SAMPLES: u64 = 4 << 20;

/// The GPU context, opened at most once per run (`Err` says why there is none).
pub type GpuSlot = OnceLock<Result<WgpuContext, String>>;

fn gpu_context(slot: &GpuSlot) -> Result<&WgpuContext, String> {
    slot.get_or_init(|| WgpuContext::new().map_err(|e| e.to_string())).as_ref().map_err(Clone::clone)
}

/// Opens the device for `--backend wgpu`; an error is the user's one-line answer.
pub fn require_gpu(slot: &GpuSlot) -> Result<()> {
    gpu_context(slot).map(|_| ()).map_err(|why| anyhow::anyhow!("backend wgpu is not available: {why}"))
}

/// Where one file is filtered.
enum Processor {
    Cpu(Vec<Engine>),
    Gpu(Box<GpuStream>),
}

impl Processor {
    fn cpu(designed: &DesignedChain, channels: usize, block_size: usize, dsp_threads: usize) -> Processor {
        let bounds = channel_groups(channels, dsp_threads, pairs_channels(designed));
        Processor::Cpu(bounds.windows(2).map(|g| Engine::new(designed, g[1] - g[0], block_size)).collect())
    }

    fn gpu(ctx: &WgpuContext, designed: &DesignedChain, channels: usize, block_size: usize) -> Result<Processor> {
        Ok(Processor::Gpu(Box::new(GpuStream::new(ctx, designed, channels, block_size)?)))
    }

    /// Clears all filter state.
    fn reset(&mut self) {
        match self {
            Processor::Cpu(engines) => engines.iter_mut().for_each(Engine::reset),
            Processor::Gpu(stream) => stream.reset(),
        }
    }

    /// Filters the buffers (all `frames` long) in place.
    fn process(&mut self, slices: &mut [&mut [f32]]) -> Result<()> {
        match self {
            Processor::Cpu(engines) => process_split(engines, slices),
            Processor::Gpu(stream) => stream.process(slices)?,
        }
        Ok(())
    }
}

/// The `auto` choice for one file: times a probe block of noise on both paths and asks
/// the router (offline: no deadline, so only speed counts). Returns the processor and a
/// line saying what was chosen and why.
fn choose_auto(
    slot: &GpuSlot,
    designed: &DesignedChain,
    channels: usize,
    block_size: usize,
    dsp_threads: usize,
    frames: Option<u64>,
) -> (Processor, String) {
    let cpu = || Processor::cpu(designed, channels, block_size, dsp_threads);
    if let Some(f) = frames.filter(|f| f * channels as u64 <= AUTO_MIN_SAMPLES) {
        return (cpu(), format!("cpu (auto: {f} frames are too short to repay GPU set-up)"));
    }
    let ctx = match gpu_context(slot) {
        Ok(ctx) => ctx,
        Err(why) => return (cpu(), format!("cpu (auto: {why})")),
    };
    let mut gpu = match Processor::gpu(ctx, designed, channels, block_size) {
        Ok(g) => g,
        Err(e) => return (cpu(), format!("cpu (auto: {e:#})")),
    };
    let mut cpu_proc = cpu();
    let config = RouterConfig { hold: 1, min_samples: 3, ..RouterConfig::default() };
    let mut router = Router::new(config);
    let mut block: Vec<Vec<f32>> = (0..channels)
        .map(|c| (0..block_size).map(|n| (((n * 7919 + c * 104_729) % 2003) as f32 / 1001.5) - 1.0).collect())
        .collect();
    for _ in 0..4 {
        for (p, gpu_side) in [(&mut cpu_proc, false), (&mut gpu, true)] {
            let mut slices: Vec<&mut [f32]> = block.iter_mut().map(|c| &mut c[..]).collect();
            let t = Instant::now();
            if p.process(&mut slices).is_err() {
                router.set_gpu_available(false);
            }
            let s = t.elapsed().as_secs_f64();
            if gpu_side { router.record_gpu(s) } else { router.record_cpu(s) }
        }
    }
    let d = router.decide(f64::INFINITY);
    let figures = format!(
        "CPU {:.2} ms, GPU {:.2} ms per {block_size}-frame block on {}",
        d.cpu_median_s * 1e3,
        d.gpu_median_s * 1e3,
        ctx.report()
    );
    let (mut chosen, name) = match d.route {
        Route::Gpu => (gpu, "wgpu"),
        Route::Cpu => (cpu_proc, "cpu"),
    };
    // The probe ran noise through the chosen path: start the file from silence.
    chosen.reset();
    (chosen, format!("{name} (auto: {}; {figures})", d.reason))
}

/// Re-runs the input up to `upto` frames through each enabled stage on its own and
/// returns the first stage whose output is not finite there: `stage K (type)`.
fn guilty_stage(chain: &Chain, input: &Path, fs: u32, channels: usize, block_size: usize, upto: u64, allow_damaged: bool) -> Option<String> {
    let mut reader = AudioReader::open(input, allow_damaged).ok()?;
    let mut stages: Vec<(usize, &'static str, Engine)> = Vec::new();
    for (i, stage) in chain.stages.iter().enumerate().filter(|(_, s)| s.enabled) {
        let designed = Chain::from(stage.clone()).design(f64::from(fs)).ok()?;
        stages.push((i, stage.kind.type_name(), Engine::new(&designed, channels, block_size)));
    }
    let mut buf = vec![vec![0.0f32; block_size]; channels];
    let mut done = 0u64;
    while done <= upto {
        let n = reader.read(&mut buf, block_size).ok()?;
        if n == 0 {
            return None;
        }
        for (index, type_name, engine) in stages.iter_mut() {
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
            engine.process(&mut slices);
            if first_non_finite(&buf, n).is_some() {
                return Some(format!("stage {index} ({type_name})"));
            }
        }
        done += n as u64;
    }
    None
}

/// Renders one file: decode block by block, filter, write atomically. On the CPU the
/// channels are split over up to `dsp_threads` engines running in parallel on each block
/// (channels are independent, so the result is the same as one engine's); on the GPU one
/// chain runs all channels. Returns what was rendered and the backend line.
#[allow(clippy::too_many_arguments)]
pub fn render_file(
    chain: &Chain,
    input: &Path,
    output: &Path,
    block_size: usize,
    dsp_threads: usize,
    backend: Backend,
    gpu: &GpuSlot,
    allow_damaged: bool,
) -> Result<(Rendered, String)> {
    if same_file(input, output) {
        bail!("the output {} would replace its own input", output.display());
    }
    check_output_name(output)?;
    let reader = AudioReader::open(input, allow_damaged)?;
    let info = reader.info();
    if !(1..=MAX_CHANNELS).contains(&info.channels) {
        bail!("{} channels is out of range (1..={MAX_CHANNELS})", info.channels);
    }
    if !SAMPLE_RATES_HZ.contains(&info.sample_rate) {
        bail!("sample rate {} Hz is out of range (8000..=384000 Hz)", info.sample_rate);
    }
    let designed = chain.design(f64::from(info.sample_rate)).context("chain")?;
    let (mut processor, used) = match backend {
        Backend::Wgpu => {
            let ctx = gpu_context(gpu).map_err(|why| anyhow::anyhow!("backend wgpu is not available: {why}"))?;
            let p = Processor::gpu(ctx, &designed, info.channels, block_size).context("backend wgpu")?;
            (p, format!("wgpu on {}", ctx.report()))
        }
        Backend::Auto => choose_auto(gpu, &designed, info.channels, block_size, dsp_threads, info.frames),
        Backend::Cpu | Backend::Cuda => (Processor::cpu(&designed, info.channels, block_size, dsp_threads), "cpu".to_string()),
    };
    let writer = WavOutput::create(output, info.channels, info.sample_rate)?;
    let (frames, damage) = match pipeline(reader, &mut processor, writer, info.channels, block_size, info.frames) {
        Ok(done) => done,
        Err(e) => match e.downcast_ref::<NonFinite>() {
            Some(at) => {
                let stage = guilty_stage(chain, input, info.sample_rate, info.channels, block_size, at.frame, allow_damaged)
                    .unwrap_or_else(|| "the fused stages together".to_string());
                bail!("{at}: {stage} drives the signal past float32's range; nothing written (limits: docs/limits.md)");
            }
            None => return Err(e),
        },
    };
    Ok((Rendered { frames, channels: info.channels, sample_rate: info.sample_rate, damage }, used))
}

/// Decoding, filtering and writing overlap: a reader thread and a writer thread around
/// the engine on this one, handing blocks through bounded queues (buffers are recycled);
/// on the GPU, uploads also overlap the device's work (two blocks in flight).
/// Any error stops all three; the temporary output is then deleted, never committed.
/// A non-finite output sample stops the render with a [`NonFinite`] error (the engine
/// turns non-finite input into silence, so such a sample comes from the chain itself).
/// Returns the frames written and, where frames were replaced by silence, the report.
fn pipeline(
    mut reader: AudioReader,
    processor: &mut Processor,
    mut writer: WavOutput,
    channels: usize,
    block_size: usize,
    expected_frames: Option<u64>,
) -> Result<(u64, Option<String>)> {
    let sample_rate = reader.info().sample_rate;
    type Block = (Vec<Vec<f32>>, usize);
    let (to_dsp, from_reader) = mpsc::sync_channel::<Result<Block>>(4);
    let (to_writer, from_dsp) = mpsc::sync_channel::<Block>(4);
    let (recycle, recycled) = mpsc::channel::<Vec<Vec<f32>>>();
    std::thread::scope(|s| {
        let reading = s.spawn(move || {
            loop {
                let mut buf = recycled.try_recv().unwrap_or_else(|_| vec![vec![0.0; block_size]; channels]);
                let msg = match reader.read(&mut buf, block_size) {
                    Ok(0) => break,
                    Ok(n) => Ok((buf, n)),
                    Err(e) => Err(e),
                };
                let failed = msg.is_err();
                if to_dsp.send(msg).is_err() || failed {
                    break;
                }
            }
            reader.damage_report(sample_rate)
        });
        let writing = s.spawn(move || -> Result<WavOutput> {
            for (buf, n) in from_dsp {
                writer.write(&buf, n)?;
                let _ = recycle.send(buf);
            }
            Ok(writer)
        });
        let mut frames: u64 = 0;
        let filtered = (|| -> Result<()> {
            // On the GPU, double buffering: block k+1 is uploaded and started before
            // block k is read back (the filter state stays on the device between them).
            let mut waiting: std::collections::VecDeque<Block> = std::collections::VecDeque::with_capacity(2);
            let collect_oldest = |stream: &mut GpuStream, waiting: &mut std::collections::VecDeque<Block>| -> Result<Block> {
                let (mut buf, n) = waiting.pop_front().expect("a block is in flight");
                let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
                stream.collect(&mut slices)?;
                Ok((buf, n))
            };
            for msg in from_reader {
                let (mut buf, n) = msg?;
                let done = match processor {
                    Processor::Gpu(stream) => {
                        let views: Vec<&[f32]> = buf.iter().map(|c| &c[..n]).collect();
                        stream.submit(&views, n)?;
                        waiting.push_back((buf, n));
                        if stream.in_flight() < 2 {
                            continue;
                        }
                        collect_oldest(stream, &mut waiting)?
                    }
                    Processor::Cpu(_) => {
                        let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
                        processor.process(&mut slices)?;
                        (buf, n)
                    }
                };
                if let Some((channel, i)) = first_non_finite(&done.0, done.1) {
                    return Err(NonFinite { frame: frames + i as u64, channel }.into());
                }
                frames += done.1 as u64;
                if to_writer.send(done).is_err() {
                    return Ok(()); // the writer failed; its error is reported below
                }
            }
            if let Processor::Gpu(stream) = processor {
                while !waiting.is_empty() {
                    let done = collect_oldest(stream, &mut waiting)?;
                    if let Some((channel, i)) = first_non_finite(&done.0, done.1) {
                        return Err(NonFinite { frame: frames + i as u64, channel }.into());
                    }
                    frames += done.1 as u64;
                    if to_writer.send(done).is_err() {
                        break;
                    }
                }
            }
            Ok(())
        })();
        drop(to_writer);
        let written = writing.join().map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
        filtered?;
        let writer = written?;
        // The reader has ended (the DSP loop drained its queue); a panic in it is re-raised
        // for the file boundary to report.
        let damage = reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        if let Some(expected) = expected_frames {
            if expected != frames {
                bail!("the header promises {expected} frames but the stream held {frames}; nothing written");
            }
        }
        writer.commit()?;
        Ok((frames, damage))
    })
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

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn load_chain(path: &Path) -> Result<Chain> {
    Chain::from_file(path).with_context(|| format!("chain {}", path.display()))
}

/// The message of the last panic caught at a file boundary (the hook keeps it instead of
/// printing it, so a failing file reports one line like any other error).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn keep_panic_messages() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            last.get_or_insert(format!("{message}{at}"));
        }
    }));
}

/// Runs one file's render so that a panic anywhere in it (a decoder's, ours) becomes that
/// file's error: the temporary output is dropped, and a batch goes on with the next file.
fn contained<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|_| {
        let why = LAST_PANIC.lock().ok().and_then(|mut m| m.take()).unwrap_or_else(|| "unknown".into());
        Err(anyhow::anyhow!("internal error while rendering (a panic: {why}); nothing written; please report it"))
    })
}

/// One line: `error: context: cause: cause`.
fn error_line(e: &anyhow::Error) -> String {
    format!("error: {e:#}")
}

pub fn run(args: RenderArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", error_line(&e));
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: RenderArgs) -> Result<ExitCode> {
    keep_panic_messages();
    let gpu = GpuSlot::new();
    match args.backend {
        Backend::Auto | Backend::Cpu => {}
        Backend::Wgpu => require_gpu(&gpu)?,
        Backend::Cuda => bail!(
            "backend cuda is not available: this build has no CUDA backend (the CUDA kernels are not built yet; use --backend wgpu, cpu or auto)"
        ),
    }
    let chain = load_chain(&args.chain)?;
    if let Some(output) = &args.output {
        if args.inputs.len() != 1 {
            bail!("--output takes exactly one input ({} given); use --out-dir for many", args.inputs.len());
        }
        let input = &args.inputs[0];
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // One file: its channels may use the cores the reader and writer threads leave.
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let dsp_threads = args.threads.unwrap_or(cores.saturating_sub(2).max(1));
        let (r, used) = contained(|| {
            render_file(&chain, input, output, args.block_size, dsp_threads, args.backend, &gpu, args.allow_damaged)
        })
        .with_context(|| input.display().to_string())?;
        if let Some(warning) = &r.damage {
            eprintln!("warning: {}: {warning}", input.display());
        }
        println!(
            "wrote {} ({} frames, {} channels, {} Hz, backend {used})",
            output.display(),
            r.frames,
            r.channels,
            r.sample_rate
        );
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = args.out_dir.as_deref().unwrap_or(Path::new("."));
    std::fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    render_many(&chain, &args.inputs, out_dir, args.block_size, args.backend, &gpu, args.allow_damaged)
}

/// The output path for `input` in `out_dir`: same file name, `.wav` extension.
fn output_name(input: &Path, out_dir: &Path) -> Option<PathBuf> {
    let name = Path::new(input.file_name()?).with_extension("wav");
    Some(out_dir.join(name))
}

/// Renders many files over all cores; a bad file is reported and the rest go on.
fn render_many(
    chain: &Chain,
    inputs: &[PathBuf],
    out_dir: &Path,
    block_size: usize,
    backend: Backend,
    gpu: &GpuSlot,
    allow_damaged: bool,
) -> Result<ExitCode> {
    // Two inputs must not race for one output name.
    let mut jobs: Vec<(PathBuf, Result<PathBuf, String>)> = Vec::new();
    let mut taken: HashMap<PathBuf, PathBuf> = HashMap::new();
    for input in inputs {
        let out = match output_name(input, out_dir) {
            None => Err("has no file name".to_string()),
            Some(out) => match taken.get(&out) {
                Some(first) => Err(format!("its output {} is already the output of {}", out.display(), first.display())),
                None => {
                    taken.insert(out.clone(), input.clone());
                    Ok(out)
                }
            },
        };
        jobs.push((input.clone(), out));
    }
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let report = Mutex::new(());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(jobs.len()).max(1);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((input, out)) = jobs.get(i) else { break };
                bar.set_message(input.display().to_string());
                let result = match out {
                    // Files already run in parallel: one engine per file.
                    Ok(out) => contained(|| render_file(chain, input, out, block_size, 1, backend, gpu, allow_damaged)),
                    Err(why) => Err(anyhow::anyhow!("{why}")),
                };
                match result {
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        let _guard = report.lock();
                        bar.suspend(|| eprintln!("error: {}: {e:#}", input.display()));
                    }
                    Ok((Rendered { damage: Some(warning), .. }, _)) => {
                        let _guard = report.lock();
                        bar.suspend(|| eprintln!("warning: {}: {warning}", input.display()));
                    }
                    Ok(_) => {}
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let failed = failed.into_inner();
    let total = jobs.len();
    println!("rendered {} of {total} files into {} ({failed} failed)", total - failed, out_dir.display());
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
