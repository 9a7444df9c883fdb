//! A host's stream of blocks of any size through an [`Offload`], with the routing policy
//! (`GPU` or `Auto`) applied block by block: what a plugin's `process` calls.
//!
//! Host blocks are re-blocked into the offload's fixed block `B` (the host's largest
//! block, for instance). The stream's latency is exactly `B`: output sample `n` is the
//! filtered input sample `n - B`. Block `k` is handed over as soon as its last input
//! sample arrives and must be finished when the first output sample of block `k` is
//! due, i.e. at the start of block `k + 1`: with host blocks of exactly `B` frames the
//! worker has a whole host period; with smaller host blocks that divide `B` it has one
//! host period; with host blocks that do not line up with `B` the block is often due in
//! the very call that completed it, and is then computed on the CPU (still exact, only
//! without the GPU's help).
//!
//! Under [`Policy::Auto`] a [`Router`] is fed every finished block (CPU seconds of blocks
//! computed here, worker seconds of blocks the worker returned, a missed deadline as a
//! worker time of one whole deadline) and decides where the next block goes. Every
//! [`PROBE_EVERY`]th block takes the other route, so both measurements stay current, and
//! while the router is still measuring blocks alternate.
//!
//! The offload itself can be swapped between calls (a new chain): the stream's own
//! buffers (the partly filled input block, the block being emitted) and the router stay;
//! the new offload adopts the block in flight ([`Offload::adopt`]).

use super::offload::{Finished, Offload};
use super::router::{Decision, Reason, Route, Router, RouterConfig};

/// Under `Auto`, one block in this many takes the route the router did not choose.
pub const PROBE_EVERY: u64 = 16;

/// Where blocks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Every block to the worker (late ones computed here).
    Gpu,
    /// The router decides, block by block.
    Auto,
}

/// Counters for the editor and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RealtimeStats {
    /// Blocks finished.
    pub blocks: u64,
    /// Blocks the worker returned in time.
    pub on_worker: u64,
    /// Blocks routed to the CPU (by the router or for lack of a worker).
    pub on_cpu: u64,
    /// Blocks handed to the worker that came back too late (computed here instead).
    pub late: u64,
}

/// The re-blocking, routing audio side of a realtime offload.
pub struct RealtimeOffload {
    block: usize,
    channels: usize,
    /// Planar `channels x block`: the input block being filled.
    input: Vec<f32>,
    /// Planar `channels x block`: the finished block being emitted.
    output: Vec<f32>,
    /// Frames of the current block received (and emitted) so far.
    fill: usize,
    policy: Policy,
    router: Router,
    deadline_s: f64,
    decision: Decision,
    submitted: u64,
    stats: RealtimeStats,
}

impl RealtimeOffload {
    /// A stream of `channels` channels in blocks of `block` frames at `sample_rate_hz`
    /// (for the deadline: one block's duration). Allocates everything it will use.
    pub fn new(channels: usize, block: usize, sample_rate_hz: f64, policy: Policy) -> RealtimeOffload {
        let block = block.max(1);
        let deadline_s = block as f64 / sample_rate_hz;
        let mut router = Router::new(RouterConfig::default());
        let decision = router.decide(deadline_s);
        RealtimeOffload {
            block,
            channels,
            input: vec![0.0; channels * block],
            output: vec![0.0; channels * block],
            fill: 0,
            policy,
            router,
            deadline_s,
            decision,
            submitted: 0,
            stats: RealtimeStats::default(),
        }
    }

    /// The delay this stream adds, in samples: one block.
    pub fn latency_samples(&self) -> usize {
        self.block
    }

    pub fn block(&self) -> usize {
        self.block
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Changes the policy from the next block on (both keep the same latency).
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
    }

    /// The router's latest decision and its figures (under [`Policy::Gpu`] the figures
    /// are kept too; the route is then forced).
    pub fn decision(&self) -> Decision {
        self.decision
    }

    pub fn stats(&self) -> RealtimeStats {
        self.stats
    }

    /// Forgets the router's measurements (the chain changed).
    pub fn clear_measurements(&mut self) {
        self.router.clear();
    }

    /// Clears the buffered audio (and `offload`'s filter state): the stream restarts
    /// from silence. No allocation.
    pub fn reset(&mut self, offload: Option<&mut Offload>) {
        self.input.fill(0.0);
        self.output.fill(0.0);
        self.fill = 0;
        if let Some(off) = offload {
            off.reset();
        }
    }

    /// Processes one host block in place, of any length; the output is the input
    /// filtered by `offload`'s chain, [`RealtimeOffload::latency_samples`] late.
    /// `offload` must have this stream's channels and block size; without one (or with
    /// another shape) the audio passes through delayed, unfiltered. No allocation, lock
    /// or blocking wait.
    pub fn process(&mut self, mut offload: Option<&mut Offload>, buffers: &mut [&mut [f32]]) {
        let matches = offload.as_ref().is_some_and(|o| o.block() == self.block && o.channels() == self.channels);
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let channels = buffers.len().min(self.channels);
        let block = self.block;
        let mut pos = 0;
        while pos < frames {
            if self.fill == 0 {
                if let (true, Some(offload)) = (matches, offload.as_deref_mut()) {
                    self.finish(offload);
                } else {
                    // No usable chain: a plain delay keeps the latency.
                    std::mem::swap(&mut self.output, &mut self.input);
                }
            }
            let m = (frames - pos).min(block - self.fill);
            for (c, b) in buffers.iter_mut().take(channels).enumerate() {
                let at = c * block + self.fill;
                self.input[at..at + m].copy_from_slice(&b[pos..pos + m]);
                b[pos..pos + m].copy_from_slice(&self.output[at..at + m]);
            }
            for b in buffers.iter_mut().skip(channels) {
                b[pos..pos + m].fill(0.0);
            }
            self.fill += m;
            pos += m;
            if self.fill == block {
                self.fill = 0;
                if let (true, Some(offload)) = (matches, offload.as_deref_mut()) {
                    self.submit(offload);
                }
            }
        }
    }

    fn finish(&mut self, offload: &mut Offload) {
        let mut done = offload.finish();
        if done == Finished::Nothing {
            // Nothing was handed over for the block just completed: the stream started
            // (the block is silence), was reset, or ran without an offload until now.
            // Compute it here so it is neither lost nor replaced by a repeat.
            let input = &self.input;
            offload.submit(false, |pending| pending.copy_from_slice(input));
            done = offload.finish();
        }
        match done {
            Finished::Nothing => return,
            Finished::Worker { seconds } => {
                self.stats.on_worker += 1;
                self.router.record_gpu(seconds);
            }
            Finished::Cpu { seconds, late } => {
                self.router.record_cpu(seconds);
                if late {
                    // A miss: the worker took at least the whole deadline.
                    self.stats.late += 1;
                    self.router.record_gpu(self.deadline_s);
                } else {
                    self.stats.on_cpu += 1;
                }
            }
        }
        self.stats.blocks += 1;
        for c in 0..self.channels {
            self.output[c * self.block..(c + 1) * self.block].copy_from_slice(offload.ready(c));
        }
    }

    fn submit(&mut self, offload: &mut Offload) {
        self.router.set_gpu_available(offload.has_worker());
        let decision = self.router.decide(self.deadline_s);
        let probe = self.submitted % PROBE_EVERY == PROBE_EVERY - 1;
        let to_worker = match self.policy {
            Policy::Gpu => true,
            Policy::Auto if decision.reason == Reason::Measuring => self.submitted.is_multiple_of(2),
            Policy::Auto => (decision.route == Route::Gpu) != probe,
        };
        self.decision = decision;
        self.submitted += 1;
        let input = &self.input;
        offload.submit(to_worker, |pending| pending.copy_from_slice(input));
    }
}
