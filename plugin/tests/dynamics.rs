//! Dynamic EQ as pure DSP, driven the way the plugin's audio thread drives it (detectors
//! on each 32-sample piece of input, then the equaliser): the static curve (level at the
//! band centre against gain) against the threshold/ratio/range it was given, the attack
//! and release time constants, no clicks while it acts, and no allocation.

use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, BANDS};
use ferrofx_plugin::audio::equaliser::REDESIGN_INTERVAL;
use ferrofx_plugin::shared::settings::{static_delta_db, DynamicSettings};
use ferrofx_plugin::audio::dynamics::Dynamics;
use ferrofx_plugin::audio::routing::RoutedEqualiser;
use nice_assert_no_alloc::{assert_no_alloc, violation_count};

const FS: f64 = 48_000.0;
const F0: f64 = 1000.0;

fn bell(gain_db: f64) -> Band {
    Band {
        enabled: true,
        bypassed: false,
        shape: Shape::Peak,
        freq_hz: F0,
        gain_db,
        q: 1.0,
        slope: Slope { db_per_oct: 12, linkwitz_riley: false },
        route: Route::Stereo,
        matched: false,
        dynamic: true,
    }
}

struct Rig {
    eq: RoutedEqualiser,
    dynamics: Dynamics,
    bands: [Band; BANDS],
    settings: [DynamicSettings; BANDS],
    /// The band's gain change after each piece.
    deltas: Vec<f64>,
}

impl Rig {
    fn new(band: Band, s: DynamicSettings) -> Rig {
        let mut bands = [Band::default(); BANDS];
        bands[2] = band;
        let mut settings = [DynamicSettings::default(); BANDS];
        settings[2] = s;
        let mut eq = RoutedEqualiser::new(FS, 1, 512);
        for (i, b) in bands.iter().enumerate() {
            eq.set_band(i, *b);
        }
        eq.snap();
        Rig { eq, dynamics: Dynamics::new(FS, 1), bands, settings, deltas: Vec::new() }
    }

    /// What `audio.rs` does per block: detectors, then the equaliser, per piece.
    fn process(&mut self, x: &mut [f32]) {
        for piece in x.chunks_mut(REDESIGN_INTERVAL) {
            let mut p = [piece];
            self.dynamics.process(&p, None, &self.bands, &self.settings);
            for i in 0..BANDS {
                self.eq.set_dynamic_gain(i, self.dynamics.delta_db(i));
            }
            self.eq.process(&mut p);
            self.deltas.push(self.dynamics.delta_db(2));
        }
    }
}

fn sine(level_db: f64, n: usize, phase0: usize) -> Vec<f32> {
    let a = 10f64.powf(level_db / 20.0);
    (0..n).map(|k| (a * (2.0 * std::f64::consts::PI * F0 * (k + phase0) as f64 / FS).sin()) as f32).collect()
}

fn peak_db(x: &[f32]) -> f64 {
    // RMS of a sine times sqrt(2): its amplitude.
    let ms = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / x.len() as f64;
    10.0 * (2.0 * ms).log10()
}

#[test]
fn static_curves_follow_threshold_ratio_and_range_within_half_a_db() {
    let cases = [
        // (set gain, threshold, ratio, range): compression, harder compression, upward.
        (0.0, -30.0, 2.0, 12.0),
        (6.0, -20.0, 4.0, 6.0),
        (-3.0, -35.0, 0.5, 9.0),
    ];
    let mut worst = 0.0f64;
    for (gain, threshold_db, ratio, range_db) in cases {
        let s = DynamicSettings { on: true, threshold_db, ratio, attack_ms: 5.0, release_ms: 50.0, range_db, sidechain: false };
        for level in [-50.0, -40.0, -32.0, -28.0, -24.0, -18.0, -12.0, -6.0, -2.0] {
            let mut rig = Rig::new(bell(gain), s);
            let mut x = sine(level, 24_000, 0);
            rig.process(&mut x);
            let measured = peak_db(&x[19_200..]) - level;
            let want = gain + static_delta_db(&s, level);
            let err = (measured - want).abs();
            worst = worst.max(err);
            assert!(err <= 0.5, "gain {gain}, threshold {threshold_db}, ratio {ratio}, range {range_db}: at {level} dB the band gives {measured:.2} dB, the curve says {want:.2} dB");
        }
    }
    println!("static curves: worst {worst:.3} dB");
}

/// Time for `deltas` (the value at the end of each 32-sample piece) to cover 63.2 % of
/// the way from `from` to its final value, in ms (interpolated between pieces).
fn time_constant_ms(deltas: &[f64], from: f64) -> f64 {
    let last = *deltas.last().unwrap();
    let mark = (0.632 * (last - from)).abs();
    let k = deltas.iter().position(|&d| (d - from).abs() >= mark).unwrap();
    let before = if k == 0 { 0.0 } else { (deltas[k - 1] - from).abs() };
    let after = (deltas[k] - from).abs();
    let frac = (mark - before) / (after - before);
    (k as f64 + frac) * REDESIGN_INTERVAL as f64 / FS * 1e3
}

#[test]
fn attack_and_release_time_constants_within_ten_percent() {
    for (attack_ms, release_ms) in [(20.0, 200.0), (10.0, 100.0), (50.0, 500.0)] {
        let s = DynamicSettings { on: true, threshold_db: -30.0, ratio: 4.0, attack_ms, release_ms, range_db: 20.0, sidechain: false };
        let mut rig = Rig::new(bell(0.0), s);
        // Quiet, then 25 dB over the threshold, then quiet again.
        let mut quiet = sine(-50.0, 9600, 0);
        rig.process(&mut quiet);
        rig.deltas.clear();
        let loud_len = (10.0 * attack_ms * 1e-3 * FS) as usize;
        let mut loud = sine(-5.0, loud_len, 9600);
        rig.process(&mut loud);
        let attack = time_constant_ms(&rig.deltas, 0.0);
        let top = *rig.deltas.last().unwrap();
        assert!((top - static_delta_db(&s, -5.0)).abs() < 0.2, "attack settles at the curve: {top}");
        rig.deltas.clear();
        let mut again = sine(-50.0, (10.0 * release_ms * 1e-3 * FS) as usize, 9600 + loud_len);
        rig.process(&mut again);
        let release = time_constant_ms(&rig.deltas, top);
        println!("attack {attack_ms} ms measured {attack:.1} ms, release {release_ms} ms measured {release:.1} ms");
        assert!((attack / attack_ms - 1.0).abs() <= 0.1, "attack {attack_ms} ms measured {attack:.1} ms");
        assert!((release / release_ms - 1.0).abs() <= 0.1, "release {release_ms} ms measured {release:.1} ms");
    }
}

#[test]
fn the_sidechain_drives_the_detector_when_the_band_listens_to_it() {
    let base = DynamicSettings { on: true, threshold_db: -30.0, ratio: 4.0, attack_ms: 5.0, release_ms: 50.0, range_db: 12.0, sidechain: true };
    for (listens, want) in [(true, -12.0), (false, 0.0)] {
        let s = DynamicSettings { sidechain: listens, ..base };
        let mut rig = Rig::new(bell(0.0), s);
        // A quiet main signal, a loud sidechain.
        let mut x = sine(-45.0, 24_000, 0);
        let side = sine(-10.0, 24_000, 0);
        for (piece, sc) in x.chunks_mut(REDESIGN_INTERVAL).zip(side.chunks(REDESIGN_INTERVAL)) {
            let mut p = [piece];
            rig.dynamics.process(&p, Some(&[sc]), &rig.bands, &rig.settings);
            for i in 0..BANDS {
                rig.eq.set_dynamic_gain(i, rig.dynamics.delta_db(i));
            }
            rig.eq.process(&mut p);
        }
        let got = peak_db(&x[19_200..]) + 45.0;
        assert!((got - want).abs() <= 0.5, "listening to the sidechain {listens}: {got:.2} dB, expected {want}");
    }
}

/// Largest sample-to-sample step (a click is a jump).
fn max_step(y: &[f32]) -> f32 {
    y.windows(2).fold(0.0f32, |m, w| m.max((w[1] - w[0]).abs()))
}

#[test]
fn a_band_acting_fast_does_not_click_and_nothing_allocates() {
    // A 12 dB swing with a 5 ms attack on a low sine: the gain only goes down from the
    // set +6 dB, so the output never steps further from one sample to the next than the
    // same band held at +6 dB does (a click would).
    let s = DynamicSettings { on: true, threshold_db: -30.0, ratio: 10.0, attack_ms: 5.0, release_ms: 20.0, range_db: 12.0, sidechain: false };
    let mut rig = Rig::new(Band { freq_hz: 200.0, ..bell(6.0) }, s);
    // -40 dB, then -3 dB from sample 9600 to 19,200 (the level ramps over 2 ms, so the
    // input itself has no kink), then -40 dB again.
    let level = |k: usize| {
        let ramp = |t: f64| if t <= 0.0 { 0.0 } else if t >= 1.0 { 1.0 } else { 0.5 - 0.5 * (std::f64::consts::PI * t).cos() };
        let up = ramp((k as f64 - 9600.0) / 96.0) - ramp((k as f64 - 19_200.0) / 96.0);
        10f64.powf(-40.0 / 20.0) + up * (10f64.powf(-3.0 / 20.0) - 10f64.powf(-40.0 / 20.0))
    };
    let mut x: Vec<f32> = (0..28_800).map(|k| (level(k) * (2.0 * std::f64::consts::PI * 200.0 * k as f64 / FS).sin()) as f32).collect();
    let mut held = x.clone();
    let mut fixed = Rig::new(Band { freq_hz: 200.0, dynamic: false, ..bell(6.0) }, DynamicSettings::default());
    fixed.process(&mut held);
    rig.deltas.reserve(x.len()); // the test's own record, not the audio path
    let before = violation_count();
    for block in x.chunks_mut(256) {
        assert_no_alloc(|| rig.process(block));
    }
    assert_eq!(violation_count(), before, "the dynamics allocated");
    let (dynamic, reference) = (max_step(&x), max_step(&held));
    println!("largest sample step: {dynamic:e} with the dynamics acting, {reference:e} held at the set gain");
    assert!(dynamic <= reference * 1.001, "the gain swing clicks: step {dynamic:e} against {reference:e} held");
    assert!(rig.deltas.iter().fold(0.0f64, |m, d| m.min(*d)) < -11.0, "the band did act (12 dB range)");
    assert!(x.iter().all(|v| v.is_finite()));
}
