//! The float64 kernels on a CUDA device (`kernels/sos64.cu`): the cascades whose float32
//! form would miss the tolerance run in float64 on the card instead of being declined.
//! Checked: bit for bit against the CPU model of the float64 path (the PTX rounds every
//! operation as written, `-ffp-contract=off`), with either kernel, graphs or plain
//! launches, through the overlapped stream; within the reference tolerance of the CPU
//! engine; the state handed out and back in between jobs; the device-resident path (a
//! stream of calls bit for bit one call); a cascade moving between float32 and float64
//! with new coefficients, equal to a chain built fresh, and refused while blocks are in
//! flight. The kernels' arithmetic is also tested without a GPU in crates/kernel-host.
//!
//! Without an NVIDIA driver and device these tests print why and return (this machine's
//! CI); `FERROFX_REQUIRE_CUDA=1` (scripts/gpu-check.sh) makes skipping a failure.
#![cfg(feature = "cuda")]

use cudarc::driver::CudaSlice;
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1};
use ferrofx::engine::EngineOptions;
use ferrofx::gpu::cuda::{CudaChain, CudaDevice, CudaResident};
use ferrofx::DesignedChain;
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx_testkit::float64::{float64_stages, hard_chains, model};
use std::sync::Arc;

const TIME_TOLERANCE: f64 = 1e-4;

fn device() -> Option<&'static Arc<CudaDevice>> {
    ferrofx_testkit::gpu::cuda_device()
}

fn design(chain: &Chain, fs: f64) -> DesignedChain {
    chain.design(fs).unwrap_or_else(|e| panic!("{e}"))
}

fn has_fir(designed: &DesignedChain) -> bool {
    designed.stages.iter().any(|s| matches!(s, ferrofx::chain::DesignedStage::Fir(_)))
}

fn run_slices(chain: &mut CudaChain, input: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let mut y = input.to_vec();
    let mut slices: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
    let mut state = chain.new_state();
    chain.process_slices(&mut slices, &mut state).unwrap();
    y
}

#[test]
fn cascades_float32_declines_run_in_float64_bit_for_bit_the_model() {
    let Some(dev) = device() else { return };
    for (name, chain, fs) in hard_chains() {
        let designed = design(&chain, fs);
        let input = ferrofx_testkit::noise_channels(2, 150_000, 17, 1.0);
        let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
        for block in [64usize, 2048, 65_536] {
            for (graphs, sequential_max) in [(true, 64usize), (true, usize::MAX), (false, 64)] {
                let wide = float64_stages(&designed, block, sequential_max, "CUDA");
                let mut gpu = CudaChain::new(dev, &designed, 2, block).unwrap_or_else(|e| panic!("{name}: {e}"));
                gpu.set_graphs(graphs);
                gpu.set_sequential_max(sequential_max);
                let y = run_slices(&mut gpu, &input);
                let what = format!("{name}: block {block}, graphs {graphs}, sequential up to {sequential_max}");
                let e = rel_error(&y, &cpu);
                let m = model(&designed, fs, &wide, &input, block, sequential_max);
                let em = rel_error(&y, &m);
                println!("{what}: {e:.2e} from the CPU engine, {em:.2e} from the model");
                assert!(e <= TIME_TOLERANCE, "{what}: {e:.3e} from the CPU engine");
                if has_fir(&designed) {
                    // The model's FIR is the CPU engine's, not the kernel's: a few roundings.
                    assert!(em <= 1e-6, "{what}: {em:.3e} from the model");
                } else {
                    for (c, (a, b)) in y.iter().zip(&m).enumerate() {
                        let n = a.iter().zip(b).position(|(x, y)| x.to_bits() != y.to_bits());
                        assert_eq!(n, None, "{what}: channel {c} differs from the model");
                    }
                }
            }
        }
    }
}

/// Two jobs with the state handed out to the host and into a fresh chain equal the CPU
/// engine, and the end state equals the engine's.
#[test]
fn float64_state_goes_out_and_back_in_between_jobs() {
    let Some(dev) = device() else { return };
    let (name, chain, fs) = hard_chains().swap_remove(0);
    let designed = design(&chain, fs);
    let frames = 8192;
    float64_stages(&designed, frames, 64, "CUDA");
    let input = ferrofx_testkit::noise_channels(2, 2 * frames, 5, 1.0);
    ferrofx_testkit::float64::assert_two_jobs_through_the_host(name, &designed, &input, frames, |block, state| {
        CudaChain::new(dev, &designed, 2, frames).unwrap().process(block, frames, state).unwrap();
    });
}

/// Device memory in and out: a float64 cascade there too; a stream of calls equals one
/// call bit for bit.
#[test]
fn the_resident_path_runs_float64_cascades() {
    let Some(dev) = device() else { return };
    let (name, chain, fs) = hard_chains().swap_remove(2);
    let designed = design(&chain, fs);
    let (rows, frames, unit) = (3usize, 40_000usize, 4096usize);
    let input = ferrofx_testkit::noise_channels(rows, frames, 23, 1.0);
    let mut resident = CudaResident::new(dev, &designed, rows, unit).unwrap_or_else(|e| panic!("{name}: {e}"));
    let stream = resident.stream().clone();
    let run = |resident: &mut CudaResident, cuts: &[usize]| {
        ferrofx_testkit::engine::at_cut_points(&input, cuts, |piece| {
            let n = piece[0].len();
            let flat: Vec<f32> = piece.iter().flatten().copied().collect();
            let mut buf: CudaSlice<f32> = stream.clone_htod(&flat).unwrap();
            resident.process_in_place(&mut buf, n).unwrap();
            stream.clone_dtoh(&buf).unwrap().chunks(n.max(1)).map(<[f32]>::to_vec).collect()
        })
    };
    let one = run(&mut resident, &[]);
    let e = rel_error(&one, &run_engine(&designed, &input, 4096, EngineOptions::default()));
    println!("{name}: resident, one call: {e:.2e} from the CPU engine");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
    resident.reset();
    let split = run(&mut resident, &[1, 777, 4096, 9000, 30_001]);
    for (a, b) in one.iter().flatten().zip(split.iter().flatten()) {
        assert_eq!(a.to_bits(), b.to_bits(), "a stream of calls differs from one call");
    }
}

/// New coefficients in place across precisions: float64 -> float64 (no new capture),
/// -> float32 and back (the launches change: captured again), each equal to a chain built
/// fresh with them; a precision change while blocks are in flight is refused.
#[test]
fn new_coefficients_move_cascades_between_precisions_in_place() {
    let Some(dev) = device() else { return };
    let (frames, fs) = (20_000usize, 48_000.0);
    let hard = |cut: f64| design(&(Chebyshev1::lowpass(cut, 16, 1.0) | Biquad::peaking(2000.0, 1.0, 3.0)), fs);
    let easy = design(&(Butterworth::lowpass(1000.0, 16) | Biquad::peaking(2000.0, 1.0, 3.0)), fs);
    let (a, b) = (hard(1000.0), hard(1100.0));
    float64_stages(&b, frames, 64, "CUDA");
    let input = ferrofx_testkit::noise_channels(2, frames, 9, 1.0);
    let fresh = |d: &DesignedChain| run_slices(&mut CudaChain::new(dev, d, 2, frames).unwrap(), &input);
    let same = |x: &[Vec<f32>], y: &[Vec<f32>]| x.iter().flatten().zip(y.iter().flatten()).all(|(p, q)| p.to_bits() == q.to_bits());
    // Starts in float32: the float64 buffers are allocated by the change.
    let mut chain = CudaChain::new(dev, &easy, 2, frames).unwrap();
    assert!(same(&run_slices(&mut chain, &input), &fresh(&easy)));
    chain.set_coefficients(&a).unwrap();
    assert!(same(&run_slices(&mut chain, &input), &fresh(&a)), "float32 -> float64 differs from fresh");
    let captures = chain.graph_counts().0;
    chain.set_coefficients(&b).unwrap();
    assert!(same(&run_slices(&mut chain, &input), &fresh(&b)), "float64 -> float64 differs from fresh");
    assert_eq!(chain.graph_counts().0, captures, "a change within float64 captured again");
    chain.set_coefficients(&easy).unwrap();
    assert!(same(&run_slices(&mut chain, &input), &fresh(&easy)), "float64 -> float32 differs from fresh");
    // In flight: a precision change is refused, the chain keeps its coefficients.
    let slices: Vec<&[f32]> = input.iter().map(|c| &c[..]).collect();
    let state = chain.new_state();
    chain.submit_block(&slices, 0, 4096, &state).unwrap();
    let e = chain.set_coefficients(&a).unwrap_err().to_string();
    assert!(e.contains("in flight") && e.contains("changes precision"), "{e}");
    chain.abandon();
    assert!(same(&run_slices(&mut chain, &input), &fresh(&easy)), "the refused change left a trace");
}

/// [`ferrofx::gpu::cuda::CudaSos64`] (the PyTorch operator's device path): float64 rows in
/// place from zero state, bit for bit `model_section::<f64>` section by section, with
/// either kernel; a stream ordering on a caller's stream; refusals by name.
#[test]
fn float64_rows_in_place_equal_the_float64_model() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use ferrofx::gpu::cuda::CudaSos64;
    use ferrofx::gpu::realize::{chunking, model_section, Realization};
    let Some(dev) = device() else { return };
    for (name, chain, fs) in hard_chains() {
        let designed = design(&chain, fs);
        for stage in &designed.stages {
            let ferrofx::chain::DesignedStage::Sos(sos) = stage else { continue };
            let mut gpu = CudaSos64::new(dev, sos).unwrap_or_else(|e| panic!("{name}: {e}"));
            let stream = dev.new_stream().unwrap();
            for (rows, frames) in [(1usize, 100usize), (3, 5000), (5, 200_000)] {
                let x: Vec<f64> = ferrofx_testkit::noise_channels(rows, frames, 77, 1.0).iter().flatten().map(|&v| f64::from(v)).collect();
                let mut buf: CudaSlice<f64> = stream.clone_htod(&x).unwrap();
                let ptr = buf.device_ptr_mut(&stream).0;
                // SAFETY: the buffer is live on this stream and read back after the call.
                unsafe { gpu.process_raw(ptr, rows, frames, stream.cu_stream() as u64) }.unwrap();
                let got = stream.clone_dtoh(&buf).unwrap();
                let (_, chunk_len) = chunking(frames, ferrofx::gpu::cuda::CudaTuning::default().sequential_max_frames);
                let mut want = x.clone();
                for row in want.chunks_mut(frames) {
                    for s in sos {
                        let r = Realization::new(&s.into());
                        model_section(&r.to_gpu_as::<f64>(), &r.scan_table_as::<f64>(chunk_len), row, &mut [0.0; 2], chunk_len);
                    }
                }
                let n = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(n, None, "{name}: {rows} x {frames} differs from the float64 model");
            }
        }
    }
    let sos = design(&hard_chains()[0].1, 48_000.0);
    let ferrofx::chain::DesignedStage::Sos(sos) = &sos.stages[0] else { panic!() };
    let mut gpu = CudaSos64::new(dev, sos).unwrap();
    let stream = dev.new_stream().unwrap();
    let short: CudaSlice<f64> = stream.alloc_zeros(100).unwrap();
    let p = short.device_ptr(&stream).0;
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { gpu.process_raw(p, 2, 100, 0) }.unwrap_err().to_string();
    assert!(e.contains("2 rows x 100 frames of float64 need 1600"), "{e}");
}

/// [`ferrofx::gpu::cuda::CudaSos64`] with the fused scan on (opt-in: a device opened with
/// `fused_sections`): rows of at least `FUSED_MIN_FRAMES` frames bit for bit
/// `gpu::fused::model_fused::<f64>` group by group (one tile, several tiles and a part,
/// one row and many), shorter rows still the per-section kernels' bits, a cascade the
/// float64 fused estimate declines on the per-section kernels, and both within 1e-10 of
/// SciPy's float64 `sosfilt` (`ferrofx::signal`).
#[test]
fn float64_rows_through_the_fused_scan_equal_its_model() {
    use cudarc::driver::DevicePtrMut;
    use ferrofx::gpu::cuda::{CudaSos64, CudaTuning};
    use ferrofx::gpu::fused::{fuse_cascade_as, fusable64, model_fused, FUSED_CHUNK_FRAMES, FUSED_MIN_FRAMES, FUSED_TILE};
    use ferrofx::gpu::realize::{chunking, model_section, Realization};
    if device().is_none() {
        return;
    }
    let dev = CudaDevice::open_tuned(0, CudaTuning { fused_sections: 6, ..CudaTuning::default() }).unwrap();
    let stream = dev.new_stream().unwrap();
    let mut chains: Vec<(&str, Chain, f64)> = hard_chains();
    chains.push(("butterworth highpass 30 Hz order 4 + peaking", Butterworth::highpass(30.0, 4) | Biquad::peaking(1000.0, 1.4, -6.0), 48_000.0));
    let mut fused_runs = 0;
    for (name, chain, fs) in chains {
        let designed = design(&chain, fs);
        for stage in &designed.stages {
            let ferrofx::chain::DesignedStage::Sos(sos) = stage else { continue };
            let reals: Vec<Realization> = sos.iter().map(|s| Realization::new(&s.into())).collect();
            let mut gpu = CudaSos64::new(&dev, sos).unwrap_or_else(|e| panic!("{name}: {e}"));
            let expect_fused = fusable64(&reals, 6, FUSED_CHUNK_FRAMES);
            assert_eq!(gpu.fused_sections().unwrap() > 0, expect_fused, "{name}");
            let rows_sos: Vec<[f64; 6]> = sos.iter().map(|s| [s.b[0] / s.a[0], s.b[1] / s.a[0], s.b[2] / s.a[0], 1.0, s.a[1] / s.a[0], s.a[2] / s.a[0]]).collect();
            for (rows, frames) in [(1usize, FUSED_MIN_FRAMES), (3, 3 * FUSED_TILE * FUSED_CHUNK_FRAMES + 1234), (40, FUSED_MIN_FRAMES + 77), (2, FUSED_MIN_FRAMES - 1)] {
                let x: Vec<f64> = ferrofx_testkit::noise_channels(rows, frames, 5, 1.0).iter().flatten().map(|&v| f64::from(v)).collect();
                let mut buf: CudaSlice<f64> = stream.clone_htod(&x).unwrap();
                let ptr = buf.device_ptr_mut(&stream).0;
                // SAFETY: the buffer is live on this stream and read back after the call.
                unsafe { gpu.process_raw(ptr, rows, frames, stream.cu_stream() as u64) }.unwrap();
                let got = stream.clone_dtoh(&buf).unwrap();
                let fused = expect_fused && frames >= FUSED_MIN_FRAMES;
                fused_runs += usize::from(fused);
                let mut want = x.clone();
                for row in want.chunks_mut(frames) {
                    if fused {
                        for group in fuse_cascade_as::<f64>(&reals, 6, FUSED_CHUNK_FRAMES) {
                            model_fused(&group, row, &mut vec![[0.0; 2]; group.sections.len()], FUSED_CHUNK_FRAMES);
                        }
                    } else {
                        let (_, chunk_len) = chunking(frames, CudaTuning::default().sequential_max_frames);
                        for r in &reals {
                            model_section(&r.to_gpu_as::<f64>(), &r.scan_table_as::<f64>(chunk_len), row, &mut [0.0; 2], chunk_len);
                        }
                    }
                }
                let n = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(n, None, "{name}: {rows} x {frames} (fused: {fused}) differs from its model");
                let mut scipy = x.clone();
                let mut zi = vec![0.0; 2 * rows * sos.len()];
                let mut views: Vec<&mut [f64]> = scipy.chunks_mut(frames).collect();
                ferrofx::signal::sosfilt_rows(&rows_sos, &mut views, &mut zi).unwrap();
                let peak = scipy.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let err = got.iter().zip(&scipy).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / peak;
                assert!(err <= 1e-10, "{name}: {rows} x {frames} (fused: {fused}): {err:.2e} of the peak from SciPy's float64");
            }
        }
    }
    assert!(fused_runs > 0, "no cascade ran fused");
}

/// [`ferrofx::gpu::cuda::CudaAdjoint64`] (the PyTorch operator's backward step): the next
/// gradient bit for bit the formula of kernels/adjoint_math.h (zero in each row's two
/// leading places), the blocks' sums within rounding of plain sums, over several grid
/// sizes; refusals by name (a short buffer, `g` overlapping `lambda`).
#[test]
fn the_backward_step_equals_its_formula_on_the_device() {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use ferrofx::gpu::cuda::CudaAdjoint64;
    let Some(dev) = device() else { return };
    let mut step = CudaAdjoint64::new(dev).unwrap();
    let stream = dev.new_stream().unwrap();
    let b = [0.7, -1.3, 0.45];
    for (rows, frames) in [(1usize, 1usize), (3, 700), (16, 5000), (2, 300_000)] {
        let row_len = frames + 2;
        let total = rows * row_len;
        let noise = |seed: u64| -> Vec<f64> {
            let mut v: Vec<f64> = ferrofx_testkit::noise_channels(1, total, seed, 1.0)[0].iter().map(|&s| f64::from(s)).collect();
            v.iter_mut().enumerate().filter(|(i, _)| i % row_len < 2).for_each(|(_, s)| *s = 0.0);
            v
        };
        let (lam, xs, ys) = (noise(1), noise(2), noise(3));
        let (dl, dx, dy): (CudaSlice<f64>, CudaSlice<f64>, CudaSlice<f64>) = (stream.clone_htod(&lam).unwrap(), stream.clone_htod(&xs).unwrap(), stream.clone_htod(&ys).unwrap());
        let mut dg: CudaSlice<f64> = stream.alloc_zeros(total).unwrap();
        let mut partial: CudaSlice<f64> = stream.alloc_zeros(6 * ferrofx::gpu::cuda::adjoint::ADJOINT_MAX_BLOCKS).unwrap();
        let (pl, px, py) = (dl.device_ptr(&stream).0, dx.device_ptr(&stream).0, dy.device_ptr(&stream).0);
        let (pg, pp) = (dg.device_ptr_mut(&stream).0, partial.device_ptr_mut(&stream).0);
        // SAFETY: the buffers are live on this stream and read back after the call.
        let blocks = unsafe { step.step_raw(b, pl, px, py, pg, pp, rows, row_len, stream.cu_stream() as u64) }.unwrap();
        assert_eq!(blocks, CudaAdjoint64::blocks_for(total));
        let (g, partial) = (stream.clone_dtoh(&dg).unwrap(), stream.clone_dtoh(&partial).unwrap());
        let mut want_sums = [0.0f64; 6];
        for i in 0..total {
            let want = if i % row_len < 2 { 0.0 } else { b[0] * lam[i] + b[1] * lam[i - 1] + b[2] * lam[i - 2] };
            assert_eq!(g[i].to_bits(), want.to_bits(), "{rows} x {frames}: sample {i}");
            if i % row_len >= 2 {
                for k in 0..3 {
                    want_sums[k] += lam[i - k] * xs[i];
                    want_sums[3 + k] -= lam[i - k] * ys[i];
                }
            }
        }
        let scale = (total as f64).sqrt();
        for j in 0..6 {
            let got: f64 = partial.chunks(6).take(blocks).map(|p| p[j]).sum();
            assert!((got - want_sums[j]).abs() <= 1e-12 * scale * scale, "{rows} x {frames}: sum {j}: {got} against {}", want_sums[j]);
        }
    }
    // Refusals: a short g, and g on lambda's memory.
    let short: CudaSlice<f64> = stream.alloc_zeros(10).unwrap();
    let long: CudaSlice<f64> = stream.alloc_zeros(6 * 1024).unwrap();
    let (ps, pl) = (short.device_ptr(&stream).0, long.device_ptr(&stream).0);
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { step.step_raw(b, pl, pl + 8 * 20, pl + 8 * 40, ps, pl, 2, 10, 0) }.unwrap_err().to_string();
    assert!(e.contains("g: the allocation holds 80 bytes"), "{e}");
    let e = unsafe { step.step_raw(b, pl, pl + 8 * 20, pl + 8 * 40, pl + 8, pl + 8 * 100, 2, 10, 0) }.unwrap_err().to_string();
    assert!(e.contains("g overlaps lambda"), "{e}");
}
