//! `cargo xtask render`: offline rendering of audio files through a chain file
//! (what it takes and promises: `docs/command-line.md`).

use crate::audio::AudioReader;
use crate::header::{MAX_CHANNELS, SAMPLE_RATES_HZ};
use crate::encode::{ClipReport, NoiseShaping, OutputFormat, Reduction};
use crate::output::{AudioOutput, OutputSpec};
use anyhow::{bail, Context, Result};
use clap::Args;
use ferrofx::offline::{self, guilty_stage, IoError, OfflineError, Sink, Source};
use ferrofx::backends::{open_stream, BlockFrames, Backends, Choice};
use ferrofx::Chain;
use std::panic::AssertUnwindSafe;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The chain file (ferrofx-chain JSON).
    #[arg(long)]
    chain: PathBuf,
    /// Where the chain runs (output aligned and of the same length on every backend):
    /// `auto` (inputs under ~4M samples on the CPU; longer ones time a probe block on the
    /// CPU and on every GPU backend that opens, and take a GPU only when it is at least
    /// 1.5x faster), `cpu` (the float64 engine), or a GPU backend by name (exact within
    /// the reference tolerance, or declined with an error; exit 2 without its device).
    #[arg(long, default_value = "auto", value_parser = backend_choice())]
    backend: String,
    /// Frames per block, the way a host feeds a plugin (1..=1048576) [default: 4096 on
    /// the CPU; on a GPU chosen for the input from the link's cost, measured once per
    /// run (a fixed part per block and a rate), 65,536 where it cannot be measured].
    #[arg(long, value_parser = parse_block_size)]
    block_size: Option<usize>,
    /// Output file (one input).
    #[arg(long, conflicts_with = "out_dir", required_unless_present = "out_dir")]
    output: Option<PathBuf>,
    /// Output folder (many inputs; same file names, the format's extension).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// The output's format: WAV with 16, 24 or 32-bit integer or 32/64-bit float
    /// samples, FLAC with 16 or 24-bit samples [default: by the output's extension,
    /// `.flac` FLAC 24-bit, otherwise wav-f32].
    #[arg(long, value_parser = format_choice(), value_name = "FORMAT")]
    format: Option<String>,
    /// Integer formats: TPDF dither when the float signal is reduced to integers
    /// (`none`: round only).
    #[arg(long, default_value = "tpdf", value_parser = ["tpdf", "none"])]
    dither: String,
    /// Seeds the dither (the same seed, input and chain give the same file).
    #[arg(long, default_value_t = 0, value_name = "N")]
    dither_seed: u64,
    /// Integer formats: feed the quantisation error back through `1 - z^-1`
    /// (first-order) or `(1 - z^-1)^2` (second-order), moving the noise above a sixth
    /// of the sample rate.
    #[arg(long, default_value = "none", value_parser = NoiseShaping::NAMES)]
    noise_shaping: String,
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
    #[command(flatten)]
    tuning: TuningArgs,
}

/// The largest `--block-size` (`docs/limits.md`): a block of every channel is held in
/// a few buffers at once (64 channels x 2^20 frames x 4 bytes = 256 MiB each).
pub const MAX_BLOCK_FRAMES: usize = 1 << 20;

/// The GPU backends' tuning switches (`ferrofx::backends::GpuTuning`): for measuring
/// what each buys on a given device; the output is the same either way.
#[derive(Args, Debug, Clone)]
pub struct TuningArgs {
    /// CUDA: overlap uploads, kernels and downloads of offline streams on three streams
    /// (`off`: one synchronous job a block).
    #[arg(long, default_value = "on", value_parser = ["on", "off"], value_name = "on|off")]
    cuda_overlap: String,
    /// CUDA: blocks up to this many frames run on the channel-parallel kernel, longer
    /// ones on the time-parallel scan (0: every block on the scan).
    #[arg(long, default_value_t = ferrofx::backends::GpuTuning::default().cuda_sequential_max_frames, value_name = "FRAMES")]
    cuda_sequential_max: usize,
    /// CUDA: run float32 cascades through the fused scan on blocks of 16,384 frames and
    /// more, in groups of up to this many sections (at most 8; 0: off, the default).
    #[arg(long, default_value_t = ferrofx::backends::GpuTuning::default().cuda_fused_sections, value_name = "SECTIONS")]
    cuda_fused: usize,
    /// wgpu: the same fused scan (shaders/sos_fused.wgsl), groups of up to this many
    /// sections (0: off, the default).
    #[arg(long, default_value_t = ferrofx::backends::GpuTuning::default().wgpu_fused_sections, value_name = "SECTIONS")]
    wgpu_fused: usize,
    /// CUDA: long host-to-host calls (16 MiB and more) register the caller's buffers
    /// and copy by DMA straight from and into them, no pinned staging (off by default).
    #[arg(long, default_value = "off", value_parser = ["on", "off"], value_name = "on|off")]
    cuda_register_host: String,
    /// CUDA: blocks up to this many frames run sequentially, each run of float32
    /// cascades through the warp pipeline, their sections at once, a lane each (the
    /// realtime round trip's kernel time; 0: off, the default).
    #[arg(long, default_value_t = ferrofx::backends::GpuTuning::default().cuda_pipeline_max_frames, value_name = "FRAMES")]
    cuda_pipeline: usize,
    /// wgpu: the same (shaders/sos_pipe.wgsl; at most 32,768; 0: off, the default).
    #[arg(long, default_value_t = ferrofx::backends::GpuTuning::default().wgpu_pipeline_max_frames, value_name = "FRAMES")]
    wgpu_pipeline: usize,
    /// CUDA: the pinned staging slots write-combined (`on`: as before 2026-11-28; `off`,
    /// the default: cached, which the host reads back faster).
    #[arg(long, default_value = "off", value_parser = ["on", "off"], value_name = "on|off")]
    cuda_staging_wc: String,
}

impl TuningArgs {
    /// The switches that differ from the defaults, as `name=value` (empty: defaults), for
    /// the benchmark's rows.
    pub fn changed(&self) -> String {
        let (t, d) = (self.tuning().fields(), ferrofx::backends::GpuTuning::default().fields());
        let out: Vec<String> = t.iter().zip(&d).filter(|(a, b)| a.1 != b.1).map(|((name, value), _)| format!("{name}={value}")).collect();
        out.join(", ")
    }

    pub fn tuning(&self) -> ferrofx::backends::GpuTuning {
        ferrofx::backends::GpuTuning { cuda_overlap: self.cuda_overlap == "on", cuda_sequential_max_frames: self.cuda_sequential_max, cuda_fused_sections: self.cuda_fused, wgpu_fused_sections: self.wgpu_fused, cuda_register_host: self.cuda_register_host == "on", cuda_pipeline_max_frames: self.cuda_pipeline, wgpu_pipeline_max_frames: self.wgpu_pipeline, cuda_staging_write_combined: self.cuda_staging_wc == "on" }
    }
}

/// The `--format` values, from the encoder's list.
fn format_choice() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(OutputFormat::ALL.map(OutputFormat::name))
}

/// How a render writes its files: `--format` (or `None`: by each output's name) and
/// the word-length reduction.
#[derive(Clone, Copy, Debug)]
pub struct Writing {
    pub format: Option<OutputFormat>,
    pub reduction: Reduction,
}

impl RenderArgs {
    /// The block length asked for, or the backend's choice.
    fn block(&self) -> BlockFrames {
        self.block_size.map_or(BlockFrames::Chosen, BlockFrames::Given)
    }

    fn writing(&self) -> Writing {
        Writing {
            format: self.format.as_deref().and_then(OutputFormat::parse),
            reduction: Reduction {
                dither: self.dither == "tpdf",
                seed: self.dither_seed,
                shaping: NoiseShaping::parse(&self.noise_shaping).unwrap_or(NoiseShaping::None),
            },
        }
    }
}

/// The `--backend` values: the core's list of choices (`auto`, `cpu`, every GPU backend
/// of this build), so `--help` lists each and a new backend needs no change here.
pub fn backend_choice() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Choice::names())
}

fn parse_block_size(text: &str) -> Result<usize, String> {
    let n: u64 = text.trim().parse().map_err(|_| format!("`{text}` is not a whole number of frames"))?;
    if n == 0 || n > MAX_BLOCK_FRAMES as u64 {
        return Err(format!("{n} is out of range (1..={MAX_BLOCK_FRAMES} frames; see docs/limits.md)"));
    }
    Ok(n as usize)
}

/// What one render produced.
pub struct Rendered {
    pub frames: u64,
    pub channels: usize,
    pub sample_rate: u32,
    /// With `--allow-damaged`: what was replaced by silence.
    pub damage: Option<String>,
    /// The format written.
    pub format: OutputFormat,
    /// What went beyond full scale.
    pub clips: ClipReport,
}

impl Rendered {
    /// The warnings to print: damage replaced by silence, clipping.
    pub fn warnings(&self) -> Vec<String> {
        self.damage.iter().cloned().chain(self.clips.message(self.sample_rate)).collect()
    }
}

/// Renders one file: decode block by block, filter (`ferrofx::offline` over the backend's
/// block stream; on the CPU the channels are split over the run's engine threads), write
/// atomically. Returns what was rendered and the backend line.
#[allow(clippy::too_many_arguments)]
pub fn render_file(
    chain: &Chain,
    input: &Path,
    output: &Path,
    block: BlockFrames,
    backends: &Backends,
    allow_damaged: bool,
    writing: Writing,
) -> Result<(Rendered, String)> {
    if same_file(input, output) {
        bail!("the output {} would replace its own input", output.display());
    }
    let format = OutputFormat::choose(writing.format, output)?;
    let reader = AudioReader::open(input, allow_damaged)?;
    let info = reader.info();
    if !(1..=MAX_CHANNELS).contains(&info.channels) {
        bail!("{} channels is out of range (1..={MAX_CHANNELS})", info.channels);
    }
    if !SAMPLE_RATES_HZ.contains(&info.sample_rate) {
        bail!("sample rate {} Hz is out of range (8000..=384000 Hz)", info.sample_rate);
    }
    let designed = chain.design(f64::from(info.sample_rate)).context("chain")?;
    let (mut stream, used, block_size) = open_stream(backends, &designed, info.channels, block, info.frames)?;
    let spec = OutputSpec {
        channels: info.channels,
        sample_rate: info.sample_rate,
        channel_mask: info.channel_mask,
        format,
        reduction: writing.reduction,
    };
    let writer = AudioOutput::create(output, spec, info.frames)?;
    let done = offline::render(FileSource(reader), &mut stream, FileSink(writer), info.channels, block_size, info.frames);
    let done = match done {
        Ok(done) => done,
        Err(OfflineError::NonFinite { frame, channel }) => {
            let at = OfflineError::NonFinite { frame, channel };
            let stage = AudioReader::open(input, allow_damaged)
                .ok()
                .and_then(|r| guilty_stage(chain, FileSource(r), f64::from(info.sample_rate), info.channels, block_size, frame))
                .unwrap_or_else(|| "the fused stages together".to_string());
            bail!("{at}: {stage} drives the signal past float32's range; nothing written (limits: docs/limits.md)");
        }
        Err(e) => return Err(e.into()),
    };
    let damage = done.source.0.damage_report(info.sample_rate);
    let clips = done.sink.0.commit()?;
    Ok((Rendered { frames: done.frames, channels: info.channels, sample_rate: info.sample_rate, damage, format, clips }, used))
}

/// An input file as the offline renderer's source (errors keep their whole chain).
struct FileSource(AudioReader);

impl Source for FileSource {
    fn read(&mut self, buf: &mut [Vec<f32>], max_frames: usize) -> Result<usize, IoError> {
        self.0.read(buf, max_frames).map_err(|e| format!("{e:#}").into())
    }
}

/// The atomic output file as the offline renderer's sink.
struct FileSink(AudioOutput);

impl Sink for FileSink {
    fn write(&mut self, buf: &[Vec<f32>], frames: usize) -> Result<(), IoError> {
        self.0.write(buf, frames).map_err(|e| format!("{e:#}").into())
    }
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
    // One file: its channels may use the cores the reader and writer threads leave;
    // many files already run in parallel, one engine per file.
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let dsp_threads = if args.output.is_some() { args.threads.unwrap_or(cores.saturating_sub(2).max(1)) } else { 1 };
    let choice = Choice::parse(&args.backend).map_err(anyhow::Error::msg)?;
    let by_name = matches!(choice, Choice::Gpu(_));
    let backends = Backends::new(choice, dsp_threads).with_tuning(args.tuning.tuning());
    if by_name {
        // Asked for by name: a missing device is the run's one error, before any file.
        backends.gpu()?;
    }
    let chain = load_chain(&args.chain)?;
    let writing = args.writing();
    if let Some(output) = &args.output {
        if args.inputs.len() != 1 {
            bail!("--output takes exactly one input ({} given); use --out-dir for many", args.inputs.len());
        }
        let input = &args.inputs[0];
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let (r, used) = contained(|| render_file(&chain, input, output, args.block(), &backends, args.allow_damaged, writing))
            .with_context(|| input.display().to_string())?;
        for warning in r.warnings() {
            eprintln!("warning: {}: {warning}", input.display());
        }
        println!(
            "wrote {} ({} frames, {} channels, {} Hz, {}, backend {used})",
            output.display(),
            r.frames,
            r.channels,
            r.sample_rate,
            r.format.name()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = args.out_dir.as_deref().unwrap_or(Path::new("."));
    std::fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    render_many(&chain, &args.inputs, out_dir, args.block(), &backends, args.allow_damaged, writing)
}

/// The output path for `input` in `out_dir`: same file name, the format's extension
/// (`.wav` without `--format`).
fn output_name(input: &Path, out_dir: &Path, format: Option<OutputFormat>) -> Option<PathBuf> {
    let ext = format.map_or("wav", OutputFormat::extension);
    let name = Path::new(input.file_name()?).with_extension(ext);
    Some(out_dir.join(name))
}

/// Renders many files over all cores; a bad file is reported and the rest go on.
fn render_many(
    chain: &Chain,
    inputs: &[PathBuf],
    out_dir: &Path,
    block_size: BlockFrames,
    backends: &Backends,
    allow_damaged: bool,
    writing: Writing,
) -> Result<ExitCode> {
    // Two inputs must not race for one output name.
    let mut jobs: Vec<(PathBuf, Result<PathBuf, String>)> = Vec::new();
    let mut taken: HashMap<PathBuf, PathBuf> = HashMap::new();
    for input in inputs {
        let out = match output_name(input, out_dir, writing.format) {
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
                    Ok(out) => contained(|| render_file(chain, input, out, block_size, backends, allow_damaged, writing)),
                    Err(why) => Err(anyhow::anyhow!("{why}")),
                };
                match result {
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        let _guard = report.lock();
                        bar.suspend(|| eprintln!("error: {}: {e:#}", input.display()));
                    }
                    Ok((r, _)) => {
                        let _guard = report.lock();
                        for warning in r.warnings() {
                            bar.suspend(|| eprintln!("warning: {}: {warning}", input.display()));
                        }
                    }
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

#[cfg(test)]
mod tests {
    use super::TuningArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        tuning: TuningArgs,
    }

    /// Every GPU switch on the command line reaches its field, and the benchmark's rows
    /// name exactly the ones that differ from the defaults (every field of the core's
    /// list is covered: a new one without an option fails the count).
    #[test]
    fn every_tuning_option_reaches_its_field_and_only_changes_are_named() {
        let parse = |args: &[&str]| Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap().tuning;
        assert_eq!(parse(&[]).changed(), "");
        assert_eq!(parse(&[]).tuning(), ferrofx::backends::GpuTuning::default());
        let cases = [
            (&["--cuda-overlap", "off"][..], "cuda_overlap=false"),
            (&["--cuda-sequential-max", "0"][..], "cuda_sequential_max_frames=0"),
            (&["--cuda-fused", "8"][..], "cuda_fused_sections=8"),
            (&["--wgpu-fused", "3"][..], "wgpu_fused_sections=3"),
            (&["--cuda-register-host", "on"][..], "cuda_register_host=true"),
            (&["--cuda-pipeline", "4096"][..], "cuda_pipeline_max_frames=4096"),
            (&["--wgpu-pipeline", "2048"][..], "wgpu_pipeline_max_frames=2048"),
            (&["--cuda-staging-wc", "on"][..], "cuda_staging_write_combined=true"),
        ];
        assert_eq!(cases.len(), ferrofx::backends::GpuTuning::default().fields().len(), "an option per field");
        for (args, named) in cases {
            assert_eq!(parse(args).changed(), named, "{args:?}");
        }
        let all: Vec<&str> = cases.iter().flat_map(|c| c.0.iter().copied()).collect();
        assert_eq!(parse(&all).changed(), cases.map(|c| c.1).join(", "));
    }
}
