//! The 24-band equaliser behind the plugin's parameters, as pure DSP (no plugin
//! framework): the bands' settings (`shared/bands.rs`: [`Band`] and its designs) fused
//! into one cascade, smoothing parameter moves and re-designing at a sub-block rate.
//!
//! - `smoothing.rs`: the one-pole smoothing of a band's continuous parameters;
//! - `cascade.rs`: [`Equaliser`], the bands fused into one cascade, re-designed every
//!   [`REDESIGN_INTERVAL`] samples while anything moves.

mod cascade;
mod smoothing;

pub use cascade::Equaliser;

use crate::shared::bands::{Band, Shape, TrigCache, BANDS, MAX_SECTIONS_PER_BAND};

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
