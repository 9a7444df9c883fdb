//! The analyser's audio side: the plugin's input (before the bands) and output (after
//! everything), each summed to mono, copied into preallocated rings on the audio thread
//! and handed to the editor as whole windows through a lock-free triple buffer.
//!
//! Only while the editor asks for it (`SpectrumFeed::wanted`, set while the editor is
//! open with the analyser on) does the audio thread copy anything; it never computes a
//! spectrum (the editor does, see `editor::analyser`). Every buffer is allocated when the
//! plugin is created; the audio thread never allocates, locks or waits here: a window the
//! editor has not read yet is simply replaced by a newer one.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use triple_buffer::{Input, TripleBuffer};

use crate::shared::spectrum::{Snapshot, SpectrumFeed, HOP, WINDOW};

/// The audio thread's end: the rings and the triple buffer's input.
pub struct SpectrumTap {
    pre: Vec<f32>,
    post: Vec<f32>,
    /// Next ring position.
    pos: usize,
    /// Frames written since the last window went out.
    since: usize,
    seq: u64,
    input: Input<Snapshot>,
}

/// A connected pair (allocates; when the plugin is created).
pub fn channel() -> (SpectrumTap, SpectrumFeed) {
    let (input, output) = TripleBuffer::new(&Snapshot::silent()).split();
    let tap = SpectrumTap { pre: vec![0.0; WINDOW], post: vec![0.0; WINDOW], pos: 0, since: 0, seq: 0, input };
    (tap, SpectrumFeed { wanted: AtomicBool::new(false), output: Mutex::new(output) })
}

impl SpectrumTap {
    /// Sums `buffers[..][..frames]` to mono into the `pre` ring (the input, before any
    /// processing). Call [`SpectrumTap::post`] with the output of the same frames after.
    pub fn pre(&mut self, buffers: &[&mut [f32]], frames: usize) {
        write_mono(&mut self.pre, self.pos, buffers, frames);
    }

    /// The output of the frames given to [`SpectrumTap::pre`]; hands a window over every
    /// [`HOP`] frames. No allocation, lock or wait.
    pub fn post(&mut self, buffers: &[&mut [f32]], frames: usize, sample_rate_hz: f32) {
        write_mono(&mut self.post, self.pos, buffers, frames);
        self.pos = (self.pos + frames) % WINDOW;
        self.since += frames;
        if self.since >= HOP {
            self.since = 0;
            self.seq += 1;
            let out = self.input.input_buffer_mut();
            out.seq = self.seq;
            out.sample_rate_hz = sample_rate_hz;
            // Unroll the rings, oldest sample first.
            let (older, newer) = (WINDOW - self.pos, self.pos);
            out.pre[..older].copy_from_slice(&self.pre[self.pos..]);
            out.pre[older..].copy_from_slice(&self.pre[..newer]);
            out.post[..older].copy_from_slice(&self.post[self.pos..]);
            out.post[older..].copy_from_slice(&self.post[..newer]);
            self.input.publish();
        }
    }
}

/// Writes the mono sum of `frames` frames at ring position `pos` (wrapping).
fn write_mono(ring: &mut [f32], pos: usize, buffers: &[&mut [f32]], frames: usize) {
    let channels = buffers.len().max(1);
    let scale = 1.0 / channels as f32;
    // A host block longer than the window: only its last WINDOW frames matter, but the
    // ring position advances by all of them, so write them all (wrapping).
    for i in 0..frames {
        let sum: f32 = buffers.iter().map(|b| b[i]).sum();
        ring[(pos + i) % WINDOW] = sum * scale;
    }
}
