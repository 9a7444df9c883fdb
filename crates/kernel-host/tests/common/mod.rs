//! Helpers the kernel-host tests share: seeded random IIR designs of every family.

use ferrofx::chain::{Chain, DesignedStage};
use ferrofx::dsp::sos::SosCoefs;
use ferrofx::gpu::realize::DeltaSection;
use ferrofx_kernel_host::Section;
use ferrofx_testkit::Rng;

const FS: f64 = 48_000.0;

/// A seeded random IIR stage of any family, as chain-file JSON.
pub fn random_iir(rng: &mut Rng) -> String {
    let families = ["butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel", "linkwitz_riley"];
    let family = families[rng.below(families.len())];
    let responses = ["lowpass", "highpass", "bandpass", "bandstop"];
    let response = if family == "linkwitz_riley" { responses[rng.below(2)] } else { responses[rng.below(4)] };
    let order = if family == "linkwitz_riley" { 2 * (1 + rng.below(4)) } else { 1 + rng.below(8) };
    // Cutoffs from 20 Hz to 20 kHz, log-uniform (low ones put poles near z = 1).
    let f = |rng: &mut Rng| 20.0 * 1000f64.powf(rng.unit());
    let cutoff = if response.starts_with("band") {
        let lo = f(rng).min(15_000.0);
        format!("[{lo:.3}, {:.3}]", (lo * (1.2 + 3.0 * rng.unit())).min(22_000.0))
    } else {
        format!("{:.3}", f(rng))
    };
    let mut s = format!(r#"{{"type": "{family}", "response": "{response}", "order": {order}, "cutoff_hz": {cutoff}"#);
    if matches!(family, "chebyshev1" | "elliptic") {
        s += &format!(r#", "ripple_db": {:.2}"#, 0.1 + 2.0 * rng.unit());
    }
    if matches!(family, "chebyshev2" | "elliptic") {
        s += &format!(r#", "attenuation_db": {:.1}"#, 30.0 + 50.0 * rng.unit());
    }
    s + "}"
}

pub fn design_sos(stage_json: &str) -> Vec<SosCoefs> {
    let text = format!(r#"{{"format": "ferrofx-chain", "version": 1, "stages": [{stage_json}]}}"#);
    let chain = Chain::from_json(&text).unwrap_or_else(|e| panic!("{stage_json}: {e}"));
    let designed = chain.design(FS).unwrap_or_else(|e| panic!("{stage_json}: {e}"));
    match &designed.stages[0] {
        DesignedStage::Sos(rows) => rows.iter().map(SosCoefs::from).collect(),
        other => panic!("{other:?}"),
    }
}

pub fn words(sec: &DeltaSection) -> Section {
    Section(sec.words())
}

