//! The audio thread's ends of the telemetry hand-overs (the analyser's rings, the loudness
//! meters' rings and the processing-time ring), and [`connect`], which builds them with the editor's ends in a
//! [`Telemetry`] (when the plugin is created; allocates).

use std::sync::Mutex;

use crate::audio::loudness::{self, LoudnessTap};
use crate::audio::spectrum::{channel, SpectrumTap};
use crate::shared::telemetry::Telemetry;

/// Capacity of the processing-time ring: over a second of blocks at 32 frames, 48 kHz.
const TIME_SLOTS: usize = 2048;

/// The audio thread's ends of the telemetry hand-overs.
pub struct AudioTaps {
    pub spectrum: SpectrumTap,
    pub loudness: LoudnessTap,
    pub process_times: rtrb::Producer<u64>,
}

/// Telemetry with its hand-overs connected to the returned audio-thread ends.
pub fn connect() -> (Telemetry, AudioTaps) {
    let (spectrum_tap, spectrum) = channel();
    let (loudness_tap, loudness) = loudness::channel();
    let (process_times, times_out) = rtrb::RingBuffer::new(TIME_SLOTS);
    let t = Telemetry { spectrum, loudness, process_times: Mutex::new(Some(times_out)), ..Telemetry::default() };
    (t, AudioTaps { spectrum: spectrum_tap, loudness: loudness_tap, process_times })
}
