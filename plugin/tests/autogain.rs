//! Auto-gain: pink noise through random band settings (every shape, routed bands too)
//! keeps its power, or its BS.1770 K-weighted loudness, within 0.5 dB of the input's.
//! The reference filters here are independent of the plugin: the pink noise is shaped by
//! Paul Kellet's filter and band-limited by core Butterworth designs, and the K-weighting
//! uses the coefficients printed in ITU-R BS.1770-4 for 48 kHz.

use ferrofx::chain::{Butterworth, Chain, Stage};
use ferrofx::Engine;
use ferrofx_plugin::audio::autogain::{AutoGain, MAX_DB};
use ferrofx_plugin::shared::settings::Weighting;
use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, BANDS};
use ferrofx_plugin::audio::routing::RoutedEqualiser;

const FS: f64 = 48_000.0;

fn run_chain(chain: &Chain, x: &mut [f32]) {
    let mut e = Engine::new(&chain.design(FS).unwrap(), 1, x.len());
    e.process(&mut [x]);
}

/// Pink noise (Kellet's refined filter on white noise), band-limited to 20 Hz..20 kHz.
fn pink(n: usize, seed: u64) -> Vec<f32> {
    let white = ferrofx_testkit::noise_amp(n, seed, 1.0);
    let mut b = [0.0f64; 7];
    let mut y: Vec<f32> = white
        .iter()
        .map(|&w| {
            let w = f64::from(w);
            b[0] = 0.99886 * b[0] + w * 0.0555179;
            b[1] = 0.99332 * b[1] + w * 0.0750759;
            b[2] = 0.96900 * b[2] + w * 0.1538520;
            b[3] = 0.86650 * b[3] + w * 0.3104856;
            b[4] = 0.55000 * b[4] + w * 0.5329522;
            b[5] = -0.7616 * b[5] - w * 0.0168980;
            let out = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w * 0.5362;
            b[6] = w * 0.115926;
            (out * 0.05) as f32
        })
        .collect();
    run_chain(&(Butterworth::highpass(20.0, 8) | Butterworth::lowpass(20_000.0, 8)), &mut y);
    y
}

/// BS.1770-4's K-weighting at 48 kHz (the standard's printed coefficients).
fn k_weighted(x: &[f32]) -> Vec<f32> {
    let chain = Stage::sos(vec![
        [1.53512485958697, -2.69169618940638, 1.19839281085285, 1.0, -1.69065929318241, 0.73248077421585],
        [1.0, -2.0, 1.0, 1.0, -1.99004745483398, 0.99007225036621],
    ]);
    let mut y = x.to_vec();
    run_chain(&chain.into(), &mut y);
    y
}

fn power(x: &[f32]) -> f64 {
    x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / x.len() as f64
}

struct Rng(ferrofx_testkit::Rng);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.0.next_u64() % 1_000_000) as f64 / 1e6
    }
}

/// A random band: any shape, gains up to +-12 dB, cuts kept at the edges of the audio
/// range (a cut in the middle removes half the spectrum: more than the clamp allows).
fn random_band(rng: &mut Rng, routes: &[Route]) -> Band {
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::Notch, Shape::AllPass, Shape::TiltShelf];
    let shape = shapes[rng.below(shapes.len() as u64) as usize];
    let freq_hz = match shape {
        Shape::LowCut => rng.uniform(20.0, 150.0),
        Shape::HighCut => rng.uniform(6000.0, 20_000.0),
        _ => 20.0 * 1000f64.powf(rng.uniform(0.0, 1.0)),
    };
    Band {
        enabled: true,
        bypassed: rng.below(10) == 0,
        shape,
        freq_hz,
        gain_db: rng.uniform(-12.0, 12.0),
        q: 0.3 * 60f64.powf(rng.uniform(0.0, 1.0)),
        slope: Slope { db_per_oct: 6 * (1 + rng.below(8) as u32), linkwitz_riley: rng.below(2) == 0 },
        route: routes[rng.below(routes.len() as u64) as usize],
        matched: rng.below(2) == 0,
        dynamic: false,
    }
}

#[test]
fn pink_noise_keeps_its_loudness_through_random_band_sets() {
    let n = 96 * 4096;
    let x = [pink(n, 1), pink(n, 2)];
    let (px, pxk) = (power(&x[0]) + power(&x[1]), power(&k_weighted(&x[0])) + power(&k_weighted(&x[1])));
    let mut rng = Rng(ferrofx_testkit::Rng::new(0xA070));
    let mut worst = [0.0f64; 2];
    let mut checked = 0;
    for set in 0..24 {
        // Routes: both channels only; or with left/right bands; or with mid/side bands.
        let routes: &[Route] = match set % 3 {
            0 => &[Route::Stereo],
            1 => &[Route::Stereo, Route::Left, Route::Right],
            _ => &[Route::Stereo, Route::Mid, Route::Side],
        };
        let count = 1 + rng.below(6) as usize;
        let mut bands = [Band::default(); BANDS];
        for _ in 0..count {
            bands[rng.below(BANDS as u64) as usize] = random_band(&mut rng, routes);
        }
        let mut eq = RoutedEqualiser::new(FS, 2, 4096);
        for (i, b) in bands.iter().enumerate() {
            eq.set_band(i, *b);
        }
        eq.snap();
        let mut y = x.clone();
        for start in (0..n).step_by(4096) {
            let (l, r) = y.split_at_mut(1);
            eq.process(&mut [&mut l[0][start..start + 4096], &mut r[0][start..start + 4096]]);
        }
        for (k, weighting) in [Weighting::Pink, Weighting::KWeighted].into_iter().enumerate() {
            let mut ag = AutoGain::new(FS, true);
            ag.update_all(&bands, weighting);
            let db = ag.target_db();
            if db.abs() >= MAX_DB {
                continue; // clamped: loudness is not kept by design
            }
            let g = 10f64.powf(db / 20.0);
            let (py, before) = match weighting {
                Weighting::Pink => (power(&y[0]) + power(&y[1]), px),
                Weighting::KWeighted => (power(&k_weighted(&y[0])) + power(&k_weighted(&y[1])), pxk),
            };
            let off_db = 10.0 * (g * g * py / before).log10();
            println!("set {set} ({count} bands, {weighting:?}): auto-gain {db:+.2} dB, loudness off by {off_db:+.3} dB");
            assert!(off_db.abs() <= 0.5, "set {set} {weighting:?}: loudness {off_db:+.3} dB from the input's with auto-gain {db:+.2} dB; bands {bands:?}");
            worst[k] = worst[k].max(off_db.abs());
            checked += 1;
        }
    }
    println!("worst: pink {:.3} dB, K-weighted {:.3} dB over {checked} checks", worst[0], worst[1]);
    assert!(checked >= 40, "too many sets hit the clamp: {checked} checked");
}

#[test]
fn no_bands_no_gain_and_updates_are_bounded_per_block() {
    let mut ag = AutoGain::new(FS, true);
    let flat = [Band::default(); BANDS];
    ag.update_all(&flat, Weighting::Pink);
    assert!(ag.target_db().abs() < 1e-9, "flat bands: {}", ag.target_db());
    // A +6 dB high shelf over the whole range: about -6 dB of compensation, reached after
    // enough per-block updates even when all 24 bands changed at once.
    let shelf = Band { enabled: true, shape: Shape::HighShelf, freq_hz: 20.0, gain_db: 6.0, q: 0.7, ..Band::default() };
    let mut bands = [Band { gain_db: 0.25, ..shelf }; BANDS];
    bands[0] = shelf;
    for _ in 0..BANDS {
        ag.update(&bands, Weighting::Pink);
    }
    let mut all = AutoGain::new(FS, true);
    all.update_all(&bands, Weighting::Pink);
    assert!((ag.target_db() - all.target_db()).abs() < 1e-9, "per-block updates did not catch up");
    // 6 + 23 x 0.25 = 11.75 dB above the shelves' transition just above 20 Hz.
    assert!((all.target_db() + 11.75).abs() < 0.5, "24 shelves (+6 and 23 x +0.25 dB): {:+.2} dB", all.target_db());
    // Smoothing: glides toward the target, 63 % after the time constant.
    ag.snap(false);
    let tau = (ferrofx_plugin::audio::autogain::SMOOTHING_MS * 1e-3 * FS) as usize;
    let mut v = 0.0;
    for _ in 0..tau {
        v = ag.next_db(true);
    }
    let share = v / ag.target_db();
    assert!((share - 0.632).abs() < 0.01, "after one time constant: {share:.3} of the way");
}
