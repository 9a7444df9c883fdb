//! `cargo xtask render`: offline rendering of audio files through a chain file
//! (contract: `../shared/spec/command-line.md`).

use crate::audio::{AtomicWavWriter, AudioReader};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use ferrofx::{Chain, Engine};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The engine's own choice (the CPU in this build).
    Auto,
    Cpu,
    Wgpu,
    Cuda,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The chain file (ferrofx-chain JSON).
    #[arg(long)]
    chain: PathBuf,
    /// Processing backend.
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    backend: Backend,
    /// Frames per engine call, the way a host feeds a plugin.
    #[arg(long, default_value_t = 4096)]
    block_size: usize,
    /// Output file (one input).
    #[arg(long, conflicts_with = "out_dir", required_unless_present = "out_dir")]
    output: Option<PathBuf>,
    /// Output folder (many inputs; same file names, `.wav` extension).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Engines a single file's channels are split over (default: the cores left by the
    /// reader and writer threads). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Input audio files (WAV, FLAC).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
}

/// Limits from the command-line contract.
const MAX_CHANNELS: usize = 64;
const SAMPLE_RATES_HZ: std::ops::RangeInclusive<u32> = 8_000..=384_000;

/// What one render produced.
pub struct Rendered {
    pub frames: u64,
    pub channels: usize,
    pub sample_rate: u32,
}

/// Renders one file: decode block by block, filter, write atomically. The channels are
/// split over up to `dsp_threads` engines running in parallel on each block (channels
/// are independent, so the result is the same as one engine's).
pub fn render_file(chain: &Chain, input: &Path, output: &Path, block_size: usize, dsp_threads: usize) -> Result<Rendered> {
    if same_file(input, output) {
        bail!("the output {} would replace its own input", output.display());
    }
    let reader = AudioReader::open(input)?;
    let info = reader.info();
    if !(1..=MAX_CHANNELS).contains(&info.channels) {
        bail!("{} channels is out of range (1..={MAX_CHANNELS})", info.channels);
    }
    if !SAMPLE_RATES_HZ.contains(&info.sample_rate) {
        bail!("sample rate {} Hz is out of range (8000..=384000 Hz)", info.sample_rate);
    }
    let designed = chain.design(f64::from(info.sample_rate)).context("chain")?;
    let groups = dsp_threads.clamp(1, info.channels);
    let per_group = info.channels.div_ceil(groups);
    let mut engines: Vec<Engine> = (0..info.channels)
        .step_by(per_group)
        .map(|first| Engine::new(&designed, per_group.min(info.channels - first), block_size))
        .collect();
    let writer = AtomicWavWriter::create(output, info.channels, info.sample_rate)?;
    let frames = pipeline(reader, &mut engines, writer, info.channels, block_size, info.frames)?;
    Ok(Rendered { frames, channels: info.channels, sample_rate: info.sample_rate })
}

/// Decoding, filtering and writing overlap: a reader thread and a writer thread around
/// the engine on this one, handing blocks through bounded queues (buffers are recycled).
/// Any error stops all three; the temporary output is then deleted, never committed.
fn pipeline(
    mut reader: AudioReader,
    engines: &mut [Engine],
    mut writer: AtomicWavWriter,
    channels: usize,
    block_size: usize,
    expected_frames: Option<u64>,
) -> Result<u64> {
    type Block = (Vec<Vec<f32>>, usize);
    let (to_dsp, from_reader) = mpsc::sync_channel::<Result<Block>>(4);
    let (to_writer, from_dsp) = mpsc::sync_channel::<Block>(4);
    let (recycle, recycled) = mpsc::channel::<Vec<Vec<f32>>>();
    std::thread::scope(|s| {
        s.spawn(move || loop {
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
        });
        let writing = s.spawn(move || -> Result<AtomicWavWriter> {
            for (buf, n) in from_dsp {
                writer.write(&buf, n)?;
                let _ = recycle.send(buf);
            }
            Ok(writer)
        });
        let mut frames: u64 = 0;
        let filtered = (|| -> Result<()> {
            for msg in from_reader {
                let (mut buf, n) = msg?;
                let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
                process_split(engines, &mut slices);
                frames += n as u64;
                if to_writer.send((buf, n)).is_err() {
                    break; // the writer failed; its error is reported below
                }
            }
            Ok(())
        })();
        drop(to_writer);
        let written = writing.join().map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
        filtered?;
        let writer = written?;
        if let Some(expected) = expected_frames {
            if expected != frames {
                bail!("the header promises {expected} frames but the stream held {frames}; nothing written");
            }
        }
        writer.commit()?;
        Ok(frames)
    })
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
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read chain {}", path.display()))?;
    Chain::from_json(&text).with_context(|| format!("chain {}", path.display()))
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
    if args.block_size == 0 {
        bail!("--block-size must be at least 1");
    }
    match args.backend {
        Backend::Auto | Backend::Cpu => {}
        Backend::Wgpu => bail!("backend wgpu is not available: this build has no wgpu backend yet (use --backend cpu or auto)"),
        Backend::Cuda => bail!("backend cuda is not available: this build has no CUDA backend yet (use --backend cpu or auto)"),
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
        let r = render_file(&chain, input, output, args.block_size, dsp_threads)
            .with_context(|| input.display().to_string())?;
        println!(
            "wrote {} ({} frames, {} channels, {} Hz, backend cpu)",
            output.display(),
            r.frames,
            r.channels,
            r.sample_rate
        );
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = args.out_dir.as_deref().unwrap_or(Path::new("."));
    std::fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    render_many(&chain, &args.inputs, out_dir, args.block_size)
}

/// The output path for `input` in `out_dir`: same file name, `.wav` extension.
fn output_name(input: &Path, out_dir: &Path) -> Option<PathBuf> {
    let name = Path::new(input.file_name()?).with_extension("wav");
    Some(out_dir.join(name))
}

/// Renders many files over all cores; a bad file is reported and the rest go on.
fn render_many(chain: &Chain, inputs: &[PathBuf], out_dir: &Path, block_size: usize) -> Result<ExitCode> {
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
                    Ok(out) => render_file(chain, input, out, block_size, 1),
                    Err(why) => Err(anyhow::anyhow!("{why}")),
                };
                if let Err(e) = result {
                    failed.fetch_add(1, Ordering::Relaxed);
                    let _guard = report.lock();
                    bar.suspend(|| eprintln!("error: {}: {e:#}", input.display()));
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
