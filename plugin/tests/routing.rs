//! Per-band channel routing (stereo, left, right, mid, side), as pure DSP: bit-exact
//! promises, the M/S round trip, routed bands against per-channel core engines, route
//! switches without clicks, layouts other than stereo, and no allocation.

use ferrofx::chain::{Biquad, Butterworth, Chain};
use ferrofx::Engine;
use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, BANDS};
use ferrofx_plugin::audio::equaliser::SWITCH_FADE_MS;
use ferrofx_plugin::audio::routing::{decode_ms, encode_ms, RoutedEqualiser};
use nice_assert_no_alloc::{assert_no_alloc, violation_count};
use ferrofx_testkit::engine::max_abs_diff;

const FS: f64 = 48_000.0;
const BLOCK: usize = 256;

fn noise(n: usize, seed: u64) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, seed, 0.5)
}

fn band(shape: Shape, freq_hz: f64, gain_db: f64, q: f64, route: Route) -> Band {
    Band {
        enabled: true,
        bypassed: false,
        shape,
        freq_hz,
        gain_db,
        q,
        slope: Slope { db_per_oct: 24, linkwitz_riley: false },
        route,
        matched: false,
        dynamic: false,
    }
}

/// A few stereo bands every test starts from.
fn stereo_bands() -> Vec<(usize, Band)> {
    vec![
        (0, band(Shape::LowCut, 40.0, 0.0, 0.7, Route::Stereo)),
        (3, band(Shape::Peak, 900.0, 4.0, 1.2, Route::Stereo)),
        (7, band(Shape::HighShelf, 7000.0, -3.0, 0.7, Route::Stereo)),
    ]
}

/// The core chain of the stereo bands above.
fn stereo_chain() -> Chain {
    Butterworth::highpass(40.0, 4) | Biquad::peaking(900.0, 1.2, 4.0) | Biquad::high_shelf(7000.0, 0.7, -3.0)
}

fn equaliser(bands: &[(usize, Band)], channels: usize) -> RoutedEqualiser {
    let mut eq = RoutedEqualiser::new(FS, channels, BLOCK);
    for (i, b) in bands {
        eq.set_band(*i, *b);
    }
    eq.snap();
    eq
}

/// Runs `eq` over planar `x` in blocks; `each_block` may change bands between blocks.
fn run(eq: &mut RoutedEqualiser, x: &[Vec<f32>], mut each_block: impl FnMut(usize, &mut RoutedEqualiser)) -> Vec<Vec<f32>> {
    let mut y = x.to_vec();
    let frames = x[0].len();
    for (k, start) in (0..frames).step_by(BLOCK).enumerate() {
        each_block(k, eq);
        let end = (start + BLOCK).min(frames);
        let mut refs: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[start..end]).collect();
        eq.process(&mut refs);
    }
    y
}

fn engine(chain: &Chain, x: &[f32]) -> Vec<f32> {
    let mut e = Engine::new(&chain.design(FS).unwrap(), 1, x.len());
    let mut y = x.to_vec();
    e.process(&mut [&mut y[..]]);
    y
}

#[test]
fn side_bands_leave_a_mono_signal_untouched_bit_for_bit() {
    let x = noise(48_000, 1);
    let mono = vec![x.clone(), x];
    let mut with_side = stereo_bands();
    with_side.push((10, band(Shape::Peak, 3000.0, 9.0, 2.0, Route::Side)));
    with_side.push((11, band(Shape::LowShelf, 200.0, -8.0, 0.7, Route::Side)));
    let plain = run(&mut equaliser(&stereo_bands(), 2), &mono, |_, _| {});
    let sided = run(&mut equaliser(&with_side, 2), &mono, |_, _| {});
    assert!(plain[0] == sided[0] && plain[1] == sided[1], "a side band changed a mono signal");
    // And the side bands did act on a stereo signal.
    let stereo = vec![noise(48_000, 2), noise(48_000, 3)];
    let a = run(&mut equaliser(&stereo_bands(), 2), &stereo, |_, _| {});
    let b = run(&mut equaliser(&with_side, 2), &stereo, |_, _| {});
    assert!(max_abs_diff(&a[0], &b[0]) > 1e-2, "the side bands did nothing to a stereo signal");
}

#[test]
fn left_bands_leave_the_right_channel_untouched_and_filter_the_left_like_the_core() {
    let x = vec![noise(48_000, 4), noise(48_000, 5)];
    let mut with_left = stereo_bands();
    with_left.push((12, band(Shape::Peak, 2500.0, -10.0, 3.0, Route::Left)));
    with_left.push((13, band(Shape::Notch, 60.0, 0.0, 8.0, Route::Left)));
    let mut with_right = stereo_bands();
    with_right.push((12, band(Shape::Peak, 2500.0, -10.0, 3.0, Route::Right)));
    let plain = run(&mut equaliser(&stereo_bands(), 2), &x, |_, _| {});
    let left = run(&mut equaliser(&with_left, 2), &x, |_, _| {});
    let right = run(&mut equaliser(&with_right, 2), &x, |_, _| {});
    assert!(left[1] == plain[1], "a left band changed the right channel");
    assert!(right[0] == plain[0], "a right band changed the left channel");
    // Left: the stereo bands, then the left bands (core engine in float64 state).
    let want = engine(&(stereo_chain() | Biquad::peaking(2500.0, 3.0, -10.0) | Biquad::notch(60.0, 8.0)), &x[0]);
    let err = max_abs_diff(&left[0], &want);
    assert!(err <= 2e-5, "left channel vs the core chain: {err:e}");
    let want = engine(&(stereo_chain() | Biquad::peaking(2500.0, 3.0, -10.0)), &x[1]);
    let err = max_abs_diff(&right[1], &want);
    assert!(err <= 2e-5, "right channel vs the core chain: {err:e}");
}

#[test]
fn mid_and_side_bands_equal_a_float64_mid_side_reference() {
    let x = vec![noise(48_000, 6), noise(48_000, 7)];
    let mut bands = stereo_bands();
    bands.push((14, band(Shape::Peak, 1500.0, 6.0, 1.0, Route::Mid)));
    bands.push((15, band(Shape::HighShelf, 5000.0, 5.0, 0.7, Route::Side)));
    bands.push((16, band(Shape::LowCut, 150.0, 0.0, 0.7, Route::Side)));
    let y = run(&mut equaliser(&bands, 2), &x, |_, _| {});
    // Reference: stereo bands per channel, then M/S in float64 around the mid and side
    // bands (core engines).
    let l = engine(&stereo_chain(), &x[0]);
    let r = engine(&stereo_chain(), &x[1]);
    let m: Vec<f32> = l.iter().zip(&r).map(|(a, b)| ((f64::from(*a) + f64::from(*b)) / 2.0) as f32).collect();
    let s: Vec<f32> = l.iter().zip(&r).map(|(a, b)| ((f64::from(*a) - f64::from(*b)) / 2.0) as f32).collect();
    let m = engine(&Biquad::peaking(1500.0, 1.0, 6.0).into(), &m);
    let s = engine(&(Biquad::high_shelf(5000.0, 0.7, 5.0) | Butterworth::highpass(150.0, 4)), &s);
    let want_l: Vec<f32> = m.iter().zip(&s).map(|(a, b)| a + b).collect();
    let want_r: Vec<f32> = m.iter().zip(&s).map(|(a, b)| a - b).collect();
    let (el, er) = (max_abs_diff(&y[0], &want_l), max_abs_diff(&y[1], &want_r));
    println!("mid/side bands vs the float64 M/S reference: left {el:e}, right {er:e}");
    assert!(el <= 3e-5 && er <= 3e-5, "mid/side routing: left {el:e}, right {er:e}");
}

#[test]
fn mid_side_round_trip_is_exact_to_float_rounding() {
    let mut rng = ferrofx_testkit::Rng::new(0xD1CE);
    for trial in 0..200 {
        let n = 1024;
        // Amplitudes from 1e-30 to 1e30, both signs, and some equal or opposite pairs.
        let mut l: Vec<f32> = (0..n).map(|_| ((rng.next_u64() % 121) as f32 - 60.0).exp2() * if rng.next_u64().is_multiple_of(2) { 1.0 } else { -1.0 }).collect();
        let mut r: Vec<f32> = l.iter().map(|&v| match rng.next_u64() % 4 {
            0 => v,
            1 => -v,
            _ => v * (rng.next_u64() % 1000) as f32 / 333.0,
        }).collect();
        let (l0, r0) = (l.clone(), r.clone());
        encode_ms(&mut l, &mut r);
        decode_ms(&mut l, &mut r);
        for k in 0..n {
            // Two roundings of at most half an ulp of the largest magnitude involved.
            let scale = l0[k].abs().max(r0[k].abs());
            let tol = 2.0 * f32::EPSILON * scale;
            assert!((l[k] - l0[k]).abs() <= tol && (r[k] - r0[k]).abs() <= tol, "trial {trial} sample {k}: ({}, {}) came back as ({}, {})", l0[k], r0[k], l[k], r[k]);
            if l0[k] == r0[k] {
                assert!(l[k] == l0[k] && r[k] == r0[k], "a mono sample must come back bit for bit");
            }
        }
    }
}

/// Largest second difference of `y` (a click or a jump shows as one far above what a low
/// sine does: `A (2 pi f / fs)^2`).
fn max_curvature(y: &[f32]) -> f32 {
    y.windows(3).fold(0.0f32, |m, w| m.max((w[2] - 2.0 * w[1] + w[0]).abs()))
}

#[test]
fn route_changes_cross_fade_and_settle_to_the_new_routing() {
    // A low sine on both channels (a click would stand out), with a loud bell at it that
    // moves from both channels to the left, then to the side, then back.
    let n = 4 * 48_000;
    let sine: Vec<f32> = (0..n).map(|k| (0.4 * (2.0 * std::f64::consts::PI * 200.0 * k as f64 / FS).sin()) as f32).collect();
    let other: Vec<f32> = (0..n).map(|k| (0.3 * (2.0 * std::f64::consts::PI * 210.0 * k as f64 / FS).sin()) as f32).collect();
    let x = vec![sine.clone(), other.clone()];
    let bell = band(Shape::Peak, 200.0, 12.0, 2.0, Route::Stereo);
    let mut eq = equaliser(&[(5, bell)], 2);
    let seconds = |s: f64| (s * FS / BLOCK as f64) as usize;
    let y = run(&mut eq, &x, |k, eq| {
        let route = if k == seconds(1.0) {
            Some(Route::Left)
        } else if k == seconds(2.0) {
            Some(Route::Side)
        } else if k == seconds(3.0) {
            Some(Route::Stereo)
        } else {
            None
        };
        if let Some(route) = route {
            eq.set_band(5, Band { route, ..bell });
        }
    });
    // Each route, once faded and settled (0.5 s after the switch), against references.
    let fade = (SWITCH_FADE_MS * 1e-3 * FS) as usize;
    assert!(fade < 48_000 / 4);
    // Switches happen at block starts: from 0.5 s after one to the next.
    let at = |s: f64| seconds(s) * BLOCK;
    let window = |s: f64| at(s) + 24_000..if s < 3.0 { at(s + 1.0) } else { n };
    let bell_chain: Chain = Biquad::peaking(200.0, 2.0, 12.0).into();
    let full_l = engine(&bell_chain, &sine);
    let full_r = engine(&bell_chain, &other);
    let w = window(0.0);
    let (el, er) = (max_abs_diff(&y[0][w.clone()], &full_l[w.clone()]), max_abs_diff(&y[1][w.clone()], &full_r[w.clone()]));
    println!("stereo route vs the core engine: {el:e} {er:e}");
    assert!(el <= 2e-5 && er <= 2e-5, "stereo route: {el:e} {er:e}");
    let w = window(1.0);
    assert!(max_abs_diff(&y[0][w.clone()], &full_l[w.clone()]) <= 1e-4, "left route: left channel");
    assert!(y[1][w.clone()] == other[w.clone()], "left route: the right channel is not the input bit for bit once settled");
    let w = window(2.0);
    let s_in: Vec<f32> = sine.iter().zip(&other).map(|(a, b)| 0.5 * (a - b)).collect();
    let s_out = engine(&bell_chain, &s_in);
    let want_l: Vec<f32> = (0..n).map(|k| 0.5 * (sine[k] + other[k]) + s_out[k]).collect();
    let err = max_abs_diff(&y[0][w.clone()], &want_l[w.clone()]);
    assert!(err <= 1e-4, "side route: left channel off by {err:e}");
    let w = window(3.0);
    assert!(max_abs_diff(&y[0][w.clone()], &full_l[w.clone()]) <= 1e-4, "back to stereo");
    // No clicks: around each switch the output's curvature stays within a few times that
    // of the settled output before it (a sample jump of 1e-2 would be ten times above it).
    for (c, yc) in y.iter().enumerate().take(2) {
        for s in [1.0, 2.0, 3.0] {
            let r = at(s) - 2 * fade..at(s) + 4 * fade;
            let (around, before) = (max_curvature(&yc[r.clone()]), max_curvature(&yc[r.start - 4800..r.start]));
            println!("channel {c}, switch at {s} s: curvature {around:e} around it, {before:e} before");
            assert!(around <= 3.0 * before.max(1e-3), "channel {c}: curvature {around:e} around the switch at {s} s, {before:e} before");
        }
    }
}

#[test]
fn other_layouts_ignore_routing() {
    for channels in [1usize, 4] {
        let x: Vec<Vec<f32>> = (0..channels).map(|c| noise(24_000, 20 + c as u64)).collect();
        let mut routed = stereo_bands();
        routed.push((9, band(Shape::Peak, 2000.0, 6.0, 1.0, Route::Side)));
        routed.push((10, band(Shape::Peak, 500.0, -6.0, 1.0, Route::Left)));
        let stereo: Vec<(usize, Band)> = routed.iter().map(|(i, b)| (*i, Band { route: Route::Stereo, ..*b })).collect();
        let a = run(&mut equaliser(&routed, channels), &x, |_, _| {});
        let b = run(&mut equaliser(&stereo, channels), &x, |_, _| {});
        assert!(a == b, "{channels} channels: routing must not change a non-stereo layout");
    }
}

#[test]
fn routing_changes_and_processing_do_not_allocate() {
    let x = vec![noise(BLOCK, 30), noise(BLOCK, 31)];
    let mut eq = equaliser(&stereo_bands(), 2);
    let mut rng = ferrofx_testkit::Rng::new(77);
    let before = violation_count();
    for k in 0..400 {
        let mut y = x.clone();
        let i = (rng.next_u64() % BANDS as u64) as usize;
        let b = band(Shape::Peak, 100.0 + (k * 37 % 9000) as f64, if k % 2 == 0 { 6.0 } else { -6.0 }, 1.0, Route::ALL[(rng.next_u64() % 5) as usize]);
        assert_no_alloc(|| {
            eq.set_band(i, b);
            let (l, r) = y.split_at_mut(1);
            eq.process(&mut [&mut l[0][..], &mut r[0][..]]);
        });
        assert!(y.iter().flatten().all(|v| v.is_finite() && v.abs() < 50.0), "block {k}: output not finite or bounded");
    }
    assert_eq!(violation_count(), before, "routing allocated on the audio thread");
}

#[test]
fn random_routes_and_settings_stay_finite_and_bounded() {
    let n = 4 * 48_000;
    let x = vec![noise(n, 40), noise(n, 41)];
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::Notch, Shape::BandPass, Shape::AllPass, Shape::TiltShelf];
    let mut rng = ferrofx_testkit::Rng::new(0xBEEF);
    let mut eq = equaliser(&[], 2);
    let y = run(&mut eq, &x, |_, eq| {
        for _ in 0..2 {
            let i = (rng.next_u64() % BANDS as u64) as usize;
            let b = Band {
                enabled: !rng.next_u64().is_multiple_of(6),
                bypassed: rng.next_u64().is_multiple_of(20),
                shape: shapes[(rng.next_u64() % 9) as usize],
                freq_hz: 20.0 * 1000f64.powf((rng.next_u64() % 1000) as f64 / 1000.0),
                gain_db: (rng.next_u64() % 25) as f64 - 12.0,
                q: 0.3 + (rng.next_u64() % 50) as f64 / 10.0,
                slope: Slope { db_per_oct: 6 * (1 + (rng.next_u64() % 8) as u32), linkwitz_riley: rng.next_u64().is_multiple_of(2) },
                route: Route::ALL[(rng.next_u64() % 5) as usize],
                matched: rng.next_u64().is_multiple_of(2),
                dynamic: false,
            };
            eq.set_band(i, b);
        }
    });
    let peak = y.iter().flatten().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(y.iter().flatten().all(|v| v.is_finite()), "non-finite output");
    // 24 bands of at most +12 dB on noise of 0.5 peak could reach ~40 in theory; random
    // settings stay far below.
    assert!(peak < 40.0, "peak {peak}");
    println!("random routing torture: peak {peak}");
}

