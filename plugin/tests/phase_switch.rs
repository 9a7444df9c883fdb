//! The phase mode switched while playing, inside processing (as on VST3 and the
//! standalone app, where the latency may change between blocks): the plugin reports the
//! new latency at the very block its output starts to be the new mode's, so a host that
//! compensates the reported latency stays aligned. Each mode's output is checked against
//! an independent reference: natural phase against a plugin activated in natural phase,
//! linear phase against the core engine running the bands' linear-phase FIR.

use std::sync::Arc;

use ferrofx_plugin::audio::state::{AudioState, LatencyNews, LatencyPolicy};
use ferrofx_plugin::control::chain::AudioConfig;
use ferrofx_plugin::control::linear::{self, Designer, Setup, CROSSFADE_MS};
use ferrofx_plugin::control::params::{FerroParams, PhaseChoice, ShapeChoice};
use ferrofx_plugin::audio::linear::LinearAudio;
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::ChainSlot;
use ferrofx_plugin::shared::telemetry::Telemetry;
use ferrofx_testkit::engine::{fir_output, max_abs_diff};
use nice_assert_no_alloc::{assert_no_alloc, violation_count};
use nice_plug::prelude::*;

const FS: f64 = 48_000.0;
const BLOCK: usize = 256;

fn set<P: Param>(p: &P, plain: P::Plain) {
    // SAFETY: the parameter lives in the test's `FerroParams`, which outlives the call;
    // the audio thread of these tests is the test thread itself.
    unsafe { p.as_ptr()._internal_set_normalized_value(p.preview_normalized(plain)) };
}

/// Three stereo bands (a bell, a low shelf, a high cut), all carried by the FIR in
/// linear phase.
fn bands_params() -> Arc<FerroParams> {
    let params = Arc::new(FerroParams::default());
    for (i, shape, freq_hz, gain_db, q) in [
        (0, ShapeChoice::Peak, 1000.0, 6.0, 1.0),
        (1, ShapeChoice::LowShelf, 200.0, -4.0, 0.7),
        (2, ShapeChoice::HighCut, 12_000.0, 0.0, 0.7),
    ] {
        let b = &params.bands[i];
        set(&b.enabled, true);
        set(&b.shape, shape);
        set(&b.freq_hz, freq_hz);
        set(&b.gain_db, gain_db);
        set(&b.q, q);
    }
    params
}

/// An activated audio side at 48 kHz stereo, blocks of [`BLOCK`]: the designer thread
/// follows the phase mode (it must outlive the run).
fn plugin(params: &Arc<FerroParams>, policy: LatencyPolicy) -> (AudioState, Telemetry, Designer) {
    let (telemetry, taps) = connect();
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    let designer = activate(&mut audio, params, policy);
    (audio, telemetry, designer)
}

/// (Re-)activates `audio` as the plugin's `activate` does; returns the designer thread.
fn activate(audio: &mut AudioState, params: &Arc<FerroParams>, policy: LatencyPolicy) -> Designer {
    activate_at(audio, params, policy, FS)
}

/// [`activate`] at sample rate `fs`.
fn activate_at(audio: &mut AudioState, params: &Arc<FerroParams>, policy: LatencyPolicy, fs: f64) -> Designer {
    let setup = Setup { fs, channels: 2, max_block: BLOCK };
    let (designer, end) = Designer::start(params.clone(), setup);
    let linear = LinearAudio::new(end, setup);
    let config = AudioConfig { sample_rate_hz: fs as f32, channels: 2, max_block_frames: BLOCK, offload: false };
    let latency = audio.activate(params, config, None, Some(linear), 0, policy);
    assert_eq!(latency as usize, linear::latency_of(params.phase.value().fir_mode(), fs), "the latency reported at activation");
    designer
}

/// Stereo noise through `audio` in blocks of [`BLOCK`]; before block `k` the phase mode
/// becomes `modes[k]` when there is one. Each block is paced (the designer thread runs
/// meanwhile) and checked to allocate nothing. The output and each block's news.
fn play(audio: &mut AudioState, params: &FerroParams, telemetry: &Telemetry, x: &[Vec<f32>], modes: &[(usize, PhaseChoice)]) -> (Vec<Vec<f32>>, Vec<LatencyNews>) {
    let mut out: Vec<Vec<f32>> = (0..2).map(|_| Vec::with_capacity(x[0].len())).collect();
    let mut news = Vec::new();
    for (k, start) in (0..x[0].len()).step_by(BLOCK).enumerate() {
        if let Some(&(_, mode)) = modes.iter().find(|(at, _)| *at == k) {
            set(&params.phase, mode);
        }
        let n = BLOCK.min(x[0].len() - start);
        let (mut l, mut r) = (x[0][start..start + n].to_vec(), x[1][start..start + n].to_vec());
        let before = violation_count();
        let got = assert_no_alloc(|| audio.process(params, telemetry, &mut [&mut l[..], &mut r[..]], None, n));
        assert_eq!(violation_count(), before, "block {k} allocated or freed");
        out[0].extend_from_slice(&l);
        out[1].extend_from_slice(&r);
        news.push(got);
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
    (out, news)
}

/// Natural -> analog -> 4,096 taps -> 16,384 taps -> analog -> natural -> 4,096 taps
/// while playing: one
/// report per switch, with the mode's latency, at the block where the cross-fade begins;
/// before it the old mode's output, after the cross-fade the new mode's, during it a mix
/// of the new output and the old one delayed by the latency difference; no allocation.
#[test]
fn the_phase_mode_switches_in_process_and_reports_its_latency_at_the_switch() {
    let params = bands_params();
    let (mut audio, telemetry, _designer) = plugin(&params, LatencyPolicy::InProcess);
    let frames = 14 * FS as usize;
    let x = vec![ferrofx_testkit::noise_amp(frames, 3, 0.5), ferrofx_testkit::noise_amp(frames, 4, 0.5)];
    let blocks_per_s = FS as usize / BLOCK;
    let modes = [
        (blocks_per_s, PhaseChoice::Analog),
        (3 * blocks_per_s, PhaseChoice::Linear4096),
        (5 * blocks_per_s, PhaseChoice::Linear16384),
        (7 * blocks_per_s, PhaseChoice::Analog),
        (9 * blocks_per_s, PhaseChoice::Natural),
        (11 * blocks_per_s, PhaseChoice::Linear4096),
    ];
    let (out, news) = play(&mut audio, &params, &telemetry, &x, &modes);

    // References: plugins that stay in natural and in analog phase; the bands' FIRs in
    // the engine.
    let natural_params = bands_params();
    let (mut natural, natural_telemetry, _d) = plugin(&natural_params, LatencyPolicy::InProcess);
    let (natural_out, natural_news) = play(&mut natural, &natural_params, &natural_telemetry, &x, &[]);
    assert!(natural_news.iter().all(|n| *n == LatencyNews::default()), "no switch, no news");
    let analog_params = bands_params();
    set(&analog_params.phase, PhaseChoice::Analog);
    let (mut analog, analog_telemetry, _a) = plugin(&analog_params, LatencyPolicy::InProcess);
    let (analog_out, _) = play(&mut analog, &analog_params, &analog_telemetry, &x, &[]);
    let bands = params.bands();
    let reference = |mode: PhaseChoice| -> Vec<Vec<f32>> {
        match mode.fir_mode() {
            None => natural_out.clone(),
            Some(linear::FirMode::Analog) => analog_out.clone(),
            Some(linear::FirMode::Linear { taps: n }) => {
                let taps = linear::design(&bands, FS, n, true);
                x.iter().map(|c| fir_output(&taps, FS, c)).collect()
            }
        }
    };

    // One report per switch, each after its request, none asking for a restart.
    let reports: Vec<(usize, u32)> = news.iter().enumerate().filter_map(|(k, n)| n.report.map(|l| (k, l))).collect();
    assert!(news.iter().all(|n| !n.restart), "in process, a phase switch needs no restart");
    let expected: Vec<u32> = modes.iter().map(|(_, m)| linear::latency_of(m.fir_mode(), FS) as u32).collect();
    assert_eq!(reports.iter().map(|r| r.1).collect::<Vec<_>>(), expected, "one report per switch: {reports:?}");
    for ((k, _), (asked, _)) in reports.iter().zip(&modes) {
        assert!(k > asked, "reported at block {k}, asked at {asked}");
    }
    println!("switches asked at blocks {:?}, reported at {:?}", modes.iter().map(|m| m.0).collect::<Vec<_>>(), reports);
    assert_eq!(telemetry.latency_samples.load(std::sync::atomic::Ordering::Relaxed), 2048, "the editor shows the latency");

    let fade = (CROSSFADE_MS * 1e-3 * FS) as usize;
    let mut mode = PhaseChoice::Natural;
    let mut from = 0;
    for (i, &(k, _)) in reports.iter().chain(std::iter::once(&(frames / BLOCK + 1, 0))).enumerate() {
        let at = (k * BLOCK).min(frames);
        let want = reference(mode);
        // Steady in this mode (from the end of the last fade up to this switch).
        for c in 0..2 {
            let err = max_abs_diff(&out[c][from..at], &want[c][from..at]);
            println!("{mode:?}, frames {from}..{at}, channel {c}: max error {err:e}");
            assert!(err <= 2e-5, "{mode:?} from frame {from} to {at}: error {err:e}");
        }
        let Some(&(_, next)) = modes.get(i) else { break };
        // The cross-fade: between the new output and the old one delayed by the growth.
        let new_ref = reference(next);
        let grow = linear::latency_of(next.fir_mode(), FS).saturating_sub(linear::latency_of(mode.fir_mode(), FS));
        for t in at..at + fade {
            for c in 0..2 {
                let old = if t >= grow { want[c][t - grow] } else { 0.0 };
                let (lo, hi) = (old.min(new_ref[c][t]), old.max(new_ref[c][t]));
                assert!(out[c][t] >= lo - 2e-5 && out[c][t] <= hi + 2e-5, "{mode:?} -> {next:?}: frame {t} leaves the cross-fade");
            }
        }
        mode = next;
        from = at + fade;
    }
}

/// Where the latency may change only in `activate` (CLAP), a phase change asks for a
/// restart, once, and the audio keeps the mode (and the latency) it has until then.
#[test]
fn without_in_process_switching_a_phase_change_asks_for_a_restart_and_keeps_its_latency() {
    let params = bands_params();
    let (mut audio, telemetry, _designer) = plugin(&params, LatencyPolicy::Restart);
    let frames = 2 * FS as usize;
    let x = vec![ferrofx_testkit::noise_amp(frames, 5, 0.5), ferrofx_testkit::noise_amp(frames, 6, 0.5)];
    let (out, news) = play(&mut audio, &params, &telemetry, &x, &[(20, PhaseChoice::Linear4096)]);
    let restarts: Vec<usize> = news.iter().enumerate().filter(|(_, n)| n.restart).map(|(k, _)| k).collect();
    assert_eq!(restarts, vec![20], "one restart request, at the change");
    assert!(news.iter().all(|n| n.report.is_none()), "no latency change while active");
    let natural_params = bands_params();
    let (mut natural, natural_telemetry, _d) = plugin(&natural_params, LatencyPolicy::Restart);
    let (natural_out, _) = play(&mut natural, &natural_params, &natural_telemetry, &x, &[]);
    for c in 0..2 {
        assert_eq!(out[c], natural_out[c], "natural phase until the restart");
    }
    // The restart: activated again, the plugin runs linear phase with its latency.
    drop(_designer);
    audio.deactivate();
    let _designer = activate(&mut audio, &params, LatencyPolicy::Restart);
    let (out, news) = play(&mut audio, &params, &telemetry, &x, &[]);
    assert!(news.iter().all(|n| *n == LatencyNews::default()));
    let taps = linear::design(&params.bands(), FS, 4096, true);
    for c in 0..2 {
        let err = max_abs_diff(&out[c], &fir_output(&taps, FS, &x[c]));
        assert!(err <= 2e-5, "after the restart, linear phase: {err:e}");
    }
}

/// A latency reserve (on any format, CLAP's included): the latency reported at activation
/// is the reserve's, and it never changes. Natural -> 4,096 taps -> natural -> 4,096 taps
/// switch inside processing with no report and no restart; every frame is its mode's
/// output delayed to the reserve (natural phase by 2,048 samples, the 4,096-tap FIR by
/// none), or during a cross-fade a mix of the two, which are aligned. 16,384 taps, beyond
/// the reserve, asks for a restart once and keeps the running mode. No allocation.
#[test]
#[allow(clippy::needless_range_loop)] // (channels index the output and two references alike)
fn a_latency_reserve_switches_the_phase_in_process_at_one_latency() {
    use ferrofx_plugin::control::params::ReserveChoice;
    let params = bands_params();
    set(&params.latency_reserve, ReserveChoice::Linear4096);
    let (telemetry, taps) = connect();
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    let setup = Setup { fs: FS, channels: 2, max_block: BLOCK };
    let (_designer, end) = Designer::start(params.clone(), setup);
    let config = AudioConfig { sample_rate_hz: FS as f32, channels: 2, max_block_frames: BLOCK, offload: false };
    let latency = audio.activate(&params, config, None, Some(LinearAudio::new(end, setup)), 0, LatencyPolicy::Fixed(2048));
    assert_eq!(latency, 2048, "natural phase reports the reserve");

    let frames = 14 * FS as usize;
    let x = vec![ferrofx_testkit::noise_amp(frames, 7, 0.5), ferrofx_testkit::noise_amp(frames, 8, 0.5)];
    let s = FS as usize / BLOCK;
    let modes = [(s, PhaseChoice::Linear4096), (4 * s, PhaseChoice::Natural), (7 * s, PhaseChoice::Linear4096), (10 * s, PhaseChoice::Linear16384)];
    let (out, news) = play(&mut audio, &params, &telemetry, &x, &modes);
    assert!(news.iter().all(|n| n.report.is_none()), "the latency never changes");
    let restarts: Vec<usize> = news.iter().enumerate().filter(|(_, n)| n.restart).map(|(k, _)| k).collect();
    assert_eq!(restarts, vec![10 * s], "one restart request, for the mode beyond the reserve");

    // References: natural phase (a plugin that stays in it) delayed by the reserve; the
    // bands' 4,096-tap FIR (its own 2,048 samples of delay).
    let natural_params = bands_params();
    let (mut natural, natural_telemetry, _d) = plugin(&natural_params, LatencyPolicy::InProcess);
    let (natural_out, _) = play(&mut natural, &natural_params, &natural_telemetry, &x, &[]);
    let delayed: Vec<Vec<f32>> = natural_out.iter().map(|c| std::iter::repeat_n(0.0, 2048).chain(c[..frames - 2048].iter().copied()).collect()).collect();
    let fir = linear::design(&params.bands(), FS, 4096, true);
    let linear_out: Vec<Vec<f32>> = x.iter().map(|c| fir_output(&fir, FS, c)).collect();
    let reference = |m: PhaseChoice| if m == PhaseChoice::Natural { &delayed } else { &linear_out };

    let tol = 2e-5;
    let steady = |from: usize, to: usize, m: PhaseChoice| {
        for c in 0..2 {
            let err = max_abs_diff(&out[c][from..to], &reference(m)[c][from..to]);
            assert!(err <= tol, "{m:?}, frames {from}..{to}: {err:e}");
        }
    };
    steady(0, s * BLOCK, PhaseChoice::Natural);
    let mut mode = PhaseChoice::Natural;
    for (i, &(k, next)) in modes.iter().enumerate() {
        let end = modes.get(i + 1).map_or(frames, |m| m.0 * BLOCK);
        let next = if next == PhaseChoice::Linear16384 { mode } else { next };
        // Between the request and one second before the next: each frame between the two
        // aligned outputs (the old one, the cross-fade, the new one).
        for t in k * BLOCK..end {
            for c in 0..2 {
                let (a, b) = (reference(mode)[c][t], reference(next)[c][t]);
                assert!(out[c][t] >= a.min(b) - tol && out[c][t] <= a.max(b) + tol, "{mode:?} -> {next:?}: frame {t} leaves the cross-fade");
            }
        }
        // The last second before the next request: the new mode alone.
        steady(end - FS as usize, end, next);
        mode = next;
    }
}

/// A phase switch with a dynamic band (its detector moving the gain every few frames, so
/// the band stage runs in pieces, the incoming stage's too): no panic and no allocation
/// while switching; before the switch the output is a natural-phase activation's, and
/// once the cross-fade is over it is what an activation in the new mode plays, sample for
/// sample within float rounding (the detector sees the same input in both).
#[test]
fn a_phase_switch_with_a_dynamic_band_ends_where_an_activation_in_the_new_mode_is() {
    let with_dynamics = |params: &Arc<FerroParams>| {
        let b = &params.bands[3];
        set(&b.enabled, true);
        set(&b.shape, ShapeChoice::Peak);
        set(&b.freq_hz, 3_000.0);
        set(&b.gain_db, 4.0);
        set(&b.q, 1.0);
        set(&b.dyn_on, true);
        set(&b.dyn_threshold_db, -40.0);
        set(&b.dyn_ratio, 4.0);
        set(&b.dyn_attack_ms, 1.0);
        set(&b.dyn_release_ms, 50.0);
        set(&b.dyn_range_db, 12.0);
    };
    let params = bands_params();
    with_dynamics(&params);
    let (mut audio, telemetry, _designer) = plugin(&params, LatencyPolicy::InProcess);
    let frames = 5 * FS as usize;
    let x = vec![ferrofx_testkit::noise_amp(frames, 9, 0.5), ferrofx_testkit::noise_amp(frames, 10, 0.5)];
    let at = FS as usize / BLOCK;
    let (out, news) = play(&mut audio, &params, &telemetry, &x, &[(at, PhaseChoice::Linear4096)]);
    let reported: Vec<usize> = news.iter().enumerate().filter(|(_, n)| n.report.is_some()).map(|(k, _)| k).collect();
    assert_eq!(reported.len(), 1, "one switch: {reported:?}");

    let reference = |mode: PhaseChoice| {
        let p = bands_params();
        with_dynamics(&p);
        set(&p.phase, mode);
        let (mut a, t, d) = plugin(&p, LatencyPolicy::InProcess);
        let (o, _) = play(&mut a, &p, &t, &x, &[]);
        drop(d);
        o
    };
    let natural = reference(PhaseChoice::Natural);
    let linear = reference(PhaseChoice::Linear4096);
    for c in 0..2 {
        assert_eq!(out[c][..at * BLOCK], natural[c][..at * BLOCK], "channel {c}: natural phase before the switch");
        // The last two seconds: well after the cross-fade.
        let from = frames - 2 * FS as usize;
        let err = max_abs_diff(&out[c][from..], &linear[c][from..]);
        println!("channel {c}: after the switch, max difference from a linear-phase activation {err:e}");
        assert!(err <= 1e-4, "channel {c}: after the switch {err:e}");
    }
}

/// Analog phase in the plugin: the impulse response of four bands (a bell, a low shelf,
/// a 24 dB/oct high cut and a bell at 15 kHz, analog-matched, the default) at 44.1, 48
/// and 96 kHz, behind the latency reported at activation, follows the product of the
/// bands' analog prototypes within 0.1 dB and 5 degrees up to 0.9 of Nyquist (where it is
/// within 60 dB of its peak); natural phase, for contrast, departs from their phase.
#[test]
fn analog_phase_follows_the_analog_prototypes_behind_its_latency() {
    for fs in [44_100.0, 48_000.0, 96_000.0] {
        let params = bands_params();
        let b = &params.bands[3];
        set(&b.enabled, true);
        set(&b.shape, ShapeChoice::Peak);
        set(&b.freq_hz, 15_000.0);
        set(&b.gain_db, 6.0);
        set(&b.q, 2.0);
        let mut worst_natural = 0.0f64;
        for mode in [PhaseChoice::Analog, PhaseChoice::Natural] {
            set(&params.phase, mode);
            let (telemetry, taps) = connect();
            let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
            let _designer = activate_at(&mut audio, &params, LatencyPolicy::InProcess, fs);
            let latency = linear::latency_of(mode.fir_mode(), fs);
            let frames = 1 << 15;
            let mut h = [vec![0.0f32; frames], vec![0.0f32; frames]];
            h[0][0] = 1.0;
            h[1][0] = 1.0;
            for start in (0..frames).step_by(BLOCK) {
                let (l, r) = h.split_at_mut(1);
                audio.process(&params, &telemetry, &mut [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]], None, BLOCK);
            }
            let bands: Vec<_> = params.bands().iter().map(|b| b.clamped(fs)).collect();
            let target = |f: f64| bands.iter().map(|b| b.analog_response(f)).product::<ferrofx::design::natural::Complex64>();
            let points: Vec<f64> = (0..400).map(|i| 20.0 * (0.45 * fs / 20.0).powf(i as f64 / 399.0)).collect();
            let peak = points.iter().map(|&f| target(f).norm()).fold(0.0, f64::max);
            let (mut db, mut deg) = (0.0f64, 0.0f64);
            let taps: Vec<f64> = h[0].iter().map(|&v| f64::from(v)).collect();
            for &f in &points {
                let t = target(f);
                if t.norm() < 1e-3 * peak {
                    continue;
                }
                let w = 2.0 * std::f64::consts::PI * f / fs;
                let got = ferrofx::design::fir_response(&taps, f, fs);
                let r = got / (t * ferrofx::design::natural::Complex64::from_polar(1.0, -w * latency as f64));
                db = db.max((20.0 * r.norm().log10()).abs());
                deg = deg.max(r.arg().to_degrees().abs());
            }
            println!("{fs} Hz, {mode:?} (latency {latency}): worst {db:.4} dB, {deg:.3} degrees from the analog prototypes");
            if mode == PhaseChoice::Analog {
                assert!(db <= 0.1 && deg <= 5.0, "{fs} Hz: analog phase {db:.3} dB, {deg:.2} degrees off");
            } else {
                worst_natural = deg;
            }
        }
        assert!(worst_natural > 5.0, "{fs} Hz: natural phase is {worst_natural:.2} degrees off; the test would not see a difference");
    }
}
