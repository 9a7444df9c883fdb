//! Filter design, all in `f64`, equal to SciPy's `scipy.signal` designs.
//!
//! * [`analog`]: the normalised analog prototypes (Butterworth, Chebyshev I/II,
//!   elliptic, Bessel with `norm="phase"`) as zeros/poles/gain.
//! * [`transform`]: SciPy's `lp2lp_zpk`, `lp2hp_zpk`, `lp2bp_zpk`, `lp2bs_zpk`, the
//!   bilinear transform with SciPy's prewarping, and `zpk2sos` with "nearest" pairing.
//! * [`elliptic_fn`]: complete elliptic integrals and Jacobi elliptic functions.
//! * [`rbj`]: the Audio-EQ-Cookbook biquads.
//! * [`fir`]: `firwin` with its windows.
//!
//! Nothing here allocates on a hot path; designs return fresh `Vec`s and are meant to run
//! off the audio thread (the biquad designs are plain functions returning one [`Sos`]).

pub mod analog;
pub mod elliptic_fn;
pub mod fir;
pub mod matched;
pub mod natural;
pub mod rbj;
pub mod transform;

use num_complex::Complex64;
use std::f64::consts::PI;

pub use fir::{firwin, Window};
pub use rbj::BiquadKind;

/// Zeros, poles and gain of a filter (analog or digital).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Zpk {
    pub zeros: Vec<Complex64>,
    pub poles: Vec<Complex64>,
    pub gain: f64,
}

/// One second-order section `[b0, b1, b2] / [a0, a1, a2]` (SciPy's row order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sos {
    pub b: [f64; 3],
    pub a: [f64; 3],
}

impl Sos {
    /// The identity section (passes the signal unchanged).
    pub const IDENTITY: Sos = Sos { b: [1.0, 0.0, 0.0], a: [1.0, 0.0, 0.0] };

    /// From a SciPy row `[b0, b1, b2, a0, a1, a2]`.
    pub fn from_row(row: [f64; 6]) -> Sos {
        Sos { b: [row[0], row[1], row[2]], a: [row[3], row[4], row[5]] }
    }

    /// As a SciPy row `[b0, b1, b2, a0, a1, a2]`.
    pub fn to_row(&self) -> [f64; 6] {
        [self.b[0], self.b[1], self.b[2], self.a[0], self.a[1], self.a[2]]
    }

    /// A pure gain stage.
    pub fn gain(linear: f64) -> Sos {
        Sos { b: [linear, 0.0, 0.0], a: [1.0, 0.0, 0.0] }
    }

    /// The same section divided through by `a0` (so `a0 == 1`).
    pub fn normalized(&self) -> Sos {
        let a0 = self.a[0];
        Sos {
            b: [self.b[0] / a0, self.b[1] / a0, self.b[2] / a0],
            a: [1.0, self.a[1] / a0, self.a[2] / a0],
        }
    }

    /// Complex response at normalised angular frequency `omega` (radians per sample).
    pub fn response(&self, omega: f64) -> Complex64 {
        let z1 = Complex64::from_polar(1.0, -omega);
        let z2 = z1 * z1;
        let num = self.b[0] + z1 * self.b[1] + z2 * self.b[2];
        let den = self.a[0] + z1 * self.a[1] + z2 * self.a[2];
        num / den
    }

    /// True when both poles lie strictly inside the unit circle (and `a0 != 0`).
    ///
    /// For `a0 = 1`, `z^2 + a1 z + a2` has both roots inside the unit circle iff
    /// `|a2| < 1` and `|a1| < 1 + a2` (the stability triangle).
    pub fn is_stable(&self) -> bool {
        if self.a[0] == 0.0 || !self.a[0].is_finite() {
            return false;
        }
        let n = self.normalized();
        let (a1, a2) = (n.a[1], n.a[2]);
        a2.abs() < 1.0 && a1.abs() < 1.0 + a2
    }

    /// True when all six numbers are finite.
    pub fn is_finite(&self) -> bool {
        self.b.iter().chain(self.a.iter()).all(|v| v.is_finite())
    }
}

/// Complex response of a cascade of sections at `freq_hz` for sample rate `fs`.
pub fn sos_response(sections: &[Sos], freq_hz: f64, fs: f64) -> Complex64 {
    let omega = 2.0 * PI * freq_hz / fs;
    sections.iter().fold(Complex64::new(1.0, 0.0), |acc, s| acc * s.response(omega))
}

/// Complex response of an FIR `taps` at `freq_hz` for sample rate `fs`.
pub fn fir_response(taps: &[f64], freq_hz: f64, fs: f64) -> Complex64 {
    let omega = 2.0 * PI * freq_hz / fs;
    // Horner in z^-1, evaluated from the last tap: exact enough for the lengths the
    // editor and tests ask about (the error grows like sqrt(n) * eps).
    let z1 = Complex64::from_polar(1.0, -omega);
    taps.iter().rev().fold(Complex64::new(0.0, 0.0), |acc, &t| acc * z1 + t)
}

/// The frequency response shapes of the IIR and FIR designs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Response {
    Lowpass,
    Highpass,
    Bandpass,
    Bandstop,
}

impl Response {
    pub fn is_band(self) -> bool {
        matches!(self, Response::Bandpass | Response::Bandstop)
    }
    pub fn name(self) -> &'static str {
        match self {
            Response::Lowpass => "lowpass",
            Response::Highpass => "highpass",
            Response::Bandpass => "bandpass",
            Response::Bandstop => "bandstop",
        }
    }
}

/// A cutoff: one edge for low/highpass, two for band filters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cutoff {
    Single(f64),
    Band(f64, f64),
}

impl Cutoff {
    /// The lower edge (the only one for a single cutoff).
    pub fn low_hz(&self) -> f64 {
        match *self {
            Cutoff::Single(f) | Cutoff::Band(f, _) => f,
        }
    }
    /// The upper edge (the only one for a single cutoff).
    pub fn high_hz(&self) -> f64 {
        match *self {
            Cutoff::Single(f) | Cutoff::Band(_, f) => f,
        }
    }
}

/// The classic IIR families and their extra parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IirFamily {
    Butterworth,
    Chebyshev1 { ripple_db: f64 },
    Chebyshev2 { attenuation_db: f64 },
    Elliptic { ripple_db: f64, attenuation_db: f64 },
    Bessel,
}

impl IirFamily {
    pub fn name(&self) -> &'static str {
        match self {
            IirFamily::Butterworth => "butterworth",
            IirFamily::Chebyshev1 { .. } => "chebyshev1",
            IirFamily::Chebyshev2 { .. } => "chebyshev2",
            IirFamily::Elliptic { .. } => "elliptic",
            IirFamily::Bessel => "bessel",
        }
    }

    /// The normalised analog lowpass prototype of `order`.
    pub fn prototype(&self, order: usize) -> Zpk {
        match *self {
            IirFamily::Butterworth => analog::buttap(order),
            IirFamily::Chebyshev1 { ripple_db } => analog::cheb1ap(order, ripple_db),
            IirFamily::Chebyshev2 { attenuation_db } => analog::cheb2ap(order, attenuation_db),
            IirFamily::Elliptic { ripple_db, attenuation_db } => {
                analog::ellipap(order, ripple_db, attenuation_db)
            }
            IirFamily::Bessel => analog::besselap(order),
        }
    }
}

/// Digital IIR design as zeros/poles/gain: SciPy's `iirfilter(..., fs=fs, output="zpk")`.
///
/// The caller validates arguments (cutoffs strictly between 0 and `fs/2`, `order >= 1`,
/// positive ripple/attenuation); see `chain::validate`.
pub fn iir_zpk(family: IirFamily, response: Response, order: usize, cutoff: Cutoff, fs: f64) -> Zpk {
    let proto = family.prototype(order);
    // SciPy normalises to fs = 2 and prewarps: warped = 2 * fs * tan(pi * Wn / fs).
    let warp = |f_hz: f64| {
        let wn = 2.0 * f_hz / fs;
        4.0 * (PI * wn / 2.0).tan()
    };
    let analog = match response {
        Response::Lowpass => transform::lp2lp(&proto, warp(cutoff.low_hz())),
        Response::Highpass => transform::lp2hp(&proto, warp(cutoff.low_hz())),
        Response::Bandpass | Response::Bandstop => {
            let (w1, w2) = (warp(cutoff.low_hz()), warp(cutoff.high_hz()));
            let (wo, bw) = ((w1 * w2).sqrt(), w2 - w1);
            if response == Response::Bandpass {
                transform::lp2bp(&proto, wo, bw)
            } else {
                transform::lp2bs(&proto, wo, bw)
            }
        }
    };
    transform::bilinear(&analog, 2.0)
}

/// Digital IIR design as second-order sections: SciPy's `iirfilter(..., output="sos")`.
pub fn iir_sos(family: IirFamily, response: Response, order: usize, cutoff: Cutoff, fs: f64) -> Vec<Sos> {
    transform::zpk2sos(&iir_zpk(family, response, order, cutoff, fs))
}

/// Linkwitz-Riley of even `order`: the Butterworth of `order / 2` applied twice.
pub fn linkwitz_riley_sos(response: Response, order: usize, cutoff_hz: f64, fs: f64) -> Vec<Sos> {
    let half = iir_sos(IirFamily::Butterworth, response, order / 2, Cutoff::Single(cutoff_hz), fs);
    let mut sections = half.clone();
    sections.extend_from_slice(&half);
    sections
}

/// Butterworth lowpass or highpass of `order` (1..=24) at `cutoff_hz`, written into `out`
/// without allocating (for re-design on the audio thread); returns the number of sections
/// written (`ceil(order / 2)`, or 0 if `out` is too short or the arguments are invalid).
///
/// Closed form of the same filter as [`iir_sos`] (prewarped bilinear transform of the
/// analog prototype, one section per conjugate pole pair with damping
/// `sin(pi (2m + 1) / 2N)`, a first-order section for odd orders); the pairing of
/// sections differs, the response does not.
pub fn butterworth_into(response: Response, order: usize, cutoff_hz: f64, fs: f64, out: &mut [Sos]) -> usize {
    let n = order.div_ceil(2);
    let highpass = match response {
        Response::Lowpass => false,
        Response::Highpass => true,
        _ => return 0,
    };
    if order == 0 || out.len() < n || !(cutoff_hz > 0.0 && cutoff_hz < fs / 2.0) {
        return 0;
    }
    let w = (PI * cutoff_hz / fs).tan();
    let w2 = w * w;
    for (m, section) in out.iter_mut().take(order / 2).enumerate() {
        let zeta = (PI * (2 * m + 1) as f64 / (2 * order) as f64).sin();
        let a = [1.0 + 2.0 * zeta * w + w2, 2.0 * (w2 - 1.0), 1.0 - 2.0 * zeta * w + w2];
        let b = if highpass { [1.0, -2.0, 1.0] } else { [w2, 2.0 * w2, w2] };
        *section = Sos { b, a }.normalized();
    }
    if order % 2 == 1 {
        let a = [1.0 + w, w - 1.0, 0.0];
        let b = if highpass { [1.0, -1.0, 0.0] } else { [w, w, 0.0] };
        out[order / 2] = Sos { b, a }.normalized();
    }
    n
}


/// `n` samples of seeded white noise in `[-1, 1)`: the probe signal the designer's and
/// the GPU path's numerical checks run (the same on every machine).
pub(crate) fn probe_noise(n: usize) -> Vec<f64> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn butterworth_into_equals_the_zpk_design() {
        let mut buf = [Sos::IDENTITY; 12];
        for &(fs, fc) in &[(48_000.0, 30.0), (44_100.0, 1000.0), (96_000.0, 20_000.0), (8_000.0, 3_900.0)] {
            for order in 1..=24 {
                for response in [Response::Lowpass, Response::Highpass] {
                    let n = butterworth_into(response, order, fc, fs, &mut buf);
                    assert_eq!(n, order.div_ceil(2));
                    let reference = iir_sos(IirFamily::Butterworth, response, order, Cutoff::Single(fc), fs);
                    for i in 0..200 {
                        let f = 1.0 * (fs / 2.0f64).powf(i as f64 / 200.0);
                        let (a, b) = (sos_response(&buf[..n], f, fs), sos_response(&reference, f, fs));
                        let scale = b.norm().max(1e-3);
                        assert!((a - b).norm() / scale < 1e-9, "order {order} {response:?} fc {fc} at {f} Hz: {a} vs {b}");
                    }
                }
            }
        }
        assert_eq!(butterworth_into(Response::Lowpass, 25, 100.0, 48_000.0, &mut buf), 0, "too short a buffer");
        assert_eq!(butterworth_into(Response::Lowpass, 2, 30_000.0, 48_000.0, &mut buf), 0);
        assert_eq!(butterworth_into(Response::Bandpass, 2, 100.0, 48_000.0, &mut buf), 0);
    }
}
