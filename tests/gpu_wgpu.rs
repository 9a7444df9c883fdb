//! What only the wgpu backend has, on a real adapter (lavapipe in CI, a GPU where there
//! is one): its scan shader against the CPU model, scan and sequential paths on long
//! low-frequency streams, FIR stages and state hand-over, double buffering, coefficients
//! rewritten in place, late jobs and a lost device under the offload. The cases every
//! GPU backend runs (every reference case, long FIRs, the offload's jobs and retunes)
//! are in `gpu_backends.rs`.
//!
//! Without an adapter these tests print why and return, unless `FERROFX_REQUIRE_GPU=1`
//! (set by `scripts/test.sh`, which installs lavapipe), where that is a failure.
#![cfg(feature = "wgpu")]

use ferrofx_testkit::retune::{assert_bits_equal, cpu_updated_at, jobs, retunable_chain};
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx::chain::{Biquad, Butterworth, Chebyshev1, Elliptic, Fir};
use ferrofx::engine::{ChainState, Engine, EngineOptions};
use ferrofx::dsp::fir::FirMode;
use ferrofx::gpu::wgpu::{WgpuChain, WgpuStream, WgpuContext};
use ferrofx::DesignedChain;

/// Counts allocations inside `assert_no_alloc` (the audio side of the offload).
#[global_allocator]
static ALLOCATOR: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;

const TIME_TOLERANCE: f64 = 1e-4;

fn context() -> Option<&'static WgpuContext> {
    ferrofx_testkit::gpu::wgpu_context()
}

/// Runs `input` through the GPU in blocks of `block` frames, state carried between jobs.
fn run_gpu(ctx: &WgpuContext, designed: &DesignedChain, input: &[Vec<f32>], block: usize, sequential_max: Option<usize>) -> Vec<Vec<f32>> {
    let mut gpu = WgpuStream::new(ctx, designed, input.len(), block).unwrap();
    if let Some(m) = sequential_max {
        gpu.chain_mut().set_sequential_max(m);
    }
    let mut out = input.to_vec();
    let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[..]).collect();
    // WgpuStream cuts the whole input into blocks of the chain's largest block.
    gpu.process(&mut slices).unwrap();
    out
}

/// White noise, deterministic.
fn noise(channels: usize, frames: usize, seed: u64) -> Vec<Vec<f32>> {
    ferrofx_testkit::noise_channels(channels, frames, seed, 1.0)
}

/// The CPU model of the shader ([`ferrofx::gpu::realize::model_section`]) over `input`
/// in blocks of `block`, each cascade's sections in turn, states carried.
fn model_stream(designed: &DesignedChain, input: &[Vec<f32>], block: usize, sequential_max: usize) -> Vec<Vec<f32>> {
    use ferrofx::chain::DesignedStage;
    use ferrofx::dsp::sos::SosCoefs;
    use ferrofx::gpu::realize::{chunking, model_section, Realization};
    let mut out = input.to_vec();
    for stage in &designed.stages {
        let DesignedStage::Sos(sections) = stage else { panic!("IIR chains only") };
        let reals: Vec<Realization> = sections.iter().map(|s| Realization::new(&SosCoefs::from(s))).collect();
        for channel in out.iter_mut() {
            for r in &reals {
                let mut state = [0.0f32; 2];
                for x in channel.chunks_mut(block) {
                    let (_, chunk_len) = chunking(x.len(), sequential_max);
                    model_section(&r.to_gpu(), &r.scan_table(chunk_len), x, &mut state, chunk_len);
                }
            }
        }
    }
    out
}

#[test]
fn the_scan_shader_follows_the_cpu_model() {
    // The shader's arithmetic is the model's, operation for operation, whatever path its
    // samples take through memory. Not bit for bit everywhere: lavapipe rounds differently
    // from the model's fused multiply-adds on about 85 % of the samples, by at most ~4e-7
    // of the peak; a sample out of place would be off by the signal itself.
    let Some(ctx) = context() else { return };
    let designed = (Butterworth::highpass(30.0, 4) | Chebyshev1::lowpass(9000.0, 6, 0.5) | Biquad::peaking(1000.0, 2.0, 6.0))
        .design(48_000.0)
        .unwrap();
    let input = noise(3, 100_003, 11);
    for block in [65_536usize, 10_007, 4096] {
        let got = run_gpu(ctx, &designed, &input, block, None);
        let want = model_stream(&designed, &input, block, ferrofx::gpu::wgpu::sequential_max_for(ctx.report()));
        let differ: usize = got.iter().zip(&want).map(|(g, w)| g.iter().zip(w).filter(|(a, b)| a.to_bits() != b.to_bits()).count()).sum();
        let e = rel_error(&got, &want);
        println!("blocks of {block}: {differ} of {} samples differ from the model, by at most {e:.2e} of the peak", 3 * 100_003);
        assert!(e <= 2e-6, "blocks of {block}: {e:.3e} from the model");
    }
}

#[test]
fn scan_and_sequential_paths_agree_with_the_cpu_on_long_lowfreq_streams() {
    let Some(ctx) = context() else { return };
    let chain = Butterworth::highpass(10.0, 4)
        | Butterworth::lowpass(20.0, 2)
        | Chebyshev1::highpass(15.0, 6, 0.5)
        | Elliptic::lowpass(2000.0, 6, 0.1, 80.0)
        | Biquad::peaking(40.0, 2.0, 6.0);
    let designed = chain.design(96_000.0).unwrap();
    let input = noise(2, 200_000, 7);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    for (block, seq) in [(65536usize, None), (4096, None), (4096, Some(usize::MAX)), (64, None)] {
        let y = run_gpu(ctx, &designed, &input, block, seq);
        let e = rel_error(&y, &cpu);
        println!("block {block} sequential_max {seq:?}: {e:.2e} vs the CPU engine");
        assert!(e <= TIME_TOLERANCE, "block {block} ({seq:?}): {e:.3e}");
    }
}

#[test]
fn fir_stages_and_mixed_chains_match_the_cpu_and_hand_state_back() {
    let Some(ctx) = context() else { return };
    let taps: Vec<f64> = (0..3000).map(|k| ((k as f64) * 0.37).sin() * (-(k as f64) / 700.0).exp() * 0.05).collect();
    let chain = Butterworth::highpass(30.0, 2) | Fir::lowpass(101, 5000.0) | Fir::coefficients(taps) | Biquad::peaking(1000.0, 1.0, -3.0);
    let designed = chain.design(48_000.0).unwrap();
    let input = noise(3, 50_000, 3);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    for block in [64usize, 1000, 4096, 65536] {
        let y = run_gpu(ctx, &designed, &input, block, None);
        let e = rel_error(&y, &cpu);
        assert!(e <= TIME_TOLERANCE, "block {block}: {e:.3e}");
    }
    // State hand-over: half the stream on the GPU, the rest on a CPU engine loaded with
    // the state the GPU returned.
    let options = EngineOptions { fir_mode: FirMode::Direct, ..EngineOptions::default() };
    let mut engine = Engine::with_options(&designed, 3, 4096, options);
    let mut state: ChainState = engine.new_state().unwrap();
    let mut gpu = WgpuChain::new(ctx, &designed, 3, 25_000).unwrap();
    assert_eq!(gpu.new_state(), state, "the GPU chain and the CPU engine share one state layout");
    let mut first: Vec<f32> = input.iter().flat_map(|c| c[..25_000].iter().copied()).collect();
    gpu.process(&mut first, 25_000, &mut state).unwrap();
    engine.load_state(&state).unwrap();
    let mut rest: Vec<Vec<f32>> = input.iter().map(|c| c[25_000..].to_vec()).collect();
    let mut slices: Vec<&mut [f32]> = rest.iter_mut().map(|c| &mut c[..]).collect();
    engine.process(&mut slices);
    let joined: Vec<Vec<f32>> = (0..3).map(|c| [&first[c * 25_000..(c + 1) * 25_000], &rest[c][..]].concat()).collect();
    let e = rel_error(&joined, &cpu);
    assert!(e <= TIME_TOLERANCE, "GPU then CPU from the returned state: {e:.3e}");
}

/// Double buffering (what `render --backend wgpu` does): block k+1 is submitted before
/// block k is read back, the state staying on the device. The output is bit for bit the
/// synchronous stream's (same jobs, same order), including a short last block, and
/// matches the CPU; a reset mid-way starts again from silence.
#[test]
fn pipelined_blocks_equal_synchronous_blocks() {
    let Some(ctx) = context() else { return };
    let chain = Butterworth::highpass(30.0, 4) | Fir::lowpass(101, 5000.0) | Elliptic::lowpass(3000.0, 5, 0.5, 60.0);
    let designed = chain.design(48_000.0).unwrap();
    let block = 4096;
    let input = noise(2, 10 * block + 1234, 11);
    let sync = run_gpu(ctx, &designed, &input, block, None);
    let cpu = run_engine(&designed, &input, block, EngineOptions::default());
    let run_pipelined = |stream: &mut WgpuStream| {
        let mut out = input.clone();
        let frames = input[0].len();
        let mut queued: std::collections::VecDeque<usize> = Default::default();
        let mut start = 0;
        while start < frames || !queued.is_empty() {
            if start < frames && stream.in_flight() < 2 {
                let n = block.min(frames - start);
                let views: Vec<&[f32]> = input.iter().map(|c| &c[start..start + n]).collect();
                stream.submit(&views, n).unwrap();
                queued.push_back(start);
                start += n;
                continue;
            }
            let at = queued.pop_front().unwrap();
            let n = block.min(frames - at);
            let mut outs: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[at..at + n]).collect();
            assert_eq!(stream.collect(&mut outs).unwrap(), n);
        }
        out
    };
    let mut stream = WgpuStream::new(ctx, &designed, 2, block).unwrap();
    let piped = run_pipelined(&mut stream);
    assert_eq!(piped, sync, "pipelined and synchronous blocks differ");
    let mut whole = input.clone();
    let mut slices: Vec<&mut [f32]> = whole.iter_mut().map(|c| &mut c[..]).collect();
    WgpuStream::new(ctx, &designed, 2, block).unwrap().process_pipelined(&mut slices).unwrap();
    assert_eq!(whole, sync, "process_pipelined and synchronous blocks differ");
    let e = rel_error(&piped, &cpu);
    println!("pipelined GPU stream vs the CPU engine: {e:.2e}");
    assert!(e <= TIME_TOLERANCE);
    // Reset (also with a block in flight) and run again: the same output.
    let views: Vec<&[f32]> = input.iter().map(|c| &c[..block]).collect();
    stream.submit(&views, block).unwrap();
    stream.reset();
    assert_eq!(stream.in_flight(), 0);
    assert_eq!(run_pipelined(&mut stream), sync, "after a reset the stream starts from silence");
    // Misuse is refused with a reason, not a panic.
    stream.submit(&views, block).unwrap();
    stream.submit(&views, block).unwrap();
    assert!(stream.submit(&views, block).is_err(), "a third block in flight");
    assert!(stream.process(&mut [&mut vec![0.0; 10][..], &mut vec![0.0; 10][..]]).is_err());
}

#[test]
fn new_coefficients_rewrite_the_buffers_and_equal_a_fresh_chain() {
    let Some(ctx) = context() else { return };
    let (a, b) = (retunable_chain(48_000.0, 0), retunable_chain(48_000.0, 1));
    let blocks = [4096usize, 4096, 1000, 32];
    let half: usize = blocks.iter().sum();
    let input = noise(2, 2 * half, 31);
    let mut chain = WgpuChain::new(ctx, &a, 2, 4096).unwrap();
    let mut state = chain.new_state();
    let first = jobs(|d, n, s| chain.process(d, n, s).unwrap(), &input, 0, &blocks, &mut state);
    let handed = state.clone();
    chain.set_coefficients(&b).unwrap();
    let second = jobs(|d, n, s| chain.process(d, n, s).unwrap(), &input, half, &blocks, &mut state);
    // A chain built for the new design from the same state: the same bits.
    let mut fresh = WgpuChain::new(ctx, &b, 2, 4096).unwrap();
    let mut fresh_state = handed;
    let want = jobs(|d, n, s| fresh.process(d, n, s).unwrap(), &input, half, &blocks, &mut fresh_state);
    assert_bits_equal(&second, &want, "the updated chain against a fresh one");
    assert_eq!(state.sos, fresh_state.sos);
    assert_eq!(state.fir, fresh_state.fir);
    // The whole stream is the CPU engine's, updated at the same frame.
    let got: Vec<Vec<f32>> = (0..2).map(|c| [first[c].clone(), second[c].clone()].concat()).collect();
    let e = rel_error(&got, &cpu_updated_at(&a, &b, input, half));
    println!("retuned wgpu chain against the CPU engine: {e:.2e}");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
    // Another shape is refused, naming both.
    let other = (Butterworth::highpass(20.0, 2) | Fir::lowpass(255, 12_000.0)).design(48_000.0).unwrap();
    let err = chain.set_coefficients(&other).unwrap_err().to_string();
    assert!(err.contains("stages sos(1) fir(255) on a chain of stages sos(2) fir(255)"), "{err}");
}

mod offload {
    use super::*;
    use ferrofx::run::offload::{Faults, Offload, OFFLOAD_ENGINE_OPTIONS};
    use std::sync::Arc;
    use std::time::Duration;

    const BLOCK: usize = 512;
    const FS: f64 = 48_000.0;

    fn chain() -> DesignedChain {
        ferrofx_testkit::engine::mixed_chain(FS, 63)
    }

    /// `seconds` of stereo noise through `off`, `pace` between blocks; then the CPU
    /// engine's stream delayed by one block, for comparison.
    ///
    /// The test's audio clock waits (up to 2 s) for every job `on_time(k)` says should be
    /// on time, so a loaded machine cannot make it late; the others get only `pace`.
    fn stream(
        off: &mut Offload,
        seconds: usize,
        pace: Duration,
        on_time: impl Fn(u64) -> bool,
        mid: impl Fn(usize),
    ) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
        let frames = (FS as usize * seconds) / BLOCK * BLOCK;
        let input = noise(2, frames, 11);
        let mut out = input.clone();
        let before = assert_no_alloc::violation_count();
        for (k, start) in (0..frames).step_by(BLOCK).enumerate() {
            mid(k);
            if k > 0 && on_time(k as u64 - 1) {
                let t = std::time::Instant::now();
                while off.job_in_flight() && !off.poll_ready() && !off.worker_lost() && t.elapsed() < Duration::from_secs(2) {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            let (l, r) = out.split_at_mut(1);
            let mut bufs = [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]];
            assert_no_alloc::assert_no_alloc(|| off.process(&mut bufs).unwrap());
            std::thread::sleep(pace);
        }
        assert_eq!(assert_no_alloc::violation_count(), before, "the audio side allocated");
        let mut cpu = Engine::with_options(&chain(), 2, BLOCK, OFFLOAD_ENGINE_OPTIONS);
        let mut y = input;
        let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
        cpu.process(&mut s);
        (out, ferrofx_testkit::engine::one_block_late(y, BLOCK))
    }

    #[test]
    fn late_gpu_jobs_are_replaced_by_the_cpu_sample_for_sample() {
        let Some(ctx) = context() else { return };
        let gpu = WgpuChain::new(ctx, &chain(), 2, BLOCK).unwrap();
        // A random third of the jobs are held back 4 ms: four blocks of this test's 1 ms
        // audio clock (the proportion of 40 ms at 48 kHz and 512 frames).
        let late = |seq: u64| (seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61).is_multiple_of(3);
        let faults = Faults {
            delay: Some(Arc::new(move |seq| Duration::from_millis(if late(seq) { 4 } else { 0 }))),
            die_at: None,
        };
        let mut off = Offload::with_faults(&chain(), 2, BLOCK, gpu, faults).unwrap();
        let (out, want) = stream(&mut off, 10, Duration::from_millis(1), |seq| !late(seq), |_| {});
        let e = rel_error(&out, &want);
        let st = off.stats();
        println!("late jobs: {st:?}, error vs CPU {e:.2e}, last worker time {:.2e} s", off.last_worker_seconds());
        assert!(e <= TIME_TOLERANCE, "{e:.3e}");
        // Every delayed job is late, and so are the jobs queued behind one in the worker
        // (they are handed back unrun); the rest come back in time (measured: ~30%
        // offloaded alone, 19% while the other GPU tests load lavapipe's cores in CI).
        assert!(st.offloaded >= st.blocks / 10 && st.fallbacks >= st.blocks / 4, "{st:?}");
        assert!(!off.worker_lost());
    }

    #[test]
    fn a_dying_worker_and_a_lost_device_leave_an_exact_cpu_stream() {
        let Some(ctx) = context() else { return };
        let faults = Faults { delay: None, die_at: Some(100) };
        let mut off = Offload::with_faults(&chain(), 2, BLOCK, WgpuChain::new(ctx, &chain(), 2, BLOCK).unwrap(), faults).unwrap();
        let (out, want) = stream(&mut off, 3, Duration::from_millis(1), |_| true, |_| {});
        assert!(rel_error(&out, &want) <= TIME_TOLERANCE);
        assert!(off.worker_lost() && off.stats().offloaded > 0, "{:?}", off.stats());

        // A device of its own, destroyed mid-stream.
        let own = WgpuContext::new().unwrap();
        let mut off = Offload::new(&chain(), 2, BLOCK, WgpuChain::new(&own, &chain(), 2, BLOCK).unwrap()).unwrap();
        let (out, want) = stream(&mut off, 3, Duration::from_millis(1), |_| true, |k| {
            if k == 150 {
                own.simulate_device_loss();
            }
        });
        let e = rel_error(&out, &want);
        println!("device lost: {:?}, error vs CPU {e:.2e}", off.stats());
        assert!(e <= TIME_TOLERANCE, "{e:.3e}");
        assert!(off.worker_lost(), "the worker should have stopped: {:?}", off.stats());
        assert!(off.stats().offloaded > 0);
    }
}

/// The fused cascade scan's shader (`shaders/sos_fused.wgsl`, opt-in): an IIR chain's
/// cascade over blocks of three tiles and a part follows the fused kernels' CPU model
/// (`gpu::fused::model_fused`; lavapipe does not fuse its multiply-adds, so within a few
/// float32 roundings, as the per-section shader above), in groups of 1, 3 and 8, its state
/// carried from block to block; and the CPU engine within the tolerance. A short block in
/// the stream keeps the per-section shader; the mixed chain's two cascades around a FIR
/// both run fused.
#[test]
fn the_fused_shader_follows_its_model_and_the_cpu() {
    use ferrofx::gpu::fused::{fuse_cascade, model_fused, FUSED_CHUNK_FRAMES, FUSED_MIN_FRAMES, FUSED_TILE};
    let Some(ctx) = context() else { return };
    let designed = (Butterworth::highpass(30.0, 4) | Chebyshev1::lowpass(9000.0, 6, 0.5) | Biquad::peaking(1000.0, 2.0, 6.0))
        .design(48_000.0)
        .unwrap();
    let forms = ferrofx_testkit::engine::gpu_forms(&designed);
    let big = 3 * FUSED_TILE * FUSED_CHUNK_FRAMES + 1001;
    let blocks = [big, FUSED_MIN_FRAMES + 7];
    let total: usize = blocks.iter().sum();
    let input = noise(2, total, 21);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    for group_max in [1usize, 3, 8] {
        let mut chain = WgpuChain::new(ctx, &designed, 2, big).unwrap();
        chain.set_fused(group_max).unwrap();
        assert_eq!(chain.fused_status(), (group_max, vec![true]));
        let groups = fuse_cascade(&forms, group_max, FUSED_CHUNK_FRAMES);
        let mut model = input.clone();
        let mut model_states: Vec<Vec<Vec<[f32; 2]>>> = (0..2).map(|_| groups.iter().map(|g| vec![[0.0; 2]; g.sections.len()]).collect()).collect();
        let mut got = vec![Vec::new(); 2];
        let mut state = chain.new_state();
        let mut at = 0;
        for &n in &blocks {
            let mut data: Vec<f32> = input.iter().flat_map(|c| c[at..at + n].iter().copied()).collect();
            chain.process(&mut data, n, &mut state).unwrap();
            for ch in 0..2 {
                got[ch].extend_from_slice(&data[ch * n..(ch + 1) * n]);
                for (g, st) in groups.iter().zip(model_states[ch].iter_mut()) {
                    model_fused(g, &mut model[ch][at..at + n], st, FUSED_CHUNK_FRAMES);
                }
            }
            at += n;
        }
        let e_model = rel_error(&got, &model);
        let e_cpu = rel_error(&got, &cpu);
        println!("fused, groups of {group_max}: {e_model:.2e} of the peak from its model, {e_cpu:.2e} from the CPU");
        assert!(e_model <= 2e-6, "groups of {group_max}: {e_model:.3e} from the model");
        assert!(e_cpu <= TIME_TOLERANCE, "groups of {group_max}: {e_cpu:.3e} from the CPU");
    }
    // Two cascades around a FIR, through a stream in blocks of the chain's largest.
    let designed = (Butterworth::highpass(20.0, 4) | Fir::lowpass(255, 12_000.0) | Chebyshev1::lowpass(9000.0, 6, 0.5)).design(48_000.0).unwrap();
    let input = noise(3, 2 * big + 99, 22);
    let mut gpu = WgpuStream::new(ctx, &designed, 3, FUSED_MIN_FRAMES * 2).unwrap();
    gpu.chain_mut().set_fused(8).unwrap();
    assert_eq!(gpu.chain_mut().fused_status(), (8, vec![true, true]));
    let mut out = input.clone();
    let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[..]).collect();
    gpu.process(&mut slices).unwrap();
    let e = rel_error(&out, &run_engine(&designed, &input, 4096, EngineOptions::default()));
    println!("fused mixed chain in a stream: {e:.2e} of the peak from the CPU");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
}

/// The tuning reaches the chains: a context opened with the fused scan on
/// (`with_fused_sections`, what `GpuTuning::wgpu_fused_sections` sets when the backend
/// opens) builds chains that run their cascades fused, and the backend's prepared stream
/// over that context meets the CPU engine's tolerance on a long input.
#[test]
fn a_context_tuned_for_the_fused_scan_builds_fused_chains() {
    use ferrofx::gpu::fused::FUSED_MIN_FRAMES;
    use ferrofx::run::backend::Backend;
    let Some(ctx) = context() else { return };
    let tuned = ctx.clone().with_fused_sections(6);
    assert_eq!((ctx.fused_sections(), tuned.fused_sections()), (0, 6));
    let designed = (Butterworth::highpass(25.0, 4) | Elliptic::lowpass(12_000.0, 6, 0.1, 70.0)).design(48_000.0).unwrap();
    let chain = WgpuChain::new(&tuned, &designed, 2, 2 * FUSED_MIN_FRAMES).unwrap();
    assert_eq!(chain.fused_status(), (6, vec![true]));
    assert_eq!(WgpuChain::new(ctx, &designed, 2, 2 * FUSED_MIN_FRAMES).unwrap().fused_status(), (0, vec![false]));
    let backend = ferrofx::gpu::wgpu::WgpuBackend::new(tuned);
    let mut prepared = backend.prepare(&designed, 2, 2 * FUSED_MIN_FRAMES).unwrap();
    let input = noise(2, 5 * FUSED_MIN_FRAMES + 3, 41);
    let mut out = input.clone();
    let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[..]).collect();
    prepared.process(&mut slices).unwrap();
    let e = rel_error(&out, &run_engine(&designed, &input, 4096, EngineOptions::default()));
    println!("tuned context, prepared stream: {e:.2e} of the peak from the CPU");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
}

/// The pipeline shader for short blocks (opt-in, `WgpuChain::set_pipeline`): 24 bands
/// (one cascade of 24 sections after design: one dispatch, 24 invocations at work) and
/// the mixed chain (cascades around a FIR: two dispatches) over blocks of 1 to 2,048
/// frames, state carried, equal the sequential path with the same limit bit for bit
/// (output and end state) and meet the CPU engine's tolerance; a limit past the shader's
/// loop is refused, and on a software adapter one whose sequential loops would pass
/// lavapipe's limit (24 sections x 4,096 frames).
#[test]
fn the_pipeline_shader_equals_the_sequential_path_bit_for_bit() {
    let Some(ctx) = context() else { return };
    for (name, designed, dispatches) in [("24 bands", ferrofx_testkit::engine::bands_chain(48_000.0, 24), 1usize), ("mixed chain", ferrofx_testkit::engine::mixed_chain(48_000.0, 255), 2)] {
        let run = |pipe: bool, max: usize, blocks: &[usize], input: &[Vec<f32>]| {
            let mut chain = WgpuChain::new(ctx, &designed, 2, max).unwrap();
            if pipe {
                chain.set_pipeline(max).unwrap();
                assert_eq!(chain.pipeline_status(), (max, dispatches), "{name}");
            } else {
                chain.set_sequential_max(max);
            }
            let mut state = chain.new_state();
            let got = ferrofx_testkit::engine::through_blocks(input, blocks, |data, n| chain.process(data, n, &mut state).unwrap());
            (got, state)
        };
        let blocks = [32usize, 64, 1, 100, 1024, 2048, 31, 2000, 512];
        let total: usize = blocks.iter().sum();
        let input = noise(2, total, 17);
        let (piped, piped_state) = run(true, 2048, &blocks, &input);
        let (sequential, sequential_state) = run(false, 2048, &blocks, &input);
        for (ch, (a, s)) in piped.iter().zip(&sequential).enumerate() {
            if let Some(n) = (0..total).find(|&n| a[n].to_bits() != s[n].to_bits()) {
                panic!("{name}: channel {ch} differs first at {n}: {} against {}", a[n], s[n]);
            }
        }
        assert_eq!(piped_state.sos, sequential_state.sos, "{name}: the end state");
        let long = [2048usize, 1500, 1, 2048];
        let input = noise(2, long.iter().sum(), 19);
        let (piped, _) = run(true, 2048, &long, &input);
        let e = rel_error(&piped, &run_engine(&designed, &input, 4096, EngineOptions::default()));
        println!("pipeline shader, {name}: {e:.2e} of the peak from the CPU");
        assert!(e <= TIME_TOLERANCE, "{name}: {e:.3e}");
    }
    let mut chain = WgpuChain::new(ctx, &ferrofx_testkit::engine::bands_chain(48_000.0, 24), 1, 64).unwrap();
    let e = chain.set_pipeline(ferrofx::gpu::wgpu::WGPU_PIPE_MAX_FRAMES + 1).unwrap_err();
    assert!(e.to_string().contains("(at most 32768 on wgpu)"), "{e}");
    if ctx.report().is_cpu() {
        let e = chain.set_pipeline(4096).unwrap_err();
        assert!(e.to_string().contains("a cascade of 24 sections would loop 98304 times"), "{e}");
    }
}

/// The tuning reaches the chains: a context with the pipeline on plans it for every
/// chain it builds, and a resident chain whose unit runs piped keeps a stream of calls
/// equal to one call bit for bit (`gpu_resident.rs` covers resident chains at large).
#[test]
fn a_context_tuned_for_the_pipeline_builds_piped_chains() {
    let Some(ctx) = context() else { return };
    let tuned = ctx.clone().with_pipeline_frames(2048);
    let designed = ferrofx_testkit::engine::mixed_chain(48_000.0, 255);
    assert_eq!(WgpuChain::new(&tuned, &designed, 2, 4096).unwrap().pipeline_status(), (2048, 2));
    assert_eq!(WgpuChain::new(ctx, &designed, 2, 4096).unwrap().pipeline_status(), (0, 0));
}


/// The pipeline shader over a seeded sweep: random chains (bells, shelves and cuts of
/// every IIR family as separate or fused cascades, sometimes a FIR between them, more
/// than 32 sections in some: several dispatches), channels, and blocks of 1 to 1,024
/// frames; bit for bit the sequential path, output and end state.
#[test]
fn the_pipeline_shader_over_a_seeded_sweep_of_chains() {
    use ferrofx::chain::{Chain, Chebyshev2};
    use ferrofx_testkit::Rng;
    let Some(ctx) = context() else { return };
    let mut rng = Rng::new(4352);
    for case in 0..10u64 {
        let f = |rng: &mut Rng, lo: f64, hi: f64| lo * (hi / lo).powf(rng.unit());
        let mut chain = Chain::from(Butterworth::highpass(f(&mut rng, 10.0, 200.0), 1 + rng.below(6)));
        for _ in 0..1 + rng.below(if case % 3 == 0 { 30 } else { 6 }) {
            chain = match rng.below(6) {
                0 => chain | Chebyshev1::lowpass(f(&mut rng, 2000.0, 18_000.0), 2 + rng.below(6), 0.5),
                1 => chain | Chebyshev2::highpass(f(&mut rng, 20.0, 400.0), 2 + rng.below(5), 60.0),
                2 => chain | Elliptic::lowpass(f(&mut rng, 3000.0, 18_000.0), 2 + rng.below(5), 0.1, 70.0),
                3 if rng.below(4) == 0 => chain | Fir::lowpass(31, 15_000.0),
                _ => chain | Biquad::peaking(f(&mut rng, 30.0, 16_000.0), 0.3 + 4.0 * rng.unit(), -12.0 + 24.0 * rng.unit()),
            };
        }
        let designed = chain.design(48_000.0).unwrap();
        let channels = 1 + rng.below(3);
        let blocks: Vec<usize> = (0..4).map(|_| 1 + rng.below(1024)).collect();
        let total: usize = blocks.iter().sum();
        let input = noise(channels, total, 600 + case);
        let run = |pipe: bool| {
            let mut chain = match WgpuChain::new(ctx, &designed, channels, 1024) {
                Ok(c) => c,
                Err(e) => return Err(e.to_string()),
            };
            if pipe {
                chain.set_pipeline(1024).map_err(|e| e.to_string())?;
            } else {
                chain.set_sequential_max(1024);
            }
            let mut state = chain.new_state();
            let got = ferrofx_testkit::engine::through_blocks(&input, &blocks, |data, n| chain.process(data, n, &mut state).unwrap());
            Ok((got, state, chain.pipeline_status()))
        };
        let (piped, piped_state, status) = match run(true) {
            Ok(r) => r,
            // Declined (precision, or lavapipe's loop limit): said, and skipped.
            Err(why) => {
                println!("case {case}: declined: {why}");
                continue;
            }
        };
        let (sequential, sequential_state, _) = run(false).unwrap();
        let what = format!("case {case}: {} sections, {channels} ch, blocks {blocks:?}, {} dispatch(es)", designed.sections(), status.1);
        for (ch, (a, s)) in piped.iter().zip(&sequential).enumerate() {
            if let Some(n) = (0..total).find(|&n| a[n].to_bits() != s[n].to_bits()) {
                panic!("{what}: channel {ch} differs first at {n}: {} against {}", a[n], s[n]);
            }
        }
        assert_eq!(piped_state.sos, sequential_state.sos, "{what}: the end state");
        println!("{what}: equal");
    }
}
