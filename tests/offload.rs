//! The pipelined offload (GPU groundwork, run here with the CPU executor on the worker
//! thread): its output is always the CPU's output delayed by one block, whatever the
//! worker does: on time, late for a random third of the jobs, dead mid-way, or reporting
//! device loss. The audio side never allocates.

use assert_no_alloc::{assert_no_alloc, violation_count, AllocDisabler};
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1};
use ferrofx::run::offload::{CpuExecutor, ExecError, Executor, Faults, Job, Offload};
use ferrofx::{DesignedChain, Engine};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

const BLOCK: usize = 512;
const FS: f64 = 48_000.0;

/// SOS stages around a direct FIR: the job state holds both kinds.
fn sections() -> DesignedChain {
    let chain: Chain = Butterworth::highpass(20.0, 4)
        | ferrofx::chain::Fir::lowpass(63, 12_000.0)
        | Chebyshev1::lowpass(9000.0, 6, 0.5)
        | Biquad::peaking(1000.0, 2.0, 6.0);
    chain.design(FS).unwrap()
}

fn noise(n: usize, seed: u64) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, seed, 1.0)
}

/// 10 s of stereo noise run through `offload` block by block (sleeping `pace` between
/// blocks, the audio clock); returns the output and the number of allocations seen.
fn stream(offload: &mut Offload, pace: Duration) -> (Vec<Vec<f32>>, usize) {
    let frames = (FS as usize * 10) / BLOCK * BLOCK;
    let input: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 1)).collect();
    let mut out = input.clone();
    let before = violation_count();
    for start in (0..frames).step_by(BLOCK) {
        let (l, r) = out.split_at_mut(1);
        let mut bufs = [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]];
        assert_no_alloc(|| offload.process(&mut bufs).unwrap());
        std::thread::sleep(pace);
    }
    (out, (violation_count() - before) as usize)
}

/// The pure CPU stream, delayed by one block.
fn expected(sections: &DesignedChain) -> Vec<Vec<f32>> {
    let frames = (FS as usize * 10) / BLOCK * BLOCK;
    let mut y: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 1)).collect();
    let mut cpu = Engine::with_options(sections, 2, BLOCK, ferrofx::run::offload::OFFLOAD_ENGINE_OPTIONS);
    let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
    cpu.process(&mut s);
    y.into_iter()
        .map(|c| {
            let mut d = vec![0.0f32; BLOCK];
            d.extend_from_slice(&c[..frames - BLOCK]);
            d
        })
        .collect()
}

#[test]
fn on_time_jobs_give_the_cpu_stream_one_block_late() {
    let s = sections();
    let mut off = Offload::new(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK)).unwrap();
    assert_eq!(off.latency_samples(), BLOCK);
    let (out, allocs) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0, "the audio side allocated");
    assert_eq!(out, expected(&s));
    let st = off.stats();
    assert!(st.offloaded > st.blocks / 4, "{st:?}: the worker should mostly keep up at this pace");
    assert!(!off.worker_lost());
}

#[test]
fn a_random_third_of_late_jobs_changes_nothing() {
    let s = sections();
    // Deterministic "random" third: jobs whose hashed sequence number is 0 mod 3 sleep
    // 3 ms, far past the 0.3 ms the test's audio clock waits between blocks.
    let delay = Arc::new(|seq: u64| {
        if seq.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17).is_multiple_of(3) {
            Duration::from_millis(3)
        } else {
            Duration::ZERO
        }
    });
    let faults = Faults { delay: Some(delay), die_at: None };
    let mut off = Offload::with_faults(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK), faults).unwrap();
    let (out, allocs) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0);
    assert_eq!(out, expected(&s), "late jobs must be replaced by the CPU, sample for sample");
    let st = off.stats();
    assert!(st.fallbacks > st.blocks / 10, "{st:?}: the injected delays should have caused fallbacks");
    assert!(st.offloaded > 0, "{st:?}");
}

#[test]
fn a_worker_that_dies_midway_leaves_a_cpu_only_stream() {
    let s = sections();
    let faults = Faults { delay: None, die_at: Some(300) };
    let mut off = Offload::with_faults(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK), faults).unwrap();
    let (out, allocs) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0);
    assert_eq!(out, expected(&s));
    assert!(off.worker_lost(), "the engine must say it went CPU-only");
}

/// An executor whose device is lost at job 200.
struct LosesDevice(CpuExecutor);

impl Executor for LosesDevice {
    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError> {
        if job.seq >= 200 {
            return Err(ExecError::DeviceLost("test: device removed".into()));
        }
        self.0.execute(job)
    }
}

#[test]
fn device_loss_leaves_a_cpu_only_stream() {
    let s = sections();
    let mut off = Offload::new(&s, 2, BLOCK, LosesDevice(CpuExecutor::new(&s, 2, BLOCK))).unwrap();
    let (out, _) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(out, expected(&s));
    assert!(off.worker_lost());
}

#[test]
fn wrong_block_sizes_and_channel_counts_are_refused_untouched() {
    let s = sections();
    let mut off = Offload::new(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK)).unwrap();
    let (mut l, mut r) = (vec![0.5f32; 100], vec![0.5f32; 100]);
    assert!(off.process(&mut [&mut l[..], &mut r[..]]).is_err());
    assert!(l.iter().chain(&r).all(|&v| v == 0.5));
    let mut m = vec![0.5f32; BLOCK];
    assert!(off.process(&mut [&mut m[..]]).is_err());
}
