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

/// An offload of [`sections`] on the CPU executor whose deterministic "random" third of
/// jobs (hashed sequence number 0 mod 3) sleep 3 ms, far past the 0.3 ms the test's audio
/// clock waits between blocks.
fn late_third_offload() -> Offload {
    let s = sections();
    let delay = Arc::new(|seq: u64| {
        if seq.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17).is_multiple_of(3) {
            Duration::from_millis(3)
        } else {
            Duration::ZERO
        }
    });
    let faults = Faults { delay: Some(delay), die_at: None };
    Offload::with_faults(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK), faults).unwrap()
}

#[test]
fn a_random_third_of_late_jobs_changes_nothing() {
    let mut off = late_third_offload();
    let (out, allocs) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0);
    assert_eq!(out, expected(&sections()), "late jobs must be replaced by the CPU, sample for sample");
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

/// The same shape as [`sections`], other coefficients (`k` picks one of three designs).
fn sections_variant(k: usize) -> DesignedChain {
    let f = [1.0, 2.1, 0.6][k % 3];
    let chain: Chain = Butterworth::highpass(20.0 * f, 4)
        | ferrofx::chain::Fir::lowpass(63, 12_000.0 / f)
        | Chebyshev1::lowpass(9000.0 / f, 6, 0.5)
        | Biquad::peaking(1000.0 * f, 2.0, 6.0 - 5.0 * f);
    chain.design(FS).unwrap()
}

/// Retunes before blocks 100, 180 and 181 (two blocks in a row) and 400 (back to the first).
const RETUNES: [(usize, usize); 4] = [(100, 1), (180, 2), (181, 1), (400, 0)];

/// Like [`stream`], retuning `off` before the blocks of [`RETUNES`] (inside the
/// no-allocation check: the design moves in, nothing is freed there; a design handed
/// back is freed outside it). Returns the output, the allocations seen and the block at
/// which each retune was taken.
fn retuned_stream(off: &mut Offload, pace: Duration) -> (Vec<Vec<f32>>, usize, Vec<usize>) {
    let frames = (FS as usize * 10) / BLOCK * BLOCK;
    let input: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 1)).collect();
    let mut out = input.clone();
    let mut designs: Vec<Option<Box<DesignedChain>>> = RETUNES.iter().map(|&(_, k)| Some(Box::new(sections_variant(k)))).collect();
    let mut taken = Vec::new();
    let before = violation_count();
    for (b, start) in (0..frames).step_by(BLOCK).enumerate() {
        let (l, r) = out.split_at_mut(1);
        let mut bufs = [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]];
        for (i, &(at, _)) in RETUNES.iter().enumerate() {
            if b >= at && designs[i].is_some() && taken.len() == i {
                let chain = designs[i].take().unwrap();
                match assert_no_alloc(|| off.retune(chain)) {
                    Ok(spare) => {
                        drop(spare);
                        taken.push(b);
                    }
                    Err(e) => designs[i] = Some(e.into_chain()),
                }
            }
        }
        assert_no_alloc(|| off.process(&mut bufs).unwrap());
        std::thread::sleep(pace);
    }
    (out, (violation_count() - before) as usize, taken)
}

/// The CPU engine taking each design at block `taken[i]`, delayed by one block.
fn expected_retuned(taken: &[usize]) -> Vec<Vec<f32>> {
    let frames = (FS as usize * 10) / BLOCK * BLOCK;
    let mut y: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 1)).collect();
    let mut cpu = Engine::with_options(&sections(), 2, BLOCK, ferrofx::run::offload::OFFLOAD_ENGINE_OPTIONS);
    for (b, start) in (0..frames).step_by(BLOCK).enumerate() {
        for (i, _) in taken.iter().enumerate().filter(|(_, &t)| t == b) {
            cpu.update(&sections_variant(RETUNES[i].1)).unwrap();
        }
        let (l, r) = y.split_at_mut(1);
        cpu.process(&mut [&mut l[0][start..start + BLOCK], &mut r[0][start..start + BLOCK]]);
    }
    y.into_iter()
        .map(|c| {
            let mut d = vec![0.0f32; BLOCK];
            d.extend_from_slice(&c[..frames - BLOCK]);
            d
        })
        .collect()
}

/// Counts the designs the worker's executor took.
struct CountsUpdates(CpuExecutor, Arc<std::sync::atomic::AtomicUsize>);

impl Executor for CountsUpdates {
    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError> {
        self.0.execute(job)
    }
    fn updates_in_place(&self) -> bool {
        true
    }
    fn update(&mut self, chain: &DesignedChain) -> Result<(), ExecError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.update(chain)
    }
}

#[test]
fn retuned_coefficients_change_both_sides_at_the_same_block() {
    let s = sections();
    let updates = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut off = Offload::new(&s, 2, BLOCK, CountsUpdates(CpuExecutor::new(&s, 2, BLOCK), updates.clone())).unwrap();
    let (out, allocs, taken) = retuned_stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0, "the audio side allocated or freed");
    assert_eq!(taken, RETUNES.iter().map(|&(at, _)| at).collect::<Vec<_>>(), "every retune is taken at once");
    assert_eq!(out, expected_retuned(&taken), "the stream must be the CPU engine's, retuned at the same blocks");
    // A stream that ignored the retunes is another signal (the test can fail).
    assert_ne!(out, expected(&s));
    assert_eq!(updates.load(std::sync::atomic::Ordering::Relaxed), RETUNES.len(), "the worker takes every design");
    let st = off.stats();
    assert!(!off.worker_lost(), "{st:?}");
    if pace_checked() {
        assert!(st.offloaded > st.blocks / 4, "{st:?}");
    }
}

/// Whether the tests check the worker's wall-clock pace: not where `FERROFX_PACE_UNCHECKED`
/// is set (`scripts/check-aarch64.sh`: under emulation the worker cannot keep it; the
/// output checks still run).
fn pace_checked() -> bool {
    let checked = std::env::var_os("FERROFX_PACE_UNCHECKED").is_none();
    if !checked {
        println!("pace not checked (FERROFX_PACE_UNCHECKED)");
    }
    checked
}

#[test]
fn retunes_with_a_random_third_of_late_jobs_change_nothing() {
    let mut off = late_third_offload();
    let (out, allocs, taken) = retuned_stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0);
    assert_eq!(taken.len(), RETUNES.len(), "{taken:?}");
    assert_eq!(out, expected_retuned(&taken), "late jobs around a retune are the CPU's, sample for sample");
    let st = off.stats();
    assert!(st.fallbacks > st.blocks / 10 && st.offloaded > 0, "{st:?}");
}

/// Declines every design (as a GPU backend declines one its float32 form would miss).
struct DeclinesUpdates(CpuExecutor);

impl Executor for DeclinesUpdates {
    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError> {
        self.0.execute(job)
    }
    fn updates_in_place(&self) -> bool {
        true
    }
    fn update(&mut self, _: &DesignedChain) -> Result<(), ExecError> {
        Err(ExecError::Failed("test: declined".into()))
    }
}

#[test]
fn a_declined_retune_ends_the_worker_and_the_cpu_carries_on_exactly() {
    let s = sections();
    let mut off = Offload::new(&s, 2, BLOCK, DeclinesUpdates(CpuExecutor::new(&s, 2, BLOCK))).unwrap();
    let (out, allocs, taken) = retuned_stream(&mut off, Duration::from_micros(300));
    assert_eq!(allocs, 0);
    assert!(off.worker_lost(), "a declined design must end the worker");
    // The first retune ended the worker; the CPU side took it and every later one.
    assert_eq!(taken.len(), RETUNES.len(), "{taken:?}");
    assert_eq!(out, expected_retuned(&taken));
    // The worker's pace before the first retune (wall clock).
    if pace_checked() {
        assert!(off.stats().offloaded > 50, "{:?}", off.stats());
    }
    assert!(off.take_retired().is_some(), "the last design, taken without a worker, waits to be freed");
}

#[test]
fn retunes_of_another_shape_or_without_in_place_updates_are_refused_untouched() {
    let s = sections();
    // Another shape: refused, the design handed back, the stream unchanged.
    let mut off = Offload::new(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK)).unwrap();
    let other: Chain = Butterworth::highpass(20.0, 2) | Biquad::peaking(1000.0, 2.0, 6.0);
    let err = off.retune(Box::new(other.design(FS).unwrap())).unwrap_err();
    assert!(matches!(err, ferrofx::run::offload::RetuneError::Shape { .. }), "{err}");
    assert!(err.to_string().contains("another shape"), "{err}");
    let (out, _) = stream(&mut off, Duration::from_micros(300));
    assert_eq!(out, expected(&s));
    // An executor that rebuilds for new coefficients: refused, the caller builds anew.
    let mut off = Offload::new(&s, 2, BLOCK, LosesDevice(CpuExecutor::new(&s, 2, BLOCK))).unwrap();
    let err = off.retune(Box::new(sections_variant(1))).unwrap_err();
    assert!(matches!(err, ferrofx::run::offload::RetuneError::NotInPlace { .. }), "{err}");
    assert!(err.to_string().contains("cannot take new coefficients in place"), "{err}");
    assert_eq!(*err.into_chain(), sections_variant(1));
}

#[test]
fn an_offload_without_a_worker_retunes_its_cpu_side_at_the_same_blocks() {
    let mut off = Offload::cpu_only(&sections(), 2, BLOCK).unwrap();
    let (out, allocs, taken) = retuned_stream(&mut off, Duration::ZERO);
    assert_eq!(allocs, 0);
    assert_eq!(taken.len(), RETUNES.len(), "{taken:?}");
    assert_eq!(out, expected_retuned(&taken));
    assert_eq!(off.stats().offloaded, 0);
}

#[test]
fn a_retune_that_has_not_taken_effect_is_replaced_and_handed_back() {
    let s = sections();
    let mut off = Offload::new(&s, 2, BLOCK, CpuExecutor::new(&s, 2, BLOCK)).unwrap();
    let (mut l, mut r) = (noise(BLOCK, 1), noise(BLOCK, 2));
    off.process(&mut [&mut l[..], &mut r[..]]).unwrap();
    // A block is in flight: the first design waits for it; the second replaces it.
    assert!(off.retune(Box::new(sections_variant(1))).unwrap().is_none());
    let spare = off.retune(Box::new(sections_variant(2))).unwrap();
    assert_eq!(spare.as_deref(), Some(&sections_variant(1)), "the replaced design comes back");
}
