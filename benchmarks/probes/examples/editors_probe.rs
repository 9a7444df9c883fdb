//! Several editors open in one process (issue 45, item 10): what each editor's frame costs
//! the GUI thread, and whether the audio thread notices.
//!
//! Eight plugin instances (audio states at 48 kHz stereo with the six-band factory curve,
//! one band dynamic) play noise on one audio thread in real time: every 5.33 ms each
//! instance's `process()` takes a block of 256 frames, timed. Meanwhile the GUI thread
//! draws the editors of the first N instances (N = 0, 1, 4, 8; then 0 again, for the
//! audio figures' run-to-run spread) at 60 frames a second with their defaults (the
//! analyser on the output, the loudness meters), as a host's window would: each frame laid
//! out by egui and tessellated into meshes (everything but the GPU's part), timed in the
//! GUI thread's CPU time per editor frame. With two or more CPUs the audio thread runs on
//! the last and the GUI thread on the first.
//!
//! `cargo run --release -p ferrofx-probes --example editors_probe [-- SECONDS [ROUNDS]]`
//! (default 10 s per N). Prints one line per N: the editor frame's CPU time (median, p99,
//! ms) and the audio blocks' `process()` time (median, p99.9, worst, µs), and writes them
//! to `benchmarks/results/editors.json`. With ROUNDS, N alternates between 0 and 8,
//! ROUNDS times each, for the audio tail's run-to-run spread with none open beside its
//! values with eight open (`benchmarks/results/editors_rounds.json`, and a summary line).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrofx_plugin::audio::state::{AudioState, LatencyPolicy};
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::{AudioConfig, ChainSlot};
use ferrofx_plugin::control::params::FerroParams;
use ferrofx_plugin::editor::presets::{load_text, FACTORY};
use ferrofx_plugin::editor::EditorApp;
use ferrofx_plugin::shared::telemetry::Telemetry;
use nice_plug::context::gui::{GuiContext, GuiContextInner};
use nice_plug::context::PluginApi;
use nice_plug::params::internals::ParamPtr;
use nice_plug::plugin::PluginState;

const INSTANCES: usize = 8;
const BLOCK: usize = 256;
const FS: f64 = 48_000.0;
const FRAME: Duration = Duration::from_micros(16_667);

/// A host's GUI context that applies parameter changes at once (as a wrapper would).
struct Host;

impl GuiContextInner for Host {
    fn plugin_api(&self) -> PluginApi {
        PluginApi::Clap
    }
    unsafe fn raw_begin_set_parameter(&self, _param: ParamPtr) {}
    unsafe fn raw_set_parameter_normalized(&self, param: ParamPtr, normalized: f32) {
        // SAFETY: the parameters outlive every editor here (all are held by `main`).
        unsafe { param._internal_set_normalized_value(normalized) };
    }
    unsafe fn raw_end_set_parameter(&self, _param: ParamPtr) {}
    fn get_state(&self) -> PluginState {
        PluginState { version: String::new(), params: Default::default(), fields: Default::default() }
    }
    fn set_state(&self, _state: PluginState) {}
    fn request_restart(&self) {}
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Pins this thread to `cpu` (Linux; nothing elsewhere or on one CPU).
fn pin(cpu: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity get
    // a pointer to it and its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu.min(cpus - 1), &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

struct Instance {
    params: Arc<FerroParams>,
    chain: ChainSlot,
    telemetry: Arc<Telemetry>,
    audio: AudioState,
}

fn instance(gui: &GuiContext) -> Instance {
    let params = Arc::new(FerroParams::default());
    let (telemetry, taps) = connect();
    let telemetry = Arc::new(telemetry);
    let setter = gui.param_setter();
    load_text(FACTORY[0].1, &params, &setter, FS).expect("the factory preset loads");
    let enabled: Vec<usize> = (0..24).filter(|&i| params.bands[i].enabled.value()).collect();
    setter.set_parameter(&params.bands[enabled[3]].dyn_on, true);
    setter.set_parameter(&params.bands[enabled[3]].dyn_threshold_db, -50.0);
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    let config = AudioConfig { sample_rate_hz: FS as f32, channels: 2, max_block_frames: BLOCK, offload: false };
    audio.activate(&params, config, None, None, 0, LatencyPolicy::Restart);
    let chain = audio.chain().clone();
    Instance { params, chain, telemetry, audio }
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let gui = GuiContext::new(Arc::new(Host));
    let instances: Vec<Instance> = (0..INSTANCES).map(|_| instance(&gui)).collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "editors_probe: {INSTANCES} instances playing (blocks of {BLOCK} at {FS} Hz, six bands, one dynamic), {seconds} s per count of open editors, {cpus} CPUs"
    );
    let mut audio_states: Vec<(Arc<FerroParams>, Arc<Telemetry>, AudioState)> = Vec::new();
    let mut editors_of: Vec<(Arc<FerroParams>, ChainSlot, Arc<Telemetry>)> = Vec::new();
    for i in instances {
        editors_of.push((i.params.clone(), i.chain, i.telemetry.clone()));
        audio_states.push((i.params, i.telemetry, i.audio));
    }
    let mut results = Vec::new();
    let audio_states = Arc::new(std::sync::Mutex::new(audio_states));
    let rounds: Option<usize> = std::env::args().nth(2).and_then(|s| s.parse().ok());
    let counts: Vec<usize> = match rounds {
        Some(r) => (0..r).flat_map(|_| [0usize, 8]).collect(),
        None => vec![0, 1, 4, 8, 0],
    };
    for open in counts {
        // The audio thread: real-time blocks for every instance, each timed.
        let stop = Arc::new(AtomicBool::new(false));
        let audio_thread = {
            let (stop, states) = (stop.clone(), audio_states.clone());
            std::thread::spawn(move || {
                pin(usize::MAX);
                let mut states = states.lock().unwrap();
                let mut times: Vec<f64> = Vec::with_capacity((seconds * FS / BLOCK as f64) as usize * INSTANCES + 1024);
                let (mut l, mut r) = (vec![0.0f32; BLOCK], vec![0.0f32; BLOCK]);
                let mut seed = 1u64;
                let period = Duration::from_secs_f64(BLOCK as f64 / FS);
                let mut next = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    for (params, telemetry, audio) in states.iter_mut() {
                        for v in l.iter_mut().chain(r.iter_mut()) {
                            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                            *v = ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.5;
                        }
                        let t = Instant::now();
                        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut r];
                        audio.process(params, telemetry, &mut bufs, None, BLOCK);
                        times.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    next += period;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        next = now;
                    }
                }
                times
            })
        };
        // The GUI thread: `open` editors at 60 frames a second.
        pin(0);
        let mut editors: Vec<(egui::Context, EditorApp)> = editors_of[..open]
            .iter()
            .map(|(params, chain, telemetry)| {
                let mut app = EditorApp::new(params.clone(), chain.clone(), telemetry.clone());
                app.attach(gui.clone());
                (egui::Context::default(), app)
            })
            .collect();
        let mut frame_ms: Vec<f64> = Vec::new();
        let started = Instant::now();
        let mut frame = 0u64;
        while started.elapsed().as_secs_f64() < seconds {
            let due = started + FRAME * frame as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            for (ctx, app) in editors.iter_mut() {
                let input = egui::RawInput {
                    screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1000.0, 720.0))),
                    time: Some(started.elapsed().as_secs_f64()),
                    ..Default::default()
                };
                let t = thread_cpu();
                let out = ctx.run_ui(input, |ui| app.show(ui));
                let meshes = ctx.tessellate(out.shapes, out.pixels_per_point);
                std::hint::black_box(meshes);
                // The warm-up second (fonts, first layouts) is not counted.
                if started.elapsed().as_secs_f64() > 1.0 {
                    frame_ms.push((thread_cpu() - t).as_secs_f64() * 1e3);
                }
            }
            frame += 1;
        }
        // Editors closed: the audio side stops copying for them.
        for (_, _, telemetry) in &editors_of[..open] {
            telemetry.spectrum.wanted.store(false, Ordering::Relaxed);
            telemetry.loudness.wanted.store(false, Ordering::Relaxed);
        }
        drop(editors);
        stop.store(true, Ordering::Relaxed);
        let mut audio_us = audio_thread.join().unwrap();
        let blocks = audio_us.len();
        let (a_med, a_999) = (percentile(&mut audio_us, 0.5), percentile(&mut audio_us, 0.999));
        let a_worst = audio_us.last().copied().unwrap_or(f64::NAN);
        let (f_med, f_99) = (percentile(&mut frame_ms, 0.5), percentile(&mut frame_ms, 0.99));
        println!(
            "  {open} editors open: editor frame CPU median {f_med:.3} ms, p99 {f_99:.3} ms ({} frames); audio process() per block median {a_med:.1} us, p99.9 {a_999:.1} us, worst {a_worst:.0} us ({blocks} blocks)",
            frame_ms.len()
        );
        results.push(serde_json::json!({
            "editors_open": open, "editor_frames": frame_ms.len(),
            "editor_frame_cpu_ms_median": f_med, "editor_frame_cpu_ms_p99": f_99,
            "audio_blocks": blocks, "audio_us_median": a_med, "audio_us_p999": a_999, "audio_us_worst": a_worst,
        }));
    }
    let out = serde_json::json!({
        "probe": "editors_probe", "instances": INSTANCES, "block_frames": BLOCK, "fs_hz": FS, "seconds_per_count": seconds,
        "cpus": cpus, "runs": results,
    });
    if rounds.is_some() {
        let tails = |n: u64| -> Vec<f64> { results.iter().filter(|r| r["editors_open"] == n).filter_map(|r| r["audio_us_p999"].as_f64()).collect() };
        let (none, eight) = (tails(0), tails(8));
        let max_none = none.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min_none = none.iter().copied().fold(f64::INFINITY, f64::min);
        let within = eight.iter().filter(|&&v| v <= max_none).count();
        println!(
            "audio p99.9 with none open: {min_none:.1}-{max_none:.1} us over {} runs; with 8 open: {:?} us: {within} of {} within the none-open spread",
            none.len(),
            eight.iter().map(|v| (v * 10.0).round() / 10.0).collect::<Vec<_>>(),
            eight.len()
        );
    }
    let name = if rounds.is_some() { "../results/editors_rounds.json" } else { "../results/editors.json" };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap() + "\n").expect("writing the results");
    println!("wrote {}", path.display());
}
