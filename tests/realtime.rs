//! The realtime stream a plugin runs (`ferrofx::run::realtime`): host blocks of any size
//! re-blocked through an offload, exactly one offload block of latency, routed by policy.
//! Run here with the CPU executor on the worker thread (the GPU executor is checked the
//! same way in `gpu_wgpu.rs`): whatever the host's block sizes, the route or the
//! worker's timing, the output is the CPU engine's output delayed by one block, sample
//! for sample, and the audio side never allocates.

use assert_no_alloc::{assert_no_alloc, violation_count, AllocDisabler};
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, Elliptic};
use ferrofx::run::offload::{CpuExecutor, Faults, Offload, OFFLOAD_ENGINE_OPTIONS};
use ferrofx::run::realtime::{Policy, RealtimeOffload};
use ferrofx::run::router::{Reason, Route};
use ferrofx::{DesignedChain, Engine};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

const BLOCK: usize = 1024;
const FS: f64 = 48_000.0;

fn chain_a() -> DesignedChain {
    let chain: Chain = Butterworth::highpass(20.0, 4)
        | ferrofx::chain::Fir::lowpass(63, 12_000.0)
        | Chebyshev1::lowpass(9000.0, 6, 0.5)
        | Biquad::peaking(1000.0, 2.0, 6.0);
    chain.design(FS).unwrap()
}

fn chain_b() -> DesignedChain {
    let chain: Chain = Elliptic::lowpass(2000.0, 6, 0.5, 60.0) | Biquad::peaking(300.0, 1.0, -4.0);
    chain.design(FS).unwrap()
}

fn noise(n: usize, seed: u64) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, seed, 1.0)
}

fn input(frames: usize) -> Vec<Vec<f32>> {
    (0..2).map(|c| noise(frames, c + 7)).collect()
}

/// `x` through the CPU engine (the offload's own options) from zero state.
fn cpu(chain: &DesignedChain, x: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let mut y = x.to_vec();
    let mut engine = Engine::with_options(chain, y.len(), BLOCK, OFFLOAD_ENGINE_OPTIONS);
    let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
    engine.process(&mut s);
    y
}

/// `y` delayed by `d` samples (zeros first), same length.
fn delayed(y: &[Vec<f32>], d: usize) -> Vec<Vec<f32>> {
    y.iter()
        .map(|c| {
            let mut o = vec![0.0f32; d.min(c.len())];
            o.extend_from_slice(&c[..c.len() - o.len()]);
            o
        })
        .collect()
}

/// The stream expected when chain B takes over at block `s`: `before` up to that block,
/// then `x` from there through chain B from a zero state; all one block late.
fn switched(before: &[Vec<f32>], x: &[Vec<f32>], s: usize) -> Vec<Vec<f32>> {
    let tail: Vec<Vec<f32>> = x.iter().map(|c| c[s * BLOCK..].to_vec()).collect();
    let b = cpu(&chain_b(), &tail);
    let joined: Vec<Vec<f32>> =
        before.iter().zip(&b).map(|(a, b)| a[..s * BLOCK].iter().chain(b).copied().collect()).collect();
    delayed(&joined, BLOCK)
}

/// Host block sizes: a fixed pseudo-random sequence in 1..=BLOCK (most not dividing it).
fn irregular_sizes() -> impl FnMut() -> usize {
    let mut r = ferrofx_testkit::Rng::new(0x2545_F491_4F6C_DD1D);
    move || 1 + r.below(BLOCK)
}

/// Runs `x` through the stream in host blocks from `sizes`, sleeping `pace` after each
/// (the audio clock); `between(call, stream, offload)` runs between calls. Returns the
/// output and the allocations seen inside `process`.
fn run(
    stream: &mut RealtimeOffload,
    offload: &mut Offload,
    x: &[Vec<f32>],
    mut sizes: impl FnMut() -> usize,
    pace: Duration,
    mut between: impl FnMut(usize, &mut RealtimeOffload, &mut Offload),
) -> (Vec<Vec<f32>>, u32) {
    let mut y = x.to_vec();
    let frames = x[0].len();
    let before = violation_count();
    let (mut start, mut call) = (0, 0);
    while start < frames {
        let n = sizes().min(frames - start);
        let (l, r) = y.split_at_mut(1);
        let mut bufs = [&mut l[0][start..start + n], &mut r[0][start..start + n]];
        assert_no_alloc(|| stream.process(Some(&mut *offload), &mut bufs));
        start += n;
        call += 1;
        if !pace.is_zero() {
            std::thread::sleep(pace);
        }
        between(call, stream, offload);
    }
    (y, violation_count() - before)
}

#[test]
fn any_host_block_sizes_give_the_cpu_stream_one_block_late() {
    let frames = 48_000 * 3;
    let x = input(frames);
    let expected = delayed(&cpu(&chain_a(), &x), BLOCK);
    for policy in [Policy::Gpu, Policy::Auto] {
        let mut stream = RealtimeOffload::new(2, BLOCK, FS, policy);
        assert_eq!(stream.latency_samples(), BLOCK);
        let mut off = Offload::new(&chain_a(), 2, BLOCK, CpuExecutor::new(&chain_a(), 2, BLOCK)).unwrap();
        let (y, allocs) = run(&mut stream, &mut off, &x, irregular_sizes(), Duration::ZERO, |_, _, _| {});
        println!("{policy:?}, irregular blocks: {:?}", stream.stats());
        assert_eq!(allocs, 0, "the audio side allocated");
        assert_eq!(y, expected, "{policy:?}: the output must be the CPU stream delayed by {BLOCK}");
    }
}

#[test]
fn aligned_host_blocks_reach_the_worker() {
    let frames = 48_000 * 3;
    let x = input(frames);
    let expected = delayed(&cpu(&chain_a(), &x), BLOCK);
    // Host blocks of the offload block, and of a quarter of it: the worker gets one host
    // period per block; paced at 2 ms per call, it keeps up.
    for host in [BLOCK, BLOCK / 4] {
        let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Gpu);
        let mut off = Offload::new(&chain_a(), 2, BLOCK, CpuExecutor::new(&chain_a(), 2, BLOCK)).unwrap();
        let (y, allocs) = run(&mut stream, &mut off, &x, || host, Duration::from_millis(2), |_, _, _| {});
        let st = stream.stats();
        println!("host blocks of {host}: {st:?}");
        assert_eq!(allocs, 0);
        assert_eq!(y, expected);
        assert!(st.on_worker > st.blocks / 2, "{st:?}: most blocks should come back from the worker");
        let d = stream.decision();
        assert!(d.gpu_median_s.is_finite(), "the worker's times are measured: {d:?}");
    }
}

#[test]
fn auto_leaves_a_worker_that_misses_its_deadlines() {
    // Every job is held 2 deadlines; calls come every 1 ms (faster than real time), so
    // the worker misses nearly every block.
    let frames = 48_000 * 4;
    let x = input(frames);
    let expected = delayed(&cpu(&chain_a(), &x), BLOCK);
    let faults = Faults { delay: Some(Arc::new(|_| Duration::from_millis(40))), die_at: None };
    let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Auto);
    let mut off = Offload::with_faults(&chain_a(), 2, BLOCK, CpuExecutor::new(&chain_a(), 2, BLOCK), faults).unwrap();
    let (y, allocs) = run(&mut stream, &mut off, &x, || BLOCK, Duration::from_millis(1), |_, _, _| {});
    let (st, d) = (stream.stats(), stream.decision());
    println!("slow worker: {st:?}\n{d:?}");
    assert_eq!(allocs, 0);
    assert_eq!(y, expected, "late jobs are replaced by the CPU, sample for sample");
    assert_eq!(d.route, Route::Cpu);
    assert_eq!(d.reason, Reason::GpuTailTooLong, "{d:?}");
    assert!(d.cpu_median_s.is_finite() && d.gpu_tail_s >= d.deadline_s);
    // Once decided, only the probes go to the worker.
    assert!(st.on_cpu > st.blocks / 2, "{st:?}");
}

#[test]
fn a_chain_swapped_mid_stream_continues_without_a_gap() {
    let frames = 48_000 * 2;
    let x = input(frames);
    let host = BLOCK / 2;
    for swap_after_calls in [41usize, 42] {
        let pos = swap_after_calls * host;
        // Blocks the old offload finished; the rest run through the new chain from a
        // zero state (the block in flight at the swap included).
        let s = pos.div_ceil(BLOCK) - 1;
        let expected = switched(&cpu(&chain_a(), &x), &x, s);

        let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Gpu);
        let mut off = Offload::new(&chain_a(), 2, BLOCK, CpuExecutor::new(&chain_a(), 2, BLOCK)).unwrap();
        let mut next =
            Some(Offload::new(&chain_b(), 2, BLOCK, CpuExecutor::new(&chain_b(), 2, BLOCK)).unwrap());
        let mut old = None;
        let (y, _) = run(&mut stream, &mut off, &x, || host, Duration::ZERO, |call, _, off| {
            if call == swap_after_calls {
                let mut new = next.take().unwrap();
                new.adopt(off);
                old = Some(std::mem::replace(off, new));
            }
        });
        assert_eq!(y, expected, "swap after {swap_after_calls} calls: old chain up to block {s}, then the new one");
    }
}

#[test]
fn cpu_only_offload_and_mismatched_offload_keep_the_latency() {
    let frames = 20_000;
    let x = input(frames);
    // No worker: computed here, still one block late.
    let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Gpu);
    let mut off = Offload::cpu_only(&chain_a(), 2, BLOCK).unwrap();
    assert!(!off.has_worker() && !off.worker_lost());
    let (y, allocs) = run(&mut stream, &mut off, &x, irregular_sizes(), Duration::ZERO, |_, _, _| {});
    assert_eq!(allocs, 0);
    assert_eq!(y, delayed(&cpu(&chain_a(), &x), BLOCK));
    assert_eq!(stream.stats().on_worker, 0);
    // An offload of another block size: the audio passes through, delayed, unfiltered.
    let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Gpu);
    let mut other = Offload::cpu_only(&chain_a(), 2, BLOCK / 2).unwrap();
    let (y, _) = run(&mut stream, &mut other, &x, irregular_sizes(), Duration::ZERO, |_, _, _| {});
    assert_eq!(y, delayed(&x, BLOCK));
    // No offload at all (an empty chain): the same delay.
    let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Auto);
    let mut y = x.clone();
    let mut sizes = irregular_sizes();
    let mut start = 0;
    while start < frames {
        let n = sizes().min(frames - start);
        let (l, r) = y.split_at_mut(1);
        stream.process(None, &mut [&mut l[0][start..start + n], &mut r[0][start..start + n]]);
        start += n;
    }
    assert_eq!(y, delayed(&x, BLOCK));
}

#[test]
fn an_offload_arriving_after_a_plain_delay_continues_without_a_repeat() {
    // The plugin runs a plain delay while the chain is empty; a chain then arrives.
    let frames = 48_000 * 2;
    let x = input(frames);
    let host = BLOCK / 2;
    for switch_after_calls in [41usize, 42] {
        let pos = switch_after_calls * host;
        // Blocks emitted before the switch pass through raw; from block `s` on the new
        // chain runs from a zero state.
        let s = pos.div_ceil(BLOCK) - 1;
        let expected = switched(&x, &x, s);

        let mut stream = RealtimeOffload::new(2, BLOCK, FS, Policy::Gpu);
        let mut off = Offload::new(&chain_b(), 2, BLOCK, CpuExecutor::new(&chain_b(), 2, BLOCK)).unwrap();
        let mut y = x.clone();
        let (mut start, mut call) = (0, 0);
        while start < frames {
            let n = host.min(frames - start);
            let (l, r) = y.split_at_mut(1);
            let bufs = &mut [&mut l[0][start..start + n], &mut r[0][start..start + n]];
            if call < switch_after_calls {
                stream.process(None, bufs);
            } else {
                stream.process(Some(&mut off), bufs);
            }
            start += n;
            call += 1;
        }
        let first = (0..frames).find(|&i| y[0][i] != expected[0][i] || y[1][i] != expected[1][i]);
        assert!(first.is_none(), "switch after {switch_after_calls} calls (block {s}): first difference at {first:?} (block {:?})", first.map(|f| f / BLOCK));
    }
}

/// An offline engine's segmented blocks (time segments run as lanes, with their warm-ups)
/// allocate nothing after construction either.
#[test]
fn offline_time_segments_do_not_allocate() {
    use ferrofx::dsp::sos::segments::Segments;
    use ferrofx::engine::{EngineOptions, Processor};
    // Short impulse responses (warm-ups of under a thousand frames), so a 65,536-frame
    // block is segmented at every channel count below.
    let chain = (Butterworth::lowpass(5000.0, 4) | Biquad::peaking(2000.0, 1.0, 4.0)).design(FS).unwrap();
    let frames = 1 << 16;
    for channels in [1, 2, 3] {
        let mut engine = Engine::with_options(&chain, channels, frames, EngineOptions::offline(channels));
        let segmented = engine.processors().iter().any(|p| match p {
            Processor::Sos(c) => Segments::new(c, EngineOptions::offline(channels).time_segments, frames).segments_for(frames) > 1,
            Processor::Fir(_) => false,
        });
        assert!(segmented, "{channels} channels: the block is not segmented, so this tests nothing");
        let mut x = input(frames);
        x.push(noise(frames, 99));
        let mut s: Vec<&mut [f32]> = x.iter_mut().take(channels).map(|c| &mut c[..]).collect();
        let before = violation_count();
        assert_no_alloc(|| engine.process(&mut s));
        assert_eq!(violation_count(), before, "{channels} channels: the segmented block allocated");
    }
}
