//! The loudness meters' hand-over as the editor sees it: while the editor shows the
//! meters, the audio thread copies every frame of the plugin's input (before the bands)
//! and of its output (after everything) into two lock-free rings (`audio/loudness.rs` is
//! that end); the editor measures them (peak, RMS, and ITU-R BS.1770 loudness with the
//! `ebur128` crate, `editor/loudness.rs`).
//!
//! Each host block goes into both rings as a record: a header of [`HEADER`] samples
//! (channels, frames, sample rate in Hz, each as an `f32`, exact for every value a
//! plugin sees), then its frames interleaved. A record goes into both rings whole or into
//! neither (when the editor has fallen that far behind; [`LoudnessFeed::dropped_blocks`]
//! counts them), and the output's is written after the input's, so a record found
//! complete in the output ring is complete in the input ring too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Samples per ring (each of input and output): 512 KiB of `f32`, 1.4 s of stereo at
/// 48 kHz, 85 ms of 8 channels at 192 kHz; the editor drains it every frame it draws.
pub const RING_SAMPLES: usize = 1 << 17;
/// A record's header: channels, frames, sample rate.
pub const HEADER: usize = 3;

/// The editor's end.
pub struct LoudnessFeed {
    /// Set by the editor while it shows the meters; read by the audio thread.
    pub wanted: AtomicBool,
    /// Blocks left out because a ring was full (the editor fell behind).
    pub dropped_blocks: AtomicU64,
    /// (input, output) rings, read by the editor only (the audio thread never touches
    /// this lock); `None` with no audio side connected.
    pub rings: Mutex<Option<(rtrb::Consumer<f32>, rtrb::Consumer<f32>)>>,
}

impl Default for LoudnessFeed {
    /// A feed with no audio side (nothing will arrive).
    fn default() -> LoudnessFeed {
        LoudnessFeed { wanted: AtomicBool::new(false), dropped_blocks: AtomicU64::new(0), rings: Mutex::new(None) }
    }
}

impl LoudnessFeed {
    /// Whether the audio thread should copy samples now.
    pub fn is_wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }
}
