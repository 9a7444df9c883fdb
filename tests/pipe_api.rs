//! The pipe API, the chain file and the fused engine agree.

use ferrofx::chain::{
    Bessel, Biquad, Butterworth, Chain, Chebyshev1, Chebyshev2, DesignedStage, Elliptic, Fir, LinkwitzRiley, Stage,
};
use ferrofx::design::{Cutoff, Response, Window};
use ferrofx::engine::Engine;

fn noise(n: usize, seed: u32) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, u64::from(seed), 1.0)
}

#[test]
fn the_issue_example_equals_its_chain_file() {
    let piped = Butterworth::highpass(30.0, 4) | Biquad::peaking(1000.0, 1.4, -6.0) | Fir::lowpass(101, 8000.0);
    let file = r#"{
        "format": "ferrofx-chain", "version": 1,
        "stages": [
            {"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": 30},
            {"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1.4, "gain_db": -6},
            {"type": "fir", "response": "lowpass", "taps": 101, "cutoff_hz": 8000, "window": "hamming"}
        ]}"#;
    let parsed = Chain::from_json(file).unwrap();
    assert_eq!(piped, parsed);
    let (a, b) = (piped.design(48_000.0).unwrap(), parsed.design(48_000.0).unwrap());
    assert_eq!(a, b);
    // Butterworth + biquad fuse into one cascade of 3 sections; the FIR follows.
    assert_eq!(a.stages.len(), 2);
    assert!(matches!(&a.stages[0], DesignedStage::Sos(s) if s.len() == 3));
    assert!(matches!(&a.stages[1], DesignedStage::Fir(t) if t.len() == 101));
    let input: Vec<Vec<f32>> = (0..2).map(|c| noise(5000, 7 + c)).collect();
    let run = |d| {
        let mut out = input.clone();
        let mut e = Engine::new(d, 2, 5000);
        let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[..]).collect();
        e.process(&mut slices);
        out
    };
    assert_eq!(run(&a), run(&b));
}

#[test]
fn every_stage_type_round_trips_through_json() {
    let chain = Butterworth::bandpass(300.0, 3400.0, 3)
        | Chebyshev1::lowpass(8000.0, 6, 0.5).labelled("top")
        | Chebyshev2::bandstop(900.0, 1100.0, 4, 40.0)
        | Elliptic::highpass(40.0, 5, 0.1, 80.0).disabled()
        | Bessel::lowpass(2000.0, 5)
        | LinkwitzRiley::highpass(2500.0, 8)
        | Biquad::bandpass_skirt(700.0, 0.3)
        | Biquad::low_shelf(120.0, std::f64::consts::FRAC_1_SQRT_2, 3.0)
        | Fir::design(Response::Bandstop, 201, Cutoff::Band(50.0, 70.0), Window::Kaiser { beta: 8.6 })
        | Fir::coefficients(vec![0.25, 0.5, 0.25])
        | Stage::sos(vec![[1.0, 0.0, 0.0, 1.0, -0.5, 0.0]])
        | Stage::gain(-3.0);
    let json = chain.to_json();
    let back = Chain::from_json(&json).unwrap();
    assert_eq!(back, chain, "{json}");
    assert_eq!(back.to_json(), json);
    assert!(json.contains(r#""enabled": false"#) && json.contains(r#""label": "top""#) && json.contains(r#""beta": 8.6"#));
    let designed = chain.design(48_000.0).unwrap();
    // Cascade (all IIR and biquads; the disabled elliptic skipped), one FIR (the two FIR
    // stages fused: 201 + 3 - 1 taps), cascade (sos + gain).
    let shape: Vec<&str> = designed
        .stages
        .iter()
        .map(|s| if matches!(s, DesignedStage::Sos(_)) { "sos" } else { "fir" })
        .collect();
    assert_eq!(shape, ["sos", "fir", "sos"]);
    assert!(matches!(&designed.stages[1], DesignedStage::Fir(t) if t.len() == 203));
    // Fusion keeps the response: the fused kernel's H equals the product of the two.
    let fir_a = Chain::from(Fir::design(Response::Bandstop, 201, Cutoff::Band(50.0, 70.0), Window::Kaiser { beta: 8.6 }))
        .design(48_000.0)
        .unwrap();
    let fir_b = Chain::from(Fir::coefficients(vec![0.25, 0.5, 0.25])).design(48_000.0).unwrap();
    for f in [10.0, 60.0, 1000.0, 20_000.0] {
        let fused = designed.stages[1].response(f, 48_000.0);
        let product = fir_a.response(f) * fir_b.response(f);
        assert!((fused - product).norm() < 1e-12, "{f} Hz");
    }
    // 3 + 3 + 4 + 3 (bessel 5) + 4 (LR8) + 1 + 1 sections; the gain folded into the sos stage.
    assert_eq!(designed.sections(), 3 + 3 + 4 + 3 + 4 + 1 + 1 + 1);
}

#[test]
fn gains_fold_into_the_cascade_without_changing_the_response() {
    let with_gain = (Biquad::peaking(1000.0, 2.0, 6.0) | Stage::gain(-6.0) | Stage::gain(2.0)).design(44_100.0).unwrap();
    let without = Chain::from(Biquad::peaking(1000.0, 2.0, 6.0)).design(44_100.0).unwrap();
    assert_eq!(with_gain.sections(), 1);
    for f in [20.0, 1000.0, 15_000.0] {
        let ratio = with_gain.response(f).norm() / without.response(f).norm();
        assert!((ratio - 10f64.powf(-4.0 / 20.0)).abs() < 1e-12);
    }
    let only_gain = Chain::from(Stage::gain(-6.0)).design(44_100.0).unwrap();
    assert_eq!(only_gain.sections(), 1);
    assert!((only_gain.response(100.0).norm() - 10f64.powf(-6.0 / 20.0)).abs() < 1e-15);
}

#[test]
fn numbers_read_back_exactly_as_written() {
    // Given FIR taps and sos rows are data: a chain file must give back the same bits
    // (serde_json's default float parser can be one unit in the last place off).
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Every exponent and mantissa pattern of ordinary numbers, both signs.
        let v = f64::from_bits(seed >> 2);
        if seed & 1 == 1 {
            -v
        } else {
            v
        }
    };
    let taps: Vec<f64> = (0..20_000)
        .map(|_| next())
        .filter(|v| v.is_finite() && v.abs() < 1e30)
        .collect();
    let rows: Vec<[f64; 6]> = (0..2_000)
        .map(|_| {
            [
                next(),
                next(),
                next(),
                1.0 + next().abs().min(1.0),
                next(),
                next(),
            ]
        })
        .filter(|r| r.iter().all(|v| v.is_finite() && v.abs() < 1e30))
        .collect();
    let chain = Chain::from(Fir::coefficients(taps.clone())) | Stage::sos(rows.clone());
    let back = Chain::from_json(&chain.to_json()).unwrap();
    assert_eq!(back, chain);
}
