//! Every GPU backend of the core's list (`ferrofx::backends::GPU_BACKENDS`) through the
//! same cases, by the device-neutral `Backend` trait only: every SciPy reference case at
//! block sizes 64, 4096 and 65536 (exact within the tolerance; declined for precision only where the backend has no float64),
//! FIRs long enough for the FFT path, the offload worker's jobs against the CPU, and new
//! coefficients taken by a running offload. A backend added to the list is tested here
//! with no change; `gpu_wgpu.rs` and `gpu_cuda.rs` keep what only their backend has.
//!
//! A backend that does not open (no adapter, no NVIDIA driver) is skipped with its
//! reason. `FERROFX_REQUIRE_GPU=1` (scripts/test.sh, with lavapipe installed) requires
//! wgpu to open; `FERROFX_REQUIRE_CUDA=1` (the device check) requires CUDA to.

use std::sync::{Arc, OnceLock};

use ferrofx::backends::{GpuTuning, GPU_BACKENDS};
use ferrofx::chain::{Butterworth, Fir};
use ferrofx::engine::EngineOptions;
use ferrofx::run::backend::Backend;
use ferrofx::run::offload::{Offload, OFFLOAD_ENGINE_OPTIONS};
use ferrofx::run::backend::RunError;
use ferrofx::DesignedChain;
use ferrofx_testkit::engine::{chain_of, mixed_chain, one_block_late, rel_error, run_engine};
use ferrofx_testkit::reference::load_cases;
use ferrofx_testkit::retune::{retunable_chain, retuned_offload};

const TIME_TOLERANCE: f64 = 1e-4;

/// Every backend of the list that opens (each opened once per test binary); those that
/// do not are printed with the reason, or fail the run where the environment requires them.
fn backends() -> &'static [Arc<dyn Backend>] {
    static OPENED: OnceLock<Vec<Arc<dyn Backend>>> = OnceLock::new();
    OPENED.get_or_init(|| {
        let mut opened = Vec::new();
        for entry in GPU_BACKENDS {
            match (entry.open)(&GpuTuning::default()) {
                Ok(b) => {
                    println!("{}: {}", entry.name, b.describe());
                    opened.push(b);
                }
                Err(why) => {
                    let required = match entry.name {
                        "wgpu" => std::env::var("FERROFX_REQUIRE_GPU").as_deref() == Ok("1"),
                        "cuda" => std::env::var("FERROFX_REQUIRE_CUDA").as_deref() == Ok("1"),
                        _ => false,
                    };
                    assert!(!required, "{} is required here but does not open: {why}", entry.name);
                    println!("SKIPPED {}: {why}", entry.name);
                }
            }
        }
        opened
    })
}

/// `input` through the backend's prepared chain in blocks of `block` frames.
fn run_prepared(b: &dyn Backend, designed: &DesignedChain, input: &[Vec<f32>], block: usize) -> Vec<Vec<f32>> {
    let mut prepared = b.prepare(designed, input.len(), block).unwrap();
    let mut out = input.to_vec();
    let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[..]).collect();
    prepared.process(&mut slices).unwrap();
    out
}

#[test]
fn every_reference_case_meets_the_tolerances_on_every_gpu_backend() {
    let cases = load_cases();
    for b in backends() {
        let mut failures = Vec::new();
        let mut declined = Vec::new();
        let (mut worst, mut worst_low) = (0.0f64, 0.0f64);
        for case in &cases {
            let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
            // Exact, or a clear refusal: a cascade the float32 form cannot run within the
            // tolerance is declined when the chain is prepared (the CPU then runs it).
            // A backend with float64 (CUDA; wgpu with SHADER_F64) runs those cascades in
            // float64 instead: it declines none (the "no reference case declined").
            if let Err(e) = b.prepare(&designed, case.input.len(), 64) {
                let text = e.to_string();
                assert!(matches!(e, RunError::Declined { .. }) && text.contains("in float32"), "{} on {}: {text}", case.id, b.name());
                assert!(text.contains("no float64 form"), "{} on {}, which has float64, declined: {text}", case.id, b.name());
                declined.push(case.id.clone());
                continue;
            }
            for block in [64usize, 4096, 65536] {
                let y = run_prepared(b.as_ref(), &designed, &case.input, block);
                let e = rel_error(&y, &case.expected);
                worst = worst.max(e);
                if case.is_lowfreq() {
                    worst_low = worst_low.max(e);
                }
                if e.is_nan() || e > TIME_TOLERANCE {
                    failures.push(format!("{} block {block}: {e:.3e}", case.id));
                }
            }
        }
        println!("{} reference: worst {worst:.2e} (lowfreq {worst_low:.2e}), tolerance {TIME_TOLERANCE:.0e}; declined {declined:?}", b.name());
        assert!(declined.len() * 10 <= cases.len(), "{} declines too many reference cases: {declined:?}", b.name());
        assert!(failures.is_empty(), "{}: {} failures:\n{}", b.name(), failures.len(), failures.join("\n"));
    }
}

#[test]
fn long_firs_take_the_fft_path_and_match_the_cpu() {
    // A 6 s decaying-noise "reverb" of 262,144 taps and a 700-tap FIR around an IIR, and
    // a 20,000-tap FIR before a high-pass.
    let mut r = ferrofx_testkit::Rng::new(12345);
    let reverb: Vec<f64> = (0..262_144).map(|k| (r.unit() - 0.5) * (-(k as f64) / 40_000.0).exp() * 0.01).collect();
    let short: Vec<f64> = (0..700).map(|k| ((k as f64) * 0.05).cos() / 700.0).collect();
    let medium: Vec<f64> = (0..20_000).map(|i| ((i * 7919) % 1000) as f64 / 1e5 * (-(i as f64) / 5000.0).exp()).collect();
    let chains = [
        ("262,144-tap FIR", (Fir::coefficients(short) | Butterworth::lowpass(8000.0, 4) | Fir::coefficients(reverb)).design(44_100.0).unwrap(), &[65536usize, 4096, 777][..]),
        ("20,000-tap FIR", (Fir::coefficients(medium) | Butterworth::highpass(40.0, 2)).design(48_000.0).unwrap(), &[8192, 512][..]),
    ];
    let input = ferrofx_testkit::noise_channels(2, 150_000, 5, 1.0);
    for b in backends() {
        for (what, designed, blocks) in &chains {
            let cpu = run_engine(designed, &input, 4096, EngineOptions::default());
            for &block in *blocks {
                let y = run_prepared(b.as_ref(), designed, &input, block);
                let e = rel_error(&y, &cpu);
                println!("{}: {what}, block {block}: {e:.2e} vs the CPU engine", b.name());
                assert!(e <= TIME_TOLERANCE, "{} {what} block {block}: {e:.3e}", b.name());
            }
        }
    }
}

#[test]
fn the_offload_worker_runs_jobs_on_every_gpu_backend_and_matches_the_cpu() {
    const BLOCK: usize = 512;
    let designed = mixed_chain(48_000.0, 63);
    let frames = 48_000 / BLOCK * BLOCK;
    let input = ferrofx_testkit::noise_channels(2, frames, 9, 1.0);
    let cpu = run_engine(&designed, &input, BLOCK, OFFLOAD_ENGINE_OPTIONS);
    for b in backends() {
        let exec = b.executor(&designed, 2, BLOCK).unwrap();
        let mut off = Offload::new(&designed, 2, BLOCK, exec).unwrap();
        let mut out = input.clone();
        for start in (0..frames).step_by(BLOCK) {
            // The test's audio clock waits (up to 2 s) for the job in flight, so a slow
            // adapter (lavapipe on a loaded machine) still answers: this checks the
            // worker's results; late jobs are `gpu_wgpu.rs`'s and the offload tests'.
            let t = std::time::Instant::now();
            while off.job_in_flight() && !off.poll_ready() && !off.worker_lost() && t.elapsed() < std::time::Duration::from_secs(2) {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            let (l, r) = out.split_at_mut(1);
            let mut bufs = [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]];
            off.process(&mut bufs).unwrap();
        }
        let e = rel_error(&out, &one_block_late(cpu.clone(), BLOCK));
        println!("offload on {}: {:?}, error {e:.2e}", b.name(), off.stats());
        assert!(e <= TIME_TOLERANCE, "{}: {e:.3e}", b.name());
        assert!(!off.worker_lost(), "{}", b.name());
        assert!(off.stats().offloaded > off.stats().blocks / 2, "{}: the worker's jobs should come back: {:?}", b.name(), off.stats());
    }
}

#[test]
fn the_offload_worker_takes_new_coefficients_on_every_gpu_backend() {
    const BLOCK: usize = 512;
    let designs: Vec<DesignedChain> = (0..3).map(|k| retunable_chain(48_000.0, k)).collect();
    for b in backends() {
        let exec = b.executor(&designs[0], 2, BLOCK).unwrap();
        // Retunes before blocks 40 (design 1), 41 (2) and 120 (0); each job waited for,
        // so the slow adapters (lavapipe) answer them all.
        let r = retuned_offload(&designs, exec, BLOCK, 96_000 / BLOCK * BLOCK, &[(40, 1), (41, 2), (120, 0)], true);
        let e = rel_error(&r.out, &r.want);
        println!("offload on {}, retuned at blocks {:?}: {:?}, error {e:.2e}", b.name(), r.taken, r.stats);
        assert_eq!(r.taken.len(), 3, "{}: {:?}", b.name(), r.taken);
        assert!(e <= TIME_TOLERANCE, "{}: {e:.3e}", b.name());
        assert!(!r.worker_lost, "{}: the executor must take the designs", b.name());
        assert!(r.stats.offloaded > r.stats.blocks / 2, "{}: {:?}", b.name(), r.stats);
    }
}

/// The device-resident path through the neutral trait (`Backend::time_resident`, what
/// `cargo xtask bench --resident` times): on every GPU backend its output equals the CPU
/// engine's within the tolerance, across several units of the grid (a stream longer than
/// one unit, not a multiple of it), and both timings are real (positive, finite).
#[test]
fn the_device_resident_path_matches_the_cpu_on_every_gpu_backend() {
    let designed = mixed_chain(48_000.0, 63);
    let (rows, frames, unit) = (3, 20_000, 4096);
    let input = ferrofx_testkit::noise_channels(rows, frames, 77, 1.0);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    let flat: Vec<f32> = input.concat();
    for b in backends() {
        let t = b.time_resident(&designed, &flat, rows, frames, unit, 2).unwrap_or_else(|e| panic!("{}: {e}", b.name()));
        let got: Vec<Vec<f32>> = t.output.chunks(frames).map(|r| r.to_vec()).collect();
        let e = rel_error(&got, &cpu);
        println!("{}: resident {:.3} ms, copy {:.3} ms, {e:.2e} of the peak from the CPU", b.name(), t.filter_s * 1e3, t.copy_s * 1e3);
        assert!(e <= TIME_TOLERANCE, "{}: {e:.3e}", b.name());
        assert!(t.filter_s.is_finite() && t.filter_s > 0.0 && t.copy_s.is_finite() && t.copy_s > 0.0, "{}: {t:?}", b.name());
    }
}
