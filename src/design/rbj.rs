//! Audio EQ Cookbook biquads (Robert Bristow-Johnson), the Q forms.
//!
//! `w0 = 2 pi f0 / fs`, `alpha = sin(w0) / (2 Q)`, `A = 10^(gain_db / 40)`; the result is
//! divided through by `a0`. These are plain arithmetic: no allocation, safe to call on the
//! audio thread for parameter smoothing.

use super::Sos;
use std::f64::consts::PI;

/// The nine cookbook shapes of the chain format (read from it by their snake_case names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BiquadKind {
    Lowpass,
    Highpass,
    /// Constant 0 dB peak gain.
    Bandpass,
    /// Constant skirt gain, peak gain = Q.
    BandpassSkirt,
    Notch,
    Allpass,
    Peaking,
    LowShelf,
    HighShelf,
}

impl BiquadKind {
    pub const ALL: [BiquadKind; 9] = [
        BiquadKind::Lowpass,
        BiquadKind::Highpass,
        BiquadKind::Bandpass,
        BiquadKind::BandpassSkirt,
        BiquadKind::Notch,
        BiquadKind::Allpass,
        BiquadKind::Peaking,
        BiquadKind::LowShelf,
        BiquadKind::HighShelf,
    ];

    /// The chain-format name (`low_shelf`, `bandpass_skirt`, ...).
    pub fn name(self) -> &'static str {
        match self {
            BiquadKind::Lowpass => "lowpass",
            BiquadKind::Highpass => "highpass",
            BiquadKind::Bandpass => "bandpass",
            BiquadKind::BandpassSkirt => "bandpass_skirt",
            BiquadKind::Notch => "notch",
            BiquadKind::Allpass => "allpass",
            BiquadKind::Peaking => "peaking",
            BiquadKind::LowShelf => "low_shelf",
            BiquadKind::HighShelf => "high_shelf",
        }
    }

    /// Looks a chain-format name up.
    pub fn from_name(name: &str) -> Option<BiquadKind> {
        BiquadKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether `gain_db` means something for this shape (peaking and shelves).
    pub fn uses_gain(self) -> bool {
        matches!(self, BiquadKind::Peaking | BiquadKind::LowShelf | BiquadKind::HighShelf)
    }
}

/// Designs one cookbook biquad. `gain_db` is ignored by shapes that have no gain.
pub fn biquad(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: f64, fs: f64) -> Sos {
    let (sin, cos) = w0_sin_cos(freq_hz, fs);
    biquad_from_trig(kind, sin, cos, q, gain_db)
}

/// The sine and cosine of the cookbook's `w0 = 2 pi freq_hz / fs`, as [`biquad`] takes
/// them (for [`biquad_from_trig`]).
pub fn w0_sin_cos(freq_hz: f64, fs: f64) -> (f64, f64) {
    let w0 = 2.0 * PI * freq_hz / fs;
    w0.sin_cos()
}

/// [`biquad`] from the sine and cosine of its `w0` ([`w0_sin_cos`]), for a caller that
/// designs many times at one frequency (an automated gain): the same result, bit for
/// bit, as `biquad` at that frequency.
pub fn biquad_from_trig(kind: BiquadKind, sin: f64, cos: f64, q: f64, gain_db: f64) -> Sos {
    let alpha = sin / (2.0 * q);
    let a = 10f64.powf(gain_db / 40.0);
    let sqrt_a_alpha = 2.0 * a.sqrt() * alpha;
    let (b, den) = match kind {
        BiquadKind::Lowpass => ([(1.0 - cos) / 2.0, 1.0 - cos, (1.0 - cos) / 2.0], [1.0 + alpha, -2.0 * cos, 1.0 - alpha]),
        BiquadKind::Highpass => {
            ([(1.0 + cos) / 2.0, -(1.0 + cos), (1.0 + cos) / 2.0], [1.0 + alpha, -2.0 * cos, 1.0 - alpha])
        }
        BiquadKind::Bandpass => ([alpha, 0.0, -alpha], [1.0 + alpha, -2.0 * cos, 1.0 - alpha]),
        BiquadKind::BandpassSkirt => ([sin / 2.0, 0.0, -sin / 2.0], [1.0 + alpha, -2.0 * cos, 1.0 - alpha]),
        BiquadKind::Notch => ([1.0, -2.0 * cos, 1.0], [1.0 + alpha, -2.0 * cos, 1.0 - alpha]),
        BiquadKind::Allpass => ([1.0 - alpha, -2.0 * cos, 1.0 + alpha], [1.0 + alpha, -2.0 * cos, 1.0 - alpha]),
        BiquadKind::Peaking => {
            ([1.0 + alpha * a, -2.0 * cos, 1.0 - alpha * a], [1.0 + alpha / a, -2.0 * cos, 1.0 - alpha / a])
        }
        BiquadKind::LowShelf => (
            [
                a * ((a + 1.0) - (a - 1.0) * cos + sqrt_a_alpha),
                2.0 * a * ((a - 1.0) - (a + 1.0) * cos),
                a * ((a + 1.0) - (a - 1.0) * cos - sqrt_a_alpha),
            ],
            [(a + 1.0) + (a - 1.0) * cos + sqrt_a_alpha, -2.0 * ((a - 1.0) + (a + 1.0) * cos), (a + 1.0) + (a - 1.0) * cos - sqrt_a_alpha],
        ),
        BiquadKind::HighShelf => (
            [
                a * ((a + 1.0) + (a - 1.0) * cos + sqrt_a_alpha),
                -2.0 * a * ((a - 1.0) + (a + 1.0) * cos),
                a * ((a + 1.0) + (a - 1.0) * cos - sqrt_a_alpha),
            ],
            [(a + 1.0) - (a - 1.0) * cos + sqrt_a_alpha, 2.0 * ((a - 1.0) - (a + 1.0) * cos), (a + 1.0) - (a - 1.0) * cos - sqrt_a_alpha],
        ),
    };
    Sos { b, a: den }.normalized()
}
