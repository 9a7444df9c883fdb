//! Pipelined offload of fixed-size blocks to a worker thread, with an exact CPU fallback.
//!
//! At block `k` the audio side collects job `k-1` and submits job `k`, so the offloaded
//! path adds exactly one block of latency. **Each job carries the filter state it starts
//! from and returns the state it ends with.** If job `k-1` has not come back when block
//! `k` arrives, the audio side computes block `k-1` itself from the state it already
//! holds, carries on with the state that produces, and throws the late result away when
//! it turns up (jobs carry sequence numbers). The output is therefore always the CPU's
//! output delayed by one block: no gap, no repeat, no drift. If the worker stops (it
//! panicked, or its executor reported device loss), every later block takes the same
//! CPU path and [`Offload::worker_lost`] says so.
//!
//! The audio side only moves preallocated jobs through two `rtrb` single-producer
//! single-consumer rings (submit, done): no allocation, lock, syscall or blocking wait.
//! The worker polls the submit ring with short sleeps.
//!
//! **New coefficients of the same shape** ([`Offload::retune`]) take effect at a block
//! boundary on both sides: the block in flight finishes with the old ones, then the CPU
//! side's engine takes the new ones and the design moves to the worker through a third
//! ring, which applies it before any later job (a GPU executor rewrites its device
//! buffers; CUDA captures no graph again). A design the executor declines ends the
//! worker, so later blocks run on the CPU, exactly.

use crate::chain::DesignedChain;
use crate::engine::{sanitize_input, ChainState, Engine, EngineOptions, StateError};
use crate::dsp::fir::FirMode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Most channels a job carries.
pub const MAX_CHANNELS: usize = 64;

/// One block of work: input, output and the filter state in and out.
pub struct Job {
    pub seq: u64,
    pub frames: usize,
    pub channels: usize,
    /// Planar input, `channels x frames` (capacity `channels x block`).
    pub input: Vec<f32>,
    /// Planar output, same layout.
    pub output: Vec<f32>,
    /// The chain's filter state (SOS states and FIR histories): the state before the
    /// block on submit, after it on return.
    pub state: ChainState,
    /// Seconds the worker spent on the job (set by the worker; for the router).
    pub worker_seconds: f64,
}

/// Why an executor could not run a job. Any of them stops the worker; every later block
/// then runs on the CPU side ([`Offload::worker_lost`] says so).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The device is gone (a driver reset, a removed GPU).
    #[error("the device was lost: {0}; later blocks run on the CPU (open the backend again, e.g. by reactivating the plugin, to use the device)")]
    DeviceLost(String),
    /// The device refused or failed the job for another reason.
    #[error("the device could not run a job: {0}; later blocks run on the CPU")]
    Failed(String),
    /// The job's filter state does not fit the executor's chain.
    #[error("a job's filter state does not fit the executor's chain: {0} (a bug; please report it)")]
    State(String),
    /// The offload was built without a worker.
    #[error("this offload has no worker; every block runs on the CPU")]
    NoWorker,
}

/// Runs jobs on the worker thread (every GPU backend's chain implements it).
pub trait Executor: Send + 'static {
    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError>;

    /// Whether [`Executor::update`] takes new coefficients in place (otherwise
    /// [`Offload::retune`] is refused and a coefficient change needs a new offload).
    fn updates_in_place(&self) -> bool {
        false
    }

    /// Takes the coefficients of `chain` (the shape the executor was built for) for the
    /// jobs that follow; on error the worker stops and later blocks run on the CPU.
    fn update(&mut self, chain: &DesignedChain) -> Result<(), ExecError> {
        let _ = chain;
        Err(ExecError::Failed("this executor cannot take new coefficients in place".into()))
    }
}

/// Runs `process` over planar channel data held in one `Vec` (`channels x frames`).
fn with_planar(data: &mut [f32], channels: usize, frames: usize, f: impl FnOnce(&mut [&mut [f32]])) {
    let mut refs: [&mut [f32]; MAX_CHANNELS] = std::array::from_fn(|_| &mut [][..]);
    let used = channels.min(MAX_CHANNELS);
    for (r, chunk) in refs.iter_mut().zip(data.chunks_mut(frames.max(1))).take(used) {
        *r = chunk;
    }
    f(&mut refs[..used]);
}

/// The engine options of the CPU side of an offload: FIRs on the direct path, whose
/// history is the time-domain state a job carries.
pub const OFFLOAD_ENGINE_OPTIONS: EngineOptions = EngineOptions { fir_mode: FirMode::Direct, time_segments: 0 };

/// The reference executor: the same chain on the CPU of the worker thread.
pub struct CpuExecutor {
    engine: Engine,
}

impl CpuExecutor {
    pub fn new(chain: &DesignedChain, channels: usize, block: usize) -> CpuExecutor {
        CpuExecutor { engine: Engine::with_options(chain, channels, block, OFFLOAD_ENGINE_OPTIONS) }
    }
}

impl Executor for CpuExecutor {
    fn updates_in_place(&self) -> bool {
        true
    }

    fn update(&mut self, chain: &DesignedChain) -> Result<(), ExecError> {
        self.engine.update(chain).map_err(|e| ExecError::Failed(e.to_string()))
    }

    fn execute(&mut self, job: &mut Job) -> Result<(), ExecError> {
        let n = job.channels * job.frames;
        job.output[..n].copy_from_slice(&job.input[..n]);
        self.engine.load_state(&job.state).map_err(|e| ExecError::State(e.to_string()))?;
        let engine = &mut self.engine;
        with_planar(&mut job.output[..n], job.channels, job.frames, |bufs| engine.process(bufs));
        // Same shape as just loaded.
        let _ = engine.save_state(&mut job.state);
        Ok(())
    }
}

/// Faults injected into the worker, for tests of the fallback paths (cargo feature
/// `fault-injection`, off in every product build): a delay per job and a job at which the
/// worker stops.
#[cfg(feature = "fault-injection")]
#[derive(Clone, Default)]
pub struct Faults {
    /// Delay before job `seq` is executed.
    pub delay: Option<Arc<dyn Fn(u64) -> Duration + Send + Sync>>,
    /// The worker exits (as if the device were lost) instead of running this job, or the
    /// first it takes after it (a job may be handed back unrun when the worker is behind).
    pub die_at: Option<u64>,
}

/// Without the `fault-injection` feature the worker has no faults.
#[cfg(not(feature = "fault-injection"))]
#[derive(Clone, Default)]
struct Faults;

/// Why an offload call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    #[error("offloaded processing runs blocks of exactly {expected} frames, got {found}")]
    BlockSize { expected: usize, found: usize },
    #[error("offloaded processing was set up for {expected} channels, got {found}")]
    Channels { expected: usize, found: usize },
}

/// Why [`Offload::retune`] refused new coefficients (nothing changed; the design is
/// handed back inside the error, to be freed off the audio thread).
#[derive(Debug, thiserror::Error)]
pub enum RetuneError {
    /// Another shape: a new offload is needed.
    #[error("new coefficients of another shape: {source}")]
    Shape {
        #[source]
        source: crate::engine::UpdateError,
        chain: Box<DesignedChain>,
    },
    /// The worker's executor cannot take coefficients in place.
    #[error("the offload's executor cannot take new coefficients in place: a new offload is needed")]
    NotInPlace { chain: Box<DesignedChain> },
}

impl RetuneError {
    /// The refused design, to be freed off the audio thread.
    pub fn into_chain(self) -> Box<DesignedChain> {
        match self {
            RetuneError::Shape { chain, .. } | RetuneError::NotInPlace { chain } => chain,
        }
    }
}

/// Counters for the editor and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffloadStats {
    pub blocks: u64,
    /// Blocks the worker returned in time.
    pub offloaded: u64,
    /// Blocks computed on the audio side: late jobs, blocks routed to the CPU, and every
    /// block once the worker is gone.
    pub fallbacks: u64,
    /// Of those, blocks handed to the worker that had not come back in time.
    pub late: u64,
}

/// The audio side of the pipelined offload of one designed chain.
pub struct Offload {
    block: usize,
    channels: usize,
    submit: rtrb::Producer<Box<Job>>,
    done: rtrb::Consumer<Box<Job>>,
    /// Free jobs. Boxed so a job moves through the rings as one pointer (the rings hold
    /// `Box<Job>`), never copying its buffers.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Job>>,
    in_flight: InFlight,
    next_seq: u64,
    /// State after the last block whose output is known (the authoritative state).
    state: ChainState,
    /// Input of the block in flight, for the fallback.
    pending: Vec<f32>,
    /// Output of the previous block, emitted on this call.
    ready: Vec<f32>,
    cpu: Engine,
    alive: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    stats: OffloadStats,
    last_worker_seconds: f64,
    /// The in-flight job, collected early by [`Offload::poll_ready`].
    arrived: Option<Box<Job>>,
    /// False for [`Offload::cpu_only`]: there never was a worker.
    has_worker: bool,
    /// New coefficients to the worker, which applies them before its next job.
    retunes: rtrb::Producer<Box<DesignedChain>>,
    /// Whether the executor takes coefficients in place.
    retunable: bool,
    /// A retune waiting for the block in flight to finish.
    retune_pending: Option<Box<DesignedChain>>,
    /// A design applied here after the worker had stopped (nobody to hand it to); see
    /// [`Offload::take_retired`].
    retired: Option<Box<DesignedChain>>,
}

/// How [`Offload::finish`] completed the block in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Finished {
    /// Nothing was in flight (the start of the stream, or after a reset).
    Nothing,
    /// The worker's result came back in time; `seconds` of worker time.
    Worker { seconds: f64 },
    /// Computed on this thread in `seconds`. `late`: it had been handed to the worker and
    /// had not come back (otherwise it was routed to the CPU, or no worker was there).
    Cpu { seconds: f64, late: bool },
}

/// What is in flight between [`Offload::submit`] and [`Offload::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InFlight {
    None,
    /// With the worker, as job `seq`.
    Worker(u64),
    /// To be computed here at the next finish.
    Cpu,
}

impl Offload {
    /// Starts the worker with `executor` for `chain` on `channels` channels, blocks of
    /// exactly `block` frames. Allocates everything. The CPU side runs FIRs on the direct
    /// path ([`OFFLOAD_ENGINE_OPTIONS`]).
    // `Faults` is a unit struct without the `fault-injection` feature, a struct with it.
    #[allow(clippy::default_constructed_unit_structs)]
    pub fn new<E: Executor>(chain: &DesignedChain, channels: usize, block: usize, executor: E) -> Result<Offload, StateError> {
        Offload::start(chain, channels, block, executor, Faults::default())
    }

    /// [`Offload::new`] with faults injected into the worker (feature `fault-injection`).
    #[cfg(feature = "fault-injection")]
    pub fn with_faults<E: Executor>(
        chain: &DesignedChain,
        channels: usize,
        block: usize,
        executor: E,
        faults: Faults,
    ) -> Result<Offload, StateError> {
        Offload::start(chain, channels, block, executor, faults)
    }

    fn start<E: Executor>(chain: &DesignedChain, channels: usize, block: usize, executor: E, faults: Faults) -> Result<Offload, StateError> {
        let channels = channels.min(MAX_CHANNELS);
        let block = block.max(1);
        let cpu = Engine::with_options(chain, channels, block, OFFLOAD_ENGINE_OPTIONS);
        let zero_state = cpu.new_state()?;
        let make_job = || {
            Box::new(Job {
                seq: 0,
                frames: block,
                channels,
                input: vec![0.0; channels * block],
                output: vec![0.0; channels * block],
                state: zero_state.clone(),
                worker_seconds: 0.0,
            })
        };
        let (submit, worker_in) = rtrb::RingBuffer::<Box<Job>>::new(4);
        let (worker_out, done) = rtrb::RingBuffer::<Box<Job>>::new(4);
        let (retunes, worker_retunes) = rtrb::RingBuffer::<Box<DesignedChain>>::new(4);
        let retunable = executor.updates_in_place();
        let alive = Arc::new(AtomicBool::new(true));
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (alive, stop) = (alive.clone(), stop.clone());
            std::thread::Builder::new()
                .name("ferrofx-offload".into())
                .spawn(move || worker_loop(executor, worker_in, worker_out, worker_retunes, faults, alive, stop))
                .ok()
        };
        if worker.is_none() {
            alive.store(false, Ordering::Release);
        }
        let mut spare = Vec::with_capacity(8);
        for _ in 0..3 {
            spare.push(make_job());
        }
        Ok(Offload {
            block,
            channels,
            submit,
            done,
            spare,
            in_flight: InFlight::None,
            next_seq: 0,
            state: zero_state,
            pending: vec![0.0; channels * block],
            ready: vec![0.0; channels * block],
            cpu,
            alive,
            stop,
            worker,
            stats: OffloadStats::default(),
            last_worker_seconds: f64::NAN,
            arrived: None,
            has_worker: true,
            retunes,
            retunable,
            retune_pending: None,
            retired: None,
        })
    }

    /// An offload with no worker: every block is computed on this thread at
    /// [`Offload::finish`], still one block late. For chains the worker cannot run (and
    /// as a pure delay for an empty chain), so a stream keeps one latency whatever runs.
    pub fn cpu_only(chain: &DesignedChain, channels: usize, block: usize) -> Result<Offload, StateError> {
        struct Never;
        impl Executor for Never {
            fn execute(&mut self, _job: &mut Job) -> Result<(), ExecError> {
                Err(ExecError::NoWorker)
            }
        }
        let mut off = Offload::new(chain, channels, block, Never)?;
        // No job is ever handed to it: stop the worker thread now rather than let it poll.
        off.has_worker = false;
        off.stop.store(true, Ordering::Release);
        if let Some(w) = off.worker.take() {
            let _ = w.join();
        }
        off.alive.store(false, Ordering::Release);
        Ok(off)
    }

    /// Frames per block.
    pub fn block(&self) -> usize {
        self.block
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    /// True when blocks can go to a worker (built with one, and it is still running).
    pub fn has_worker(&self) -> bool {
        self.has_worker && !self.worker_lost()
    }

    /// Latency the offloaded path adds: one block.
    pub fn latency_samples(&self) -> usize {
        self.block
    }

    /// True once the worker has stopped (panic, device loss): every block then runs on
    /// the CPU, still with one block of latency. False for [`Offload::cpu_only`].
    pub fn worker_lost(&self) -> bool {
        self.has_worker && !self.alive.load(Ordering::Acquire)
    }

    /// A flag that is true while the worker runs (false from the start for
    /// [`Offload::cpu_only`]): whoever builds offloads can tell, off the audio thread,
    /// whether the one running still has its worker.
    pub fn worker_alive(&self) -> Arc<AtomicBool> {
        self.alive.clone()
    }

    pub fn stats(&self) -> OffloadStats {
        self.stats
    }

    /// Worker time of the last job that came back in time (`NaN` before the first): what
    /// the router records as the GPU's cost.
    pub fn last_worker_seconds(&self) -> f64 {
        self.last_worker_seconds
    }

    /// Processes one block in place: the output is the previous block filtered (one block
    /// of latency). No allocation, lock or blocking wait. [`Offload::finish`] then
    /// [`Offload::submit`] with the block (to the worker), then the finished block out.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), OffloadError> {
        if buffers.len() != self.channels {
            return Err(OffloadError::Channels { expected: self.channels, found: buffers.len() });
        }
        if let Some(b) = buffers.iter().find(|b| b.len() != self.block) {
            return Err(OffloadError::BlockSize { expected: self.block, found: b.len() });
        }
        let block = self.block;
        self.finish();
        self.submit(true, |pending| {
            for (c, b) in buffers.iter().enumerate() {
                pending[c * block..(c + 1) * block].copy_from_slice(b);
            }
        });
        for (c, b) in buffers.iter_mut().enumerate() {
            b.copy_from_slice(self.ready(c));
        }
        Ok(())
    }

    /// Completes the block in flight: collects the worker's result, or computes the block
    /// here from the held state if it is late (or was routed to the CPU). Its output is
    /// then [`Offload::ready`]. No allocation, lock or blocking wait.
    pub fn finish(&mut self) -> Finished {
        let (block, channels) = (self.block, self.channels);
        let in_flight = self.in_flight;
        let done = match in_flight {
            InFlight::None => Finished::Nothing,
            InFlight::Worker(_) if self.poll_ready() => {
                let job = self.arrived.take().expect("poll_ready keeps the arrived job");
                self.ready.copy_from_slice(&job.output[..channels * block]);
                self.state.sos.copy_from_slice(&job.state.sos);
                self.state.fir.copy_from_slice(&job.state.fir);
                self.last_worker_seconds = job.worker_seconds;
                let seconds = job.worker_seconds;
                self.spare.push(job);
                self.stats.offloaded += 1;
                Finished::Worker { seconds }
            }
            InFlight::Worker(_) => {
                self.stats.late += 1;
                Finished::Cpu { seconds: self.fallback(), late: true }
            }
            InFlight::Cpu => Finished::Cpu { seconds: self.fallback(), late: false },
        };
        if done != Finished::Nothing {
            self.stats.blocks += 1;
        }
        self.in_flight = InFlight::None;
        self.apply_retune();
        done
    }

    /// Takes the coefficients of `chain` (the same shape as this offload's chain: stage
    /// kinds, section and tap counts) for every block submitted from now on. The block in
    /// flight, if any, still finishes with the old coefficients (from the worker or, if
    /// late, here); then both sides change together, so the output stays the CPU's one
    /// block late, the filter state carried through the change as [`Engine::update`]
    /// carries it. Without a worker (none was started, or it stopped) the CPU side alone
    /// changes, at the same boundary.
    ///
    /// No allocation or deallocation: the design moves to the worker, which frees it.
    /// Returns a design this offload no longer needs, to be freed off the audio thread:
    /// one that had not taken effect yet (`chain` replaces it) or one the CPU side took
    /// without a worker ([`Offload::take_retired`] collects the last of those).
    ///
    /// Refused, nothing changed and the design handed back in the error, when the shape
    /// differs or the worker's executor cannot take coefficients in place (build a new
    /// offload then).
    pub fn retune(&mut self, chain: Box<DesignedChain>) -> Result<Option<Box<DesignedChain>>, RetuneError> {
        if self.has_worker && !self.retunable {
            return Err(RetuneError::NotInPlace { chain });
        }
        if let Err(source) = self.cpu.check_update(&chain) {
            return Err(RetuneError::Shape { source, chain });
        }
        let spare = self.retune_pending.replace(chain).or_else(|| self.retired.take());
        if self.in_flight == InFlight::None {
            self.apply_retune();
        }
        Ok(spare)
    }

    /// A design the CPU side took without a worker (nobody was left to free it): take it
    /// to free it off the audio thread. Otherwise it is freed with the next retune's
    /// return or with the offload.
    pub fn take_retired(&mut self) -> Option<Box<DesignedChain>> {
        self.retired.take()
    }

    /// With nothing in flight: the pending retune to the CPU side and the worker.
    fn apply_retune(&mut self) {
        let Some(chain) = self.retune_pending.take() else { return };
        let worker = !self.worker_lost();
        // The worker drains this ring at every poll; if it is full, neither side changes
        // now and the next block tries again. (Only this side pushes, so a free slot seen
        // here is still free at the push.)
        if worker && self.retunes.slots() == 0 {
            self.retune_pending = Some(chain);
            return;
        }
        // Same shape: checked by `retune`.
        let _ = self.cpu.update(&chain);
        if worker {
            let _ = self.retunes.push(chain);
        } else {
            // `retune` took any earlier retired design before this one was pending.
            self.retired = Some(chain);
        }
    }

    /// Channel `c` of the block completed by the last [`Offload::finish`].
    pub fn ready(&self, c: usize) -> &[f32] {
        &self.ready[c * self.block..(c + 1) * self.block]
    }

    /// Starts the next block: `fill` writes its planar input (`channels x block`); the
    /// engine's non-finite policy is applied once for both paths. `to_worker`: hand it to
    /// the worker (when there is one); otherwise the next [`Offload::finish`] computes it
    /// here. A block still in flight is finished first (its output is then dropped).
    pub fn submit(&mut self, to_worker: bool, fill: impl FnOnce(&mut [f32])) {
        if self.in_flight != InFlight::None {
            self.finish();
        }
        fill(&mut self.pending);
        sanitize_input(&mut self.pending);
        // Nothing is in flight now: every job waiting in the done ring is a late one.
        self.poll_ready();
        self.in_flight = InFlight::Cpu;
        if to_worker && self.has_worker() {
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some(mut job) = self.spare.pop() {
                job.seq = seq;
                job.input.copy_from_slice(&self.pending);
                job.state.sos.copy_from_slice(&self.state.sos);
                job.state.fir.copy_from_slice(&self.state.fir);
                match self.submit.push(job) {
                    Ok(()) => self.in_flight = InFlight::Worker(seq),
                    // No room: computed here at the next finish, exactly like a late job.
                    Err(rtrb::PushError::Full(job)) => self.spare.push(job),
                }
            }
        }
    }

    /// Takes over the block `old` has in flight (same channels and block size), to be
    /// computed by this offload's chain from its current state at the next finish: a
    /// new chain swapped in mid-stream continues the signal without a gap. No allocation.
    pub fn adopt(&mut self, old: &Offload) {
        if old.in_flight != InFlight::None && old.pending.len() == self.pending.len() {
            self.pending.copy_from_slice(&old.pending);
            self.in_flight = InFlight::Cpu;
        }
    }

    /// Clears the filter state and forgets the block in flight (its late result is
    /// recycled when it comes back). No allocation.
    pub fn reset(&mut self) {
        self.in_flight = InFlight::None;
        if let Some(job) = self.arrived.take() {
            self.spare.push(job);
        }
        self.state.sos.fill([0.0; 2]);
        self.state.fir.fill(0.0);
        self.ready.fill(0.0);
    }

    /// True when a block was handed to the worker and has not been collected yet.
    pub fn job_in_flight(&self) -> bool {
        matches!(self.in_flight, InFlight::Worker(_))
    }

    /// True when the job in flight has come back (it is then kept for the next
    /// [`Offload::process`]); late results of earlier jobs are recycled on the way. Never
    /// blocks or allocates: a host (or a test's audio clock) may call it at any time.
    pub fn poll_ready(&mut self) -> bool {
        if self.arrived.is_some() {
            return true;
        }
        // With nothing in flight this still recycles late results, so jobs never run out.
        let wanted = match self.in_flight {
            InFlight::Worker(seq) => Some(seq),
            _ => None,
        };
        while let Ok(job) = self.done.pop() {
            if Some(job.seq) == wanted {
                self.arrived = Some(job);
                return true;
            }
            // A late job from an earlier block.
            self.spare.push(job);
        }
        false
    }

    /// Computes the pending block on this thread from the held state; returns the
    /// seconds it took.
    fn fallback(&mut self) -> f64 {
        let started = std::time::Instant::now();
        self.stats.fallbacks += 1;
        self.ready.copy_from_slice(&self.pending);
        // Same shape by construction (the state was made by this engine).
        let _ = self.cpu.load_state(&self.state);
        let (channels, block) = (self.channels, self.block);
        let cpu = &mut self.cpu;
        with_planar(&mut self.ready, channels, block, |bufs| cpu.process(bufs));
        let _ = self.cpu.save_state(&mut self.state);
        started.elapsed().as_secs_f64()
    }
}

impl Drop for Offload {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg_attr(not(feature = "fault-injection"), allow(unused_variables))]
fn worker_loop<E: Executor>(
    mut executor: E,
    mut input: rtrb::Consumer<Box<Job>>,
    mut output: rtrb::Producer<Box<Job>>,
    mut retunes: rtrb::Consumer<Box<DesignedChain>>,
    faults: Faults,
    alive: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) {
    // Marks the worker dead however this function ends (return or panic).
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    let _guard = Guard(alive);
    // New coefficients before any job submitted after them. Any job still here from
    // before a retune is one the audio side has finished already (its result is thrown
    // away), so applying a design as soon as it arrives is safe.
    let mut retune = |executor: &mut E| -> bool {
        while let Ok(chain) = retunes.pop() {
            if executor.update(&chain).is_err() {
                return false;
            }
        }
        true
    };
    while !stop.load(Ordering::Acquire) {
        let Ok(mut job) = input.pop() else {
            if !retune(&mut executor) {
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
            continue;
        };
        // A newer job waiting means this one's deadline has passed (the audio side has
        // computed it already): hand it back unrun so the worker catches up at once.
        while let Ok(newer) = input.pop() {
            job.worker_seconds = f64::NAN;
            if output.push(std::mem::replace(&mut job, newer)).is_err() {
                return;
            }
        }
        #[cfg(feature = "fault-injection")]
        // At the first job it takes from there on (the job of that very number may be
        // one handed back unrun above, when the worker is behind).
        if faults.die_at.is_some_and(|at| job.seq >= at) {
            return;
        }
        let started = std::time::Instant::now();
        #[cfg(feature = "fault-injection")]
        if let Some(delay) = &faults.delay {
            std::thread::sleep(delay(job.seq));
        }
        // After the job was popped: a retune pushed before it is visible now.
        if !retune(&mut executor) {
            return;
        }
        if executor.execute(&mut job).is_err() {
            return;
        }
        job.worker_seconds = started.elapsed().as_secs_f64();
        if output.push(job).is_err() {
            return;
        }
    }
}
