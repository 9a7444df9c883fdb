//! The plugin's band equaliser, as pure DSP (the host tests drive it through the plugin).
//! The global allocator that counts allocations is nice-plug's (`assert_process_allocs`).

use nice_assert_no_alloc::{assert_no_alloc, violation_count};
use ferrofx::chain::{Biquad, Butterworth, Chain, LinkwitzRiley};
use ferrofx::Engine;
use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, TrigCache, BANDS};
use ferrofx_plugin::audio::equaliser::{Equaliser, REDESIGN_INTERVAL, SWITCH_FADE_MS};

fn noise(n: usize, seed: u64) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, seed, 1.0)
}

fn band(shape: Shape, freq_hz: f64, gain_db: f64, q: f64, db: u32, lr: bool) -> Band {
    Band { enabled: true, bypassed: false, shape, freq_hz, gain_db, q, slope: Slope { db_per_oct: db, linkwitz_riley: lr }, route: Route::Stereo, matched: false, dynamic: false }
}

/// `x` (planar) through `eq` in blocks of `block` frames.
fn run_blocks(eq: &mut Equaliser, x: &[Vec<f32>], block: usize) -> Vec<Vec<f32>> {
    let mut y = x.to_vec();
    for start in (0..x[0].len()).step_by(block) {
        let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[start..start + block]).collect();
        eq.process(&mut s);
    }
    y
}

/// `x` (planar) through the core engine of `chain`, in one block.
fn engine_output(chain: &Chain, fs: f64, x: &[Vec<f32>]) -> Vec<Vec<f32>> {
    ferrofx_testkit::engine::engine_output(chain, fs, x, x[0].len())
}

#[test]
fn settled_bands_equal_the_core_chain() {
    let fs = 48_000.0;
    let bands = [
        band(Shape::LowCut, 40.0, 0.0, 0.7, 24, false),
        band(Shape::Peak, 1000.0, -6.0, 1.4, 12, false),
        band(Shape::HighShelf, 8000.0, 3.0, 0.7, 12, false),
        band(Shape::HighCut, 15_000.0, 0.0, 0.7, 48, true),
        band(Shape::TiltShelf, 700.0, 4.0, 0.6, 12, false),
        band(Shape::Notch, 60.0, 0.0, 8.0, 12, false),
    ];
    let chain: Chain = Butterworth::highpass(40.0, 4)
        | Biquad::peaking(1000.0, 1.4, -6.0)
        | Biquad::high_shelf(8000.0, 0.7, 3.0)
        | LinkwitzRiley::lowpass(15_000.0, 8)
        | Biquad::low_shelf(700.0, 0.6, -2.0)
        | Biquad::high_shelf(700.0, 0.6, 2.0)
        | Biquad::notch(60.0, 8.0);
    let mut eq = Equaliser::new(fs, 2, 512);
    for (i, b) in bands.iter().enumerate() {
        eq.set_band(i, *b);
    }
    let frames = 96_256;
    let x: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 1)).collect();
    let y = run_blocks(&mut eq, &x, 512);
    let want = engine_output(&chain, fs, &x);
    // Settled: no more re-designs while nothing moves, and back in the fused cascade.
    let settled = eq.redesigns();
    assert!(!eq.moving(), "settled bands still run in the modulation-safe form");
    let mut more: Vec<Vec<f32>> = (0..2).map(|c| noise(4096, c + 7)).collect();
    let mut s2: Vec<&mut [f32]> = more.iter_mut().map(|c| &mut c[..512]).collect();
    eq.process(&mut s2);
    assert_eq!(eq.redesigns(), settled, "settled parameters were re-designed again");
    eq.set_band(1, Band { gain_db: -5.0, ..bands[1] });
    let mut s3: Vec<&mut [f32]> = more.iter_mut().map(|c| &mut c[512..1024]).collect();
    eq.process(&mut s3);
    assert!(eq.redesigns() > settled, "a parameter move must re-design");
    // Once the move has settled (smoothing to within 1e-9: about 0.3 s), the fused
    // cascade runs again.
    let mut later: Vec<Vec<f32>> = (0..2).map(|c| noise(48_128, c + 9)).collect();
    for start in (0..48_128).step_by(512) {
        let mut s4: Vec<&mut [f32]> = later.iter_mut().map(|c| &mut c[start..start + 512]).collect();
        eq.process(&mut s4);
    }
    assert!(!eq.moving(), "a settled move left the bands in the modulation-safe form");
    // After the switch glides and the smoothing have settled (and the start-up
    // transients decayed), the last second equals the static chain.
    for c in 0..2 {
        let tail = frames / 2;
        let peak = want[c][tail..].iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let err = y[c][tail..].iter().zip(&want[c][tail..]).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(err / peak < 1e-4, "channel {c}: {:e}", err / peak);
    }
}

#[test]
fn processing_and_parameter_changes_do_not_allocate() {
    let fs = 44_100.0;
    let mut eq = Equaliser::new(fs, 2, 64);
    let (mut l, mut r) = (noise(64, 1), noise(64, 2));
    let shapes = [Shape::Peak, Shape::LowCut, Shape::HighShelf, Shape::TiltShelf, Shape::HighCut, Shape::Notch];
    let before = violation_count();
    for step in 0..2000usize {
        let i = step % BANDS;
        let b = band(shapes[step % shapes.len()], 30.0 * 1.003f64.powi(step as i32), (step % 49) as f64 - 24.0, 0.3 + (step % 7) as f64, 6 * (1 + (step % 16) as u32), step % 3 == 0);
        let b = Band { enabled: step % 5 != 0, ..b };
        assert_no_alloc(|| {
            eq.set_band(i, b);
            eq.process(&mut [&mut l[..], &mut r[..]]);
        });
        assert!(l.iter().chain(&r).all(|v| v.is_finite()), "step {step}");
        l.copy_from_slice(&noise(64, step as u64 + 3));
        r.copy_from_slice(&noise(64, step as u64 + 4));
    }
    assert_eq!(violation_count(), before, "the equaliser allocated on the audio path");
}

#[test]
fn automation_torture_stays_finite_bounded_and_step_limited() {
    // Every parameter of four bands swept and randomly jumped each block for 10 s of
    // noise, at 1- and 64-sample blocks.
    let fs = 48_000.0;
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::Notch, Shape::BandPass, Shape::AllPass, Shape::TiltShelf];
    for block in [1usize, 64] {
        let mut eq = Equaliser::new(fs, 1, 64);
        let frames = 480_000;
        let x = noise(frames, 9);
        let mut y = x.clone();
        let mut rng = ferrofx_testkit::Rng::new(0x1234_5678);
        let mut next = |m: u64| rng.next_u64() % m;
        for (k, chunk) in y.chunks_mut(block).enumerate() {
            if k % (64 / block).max(1) == 0 {
                let i = next(4) as usize;
                let jump = next(8) == 0;
                let t = k as f64 / (frames / block) as f64;
                let b = Band {
                    enabled: next(50) != 0,
                    bypassed: next(30) == 0,
                    shape: if jump { shapes[next(9) as usize] } else { shapes[i * 2] },
                    freq_hz: if jump { 20.0 * 1000f64.powf(next(1000) as f64 / 1000.0) } else { 20.0 * 1000f64.powf(t) },
                    gain_db: if jump { next(49) as f64 - 24.0 } else { 12.0 * (t * 40.0).sin() },
                    q: if jump { 0.1 + next(180) as f64 / 10.0 } else { 0.7 + 5.0 * t },
                    slope: Slope { db_per_oct: 6 * (1 + next(16) as u32), linkwitz_riley: next(2) == 0 },
                    route: Route::Stereo,
                    matched: next(2) == 0,
                    dynamic: false,
                };
                eq.set_band(i, b);
            }
            eq.process(&mut [chunk]);
        }
        let peak = y.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let step = y.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0.0f32, f32::max);
        let input_step = x.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0.0f32, f32::max);
        // Four bands can boost at most 4 x 24 dB: bound the output and its steps by that
        // gain (an unstable or exploding filter blows far past it).
        let max_gain = 10f32.powf(4.0 * 24.0 / 20.0);
        assert!(y.iter().all(|v| v.is_finite()), "block {block}: non-finite output");
        assert!(peak < max_gain, "block {block}: peak {peak}");
        assert!(step < max_gain * input_step, "block {block}: step {step} vs input step {input_step}");
    }
}

/// The chain a band should act as, built from the core's chain API (an independent
/// design path); `None` for a disabled band (it passes its input).
fn reference_chain(b: &Band) -> Option<Chain> {
    // A bypassed band is in use but does not act.
    if !b.enabled || b.bypassed {
        return None;
    }
    let (f, q, g) = (b.freq_hz, b.q, b.gain_db);
    let order = (b.slope.db_per_oct / 6) as usize;
    Some(match b.shape {
        Shape::Peak => Biquad::peaking(f, q, g).into(),
        Shape::LowShelf => Biquad::low_shelf(f, q, g).into(),
        Shape::HighShelf => Biquad::high_shelf(f, q, g).into(),
        Shape::Notch => Biquad::notch(f, q).into(),
        Shape::BandPass => Biquad::bandpass(f, q).into(),
        Shape::AllPass => Biquad::allpass(f, q).into(),
        Shape::TiltShelf => Biquad::low_shelf(f, q, -g / 2.0) | Biquad::high_shelf(f, q, g / 2.0),
        Shape::LowCut if b.slope.linkwitz_riley => LinkwitzRiley::highpass(f, order).into(),
        Shape::HighCut if b.slope.linkwitz_riley => LinkwitzRiley::lowpass(f, order).into(),
        Shape::LowCut => Butterworth::highpass(f, order).into(),
        Shape::HighCut => Butterworth::lowpass(f, order).into(),
    })
}

/// `x` through band `b` from rest (or unchanged when the band is disabled or bypassed).
fn through(b: &Band, x: &[f32], fs: f64) -> Vec<f32> {
    let mut y = x.to_vec();
    if let Some(chain) = reference_chain(b) {
        Engine::new(&chain.design(fs).unwrap(), 1, y.len()).process(&mut [&mut y[..]]);
    }
    y
}

/// A discrete change (enable, bypass, shape, slope, Butterworth / Linkwitz-Riley) cross-fades the
/// band's output from its old design to its new one, the new one starting from rest, with
/// a smoothstep weight over `SWITCH_FADE_MS` in whole re-design intervals, in place in the
/// cascade (fed the output of the bands before it); a second change of the same band
/// during the fade waits for the fade's end. Checked against the same signals built from
/// the core's chain API, over seeded random pairs of layouts and sample rates.
#[test]
fn discrete_switches_cross_fade_the_band_in_place() {
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::Notch, Shape::BandPass, Shape::AllPass, Shape::TiltShelf];
    let mut rng = ferrofx_testkit::Rng::new(0x5eed_f4de);
    for case in 0..24 {
        let fs = *rng.pick(&[44_100.0, 48_000.0, 96_000.0]);
        let interval = REDESIGN_INTERVAL;
        let fade = interval * ((SWITCH_FADE_MS * 1e-3 * fs / interval as f64).round() as usize).max(1);
        let random_band = |rng: &mut ferrofx_testkit::Rng| {
            let lr = rng.chance(0.5);
            let db = if lr { 12 * (1 + rng.below(8) as u32) } else { 6 * (1 + rng.below(16) as u32) };
            band(*rng.pick(&shapes), 40.0 * 400f64.powf(rng.unit()), -18.0 + 36.0 * rng.unit(), 0.3 + 4.0 * rng.unit(), db, lr)
        };
        let before = band(Shape::LowCut, 30.0, 0.0, 0.7, 12, false);
        let after = band(Shape::Notch, 3000.0, 0.0, 2.0, 12, false);
        let first = random_band(&mut rng);
        let second = random_band(&mut rng);
        // Third: disabled, bypassed (in use, not acting), or a layout unlike the second
        // (a switch must happen).
        let third = match rng.below(10) {
            0..=1 => Band { enabled: false, ..second },
            2..=3 => Band { bypassed: true, ..second },
            _ => Band { shape: if second.shape == Shape::Peak { Shape::AllPass } else { Shape::Peak }, ..second },
        };
        // Same continuous values throughout, so only the switches act.
        let second = Band { freq_hz: first.freq_hz, gain_db: first.gain_db, q: first.q, ..second };
        let third = Band { freq_hz: first.freq_hz, gain_db: first.gain_db, q: first.q, ..third };
        let cut = matches!(first.shape, Shape::LowCut | Shape::HighCut);
        if second.shape == first.shape && (!cut || second.slope == first.slope) {
            continue; // not a switch (the slope only matters to the cuts)
        }

        let mut eq = Equaliser::new(fs, 1, interval);
        eq.set_band(0, before);
        eq.set_band(5, first);
        eq.set_band(23, after);
        eq.snap();
        let frames = 40 * interval + 4 * fade;
        let x = noise(frames, 100 + case);
        let mut y = x.clone();
        let start1 = 10 * interval;
        // The second change arrives mid-fade and waits for the first fade's end.
        let asked2 = start1 + 3 * interval;
        let start2 = start1 + fade;
        for (k, chunk) in y.chunks_mut(interval).enumerate() {
            if k * interval == start1 {
                eq.set_band(5, second);
            }
            if k * interval == asked2 {
                eq.set_band(5, third);
            }
            eq.process(&mut [chunk]);
        }

        let a = through(&before, &x, fs);
        let old = through(&first, &a, fs);
        let mid: Vec<f32> = [vec![0.0; start1], through(&second, &a[start1..], fs)].concat();
        let new: Vec<f32> = [vec![0.0; start2], through(&third, &a[start2..], fs)].concat();
        let weight = |n: usize, start: usize| -> f64 {
            if n < start {
                0.0
            } else {
                let t = (((n - start + 1) as f64) / fade as f64).min(1.0);
                t * t * (3.0 - 2.0 * t)
            }
        };
        let mixed: Vec<f32> = (0..frames)
            .map(|n| {
                let (o, m, w) = (old[n] as f64, mid[n] as f64, new[n] as f64);
                let first_fade = o + weight(n, start1) * (m - o);
                (first_fade + weight(n, start2) * (w - first_fade)) as f32
            })
            .collect();
        let want = through(&after, &mixed, fs);
        let peak = want.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-3);
        let (err, at) = y.iter().zip(&want).enumerate().fold((0.0f32, 0), |m, (n, (a, b))| if (a - b).abs() > m.0 { ((a - b).abs(), n) } else { m });
        assert!(
            err / peak < 1e-4,
            "case {case} at {fs} Hz: {first:?} -> {second:?} -> {third:?}: error {:e} of the peak at sample {at} (switches at {start1} and {start2})",
            err / peak
        );
    }
}

/// Analog-matched bands (the plugin's default), once settled, run exactly the core chain's
/// matched biquads and cuts (format version 2); the all-pass stays the cookbook's.
#[test]
fn settled_matched_bands_equal_the_core_matched_chain() {
    let fs = 44_100.0;
    let m = |b: Band| Band { matched: true, ..b };
    let bands = [
        m(band(Shape::LowCut, 40.0, 0.0, 0.7, 24, false)),
        m(band(Shape::Peak, 12_000.0, -6.0, 1.4, 12, false)),
        m(band(Shape::HighShelf, 9000.0, 3.0, 0.7, 12, false)),
        m(band(Shape::TiltShelf, 700.0, 4.0, 0.6, 12, false)),
        m(band(Shape::Notch, 16_000.0, 0.0, 8.0, 12, false)),
        m(band(Shape::BandPass, 300.0, 0.0, 0.3, 12, false)),
        m(band(Shape::AllPass, 2000.0, 0.0, 0.7, 12, false)),
        m(band(Shape::HighCut, 18_000.0, 0.0, 0.7, 48, true)),
    ];
    let chain: Chain = Butterworth::highpass(40.0, 4).matched()
        | Biquad::peaking(12_000.0, 1.4, -6.0).matched()
        | Biquad::high_shelf(9000.0, 0.7, 3.0).matched()
        | Biquad::low_shelf(700.0, 0.6, -2.0).matched()
        | Biquad::high_shelf(700.0, 0.6, 2.0).matched()
        | Biquad::notch(16_000.0, 8.0).matched()
        | Biquad::bandpass(300.0, 0.3).matched()
        | Biquad::allpass(2000.0, 0.7)
        | LinkwitzRiley::lowpass(18_000.0, 8).matched();
    let mut eq = Equaliser::new(fs, 2, 512);
    for (i, b) in bands.iter().enumerate() {
        eq.set_band(i, *b);
    }
    eq.snap();
    // The chain folds sections that came out a pure gain (a fitted piece's cancelled
    // pole and zero pairs) into a neighbour; the equaliser keeps its fixed layout.
    assert!(eq.sections().len() >= chain.design(fs).unwrap().sections(), "section counts");
    let frames = 512 * 100;
    let x: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 11)).collect();
    let y = run_blocks(&mut eq, &x, 512);
    let want = engine_output(&chain, fs, &x);
    for c in 0..2 {
        let err = y[c].iter().zip(&want[c]).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(err <= 1e-5, "channel {c}: {err:e} from the core matched chain");
    }
}

/// While matched bands move their designs are spread out (one fit per re-design interval
/// on average); all 24 moving at once still reach their targets exactly once the moves
/// end, steep matched cuts (eight fits each) among them.
#[test]
fn moving_matched_bands_settle_exactly_to_their_targets() {
    let fs = 48_000.0;
    let mut eq = Equaliser::new(fs, 1, 64);
    let start: Vec<Band> = (0..BANDS)
        .map(|i| {
            let shape = match i % 8 {
                0 => Shape::LowCut,
                4 => Shape::HighCut,
                _ => Shape::Peak,
            };
            Band { matched: true, ..band(shape, 100.0 * (1.0 + i as f64), 3.0, 1.0, 96, i % 16 == 4) }
        })
        .collect();
    assert_eq!(start[0].matched_fits(), 8);
    for (i, b) in start.iter().enumerate() {
        eq.set_band(i, *b);
    }
    eq.snap();
    // All 24 bands move at once.
    let end: Vec<Band> = start.iter().map(|b| Band { freq_hz: b.freq_hz * 1.5, gain_db: -3.0, ..*b }).collect();
    for (i, b) in end.iter().enumerate() {
        eq.set_band(i, *b);
    }
    let mut x = noise(48_000, 3);
    let before = std::time::Instant::now();
    for chunk in x.chunks_mut(64) {
        eq.process(&mut [chunk]);
    }
    println!("one second of 24 moving matched bands: {:?} (debug build)", before.elapsed());
    assert!(!eq.moving(), "the bands did not settle within a second");
    let mut fresh = Equaliser::new(fs, 1, 64);
    for (i, b) in end.iter().enumerate() {
        fresh.set_band(i, *b);
    }
    fresh.snap();
    assert_eq!(eq.sections(), fresh.sections(), "settled sections differ from a fresh design of the targets");
}

/// The equaliser's output does not depend on the host's block size: parameter changes
/// at the same samples give the same bits whether the host calls with 32, 96 or 1,024
/// frames (settled stretches then run as one cascade call, moving ones per re-design
/// interval), through glides, switches and matched bands, and the re-design count
/// agrees (the matched bands' design budget counts the skipped intervals too).
#[test]
fn host_block_size_does_not_change_a_bit() {
    let fs = 48_000.0;
    let m = |b: Band| Band { matched: true, ..b };
    let first = [
        band(Shape::Peak, 200.0, 4.0, 1.0, 12, false),
        m(band(Shape::HighShelf, 6000.0, -3.0, 0.7, 12, false)),
        band(Shape::LowCut, 30.0, 0.0, 0.7, 24, false),
        m(band(Shape::Peak, 2500.0, 5.0, 2.0, 12, false)),
    ];
    let second = [
        band(Shape::Peak, 260.0, -2.0, 1.5, 12, false),
        m(band(Shape::HighShelf, 5000.0, 2.0, 0.7, 12, false)),
        band(Shape::LowCut, 30.0, 0.0, 0.7, 48, false),
        m(band(Shape::Notch, 2500.0, 0.0, 4.0, 12, false)),
    ];
    // Changes at samples that every block size below divides.
    let change_every = 3 * 1024 * 6;
    let frames = 4 * change_every;
    let x: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c + 21)).collect();
    let run = |block: usize| -> (Vec<Vec<f32>>, u64) {
        let mut eq = Equaliser::new(fs, 2, 1024);
        let mut y = x.to_vec();
        for start in (0..frames).step_by(block) {
            if start % change_every == 0 {
                let set = if (start / change_every) % 2 == 0 { &first } else { &second };
                for (i, b) in set.iter().enumerate() {
                    eq.set_band(i, *b);
                }
            }
            let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[start..start + block]).collect();
            eq.process(&mut s);
        }
        (y, eq.redesigns())
    };
    let (want, want_redesigns) = run(32);
    assert!(want_redesigns > 8, "the bands moved ({want_redesigns} re-designs)");
    for block in [96, 1024] {
        let (got, redesigns) = run(block);
        assert_eq!(redesigns, want_redesigns, "re-designs with blocks of {block}");
        for c in 0..2 {
            let same = got[c].iter().zip(&want[c]).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "blocks of {block}: channel {c} differs from blocks of 32");
        }
    }
}

/// Settings given to bands while the equaliser is idle (every band off) are the ones the
/// bands start from when they are switched on, not older ones: each change is copied into
/// the smoothing while idle, the latest too.
#[test]
fn an_idle_equalisers_bands_start_from_their_latest_settings() {
    let fs = 48_000.0;
    let mut eq = Equaliser::new(fs, 2, 64);
    let off = |b: Band| Band { enabled: false, ..b };
    let first = band(Shape::Peak, 2_000.0, 12.0, 2.0, 12, false);
    let second = band(Shape::Peak, 500.0, -6.0, 0.7, 12, false);
    let third = band(Shape::LowShelf, 150.0, 4.0, 1.3, 12, false);
    for (i, b) in [(3, first), (5, first), (3, second), (7, first), (7, third)] {
        eq.set_band(i, off(b));
        assert!(eq.settle_if_idle(), "every band is off");
        assert!(eq.settle_if_idle(), "still idle, nothing to copy");
    }
    for (i, b) in [(3, second), (5, first), (7, third)] {
        eq.set_band(i, b);
    }
    assert!(!eq.settle_if_idle(), "bands are on");
    let mut y = [noise(64, 1), noise(64, 2)];
    let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
    eq.process(&mut s);
    let running = eq.running_bands();
    for (i, want) in [(3, second), (5, first), (7, third)] {
        let got = running[i];
        for (what, g, w) in [("frequency", got.freq_hz, want.freq_hz), ("gain", got.gain_db, want.gain_db), ("Q", got.q, want.q)] {
            assert!((g - w).abs() <= 1e-9 * w.abs(), "band {i}: {what} {g} where its latest setting is {w}");
        }
    }
}

/// Designing through a kept sine and cosine (`design_into_with`, what the equaliser does
/// every re-design interval) gives the fresh design's sections bit for bit: seeded random
/// cookbook bands of every shape, gains moving at a held frequency (the cache's use),
/// frequencies, Q and the sample rate changing now and then (it must notice), disabled
/// and bypassed bands between.
#[test]
fn designs_through_the_kept_sine_and_cosine_equal_fresh_ones() {
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::Notch, Shape::BandPass, Shape::AllPass, Shape::TiltShelf, Shape::LowCut, Shape::HighCut];
    let mut rng = ferrofx_testkit::Rng::new(0x7219);
    let mut trig = TrigCache::default();
    let mut b = band(Shape::Peak, 1000.0, 0.0, 1.0, 12, false);
    let mut fs = 48_000.0;
    let (mut cached, mut fresh) = ([ferrofx::design::Sos::IDENTITY; 16], [ferrofx::design::Sos::IDENTITY; 16]);
    let mut compared = 0;
    for round in 0..20_000 {
        match rng.below(40) {
            0 => b.freq_hz = 20.0 * 1000f64.powf(rng.unit()),
            1 => b.q = 0.1 + 10.0 * rng.unit(),
            2 => fs = [44_100.0, 48_000.0, 96_000.0][rng.below(3)],
            3 => b.shape = shapes[rng.below(shapes.len())],
            4 => (b.enabled, b.bypassed) = (rng.below(4) != 0, rng.below(4) == 0),
            _ => b.gain_db = 48.0 * rng.unit() - 24.0,
        }
        let n = b.design_into_with(fs, &mut cached, &mut trig);
        assert_eq!(n, b.design_into(fs, &mut fresh), "round {round}");
        for (k, (p, q)) in cached[..n].iter().zip(&fresh[..n]).enumerate() {
            let bits = |s: &ferrofx::design::Sos| [s.b, s.a].concat().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(p), bits(q), "round {round}, section {k}: {b:?} at {fs} Hz");
        }
        compared += n;
    }
    assert!(compared > 10_000);
}
