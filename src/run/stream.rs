//! The pipelined block loop over any backend: what offline rendering, the benchmarks and
//! the Python package use, so none of them keeps a queue loop of its own.
//!
//! A [`BlockStream`] takes owned planar blocks in order and hands them back filtered, in
//! order. On a backend with depth (a GPU: two blocks in flight) block `k + 1` is uploaded
//! and started before block `k` is read back; on the CPU each block is filtered when it
//! arrives. `open_stream` in `src/backends.rs` picks the backend (`cpu`, a GPU by name, or
//! `auto`) and returns one.

use super::backend::{Prepared, RunError};
use std::collections::VecDeque;

/// One planar block: a buffer per channel and the frames used in each.
pub type Block = (Vec<Vec<f32>>, usize);

/// A prepared chain with its blocks in flight.
pub struct BlockStream {
    prepared: Box<dyn Prepared>,
    waiting: VecDeque<Block>,
    max_block: usize,
}

impl BlockStream {
    pub fn new(prepared: Box<dyn Prepared>, max_block: usize) -> BlockStream {
        BlockStream { prepared, waiting: VecDeque::with_capacity(2), max_block: max_block.max(1) }
    }

    /// Takes the next block (at most the stream's largest); returns the oldest filtered
    /// block once one is ready. Blocks come back in the order they went in.
    pub fn push(&mut self, block: Block) -> Result<Option<Block>, RunError> {
        let (mut buf, n) = block;
        if n > self.max_block {
            return Err(RunError::BlockTooLong { max: self.max_block, found: n });
        }
        if self.prepared.depth() == 0 {
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
            self.prepared.process(&mut slices)?;
            return Ok(Some((buf, n)));
        }
        let views: Vec<&[f32]> = buf.iter().map(|c| &c[..n]).collect();
        self.prepared.submit(&views, n)?;
        self.waiting.push_back((buf, n));
        if self.prepared.in_flight() < self.prepared.depth() {
            return Ok(None);
        }
        self.collect_oldest().map(Some)
    }

    /// After the last [`BlockStream::push`]: the blocks still in flight, one per call,
    /// `None` when all are out.
    pub fn drain(&mut self) -> Result<Option<Block>, RunError> {
        if self.waiting.is_empty() {
            return Ok(None);
        }
        self.collect_oldest().map(Some)
    }

    fn collect_oldest(&mut self) -> Result<Block, RunError> {
        let (mut buf, n) = self.waiting.pop_front().expect("a block is in flight");
        let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
        self.prepared.collect(&mut slices)?;
        Ok((buf, n))
    }

    /// Filters the buffers in place, synchronously (any length).
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        self.prepared.process(buffers)
    }

    /// Filters whole buffers in place as pieces of the stream's largest block, with the
    /// backend's depth of pieces in flight. Same output as [`BlockStream::process`].
    pub fn process_pipelined(&mut self, buffers: &mut [&mut [f32]]) -> Result<(), RunError> {
        self.prepared.process_pipelined(buffers)
    }

    /// Clears the filter state and forgets blocks in flight.
    pub fn reset(&mut self) {
        self.waiting.clear();
        self.prepared.reset();
    }
}
