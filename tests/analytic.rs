//! Designs without shared SciPy vectors, checked against analytic properties:
//! Linkwitz-Riley (-6 dB at the crossover, LP + HP sums to an all-pass) and Bessel
//! (DC group delay in closed form, maximally flat group delay), plus the other families'
//! defining edges in the digital domain.

use ferrofx_testkit::engine::run_engine;
use ferrofx::chain::{Bessel, Butterworth, Chain, Chebyshev1, Chebyshev2, Elliptic, LinkwitzRiley};
use ferrofx::engine::EngineOptions;
use ferrofx::DesignedChain;
use std::f64::consts::PI;

fn design(stage: ferrofx::Stage, fs: f64) -> DesignedChain {
    Chain::from(stage).design(fs).unwrap()
}

fn log_freqs(fs: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = (5.0f64, 0.499 * fs);
    (0..n).map(|i| lo * (hi / lo).powf(i as f64 / (n - 1) as f64)).collect()
}

/// Group delay in samples at `f_hz`, by a central difference of the phase.
fn group_delay(d: &DesignedChain, f_hz: f64) -> f64 {
    let df = 1e-3;
    let h1 = d.response(f_hz - df);
    let h2 = d.response(f_hz + df);
    let dphi = (h2 / h1).arg();
    let domega = 2.0 * PI * (2.0 * df) / d.fs;
    -dphi / domega
}

#[test]
fn linkwitz_riley_is_minus_6db_at_crossover_and_sums_to_allpass() {
    for &(fs, fc) in &[(48_000.0, 2500.0), (44_100.0, 80.0), (96_000.0, 20.0)] {
        for order in (2..=24).step_by(2) {
            let lp = design(LinkwitzRiley::lowpass(fc, order), fs);
            let hp = design(LinkwitzRiley::highpass(fc, order), fs);
            for (name, d) in [("lowpass", &lp), ("highpass", &hp)] {
                let g = d.response(fc).norm();
                assert!((g - 0.5).abs() < 1e-9, "LR{order} {name} at fc={fc}: |H| = {g}, want 0.5 (-6.02 dB)");
            }
            // LR2, LR6, ... need the highpass inverted; LR4, LR8, ... sum in phase.
            let sign = if (order / 2) % 2 == 0 { 1.0 } else { -1.0 };
            for f in log_freqs(fs, 300) {
                let sum = lp.response(f) + hp.response(f) * sign;
                assert!((sum.norm() - 1.0).abs() < 1e-9, "LR{order} fc={fc}: |LP+HP| at {f:.1} Hz = {}", sum.norm());
            }
            // Same in the time domain through the engine: the summed impulse response is an
            // all-pass's, whose energy is 1.
            if fc >= 80.0 {
                let mut impulse = vec![0.0f32; 1 << 15];
                impulse[0] = 1.0;
                let y_lp = run_engine(&lp, &[impulse.clone()], 64, EngineOptions::default());
                let y_hp = run_engine(&hp, &[impulse], 64, EngineOptions::default());
                let energy: f64 = y_lp[0]
                    .iter()
                    .zip(&y_hp[0])
                    .map(|(a, b)| (*a as f64 + sign * *b as f64).powi(2))
                    .sum();
                assert!((energy - 1.0).abs() < 1e-4, "LR{order} fc={fc}: all-pass energy {energy}");
            }
        }
    }
}

#[test]
fn bessel_dc_group_delay_matches_the_closed_form() {
    // Phase-normalised Bessel: analog delay at DC is a0^(1/N) / wc with a0 = (2N)!/(2^N N!);
    // through the bilinear transform with prewarping that is a0^(1/N) / (2 tan(pi fc / fs))
    // samples.
    for &(fs, fc) in &[(48_000.0, 1000.0), (44_100.0, 5000.0), (96_000.0, 100.0)] {
        for order in 1..=24usize {
            let d = design(Bessel::lowpass(fc, order), fs);
            let log10_a0: f64 =
                ((order + 1)..=(2 * order)).map(|k| (k as f64).log10()).sum::<f64>() - order as f64 * 2f64.log10();
            let expected = 10f64.powf(log10_a0 / order as f64) / (2.0 * (PI * fc / fs).tan());
            let got = group_delay(&d, 1e-2);
            assert!(
                (got / expected - 1.0).abs() < 1e-5,
                "Bessel order {order} fc={fc} fs={fs}: DC delay {got} samples, want {expected}"
            );
            let dc = d.response(0.0);
            assert!((dc.re - 1.0).abs() < 1e-9 && dc.im.abs() < 1e-9, "order {order}: DC gain {dc}");
        }
    }
}

#[test]
fn bessel_group_delay_is_flat_where_butterworth_is_not() {
    let (fs, fc) = (48_000.0, 1000.0);
    for order in 2..=24usize {
        let bessel = design(Bessel::lowpass(fc, order), fs);
        let butter = design(Butterworth::lowpass(fc, order), fs);
        let dev = |d: &DesignedChain, f_max: f64| {
            let tau0 = group_delay(d, 1e-2);
            (1..=20).map(|i| (group_delay(d, f_max * i as f64 / 20.0) / tau0 - 1.0).abs()).fold(0.0, f64::max)
        };
        // Maximally flat: within 0.5 % up to a quarter of the cutoff (half for order >= 4).
        let f_max = if order >= 4 { fc / 2.0 } else { fc / 4.0 };
        let b = dev(&bessel, f_max);
        assert!(b < 5e-3, "Bessel order {order}: group delay deviates {b:.2e} below {f_max} Hz");
        if order >= 2 {
            let w = dev(&butter, f_max);
            assert!(w > 5.0 * b, "order {order}: Butterworth ({w:.2e}) should be far less flat than Bessel ({b:.2e})");
        }
    }
}

#[test]
fn bessel_highpass_and_bands_mirror_the_lowpass() {
    // lp2hp maps s -> wc/s: |H_hp(f)| at the warped mirror frequency equals |H_lp(f)|.
    let (fs, fc) = (48_000.0, 1000.0);
    let w = |f: f64| (PI * f / fs).tan();
    let unwarp = |t: f64| t.atan() * fs / PI;
    for order in [1usize, 3, 6, 10] {
        let lp = design(Bessel::lowpass(fc, order), fs);
        let hp = design(Bessel::highpass(fc, order), fs);
        for f in [50.0, 300.0, 1000.0, 3000.0, 9000.0] {
            let mirror = unwarp(w(fc) * w(fc) / w(f));
            let (a, b) = (lp.response(f).norm(), hp.response(mirror).norm());
            assert!((a - b).abs() < 1e-9, "order {order} at {f} Hz: lp {a} vs hp {b}");
        }
        // Band designs: unity at the geometric (warped) centre of a bandpass.
        let bp = design(Bessel::bandpass(500.0, 2000.0, order), fs);
        let centre = unwarp((w(500.0) * w(2000.0)).sqrt());
        assert!((bp.response(centre).norm() - 1.0).abs() < 1e-9, "bandpass order {order}");
    }
}

#[test]
fn digital_edges_of_every_family_land_on_the_cutoff() {
    // Prewarping puts the analog edge exactly on the digital cutoff.
    let fs = 48_000.0;
    for order in [1usize, 2, 5, 8, 12] {
        for fc in [30.0, 1000.0, 15_000.0] {
            let but = design(Butterworth::lowpass(fc, order), fs).response(fc).norm();
            assert!((but - 0.5f64.sqrt()).abs() < 1e-9, "butterworth order {order} fc {fc}: {but}");
            let c1 = design(Chebyshev1::highpass(fc, order, 1.0), fs).response(fc).norm();
            assert!((c1 - 10f64.powf(-1.0 / 20.0)).abs() < 1e-9, "chebyshev1 order {order} fc {fc}: {c1}");
            let c2 = design(Chebyshev2::lowpass(fc, order, 40.0), fs).response(fc).norm();
            assert!((c2 - 0.01).abs() < 1e-9, "chebyshev2 order {order} fc {fc}: {c2}");
            let el = design(Elliptic::lowpass(fc, order, 0.5, 60.0), fs).response(fc).norm();
            assert!((el - 10f64.powf(-0.5 / 20.0)).abs() < 1e-7, "elliptic order {order} fc {fc}: {el}");
        }
    }
}
