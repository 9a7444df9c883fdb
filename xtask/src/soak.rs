//! `cargo xtask soak`: the plugin bundle played through a CLAP host for hours of audio,
//! faster than real time, with everything a long session throws at it: random automation
//! of every parameter, bypass toggles, backend switches (CPU, Auto, GPU: the GPU on
//! lavapipe where there is no GPU) with the restarts they ask for, chain swaps loaded on
//! the main thread while audio plays, and bursts of NaN, infinite, huge and subnormal
//! input. Reports memory growth, non-finite and subnormal output samples and block times;
//! exits 1 when a goal is missed. The debug bundle (`cargo xtask bundle ferrofx`) aborts
//! on any allocation inside `process`, so a completed run with it also shows that the
//! audio thread never allocated.

use anyhow::{anyhow, bail, Result};
use clap::Args;
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, Elliptic, Fir};
use ferrofx_testkit::clap::{load_entry, load_state, state_bytes, state_json, Event, ParamEvent, Pckn, Plugin};
use ferrofx_testkit::Rng;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const PLUGIN_ID: &str = "org.ferrofx.equaliser";
/// Audio per activation: each session ends with a deactivation, and the next one
/// honours a restart the plugin asked for (a backend switch changes its latency).
const SESSION_S: f64 = 60.0;
const MAX_BLOCK: usize = 2048;

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Hours of audio to play (it runs faster than real time).
    #[arg(long, conflicts_with = "minutes")]
    hours: Option<f64>,
    /// Minutes of audio to play (instead of --hours).
    #[arg(long)]
    minutes: Option<f64>,
    /// The .clap bundle (default: FerroFX.clap in $CARGO_TARGET_DIR/bundled or target/bundled).
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// Sample rate in Hz.
    #[arg(long, default_value_t = 48_000.0)]
    fs: f64,
    /// Seed of every random choice (a run is repeatable).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The backend parameter's value for every session (0 Auto, 1 CPU, 2 GPU, in the
    /// plugin's order); by default each session draws one.
    #[arg(long)]
    backend: Option<u8>,
    /// Largest memory growth allowed, in MB, after the warm-up (the first half of the run):
    /// of the resident size from the end of the warm-up to the end, and of the allocator's
    /// bytes in use (median of the last quarter of sessions against the third quarter).
    #[arg(long, default_value_t = 1.0)]
    max_rss_growth_mb: f64,
}

/// Resident memory of this process in bytes (Linux; 0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
}

/// The resident size after asking the C allocator to hand its free memory back to the
/// system (glibc's `malloc_trim(0)`, which releases free pages anywhere in its arenas):
/// what the process holds, without the allocator's high-water mark of freed memory, so
/// two readings compare what is live (and fragmented) rather than what was once needed.
fn trimmed_rss_bytes() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system; it is safe to call at
    // any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
    rss_bytes()
}

/// Bytes the C allocator has handed out and not had back (glibc's `mallinfo2`, over all
/// arenas: chunks in use plus mmapped blocks). Unlike the resident size, this does not
/// keep the high-water mark of freed memory the allocator holds on to, so its growth is
/// what a leak shows as. `None` without glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use_bytes() -> Option<u64> {
    #[repr(C)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: `mallinfo2` (glibc 2.33 and later; Debian 12 has 2.36) takes no arguments,
    // only reads the allocator's counters under its locks, and returns this plain struct
    // by value; the layout above is glibc's `struct mallinfo2`, ten `size_t` fields.
    let m = unsafe { mallinfo2() };
    Some((m.uordblks + m.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use_bytes() -> Option<u64> {
    None
}

/// `(median of the first half, median of the second half, their difference)` of the
/// per-session samples after the warm-up; `None` with fewer than two.
fn heap_growth(samples_mb: &[f64]) -> Option<(f64, f64, f64)> {
    if samples_mb.len() < 2 {
        return None;
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    let (first, second) = samples_mb.split_at(samples_mb.len() / 2);
    let (a, b) = (median(first), median(second));
    Some((a, b, b - a))
}

/// Block times in a fixed log-spaced histogram (1 us to 10 s), so a run of hours keeps
/// no growing list (its own memory must not count as the plugin's growth).
struct Times {
    bins: [u64; 280],
    worst_s: f64,
    count: u64,
}

impl Times {
    fn add(&mut self, s: f64) {
        let bin = ((s.max(1e-6) / 1e-6).log10() * 40.0) as usize;
        self.bins[bin.min(self.bins.len() - 1)] += 1;
        self.worst_s = self.worst_s.max(s);
        self.count += 1;
    }

    fn median_s(&self) -> f64 {
        let mut seen = 0;
        for (i, n) in self.bins.iter().enumerate() {
            seen += n;
            if seen * 2 >= self.count {
                return 1e-6 * 10f64.powf((i as f64 + 0.5) / 40.0);
            }
        }
        0.0
    }
}

/// The chains a soak swaps between (the last one empty).
fn chain_pool(rng: &mut Rng) -> Vec<Chain> {
    let ir: Vec<f64> = (0..2_000).map(|i| (rng.unit() - 0.5) * (-(i as f64) / 300.0).exp() * 0.2).collect();
    vec![
        Butterworth::highpass(30.0, 4) | Biquad::peaking(1_000.0, 1.4, -6.0),
        Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Fir::coefficients(ir),
        Chain::from(Fir::lowpass(101, 8_000.0)),
        Chebyshev1::bandstop(45.0, 55.0, 3, 0.5) | Biquad::high_shelf(8_000.0, 0.7, 3.0),
        Chain::new(),
    ]
}

fn default_bundle() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target"));
    target.join("bundled").join("FerroFX.clap")
}

pub fn run(args: SoakArgs) -> ExitCode {
    match soak(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn soak(args: SoakArgs) -> Result<bool> {
    let seconds = match (args.hours, args.minutes) {
        (Some(h), _) => h * 3600.0,
        (None, Some(m)) => m * 60.0,
        (None, None) => bail!("say how much audio to play: --hours H or --minutes M"),
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        bail!("the duration must be a positive number");
    }
    let fs = args.fs;
    let bundle = args.bundle.unwrap_or_else(default_bundle);
    if !bundle.exists() {
        bail!("{} not found; build it with `cargo xtask bundle ferrofx` (the debug bundle checks allocations)", bundle.display());
    }
    let entry = load_entry(&bundle).map_err(|e| anyhow!("loading the bundle: {e}"))?;
    let mut plugin = Plugin::new(&entry, PLUGIN_ID).map_err(|e| anyhow!("{e}"))?;
    let mut rng = Rng::new(args.seed);
    let pool = chain_pool(&mut rng);
    let backend = plugin.param("Backend").cloned().ok_or_else(|| anyhow!("the plugin has no Backend parameter"))?;
    let bypass = plugin.param("Bypass").cloned().ok_or_else(|| anyhow!("the plugin has no Bypass parameter"))?;
    // "GPU Min Block" stays low so the GPU path engages whenever the backend allows.
    let min_block = plugin.param("GPU Min Block").cloned().ok_or_else(|| anyhow!("the plugin has no GPU Min Block parameter"))?;
    let automated: Vec<_> =
        plugin.params.iter().filter(|p| ![backend.id, bypass.id, min_block.id].contains(&p.id)).cloned().collect();
    let channels = 2;
    let total_frames = (seconds * fs) as u64;
    let session_frames = (SESSION_S * fs) as u64;

    let (mut non_finite, mut subnormal, mut bursts, mut swaps, mut switches, mut toggles, mut restarts) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut times = Times { bins: [0; 280], worst_s: 0.0, count: 0 };
    let mut rss_after_first = 0u64;
    let mut played = 0u64;
    let started = Instant::now();
    let mut session = 0u64;
    let mut largest_block = 0usize;
    let mut previous_backend: Option<f64> = None;
    let mut latent_sessions = 0u64;
    // Memory is measured from the end of the warm-up: the first half of the run, and at
    // least the sessions that go through every backend. Devices, pipelines and allocator
    // caches grow during it (lavapipe: ~100 MB, then more as chains and backends meet).
    // Two measures after it:
    // - the resident size after `malloc_trim(0)` (glibc hands its free pages back first):
    //   without the trim it keeps the allocator's high-water mark, freed memory glibc
    //   holds on to, so it stepped up whenever a session's chain needed more than any
    //   before (an 8-hour run grew 4.9 MB this way, all by session 180 and flat for the
    //   300 after; 16-minute runs 12-20 MB against the 16 MB goal) while the bytes in use
    //   stayed flat throughout;
    // - the allocator's bytes in use, which a leak raises and retention does not. They
    //   vary with the chain of the moment (77-85 MB on lavapipe), so the medians of the
    //   third and last quarters of the run are compared.
    let sessions_total = total_frames.div_ceil(session_frames);
    let warm_up = (sessions_total / 2).max(backend.max as u64 + 2).min(sessions_total);
    let mut heap_mb: Vec<f64> = Vec::with_capacity(sessions_total as usize);
    while played < total_frames {
        let frames = session_frames.min(total_frames - played);
        // A chain swap while this session plays, at a random point, on the main thread.
        let swap_at = Instant::now() + std::time::Duration::from_millis(rng.below(400) as u64);
        let chain = pool[rng.below(pool.len())].clone();
        let state_now = plugin.save().map_err(|e| anyhow!("saving state: {e}"))?;
        let mut next_state = state_json(&state_now).ok_or_else(|| anyhow!("the plugin's state is not JSON"))?;
        next_state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&chain.to_json())?);
        let next_state = state_bytes(&next_state);
        let mut swapped = false;
        // A state load restores every parameter it holds: the backend of this session is
        // sent again once the swap has landed, so the next activation uses it.
        let landed = std::sync::atomic::AtomicBool::new(false);
        let landed = &landed;
        let mut resent = false;
        // The backend of this session: switching it makes the plugin ask for a restart.
        // The first sessions go through every backend once (the warm-up after which
        // memory is measured); then they are drawn at random.
        let drawn = rng.below(backend.max as usize + 1) as f64;
        let backend_value = match args.backend {
            Some(fixed) => f64::from(fixed).min(backend.max),
            None if session <= backend.max as u64 => session as f64,
            None => drawn,
        };
        let mut audio_rng = Rng::new(args.seed ^ session.wrapping_mul(0x9E37_79B9));
        let mut bypass_on = false;
        let mut next_toggle = 0u64;
        let mut next_burst = 0u64;
        let (mut s_non_finite, mut s_subnormal, mut s_bursts, mut s_toggles, mut s_largest) = (0u64, 0u64, 0u64, 0u64, 0usize);
        let mut s_times = Times { bins: [0; 280], worst_s: 0.0, count: 0 };
        plugin
            .session(
                fs,
                channels,
                MAX_BLOCK,
                |at, input, evs| {
                    if at >= frames {
                        return None;
                    }
                    let len = (*audio_rng.pick(&[32usize, 64, 100, 128, 256, 512, 1024, 2048])).min((frames - at) as usize);
                    for ch in input.iter_mut() {
                        for v in ch[..len].iter_mut() {
                            *v = (audio_rng.unit() as f32 - 0.5) * 0.8;
                        }
                    }
                    if at >= next_burst {
                        // Garbage input: NaN, infinities, the largest floats, subnormals.
                        let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -f32::MAX, 1e-40, -3e-42];
                        for ch in input.iter_mut() {
                            for v in ch[..len.min(64)].iter_mut() {
                                *v = *audio_rng.pick(&bad);
                            }
                        }
                        s_bursts += 1;
                        next_burst = at + (fs * (2.0 + 6.0 * audio_rng.unit())) as u64;
                    }
                    let after_swap = !resent && landed.load(std::sync::atomic::Ordering::SeqCst);
                    if at == 0 || after_swap {
                        resent |= after_swap;
                        evs.push(ParamEvent::new(0, backend.id, Pckn::match_all(), backend_value));
                        evs.push(ParamEvent::new(0, min_block.id, Pckn::match_all(), min_block.min));
                    }
                    if at >= next_toggle {
                        bypass_on = !bypass_on;
                        evs.push(ParamEvent::new(0, bypass.id, Pckn::match_all(), if bypass_on { 1.0 } else { 0.0 }));
                        s_toggles += 1;
                        next_toggle = at + (fs * (1.0 + 4.0 * audio_rng.unit())) as u64;
                    }
                    // Automation: a few parameters move in most blocks, at any frame.
                    for _ in 0..audio_rng.below(6) {
                        let p = audio_rng.pick(&automated);
                        let value = p.min + audio_rng.unit() * (p.max - p.min);
                        evs.push(ParamEvent::new(audio_rng.below(len) as u32, p.id, Pckn::match_all(), value));
                    }
                    evs.sort_by_key(|e| e.header().time());
                    Some(len)
                },
                |_, output, len, report| {
                    s_times.add(report.seconds);
                    s_largest = s_largest.max(len);
                    for ch in output {
                        for &v in &ch[..len] {
                            if !v.is_finite() {
                                s_non_finite += 1;
                            } else if v != 0.0 && v.abs() < f32::MIN_POSITIVE {
                                s_subnormal += 1;
                            }
                        }
                    }
                },
                |instance| {
                    // The chain swap: a state load on the main thread while audio plays.
                    if !swapped && Instant::now() >= swap_at {
                        swapped = load_state(instance, &next_state);
                        landed.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                },
            )
            .map_err(|e| anyhow!("session {session}: {e}"))?;
        plugin.pump();
        swaps += u64::from(swapped);
        // Latency is reported while the GPU path (its offload), linear phase or a latency
        // reserve is on (all three are drawn by the automation).
        if plugin.latency() > 0 {
            latent_sessions += 1;
        }
        if plugin.take_restart_request() {
            restarts += 1;
        }
        if previous_backend != Some(backend_value) {
            switches += 1;
            previous_backend = Some(backend_value);
        }
        non_finite += s_non_finite;
        subnormal += s_subnormal;
        bursts += s_bursts;
        toggles += s_toggles;
        largest_block = largest_block.max(s_largest);
        for (a, b) in times.bins.iter_mut().zip(&s_times.bins) {
            *a += b;
        }
        times.count += s_times.count;
        times.worst_s = times.worst_s.max(s_times.worst_s);
        played += frames;
        session += 1;
        if session == warm_up {
            rss_after_first = trimmed_rss_bytes();
        }
        if session > warm_up {
            heap_mb.extend(heap_in_use_bytes().map(|b| b as f64 / 1e6));
        }
        if std::env::var_os("FERROFX_SOAK_TRACE").is_some() {
            eprintln!(
                "soak: session {session}: backend {backend_value}, rss {:.2} MB, heap in use {:.2} MB",
                rss_bytes() as f64 / 1e6,
                heap_in_use_bytes().unwrap_or(0) as f64 / 1e6
            );
        } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("\rsoak: {:.2} of {:.2} h of audio played", played as f64 / fs / 3600.0, seconds / 3600.0);
        }
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    let rss_end = trimmed_rss_bytes();
    let wall = started.elapsed().as_secs_f64();
    let audio_s = played as f64 / fs;
    let growth_mb = (rss_end as f64 - rss_after_first as f64) / 1e6;
    let heap_growth_mb = heap_growth(&heap_mb);
    let budget_ms = MAX_BLOCK as f64 / fs * 1e3;
    println!(
        "soak: {:.3} h of audio ({audio_s:.0} s at {fs} Hz, stereo) in {wall:.1} s ({:.1}x real time): {session} sessions ({latent_sessions} ending with latency: the GPU path, linear phase or a latency reserve), {swaps} chain swaps, {switches} backend switches ({restarts} restarts asked), {toggles} bypass toggles, {bursts} bursts of NaN/inf/huge/subnormal input",
        audio_s / 3600.0,
        audio_s / wall
    );
    println!("  non-finite output samples: {non_finite}; subnormal output samples: {subnormal}");
    println!(
        "  resident memory: {:.1} MB after {warm_up} warm-up sessions, {:.1} MB at the end: growth {growth_mb:+.2} MB over {} sessions (goal < {} MB)",
        rss_after_first as f64 / 1e6,
        rss_end as f64 / 1e6,
        session - warm_up,
        args.max_rss_growth_mb
    );
    match heap_growth_mb {
        Some((third, last, growth)) => println!(
            "  allocator bytes in use: median {third:.1} MB over the third quarter of sessions, {last:.1} MB over the last: growth {growth:+.2} MB (goal < {} MB)",
            args.max_rss_growth_mb
        ),
        None => println!("  allocator bytes in use: not measured (needs glibc and at least two sessions after the warm-up)"),
    }
    println!(
        "  process() per block: median {:.3} ms, worst {:.2} ms (largest block {largest_block} frames = {budget_ms:.1} ms of audio)",
        times.median_s() * 1e3,
        times.worst_s * 1e3
    );
    println!("  allocations on the audio thread: none seen (a debug bundle aborts the run on any allocation inside process())");
    let heap_ok = heap_growth_mb.is_none_or(|(_, _, g)| g < args.max_rss_growth_mb);
    let ok = non_finite == 0 && subnormal == 0 && growth_mb < args.max_rss_growth_mb && heap_ok;
    println!("soak: {} passed, {} failed", usize::from(ok), usize::from(!ok));
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::heap_growth;

    #[test]
    fn heap_growth_compares_the_medians_of_the_two_halves() {
        assert_eq!(heap_growth(&[]), None);
        assert_eq!(heap_growth(&[5.0]), None);
        // Halves [1, 9, 2] and [12, 10, 30]: medians 2 and 12, whatever the order.
        assert_eq!(heap_growth(&[1.0, 9.0, 2.0, 12.0, 10.0, 30.0]), Some((2.0, 12.0, 10.0)));
        // Even halves take the mean of the middle two; a flat series does not grow.
        assert_eq!(heap_growth(&[4.0, 2.0, 3.0, 3.0]), Some((3.0, 3.0, 0.0)));
    }
}
