//! Natural (analog) phase: a short FIR after a digital cascade that makes the pair follow
//! an analog prototype in magnitude **and phase** up to near Nyquist, behind a pure delay.
//! (What Pro-Q and ZL Equalizer call natural phase.)
//!
//! A digital design of an analog filter (the cookbook's bilinear biquads, or the
//! analog-matched fits) follows the prototype's magnitude closely where it was made to,
//! but its phase departs from the prototype's towards Nyquist: the prototype's response
//! above Nyquist shapes its phase below it, and a digital filter has nothing there. Here the
//! cascade stays as it is (it carries the long, low-frequency part of the response) and a
//! correction FIR supplies the difference:
//!
//! `C(w) = H_analog(w) e^{-j w D} / H_cascade(w)`
//!
//! sampled on a fine grid, blended above 0.96 of Nyquist towards a pure delay of the gain
//! there (so its spectrum is continuous where it wraps), inverse-transformed and cut to `taps` taps with
//! short tapers at both ends. The difference is smooth, so its impulse response is short;
//! `D` (the latency) only has to hold the little pre-ringing of the correction.
//! [`natural_length`] gives the lengths tested to meet 0.1 dB and 5 degrees against the
//! prototype up to 0.9 of Nyquist for bells, shelves, notches, band-passes and cuts at
//! 44.1-192 kHz (`tests/natural.rs`).

use super::matched::analog_prototype;
use super::{analog, sos_response, BiquadKind, Response, Sos};
pub use realfft::num_complex::Complex64;
use realfft::RealFftPlanner;

/// Above this share of Nyquist the correction fades to a pure delay (the accuracy holds
/// up to 0.9 of Nyquist, a little below).
const BLEND_FROM: f64 = 0.96;

/// The correction FIR's length and delay (the latency it adds) at `fs`: `(taps,
/// delay_samples)`, both growing with the rate so they cover the same time: 1,024 taps and
/// 192 samples (4 ms) at 48 kHz. Chosen by `tests/natural.rs`'s sweep: with 64 or 128
/// samples of delay the steepest low-frequency cuts miss 0.1 dB where they are 60 dB
/// down; with 192 the worst case is 0.07 dB and 0.4 degrees, bells and shelves 0.003 dB.
pub fn natural_length(fs: f64) -> (usize, usize) {
    let scale = (fs / 48_000.0).max(0.25);
    let taps = ((1024.0 * scale) as usize).next_power_of_two().max(256);
    let delay = ((192.0 * scale).round() as usize).max(16);
    (taps, delay)
}

/// The analog prototype of a cookbook shape (`kind` at `freq_hz`, `q`, `gain_db`) at
/// frequency `f_hz`: `H(j 2 pi f)`.
pub fn analog_biquad_response(kind: BiquadKind, freq_hz: f64, q: f64, gain_db: f64, f_hz: f64) -> Complex64 {
    let (num, den) = analog_prototype(kind, q, gain_db);
    let s = Complex64::new(0.0, f_hz / freq_hz);
    let poly = |p: [f64; 3]| s * s * p[0] + s * p[1] + p[2];
    poly(num) / poly(den)
}

/// The analog Butterworth low- or high-pass of `order` at `cutoff_hz`, at `f_hz`.
pub fn analog_butterworth_response(response: Response, order: usize, cutoff_hz: f64, f_hz: f64) -> Complex64 {
    let proto = analog::buttap(order.max(1));
    let w = f_hz / cutoff_hz;
    // High-pass: s -> 1/s, so H_hp(j w) = H_lp(1 / (j w)) = H_lp(-j / w).
    let s = match response {
        Response::Highpass => {
            if w == 0.0 {
                return Complex64::new(0.0, 0.0);
            }
            Complex64::new(0.0, -1.0 / w)
        }
        _ => Complex64::new(0.0, w),
    };
    let den: Complex64 = proto.poles.iter().map(|p| s - p).product();
    Complex64::new(proto.gain, 0.0) / den
}

/// The correction FIR (`taps` taps) that makes `sections` followed by it equal
/// `target(f_hz)` delayed by `delay` samples, up to 0.9 of Nyquist (see the module docs).
/// `target` is the analog response at a frequency in Hz; where the cascade and the target
/// both vanish (the zeros of a low cut at 0 Hz) their ratio's limit is taken. Allocates.
pub fn correction_fir(target: &dyn Fn(f64) -> Complex64, sections: &[Sos], fs: f64, taps: usize, delay: usize) -> Vec<f64> {
    let taps = taps.max(8);
    let n = (4 * taps).next_power_of_two();
    let half = n / 2;
    let pi = std::f64::consts::PI;
    // The ratio without the delay at each bin, where it means something: where the
    // target is more than 120 dB below its peak (a cut's stop band), the cascade's response
    // is rounding noise and the product is inaudible whatever the FIR does, so the nearest
    // meaningful bin's value is held there (a smooth spectrum, a short FIR).
    let mut ratios = vec![Complex64::new(0.0, 0.0); half + 1];
    let mut levels = vec![0.0f64; half + 1];
    for k in 0..=half {
        // At 0 Hz, the limit from just above (a cut's zeros cancel there).
        let omega = if k == 0 { 1e-4 * pi / half as f64 } else { pi * k as f64 / half as f64 };
        let f_hz = omega * fs / (2.0 * pi);
        let (h, t) = (sos_response(sections, f_hz, fs), target(f_hz));
        levels[k] = if t.is_finite() { t.norm() } else { 0.0 };
        ratios[k] = if h.norm() > 1e-300 && h.is_finite() && t.is_finite() { t / h } else { Complex64::new(f64::NAN, 0.0) };
    }
    let peak = levels.iter().cloned().fold(0.0, f64::max);
    let meaningful: Vec<bool> = (0..=half).map(|k| levels[k] >= 1e-6 * peak && ratios[k].is_finite()).collect();
    let Some(first) = meaningful.iter().position(|&m| m) else {
        // Nothing to follow (a target of silence): a pure delay.
        let mut pure = vec![0.0; taps];
        pure[delay.min(taps - 1)] = 1.0;
        return pure;
    };
    let mut held = ratios[first];
    for k in 0..=half {
        if meaningful[k] {
            held = ratios[k];
        } else {
            ratios[k] = held;
        }
    }
    for k in 0..first {
        ratios[k] = ratios[first];
    }
    let mut mags = vec![0.0f64; half + 1];
    let mut phases = vec![0.0f64; half + 1];
    let mut last = 0.0f64;
    for k in 0..=half {
        let r = ratios[k];
        mags[k] = r.norm();
        let mut ph = r.arg();
        if k > 0 {
            while ph - last > pi {
                ph -= 2.0 * pi;
            }
            while ph - last < -pi {
                ph += 2.0 * pi;
            }
        }
        phases[k] = ph;
        last = ph;
    }
    // At 0 Hz the spectrum is real: the ratio's phase there is taken as 0 (or pi) exactly.
    let offset = (phases[0] / pi).round() * pi;
    let start_blend = BLEND_FROM * pi;
    // Above that the magnitude is held at its value there (a cascade with a zero
    // at Nyquist would otherwise ask for unbounded gain).
    let k_blend = (BLEND_FROM * half as f64).floor() as usize;
    for k in k_blend + 1..=half {
        mags[k] = mags[k_blend];
    }
    let mut spectrum: Vec<Complex64> = (0..=half)
        .map(|k| {
            let omega = pi * k as f64 / half as f64;
            let mut ph = phases[k] - offset;
            // Above that the excess phase fades to 0, so at Nyquist the spectrum
            // is that of a pure delay (real), with no jump where it wraps.
            if omega > start_blend {
                let x = (omega - start_blend) / (pi - start_blend);
                ph *= 0.5 + 0.5 * (pi * x).cos();
            }
            let sign = if offset.rem_euclid(2.0 * pi) > 1.0 { -1.0 } else { 1.0 };
            Complex64::from_polar(sign * mags[k], ph - omega * delay as f64)
        })
        .collect();
    spectrum[0].im = 0.0;
    spectrum[half].im = 0.0;
    let mut planner = RealFftPlanner::<f64>::new();
    let inverse = planner.plan_fft_inverse(n);
    let mut h = inverse.make_output_vec();
    // (Fails only on wrong lengths, which these are not.)
    let _ = inverse.process(&mut spectrum, &mut h);
    let scale = 1.0 / n as f64;
    // Cut to `taps` taps; half-Hann tapers over the first half of the delay and the last
    // eighth of the taps keep the ends quiet.
    let head = (delay / 2).max(1);
    let tail = (taps / 8).max(1);
    (0..taps)
        .map(|i| {
            let w = if i < head {
                0.5 - 0.5 * (pi * (i as f64 + 0.5) / head as f64).cos()
            } else if i >= taps - tail {
                let x = (taps - i) as f64 - 0.5;
                0.5 - 0.5 * (pi * x / tail as f64).cos()
            } else {
                1.0
            };
            h[i] * scale * w
        })
        .collect()
}
