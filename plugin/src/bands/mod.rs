//! The 24-band equaliser behind the plugin's parameters, as pure DSP (no plugin
//! framework): band settings -> second-order sections, designed without allocation so it
//! can run on the audio thread, and an [`Equaliser`] that smooths parameter moves and
//! re-designs at a sub-block rate.
//!
//! - `band.rs`: a band's settings ([`Band`], [`Shape`], [`Slope`], [`Route`]) and their
//!   designs (cookbook or analog-matched sections, written into caller-owned arrays);
//! - `smoothing.rs`: the one-pole smoothing of a band's continuous parameters;
//! - `equaliser.rs`: [`Equaliser`], the bands fused into one cascade, re-designed every
//!   [`REDESIGN_INTERVAL`] samples while anything moves.

mod band;
mod equaliser;
mod smoothing;

pub use band::{Band, Route, Shape, Slope, TrigCache, NYQUIST_SHARE};
pub use equaliser::Equaliser;

/// Number of bands.
pub const BANDS: usize = 24;
/// Most sections one band designs to (a 96 dB/oct analog-matched cut: Butterworth order
/// 16, two sections per pole pair; the bilinear one has 8).
pub const MAX_SECTIONS_PER_BAND: usize = 16;
/// Samples between re-designs from the smoothed parameters.
pub const REDESIGN_INTERVAL: usize = 32;
/// While bands move, analog-matched bands are re-designed at most this often (samples)
/// and glide over it; see [`Equaliser`]'s `redesign`.
pub const MATCHED_INTERVAL: usize = 256;
/// Analog-matched fits per re-design interval, on average (0.06-0.1 ms each; a bell or
/// shelf is one fit, a tilt two, a matched cut one per pole pair). Unused ones are saved
/// up to [`MATCHED_CREDIT_MAX`], so a steep cut gets its turn.
pub const MATCHED_PER_STEP: usize = 1;
/// The most fits saved up (a 96 dB/oct cut's eight).
pub const MATCHED_CREDIT_MAX: usize = 8;
/// Cross-fade time of a discrete change (enable, shape, slope, Butterworth/Linkwitz-
/// Riley), rounded to whole re-design intervals.
pub const SWITCH_FADE_MS: f64 = 10.0;

/// Parameter ranges, shared with the editor.
pub mod ranges {
    /// Band frequency in Hz (log scale).
    pub fn freq_hz() -> (f64, f64) {
        (20.0, 20_000.0)
    }
    /// Band gain in dB.
    pub fn gain_db() -> (f64, f64) {
        (-24.0, 24.0)
    }
    /// Band Q.
    pub fn q() -> (f64, f64) {
        (0.1, 18.0)
    }
    /// Cut slopes in dB/oct (multiples of 6).
    pub fn slope_db_per_oct() -> (u32, u32) {
        (6, 96)
    }
}
