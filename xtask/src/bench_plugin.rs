//! `cargo xtask bench --plugin`: the plugin's own job timed in a host. The release CLAP
//! bundles of FerroFX and of a bare nice-plug plugin (`benchmarks/bare-plugin`: a stereo
//! gain with one smoothed parameter, the floor any plugin on this framework pays) are
//! loaded through `clack-host` (the test kit's host) and `process()` is timed block by
//! block at 48 kHz: blocks of 32, 64, 128, 512 and 1024 frames, 1, 2 and 8 channels, 0,
//! 1, 8 and 24 bell bands (40 Hz to 16 kHz evenly in log frequency, +3/-3 dB
//! alternating, Q 1), each with static parameters and with all 24 band gains automated
//! every block (the bare plugin: its gain). Each case plays `--seconds` of noise after
//! half a second of warm-up, in a fresh instance; minimum, median and p99.9 of the
//! per-block times are reported, and "filtering" is a case's median minus the same
//! case's with every band off, so the host's and the framework's share cancels.
//!
//! Beside them, where Debian's `lsp-plugins-lv2` is installed, LSP's Parametric
//! Equalizer x32 (Stereo, and Mono for one channel; no 8-channel variant) with the same
//! bells, timed the same way by `benchmarks/lv2-host` (an LV2 host on `livi`, run as a
//! separate program so that this one does not link liblilv); where it is absent the
//! column says so.
//!
//! Threads: the host's audio thread (and LSP's host, which runs on one thread) is pinned
//! to the last CPU, the host's main thread (which serves the plugins' main-thread
//! callbacks every `--main-poll-ms`, 10 ms by default: a GUI's pace) to the first, as a
//! DAW keeps its GUI off the audio core; on a one-CPU machine nothing is pinned. Timing
//! is wall time around each `process()` call.
//!
//! `--interrupts` (Linux, CLAP subjects): the audio CPU's interrupt count is read from
//! `/proc/interrupts` before and after each timed call (outside the timing), and the
//! statistics are given again over the blocks no counted interrupt landed in, with the
//! share of blocks that one did: on a VM, where an interrupt costs 10-50 µs, this splits
//! the machine's tail from the plugin's.

use anyhow::{anyhow, bail, Context, Result};
use ferrofx_testkit::bench::{bell, block_stats_us, current_cpu, uninterrupted, Interrupts};
use ferrofx_testkit::clap::{find_bundle, load_entry, state_bytes, state_json, ParamEvent, Pckn, Plugin, PluginEntry};
use serde_json::{json, Value};

const FS: f64 = 48_000.0;
pub const BLOCKS: [usize; 5] = [32, 64, 128, 512, 1024];
pub const CHANNELS: [usize; 3] = [1, 2, 8];
pub const BAND_COUNTS: [usize; 4] = [0, 1, 8, 24];
const WARM_UP_S: f64 = 0.5;
const BANDS: usize = 24;

/// A plugin under test.
#[derive(Clone, Copy)]
pub struct Subject {
    pub name: &'static str,
    /// Its `.clap` bundle's file name.
    bundle: &'static str,
    clap_id: &'static str,
    /// Package name for `cargo xtask bundle`.
    package: &'static str,
    has_bands: bool,
}

pub const FERROFX: Subject =
    Subject { name: "FerroFX", bundle: "FerroFX.clap", clap_id: "org.ferrofx.equaliser", package: "ferrofx_plugin", has_bands: true };
pub const BARE: Subject =
    Subject { name: "bare nice-plug plugin", bundle: "FerroFX Bare.clap", clap_id: "org.ferrofx.bare", package: "ferrofx_bare", has_bands: false };

/// One case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub channels: usize,
    pub block: usize,
    pub bands: usize,
    pub automated: bool,
}

/// Per-block times in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub min_us: f64,
    pub median_us: f64,
    pub p999_us: f64,
    pub blocks: usize,
    /// With `--interrupts`: the same over the blocks no counted interrupt landed in.
    pub clean: Option<CleanStats>,
}

/// Statistics over the blocks that no interrupt the kernel counts landed in.
#[derive(Clone, Copy, Debug)]
pub struct CleanStats {
    /// The share of all blocks that one did land in, in percent.
    pub hit_percent: f64,
    pub median_us: f64,
    pub p999_us: f64,
}

/// `hit[i]`: whether an interrupt landed in block `i` (empty: not counted).
fn stats(times_s: Vec<f64>, hit: &[bool]) -> Stats {
    let blocks = times_s.len();
    let clean = (hit.len() == blocks && blocks > 0).then(|| {
        let rest = uninterrupted(&times_s, hit);
        let hit_percent = 100.0 * (blocks - rest.len()) as f64 / blocks as f64;
        let (_, median_us, p999_us) = block_stats_us(rest);
        CleanStats { hit_percent, median_us, p999_us }
    });
    let (min_us, median_us, p999_us) = block_stats_us(times_s);
    Stats { min_us, median_us, p999_us, blocks, clean }
}

/// The audio-ports-config layout with `channels` in and out (FerroFX's and the bare
/// plugin's orders agree: stereo, mono, quad, 6, 8).
fn layout_index(channels: usize) -> Option<u32> {
    match channels {
        2 => Some(0),
        1 => Some(1),
        4 => Some(2),
        6 => Some(3),
        8 => Some(4),
        _ => None,
    }
}

/// Sets `params[key]` to `value`, keeping the stored type's tag (`{"f32": ..}`,
/// `{"bool": ..}`, `{"i32": ..}`); an error when the state has no such parameter.
fn set_param(params: &mut Value, key: &str, value: f64) -> Result<()> {
    let slot = params.get_mut(key).and_then(Value::as_object_mut).ok_or_else(|| anyhow!("the plugin's state has no parameter {key:?}"))?;
    let (tag, _) = slot.iter().next().ok_or_else(|| anyhow!("parameter {key:?} has an empty value"))?;
    let tag = tag.clone();
    let v = match tag.as_str() {
        "f32" => json!(value),
        "i32" => json!(value as i64),
        "bool" => json!(value != 0.0),
        other => bail!("parameter {key:?} is stored as {other:?}, not a number"),
    };
    slot.insert(tag, v);
    Ok(())
}

/// Sets enum parameter `key` (stored by its stable id, `{"string": ..}`) to `id`.
fn set_enum(params: &mut Value, key: &str, id: &str) -> Result<()> {
    let slot = params.get_mut(key).and_then(Value::as_object_mut).ok_or_else(|| anyhow!("the plugin's state has no parameter {key:?}"))?;
    if !slot.contains_key("string") {
        bail!("parameter {key:?} is not stored as an enum id: {slot:?}");
    }
    slot.insert("string".into(), json!(id));
    Ok(())
}

/// FerroFX's state with the first `bands` bands on as [`bell`]s, the rest off, and the
/// analog-matched switch as given.
fn band_state(plugin: &mut Plugin, bands: usize, matched: bool) -> Result<Vec<u8>> {
    let saved = plugin.save().map_err(|e| anyhow!("saving state: {e}"))?;
    let mut state = state_json(&saved).ok_or_else(|| anyhow!("the plugin's state is not JSON"))?;
    let params = state.get_mut("params").ok_or_else(|| anyhow!("the plugin's state has no params"))?;
    for i in 0..BANDS {
        let n = i + 1;
        set_param(params, &format!("on_{n}"), if i < bands { 1.0 } else { 0.0 })?;
        set_enum(params, &format!("shape_{n}"), "peak")?;
        let (freq_hz, gain_db) = bell(i, bands);
        set_param(params, &format!("freq_{n}"), freq_hz)?;
        set_param(params, &format!("gain_{n}"), gain_db)?;
        set_param(params, &format!("q_{n}"), 1.0)?;
    }
    set_param(params, "matched", if matched { 1.0 } else { 0.0 })?;
    Ok(state_bytes(&state))
}

/// Times one case of `subject` in a fresh instance.
pub fn measure(entry: &PluginEntry, subject: Subject, case: Case, opts: &PluginBenchOptions, noise: &[f32]) -> Result<Stats> {
    let (matched, seconds) = (opts.matched, opts.seconds);
    let mut plugin = Plugin::new(entry, subject.clap_id).map_err(|e| anyhow!(e))?;
    plugin.main_poll = std::time::Duration::from_secs_f64(opts.main_poll_ms.max(0.01) * 1e-3);
    let mut pinned = false;
    // The CPU the audio thread found itself on after pinning (checked below).
    let audio_cpu = std::sync::atomic::AtomicI64::new(-1);
    let layout = layout_index(case.channels).ok_or_else(|| anyhow!("no layout with {} channels", case.channels))?;
    if layout != 0 {
        plugin.select_layout(layout).map_err(|e| anyhow!(e))?;
    }
    if subject.has_bands {
        let state = band_state(&mut plugin, case.bands, matched)?;
        if !plugin.load(&state) {
            bail!("the plugin refused the benchmark's state");
        }
    }
    // The automated parameters: the 24 band gains, or the bare plugin's gain.
    let automated: Vec<(u32, f64, f64)> = if subject.has_bands {
        (1..=BANDS)
            .map(|n| plugin.param(&format!("Band {n} Gain")).map(|p| (p.id.get(), p.min, p.max)).ok_or_else(|| anyhow!("no parameter \"Band {n} Gain\"")))
            .collect::<Result<_>>()?
    } else {
        vec![plugin.param("Gain").map(|p| (p.id.get(), p.min, p.max)).ok_or_else(|| anyhow!("no parameter \"Gain\""))?]
    };
    let warm_frames = (WARM_UP_S * FS) as u64;
    let total_frames = warm_frames + (seconds * FS) as u64;
    let mut times = Vec::with_capacity((total_frames as usize).div_ceil(case.block) + 1);
    let times_ref = &mut times;
    // With --interrupts: the audio CPU's count before each block (read by `block`, the
    // last thing before the timed call) and whether it moved by `after` (the first after).
    let irq = std::sync::Mutex::new(if opts.interrupts { Cores::get().audio.and_then(Interrupts::on_cpu) } else { None });
    let irq_before = std::sync::atomic::AtomicU64::new(0);
    let irq_count = || irq.lock().ok().and_then(|mut i| i.as_mut().and_then(Interrupts::count));
    let mut hit = Vec::with_capacity(times_ref.capacity());
    let hit_ref = &mut hit;
    let block = case.block;
    let mut k = 0u64;
    plugin
        .session(
            FS,
            case.channels,
            block,
            |at, input, evs| {
                if at >= total_frames {
                    return None;
                }
                if !pinned {
                    // The first call runs on the host's audio thread.
                    pin_current_thread(Cores::get().audio);
                    audio_cpu.store(current_cpu().map_or(-1, |c| c as i64), std::sync::atomic::Ordering::Relaxed);
                    pinned = true;
                }
                let start = (at as usize) % (noise.len() - block);
                for (c, ch) in input.iter_mut().enumerate() {
                    let offset = (start + 7919 * c) % (noise.len() - block);
                    ch[..block].copy_from_slice(&noise[offset..offset + block]);
                }
                if case.automated {
                    // Every gain moves a little every block (a slow sine per parameter,
                    // within +-10 % of the range around its middle).
                    k += 1;
                    for (j, &(id, min, max)) in automated.iter().enumerate() {
                        let phase = k as f64 * 0.01 + j as f64;
                        let v = min + (max - min) * (0.5 + 0.1 * phase.sin());
                        evs.push(ParamEvent::new(0, ferrofx_testkit::clap::ClapId::new(id), Pckn::match_all(), v));
                    }
                }
                if let Some(n) = irq_count() {
                    irq_before.store(n, std::sync::atomic::Ordering::Relaxed);
                }
                Some(block)
            },
            |at, _out, _len, report| {
                let moved = irq_count().map(|n| n != irq_before.load(std::sync::atomic::Ordering::Relaxed));
                if at >= warm_frames {
                    times_ref.push(report.seconds);
                    if let Some(moved) = moved {
                        hit_ref.push(moved);
                    }
                }
            },
            |_| {},
        )
        .map_err(|e| anyhow!(e))?;
    let ran_on = audio_cpu.load(std::sync::atomic::Ordering::Relaxed);
    if let (Some(want), true) = (Cores::get().audio, ran_on >= 0) {
        if ran_on != want as i64 {
            bail!("the host's audio thread ran on CPU {ran_on}, not on CPU {want} where it was pinned");
        }
    }
    Ok(stats(times, &hit))
}

/// The CPUs the benchmark's threads run on.
#[derive(Clone, Copy)]
struct Cores {
    audio: Option<usize>,
    main: Option<usize>,
}

impl Cores {
    /// The last CPU for audio, the first for the main thread; none with one CPU. Counted
    /// once, at the first call (before anything is pinned): `available_parallelism` counts
    /// the calling thread's allowed CPUs, so asked again on a thread pinned to one CPU
    /// (or one spawned from it) it would say one, and nothing would be pinned apart.
    fn get() -> Cores {
        static CORES: std::sync::OnceLock<Cores> = std::sync::OnceLock::new();
        *CORES.get_or_init(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            if n < 2 {
                eprintln!("only one CPU is allowed: the host's audio and main threads share it (the figures' tails will show it)");
                Cores { audio: None, main: None }
            } else {
                Cores { audio: Some(n - 1), main: Some(0) }
            }
        })
    }
}

/// Pins the calling thread to `cpu` (Linux; elsewhere, or with `None`, nothing).
fn pin_current_thread(cpu: Option<usize>) {
    #[cfg(target_os = "linux")]
    if let Some(cpu) = cpu {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within it for a CPU
        // number below CPU_SETSIZE (checked); sched_setaffinity(0, ..) acts on the
        // calling thread and only reads the set. A failure leaves the thread unpinned.
        unsafe {
            if cpu < libc::CPU_SETSIZE as usize {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

/// One measured row.
pub struct Row {
    pub subject: &'static str,
    pub case: Case,
    pub stats: Stats,
}

/// Options of the plugin benchmark.
pub struct PluginBenchOptions {
    pub seconds: f64,
    pub matched: bool,
    pub build: bool,
    pub json: bool,
    pub channels: Vec<usize>,
    pub blocks: Vec<usize>,
    pub bands: Vec<usize>,
    pub static_only: bool,
    /// The CLAP host's main-thread polling interval while the plugins play.
    pub main_poll_ms: f64,
    /// Count the audio CPU's interrupts around each timed block (`--interrupts`).
    pub interrupts: bool,
}

/// The bundles, built first (release) unless `build` is off.
fn entries(build: bool) -> Result<Vec<(Subject, PluginEntry)>> {
    if build {
        let packages = [FERROFX.package, BARE.package];
        eprintln!("building the release bundles of {packages:?} (cargo xtask bundle -p ... --release)");
        let mut args = vec!["bundle".to_string()];
        for p in packages {
            args.extend(["-p".to_string(), p.to_string()]);
        }
        args.push("--release".into());
        nice_plug_xtask::main_with_args("cargo xtask", args).context("bundling")?;
    }
    [FERROFX, BARE]
        .into_iter()
        .map(|s| {
            let path = find_bundle(s.bundle).map_err(|e| anyhow!(e))?;
            let entry = load_entry(&path).map_err(|e| anyhow!(e))?;
            Ok((s, entry))
        })
        .collect()
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}

/// LSP's rows from `benchmarks/lv2-host` (built and run through cargo), or why there are
/// none.
fn lsp_rows(opts: &PluginBenchOptions) -> std::result::Result<Vec<Row>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["run", "--release", "--quiet", "-p", "ferrofx_lv2_bench", "--", "--seconds"]).arg(opts.seconds.to_string());
    for c in &opts.channels {
        cmd.args(["--channels", &c.to_string()]);
    }
    for b in &opts.blocks {
        cmd.args(["--block", &b.to_string()]);
    }
    for n in &opts.bands {
        cmd.args(["--bands", &n.to_string()]);
    }
    if opts.static_only {
        cmd.arg("--static-only");
    }
    // LSP's host runs on one thread: it inherits the audio core from this thread while it
    // is spawned, then this thread goes back to its own core.
    pin_current_thread(Cores::get().audio);
    let out = cmd.stderr(std::process::Stdio::inherit()).output();
    pin_current_thread(Cores::get().main);
    let out = out.map_err(|e| format!("running the LV2 host: {e}"))?;
    if !out.status.success() {
        return Err(format!("the LV2 host (benchmarks/lv2-host) failed: {}", out.status));
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("the LV2 host printed {line:?}: {e}"))?;
        if let Some(why) = v.get("skipped").and_then(Value::as_str) {
            return Err(why.to_string());
        }
        let num = |k: &str| v.get(k).and_then(Value::as_f64).ok_or_else(|| format!("the LV2 host's line lacks {k}: {line}"));
        let case = Case {
            channels: num("channels")? as usize,
            block: num("block")? as usize,
            bands: num("bands")? as usize,
            automated: v.get("automated").and_then(Value::as_bool).unwrap_or(false),
        };
        let stats = Stats { min_us: num("min_us")?, median_us: num("median_us")?, p999_us: num("p999_us")?, blocks: 0, clean: None };
        rows.push(Row { subject: LSP, case, stats });
    }
    Ok(rows)
}

/// The LSP column's name.
pub const LSP: &str = "LSP Para EQ x32";

pub fn run(opts: PluginBenchOptions) -> Result<()> {
    let entries = entries(opts.build)?;
    pin_current_thread(Cores::get().main);
    // Two seconds of seeded noise in [-0.5, 0.5), read at a different offset per channel.
    let noise = ferrofx_testkit::noise_amp((2.0 * FS) as usize, 1, 0.5);
    let mut rows = Vec::new();
    for &(subject, ref entry) in &entries {
        for &channels in &opts.channels {
            for &block in &opts.blocks {
                let counts: &[usize] = if subject.has_bands { &opts.bands } else { &[0] };
                for &bands in counts {
                    for automated in [false, true].into_iter().take(if opts.static_only { 1 } else { 2 }) {
                        let case = Case { channels, block, bands, automated };
                        let stats = measure(entry, subject, case, &opts, &noise)
                            .with_context(|| format!("{} {case:?}", subject.name))?;
                        if opts.json {
                            println!(
                                "{}",
                                json!({
                                    "plugin": subject.name, "channels": channels, "block": block, "bands": bands,
                                    "automated": automated, "matched": opts.matched && subject.has_bands,
                                    "min_us": stats.min_us, "median_us": stats.median_us, "p999_us": stats.p999_us, "blocks": stats.blocks,
                                    "uninterrupted": stats.clean.map(|c| json!({
                                        "hit_percent": c.hit_percent, "median_us": c.median_us, "p999_us": c.p999_us,
                                    })),
                                })
                            );
                        } else {
                            eprint!(".");
                        }
                        rows.push(Row { subject: subject.name, case, stats });
                    }
                }
            }
        }
    }
    let lsp_note = match lsp_rows(&opts) {
        Ok(lsp) => {
            if opts.json {
                for r in &lsp {
                    println!(
                        "{}",
                        json!({
                            "plugin": LSP, "channels": r.case.channels, "block": r.case.block, "bands": r.case.bands,
                            "automated": r.case.automated, "min_us": r.stats.min_us, "median_us": r.stats.median_us, "p999_us": r.stats.p999_us,
                        })
                    );
                }
            }
            rows.extend(lsp);
            None
        }
        Err(why) => Some(why),
    };
    if !opts.json {
        eprintln!();
        print_tables(&rows, &opts);
        if let Some(why) = &lsp_note {
            println!("LSP column skipped: {why}");
        }
    } else if let Some(why) = &lsp_note {
        println!("{}", json!({ "plugin": LSP, "skipped": why }));
    }
    Ok(())
}

fn find<'a>(rows: &'a [Row], subject: &str, channels: usize, block: usize, bands: usize, automated: bool) -> Option<&'a Stats> {
    rows.iter()
        .find(|r| r.subject == subject && r.case.channels == channels && r.case.block == block && r.case.bands == bands && r.case.automated == automated)
        .map(|r| &r.stats)
}

fn print_tables(rows: &[Row], opts: &PluginBenchOptions) {
    let cores = Cores::get();
    let cpu = |c: Option<usize>| c.map_or("any CPU".to_string(), |c| format!("CPU {c}"));
    println!(
        "plugin benchmark: {} s of audio per case at 48 kHz, CLAP through clack-host (audio thread on {}, main thread on {} serving callbacks every {} ms), {}, FerroFX's kernels {}{} ({} bands); per-block microseconds: median (min / p99.9)",
        opts.seconds,
        cpu(cores.audio),
        cpu(cores.main),
        opts.main_poll_ms,
        cpu_name(),
        ferrofx::simd_level(),
        // The bundle reads the same variable in this process.
        std::env::var(ferrofx::dsp::simd::SIMD_CAP_VAR).map_or(String::new(), |v| format!(" ({}={v})", ferrofx::dsp::simd::SIMD_CAP_VAR)),
        if opts.matched { "analog-matched" } else { "cookbook" }
    );
    for automated in [false, true] {
        println!();
        println!("{}", if automated { "all 24 gains automated every block" } else { "static parameters" });
        println!("| ch | block | bare | FerroFX 0 bands | 1 band | 8 bands | 24 bands | 24 bands: filtering | 0 bands / bare | LSP 0 bands | LSP 24 bands | LSP filtering |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for &channels in &opts.channels {
            for &block in &opts.blocks {
                let cell = |s: Option<&Stats>| s.map_or("-".to_string(), |s| format!("{:.2} ({:.2} / {:.2})", s.median_us, s.min_us, s.p999_us));
                let bare = find(rows, BARE.name, channels, block, 0, automated);
                let f = |n| find(rows, FERROFX.name, channels, block, n, automated);
                let filtering = match (f(24), f(0)) {
                    (Some(a), Some(b)) => format!("{:.2}", a.median_us - b.median_us),
                    _ => "-".into(),
                };
                let floor = match (f(0), bare) {
                    (Some(a), Some(b)) if b.median_us > 0.0 => format!("{:.2}x", a.median_us / b.median_us),
                    _ => "-".into(),
                };
                let l = |n| find(rows, LSP, channels, block, n, automated);
                let lsp_filtering = match (l(24), l(0)) {
                    (Some(a), Some(b)) => format!("{:.2}", a.median_us - b.median_us),
                    _ => "-".into(),
                };
                println!(
                    "| {channels} | {block} | {} | {} | {} | {} | {} | {filtering} | {floor} | {} | {} | {lsp_filtering} |",
                    cell(bare),
                    cell(f(0)),
                    cell(f(1)),
                    cell(f(8)),
                    cell(f(24)),
                    cell(l(0)),
                    cell(l(24))
                );
            }
        }
    }
    // The goals that this run can judge without the LSP column.
    println!();
    for block in [64, 512] {
        if let (Some(a), Some(b)) = (find(rows, FERROFX.name, 2, block, 0, false), find(rows, BARE.name, 2, block, 0, false)) {
            println!("every band off, stereo, {block} frames: {:.2}x the bare plugin (goal: at most 1.5x)", a.median_us / b.median_us);
        }
    }
    for block in [64, 512] {
        let f = |n| find(rows, FERROFX.name, 2, block, n, false);
        let l = |n| find(rows, LSP, 2, block, n, false);
        if let (Some(f24), Some(f0), Some(l24), Some(l0)) = (f(24), f(0), l(24), l(0)) {
            let ratio = (f24.median_us - f0.median_us) / (l24.median_us - l0.median_us);
            println!("24 bands, stereo, {block} frames: filtering {ratio:.2}x LSP's (goal: at most 0.5x)");
        }
    }
    for &block in &opts.blocks {
        if let (Some(f), Some(l)) = (find(rows, FERROFX.name, 2, block, 24, false), find(rows, LSP, 2, block, 24, false)) {
            println!("24 bands, stereo, {block} frames: whole block {:.2}x LSP's (goal: at most 1x)", f.median_us / l.median_us);
        }
    }
    if let Some(s) = find(rows, FERROFX.name, 2, 64, 24, true) {
        println!("24 bands automated, stereo, 64 frames: p99.9 {:.2}x the median (goal: at most 2x)", s.p999_us / s.median_us);
    }
    if opts.interrupts {
        println!();
        println!("--interrupts: blocks no interrupt counted on the audio CPU landed in (the others' share of all blocks); median / p99.9 us");
        println!("| plugin | ch | block | bands | automated | blocks hit | all: median / p99.9 (ratio) | not hit: median / p99.9 (ratio) |");
        println!("|---|---|---|---|---|---|---|---|");
        for r in rows {
            if let Some(c) = r.stats.clean {
                let s = &r.stats;
                let cell = |median_us: f64, p999_us: f64| {
                    if median_us > 0.0 {
                        format!("{median_us:.2} / {p999_us:.2} ({:.2}x)", p999_us / median_us)
                    } else {
                        "no block".to_string()
                    }
                };
                println!(
                    "| {} | {} | {} | {} | {} | {:.1} % | {} | {} |",
                    r.subject,
                    r.case.channels,
                    r.case.block,
                    r.case.bands,
                    if r.case.automated { "yes" } else { "no" },
                    c.hit_percent,
                    cell(s.median_us, s.p999_us),
                    cell(c.median_us, c.p999_us)
                );
            }
        }
    }
    if let (Some(a), Some(b)) = (find(rows, FERROFX.name, 2, 512, 24, false), find(rows, FERROFX.name, 2, 512, 0, false)) {
        let ns = (a.median_us - b.median_us) * 1e3 / (512.0 * 2.0 * 24.0 * if opts.matched { 2.0 } else { 1.0 });
        println!("24 bands, stereo, 512 frames: {ns:.2} ns per section-sample of filtering");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_values_keep_their_type() {
        let mut p = json!({"a": {"f32": 1.0}, "b": {"bool": false}, "c": {"i32": 3}});
        set_param(&mut p, "a", 2.5).unwrap();
        set_param(&mut p, "b", 1.0).unwrap();
        set_param(&mut p, "c", 0.0).unwrap();
        assert_eq!(p, json!({"a": {"f32": 2.5}, "b": {"bool": true}, "c": {"i32": 0}}));
        assert!(set_param(&mut p, "missing", 1.0).is_err());
    }
}
