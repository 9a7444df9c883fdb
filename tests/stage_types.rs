//! The chain format's stage types, one list (`ferrofx::chain::STAGE_TYPES`): every type in
//! it reads from a file, designs, writes back and reads again to the same chain, and the
//! chain format's documentation describes it. A type added to the core without a sample
//! here, or without its documentation, fails this test; the editor and the Python
//! package check their own coverage of the same list (`plugin/src/editor/stage_fields.rs`,
//! `tests/python/test_package.py`).

use ferrofx::chain::{Chain, STAGE_TYPES};

/// A valid stage of each type, as a file writes it.
const SAMPLES: &[(&str, &str)] = &[
    ("butterworth", r#"{"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": 80}"#),
    ("chebyshev1", r#"{"type": "chebyshev1", "response": "lowpass", "order": 5, "cutoff_hz": 8000, "ripple_db": 0.5}"#),
    ("chebyshev2", r#"{"type": "chebyshev2", "response": "bandpass", "order": 4, "cutoff_hz": [300, 3000], "attenuation_db": 50}"#),
    ("elliptic", r#"{"type": "elliptic", "response": "bandstop", "order": 3, "cutoff_hz": [45, 55], "ripple_db": 0.5, "attenuation_db": 60}"#),
    ("bessel", r#"{"type": "bessel", "response": "lowpass", "order": 6, "cutoff_hz": 5000}"#),
    ("linkwitz_riley", r#"{"type": "linkwitz_riley", "response": "lowpass", "order": 4, "cutoff_hz": 2000}"#),
    ("biquad", r#"{"type": "biquad", "kind": "peaking", "freq_hz": 3000, "q": 1.0, "gain_db": 3}"#),
    ("fir", r#"{"type": "fir", "response": "lowpass", "taps": 101, "cutoff_hz": 16000, "window": "kaiser", "beta": 8.6}"#),
    ("sos", r#"{"type": "sos", "sections": [[1, 0, 0, 1, -0.5, 0]]}"#),
    ("gain", r#"{"type": "gain", "gain_db": -1}"#),
];

#[test]
fn every_stage_type_reads_designs_writes_and_is_documented() {
    let sampled: Vec<&str> = SAMPLES.iter().map(|(t, _)| *t).collect();
    assert_eq!(sampled, STAGE_TYPES, "one sample per stage type of the core's list, in its order");
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/chain-format.md")).unwrap();
    for (t, stage) in SAMPLES {
        let text = format!(r#"{{"format": "ferrofx-chain", "version": 1, "stages": [{stage}]}}"#);
        let chain = Chain::from_json(&text).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(chain.stages[0].kind.type_name(), *t);
        let designed = chain.design(48_000.0).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert!(!designed.stages.is_empty(), "{t} designs to something");
        let again = Chain::from_json(&chain.to_json()).unwrap();
        assert_eq!(again, chain, "{t}: written and read back");
        assert!(docs.contains(&format!("`{t}`")), "docs/chain-format.md does not describe `{t}`");
    }
    // A type outside the list is refused, naming the list.
    let e = Chain::from_json(r#"{"format": "ferrofx-chain", "version": 1, "stages": [{"type": "chebyshev3"}]}"#).unwrap_err().to_string();
    assert!(e.contains(&STAGE_TYPES.join(", ")), "{e}");
}
