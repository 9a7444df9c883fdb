//! Analog-matched biquads against their analog prototypes, evaluated analytically here
//! (the Audio EQ Cookbook's s-domain transfer functions), on a grid of frequencies, Q and
//! gains at 44.1, 48 and 96 kHz, up to 0.9 Nyquist.

use ferrofx::design::matched::biquad_matched;
use ferrofx::design::{BiquadKind, Sos};
use num_complex::Complex64;

/// The cookbook's analog prototype at `f` (Hz), for `f0`, `q`, `gain_db`.
fn analog(kind: BiquadKind, f0: f64, q: f64, gain_db: f64, f: f64) -> f64 {
    let a = 10f64.powf(gain_db / 40.0);
    let s = Complex64::new(0.0, f / f0);
    let h = match kind {
        BiquadKind::Peaking => (s * s + s * (a / q) + 1.0) / (s * s + s / (a * q) + 1.0),
        BiquadKind::LowShelf => (s * s + s * (a.sqrt() / q) + a) / (s * s * a + s * (a.sqrt() / q) + 1.0) * a,
        BiquadKind::HighShelf => (s * s * a + s * (a.sqrt() / q) + 1.0) / (s * s + s * (a.sqrt() / q) + a) * a,
        BiquadKind::Lowpass => Complex64::new(1.0, 0.0) / (s * s + s / q + 1.0),
        BiquadKind::Highpass => s * s / (s * s + s / q + 1.0),
        BiquadKind::Bandpass => (s / q) / (s * s + s / q + 1.0),
        BiquadKind::BandpassSkirt => s / (s * s + s / q + 1.0),
        BiquadKind::Notch => (s * s + 1.0) / (s * s + s / q + 1.0),
        BiquadKind::Allpass => (s * s - s / q + 1.0) / (s * s + s / q + 1.0),
    };
    h.norm()
}

/// Every shape with a matched design (the all-pass stays the cookbook's).
const FITTED: [BiquadKind; 8] = [
    BiquadKind::Peaking,
    BiquadKind::LowShelf,
    BiquadKind::HighShelf,
    BiquadKind::Notch,
    BiquadKind::Bandpass,
    BiquadKind::BandpassSkirt,
    BiquadKind::Lowpass,
    BiquadKind::Highpass,
];

fn digital(sections: &[Sos], f: f64, fs: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * f / fs;
    sections.iter().fold(Complex64::new(1.0, 0.0), |h, s| h * s.response(w)).norm()
}

/// Worst dB difference up to 0.9 Nyquist, where the prototype is within 60 dB of its
/// largest value (deep in a notch or a band-pass skirt a dB figure means nothing).
fn worst_db(kind: BiquadKind, f0: f64, q: f64, gain_db: f64, fs: f64) -> f64 {
    let sections = biquad_matched(kind, f0, q, gain_db, fs);
    assert!(sections.iter().all(|s| s.is_stable() && s.is_finite()), "{kind:?} {f0} Hz Q {q} {gain_db} dB at {fs}: unstable");
    worst_db_of(&sections, kind, f0, q, gain_db, fs)
}

/// [`worst_db`] of any `sections` against `kind`'s prototype.
fn worst_db_of(sections: &[Sos], kind: BiquadKind, f0: f64, q: f64, gain_db: f64, fs: f64) -> f64 {
    let freqs: Vec<f64> = (0..3000).map(|i| 10f64 * (0.45 * fs / 10.0).powf(i as f64 / 2999.0)).collect();
    let target: Vec<f64> = freqs.iter().map(|&f| analog(kind, f0, q, gain_db, f)).collect();
    // The largest value: on the grid, or below its 10 Hz (a low-pass's at DC).
    let peak = target.iter().fold(analog(kind, f0, q, gain_db, 1e-3), |m, &v| m.max(v));
    freqs
        .iter()
        .zip(&target)
        .filter(|(_, &t)| t > 1e-3 * peak)
        .map(|(&f, &t)| (20.0 * (digital(sections, f, fs) / t).log10()).abs())
        .fold(0.0, f64::max)
}

fn sweep(kinds: &[BiquadKind], qs: &[f64], gains: &[f64], limit_db: f64) {
    let mut worst = (0.0, String::new());
    for &kind in kinds {
        for fs in [44_100.0, 48_000.0, 96_000.0] {
            for i in 0..24 {
                let f0 = (20.0 * 1000f64.powf(i as f64 / 23.0)).min(0.45 * fs);
                for &q in qs {
                    for &g in gains {
                        let e = worst_db(kind, f0, q, g, fs);
                        if e > worst.0 {
                            worst = (e, format!("{kind:?} {f0:.0} Hz Q {q} {g} dB at {fs}"));
                        }
                        assert!(e <= limit_db, "{kind:?} {f0:.1} Hz, Q {q}, {g} dB at {fs} Hz: {e:.3} dB from the analog prototype");
                    }
                }
            }
        }
    }
    println!("worst: {:.4} dB ({})", worst.0, worst.1);
}

const QS: [f64; 8] = [0.1, 0.3, 0.707, 1.0, 2.0, 4.0, 10.0, 18.0];

#[test]
fn bells_follow_the_analog_prototype_within_a_tenth_of_a_db() {
    sweep(&[BiquadKind::Peaking], &QS, &[-24.0, -12.0, -3.0, 3.0, 12.0, 24.0], 0.1);
}

#[test]
fn shelves_follow_the_analog_prototype() {
    let kinds = [BiquadKind::LowShelf, BiquadKind::HighShelf];
    let gains = [-24.0, -12.0, -3.0, 3.0, 12.0, 24.0];
    sweep(&kinds, &QS, &gains, 0.1);
}

#[test]
fn notch_band_passes_and_cuts_follow_the_analog_prototype() {
    let kinds = [BiquadKind::Notch, BiquadKind::Bandpass, BiquadKind::BandpassSkirt, BiquadKind::Lowpass, BiquadKind::Highpass];
    sweep(&kinds, &QS, &[0.0], 0.1);
}

#[test]
fn the_notch_is_exactly_at_its_frequency_and_the_band_pass_blocks_dc() {
    for fs in [44_100.0, 96_000.0] {
        for f0 in [50.0, 1000.0, 15_000.0] {
            let n = biquad_matched(BiquadKind::Notch, f0, 2.0, 0.0, fs);
            assert!(digital(&n, f0, fs) < 1e-9, "notch at {f0} Hz passes {}", digital(&n, f0, fs));
            let b = biquad_matched(BiquadKind::Bandpass, f0, 2.0, 0.0, fs);
            assert!(digital(&b, 0.0, fs) < 1e-9, "band-pass passes DC");
            let h = biquad_matched(BiquadKind::Highpass, f0, 0.7, 0.0, fs);
            assert!(digital(&h, 0.0, fs) < 1e-9, "high-pass passes DC");
        }
    }
}

#[test]
fn matched_bands_differ_from_the_cookbook_where_it_cramps() {
    // A 16 kHz bell at 48 kHz: the cookbook's is several dB short at 20 kHz.
    let (f0, q, g, fs) = (16_000.0, 1.0, 12.0, 48_000.0);
    let cook = [ferrofx::design::rbj::biquad(BiquadKind::Peaking, f0, q, g, fs)];
    let matched = biquad_matched(BiquadKind::Peaking, f0, q, g, fs);
    let target = 20.0 * analog(BiquadKind::Peaking, f0, q, g, 21_000.0).log10();
    let c = 20.0 * digital(&cook, 21_000.0, fs).log10();
    let m = 20.0 * digital(&matched, 21_000.0, fs).log10();
    println!("at 21 kHz: analog {target:.2} dB, cookbook {c:.2} dB, matched {m:.2} dB");
    assert!((m - target).abs() < 0.1 && (c - target).abs() > 1.0);
}

/// `|H|` of the analog Butterworth (or Linkwitz-Riley: the Butterworth of half the order,
/// squared) cut of `order` at `f / fc`: `1 / sqrt(1 + r^(2n))`, `1 / (1 + r^n)`.
fn analog_cut(highpass: bool, order: usize, linkwitz_riley: bool, r: f64) -> f64 {
    let r = if highpass { 1.0 / r } else { r };
    if linkwitz_riley {
        1.0 / (1.0 + r.powi(order as i32))
    } else {
        1.0 / (1.0 + r.powi(2 * order as i32)).sqrt()
    }
}

#[test]
fn cuts_follow_the_analog_butterworth_and_linkwitz_riley() {
    use ferrofx::design::matched::{cut_matched_into, cut_sections, MAX_CUT_ORDER};
    use ferrofx::design::Response;
    let mut worst = (0.0, String::new());
    let mut buf = [Sos::IDENTITY; MAX_CUT_ORDER];
    let mut cases = vec![];
    for order in 1..=MAX_CUT_ORDER {
        cases.push((order, false));
        if order % 2 == 0 {
            cases.push((order, true));
        }
    }
    for (order, lr) in cases {
        for highpass in [false, true] {
            let response = if highpass { Response::Highpass } else { Response::Lowpass };
            for fs in [44_100.0, 48_000.0, 96_000.0] {
                for i in 0..16 {
                    let fc = (20.0 * 1000f64.powf(i as f64 / 15.0)).min(0.45 * fs);
                    let n = cut_matched_into(response, order, lr, fc, fs, &mut buf);
                    assert_eq!(n, cut_sections(order));
                    let sections = &buf[..n];
                    assert!(sections.iter().all(|s| s.is_stable() && s.is_finite()), "order {order} lr {lr} {fc} Hz unstable");
                    for k in 0..2000 {
                        let f = 10f64 * (0.45 * fs / 10.0).powf(k as f64 / 1999.0);
                        let t = analog_cut(highpass, order, lr, f / fc);
                        let d = digital(sections, f, fs);
                        if t > 1e-3 {
                            let e = (20.0 * (d / t).log10()).abs();
                            if e > worst.0 {
                                worst = (e, format!("order {order} lr {lr} hp {highpass} {fc:.0} Hz at {fs}, {f:.0} Hz"));
                            }
                            assert!(e <= 0.1, "order {order} (Linkwitz-Riley {lr}) {response:?} at {fc:.1} Hz, fs {fs}: {e:.3} dB from the analog cut at {f:.0} Hz");
                        } else {
                            // Below -60 dB the cut stays below -50 dB: it does not come back.
                            assert!(d < 10f64.powf(-50.0 / 20.0), "order {order} (Linkwitz-Riley {lr}) {response:?} at {fc:.1} Hz: {:.1} dB at {f:.0} Hz where the analog cut is {:.1} dB", 20.0 * d.log10(), 20.0 * t.log10());
                        }
                    }
                }
            }
        }
    }
    println!("worst: {:.4} dB ({})", worst.0, worst.1);
}

/// Seeded random designs off the grids above: every shape at a random f0 (20 Hz to
/// 0.45 fs), Q (0.1-18, log-uniform), gain (+-24 dB) and rate (44.1-192 kHz).
#[test]
fn random_designs_follow_the_analog_prototype() {
    let kinds = FITTED;
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut uniform = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut worst = (0.0, String::new());
    for _ in 0..1500 {
        let kind = kinds[(uniform() * kinds.len() as f64) as usize % kinds.len()];
        let fs: f64 = [44_100.0, 48_000.0, 88_200.0, 96_000.0, 192_000.0][(uniform() * 5.0) as usize % 5];
        let f0: f64 = 20.0 * (0.45 * fs / 20.0f64).powf(uniform());
        let q = 0.1 * 180f64.powf(uniform());
        let g = -24.0 + 48.0 * uniform();
        let e = worst_db(kind, f0, q, g, fs);
        if e > worst.0 {
            worst = (e, format!("{kind:?} {f0:.1} Hz Q {q:.3} {g:.2} dB at {fs}"));
        }
        assert!(e <= 0.1, "{kind:?} {f0:.2} Hz, Q {q:.4}, {g:.3} dB at {fs} Hz: {e:.3} dB from the analog prototype");
    }
    println!("worst: {:.4} dB ({})", worst.0, worst.1);
}

/// An analog-matched biquad spends one section wherever one section meets the match's aim:
/// the cookbook biquad itself where that is within it already, else a single fitted
/// section where that is, else the fit's two. Over a grid of shapes, rates, frequencies, Q
/// and gains: every one-section design is either the cookbook biquad (bit for bit) within
/// 0.06 dB of the prototype on this test's own 3,000-point grid, or a fitted section within
/// 0.06 dB there that replaces a cookbook biquad missing it by more than 0.03 dB; every
/// two-section design replaces a cookbook biquad that misses by more than 0.03 dB (the
/// design's samples and this grid differ, hence the margin either side of its 0.04 dB).
/// Kept cookbook biquads and two-section fits occur for every shape with a matched
/// design, and fitted single sections for the bells and shelves.
#[test]
fn one_section_is_spent_wherever_one_section_matches() {
    use ferrofx::design::matched::{biquad_matched_into, COOKBOOK_WITHIN_DB};
    use ferrofx::design::rbj;
    assert_eq!(COOKBOOK_WITHIN_DB, 0.04);
    for kind in FITTED {
        let (mut kept, mut single, mut two) = (0, 0, 0);
        for fs in [44_100.0, 48_000.0, 96_000.0] {
            for i in 0..16 {
                let f0 = (20.0 * 1000f64.powf(i as f64 / 15.0)).min(0.45 * fs);
                for q in [0.3, 0.707, 2.0, 8.0] {
                    for g in [-12.0, -3.0, 2.0, 9.0] {
                        let g = if kind.uses_gain() { g } else { 0.0 };
                        let mut out = [Sos::IDENTITY; 2];
                        let n = biquad_matched_into(kind, f0, q, g, fs, &mut out);
                        let cookbook = rbj::biquad(kind, f0, q, g, fs);
                        let cookbook_db = worst_db_of(&[cookbook], kind, f0, q, g, fs);
                        let case = format!("{kind:?} {f0:.1} Hz Q {q} {g} dB at {fs}");
                        assert!(out[..n].iter().all(|s| s.is_stable() && s.is_finite()), "{case}: unstable");
                        match n {
                            1 if out[0] == cookbook => {
                                kept += 1;
                                assert!(cookbook_db <= 0.06, "{case}: the cookbook kept at {cookbook_db:.3} dB");
                            }
                            1 => {
                                single += 1;
                                assert!(cookbook_db > 0.03, "{case}: a section fitted although the cookbook is within {cookbook_db:.3} dB");
                                let fitted = worst_db_of(&out[..1], kind, f0, q, g, fs);
                                assert!(fitted <= 0.06, "{case}: one fitted section at {fitted:.3} dB");
                            }
                            2 => {
                                two += 1;
                                assert!(cookbook_db > 0.03, "{case}: fitted although the cookbook is within {cookbook_db:.3} dB");
                                let fitted = worst_db_of(&out, kind, f0, q, g, fs);
                                assert!(fitted <= 0.1, "{case}: {fitted:.3} dB");
                            }
                            _ => panic!("{case}: {n} sections"),
                        }
                    }
                }
            }
        }
        println!("{kind:?}: {kept} designs keep the cookbook biquad, {single} are one fitted section, {two} two");
        assert!(kept > 0 && two > 0, "{kind:?}: {kept} kept, {two} fitted in two sections");
        if kind.uses_gain() {
            assert!(single > 0, "{kind:?}: no single fitted section");
        }
    }
}

/// S. J. Orfanidis, "Digital Parametric Equalizer Design with Prescribed Nyquist-Frequency
/// Gain", J. Audio Eng. Soc. 45 (1997): one biquad matching the analog bell at DC, at its
/// centre, at its band edges and at Nyquist. An independent one-section design, written
/// here from the paper (`G0 = 1`, peak gain `G`, band-edge gain `GB = sqrt(G)`, bandwidth
/// `w0 / q`: where the cookbook's analog bell is at `sqrt(G)`).
fn orfanidis_bell(f0: f64, q: f64, gain_db: f64, fs: f64) -> Sos {
    let pi = std::f64::consts::PI;
    let (w0, g0, g) = (2.0 * pi * f0 / fs, 1.0f64, 10f64.powf(gain_db / 20.0));
    let (gb, dw) = (g.sqrt(), w0 / q);
    let f = (g * g - gb * gb).abs();
    let g00 = (g * g - g0 * g0).abs();
    let f00 = (gb * gb - g0 * g0).abs();
    let num = g0 * g0 * (w0 * w0 - pi * pi).powi(2) + g * g * f00 * pi * pi * dw * dw / f;
    let den = (w0 * w0 - pi * pi).powi(2) + f00 * pi * pi * dw * dw / f;
    let g1 = (num / den).sqrt();
    let g01 = (g * g - g0 * g1).abs();
    let g11 = (g * g - g1 * g1).abs();
    let f01 = (gb * gb - g0 * g1).abs();
    let f11 = (gb * gb - g1 * g1).abs();
    let w2 = (g11 / g00).sqrt() * (w0 / 2.0).tan().powi(2);
    let dw_ = (1.0 + (f00 / f11).sqrt() * w2) * (dw / 2.0).tan();
    let c = f11 * dw_ * dw_ - 2.0 * w2 * (f01 - (f00 * f11).sqrt());
    let d = 2.0 * w2 * (g01 - (g00 * g11).sqrt());
    let a = ((c + d) / f).sqrt();
    let b = ((g * g * c + gb * gb * d) / f).sqrt();
    let norm = 1.0 + w2 + a;
    Sos { b: [(g1 + g0 * w2 + b) / norm, -2.0 * (g1 - g0 * w2) / norm, (g1 - b + g0 * w2) / norm], a: [1.0, -2.0 * (1.0 - w2) / norm, (1.0 + w2 - a) / norm] }
}

/// Two sections are never spent on a bell that an independent single-section design
/// already matches: wherever Orfanidis' Nyquist-matched biquad is within 0.03 dB of the
/// analog bell (this test's grid), the matched design is one section; checked on a seeded
/// sweep of frequencies (to 0.45 `fs`), Q 0.3-8 and gains +-1-15 dB at 44.1-192 kHz. The
/// reference itself is checked first: at its centre it has the prototype's gain.
#[test]
fn no_second_section_where_a_known_single_section_matches() {
    use ferrofx::design::matched::biquad_matched_into;
    let mut seed = 0x005e_ed0f_0a1f_a41d_u64;
    let mut uniform = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut matched_by_reference, mut one) = (0, 0);
    for _ in 0..600 {
        let fs: f64 = [44_100.0, 48_000.0, 96_000.0, 192_000.0][(uniform() * 4.0) as usize % 4];
        let f0 = 20.0 * (0.45 * fs / 20.0f64).powf(uniform());
        let q = 0.3 * (8.0f64 / 0.3).powf(uniform());
        let g = (1.0 + 14.0 * uniform()) * if uniform() < 0.5 { -1.0 } else { 1.0 };
        let reference = orfanidis_bell(f0, q, g, fs);
        let centre_db = 20.0 * digital(&[reference], f0, fs).log10();
        assert!((centre_db - g).abs() < 1e-6, "the reference at {f0} Hz Q {q} {g} dB at {fs}: {centre_db} dB at its centre");
        let mut out = [Sos::IDENTITY; 2];
        let n = biquad_matched_into(BiquadKind::Peaking, f0, q, g, fs, &mut out);
        one += usize::from(n == 1);
        if worst_db_of(&[reference], BiquadKind::Peaking, f0, q, g, fs) <= 0.03 {
            matched_by_reference += 1;
            assert_eq!(n, 1, "{f0:.1} Hz Q {q:.3} {g:.2} dB at {fs}: two sections where one section is within 0.03 dB");
        }
    }
    println!("{matched_by_reference} of 600 bells matched by the reference section; {one} designed as one section");
    assert!(matched_by_reference > 100, "{matched_by_reference}");
}
