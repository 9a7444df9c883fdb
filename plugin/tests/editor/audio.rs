//! The editor beside a playing audio state: the analyser, the engine panel and meters,
//! the audio thread never waiting for the editor, rendered snapshots.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use egui::{Key, Modifiers};
use ferrofx_plugin::editor::nodes::node_pos;
use ferrofx_plugin::control::params::FerroParams;
use ferrofx_plugin::control::chain::ChainSlot;
use ferrofx_plugin::shared::telemetry::Telemetry;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use ferrofx_plugin::audio::state::{AudioState, LatencyPolicy};
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::AudioConfig;
use ferrofx_plugin::editor::analyser::Mode;

use super::rig::*;

#[test]
fn the_analyser_shows_a_test_sine_at_its_frequency() {
    let twelfth = 2f64.powf(1.0 / 12.0);
    for freq_hz in [45.0, 1234.0, 9_876.0, 19_000.0] {
        let (mut r, mut audio, telemetry) = audio_rig();
        assert!(telemetry.spectrum.is_wanted(), "the open editor asks for windows");
        play_sine(&mut r, &mut audio, &telemetry, freq_hz, 0.5, 1.0);
        let a = &r.harness.state().analyser;
        let peak = f64::from(a.peak_hz().expect("the analyser has data"));
        assert!(peak > freq_hz / twelfth && peak < freq_hz * twelfth, "{freq_hz} Hz shown at {peak} Hz");
        // Far from the tone the level is far below it (the window's sidelobes are low).
        let at = |f: f64| {
            let i = a.freqs_hz.iter().position(|&x| f64::from(x) >= f).unwrap();
            a.post_db[i]
        };
        let top = a.post_db.iter().cloned().fold(f32::MIN, f32::max);
        let far = if freq_hz < 1000.0 { freq_hz * 8.0 } else { freq_hz / 8.0 };
        assert!(top - at(far) > 60.0, "{freq_hz} Hz: {top} dB at the tone, {} dB three octaves away", at(far));
    }
    // The analyser off: the audio thread stops copying (no new window arrives).
    let (mut r, mut audio, telemetry) = audio_rig();
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 0.2);
    r.harness.state_mut().analyser.mode = Mode::Off;
    r.harness.run();
    assert!(!telemetry.spectrum.is_wanted());
    let before = {
        let mut out = telemetry.spectrum.output.lock().unwrap();
        out.update();
        out.output_buffer().seq
    };
    play_sine(&mut r, &mut audio, &telemetry, 1000.0, 0.5, 0.5);
    let mut out = telemetry.spectrum.output.lock().unwrap();
    out.update();
    assert_eq!(out.output_buffer().seq, before, "no window while the analyser is off");
}

#[test]
fn the_engine_panel_and_meters_show_the_given_figures() {
    let (telemetry, mut taps) = connect();
    let telemetry = Arc::new(telemetry);
    let mut r = rig_with(Arc::new(FerroParams::default()), telemetry.clone());
    // Ten blocks of 512 frames at 48 kHz (10.667 ms each) taking 1 % .. 10 % of that.
    let budget_ns = 512.0 / 48_000.0 * 1e9;
    for k in 1..=10u64 {
        let ns = (budget_ns * k as f64 / 100.0).round() as u64;
        taps.process_times.push((ns << 32) | 512).unwrap();
    }
    telemetry.latency_samples.store(1024, Ordering::Relaxed);
    telemetry.channels.store(2, Ordering::Relaxed);
    let g = &telemetry.gpu;
    g.block_frames.store(1024, Ordering::Relaxed);
    g.route_gpu.store(true, Ordering::Relaxed);
    g.on_worker.store(4321, Ordering::Relaxed);
    g.on_cpu.store(12, Ordering::Relaxed);
    g.late.store(3, Ordering::Relaxed);
    ferrofx_plugin::audio::output::meter(&telemetry.meters[0], &vec![0.5; 4_800]);
    ferrofx_plugin::audio::output::meter(&telemetry.meters[1], &vec![0.25; 4_800]);
    telemetry.clipped.store(true, Ordering::Relaxed);
    r.harness.run();
    r.harness.get_by_label("process 5.5 % median, 10.0 % worst of real time (last 1 s, 10 blocks)");
    r.harness.get_by_label_contains("latency 1024 samples (21.33 ms)");
    r.harness.get_by_label_contains("blocks GPU 4321 CPU 12 late 3");
    assert!(ferrofx_plugin::editor::gpu_line(&r.params, &telemetry).starts_with("GPU ("), "the GPU route is named first");
    r.harness.get_by_label("peak -6.0 dB");
    let (peak, rms) = r.harness.state().meters.levels(1);
    assert!((peak - -12.04).abs() < 0.05, "{peak}");
    assert!(rms < peak + 1e-3 && rms > -40.0, "{rms}");
    // The clip light stays on until clicked.
    r.pause();
    r.harness.get_by_label("CLIP").click();
    r.harness.run();
    assert!(!telemetry.clipped.load(Ordering::Relaxed));
}

#[test]
fn the_audio_thread_never_allocates_or_waits_while_the_editor_is_driven() {
    use nice_assert_no_alloc::{assert_no_alloc, violation_count};
    use nice_plug_egui::NiceEguiApp;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    let (mut r, mut audio, telemetry) = audio_rig();
    assert!(telemetry.spectrum.is_wanted());
    assert!(telemetry.loudness.is_wanted(), "the loudness meters copy samples too");
    let params = r.params.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let blocks_done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let audio_thread = {
        let (stop, blocks_done, telemetry) = (stop.clone(), blocks_done.clone(), telemetry.clone());
        std::thread::spawn(move || {
            let before = violation_count();
            let (mut l, mut rr) = (vec![0.0f32; 256], vec![0.0f32; 256]);
            let mut worst = Duration::ZERO;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (i, (a, b)) in l.iter_mut().zip(rr.iter_mut()).enumerate() {
                    let t = (n as usize * 256 + i) as f32 / 48_000.0;
                    *a = 0.3 * (2.0 * std::f32::consts::PI * 440.0 * t).sin();
                    *b = 0.3 * (2.0 * std::f32::consts::PI * 3000.0 * t).sin();
                }
                let started = Instant::now();
                assert_no_alloc(|| {
                    let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
                    audio.process(&params, &telemetry, &mut bufs, None, 256);
                });
                worst = worst.max(started.elapsed());
                assert!(l.iter().chain(&rr).all(|v| v.is_finite()));
                n += 1;
                blocks_done.store(n, Ordering::Relaxed);
            }
            (violation_count() - before, n, worst)
        })
    };
    let wait_for = |blocks: u64| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while blocks_done.load(Ordering::Relaxed) < blocks {
            assert!(Instant::now() < deadline, "the audio thread stalled at block {}", blocks_done.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(1));
        }
    };

    // The editor sits on its ends of the hand-overs (as a stalled GUI thread would):
    // the analyser's buffer and the processing-time ring fill up; audio goes on.
    {
        let _analyser = telemetry.spectrum.output.lock().unwrap();
        let _times = telemetry.process_times.lock().unwrap();
        let from = blocks_done.load(Ordering::Relaxed);
        wait_for(from + 3_000);
    }

    // The editor driven: stages added and edited (chains built and handed over), nodes
    // dragged and added, undo, the analyser switched, the editor closed and reopened.
    for item in ["Elliptic", "FIR (designed)", "Gain"] {
        r.add_stage(item);
        wait_for(blocks_done.load(Ordering::Relaxed) + 50);
    }
    r.peak(2, 700.0, 4.0);
    let a = r.axes();
    let from = node_pos(&a, &r.params.bands[2].band());
    r.drag(from, from + egui::vec2(120.0, -40.0), Modifiers::NONE);
    r.double_click(a.pos(3000.0, -5.0));
    r.harness.get_all_by_role_and_label(Role::SpinButton, "Cutoff (Hz)").next().unwrap().set_value_accesskit(2_500.0);
    r.harness.run();
    for _ in 0..3 {
        r.pause();
        r.harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
        r.harness.run();
    }
    r.harness.state_mut().analyser.mode = Mode::PrePost;
    r.harness.run();
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);
    r.harness.state_mut().editor_closed();
    assert!(!telemetry.spectrum.is_wanted(), "closed: no more copies");
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);
    let gui = r.gui.clone();
    r.harness.state_mut().attach(gui);
    r.harness.run();
    assert!(telemetry.spectrum.is_wanted(), "reopened");
    wait_for(blocks_done.load(Ordering::Relaxed) + 200);

    stop.store(true, Ordering::Relaxed);
    let (violations, blocks, worst) = audio_thread.join().unwrap();
    assert_eq!(violations, 0, "allocations on the audio thread");
    assert!(blocks > 4_000, "{blocks} blocks");
    // Not a timing test: a block is 5.3 ms of audio; a wait on the editor would be
    // the length of the locks held above (seconds).
    println!("{blocks} blocks, worst {worst:?}");
}

/// Renders the editor in four states (wgpu; lavapipe on machines without a GPU) and
/// checks each picture is a drawn editor. `FERROFX_UPDATE_SNAPSHOTS=1` writes them to
/// `docs/editor/` (the images the README shows).
#[test]
fn rendered_snapshots_of_four_states() {
    use ferrofx_plugin::editor::presets::{load_text, FACTORY};
    use ferrofx_plugin::editor::Tab;
    let out_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/editor");
    let update = std::env::var_os("FERROFX_UPDATE_SNAPSHOTS").is_some();
    let mut shots = Vec::new();

    // 1. Empty.
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    r.harness.run();
    shots.push(("empty", r));

    // 2. A six-band mastering curve (the factory preset), band table shown.
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    load_text(FACTORY[0].1, &r.params, &r.gui.param_setter(), 48_000.0).unwrap();
    r.harness.state_mut().tab = Tab::Bands;
    r.harness.state_mut().drawer = true;
    r.harness.run();
    shots.push(("mastering-6-band", r));

    // 2b. The same curve with a band on the side and one on the left, a dynamic band,
    // auto gain and linear phase chosen (the status row shows them; routed bands carry their letter).
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    let setter = r.gui.param_setter();
    load_text(FACTORY[0].1, &r.params, &setter, 48_000.0).unwrap();
    let enabled: Vec<usize> = (0..24).filter(|&i| r.params.bands[i].enabled.value()).collect();
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[1]].route, ferrofx_plugin::control::params::RouteChoice::Side);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[2]].route, ferrofx_plugin::control::params::RouteChoice::Left);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.auto_gain, ferrofx_plugin::control::params::AutoGainChoice::Pink);
    // And one dynamic band (its dashed curve shows how far its 6 dB range takes it).
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[3]].dyn_on, true);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.phase, ferrofx_plugin::control::params::PhaseChoice::Linear16384);
    // One band selected: its controls float beside its node.
    r.harness.state_mut().nodes.selected[enabled[0]] = true;
    r.harness.run();
    shots.push(("mastering-routed", r));

    // 3. Chain stages: an elliptic band limit and an impulse response, group delay shown.
    let dir = std::env::temp_dir().join(format!("ferrofx-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ir = dir.join("plate.wav");
    let spec = hound::WavSpec { channels: 1, sample_rate: 48_000, bits_per_sample: 32, sample_format: hound::SampleFormat::Float };
    let mut w = hound::WavWriter::create(&ir, spec).unwrap();
    let noise = ferrofx_testkit::noise(2_400, 11);
    for (i, &v) in noise.iter().enumerate() {
        w.write_sample(if i == 0 { 1.0 } else { 0.05 * v * (-(i as f32) / 300.0).exp() }).unwrap();
    }
    w.finalize().unwrap();
    let mut r = rig_rendered(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()), true);
    r.peak(0, 120.0, 2.0);
    r.add_stage("Elliptic");
    r.harness.state_mut().stages.add_impulse_response(&ir, &r.params, 48_000.0);
    r.harness.state_mut().overlay = ferrofx_plugin::editor::curve::Overlay::GroupDelay;
    r.harness.state_mut().tab = Tab::Stages;
    r.harness.state_mut().drawer = true;
    r.harness.run();
    assert_eq!(r.chain().stages.len(), 2);
    shots.push(("chain-elliptic-ir", r));

    // 4. The analyser on noise through the mastering curve, input and output.
    let (mut r, mut audio, telemetry) = {
        let params = Arc::new(FerroParams::default());
        let (telemetry, taps) = connect();
        let telemetry = Arc::new(telemetry);
        let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
        audio.activate(&params, AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false }, None, None, 0, LatencyPolicy::Restart);
        (rig_built(params, Some(audio.chain().clone()), telemetry.clone(), true, true), audio, telemetry)
    };
    load_text(FACTORY[0].1, &r.params, &r.gui.param_setter(), 48_000.0).unwrap();
    // One band dynamic, low threshold: the noise moves it (a marker from its node to its
    // gain now, its curve drawn there), and the loudness row reads the noise.
    let enabled: Vec<usize> = (0..24).filter(|&i| r.params.bands[i].enabled.value()).collect();
    let setter = r.gui.param_setter();
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[3]].dyn_on, true);
    ferrofx_plugin::editor::edits::set_param(&setter, &r.params.bands[enabled[3]].dyn_threshold_db, -50.0);
    r.harness.state_mut().analyser.mode = Mode::PrePost;
    r.harness.state_mut().analyser.tilt = true;
    r.harness.run();
    for k in 0..200u64 {
        let mut l = ferrofx_testkit::noise_amp(512, 2 * k + 1, 0.25);
        let mut rr = ferrofx_testkit::noise_amp(512, 2 * k + 2, 0.25);
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(&r.params, &telemetry, &mut bufs, None, 512);
        if k % 4 == 3 {
            r.harness.run();
        }
    }
    shots.push(("analyser-noise", r));

    for (name, mut r) in shots {
        let image = match r.harness.render() {
            Ok(image) => image,
            Err(e) => {
                println!("skipped: no wgpu adapter to render the editor ({e}); install mesa-vulkan-drivers");
                return;
            }
        };
        let mut colours = std::collections::HashSet::new();
        for p in image.pixels() {
            colours.insert(p.0);
        }
        assert!(colours.len() > 200, "{name}: a drawn editor has many colours, this has {}", colours.len());
        if update {
            std::fs::create_dir_all(&out_dir).unwrap();
            image.save(out_dir.join(format!("{name}.png"))).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
