//! Device memory in, device memory out on CUDA ([`ferrofx::gpu::cuda::CudaResident`]):
//! the checks of `gpu_resident.rs` (wgpu) on the CUDA backend. One call against the CPU
//! engine within the reference tolerance; any split of the stream into calls, in place
//! and out of place, against one call bit for bit (seeded sweep); the caller's stream
//! ordering; addresses that are not device memory, or too short, refused by name.
//!
//! Without an NVIDIA driver and device these tests print why and return (this machine's
//! CI); `FERROFX_REQUIRE_CUDA=1` (scripts/gpu-check.sh on the lent GPU machine) makes
//! skipping a failure.
#![cfg(feature = "cuda")]

use cudarc::driver::{CudaSlice, DevicePtr};
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, Elliptic, Fir};
use ferrofx::engine::EngineOptions;
use ferrofx::gpu::cuda::{CudaDevice, CudaError, CudaResident};
use ferrofx::gpu::GpuError;
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx_testkit::Rng;
use std::sync::Arc;

const TIME_TOLERANCE: f64 = 1e-4;

fn device() -> Option<&'static Arc<CudaDevice>> {
    ferrofx_testkit::gpu::cuda_device()
}

fn flat(rows: &[Vec<f32>]) -> Vec<f32> {
    rows.iter().flatten().copied().collect()
}

/// The stream through `resident` in calls cut at `cuts`, each call on device buffers of
/// its own (or one, in place).
fn run_split(resident: &mut CudaResident, input: &[Vec<f32>], cuts: &[usize], in_place: bool) -> Vec<Vec<f32>> {
    let stream = resident.stream().clone();
    ferrofx_testkit::engine::at_cut_points(input, cuts, |piece| {
        let (rows, frames) = (piece.len(), piece[0].len());
        let mut src: CudaSlice<f32> = stream.clone_htod(&flat(&piece)).unwrap();
        let result = if in_place {
            resident.process_in_place(&mut src, frames).map(|()| src)
        } else {
            let mut dst: CudaSlice<f32> = stream.clone_htod(&vec![f32::NAN; rows * frames]).unwrap();
            resident.process(&src, &mut dst, frames).map(|()| dst)
        };
        let host = stream.clone_dtoh(&result.unwrap()).unwrap();
        host.chunks(frames.max(1)).map(<[f32]>::to_vec).collect()
    })
}

/// Cut points in `0..frames`, pieces of 1 to 2 units.
fn random_cuts(rng: &mut Rng, frames: usize, unit: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut at = 0;
    loop {
        at += 1 + rng.below(2 * unit);
        if at >= frames {
            return cuts;
        }
        cuts.push(at);
    }
}

fn assert_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    for (r, (x, y)) in a.iter().zip(b).enumerate() {
        if let Some(n) = (0..x.len()).find(|&n| x[n].to_bits() != y[n].to_bits()) {
            panic!("{what}: row {r} differs first at frame {n}: {} against {}", x[n], y[n]);
        }
    }
}

#[test]
fn a_stream_of_calls_equals_one_call_bit_for_bit_and_the_cpu_within_tolerance() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(4302);
    for case in 0..8u64 {
        let fs = 48_000.0;
        let f = |rng: &mut Rng, lo: f64, hi: f64| lo * (hi / lo).powf(rng.unit());
        let mut chain = Chain::from(Butterworth::highpass(f(&mut rng, 10.0, 200.0), 1 + rng.below(4)))
            | Chebyshev1::lowpass(f(&mut rng, 2000.0, 15_000.0), 2 + rng.below(4), 0.5)
            | Elliptic::lowpass(f(&mut rng, 3000.0, 18_000.0), 4, 0.1, 70.0)
            | Biquad::peaking(f(&mut rng, 40.0, 15_000.0), 1.0, 6.0);
        if case % 2 == 1 {
            chain = chain | Fir::lowpass(101, 12_000.0);
        }
        let designed = chain.design(fs).unwrap();
        let rows = *rng.pick(&[1usize, 2, 8, 33]);
        let unit = *rng.pick(&[64usize, 1000, 8192, 65_536]);
        let frames = 5000 + rng.below(100_000);
        let input = ferrofx_testkit::noise_channels(rows, frames, 200 + case, 1.0);
        let mut resident = match CudaResident::new(dev, &designed, rows, unit) {
            Ok(r) => r,
            Err(CudaError::Gpu(GpuError::Precision { .. })) => continue,
            Err(e) => panic!("case {case}: {e}"),
        };
        let one = run_split(&mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("case {case}: {rows} rows, unit {unit}, {frames} frames: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "case {case}: {e:.3e}");
        for (split, in_place) in [(0, false), (1, true)] {
            resident.reset();
            let cuts = random_cuts(&mut rng, frames, unit);
            let y = run_split(&mut resident, &input, &cuts, in_place);
            assert_bits(&y, &one, &format!("case {case}, split {split} ({} calls)", cuts.len() + 1));
        }
    }
}

#[test]
fn addresses_that_are_not_device_memory_or_too_short_are_refused() {
    let Some(dev) = device() else { return };
    let designed = Chain::from(Butterworth::lowpass(1000.0, 2)).design(48_000.0).unwrap();
    let mut resident = CudaResident::new(dev, &designed, 2, 4096).unwrap();
    let stream = resident.stream().clone();
    let good: CudaSlice<f32> = stream.alloc_zeros(2000).unwrap();
    let short: CudaSlice<f32> = stream.alloc_zeros(100).unwrap();
    let host = vec![0.0f32; 2000];
    let (g, s) = (good.device_ptr(&stream).0, short.device_ptr(&stream).0);
    let raw = stream.cu_stream() as u64;
    let why = |r: Result<(), CudaError>| match r {
        Err(CudaError::Gpu(GpuError::Job { why })) => why,
        other => panic!("expected a job error, got {other:?}"),
    };
    // SAFETY: the stream is the chain's own; the refused calls enqueue nothing.
    let w = why(unsafe { resident.process_raw(host.as_ptr() as u64, g, 1000, raw) });
    assert!(w.contains("input address") && w.contains("not device memory"), "{w}");
    let w = why(unsafe { resident.process_raw(g, s, 1000, raw) });
    assert!(w.contains("output allocation holds 400 bytes") && w.contains("need 8000"), "{w}");
}

/// float64 device memory (a float64 tensor's): converted to the chain's float32 samples
/// and back on the device, so the output is the float32 path's result widened, bit for
/// bit, in place and out of place, over a stream cut into calls; a float64 buffer too
/// short for the call is refused in float64's bytes.
#[test]
fn float64_memory_runs_the_float32_path_widened() {
    use cudarc::driver::DevicePtrMut;
    use ferrofx::gpu::cuda::Sample;
    let Some(dev) = device() else { return };
    let designed = (Chebyshev1::bandstop(715.08, 2461.27, 12, 1.12) | Fir::lowpass(101, 12_000.0)).design(48_000.0).unwrap();
    let (rows, frames, unit) = (3usize, 30_000usize, 4096usize);
    let input = ferrofx_testkit::noise_channels(rows, frames, 64, 1.0);
    let mut resident = CudaResident::new(dev, &designed, rows, unit).unwrap();
    let want = run_split(&mut resident, &input, &[], false);
    let stream = resident.stream().clone();
    let raw = stream.cu_stream() as u64;
    for (in_place, cuts) in [(false, vec![]), (true, vec![1usize, 5000, 5001, 20_000])] {
        resident.reset();
        let got = ferrofx_testkit::engine::at_cut_points(&input, &cuts, |piece| {
            let n = piece[0].len();
            let flat: Vec<f64> = piece.iter().flatten().map(|&v| f64::from(v)).collect();
            let mut src: CudaSlice<f64> = stream.clone_htod(&flat).unwrap();
            let mut dst: CudaSlice<f64> = stream.clone_htod(&vec![f64::NAN; flat.len()]).unwrap();
            let s = src.device_ptr_mut(&stream).0;
            let d = if in_place { s } else { dst.device_ptr_mut(&stream).0 };
            // SAFETY: both buffers are live allocations of this context on the chain's
            // own stream, synchronised by the read-back below.
            unsafe { resident.process_raw_as(s, d, n, raw, Sample::F64) }.unwrap();
            let host = stream.clone_dtoh(if in_place { &src } else { &dst }).unwrap();
            host.chunks(n.max(1)).map(|r| r.iter().map(|&v| v as f32).collect()).collect()
        });
        assert_bits(&got, &want, &format!("float64, in place {in_place}"));
    }
    let short: CudaSlice<f64> = stream.alloc_zeros(rows * 100).unwrap();
    let p = short.device_ptr(&stream).0;
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { resident.process_raw_as(p, p, 100 + 1, raw, Sample::F64) }.unwrap_err().to_string();
    assert!(e.contains("frames of float64 need 2424"), "{e}");
}

/// The fused cascade scan (opt-in) on device memory: the unit decides, so a stream of
/// calls cut anywhere still equals one call bit for bit, and one call meets the CPU
/// engine's tolerance; the chain reports the cascade as fused.
#[test]
fn the_fused_scan_keeps_a_stream_of_calls_equal_to_one_call() {
    use ferrofx::gpu::cuda::chain::FUSED_MIN_FRAMES;
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(4343);
    let designed = (Chain::from(Butterworth::highpass(30.0, 4)) | Chebyshev1::lowpass(9000.0, 8, 0.5) | Biquad::peaking(1200.0, 1.0, 4.0)).design(48_000.0).unwrap();
    for (rows, unit, group_max) in [(3usize, 2 * FUSED_MIN_FRAMES + 100, 8usize), (8, FUSED_MIN_FRAMES, 3), (1, 8 * FUSED_MIN_FRAMES, 5)] {
        let frames = 3 * unit + 777;
        let input = ferrofx_testkit::noise_channels(rows, frames, 77 + rows as u64, 1.0);
        let mut resident = CudaResident::new(dev, &designed, rows, unit).unwrap();
        resident.set_fused(group_max).unwrap();
        assert_eq!(resident.fused_status(), (group_max, vec![true]), "the cascade runs fused");
        let one = run_split(&mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("fused, groups of {group_max}: {rows} rows, unit {unit}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "groups of {group_max}: {e:.3e}");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(&mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("groups of {group_max}, {} calls", cuts.len() + 1));
    }
}

/// The fused scan over a seeded sweep on the device: random chains (IIR stages of every
/// kind, sometimes a FIR), rows, units past the fused threshold, group sizes; one call
/// within the CPU's tolerance, a stream cut anywhere bit for bit the one call.
#[test]
fn the_fused_scan_over_a_seeded_sweep_of_chains() {
    use ferrofx::gpu::cuda::chain::FUSED_MIN_FRAMES;
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(4346);
    for case in 0..8u64 {
        let fs = 48_000.0;
        let f = |rng: &mut Rng, lo: f64, hi: f64| lo * (hi / lo).powf(rng.unit());
        let mut chain = Chain::from(Butterworth::highpass(f(&mut rng, 10.0, 200.0), 1 + rng.below(4)))
            | Chebyshev1::lowpass(f(&mut rng, 2000.0, 15_000.0), 2 + rng.below(6), 0.5)
            | Elliptic::lowpass(f(&mut rng, 3000.0, 18_000.0), 2 + rng.below(6), 0.1, 70.0)
            | Biquad::peaking(f(&mut rng, 40.0, 15_000.0), 1.0, 6.0);
        if case % 2 == 1 {
            chain = chain | Fir::lowpass(101, 12_000.0);
        }
        let designed = chain.design(fs).unwrap();
        let rows = *rng.pick(&[1usize, 2, 8, 33]);
        let unit = FUSED_MIN_FRAMES * (1 + rng.below(4)) + rng.below(1000);
        let frames = 2 * unit + rng.below(unit);
        let group_max = 1 + rng.below(8);
        let input = ferrofx_testkit::noise_channels(rows, frames, 500 + case, 1.0);
        let mut resident = match CudaResident::new(dev, &designed, rows, unit) {
            Ok(r) => r,
            Err(CudaError::Gpu(GpuError::Precision { .. })) => continue,
            Err(e) => panic!("case {case}: {e}"),
        };
        resident.set_fused(group_max).unwrap();
        let one = run_split(&mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("case {case}: {rows} rows, unit {unit}, groups of {group_max}, fused {:?}: {e:.2e} of the peak from the CPU", resident.fused_status().1);
        assert!(e <= TIME_TOLERANCE, "case {case}: {e:.3e}");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(&mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("case {case} ({} calls)", cuts.len() + 1));
    }
}

/// The warp pipeline (a device opened with `pipeline_max_frames`): resident chains whose
/// unit runs piped (cascades around a FIR: two runs) keep a stream of calls cut
/// anywhere equal to one call bit for bit, and one call within the CPU's tolerance.
#[test]
fn the_warp_pipeline_keeps_a_stream_of_calls_equal_to_one_call() {
    use ferrofx::gpu::cuda::CudaTuning;
    if device().is_none() {
        return;
    }
    let dev = CudaDevice::open_tuned(0, CudaTuning { pipeline_max_frames: 2048, ..CudaTuning::default() }).unwrap();
    let mut rng = Rng::new(4350);
    let designed = (Chain::from(Butterworth::highpass(30.0, 4)) | Biquad::peaking(1200.0, 1.0, 4.0) | Fir::lowpass(31, 12_000.0) | Chebyshev1::lowpass(9000.0, 8, 0.5)).design(48_000.0).unwrap();
    for (rows, unit) in [(2usize, 1024usize), (3, 2048), (1, 64)] {
        let frames = 3 * unit + 77;
        let input = ferrofx_testkit::noise_channels(rows, frames, 90 + rows as u64, 1.0);
        let mut resident = CudaResident::new(&dev, &designed, rows, unit).unwrap();
        let one = run_split(&mut resident, &input, &[], false);
        let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("warp pipeline: {rows} rows, unit {unit}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "unit {unit}: {e:.3e}");
        resident.reset();
        let cuts = random_cuts(&mut rng, frames, unit);
        let y = run_split(&mut resident, &input, &cuts, true);
        assert_bits(&y, &one, &format!("piped, unit {unit}, {} calls", cuts.len() + 1));
    }
}
