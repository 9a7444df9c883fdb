//! Preset export/import through chain files (the shared contract).

use ferrofx::chain::{Chain, Elliptic, Fir};
use ferrofx::{Engine, Stage};
use ferrofx_plugin::shared::bands::{Band, Route, Shape, Slope, BANDS};
use ferrofx_plugin::audio::equaliser::Equaliser;
use ferrofx_plugin::control::preset;

fn bands() -> [Band; BANDS] {
    let mut b = [Band::default(); BANDS];
    let set = |shape, freq_hz, gain_db, q, db, lr| Band {
        enabled: true,
        bypassed: false,
        shape,
        freq_hz,
        gain_db,
        q,
        slope: Slope { db_per_oct: db, linkwitz_riley: lr },
        route: Route::Stereo,
        matched: false,
        dynamic: false,
    };
    b[0] = set(Shape::LowCut, 40.0, 0.0, 0.7, 36, false);
    b[2] = set(Shape::Peak, 250.0, -3.5, 2.0, 24, false);
    b[4] = set(Shape::LowShelf, 120.0, 4.0, 0.8, 24, false);
    b[7] = set(Shape::HighShelf, 9000.0, -2.0, 0.6, 24, false);
    b[9] = set(Shape::Notch, 3150.0, 0.0, 8.0, 24, false);
    b[11] = set(Shape::BandPass, 700.0, 0.0, 0.9, 24, false);
    b[13] = set(Shape::AllPass, 1500.0, 0.0, 1.1, 24, false);
    b[15] = set(Shape::TiltShelf, 800.0, 5.0, 0.7, 24, false);
    b[23] = set(Shape::HighCut, 16000.0, 0.0, 0.7, 48, true);
    b[20] = Band { enabled: false, ..set(Shape::Peak, 5000.0, 12.0, 1.0, 24, false) };
    // Bypassed bands: in the file as disabled stages, silent in the render.
    b[18] = Band { bypassed: true, ..set(Shape::Peak, 3000.0, 9.0, 1.5, 24, false) };
    b[21] = Band { bypassed: true, ..set(Shape::TiltShelf, 2000.0, -6.0, 0.7, 24, false) };
    b[22] = Band { bypassed: true, ..set(Shape::HighCut, 6000.0, 0.0, 0.7, 24, true) };
    b
}

fn noise(n: usize) -> Vec<f32> {
    ferrofx_testkit::noise_amp(n, 0x2545_F491_4F6C_DD1D, 0.5)
}

#[test]
fn export_then_import_gives_back_bands_stages_and_gain() {
    let fs = 48_000.0;
    let stages = Elliptic::lowpass(12_000.0, 4, 0.5, 50.0) | Fir::coefficients(vec![0.25, 0.5, 0.25]) | Stage::gain(-1.0);
    let exported = preset::export(&bands(), &stages, -2.5, fs).unwrap();
    // Through the file format and back.
    let text = exported.to_json();
    let parsed = Chain::from_json(&text).expect("the exported file is a valid chain file");
    assert_eq!(parsed, exported);
    let imported = preset::import(&parsed);
    let enabled: Vec<(usize, Band)> = bands().iter().copied().enumerate().filter(|(_, b)| b.enabled).collect();
    assert_eq!(imported.bands.len(), enabled.len());
    for ((i, b), (j, c)) in imported.bands.iter().zip(&enabled) {
        assert_eq!(i, j);
        assert_eq!(b.shape, c.shape, "band {}", i + 1);
        assert_eq!(b.bypassed, c.bypassed, "band {}", i + 1);
        assert_eq!(b.freq_hz, c.freq_hz);
        if matches!(c.shape, Shape::LowCut | Shape::HighCut) {
            assert_eq!(b.slope, c.slope);
        } else {
            assert_eq!(b.q, c.q);
            if matches!(c.shape, Shape::Peak | Shape::LowShelf | Shape::HighShelf | Shape::TiltShelf) {
                assert!((b.gain_db - c.gain_db).abs() < 1e-12);
            }
        }
    }
    assert_eq!(imported.stages, stages, "chain stages come back unchanged, the user's own gain stage included");
    assert_eq!(imported.output_gain_db, Some(-2.5));
}

/// The exported file renders (core engine) what the plugin's equaliser plays.
#[test]
fn exported_file_renders_like_the_equaliser() {
    let fs = 48_000.0;
    let exported = preset::export(&bands(), &Chain::new(), 0.0, fs).unwrap();
    let designed = Chain::from_json(&exported.to_json()).unwrap().design(fs).unwrap();
    let x = noise(48_000);
    let mut engine = Engine::new(&designed, 1, 4096);
    let mut expected = x.clone();
    engine.process(&mut [&mut expected[..]]);
    let mut eq = Equaliser::new(fs, 1, 4096);
    for (i, b) in bands().iter().enumerate() {
        eq.set_band(i, *b);
    }
    eq.snap();
    let mut y = x.clone();
    for c in y.chunks_mut(4096) {
        eq.process(&mut [c]);
    }
    let err = y.iter().zip(&expected).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(err <= 1e-5, "max difference {err:e}");
}

#[test]
fn foreign_stages_stay_chain_stages() {
    // A file written by hand: an unlabelled peaking biquad and a band-labelled elliptic
    // (which no band can express) both stay chain stages; a gain that is not last is a
    // stage too.
    let chain = Chain {
        stages: vec![
            ferrofx::chain::Biquad::peaking(1000.0, 1.0, 3.0),
            Elliptic::highpass(100.0, 3, 1.0, 40.0).labelled("band 2"),
            Stage::gain(-6.0).labelled(preset::OUTPUT_GAIN_LABEL),
            Fir::coefficients(vec![1.0]),
        ],
    };
    let imported = preset::import(&chain);
    assert!(imported.bands.is_empty());
    assert_eq!(imported.stages, chain);
    assert_eq!(imported.output_gain_db, None);
}

#[test]
fn exported_numbers_are_the_shortest_decimals_of_the_parameters() {
    // A parameter holds an f32; the preset shows its shortest decimal form, not the
    // binary expansion of the f32 (54.76838302612305).
    #[allow(clippy::approx_constant)] // 0.7071 is a Q a user types, not 1/sqrt(2)
    for v in [54.768383f32, 1000.0, 0.7071, -3.3, 19_999.99, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1e-45] {
        let d = ferrofx_plugin::control::params::decimal(v);
        assert_eq!(d as f32, v, "the decimal rounds back to the same parameter value");
        assert_eq!(format!("{d}"), format!("{v}"));
    }
}

#[test]
fn factory_presets_design_at_the_common_rates() {
    for (name, text) in ferrofx_plugin::editor::presets::FACTORY {
        let chain = ferrofx::Chain::from_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for fs in [44_100.0, 48_000.0, 88_200.0, 96_000.0, 192_000.0] {
            chain.design(fs).unwrap_or_else(|e| panic!("{name} at {fs} Hz: {e}"));
        }
    }
}

/// A band on one channel, mid or side cannot be said in a chain file (every stage acts
/// on every channel): saving it is refused with the band named, not written wrongly.
#[test]
fn export_refuses_routed_bands_naming_them() {
    for route in [Route::Left, Route::Right, Route::Mid, Route::Side] {
        let mut b = bands();
        b[9].route = route;
        let err = preset::export(&b, &Chain::new(), 0.0, 48_000.0).expect_err("a routed band must not export");
        assert!(err.contains("band 10"), "{err}");
        assert!(err.contains("Stereo"), "the message says how to save it: {err}");
    }
    // A routed band that is not in use (disabled) does not matter.
    let mut b = bands();
    b[20].route = Route::Side;
    assert!(preset::export(&b, &Chain::new(), 0.0, 48_000.0).is_ok());
}

/// Analog-matched bands export as matched biquads (a version 2 file that renders what the
/// equaliser plays) and import back with the switch on; cookbook files turn it off.
#[test]
fn matched_bands_round_trip_through_version_2_files() {
    let fs = 48_000.0;
    let b: [Band; BANDS] = bands().map(|b| Band { matched: true, ..b });
    let exported = preset::export(&b, &Chain::new(), 0.0, fs).unwrap();
    let text = exported.to_json();
    assert!(text.contains("\"version\": 2") && text.contains("\"matched\": true"), "{text}");
    let imported = preset::import(&Chain::from_json(&text).unwrap());
    assert_eq!(imported.matched, Some(true));
    let plain = preset::export(&bands(), &Chain::new(), 0.0, fs).unwrap();
    assert_eq!(preset::import(&plain).matched, Some(false));
    assert_eq!(preset::import(&Chain::new()).matched, None);
    // What the file renders is what the equaliser plays.
    let designed = exported.design(fs).unwrap();
    let mut eq = Equaliser::new(fs, 1, 4096);
    for (i, band) in b.iter().enumerate() {
        eq.set_band(i, *band);
    }
    eq.snap();
    let x = noise(4096 * 8);
    let mut y = x.clone();
    for c in y.chunks_mut(4096) {
        eq.process(&mut [c]);
    }
    let mut want = x.clone();
    Engine::new(&designed, 1, want.len()).process(&mut [&mut want[..]]);
    let err = y.iter().zip(&want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(err <= 1e-5, "matched export renders {err:e} away from the equaliser");
}
