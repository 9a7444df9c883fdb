//! Natural (analog) phase (`ferrofx::design::natural`): an analog-matched band followed
//! by its correction FIR follows the analog prototype in
//! magnitude and phase, behind the FIR's pure delay: within 0.1 dB and 5 degrees up to 0.9
//! of Nyquist (where the prototype is within 60 dB of its peak), for bells, shelves,
//! notches, band-passes and Butterworth / Linkwitz-Riley cuts at 44.1-192 kHz; a seeded
//! sweep over frequency, Q, gain and slope, plus the edges of the parameter ranges.

use ferrofx::design::matched::{biquad_matched, cut_matched_into};
use ferrofx::design::natural::{analog_biquad_response, analog_butterworth_response, correction_fir, natural_length};
use ferrofx::design::{fir_response, sos_response};
use ferrofx::design::{BiquadKind, Response, Sos};
use ferrofx_testkit::Rng;
use realfft::num_complex::Complex64;

const MAX_DB: f64 = 0.1;
const MAX_DEGREES: f64 = 5.0;

/// The worst magnitude (dB) and phase (degrees) error of `sections` + correction against
/// `target` delayed by the correction's delay, up to 0.9 Nyquist.
fn worst(target: &dyn Fn(f64) -> Complex64, sections: &[Sos], fs: f64) -> (f64, f64, f64) {
    let (taps, delay) = natural_length(fs);
    let fir = correction_fir(target, sections, fs, taps, delay);
    let pi = std::f64::consts::PI;
    let points: Vec<f64> = (0..600).map(|i| 10.0 * (0.45 * fs / 10.0).powf(i as f64 / 599.0)).collect();
    let peak = points.iter().map(|&f| target(f).norm()).fold(0.0, f64::max);
    let (mut db, mut deg, mut at) = (0.0f64, 0.0f64, 0.0);
    for &f in &points {
        let t = target(f);
        if t.norm() < 1e-3 * peak {
            continue;
        }
        let omega = 2.0 * pi * f / fs;
        let got = sos_response(sections, f, fs) * fir_response(&fir, f, fs);
        let want = t * Complex64::from_polar(1.0, -omega * delay as f64);
        let r = got / want;
        let e_db = 20.0 * r.norm().log10();
        let e_deg = r.arg().to_degrees();
        if e_db.abs() > db || e_deg.abs() > deg {
            at = f;
        }
        db = db.max(e_db.abs());
        deg = deg.max(e_deg.abs());
    }
    (db, deg, at)
}

const RATES: [f64; 4] = [44_100.0, 48_000.0, 96_000.0, 192_000.0];
const SHAPES: [BiquadKind; 5] = [BiquadKind::Peaking, BiquadKind::LowShelf, BiquadKind::HighShelf, BiquadKind::Notch, BiquadKind::Bandpass];

fn check(what: &str, target: &dyn Fn(f64) -> Complex64, sections: &[Sos], fs: f64, worst_seen: &mut (f64, f64)) {
    let (db, deg, at) = worst(target, sections, fs);
    worst_seen.0 = worst_seen.0.max(db);
    worst_seen.1 = worst_seen.1.max(deg);
    assert!(db <= MAX_DB && deg <= MAX_DEGREES, "{what} at {fs} Hz: {db:.3} dB, {deg:.2} degrees (worst near {at:.0} Hz)");
}

#[test]
fn bands_follow_the_analog_prototype_in_magnitude_and_phase() {
    let mut rng = Rng::new(4503);
    let mut seen = (0.0, 0.0);
    for &fs in &RATES {
        for case in 0..60 {
            let kind = SHAPES[case % SHAPES.len()];
            let f0 = 20.0 * (0.45 * fs / 20.0).powf(rng.unit());
            let q = 0.1 * 180.0f64.powf(rng.unit());
            let g = -24.0 + 48.0 * rng.unit();
            let target = move |f: f64| analog_biquad_response(kind, f0, q, g, f);
            // Natural phase builds on the matched designs: the cookbook's bilinear bands
            // vanish or saturate at Nyquist, where the prototype does not, and no short
            // FIR after them reaches the prototype close to it.
            let matched = biquad_matched(kind, f0, q, g, fs);
            check(&format!("matched {kind:?} {f0:.1} Hz Q {q:.2} {g:.1} dB"), &target, &matched, fs, &mut seen);
        }
        // The corners of the ranges: lowest and highest frequency, widest and narrowest Q,
        // most boost and cut.
        for kind in SHAPES {
            for f0 in [20.0, 0.45 * fs] {
                for q in [0.1, 18.0] {
                    for g in [-24.0, 24.0] {
                        let target = move |f: f64| analog_biquad_response(kind, f0, q, g, f);
                        check(&format!("edge {kind:?} {f0:.1} Hz Q {q} {g} dB"), &target, &biquad_matched(kind, f0, q, g, fs), fs, &mut seen);
                    }
                }
            }
        }
    }
    println!("bands: worst {:.4} dB, {:.3} degrees", seen.0, seen.1);
}

#[test]
fn cuts_follow_the_analog_butterworth_and_linkwitz_riley() {
    let mut seen = (0.0, 0.0);
    for &fs in &RATES {
        for response in [Response::Highpass, Response::Lowpass] {
            // The plugin's slopes: 6-96 dB/oct (orders 1-16).
            for order in 1..=16 {
                for fc in [20.0, 1000.0, 0.45 * fs] {
                    for lr in [false, true] {
                        if lr && order % 2 == 1 {
                            continue;
                        }
                        let target = move |f: f64| {
                            if lr {
                                let h = analog_butterworth_response(response, order / 2, fc, f);
                                h * h
                            } else {
                                analog_butterworth_response(response, order, fc, f)
                            }
                        };
                        let mut out = [Sos::IDENTITY; 16];
                        let n = cut_matched_into(response, order, lr, fc, fs, &mut out);
                        check(&format!("matched {response:?} order {order} LR {lr} at {fc:.0} Hz"), &target, &out[..n], fs, &mut seen);
                    }
                }
            }
        }
    }
    println!("cuts: worst {:.4} dB, {:.3} degrees", seen.0, seen.1);
}

/// The added latency is the delay the comparison removes: the correction FIR's
/// response at low frequencies is that pure delay (its group delay there is `delay`).
#[test]
fn the_latency_is_the_correction_delay() {
    for &fs in &RATES {
        let (taps, delay) = natural_length(fs);
        let target = |f: f64| analog_biquad_response(BiquadKind::Peaking, 1000.0, 1.0, 6.0, f);
        let fir = correction_fir(&target, &biquad_matched(BiquadKind::Peaking, 1000.0, 1.0, 6.0, fs), fs, taps, delay);
        let w = 2.0 * std::f64::consts::PI * 50.0 / fs;
        let dw = 1e-6;
        let phase = |w: f64| fir_response(&fir, w * fs / (2.0 * std::f64::consts::PI), fs).arg();
        let group_delay = -(phase(w + dw) - phase(w - dw)) / (2.0 * dw);
        assert!((group_delay - delay as f64).abs() < 0.05, "{fs} Hz: group delay {group_delay:.3} samples, delay {delay}");
    }
}
