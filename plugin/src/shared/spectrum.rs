//! The analyser's hand-over as the editor sees it: the windows of the plugin's input and
//! output the audio thread publishes (`audio/spectrum.rs` is its end), and whether the
//! editor wants them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use triple_buffer::{Output, TripleBuffer};

/// Samples per analysis window (each of pre and post).
pub const WINDOW: usize = 8192;
/// A new window is handed over every this many frames.
pub const HOP: usize = 2048;

/// One window of the signal before and after the plugin, oldest sample first.
#[derive(Clone)]
pub struct Snapshot {
    /// Counts published windows (0: none yet).
    pub seq: u64,
    pub sample_rate_hz: f32,
    pub pre: Vec<f32>,
    pub post: Vec<f32>,
}

impl Snapshot {
    /// A window of silence (what the editor holds before the first one arrives).
    pub fn silent() -> Snapshot {
        Snapshot { seq: 0, sample_rate_hz: 0.0, pre: vec![0.0; WINDOW], post: vec![0.0; WINDOW] }
    }
}

/// The editor's end: whether it wants windows, and the newest one.
pub struct SpectrumFeed {
    /// Set by the editor while it shows the analyser; read by the audio thread.
    pub wanted: AtomicBool,
    /// Read by the editor only (the audio thread never touches this lock).
    pub output: Mutex<Output<Snapshot>>,
}

impl Default for SpectrumFeed {
    /// A feed with no audio side (nothing will arrive).
    fn default() -> SpectrumFeed {
        let (_, output) = TripleBuffer::new(&Snapshot::silent()).split();
        SpectrumFeed { wanted: AtomicBool::new(false), output: Mutex::new(output) }
    }
}

impl SpectrumFeed {
    /// Whether the audio thread should copy samples now.
    pub fn is_wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }
}

