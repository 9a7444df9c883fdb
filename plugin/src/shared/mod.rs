//! What both sides of the plugin share, below both: the band settings and their designs
//! (`bands`), the other settings the parameters hand to the audio thread (`settings`),
//! what the audio thread tells the editor (`telemetry`, `spectrum`, `loudness`: atomics and the
//! editor's ends of lock-free hand-overs), and the layout constants. Imports nothing
//! from `control`, `audio` or `editor`.

pub mod bands;
pub mod loudness;
pub mod settings;
pub mod spectrum;
pub mod telemetry;

/// The most channels any of the plugin's layouts has (7.1-sized): the audio thread's
/// per-block lists of channel slices have this many entries.
pub const MAX_CHANNELS: usize = 8;
