//! Buffers that already live on the device ([`ferrofx::gpu::wgpu::WgpuResident`]), on a
//! real adapter (lavapipe in CI): one call against the CPU engine (float64 designs, the
//! reference tolerance), any split of the stream into calls against one call **bit for
//! bit** (seeded sweeps of chains, rows, unit sizes and cut points, in place and out of
//! place), the resident path against the host round trip of the same kernels, long FIRs
//! (FFT-partitioned: within the tolerance), reset, and the errors a caller can make.
//!
//! Without an adapter these tests print why and return, unless `FERROFX_REQUIRE_GPU=1`.
#![cfg(feature = "wgpu")]

use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, Chebyshev2, Elliptic, Fir};
use ferrofx::engine::EngineOptions;
use ferrofx::gpu::wgpu::{WgpuContext, WgpuResident, WgpuStream};
use ferrofx::gpu::GpuError;
use ferrofx::DesignedChain;
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx_testkit::gpu::upload;
use ferrofx_testkit::Rng;

const TIME_TOLERANCE: f64 = 1e-4;

fn context() -> Option<&'static WgpuContext> {
    ferrofx_testkit::gpu::wgpu_context()
}

fn run_split(ctx: &WgpuContext, resident: &mut WgpuResident, input: &[Vec<f32>], cuts: &[usize], in_place: bool) -> Vec<Vec<f32>> {
    ferrofx_testkit::gpu::resident_run(ctx, resident, input, cuts, in_place)
}

fn assert_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    for (r, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.len(), y.len(), "{what}: row {r} length");
        if let Some(n) = (0..x.len()).find(|&n| x[n].to_bits() != y[n].to_bits()) {
            panic!("{what}: row {r} differs first at frame {n}: {} against {}", x[n], y[n]);
        }
    }
}

/// A random IIR chain (a few stages of every IIR kind) with, sometimes, a direct FIR.
fn random_chain(rng: &mut Rng, fs: f64, with_fir: bool) -> Chain {
    let f = |rng: &mut Rng, lo: f64, hi: f64| lo * (hi / lo).powf(rng.unit());
    let mut chain = Chain::from(Butterworth::highpass(f(rng, 10.0, 200.0), 1 + rng.below(4)));
    for _ in 0..1 + rng.below(3) {
        let nyq = fs / 2.0;
        chain = match rng.below(5) {
            0 => chain | Butterworth::lowpass(f(rng, 500.0, 0.4 * nyq), 1 + rng.below(8)),
            1 => chain | Chebyshev1::lowpass(f(rng, 500.0, 0.4 * nyq), 2 + rng.below(5), 0.5),
            2 => chain | Chebyshev2::highpass(f(rng, 20.0, 400.0), 2 + rng.below(5), 60.0),
            3 => chain | Elliptic::lowpass(f(rng, 1000.0, 0.4 * nyq), 2 + rng.below(5), 0.1, 70.0),
            _ => chain | Biquad::peaking(f(rng, 40.0, 0.4 * nyq), 0.5 + 3.0 * rng.unit(), -12.0 + 24.0 * rng.unit()),
        };
    }
    if with_fir {
        chain = chain | Fir::lowpass(2 * (8 + rng.below(200)) + 1, f(rng, 1000.0, 0.4 * fs / 2.0));
    }
    chain
}

/// Random cut points in `0..frames`, sorted, distinct, with short and long pieces.
fn random_cuts(rng: &mut Rng, frames: usize, unit: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut at = 0;
    loop {
        at += match rng.below(4) {
            0 => 1 + rng.below(3),
            1 => 1 + rng.below(unit),
            2 => unit,
            _ => 1 + rng.below(3 * unit),
        };
        if at >= frames {
            return cuts;
        }
        cuts.push(at);
    }
}

/// Seeded sweep: chains, rows, units (the sequential path and the scan) and signal
/// lengths. One call is within the tolerance of the CPU engine; every split into calls,
/// out of place and in place, is bit for bit the one call.
#[test]
fn a_stream_of_calls_equals_one_call_bit_for_bit_and_the_cpu_within_tolerance() {
    let Some(ctx) = context() else { return };
    let mut rng = Rng::new(4301);
    for case in 0..8 {
        let fs = *rng.pick(&[44_100.0, 48_000.0, 96_000.0]);
        let chain = random_chain(&mut rng, fs, case % 2 == 1);
        let designed = chain.design(fs).unwrap();
        let rows = *rng.pick(&[1usize, 2, 3, 6]);
        let unit = *rng.pick(&[64usize, 333, 2048, 8192]);
        let frames = 4000 + rng.below(20_000);
        let input = ferrofx_testkit::noise_channels(rows, frames, 100 + case, 1.0);
        let mut resident = match WgpuResident::new(ctx, &designed, rows, unit) {
            Ok(r) => r,
            Err(GpuError::Precision { .. }) => {
                println!("case {case}: declined for float32 precision (as the host path is)");
                continue;
            }
            Err(e) => panic!("case {case}: {e}"),
        };
        let one = run_split(ctx, &mut resident, &input, &[], false);
        let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
        let e = rel_error(&one, &cpu);
        println!("case {case}: {rows} rows, unit {unit}, {frames} frames, {} stages: {e:.2e} of the peak from the CPU", designed.stages.len());
        assert!(e <= TIME_TOLERANCE, "case {case}: {e:.3e} from the CPU engine");
        for (split, in_place) in [(0, false), (1, true), (2, false)] {
            resident.reset();
            let cuts = random_cuts(&mut rng, frames, unit);
            let y = run_split(ctx, &mut resident, &input, &cuts, in_place);
            assert_bits(&y, &one, &format!("case {case}, split {split} ({} calls, in place {in_place})", cuts.len() + 1));
        }
    }
}

/// The resident path runs the host path's kernels: over whole units it equals
/// `WgpuStream` (upload, kernels, read-back per block) bit for bit.
#[test]
fn whole_units_equal_the_host_round_trip_bit_for_bit() {
    let Some(ctx) = context() else { return };
    let chain = Butterworth::highpass(20.0, 4) | Elliptic::lowpass(9000.0, 6, 0.1, 80.0) | Fir::lowpass(63, 12_000.0);
    let designed: DesignedChain = chain.design(48_000.0).unwrap();
    for unit in [256usize, 4096] {
        let frames = 5 * unit;
        let input = ferrofx_testkit::noise_channels(2, frames, 9, 1.0);
        let mut resident = WgpuResident::new(ctx, &designed, 2, unit).unwrap();
        let mut cuts = vec![unit / 3];
        cuts.push(2 * unit + 5);
        let y = run_split(ctx, &mut resident, &input, &cuts, false);
        let mut host = input.clone();
        let mut stream = WgpuStream::new(ctx, &designed, 2, unit).unwrap();
        stream.process(&mut host.iter_mut().map(|c| &mut c[..]).collect::<Vec<_>>()).unwrap();
        assert_bits(&y, &host, &format!("unit {unit}"));
    }
}

/// FIRs longer than the direct kernel's limit run FFT-partitioned: one call and split
/// calls are within the tolerance of the CPU engine (bits are not promised there).
#[test]
fn long_firs_are_within_tolerance_in_one_call_and_split() {
    let Some(ctx) = context() else { return };
    let taps: Vec<f64> = (0..3000).map(|k| ((k as f64) * 0.37).sin() * (-(k as f64) / 700.0).exp() * 0.05).collect();
    let chain = Butterworth::highpass(30.0, 2) | Fir::coefficients(taps);
    let designed = chain.design(48_000.0).unwrap();
    let input = ferrofx_testkit::noise_channels(2, 30_000, 5, 1.0);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    let mut resident = WgpuResident::new(ctx, &designed, 2, 8192).unwrap();
    let one = run_split(ctx, &mut resident, &input, &[], false);
    assert!(rel_error(&one, &cpu) <= TIME_TOLERANCE, "one call: {:.3e}", rel_error(&one, &cpu));
    resident.reset();
    let split = run_split(ctx, &mut resident, &input, &[1, 5000, 5001, 17_000], true);
    assert!(rel_error(&split, &cpu) <= TIME_TOLERANCE, "split: {:.3e}", rel_error(&split, &cpu));
}

/// A reset starts a new stream from silence: after one, the output equals a fresh chain's.
#[test]
fn reset_returns_to_silence() {
    let Some(ctx) = context() else { return };
    let designed = (Butterworth::lowpass(300.0, 4) | Biquad::peaking(1000.0, 1.0, 6.0)).design(48_000.0).unwrap();
    let input = ferrofx_testkit::noise_channels(3, 7000, 11, 1.0);
    let mut fresh = WgpuResident::new(ctx, &designed, 3, 1024).unwrap();
    let want = run_split(ctx, &mut fresh, &input, &[2500], false);
    let mut used = WgpuResident::new(ctx, &designed, 3, 1024).unwrap();
    run_split(ctx, &mut used, &input, &[700], false);
    used.reset();
    let got = run_split(ctx, &mut used, &input, &[2500], false);
    assert_bits(&got, &want, "after a reset");
}

/// A caller's mistakes are errors naming the buffer and what is wrong, never a panic,
/// and the stream goes on afterwards as if the call had not been made.
#[test]
fn bad_buffers_are_refused_by_name() {
    let Some(ctx) = context() else { return };
    let designed = Chain::from(Butterworth::lowpass(1000.0, 2)).design(48_000.0).unwrap();
    assert!(matches!(WgpuResident::new(ctx, &designed, 0, 1024), Err(GpuError::Job { .. })));
    let input = ferrofx_testkit::noise_channels(2, 1000, 3, 1.0);
    let mut resident = WgpuResident::new(ctx, &designed, 2, 512).unwrap();
    let want = run_split(ctx, &mut resident, &input, &[300], false);
    resident.reset();
    let good = upload(ctx, &input);
    let small = upload(ctx, &[vec![0.0; 10], vec![0.0; 10]]);
    let unreadable = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("map only"),
        size: 8000,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let why = |r: Result<_, GpuError>| match r {
        Err(GpuError::Job { why }) => why,
        other => panic!("expected a job error, got {other:?}"),
    };
    let w = why(resident.process(&small, &good, 1000));
    assert!(w.contains("input buffer holds 80 bytes") && w.contains("need 8000"), "{w}");
    let w = why(resident.process(&good, &small, 1000));
    assert!(w.contains("output buffer"), "{w}");
    let w = why(resident.process(&unreadable, &good, 1000));
    assert!(w.contains("input buffer lacks the usage") && w.contains("COPY_SRC"), "{w}");
    let got = run_split(ctx, &mut resident, &input, &[300], false);
    assert_bits(&got, &want, "after refused calls");
}

/// The fused cascade scan (opt-in) on device memory: every call runs with the unit's
/// chunking, so a stream of calls cut anywhere (in place) still equals one call bit for
/// bit, and one call meets the CPU engine's tolerance; the chain reports its cascades as
/// fused.
#[test]
fn the_fused_scan_keeps_a_stream_of_calls_equal_to_one_call() {
    use ferrofx::gpu::fused::FUSED_MIN_FRAMES;
    let Some(ctx) = context() else { return };
    let mut rng = Rng::new(4344);
    let designed = (Chain::from(Butterworth::highpass(30.0, 4)) | Chebyshev1::lowpass(9000.0, 6, 0.5) | Fir::lowpass(31, 15_000.0) | Biquad::peaking(1200.0, 1.0, 4.0))
        .design(48_000.0)
        .unwrap();
    for (rows, unit, group_max) in [(2usize, FUSED_MIN_FRAMES + 100, 8usize), (3, 2 * FUSED_MIN_FRAMES, 3)] {
        let frames = 3 * unit + 777;
        let input = ferrofx_testkit::noise_channels(rows, frames, 88 + rows as u64, 1.0);
        let mut resident = WgpuResident::new(ctx, &designed, rows, unit).unwrap();
        resident.set_fused(group_max).unwrap();
        assert_eq!(resident.fused_status(), (group_max, vec![true, true]), "both cascades run fused");
        let one = run_split(ctx, &mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("fused, groups of {group_max}: {rows} rows, unit {unit}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "groups of {group_max}: {e:.3e}");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(ctx, &mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("groups of {group_max}, {} calls", cuts.len() + 1));
    }
}

/// The fused scan over a seeded sweep: random chains (every IIR kind, sometimes a FIR),
/// sample rates, rows, units past the fused threshold and group sizes. One call is within
/// the tolerance of the CPU engine, a stream cut anywhere is bit for bit the one call;
/// most cascades run fused (the others are the ones its estimate declines).
#[test]
fn the_fused_scan_over_a_seeded_sweep_of_chains() {
    use ferrofx::gpu::fused::FUSED_MIN_FRAMES;
    let Some(ctx) = context() else { return };
    let mut rng = Rng::new(4345);
    let (mut fused, mut cascades) = (0, 0);
    for case in 0..6u64 {
        let fs = *rng.pick(&[44_100.0, 48_000.0, 96_000.0]);
        let designed = random_chain(&mut rng, fs, case % 2 == 1).design(fs).unwrap();
        let rows = 1 + rng.below(3);
        let unit = FUSED_MIN_FRAMES * (1 + rng.below(2)) + rng.below(1000);
        let frames = 2 * unit + rng.below(unit);
        let group_max = 1 + rng.below(8);
        let input = ferrofx_testkit::noise_channels(rows, frames, 300 + case, 1.0);
        let mut resident = match WgpuResident::new(ctx, &designed, rows, unit) {
            Ok(r) => r,
            Err(e @ (GpuError::Precision { .. } | GpuError::Unsupported { .. })) => {
                println!("case {case}: declined ({e})");
                continue;
            }
            Err(e) => panic!("case {case}: {e}"),
        };
        resident.set_fused(group_max).unwrap();
        let (_, status) = resident.fused_status();
        cascades += status.len();
        fused += status.iter().filter(|f| **f).count();
        let one = run_split(ctx, &mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("case {case}: {rows} rows, unit {unit}, groups of {group_max}, fused {status:?}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "case {case}: {e:.3e} from the CPU engine");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(ctx, &mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("case {case} ({} calls)", cuts.len() + 1));
    }
    println!("{fused} of {cascades} cascades ran fused");
    assert!(fused * 4 >= cascades * 3, "only {fused} of {cascades} cascades ran fused");
}

/// The pipeline shader (a context with `with_pipeline_frames`): resident chains whose
/// unit runs piped (cascades around a FIR) keep a stream of calls cut anywhere equal to
/// one call bit for bit, and one call within the CPU engine's tolerance.
#[test]
fn the_pipeline_shader_keeps_a_stream_of_calls_equal_to_one_call() {
    let Some(ctx) = context() else { return };
    let tuned = ctx.clone().with_pipeline_frames(2048);
    let mut rng = Rng::new(4351);
    let designed = (Chain::from(Butterworth::highpass(30.0, 4)) | Biquad::peaking(1200.0, 1.0, 4.0) | Fir::lowpass(31, 15_000.0) | Chebyshev1::lowpass(9000.0, 8, 0.5))
        .design(48_000.0)
        .unwrap();
    for (rows, unit) in [(2usize, 1024usize), (3, 2048), (1, 64)] {
        let frames = 3 * unit + 77;
        let input = ferrofx_testkit::noise_channels(rows, frames, 90 + rows as u64, 1.0);
        let mut resident = WgpuResident::new(&tuned, &designed, rows, unit).unwrap();
        let one = run_split(&tuned, &mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("pipeline shader: {rows} rows, unit {unit}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "unit {unit}: {e:.3e}");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(&tuned, &mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("piped, unit {unit}, {} calls", cuts.len() + 1));
    }
}
