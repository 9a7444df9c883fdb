//! The loudness meters' audio side (see `shared/loudness.rs` for the records): the
//! plugin's input and output copied, frame by frame, into two preallocated lock-free
//! rings while the editor wants them. Nothing is measured here; the audio thread never
//! allocates, locks or waits: a block that does not fit is left out and counted.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use rtrb::{Producer, RingBuffer};

use crate::shared::loudness::{LoudnessFeed, HEADER, RING_SAMPLES};

/// The audio thread's end: the rings' producers.
pub struct LoudnessTap {
    input: Producer<f32>,
    output: Producer<f32>,
    /// The input of the block in progress went in; its output goes in at `post`.
    open: bool,
}

/// A connected pair (allocates; when the plugin is created).
pub fn channel() -> (LoudnessTap, LoudnessFeed) {
    let (input, input_out) = RingBuffer::new(RING_SAMPLES);
    let (output, output_out) = RingBuffer::new(RING_SAMPLES);
    let feed = LoudnessFeed { rings: Mutex::new(Some((input_out, output_out))), ..LoudnessFeed::default() };
    (LoudnessTap { input, output, open: false }, feed)
}

impl LoudnessTap {
    /// The input of `frames` frames, before any processing, when `feed` is wanted and
    /// both rings have room for the block. Call [`LoudnessTap::post`] with its output.
    pub fn pre(&mut self, feed: &LoudnessFeed, buffers: &[&mut [f32]], frames: usize, sample_rate_hz: f32) {
        self.open = false;
        if !feed.is_wanted() || frames == 0 || buffers.is_empty() {
            return;
        }
        let need = HEADER + buffers.len() * frames;
        if self.input.slots() < need || self.output.slots() < need {
            feed.dropped_blocks.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.open = write(&mut self.input, buffers, frames, sample_rate_hz);
    }

    /// The output of the frames given to [`LoudnessTap::pre`] (nothing if those were
    /// left out).
    pub fn post(&mut self, buffers: &[&mut [f32]], frames: usize, sample_rate_hz: f32) {
        if std::mem::take(&mut self.open) {
            write(&mut self.output, buffers, frames, sample_rate_hz);
        }
    }
}

/// One record (header, then the frames interleaved) into `ring`, which has room for it.
fn write(ring: &mut Producer<f32>, buffers: &[&mut [f32]], frames: usize, sample_rate_hz: f32) -> bool {
    let channels = buffers.len();
    let need = HEADER + channels * frames;
    let Ok(chunk) = ring.write_chunk_uninit(need) else { return false };
    let header = [channels as f32, frames as f32, sample_rate_hz];
    let samples = (0..frames).flat_map(|i| buffers.iter().map(move |b| b[i]));
    // Every slot is written once and committed (no default values written first).
    chunk.fill_from_iter(header.into_iter().chain(samples)) == need
}
