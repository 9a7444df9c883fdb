//! Every invalid-input case of the chain-format contract's Rules: the error names the
//! stage index, its type and the field, and says why.

use ferrofx::chain::{Biquad, Butterworth, Chain, ChainError, Fir, Stage};

const GOOD: &str = r#"{"type": "gain", "gain_db": -1}"#;

fn file(stages: &[&str]) -> String {
    format!(r#"{{"format": "ferrofx-chain", "version": 1, "stages": [{}]}}"#, stages.join(", "))
}

/// Parses (and designs at `fs`) a file whose stage 1 is `bad`; returns the error.
fn error_for(bad: &str, fs: f64) -> ChainError {
    let text = file(&[GOOD, bad, GOOD]);
    match Chain::from_json(&text) {
        Err(e) => e,
        Ok(chain) => chain.design(fs).expect_err(&format!("expected an error for {bad}")),
    }
}

/// Asserts a stage error at index 1 of `stage_type` naming `field`, with `words` in the text.
#[track_caller]
fn assert_stage_error(bad: &str, stage_type: &str, field: &str, words: &[&str]) {
    let e = error_for(bad, 48_000.0);
    let text = e.to_string();
    match &e {
        ChainError::Stage { index, stage_type: t, field: f, .. } => {
            assert_eq!(*index, 1, "{text}");
            assert_eq!(t, stage_type, "{text}");
            assert_eq!(f, field, "{text}");
        }
        other => panic!("not a stage error: {other:?}"),
    }
    assert!(text.starts_with(&format!("stage 1 ({stage_type}): ")), "{text}");
    assert!(text.contains(field), "message does not name {field}: {text}");
    for w in words {
        assert!(text.contains(w), "message lacks {w:?}: {text}");
    }
}

#[test]
fn the_contract_example_message() {
    let e = error_for(
        r#"{"type": "chebyshev1", "response": "lowpass", "order": 4, "cutoff_hz": 30000, "ripple_db": 1}"#,
        48_000.0,
    );
    // Stage 1 here; the contract's example is stage 3 of its file, same wording.
    assert_eq!(e.to_string(), "stage 1 (chebyshev1): cutoff_hz 30000 is above Nyquist (24000 Hz at fs=48000)");
}

#[test]
fn unknown_names() {
    assert_stage_error(r#"{"type": "butterworht", "response": "lowpass", "order": 2, "cutoff_hz": 100}"#, "butterworht", "type", &["not a stage type", "butterworth"]);
    assert_stage_error(r#"{"type": "biquad", "kind": "peak", "freq_hz": 100, "q": 1, "gain_db": 1}"#, "biquad", "kind", &["unknown variant `peak`", "peaking"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpas", "order": 2, "cutoff_hz": 100}"#, "butterworth", "response", &["unknown variant `lowpas`"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 11, "cutoff_hz": 100, "window": "hanning"}"#, "fir", "window", &["unknown variant `hanning`", "hann"]);
}

#[test]
fn unknown_and_missing_fields() {
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff": 100}"#, "butterworth", "cutoff", &["unknown field `cutoff`"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": 100, "ripple_db": 1}"#, "butterworth", "ripple_db", &["unknown field"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "cutoff_hz": 100}"#, "butterworth", "order", &["missing field `order`"]);
    assert_stage_error(r#"{"type": "chebyshev1", "response": "lowpass", "order": 2, "cutoff_hz": 100}"#, "chebyshev1", "ripple_db", &["missing"]);
    assert_stage_error(r#"{"type": "elliptic", "response": "lowpass", "order": 2, "cutoff_hz": 100, "ripple_db": 1}"#, "elliptic", "attenuation_db", &["missing"]);
    assert_stage_error(r#"{"type": "biquad", "kind": "peaking", "freq_hz": 100, "q": 1}"#, "biquad", "gain_db", &["missing", "peaking"]);
    assert_stage_error(r#"{"type": "biquad", "kind": "lowpass", "freq_hz": 100, "q": 1, "gain_db": 3}"#, "biquad", "gain_db", &["does not apply"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 11, "cutoff_hz": 100, "window": "kaiser"}"#, "fir", "beta", &["missing", "kaiser"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 11, "cutoff_hz": 100, "window": "hann", "beta": 3}"#, "fir", "beta", &["only to the kaiser"]);
    assert_stage_error(r#"{"type": "gain"}"#, "gain", "gain_db", &["missing field `gain_db`"]);
    assert_stage_error(r#"{"response": "lowpass"}"#, "?", "type", &["missing field `type`"]);
    assert_stage_error(r#"{"type": "gain", "gain_db": 1, "enabled": "no"}"#, "gain", "enabled", &["true or false"]);
}

#[test]
fn wrong_types() {
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2.5, "cutoff_hz": 100}"#, "butterworth", "order", &["invalid value", "2.5", "whole number"]);
    // An integral float is a count (numeric tools write 4.0).
    let four = Chain::from_json(&file(&[r#"{"type": "butterworth", "response": "lowpass", "order": 4.0, "cutoff_hz": 100}"#])).unwrap();
    assert_eq!(four, Chain::from(Butterworth::lowpass(100.0, 4)));
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": -2, "cutoff_hz": 100}"#, "butterworth", "order", &["invalid value"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "bandpass", "order": 2, "cutoff_hz": [1, 2, 3]}"#, "butterworth", "cutoff_hz", &["[low, high]"]);
    assert_stage_error(r#"{"type": "sos", "sections": [[1, 0, 0, 1, 0]]}"#, "sos", "sections", &["sections[0]", "length 5"]);
    assert_stage_error(r#"{"type": "fir", "coefficients": [0.5, "x"]}"#, "fir", "coefficients", &["coefficients[1]"]);
}

#[test]
fn orders_and_taps_out_of_range() {
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 0, "cutoff_hz": 100}"#, "butterworth", "order", &["order 0 is out of range (1..=24)"]);
    assert_stage_error(r#"{"type": "bessel", "response": "lowpass", "order": 25, "cutoff_hz": 100}"#, "bessel", "order", &["25", "1..=24"]);
    assert_stage_error(r#"{"type": "linkwitz_riley", "response": "lowpass", "order": 3, "cutoff_hz": 100}"#, "linkwitz_riley", "order", &["even"]);
    assert_stage_error(r#"{"type": "linkwitz_riley", "response": "lowpass", "order": 26, "cutoff_hz": 100}"#, "linkwitz_riley", "order", &["2..=24"]);
    assert_stage_error(r#"{"type": "linkwitz_riley", "response": "bandpass", "order": 4, "cutoff_hz": 100}"#, "linkwitz_riley", "response", &["lowpass or highpass"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 0, "cutoff_hz": 100, "window": "hann"}"#, "fir", "taps", &["1..=65536"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 65537, "cutoff_hz": 100, "window": "hann"}"#, "fir", "taps", &["65537"]);
    assert_stage_error(r#"{"type": "fir", "response": "highpass", "taps": 100, "cutoff_hz": 100, "window": "hann"}"#, "fir", "taps", &["odd"]);
    assert_stage_error(r#"{"type": "fir", "response": "bandstop", "taps": 64, "cutoff_hz": [100, 200], "window": "hann"}"#, "fir", "taps", &["odd"]);
    assert_stage_error(r#"{"type": "fir", "coefficients": []}"#, "fir", "coefficients", &["0 taps"]);
}

#[test]
fn given_fir_over_a_million_taps_is_refused() {
    let e = Chain::from(Fir::coefficients(vec![0.0; (1 << 20) + 1])).design(48_000.0).unwrap_err();
    assert!(e.to_string().contains("1048577 taps"), "{e}");
    assert!(Chain::from(Fir::coefficients(vec![0.0; 1 << 20])).design(48_000.0).is_ok());
}

#[test]
fn cutoffs_out_of_range() {
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": 0}"#, "butterworth", "cutoff_hz", &["greater than 0"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": -5}"#, "butterworth", "cutoff_hz", &["-5"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": 24000}"#, "butterworth", "cutoff_hz", &["above Nyquist (24000 Hz at fs=48000)"]);
    assert_stage_error(r#"{"type": "chebyshev2", "response": "bandpass", "order": 2, "cutoff_hz": [100, 30000], "attenuation_db": 40}"#, "chebyshev2", "cutoff_hz", &["30000", "Nyquist"]);
    assert_stage_error(r#"{"type": "biquad", "kind": "notch", "freq_hz": 25000, "q": 1}"#, "biquad", "freq_hz", &["Nyquist"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 11, "cutoff_hz": 24000, "window": "hann"}"#, "fir", "cutoff_hz", &["Nyquist"]);
    assert_stage_error(r#"{"type": "linkwitz_riley", "response": "highpass", "order": 4, "cutoff_hz": 0}"#, "linkwitz_riley", "cutoff_hz", &["greater than 0"]);
}

#[test]
fn bands_must_be_ordered_and_shaped() {
    assert_stage_error(r#"{"type": "butterworth", "response": "bandpass", "order": 2, "cutoff_hz": [2000, 1000]}"#, "butterworth", "cutoff_hz", &["low must be below high"]);
    assert_stage_error(r#"{"type": "elliptic", "response": "bandstop", "order": 2, "cutoff_hz": [1000, 1000], "ripple_db": 1, "attenuation_db": 40}"#, "elliptic", "cutoff_hz", &["low must be below high"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "bandpass", "order": 2, "cutoff_hz": 1000}"#, "butterworth", "cutoff_hz", &["pair"]);
    assert_stage_error(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": [100, 200]}"#, "butterworth", "cutoff_hz", &["single number"]);
}

#[test]
fn q_ripple_and_attenuation_must_be_positive() {
    assert_stage_error(r#"{"type": "biquad", "kind": "peaking", "freq_hz": 100, "q": 0, "gain_db": 1}"#, "biquad", "q", &["q 0 must be greater than 0"]);
    assert_stage_error(r#"{"type": "biquad", "kind": "lowpass", "freq_hz": 100, "q": -1}"#, "biquad", "q", &["-1"]);
    assert_stage_error(r#"{"type": "chebyshev1", "response": "lowpass", "order": 2, "cutoff_hz": 100, "ripple_db": 0}"#, "chebyshev1", "ripple_db", &["greater than 0"]);
    assert_stage_error(r#"{"type": "chebyshev2", "response": "lowpass", "order": 2, "cutoff_hz": 100, "attenuation_db": -3}"#, "chebyshev2", "attenuation_db", &["greater than 0"]);
    assert_stage_error(r#"{"type": "elliptic", "response": "lowpass", "order": 2, "cutoff_hz": 100, "ripple_db": 3, "attenuation_db": 2}"#, "elliptic", "attenuation_db", &["must exceed ripple_db"]);
    assert_stage_error(r#"{"type": "fir", "response": "lowpass", "taps": 11, "cutoff_hz": 100, "window": "kaiser", "beta": -1}"#, "fir", "beta", &["negative"]);
}

#[test]
fn sos_sections_must_be_stable_with_nonzero_a0() {
    assert_stage_error(r#"{"type": "sos", "sections": [[1, 0, 0, 1, -0.5, 0], [1, 0, 0, 0, 0.5, 0]]}"#, "sos", "sections", &["sections[1]", "a0 = 0"]);
    assert_stage_error(r#"{"type": "sos", "sections": [[1, 0, 0, 1, -2.5, 1.2]]}"#, "sos", "sections", &["sections[0]", "unstable", "|p| ="]);
    // A pole exactly on the unit circle (an integrator) is not stable either.
    assert_stage_error(r#"{"type": "sos", "sections": [[1, 0, 0, 1, -1, 0]]}"#, "sos", "sections", &["unstable", "1.000000"]);
    assert_stage_error(r#"{"type": "sos", "sections": []}"#, "sos", "sections", &["at least one"]);
    // a0 need not be 1.
    assert!(Chain::from_json(&file(&[r#"{"type": "sos", "sections": [[2, 0, 0, 2, -1, 0]]}"#])).unwrap().design(48_000.0).is_ok());
}

#[test]
fn non_finite_numbers() {
    // JSON has no NaN; a number too large for a float is reported with line and column.
    let text = "{\n  \"format\": \"ferrofx-chain\",\n  \"version\": 1,\n  \"stages\": [{\"type\": \"gain\", \"gain_db\": 1e999}]\n}";
    match Chain::from_json(text).unwrap_err() {
        ChainError::Syntax { line, column, message } => {
            assert_eq!(line, 4, "{message}");
            assert!(column > 30, "column {column}");
            assert!(message.contains("number out of range"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Through the Rust API NaN and infinities can be written; validation names them.
    let chain = Biquad::peaking(1000.0, 1.0, 0.0) | Butterworth::lowpass(f64::NAN, 2);
    let e = chain.design(48_000.0).unwrap_err().to_string();
    assert_eq!(e, "stage 1 (butterworth): cutoff_hz NaN is not a finite number");
    let e = Chain::from(Stage::gain(f64::INFINITY)).design(48_000.0).unwrap_err().to_string();
    assert!(e.contains("stage 0 (gain): gain_db inf is not a finite number"), "{e}");
    let e = Chain::from(Stage::sos(vec![[1.0, f64::NAN, 0.0, 1.0, 0.0, 0.0]])).design(48_000.0).unwrap_err().to_string();
    assert!(e.contains("sections[0][1] is not a finite number"), "{e}");
    let e = Chain::from(Fir::coefficients(vec![0.5, f64::INFINITY])).design(48_000.0).unwrap_err().to_string();
    assert!(e.contains("coefficients[1] is not a finite number"), "{e}");
}

#[test]
fn invalid_json_is_reported_with_line_and_column() {
    let text = "{\n  \"format\": \"ferrofx-chain\",\n  \"version\": 1,\n  \"stages\": [ {\"type\": \"gain\" \"gain_db\": 1} ]\n}";
    let e = Chain::from_json(text).unwrap_err();
    assert!(matches!(e, ChainError::Syntax { line: 4, .. }), "{e:?}");
    assert!(e.to_string().starts_with("not valid JSON at line 4, column "), "{e}");
    assert!(matches!(Chain::from_json(""), Err(ChainError::Syntax { line: 1, .. })));
}

#[test]
fn not_this_format_or_a_newer_version() {
    let cases = [
        (r#"[1, 2]"#, "the file"),
        (r#"{"format": "camilladsp", "version": 1, "stages": []}"#, "format"),
        (r#"{"version": 1, "stages": []}"#, "format"),
        (r#"{"format": "ferrofx-chain", "stages": []}"#, "version"),
        (r#"{"format": "ferrofx-chain", "version": 0, "stages": []}"#, "version"),
        (r#"{"format": "ferrofx-chain", "version": "1", "stages": []}"#, "version"),
        (r#"{"format": "ferrofx-chain", "version": 1}"#, "stages"),
        (r#"{"format": "ferrofx-chain", "version": 1, "stages": {}}"#, "stages"),
        (r#"{"format": "ferrofx-chain", "version": 1, "stages": [], "extra": 1}"#, "extra"),
    ];
    for (text, field) in cases {
        let e = Chain::from_json(text).unwrap_err();
        assert_eq!(e.field(), Some(field), "{text}: {e}");
        assert!(e.to_string().starts_with("not a ferrofx-chain file: "), "{e}");
        assert!(e.to_string().contains(field), "{e}");
    }
    let e = Chain::from_json(r#"{"format": "ferrofx-chain", "version": 3, "stages": [{"type": "future"}]}"#).unwrap_err();
    assert_eq!(e, ChainError::NewerVersion { found: 3 });
    assert!(e.to_string().contains("version 3 is newer"), "{e}");
}

/// Version 2 added the biquad's `matched`: a version 1 file may not use it (a version 1
/// reader would refuse the file, so a file claiming version 1 must not need it), a
/// version 2 file may, and a chain is written as the oldest version that says it all.
#[test]
fn matched_biquads_need_version_2_and_files_are_written_as_the_oldest_version() {
    let bad = r#"{"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1, "gain_db": 3, "matched": true}"#;
    assert_stage_error(bad, "biquad", "matched", &["version 2"]);
    let v2 = format!(r#"{{"format": "ferrofx-chain", "version": 2, "stages": [{GOOD}, {bad}]}}"#);
    let chain = Chain::from_json(&v2).expect("version 2 reads matched");
    assert_eq!(chain.stages[1], Biquad::peaking(1000.0, 1.0, 3.0).matched());
    let designed = chain.design(48_000.0).unwrap();
    let cookbook = Chain { stages: vec![chain.stages[0].clone(), Biquad::peaking(1000.0, 1.0, 3.0)] }.design(48_000.0).unwrap();
    // At 1 kHz the cookbook biquad is within 0.04 dB of the analog bell already: one
    // section; at 12 kHz, where the bilinear transform cramps it, the fit's two.
    assert_eq!(designed.sections(), cookbook.sections(), "a 1 kHz matched bell is the cookbook biquad");
    let high = Chain::from(Biquad::peaking(12_000.0, 1.0, 3.0).matched()).design(48_000.0).unwrap();
    assert_eq!(high.sections(), 2, "a 12 kHz matched bell is two sections");
    assert!(chain.to_json().contains("\"version\": 2"));
    let wrong = r#"{"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1, "gain_db": 3, "matched": 1}"#;
    let e = Chain::from_json(&format!(r#"{{"format": "ferrofx-chain", "version": 2, "stages": [{wrong}]}}"#)).unwrap_err();
    assert_eq!(e.field(), Some("matched"), "{e}");
    // Without matched stages: version 1, readable by every earlier build; version 2 files
    // without them read the same as version 1.
    let plain = Chain::from(Biquad::peaking(1000.0, 1.0, 3.0)) | Stage::gain(-1.0);
    assert!(plain.to_json().contains("\"version\": 1"));
    let v2_plain = plain.to_json().replace("\"version\": 1", "\"version\": 2");
    assert_eq!(Chain::from_json(&v2_plain).unwrap(), plain);
    // `matched: false` is allowed in version 2 and means the cookbook biquad.
    let off = format!(r#"{{"format": "ferrofx-chain", "version": 2, "stages": [{}]}}"#, bad.replace("true", "false"));
    assert_eq!(Chain::from_json(&off).unwrap().stages[0], Biquad::peaking(1000.0, 1.0, 3.0));
}

/// Version 2's `matched` on cuts: Butterworth low-/high-pass and Linkwitz-Riley stages;
/// refused in version 1 files and on stages without a matched design (band responses,
/// other families), read and written back, designed as the core's matched cut.
#[test]
fn matched_cuts_need_version_2_and_a_butterworth_or_linkwitz_riley_cut() {
    use ferrofx::chain::LinkwitzRiley;
    use ferrofx::design::matched::{cut_matched_into, cut_sections};
    use ferrofx::design::{Response, Sos};
    let bw = r#"{"type": "butterworth", "response": "highpass", "order": 5, "cutoff_hz": 80, "matched": true}"#;
    let lr = r#"{"type": "linkwitz_riley", "response": "lowpass", "order": 8, "cutoff_hz": 15000, "matched": true}"#;
    assert_stage_error(bw, "butterworth", "matched", &["version 2"]);
    assert_stage_error(lr, "linkwitz_riley", "matched", &["version 2"]);
    let v2 = |stages: &[&str]| format!(r#"{{"format": "ferrofx-chain", "version": 2, "stages": [{}]}}"#, stages.join(", "));
    let chain = Chain::from_json(&v2(&[bw, lr])).expect("version 2 reads matched cuts");
    assert_eq!(chain.stages[0], Butterworth::highpass(80.0, 5).matched());
    assert_eq!(chain.stages[1], LinkwitzRiley::lowpass(15_000.0, 8).matched());
    assert_eq!(Chain::from_json(&chain.to_json()).unwrap(), chain, "written back as read");
    assert!(chain.to_json().contains("\"version\": 2"));
    // Designed as the core's matched cuts: 2 sections per pole pair (the real pole counts as one).
    let designed = chain.design(48_000.0).unwrap();
    let mut want = vec![Sos::IDENTITY; cut_sections(5) + cut_sections(8)];
    let n = cut_matched_into(Response::Highpass, 5, false, 80.0, 48_000.0, &mut want);
    cut_matched_into(Response::Lowpass, 8, true, 15_000.0, 48_000.0, &mut want[n..]);
    // (Sections that are a pure gain fold into a neighbour.)
    assert!(designed.sections() <= want.len() && designed.sections() > want.len() / 2);
    for f in [20.0, 80.0, 1000.0, 15_000.0, 21_000.0] {
        let w = 2.0 * std::f64::consts::PI * f / 48_000.0;
        let expect = want.iter().fold(num_complex::Complex64::new(1.0, 0.0), |h, s| h * s.response(w));
        let got = designed.response(f);
        assert!((got - expect).norm() <= 1e-9 * expect.norm().max(1e-6), "{f} Hz: {got} vs {expect}");
    }
    // No matched design for band responses or other families: refused, naming the field.
    let band = r#"{"type": "butterworth", "response": "bandpass", "order": 2, "cutoff_hz": [100, 200], "matched": true}"#;
    let e = Chain::from_json(&v2(&[band])).unwrap().design(48_000.0).unwrap_err();
    assert_eq!(e.field(), Some("matched"), "{e}");
    assert!(e.to_string().contains("Butterworth low- and high-pass"), "{e}");
    let cheby = r#"{"type": "chebyshev1", "response": "lowpass", "order": 2, "cutoff_hz": 100, "ripple_db": 1, "matched": true}"#;
    let e = Chain::from_json(&v2(&[cheby])).unwrap_err();
    assert_eq!(e.field(), Some("matched"), "{e}");
    // `matched: false` is the bilinear design.
    let off = Chain::from_json(&v2(&[&bw.replace("true", "false")])).unwrap();
    assert_eq!(off.stages[0], Butterworth::highpass(80.0, 5));
}

#[test]
fn disabled_stages_are_still_validated_and_bad_sample_rates_refused() {
    let e = error_for(r#"{"type": "butterworth", "response": "lowpass", "order": 99, "cutoff_hz": 100, "enabled": false}"#, 48_000.0);
    assert_eq!(e.stage_index(), Some(1));
    let chain = Chain::from(Stage::gain(0.0));
    assert!(matches!(chain.design(0.0), Err(ChainError::SampleRate { .. })));
    assert!(matches!(chain.design(f64::NAN), Err(ChainError::SampleRate { .. })));
}

/// The value bounds of `docs/limits.md`: each is refused with the stage and field, and the
/// value just inside each bound still designs to finite coefficients.
#[test]
fn values_that_cannot_give_a_finite_result_are_refused_and_the_bounds_still_work() {
    use ferrofx::chain::{MAX_COEFFICIENT, MAX_GAIN_DB, MAX_KAISER_BETA};
    let kaiser = |beta: f64| format!(r#"{{"type": "fir", "response": "lowpass", "taps": 63, "cutoff_hz": 1000, "window": "kaiser", "beta": {beta}}}"#);
    let cases: Vec<(String, String, &str, &str)> = vec![
        (r#"{"type": "gain", "gain_db": 6200}"#.into(), r#"{"type": "gain", "gain_db": 600}"#.into(), "gain", "gain_db"),
        (r#"{"type": "gain", "gain_db": -600.5}"#.into(), r#"{"type": "gain", "gain_db": -600}"#.into(), "gain", "gain_db"),
        (
            r#"{"type": "biquad", "kind": "high_shelf", "freq_hz": 1000, "q": 0.7, "gain_db": 601}"#.into(),
            r#"{"type": "biquad", "kind": "high_shelf", "freq_hz": 1000, "q": 0.7, "gain_db": 600}"#.into(),
            "biquad",
            "gain_db",
        ),
        (kaiser(MAX_KAISER_BETA + 0.5), kaiser(MAX_KAISER_BETA), "fir", "beta"),
        (r#"{"type": "fir", "coefficients": [0.5, 1e39, 0.5]}"#.into(), format!(r#"{{"type": "fir", "coefficients": [0.5, {MAX_COEFFICIENT:e}, 0.5]}}"#), "fir", "coefficients"),
        (r#"{"type": "sos", "sections": [[1e300, 0, 0, 1, -0.5, 0]]}"#.into(), r#"{"type": "sos", "sections": [[1e30, 0, 0, 1, -0.5, 0]]}"#.into(), "sos", "sections"),
        // Small a0: the normalised row is what runs.
        (r#"{"type": "sos", "sections": [[1, 0, 0, 1e-300, 0, 0]]}"#.into(), r#"{"type": "sos", "sections": [[1, 0, 0, 1e-29, 0, 0]]}"#.into(), "sos", "sections"),
    ];
    for (bad, edge, stage_type, field) in cases {
        assert_stage_error(&bad, stage_type, field, &["docs/limits.md"]);
        let chain = Chain::from_json(&file(&[GOOD, &edge, GOOD])).unwrap();
        let designed = chain.design(48_000.0).unwrap_or_else(|e| panic!("{edge}: {e}"));
        assert!(designed.response(1000.0).norm().is_finite(), "{edge}");
        for s in &designed.stages {
            match s {
                ferrofx::DesignedStage::Sos(v) => assert!(v.iter().all(|s| s.is_finite()), "{edge}"),
                ferrofx::DesignedStage::Fir(t) => assert!(t.iter().all(|t| t.is_finite()), "{edge}"),
            }
        }
    }
    const { assert!(MAX_GAIN_DB < 770.0, "a gain past float32's range would be accepted") };
}

#[test]
fn duplicate_keys_are_refused_with_the_key_the_stage_and_the_line() {
    let text = "{\"format\": \"ferrofx-chain\", \"version\": 1, \"stages\": [\n  {\"type\": \"gain\", \"gain_db\": 1},\n  {\"type\": \"butterworth\", \"response\": \"lowpass\",\n   \"order\": 4, \"order\": 8, \"cutoff_hz\": 100}\n]}";
    let e = Chain::from_json(text).unwrap_err();
    match &e {
        ChainError::DuplicateKey { stage, key, line, .. } => {
            assert_eq!((*stage, key.as_str(), *line), (Some(1), "order", 4), "{e}");
        }
        other => panic!("not a duplicate-key error: {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("stage 1") && msg.contains("`order`") && msg.contains("line 4"), "{msg}");
    // At the top level, and nested inside a value.
    let top = r#"{"format": "ferrofx-chain", "version": 1, "version": 1, "stages": []}"#;
    assert!(matches!(Chain::from_json(top).unwrap_err(), ChainError::DuplicateKey { stage: None, ref key, .. } if key == "version"));
    let nested = file(&[r#"{"type": "gain", "gain_db": 1, "label": "x", "label": "y"}"#]);
    assert!(matches!(Chain::from_json(&nested).unwrap_err(), ChainError::DuplicateKey { stage: Some(0), ref key, .. } if key == "label"));
    // The same keys in different objects are fine.
    assert!(Chain::from_json(&file(&[GOOD, GOOD])).is_ok());
}

#[test]
fn counts_past_the_limits_are_refused_before_designing() {
    use ferrofx::chain::{MAX_SECTIONS, MAX_STAGES, MAX_TOTAL_TAPS};
    // Stages: a chain one over the limit, built in memory (a file of that size would be
    // refused by its size first).
    let mut chain = Chain::new();
    for _ in 0..=MAX_STAGES {
        chain.push(Stage::gain(0.0));
    }
    let e = chain.design(48_000.0).unwrap_err();
    assert!(matches!(e, ChainError::Limit { .. }) && e.to_string().contains("docs/limits.md"), "{e}");
    // Sections: 24th-order bandpass designs are 24 sections each; the stage that passes
    // the limit is named.
    let band = Butterworth::bandpass(100.0, 200.0, 24);
    let per = Chain::from(band).design(48_000.0).unwrap().sections();
    let mut chain = Chain::new();
    for _ in 0..MAX_SECTIONS / per + 1 {
        chain.push(Butterworth::bandpass(100.0, 200.0, 24));
    }
    let e = chain.design(48_000.0).unwrap_err();
    assert_eq!(e.stage_index(), Some(MAX_SECTIONS / per), "{e}");
    assert!(e.to_string().contains("second-order sections"), "{e}");
    // Taps: three given FIRs of the largest size (not fused: too costly to convolve).
    let big = Fir::coefficients(vec![1e-3; ferrofx::chain::MAX_GIVEN_TAPS]);
    let e = (big.clone() | big.clone() | big).design(48_000.0).unwrap_err();
    assert_eq!(e.stage_index(), Some(2), "{e}");
    assert!(e.to_string().contains(&MAX_TOTAL_TAPS.to_string()), "{e}");
}

#[test]
fn chain_files_are_read_with_a_size_cap() {
    let dir = std::env::temp_dir().join(format!("ferrofx-chain-cap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A sparse file one byte over the cap: refused without reading it all into a string.
    let big = dir.join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(ferrofx::chain::MAX_FILE_BYTES + 1).unwrap();
    drop(f);
    let e = Chain::from_file(&big).unwrap_err();
    assert!(matches!(e, ChainError::Limit { .. }) && e.to_string().contains("MiB"), "{e}");
    // Not UTF-8, a directory, a missing file: each a read error naming the path.
    let bin = dir.join("bin.json");
    std::fs::write(&bin, [b'{', 0xff, b'}']).unwrap();
    assert!(Chain::from_file(&bin).unwrap_err().to_string().contains("not UTF-8"));
    assert!(Chain::from_file(&dir).unwrap_err().to_string().contains("directory"));
    assert!(Chain::from_file(&dir.join("missing.json")).unwrap_err().to_string().contains("missing.json"));
    let good = dir.join("good.json");
    std::fs::write(&good, file(&[GOOD])).unwrap();
    assert_eq!(Chain::from_file(&good).unwrap().stages.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn thousands_of_fir_stages_design_in_bounded_time() {
    // Each fusion convolves the growing kernel again: without a budget, 5,000 stages of
    // 101 taps took over 30 s. The fused part equals the convolution of its stages.
    let mut chain = Chain::new();
    for _ in 0..5_000 {
        chain.push(Fir::lowpass(101, 1000.0));
    }
    let t = std::time::Instant::now();
    let designed = chain.design(48_000.0).unwrap();
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    let taps: usize = designed.stages.iter().map(|s| if let ferrofx::DesignedStage::Fir(t) = s { t.len() } else { 0 }).sum();
    assert_eq!(taps - (designed.stages.len() - 1), 5_000 * 101 - 5_000 + 1, "every stage's taps are kept (fused or not)");
    let r = designed.response(500.0).norm();
    let single = Chain::from(Fir::lowpass(101, 1000.0)).design(48_000.0).unwrap().response(500.0).norm();
    assert!((r.ln() - 5_000.0 * single.ln()).abs() < 1e-6 * 5_000.0, "{r} vs {single}^5000");
}

#[test]
fn designs_float64_cannot_run_are_refused_and_ordinary_high_orders_are_not() {
    // A 46-pole Butterworth bandstop whose band spans 2.5 kHz to 103 kHz at 384 kHz: its
    // float64 sosfilt output (SciPy's and ours) is over 1000x its peak away from the same
    // sections in extended precision. Refused, naming the stage and the order.
    let text = file(&[GOOD, r#"{"type": "butterworth", "response": "bandstop", "order": 23, "cutoff_hz": [2513.01, 103454.0]}"#]);
    let e = Chain::from_json(&text).unwrap().design(384_000.0).unwrap_err();
    assert_eq!((e.stage_index(), e.field()), (Some(1), Some("order")), "{e}");
    assert!(e.to_string().contains("too ill-conditioned to run in float64"), "{e}");
    // Steep designs at low cutoffs, whose float64 runs drift only once their slow modes
    // have built up (after 10,000-20,000 samples: a 4,096-sample probe passed them, and
    // SciPy's float64 output then ran 1e-4 to 1e3 of its peak away from extended
    // precision; found by a seeded sweep over the format's ranges).
    for (stage, fs) in [
        (r#"{"type": "bessel", "response": "bandstop", "order": 22, "cutoff_hz": [3.558137308625472, 1821.5117876229706]}"#, 384_000.0),
        (r#"{"type": "chebyshev1", "response": "bandstop", "order": 22, "cutoff_hz": [1.0696620850127592, 121.41567552064056], "ripple_db": 0.384718889364459}"#, 48_000.0),
        (r#"{"type": "chebyshev1", "response": "bandstop", "order": 13, "cutoff_hz": [1.018918892821182, 23.552018508174857], "ripple_db": 2.862616043448393}"#, 22_050.0),
        (r#"{"type": "bessel", "response": "bandstop", "order": 11, "cutoff_hz": [45.489805780847995, 5659.190716538156]}"#, 384_000.0),
        (r#"{"type": "bessel", "response": "bandstop", "order": 12, "cutoff_hz": [1.2848385822953774, 1271.066704337239]}"#, 96_000.0),
        (r#"{"type": "chebyshev1", "response": "bandstop", "order": 23, "cutoff_hz": [4.083030747873729, 24.08423160090739], "ripple_db": 2.068119538042636}"#, 22_050.0),
        // Seven sections (not probed at all before: only cascades of eight or more were).
        (r#"{"type": "chebyshev1", "response": "bandstop", "order": 7, "cutoff_hz": [1.5280414542056182, 11013.240860311611], "ripple_db": 1.4833939725908134}"#, 48_000.0),
    ] {
        let e = Chain::from_json(&file(&[stage])).unwrap().design(fs).unwrap_err();
        assert!(e.to_string().contains("too ill-conditioned to run in float64"), "{stage} at {fs}: {e}");
    }
    // High orders that float64 runs well still design, and low cutoffs of short cascades.
    for stage in [
        Butterworth::highpass(1.0, 4),
        Butterworth::highpass(5.0, 8),
        Butterworth::lowpass(10.0, 6),
        Butterworth::lowpass(100.0, 24),
        Butterworth::bandstop(1000.0, 2000.0, 12),
        Butterworth::highpass(20.0, 24),
        Butterworth::bandpass(300.0, 3400.0, 24),
    ] {
        Chain::from(stage.clone()).design(48_000.0).unwrap_or_else(|e| panic!("{stage:?}: {e}"));
    }
}

#[test]
fn a_fir_that_cannot_be_scaled_is_refused() {
    // A 2-tap Hann window is zero at both taps: the design's passband response is zero and
    // SciPy's firwin, dividing by it, gives NaN taps. Refused by stage and field; a 3-tap
    // Hann window (nonzero in the middle) designs, scaled to 1 at DC.
    let e = error_for(r#"{"type": "fir", "response": "lowpass", "taps": 2, "cutoff_hz": 1000, "window": "hann"}"#, 48_000.0);
    assert_eq!((e.stage_index(), e.field()), (Some(1), Some("taps")), "{e}");
    assert!(e.to_string().contains("cannot be scaled"), "{e}");
    let ok = Chain::from_json(&file(&[r#"{"type": "fir", "response": "lowpass", "taps": 3, "cutoff_hz": 1000, "window": "hann"}"#])).unwrap();
    let designed = ok.design(48_000.0).unwrap();
    assert!((designed.response(0.0).norm() - 1.0).abs() < 1e-12);
}

#[test]
fn huge_values_and_names_are_quoted_short_and_the_place_still_named() {
    // A mutated or mistaken file can hold megabytes in one value, key or type name; the
    // error stays one readable line (it once quoted the whole value, and a renderer's
    // stderr pipe could fill before the process exited) and still says where.
    let big_list = format!("[{}]", vec![r#"{"type": 1e-300}"#; 20_000].join(","));
    let big_name = "x".repeat(200_000);
    let cases: Vec<(String, &str)> = vec![
        (format!(r#"{{"format": "ferrofx-chain", "version": {big_list}, "stages": []}}"#), "version"),
        (format!(r#"{{"format": "ferrofx-chain", "version": 1, "stages": {{"a": {big_list}}}}}"#), "stages"),
        (format!(r#"{{"format": {big_list}, "version": 1, "stages": []}}"#), "format"),
        (file(&[GOOD, &format!(r#"{{"type": {big_list}}}"#)]), "stage 1"),
        (file(&[GOOD, &format!(r#"{{"type": "gain", "enabled": {big_list}}}"#)]), "enabled"),
        (file(&[GOOD, &format!(r#"{{"type": "gain", "label": {big_list}}}"#)]), "label"),
        (file(&[GOOD, &format!(r#"{{"type": "{big_name}"}}"#)]), "is not a stage type"),
        (file(&[GOOD, &format!(r#"{{"type": "gain", "gain_db": "{big_name}"}}"#)]), "gain_db"),
        (file(&[GOOD, &format!(r#"{{"type": "gain", "gain_db": 1, "{big_name}": 2}}"#)]), "unknown field"),
        (file(&[GOOD, &format!(r#"{{"type": "gain", "{big_name}": 1, "{big_name}": 2}}"#)]), "duplicate key"),
    ];
    for (text, place) in cases {
        let e = Chain::from_json(&text).expect_err(place);
        let message = e.to_string();
        assert!(message.len() < 1000, "{place}: a message of {} bytes: {}…", message.len(), &message[..200]);
        assert!(message.contains(place), "{place} not named: {message}");
        assert!(!message.contains('\n'), "{message}");
        if message.contains(" … ") {
            assert!(message.contains(" characters)"), "a cut quote says how long it was: {message}");
        }
    }
    // Short values are quoted whole, as before.
    let e = Chain::from_json(r#"{"format": "ferrofx-chain", "version": [1], "stages": []}"#).unwrap_err();
    assert!(e.to_string().contains("must be an integer, found [1]"), "{e}");
}
