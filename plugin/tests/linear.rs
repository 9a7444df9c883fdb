//! Linear-phase mode, as pure DSP: the FIR's magnitude against the bands' own (minimum
//! phase) response, its symmetry about the latency, and design swaps on the audio side
//! (cross-faded, allocation-free, ending on exactly the new FIR).

use ferrofx::design::{fir_response, sos_response, Sos};
use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, BANDS, MAX_SECTIONS_PER_BAND};
use ferrofx_plugin::audio::linear::LinearAudio;
use ferrofx_plugin::control::linear::{design, link, FirMode, Setup};
use nice_assert_no_alloc::{assert_no_alloc, violation_count};

const FS: f64 = 48_000.0;

fn random_bands(seed: u64) -> [Band; BANDS] {
    let mut rng = ferrofx_testkit::Rng::new(seed);
    let mut next = |m: u64| rng.next_u64() % m;
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::BandPass, Shape::AllPass, Shape::TiltShelf];
    let mut bands = [Band::default(); BANDS];
    for _ in 0..(2 + next(7)) {
        let shape = shapes[next(shapes.len() as u64) as usize];
        bands[next(BANDS as u64) as usize] = Band {
            enabled: true,
            bypassed: false,
            shape,
            freq_hz: match shape {
                Shape::LowCut => 20.0 + next(100) as f64,
                Shape::HighCut => 5000.0 + next(15_000) as f64,
                _ => 20.0 * 1000f64.powf(next(1000) as f64 / 1000.0),
            },
            gain_db: next(25) as f64 - 12.0,
            q: 0.3 + next(60) as f64 / 10.0,
            slope: Slope { db_per_oct: 6 * (1 + next(8) as u32), linkwitz_riley: next(2) == 0 },
            route: Route::Stereo,
            matched: next(2) == 0,
            dynamic: false,
        };
    }
    bands
}

/// The bands' magnitude (what natural phase plays) at `f`.
fn bands_mag(bands: &[Band; BANDS], f: f64) -> f64 {
    bands
        .iter()
        .filter(|b| b.active())
        .map(|b| {
            let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
            let n = b.clamped(FS).design_into(FS, &mut buf);
            sos_response(&buf[..n], f, FS).norm()
        })
        .product()
}

/// The FIR's magnitude at `f`.
fn fir_mag(taps: &[f64], f: f64) -> f64 {
    fir_response(taps, f, FS).norm()
}

#[test]
fn the_longest_fir_follows_the_bands_within_a_tenth_of_a_db_above_40_hz() {
    let n = 65_536;
    let mut worst = 0.0f64;
    for seed in 1..=6 {
        let bands = random_bands(seed);
        let taps = design(&bands, FS, n, true);
        assert_eq!(taps.len(), n);
        let mut k = 0;
        while k < 120 {
            let f = 40.0 * (0.45 * FS / 40.0).powf(k as f64 / 119.0);
            let want = bands_mag(&bands, f);
            k += 1;
            // Deep in a cut's stop band a dB figure means nothing.
            if want < 1e-3 {
                continue;
            }
            let err = (20.0 * (fir_mag(&taps, f) / want).log10()).abs();
            worst = worst.max(err);
            assert!(err <= 0.1, "seed {seed} at {f:.1} Hz: {err:.3} dB off the bands ({:?})", bands.iter().filter(|b| b.active()).collect::<Vec<_>>());
        }
    }
    println!("65,536 taps vs the bands above 40 Hz: worst {worst:.4} dB");
}

#[test]
fn the_fir_is_symmetric_about_half_its_length_to_the_bit() {
    for n in [4096usize, 16_384, 65_536] {
        let taps = design(&random_bands(9), FS, n, true);
        assert_eq!(taps[0], 0.0);
        for k in 1..n / 2 {
            assert!(taps[n / 2 + k].to_bits() == taps[n / 2 - k].to_bits(), "{n} taps: tap {} vs {}", n / 2 + k, n / 2 - k);
        }
        // The peak of a gentle setting is at the centre.
        let peak = taps.iter().enumerate().fold((0, 0.0f64), |m, (i, &v)| if v.abs() > m.1 { (i, v.abs()) } else { m });
        assert_eq!(peak.0, n / 2, "{n} taps");
    }
}

#[test]
fn routed_bands_stay_out_of_the_fir_on_stereo_layouts() {
    let mut bands = [Band::default(); BANDS];
    bands[0] = Band { enabled: true, shape: Shape::Peak, freq_hz: 1000.0, gain_db: 9.0, q: 1.0, route: Route::Left, ..Band::default() };
    let taps = design(&bands, FS, 4096, true);
    // Only the delay: a unit impulse at the centre.
    assert!((taps[2048] - 1.0).abs() < 1e-12 && taps.iter().enumerate().all(|(i, &v)| i == 2048 || v.abs() < 1e-12));
    // On a mono layout every band is in it.
    let taps = design(&bands, FS, 4096, false);
    assert!((fir_mag(&taps, 1000.0) - 10f64.powf(9.0 / 20.0)).abs() < 0.01);
}

fn run_engine(taps: &[f64], x: &[f32]) -> Vec<f32> {
    ferrofx_testkit::engine::fir_output(taps, FS, x)
}

#[test]
fn a_new_design_warms_up_cross_fades_and_ends_on_the_new_fir_without_allocating() {
    let n = 4096;
    let block = 256;
    let setup = Setup { fs: FS, channels: 1, max_block: block };
    let a = design(&random_bands(3), FS, n, true);
    let b = design(&random_bands(4), FS, n, true);
    let (mut sender, end) = link(setup, Some((FirMode::Linear { taps: n }, a.clone())));
    let mut audio = LinearAudio::new(end, setup);
    assert_eq!(audio.latency(), n / 2);
    let x = ferrofx_testkit::noise_amp(48_000, 5, 0.5);
    let mut y = x.clone();
    let switch_at = 8192;
    let before = violation_count();
    for (k, chunk) in y.chunks_mut(block).enumerate() {
        if k * block == switch_at {
            assert!(sender.send(FirMode::Linear { taps: n }, b.clone()), "the ring takes the design");
        }
        assert_no_alloc(|| {
            assert!(audio.poll(None).is_none(), "a design of the running length is not handed out");
            audio.process(&mut [chunk])
        });
    }
    assert_eq!(violation_count(), before, "the audio side allocated");
    assert_eq!(audio.swaps(), 1);
    assert!(!audio.switching());
    let old = run_engine(&a, &x);
    let new = run_engine(&b, &x);
    let diff = |r: std::ops::Range<usize>, want: &[f32]| y[r.clone()].iter().zip(&want[r]).fold(0.0f32, |m, (p, q)| m.max((p - q).abs()));
    // Before the switch and while the new one warms up: the old FIR exactly; after the
    // warm-up and the 20 ms fade: the new FIR exactly.
    assert!(diff(0..switch_at + n, &old) <= 1e-5, "old FIR until the new one is warm");
    let fade = (0.02 * FS) as usize;
    assert!(diff(switch_at + n + fade..x.len(), &new) <= 1e-5, "new FIR after the fade");
    // The fade itself stays between the two.
    for i in switch_at + n..switch_at + n + fade {
        let (lo, hi) = (old[i].min(new[i]), old[i].max(new[i]));
        assert!(y[i] >= lo - 1e-5 && y[i] <= hi + 1e-5, "sample {i} leaves the cross-fade");
    }
    sender.collect();
}

#[test]
fn shorter_firs_trade_low_frequency_accuracy() {
    // 4,096 taps (85 ms at 48 kHz) blur the lowest octaves a little; 16,384 do not.
    for (n, from_hz, limit_db) in [(4096usize, 40.0, 0.5), (4096, 300.0, 0.1), (16_384, 40.0, 0.1)] {
        let mut worst = 0.0f64;
        for seed in 1..=6 {
            let bands = random_bands(seed);
            let taps = design(&bands, FS, n, true);
            for k in 0..120 {
                let f = from_hz * (0.45 * FS / from_hz).powf(k as f64 / 119.0);
                let want = bands_mag(&bands, f);
                if want >= 1e-3 {
                    worst = worst.max((20.0 * (fir_mag(&taps, f) / want).log10()).abs());
                }
            }
        }
        println!("{n} taps above {from_hz} Hz: worst {worst:.3} dB");
        assert!(worst <= limit_db, "{n} taps above {from_hz} Hz: {worst:.3} dB");
    }
}
