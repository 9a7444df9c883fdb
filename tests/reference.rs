//! All SciPy reference cases of a reference set (by default the one
//! `scripts/scipy_reference.py vectors` generates into the target folder; another, such as
//! the project's shared set, through `FERROFX_REFERENCE_DIR`),
//! designed from `spec` and,
//! separately, run from the given `sos`/`taps`, at block sizes 1, 7, 64 and 4096, both
//! FIR paths; plus the magnitude response of the coefficients the engine actually runs.

use ferrofx_testkit::engine::{chain_of, rel_error, run_engine};
use ferrofx_testkit::reference::load_cases;
use ferrofx::engine::{Engine, EngineOptions};
use ferrofx::dsp::fir::FirMode;
use std::collections::BTreeMap;

const TIME_TOLERANCE: f64 = 1e-4;
const MAG_TOLERANCE: f64 = 1e-3;
const BLOCK_SIZES: [usize; 4] = [1, 7, 64, 4096];

/// `max_f |H - H_ref| / max(H_ref, 1e-3 max H_ref)`.
fn mag_error(engine: &Engine, fs: f64, freqs: &[f64], mag_ref: &[f64]) -> f64 {
    let peak = mag_ref.iter().cloned().fold(0.0, f64::max);
    freqs
        .iter()
        .zip(mag_ref)
        .map(|(&f, &r)| (engine.response(f, fs).norm() - r).abs() / r.max(1e-3 * peak))
        .fold(0.0, f64::max)
}

#[derive(Default)]
struct Worst {
    time: f64,
    time_lowfreq: f64,
    mag: f64,
    cases: usize,
}

#[test]
fn every_reference_case_meets_the_tolerances() {
    let cases = load_cases();
    // The shared set has 77 cases, the one `scripts/scipy_reference.py vectors` generates
    // about 100 (`load_cases` checks every case the index lists was read).
    assert!(cases.len() >= 50, "only {} reference cases", cases.len());
    let mut failures = Vec::new();
    let mut worst: BTreeMap<String, Worst> = BTreeMap::new();
    for case in &cases {
        let (freqs, mag_ref) = case.freqs_and_mag();
        let modes: &[FirMode] = if case.kind == "fir" {
            &[FirMode::Auto, FirMode::Direct, FirMode::Partitioned { partition: 16 }]
        } else {
            &[FirMode::Auto]
        };
        for (source, stage) in [("spec", case.spec_stage()), ("given", case.given_stage())] {
            let designed = chain_of(stage)
                .design(case.fs)
                .unwrap_or_else(|e| panic!("{} ({source}): design failed: {e}", case.id));
            for &fir_mode in modes {
                let options = EngineOptions { fir_mode, ..EngineOptions::default() };
                let engine = Engine::with_options(&designed, 2, 64, options);
                let m = mag_error(&engine, case.fs, &freqs, &mag_ref);
                if m > MAG_TOLERANCE {
                    failures.push(format!("{} ({source}, {fir_mode:?}): magnitude error {m:.3e}", case.id));
                }
                let w = worst.entry(case.family.clone()).or_default();
                w.mag = w.mag.max(m);
                // The offline engine too: the whole input as one block, in time segments
                // where the design's warm-up fits.
                let offline = EngineOptions { time_segments: 8, ..options };
                let whole = case.input[0].len();
                for (block, options) in BLOCK_SIZES.iter().map(|&b| (b, options)).chain([(whole, offline)]) {
                    let y = run_engine(&designed, &case.input, block, options);
                    let e = rel_error(&y, &case.expected);
                    if e.is_nan() || e > TIME_TOLERANCE {
                        failures.push(format!(
                            "{} ({source}, block {block}, {fir_mode:?}, time segments {}): time error {e:.3e}",
                            case.id, options.time_segments
                        ));
                    }
                    w.time = w.time.max(e);
                    if case.is_lowfreq() {
                        w.time_lowfreq = w.time_lowfreq.max(e);
                    }
                }
            }
            worst.get_mut(&case.family).unwrap().cases += 1;
        }
    }
    println!("worst errors per family over spec+given designs, block sizes {BLOCK_SIZES:?} and the whole input offline (time segments):");
    let mut overall = Worst::default();
    for (family, w) in &worst {
        println!(
            "  {family:<12} runs {:>3}  time {:.2e}  time(lowfreq) {:.2e}  magnitude {:.2e}",
            w.cases, w.time, w.time_lowfreq, w.mag
        );
        overall.time = overall.time.max(w.time);
        overall.time_lowfreq = overall.time_lowfreq.max(w.time_lowfreq);
        overall.mag = overall.mag.max(w.mag);
    }
    println!(
        "reference summary: worst time error {:.2e} (lowfreq {:.2e}), worst magnitude error {:.2e}; tolerances {TIME_TOLERANCE:.0e} / {MAG_TOLERANCE:.0e}",
        overall.time, overall.time_lowfreq, overall.mag
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
