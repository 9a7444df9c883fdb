//! `cargo xtask bench`: the workloads of `docs/command-line.md`, timed on the
//! engine exactly as the renderer runs it (blocks of 4096 frames, in place).
//!
//! Each workload is run `runs` times after a warm-up; the median and the minimum wall
//! time are reported, and `ns_per_sample = median / (frames x channels)`. Timings are
//! single-threaded (one engine, one core), like the figures they are compared with.

use anyhow::Result;
use clap::Args;

use crate::workloads::{api_chain, fir_chain, iir_chain, long_fir, noise, realtime_chain, Workload};
use ferrofx::chain::Chain;
use ferrofx::run::backend::Backend;
use ferrofx::run::stream::BlockStream;
use ferrofx::{Engine, EngineOptions};
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;

const FS: f64 = 44_100.0;
const RENDER_BLOCK: usize = 4096;

/// Where a workload runs.
#[derive(Clone, Copy)]
pub enum Runner<'a> {
    Cpu,
    Gpu(&'a dyn Backend),
}

impl Runner<'_> {
    fn name(self) -> &'static str {
        match self {
            Runner::Cpu => "cpu",
            Runner::Gpu(b) => b.name(),
        }
    }
}

/// The `--backend` values of `bench`: `cpu` and every GPU backend of this build (the
/// core's list; `auto` is a render's choice, not a thing to time).
fn bench_backends() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(ferrofx::backends::Choice::names().into_iter().filter(|n| *n != "auto"))
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Workloads to run (default: all).
    #[arg(long = "workload", value_enum)]
    workloads: Vec<Workload>,
    /// Backends to run (default: cpu): `cpu` or a GPU backend by name (the core's list).
    #[arg(long = "backend", value_parser = bench_backends())]
    backends: Vec<String>,
    /// Shrink every duration so the whole run takes well under a minute (CI smoke runs).
    #[arg(long)]
    quick: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Time the plugin in a host instead of the engine: the release CLAP bundles of
    /// FerroFX and of a bare nice-plug plugin through clack-host, blocks of 32-1024 frames,
    /// 1/2/8 channels, 0/1/8/24 bands, static and automated (see `bench_plugin.rs`).
    #[arg(long, conflicts_with_all = ["workloads", "backends"])]
    plugin: bool,
    /// The offline workloads with their data already on the device, on each GPU backend
    /// given: the filter call beside a device-to-device copy of the same bytes and the CPU
    /// engine on one core and on all cores (see `bench_resident.rs`).
    #[arg(long, conflicts_with = "plugin")]
    resident: bool,
    /// With --plugin: seconds of audio per case (after a 0.5 s warm-up).
    #[arg(long, default_value_t = 10.0, requires = "plugin")]
    seconds: f64,
    /// With --plugin: cookbook bands (one section each) instead of the default
    /// analog-matched ones (two sections each).
    #[arg(long, requires = "plugin")]
    cookbook: bool,
    /// With --plugin: use the bundles already in target/bundled instead of building the
    /// release bundles first.
    #[arg(long, requires = "plugin")]
    no_build: bool,
    /// Only these channel counts (repeatable). With --plugin: of 1, 2, 8; otherwise the
    /// engine workloads' cells with these counts (iir_chain and fir_chain: 1, 2, 8, 12;
    /// api_chain: 8; long_fir: 2).
    #[arg(long = "channels")]
    channels: Vec<usize>,
    /// Engine workloads: every stream cell runs this many seconds of audio (one cell per
    /// channel count) instead of the workload's durations.
    #[arg(long, conflicts_with = "plugin")]
    duration_s: Option<f64>,
    /// Engine workloads on the CPU backend: time with the process's CPU clock
    /// (`CLOCK_PROCESS_CPUTIME_ID`, as the C anchor `benchmarks/compare.py --anchor` runs
    /// times itself: steadier than wall time on a shared machine) instead of wall time.
    #[arg(long, conflicts_with = "plugin")]
    cpu_time: bool,
    /// Engine workloads on the CPU backend: frames per engine call (default 4096, the
    /// renderer's default `--block-size`; the Python package filters whole arrays in
    /// blocks of up to 262,144 frames).
    #[arg(long, conflicts_with = "plugin")]
    block_frames: Option<usize>,
    /// Engine workloads on a GPU backend: frames per block of the host-to-host stream
    /// (default: chosen per cell from the link's cost, measured once per backend, as
    /// `render` chooses it).
    #[arg(long, conflicts_with = "plugin")]
    gpu_block: Option<usize>,
    /// Engine workloads: timed runs per cell (their median is reported; default 7, 3 with
    /// --quick).
    #[arg(long, conflicts_with = "plugin")]
    runs: Option<usize>,
    /// With --plugin: only these block sizes in frames (repeatable).
    #[arg(long = "block", requires = "plugin")]
    blocks: Vec<usize>,
    /// With --plugin: only these band counts (repeatable).
    #[arg(long = "bands", requires = "plugin")]
    bands: Vec<usize>,
    /// With --plugin: static parameters only (no automated runs).
    #[arg(long, requires = "plugin")]
    static_only: bool,
    /// With --plugin: how often the CLAP host's main thread serves the plugins' callbacks
    /// while they play, in milliseconds (10: a GUI's pace, as a DAW's event loop; the
    /// main thread runs on another CPU than the audio thread; LSP's LV2 host has no main
    /// thread).
    #[arg(long, default_value_t = 10.0, requires = "plugin")]
    main_poll_ms: f64,
    /// With --plugin (Linux): read the audio CPU's interrupt count from /proc/interrupts
    /// before and after each timed block (outside the timing) and give the statistics
    /// again over the blocks no counted interrupt landed in, with the share that one did.
    #[arg(long, requires = "plugin")]
    interrupts: bool,
    #[command(flatten)]
    tuning: crate::render::TuningArgs,
}

/// One measured configuration.
pub struct Measurement {
    pub workload: &'static str,
    pub backend: &'static str,
    pub channels: usize,
    pub frames: usize,
    pub sections: usize,
    pub taps: usize,
    pub runs: usize,
    pub median_s: f64,
    pub min_s: f64,
    /// For `realtime_block`: frames per block, p99.9 seconds per block, and the median
    /// and p99.9 of plain arithmetic of the median block's length timed the same way
    /// ([`machine_tail`]).
    pub block: Option<(usize, f64, (f64, f64))>,
    /// For an offline workload on a GPU backend: the median host-to-host copy floor of
    /// the same bytes (`Backend::time_host_copy`: up and back, nothing computed).
    pub copy_floor_s: Option<f64>,
    /// For an offline workload on a GPU backend: the stream's block length.
    pub stream_block: Option<usize>,
}

impl Measurement {
    pub fn ns_per_sample(&self) -> f64 {
        self.median_s * 1e9 / (self.frames as f64 * self.channels as f64)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn shape(chain: &Chain) -> (usize, usize) {
    let d = chain.design(FS).expect("bench chains are valid");
    let taps = d
        .stages
        .iter()
        .map(|s| if let ferrofx::DesignedStage::Fir(t) = s { t.len() } else { 0 })
        .sum();
    (d.sections(), taps)
}

/// Times whole-buffer processing of `chain` on `channels x seconds` of noise.
#[allow(clippy::too_many_arguments)] // one cell's whole description, passed once
fn time_stream(
    runner: Runner,
    workload: &'static str,
    chain: &Chain,
    channels: usize,
    seconds: f64,
    runs: usize,
    opts: &StreamOptions,
) -> Result<Measurement> {
    let (clock, cpu_block) = (opts.clock, opts.cpu_block);
    let designed = chain.design(FS).expect("bench chains are valid");
    let frames = (seconds * FS) as usize;
    let input = noise(channels, frames, 42);
    let mut buf = input.clone();
    let mut times = Vec::with_capacity(runs);
    let block = match runner {
        Runner::Cpu => cpu_block,
        Runner::Gpu(backend) => match opts.gpu_block {
            Some(b) => b.max(1),
            // As `render` chooses it (measured before the timed runs).
            None => ferrofx::backends::gpu_block(backend, &designed, channels, Some(frames as u64)).0,
        },
    };
    for run in 0..=runs {
        // As the renderer's CPU backend builds it: offline, time segments as lanes.
        let mut engine = Engine::with_options(&designed, channels, cpu_block, EngineOptions::offline(channels));
        let mut gpu = match runner {
            Runner::Cpu => None,
            Runner::Gpu(backend) => Some(BlockStream::new(backend.prepare(&designed, channels, block)?, block)),
        };
        for (b, i) in buf.iter_mut().zip(&input) {
            b.copy_from_slice(i);
        }
        let t0 = clock.now();
        if let Some(g) = gpu.as_mut() {
            // Like `render --backend wgpu`: blocks chosen by the link's cost, two in flight.
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..]).collect();
            g.process_pipelined(&mut slices)?;
        }
        let mut start = 0;
        while gpu.is_none() && start < frames {
            let end = (start + block).min(frames);
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[start..end]).collect();
            engine.process(&mut slices);
            start = end;
        }
        let dt = clock.now() - t0;
        if run > 0 {
            times.push(dt); // run 0 warms caches and the allocator
        }
    }
    std::hint::black_box(&buf);
    // The bus's floor for the same bytes, beside the GPU's host-to-host time.
    let copy_floor_s = match runner {
        Runner::Cpu => None,
        Runner::Gpu(backend) => Some(backend.time_host_copy(channels * frames * 4, runs)?),
    };
    let (sections, taps) = shape(chain);
    let min_s = times.iter().cloned().fold(f64::INFINITY, f64::min);
    Ok(Measurement {
        workload,
        backend: runner.name(),
        channels,
        frames,
        sections,
        taps,
        runs,
        median_s: median(&mut times),
        min_s,
        block: None,
        copy_floor_s,
        stream_block: matches!(runner, Runner::Gpu(_)).then_some(block),
    })
}

/// Times every block of a realtime-style stream: median and p99.9 per block.
fn time_blocks(runner: Runner, chain: &Chain, block: usize, seconds: f64, min_blocks: usize) -> Result<Measurement> {
    let designed = chain.design(48_000.0).expect("bench chains are valid");
    let channels = 2;
    let blocks = ((seconds * 48_000.0) as usize / block).max(min_blocks);
    let input = noise(channels, block * 64, 7);
    let mut engine = Engine::new(&designed, channels, block);
    let mut gpu = match runner {
        Runner::Cpu => None,
        Runner::Gpu(backend) => Some(BlockStream::new(backend.prepare(&designed, channels, block)?, block)),
    };
    let (mut l, mut r) = (vec![0.0f32; block], vec![0.0f32; block]);
    let mut times = Vec::with_capacity(blocks);
    for i in 0..blocks + 100 {
        let k = (i % 64) * block;
        l.copy_from_slice(&input[0][k..k + block]);
        r.copy_from_slice(&input[1][k..k + block]);
        let t0 = Instant::now();
        match gpu.as_mut() {
            None => engine.process(&mut [&mut l[..], &mut r[..]]),
            Some(g) => g.process(&mut [&mut l[..], &mut r[..]])?,
        }
        let dt = t0.elapsed().as_secs_f64();
        if i >= 100 {
            times.push(dt);
        }
    }
    times.sort_by(f64::total_cmp);
    let p999 = percentile_999(&times);
    let machine_p999 = machine_tail(times[times.len() / 2], times.len());
    let (sections, taps) = shape(chain);
    Ok(Measurement {
        workload: "realtime_block",
        backend: runner.name(),
        channels,
        frames: block,
        sections,
        taps,
        runs: times.len(),
        median_s: times[times.len() / 2],
        min_s: times[0],
        block: Some((block, p999, machine_p999)),
        copy_floor_s: None,
        stream_block: None,
    })
}

/// The 99.9th percentile of sorted `times`.
fn percentile_999(times: &[f64]) -> f64 {
    times[((times.len() as f64 * 0.999) as usize).min(times.len() - 1)]
}

/// The p99.9 of `count` timings of plain dependent arithmetic that takes `median_s`, timed
/// like the blocks: what this machine adds to any code of that length (interrupts,
/// preemption, the hypervisor's steal), the floor under the engine's own tail. No
/// memory, no branches that depend on data: nothing of the engine's.
fn machine_tail(median_s: f64, count: usize) -> (f64, f64) {
    fn spin(n: u64) -> f64 {
        let mut x = 1.0f64;
        for _ in 0..n {
            x = std::hint::black_box(x * 1.000_000_1 + 1e-9);
        }
        x
    }
    let calibration = 200_000;
    let t0 = Instant::now();
    std::hint::black_box(spin(calibration));
    let per_step = t0.elapsed().as_secs_f64() / calibration as f64;
    let n = ((median_s / per_step) as u64).max(1);
    let mut times = Vec::with_capacity(count + 100);
    for _ in 0..count + 100 {
        let t = Instant::now();
        std::hint::black_box(spin(n));
        times.push(t.elapsed().as_secs_f64());
    }
    times.drain(..100);
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], percentile_999(&times))
}

/// The clock a stream cell is timed with, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Wall,
    /// The process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`): the CPU engine is single-threaded.
    ProcessCpu,
}

impl Clock {
    fn now(self) -> f64 {
        match self {
            Clock::Wall => {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                START.get_or_init(Instant::now).elapsed().as_secs_f64()
            }
            Clock::ProcessCpu => {
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the
                // kernel supports on every Linux this runs on (the call cannot fail for it).
                unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
                ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
            }
        }
    }
}

/// Which cells of the stream workloads run, and how they are timed.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    pub quick: bool,
    /// Only cells with these channel counts (empty: all).
    pub channels: Vec<usize>,
    /// Every cell runs this long instead of the workload's durations.
    pub duration_s: Option<f64>,
    pub runs: Option<usize>,
    pub clock: Clock,
    /// Frames per engine call on the CPU.
    pub cpu_block: usize,
    /// Frames per block of a GPU's host-to-host stream, where given (else chosen per
    /// cell from the chain's measured round trips, as `render` chooses it).
    pub gpu_block: Option<usize>,
}

/// Every measurement of one workload.
pub fn run_workload(runner: Runner, w: Workload, opts: &StreamOptions) -> Result<Vec<Measurement>> {
    let quick = opts.quick;
    let runs = opts.runs.unwrap_or(if quick { 3 } else { 7 });
    // Quick durations stay distinct (5, 60, 180 s -> 0.1, 1, 3 s): one row per grid cell.
    let durations = |grid: &[f64]| -> Vec<f64> {
        match opts.duration_s {
            Some(d) => vec![d],
            None => grid.iter().map(|&full| if quick { (full / 60.0).clamp(0.1, 3.0) } else { full }).collect(),
        }
    };
    let wanted = |ch: usize| opts.channels.is_empty() || opts.channels.contains(&ch);
    let grid = |name, chain: &Chain, channels: &[usize], seconds: &[f64], runs| -> Result<Vec<Measurement>> {
        let mut out = Vec::new();
        for &ch in channels.iter().filter(|&&ch| wanted(ch)) {
            for s in durations(seconds) {
                out.push(time_stream(runner, name, chain, ch, s, runs, opts)?);
            }
        }
        Ok(out)
    };
    Ok(match w {
        Workload::ApiChain => grid("api_chain", &api_chain(), &[8], &[120.0], runs)?,
        Workload::IirChain => grid("iir_chain", &iir_chain(), &[1, 2, 8, 12], &[5.0, 60.0, 180.0], runs)?,
        Workload::FirChain => grid("fir_chain", &fir_chain(), &[1, 2, 8, 12], &[5.0, 60.0], runs)?,
        Workload::LongFir => grid("long_fir", &long_fir(), &[2], &[60.0], opts.runs.unwrap_or(if quick { 1 } else { 3 }))?,
        // Stereo blocks, per-block wall time: only the channel filter applies.
        Workload::RealtimeBlock if !wanted(2) => Vec::new(),
        Workload::RealtimeBlock => {
            let chain = realtime_chain();
            let min_blocks = match (runner, quick) {
                (Runner::Gpu(_), true) => 100,
                _ => 1000,
            };
            // The contract's blocks; a GPU also at 2,048 and 4,096 frames, where its round
            // trip starts to fit the block's budget.
            let blocks: &[usize] = match runner {
                Runner::Cpu => &[32, 64, 128, 256, 512, 1024],
                Runner::Gpu(_) => &[32, 64, 128, 256, 512, 1024, 2048, 4096],
            };
            let mut out = Vec::new();
            for &b in blocks {
                out.push(time_blocks(runner, &chain, b, if quick { 1.0 } else { 20.0 }, min_blocks)?);
            }
            out
        }
    })
}

/// One row; `tuning`: the GPU switches that differ from the defaults (GPU rows only).
fn print(m: &Measurement, json_out: bool, tuning: &str) {
    let tuning = if m.backend == "cpu" { "" } else { tuning };
    if !tuning.is_empty() && !json_out {
        println!("({} with {tuning}:)", m.backend);
    }
    if json_out {
        let mut v = json!({
            "workload": m.workload, "backend": m.backend, "channels": m.channels, "frames": m.frames,
            "sections": m.sections, "taps": m.taps, "runs": m.runs, "median_s": m.median_s,
            "min_s": m.min_s, "ns_per_sample": m.ns_per_sample(),
        });
        if !tuning.is_empty() {
            v["tuning"] = json!(tuning);
        }
        if let Some((block, p999, (machine_median, machine_p999))) = m.block {
            let budget = block as f64 / 48_000.0;
            v["block"] = json!(block);
            v["p999_s"] = json!(p999);
            v["machine_median_s"] = json!(machine_median);
            v["machine_p999_s"] = json!(machine_p999);
            v["median_budget_share"] = json!(m.median_s / budget);
            v["p999_budget_share"] = json!(p999 / budget);
        }
        if let Some(b) = m.stream_block {
            v["stream_block_frames"] = json!(b);
        }
        if let Some(floor) = m.copy_floor_s {
            v["copy_floor_s"] = json!(floor);
            v["x_copy_floor"] = json!(m.median_s / floor);
        }
        println!("{v}");
        return;
    }
    let per_section = if m.sections > 0 { format!("{:8.3} ns/sample/ch/section", m.ns_per_sample() / m.sections as f64) } else { String::new() };
    match m.block {
        Some((block, p999, (machine_median, machine_p999))) => {
            let budget = block as f64 / 48_000.0;
            println!(
                "{:<15} {:<4} {:>2} ch  block {:>5}  median {:>8.2} us ({:.4}% of budget)  p99.9 {:>8.2} us ({:.4}%)  machine: median {:>6.2} us, p99.9 {:>6.2} us",
                m.workload,
                m.backend,
                m.channels,
                block,
                m.median_s * 1e6,
                100.0 * m.median_s / budget,
                p999 * 1e6,
                100.0 * p999 / budget,
                machine_median * 1e6,
                machine_p999 * 1e6
            );
        }
        None => println!(
            "{:<15} {:<4} {:>2} ch {:>9} frames  median {:>9.4} s  min {:>9.4} s  {:>8.3} ns/sample  {}  {:.0}x realtime{}",
            m.workload,
            m.backend,
            m.channels,
            m.frames,
            m.median_s,
            m.min_s,
            m.ns_per_sample(),
            per_section,
            m.frames as f64 / FS / m.median_s,
            m.copy_floor_s.map_or(String::new(), |f| format!("  copy floor {f:.4} s ({:.2}x it)", m.median_s / f))
                + &m.stream_block.map_or(String::new(), |b| format!("  blocks of {b}"))
        ),
    }
}

pub fn run(args: BenchArgs) -> ExitCode {
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: BenchArgs) -> Result<()> {
    if args.plugin {
        let seconds = if args.quick { args.seconds.min(0.5) } else { args.seconds };
        return crate::bench_plugin::run(crate::bench_plugin::PluginBenchOptions {
            seconds,
            matched: !args.cookbook,
            build: !args.no_build,
            json: args.json,
            channels: if args.channels.is_empty() { crate::bench_plugin::CHANNELS.to_vec() } else { args.channels.clone() },
            blocks: if args.blocks.is_empty() { crate::bench_plugin::BLOCKS.to_vec() } else { args.blocks.clone() },
            bands: if args.bands.is_empty() { crate::bench_plugin::BAND_COUNTS.to_vec() } else { args.bands.clone() },
            static_only: args.static_only,
            main_poll_ms: args.main_poll_ms,
            interrupts: args.interrupts,
        });
    }
    let mut backends = args.backends.clone();
    if backends.is_empty() {
        backends.push("cpu".to_string());
    }
    backends.dedup();
    // Open every requested backend first: a missing one is an error before any timing.
    let mut opened = Vec::new();
    for b in &backends {
        if b != "cpu" {
            opened.push((b.clone(), ferrofx::backends::open_gpu_tuned(b, &args.tuning.tuning())?));
        }
    }
    let workloads = if args.workloads.is_empty() { Workload::ALL.to_vec() } else { args.workloads.clone() };
    if args.resident {
        let gpus: Vec<&dyn Backend> = opened.iter().map(|(_, b)| b.as_ref()).collect();
        if gpus.is_empty() {
            anyhow::bail!("--resident times GPU backends: name one or more with --backend (e.g. --backend cuda)");
        }
        return crate::bench_resident::run(&gpus, &workloads, args.quick, args.runs.unwrap_or(if args.quick { 2 } else { 5 }), args.json, &args.tuning.changed());
    }
    if args.cpu_time && backends.iter().any(|b| b != "cpu") {
        anyhow::bail!("--cpu-time times the CPU backend only (a GPU's work is not this process's CPU time)");
    }
    let opts = StreamOptions {
        quick: args.quick,
        channels: args.channels.clone(),
        duration_s: args.duration_s,
        runs: args.runs,
        clock: if args.cpu_time { Clock::ProcessCpu } else { Clock::Wall },
        cpu_block: args.block_frames.unwrap_or(RENDER_BLOCK).max(1),
        gpu_block: args.gpu_block,
    };
    for b in &backends {
        let runner = match opened.iter().find(|(o, _)| o == b) {
            Some((_, backend)) => Runner::Gpu(backend.as_ref()),
            _ => Runner::Cpu,
        };
        match runner {
            Runner::Cpu if !args.json => {
                println!("cpu backend, single thread, {} ({})", std::env::consts::ARCH, ferrofx::simd_level())
            }
            Runner::Gpu(backend) => {
                let blocks = match args.gpu_block {
                    Some(b) => format!("blocks of {b} frames"),
                    None => "blocks chosen per cell from the chain's measured round trips (as render chooses them)".to_string(),
                };
                let line = format!(
                    "{} backend on {}; offline workloads in {blocks}, realtime_block as one synchronous round trip per block",
                    backend.name(),
                    backend.describe().split_once(" on ").map_or("its device".to_string(), |(_, d)| d.to_string())
                );
                let cpu_note = "note: this adapter is a CPU rasteriser (lavapipe/llvmpipe): these figures test the wgpu path, they are not GPU speed";
                if args.json {
                    eprintln!("{line}");
                    if backend.is_software() {
                        eprintln!("{cpu_note}");
                    }
                } else {
                    println!("{line}");
                    if backend.is_software() {
                        println!("{cpu_note}");
                    }
                }
            }
            Runner::Cpu => {}
        }
        for &w in &workloads {
            if !args.json {
                eprintln!("running {} ({}) ...", w.name(), runner.name());
            }
            match run_workload(runner, w, &opts) {
                Ok(ms) => ms.iter().for_each(|m| print(m, args.json, &args.tuning.changed())),
                // A workload the GPU path cannot run is reported and skipped, not fatal.
                Err(e) if matches!(runner, Runner::Gpu(_)) => eprintln!("skipped {} on {}: {e:#}", w.name(), runner.name()),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
