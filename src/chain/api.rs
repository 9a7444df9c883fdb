//! Stage constructors for the pipe API: `Butterworth::highpass(30.0, 4) | Biquad::peaking(1000.0, 1.4, -6.0)`.
//!
//! Constructors only record the spec; [`super::Chain::design`] validates it, so a bad
//! value (say a NaN cutoff) is reported with the stage index like a bad chain file.

use super::{Stage, StageKind};
use crate::design::{BiquadKind, Cutoff, IirFamily, Response, Window};

fn iir(family: IirFamily, response: Response, cutoff: Cutoff, order: usize) -> Stage {
    Stage::new(StageKind::Iir { family, response, order, cutoff, matched: false })
}

macro_rules! iir_family {
    ($(#[$doc:meta])* $name:ident { $($param:ident),* } => $family:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl $name {
            pub fn lowpass(cutoff_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Lowpass, Cutoff::Single(cutoff_hz), order)
            }
            pub fn highpass(cutoff_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Highpass, Cutoff::Single(cutoff_hz), order)
            }
            pub fn bandpass(low_hz: f64, high_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Bandpass, Cutoff::Band(low_hz, high_hz), order)
            }
            pub fn bandstop(low_hz: f64, high_hz: f64, order: usize $(, $param: f64)*) -> Stage {
                iir($family, Response::Bandstop, Cutoff::Band(low_hz, high_hz), order)
            }
        }
    };
}

iir_family!(
    /// Butterworth designs (`scipy.signal.butter`).
    Butterworth {} => IirFamily::Butterworth
);
iir_family!(
    /// Chebyshev type I designs (`scipy.signal.cheby1`); the last argument is `ripple_db`.
    Chebyshev1 { ripple_db } => IirFamily::Chebyshev1 { ripple_db }
);
iir_family!(
    /// Chebyshev type II designs (`scipy.signal.cheby2`); the last argument is `attenuation_db`.
    Chebyshev2 { attenuation_db } => IirFamily::Chebyshev2 { attenuation_db }
);
iir_family!(
    /// Elliptic designs (`scipy.signal.ellip`); then `ripple_db`, `attenuation_db`.
    Elliptic { ripple_db, attenuation_db } => IirFamily::Elliptic { ripple_db, attenuation_db }
);
iir_family!(
    /// Bessel designs (`scipy.signal.bessel(norm="phase")`).
    Bessel {} => IirFamily::Bessel
);

/// Linkwitz-Riley crossover filters (even orders).
pub struct LinkwitzRiley;

impl LinkwitzRiley {
    pub fn lowpass(cutoff_hz: f64, order: usize) -> Stage {
        Stage::new(StageKind::LinkwitzRiley { response: Response::Lowpass, order, cutoff_hz, matched: false })
    }
    pub fn highpass(cutoff_hz: f64, order: usize) -> Stage {
        Stage::new(StageKind::LinkwitzRiley { response: Response::Highpass, order, cutoff_hz, matched: false })
    }
}

/// Audio-EQ-Cookbook biquads.
pub struct Biquad;

impl Biquad {
    /// Any shape; `gain_db` only for peaking and shelves.
    #[allow(clippy::new_ret_no_self)] // a constructor of `Stage`s, like the others here
    pub fn new(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: Option<f64>) -> Stage {
        Stage::new(StageKind::Biquad { kind, freq_hz, q, gain_db, matched: false })
    }
    pub fn lowpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Lowpass, freq_hz, q, None)
    }
    pub fn highpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Highpass, freq_hz, q, None)
    }
    /// Constant 0 dB peak gain.
    pub fn bandpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Bandpass, freq_hz, q, None)
    }
    /// Constant skirt gain (peak gain = Q).
    pub fn bandpass_skirt(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::BandpassSkirt, freq_hz, q, None)
    }
    pub fn notch(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Notch, freq_hz, q, None)
    }
    pub fn allpass(freq_hz: f64, q: f64) -> Stage {
        Biquad::new(BiquadKind::Allpass, freq_hz, q, None)
    }
    pub fn peaking(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::Peaking, freq_hz, q, Some(gain_db))
    }
    pub fn low_shelf(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::LowShelf, freq_hz, q, Some(gain_db))
    }
    pub fn high_shelf(freq_hz: f64, q: f64, gain_db: f64) -> Stage {
        Biquad::new(BiquadKind::HighShelf, freq_hz, q, Some(gain_db))
    }
}

/// FIR stages: `firwin` designs (Hamming window unless given) and given coefficients.
pub struct Fir;

impl Fir {
    pub fn design(response: Response, taps: usize, cutoff: Cutoff, window: Window) -> Stage {
        Stage::new(StageKind::FirDesign { response, taps, cutoff, window })
    }
    pub fn lowpass(taps: usize, cutoff_hz: f64) -> Stage {
        Fir::design(Response::Lowpass, taps, Cutoff::Single(cutoff_hz), Window::Hamming)
    }
    pub fn highpass(taps: usize, cutoff_hz: f64) -> Stage {
        Fir::design(Response::Highpass, taps, Cutoff::Single(cutoff_hz), Window::Hamming)
    }
    pub fn bandpass(taps: usize, low_hz: f64, high_hz: f64) -> Stage {
        Fir::design(Response::Bandpass, taps, Cutoff::Band(low_hz, high_hz), Window::Hamming)
    }
    pub fn bandstop(taps: usize, low_hz: f64, high_hz: f64) -> Stage {
        Fir::design(Response::Bandstop, taps, Cutoff::Band(low_hz, high_hz), Window::Hamming)
    }
    /// A given kernel, run as `lfilter(coefficients, [1], x)`.
    pub fn coefficients(coefficients: Vec<f64>) -> Stage {
        Stage::new(StageKind::FirGiven { coefficients })
    }
}

impl Stage {
    /// For designed FIR stages: the same design with another window (no effect on others).
    pub fn with_window(mut self, new_window: Window) -> Stage {
        if let StageKind::FirDesign { window, .. } = &mut self.kind {
            *window = new_window;
        }
        self
    }
}
