//! The plugin's GPU path takes new coefficients without a new offload: a chain of the
//! running chain's shape (a moved cutoff) reaches the running offload's worker as its
//! design alone, and the sound follows it; a chain of another shape, or of the same
//! shape but a float32 form the GPU declines, builds a new offload. Runs on whatever GPU backend opens (lavapipe's wgpu in CI, where
//! `FERROFX_REQUIRE_GPU=1` makes a missing adapter a failure).

use std::sync::Arc;

use ferrofx::chain::{Butterworth, Chain, Fir};
use ferrofx::run::realtime::Policy;
use ferrofx_plugin::audio::state::{AudioState, LatencyPolicy};
use ferrofx_plugin::control::chain::{AudioConfig, Handovers};
use ferrofx_plugin::control::params::{BackendChoice, FerroParams};
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::ChainSlot;
use ferrofx_plugin::shared::telemetry::Telemetry;
use nice_assert_no_alloc::{assert_no_alloc, violation_count};
use nice_plug::prelude::*;

const FS: f64 = 48_000.0;
const BLOCK: usize = 512;

/// A lowpass at `cutoff_hz` (4 sections, or 6 for `order` 12) after a short FIR.
fn chain(cutoff_hz: f64, order: usize) -> Chain {
    Fir::lowpass(31, 20_000.0) | Butterworth::lowpass(cutoff_hz, order)
}

/// `blocks` blocks of a 4 kHz sine (amplitude 0.5) through the plugin from frame
/// `start`, each block paced (a slow device such as lavapipe still answers most jobs),
/// each call inside the no-allocation check (a retune arriving there must not free);
/// returns the RMS of the left output's last quarter.
fn play(audio: &mut AudioState, params: &FerroParams, telemetry: &Telemetry, start: usize, blocks: usize) -> f64 {
    let mut tail = Vec::new();
    for k in 0..blocks {
        let n0 = start + k * BLOCK;
        let mut l: Vec<f32> = (n0..n0 + BLOCK).map(|i| 0.5 * (2.0 * std::f64::consts::PI * 4000.0 * i as f64 / FS).sin() as f32).collect();
        let mut r = l.clone();
        let before = violation_count();
        assert_no_alloc(|| audio.process(params, telemetry, &mut [&mut l[..], &mut r[..]], None, BLOCK));
        assert_eq!(violation_count(), before, "the audio thread allocated or freed");
        if k >= blocks * 3 / 4 {
            tail.extend_from_slice(&l);
        }
        std::thread::sleep(std::time::Duration::from_millis(4));
    }
    (tail.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / tail.len() as f64).sqrt()
}

/// The plugin's audio state at 48 kHz stereo, blocks of 512, on the GPU backend with
/// `first` installed; `None` (printed) where no GPU worker starts, unless
/// `FERROFX_REQUIRE_GPU=1`.
fn gpu_plugin(first: Chain) -> Option<(Arc<FerroParams>, Telemetry, AudioState)> {
    let params = Arc::new(FerroParams::default());
    // SAFETY: the parameter lives in `params`, which outlives the call; no other thread
    // reads it yet (the audio state is built below).
    unsafe { params.backend.as_ptr()._internal_set_normalized_value(params.backend.preview_normalized(BackendChoice::Gpu)) };
    let (telemetry, taps) = connect();
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    params.chain.install(first);
    let config = AudioConfig { sample_rate_hz: FS as f32, channels: 2, max_block_frames: BLOCK, offload: true };
    audio.activate(&params, config, Some(Policy::Gpu), None, BLOCK as u32, LatencyPolicy::Restart);
    let status = audio.chain().gpu_status();
    if !status.starts_with("GPU worker") {
        assert!(std::env::var("FERROFX_REQUIRE_GPU").as_deref() != Ok("1"), "FERROFX_REQUIRE_GPU=1 but no GPU worker: {status}");
        println!("SKIPPED (no GPU worker): {status}");
        return None;
    }
    println!("{status}");
    Some((params, telemetry, audio))
}

#[test]
fn a_moved_cutoff_retunes_the_running_offload_and_a_new_shape_builds_one() {
    let Some((params, telemetry, mut audio)) = gpu_plugin(chain(1000.0, 8)) else { return };
    let before = audio.chain().handovers();
    // 4 kHz two octaves above an 8th-order 1 kHz lowpass: about -96 dB.
    let low = play(&mut audio, &params, &telemetry, 0, 40);
    assert!(low < 0.5 / 2f64.sqrt() * 1e-3, "the 1 kHz lowpass passes {low:.2e} RMS of 4 kHz");

    // The same shape, the cutoff moved to 16 kHz: a retune, no new offload.
    params.chain.install(chain(16_000.0, 8));
    let after = audio.chain().handovers();
    assert_eq!(after, Handovers { retunes: before.retunes + 1, ..before }, "a moved cutoff must travel as a retune");
    let high = play(&mut audio, &params, &telemetry, 40 * BLOCK, 40);
    let sine_rms = 0.5 / 2f64.sqrt();
    assert!((high / sine_rms - 1.0).abs() < 0.02, "after the retune 4 kHz passes: {high:.4} RMS against {sine_rms:.4}");
    audio.chain().collect_returned();
    assert_eq!(audio.chain().handovers().refused, 0, "the running offload took the design");

    // Another shape (12th order: six sections): a whole new build.
    params.chain.install(chain(1000.0, 12));
    let shaped = audio.chain().handovers();
    assert_eq!(shaped, Handovers { builds: after.builds + 1, ..after }, "a new shape builds a new offload");
    let again = play(&mut audio, &params, &telemetry, 80 * BLOCK, 40);
    assert!(again < 0.5 / 2f64.sqrt() * 1e-3, "the new 1 kHz lowpass passes {again:.2e} RMS of 4 kHz");
    println!("4 kHz RMS: {low:.2e} (1 kHz lowpass), {high:.4} (retuned to 16 kHz), {again:.2e} (rebuilt, 12th order)");
    audio.deactivate();
}

/// A bandstop of 12th order (six sections) after the short FIR.
fn bandstop(low_hz: f64, high_hz: f64) -> Chain {
    Fir::lowpass(31, 20_000.0) | ferrofx::chain::Chebyshev1::bandstop(low_hz, high_hz, 12, 1.12)
}

#[test]
fn a_same_shape_design_the_gpu_declines_builds_anew_on_the_cpu_and_back() {
    let Some((params, telemetry, mut audio)) = gpu_plugin(bandstop(5000.0, 9000.0)) else { return };
    // 4 kHz outside the 5-9 kHz stop band passes.
    let sine_rms = 0.5 / 2f64.sqrt();
    let pass = play(&mut audio, &params, &telemetry, 0, 20);
    assert!((pass / sine_rms - 1.0).abs() < 0.15, "4 kHz outside the stop band: {pass:.4} RMS");
    // The same shape with a stop band whose float32 form the GPU declines (the shared
    // reference case 023). On a device with float64 (lavapipe has it) the GPU runs it in
    // float64: a retune in place, like any other. Without (FERROFX_WGPU_FLOAT64=0, Metal):
    // not a retune, a whole build whose blocks run on the CPU.
    let before = audio.chain().handovers();
    params.chain.install(bandstop(715.08, 2461.27));
    let declined = audio.chain().handovers();
    let status = audio.chain().gpu_status();
    if declined.retunes == before.retunes + 1 {
        assert_eq!(declined, Handovers { retunes: before.retunes + 1, ..before }, "taken in float64 in place");
        assert!(status.starts_with("GPU worker"), "{status}");
        // 4 kHz lies outside 715-2461 Hz: it passes, computed by the worker in float64.
        let mid = play(&mut audio, &params, &telemetry, 20 * BLOCK, 20);
        assert!((mid / sine_rms - 1.0).abs() < 0.15, "4 kHz outside the float64 stop band: {mid:.4} RMS");
        params.chain.install(bandstop(8000.0, 16_000.0));
        assert_eq!(audio.chain().handovers(), Handovers { retunes: declined.retunes + 1, ..declined }, "back to float32 in place");
        assert!(audio.chain().gpu_status().starts_with("GPU worker"), "{}", audio.chain().gpu_status());
        let again = play(&mut audio, &params, &telemetry, 40 * BLOCK, 20);
        assert!((again / sine_rms - 1.0).abs() < 0.15, "4 kHz outside the new stop band: {again:.4} RMS");
        audio.deactivate();
        return;
    }
    assert_eq!(declined, Handovers { builds: before.builds + 1, ..before }, "a declined design must not travel as a retune");
    assert!(status.contains("declined") && status.contains("blocks run on the CPU"), "{status}");
    // Back to a design the GPU takes: a whole build on the GPU again (the CPU-only
    // offload had no worker to retune).
    params.chain.install(bandstop(8000.0, 16_000.0));
    assert_eq!(audio.chain().handovers(), Handovers { builds: declined.builds + 1, ..declined });
    assert!(audio.chain().gpu_status().starts_with("GPU worker"), "{}", audio.chain().gpu_status());
    // 4 kHz, outside 8-16 kHz, passes; the output is the new chain's.
    let again = play(&mut audio, &params, &telemetry, 20 * BLOCK, 20);
    assert!((again / sine_rms - 1.0).abs() < 0.15, "4 kHz outside the new stop band: {again:.4} RMS");
    audio.deactivate();
}
