//! [`WgpuStream`]: a [`WgpuChain`] that keeps its filter state on the device between
//! blocks, with up to two blocks in flight.

use super::{WgpuChain, WgpuContext};
use crate::chain::DesignedChain;
use crate::engine::ChainState;
use crate::gpu::GpuError;

/// A [`WgpuChain`] with its own state, filtering channel buffers the way
/// [`crate::engine::Engine::process`] does (same non-finite input policy; blocks longer than
/// the chain's largest are processed in pieces). For offline rendering and benchmarks,
/// never the audio thread (see [`crate::run::offload`]).
///
/// The filter state lives on the device between blocks, so blocks can be **pipelined**:
/// [`WgpuStream::submit`] uploads and starts a block while the previous one is still
/// computing, [`WgpuStream::collect`] reads the oldest back (double buffering: at most two
/// in flight). [`WgpuStream::process`] is one synchronous round trip.
pub struct WgpuStream {
    chain: WgpuChain,
    /// The state the next submitted block starts from, when `load_state` is set (at the
    /// start and after a reset); otherwise the device's.
    state: ChainState,
    load_state: bool,
    /// Planar staging per read-back slot.
    planar: [Vec<f32>; 2],
    /// Slots in flight, oldest first, with their frame counts.
    in_flight: std::collections::VecDeque<(usize, usize)>,
    next_slot: usize,
}

impl WgpuStream {
    pub fn new(ctx: &WgpuContext, chain: &DesignedChain, channels: usize, max_frames: usize) -> Result<WgpuStream, GpuError> {
        let chain = WgpuChain::new(ctx, chain, channels, max_frames)?;
        let state = chain.new_state();
        let planar = [0, 1].map(|_| vec![0.0; chain.channels() * chain.max_frames()]);
        Ok(WgpuStream { chain, state, load_state: true, planar, in_flight: Default::default(), next_slot: 0 })
    }

    pub fn chain_mut(&mut self) -> &mut WgpuChain {
        &mut self.chain
    }

    /// Back to silence (as at construction). Blocks in flight are dropped.
    pub fn reset(&mut self) {
        while let Some((slot, _)) = self.in_flight.pop_front() {
            let _ = self.chain.collect(slot, &mut self.planar[slot], None);
        }
        self.state.sos.fill([0.0; 2]);
        self.state.fir.fill(0.0);
        self.load_state = true;
    }

    /// Blocks submitted and not yet collected (0..=2).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn check_channels(&self, found: usize) -> Result<(), GpuError> {
        if found != self.chain.channels() {
            return Err(GpuError::Job {
                why: format!("{found} channel buffers for a chain set up for {}", self.chain.channels()),
            });
        }
        Ok(())
    }

    /// Starts filtering one block (one buffer per channel, all at least `frames` long,
    /// `frames` at most the chain's largest block) without waiting for it. At most two
    /// blocks can be in flight; collect one first.
    pub fn submit(&mut self, buffers: &[&[f32]], frames: usize) -> Result<(), GpuError> {
        self.check_channels(buffers.len())?;
        if self.in_flight.len() >= 2 {
            return Err(GpuError::Job { why: "two blocks are in flight already; collect one first".into() });
        }
        let slot = self.next_slot;
        let planar = &mut self.planar[slot][..buffers.len() * frames];
        for (dst, src) in planar.chunks_exact_mut(frames.max(1)).zip(buffers.iter()) {
            dst.copy_from_slice(&src[..frames]);
            crate::engine::sanitize_input(dst);
        }
        let state = self.load_state.then_some(&self.state);
        self.chain.submit(slot, planar, frames, state, false)?;
        self.load_state = false;
        self.in_flight.push_back((slot, frames));
        self.next_slot = 1 - slot;
        Ok(())
    }

    /// Waits for the oldest block in flight and writes its output into `buffers`;
    /// returns its frame count.
    pub fn collect(&mut self, buffers: &mut [&mut [f32]]) -> Result<usize, GpuError> {
        self.check_channels(buffers.len())?;
        let Some((slot, frames)) = self.in_flight.pop_front() else {
            return Err(GpuError::Job { why: "no block in flight".into() });
        };
        let planar = &mut self.planar[slot];
        self.chain.collect(slot, planar, None)?;
        for (src, dst) in planar.chunks_exact(frames.max(1)).zip(buffers.iter_mut()) {
            dst[..frames].copy_from_slice(src);
        }
        Ok(frames)
    }

    /// [`WgpuStream::process`] with two pieces in flight: piece k+1 is uploaded and
    /// started before piece k is read back. Same output, bit for bit.
    pub fn process_pipelined(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), GpuError> {
        self.run(buffers, 2)
    }

    /// Filters the buffers in place (one per channel, the chain's channel count; all for
    /// the length of the shortest), one synchronous round trip per piece.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), GpuError> {
        self.run(buffers, 1)
    }

    /// Pieces of the chain's largest block through [`WgpuStream::submit`] and
    /// [`WgpuStream::collect`], at most `depth` (1 or 2) in flight.
    fn run(&mut self, buffers: &mut [&mut [f32]], depth: usize) -> Result<(), GpuError> {
        self.check_channels(buffers.len())?;
        if !self.in_flight.is_empty() {
            return Err(GpuError::Job { why: "blocks are in flight; collect them first".into() });
        }
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let max = self.chain.max_frames();
        let mut pieces = std::collections::VecDeque::with_capacity(2);
        let mut next = 0;
        while next < frames || !pieces.is_empty() {
            if next < frames && self.in_flight.len() < depth {
                let n = (frames - next).min(max);
                let views: Vec<&[f32]> = buffers.iter().map(|b| &b[next..next + n]).collect();
                self.submit(&views, n)?;
                pieces.push_back((next, n));
                next += n;
                continue;
            }
            let Some((at, n)) = pieces.pop_front() else { break };
            let mut outs: Vec<&mut [f32]> = buffers.iter_mut().map(|b| &mut b[at..at + n]).collect();
            self.collect(&mut outs)?;
        }
        Ok(())
    }
}
