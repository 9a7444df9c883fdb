//! Chain-file mutation for fuzzing: structure-aware changes (values replaced by extremes
//! or other types, fields dropped or added, stages repeated, names changed) and
//! text-level damage (flipped bytes, truncation, duplicate keys, overlong numbers), from
//! a seed corpus that covers every stage type of the contract.

use crate::Rng;
use serde_json::{json, Map, Value};

/// One valid chain per stage type and response, plus mixed chains: the seed corpus.
pub fn seed_chains() -> Vec<String> {
    let stages = vec![
        json!({"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": 80}),
        json!({"type": "chebyshev1", "response": "lowpass", "order": 6, "cutoff_hz": 8000, "ripple_db": 0.5}),
        json!({"type": "chebyshev2", "response": "bandstop", "order": 4, "cutoff_hz": [900, 1100], "attenuation_db": 40}),
        json!({"type": "elliptic", "response": "bandpass", "order": 3, "cutoff_hz": [300, 3400], "ripple_db": 1, "attenuation_db": 60}),
        json!({"type": "bessel", "response": "lowpass", "order": 5, "cutoff_hz": 2000}),
        json!({"type": "linkwitz_riley", "response": "lowpass", "order": 4, "cutoff_hz": 2500}),
        json!({"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1.4, "gain_db": -6}),
        json!({"type": "biquad", "kind": "low_shelf", "freq_hz": 120, "q": 0.7, "gain_db": 3, "label": "warmth"}),
        json!({"type": "biquad", "kind": "notch", "freq_hz": 50, "q": 10, "enabled": false}),
        json!({"type": "fir", "response": "lowpass", "taps": 101, "cutoff_hz": 1000, "window": "hamming"}),
        json!({"type": "fir", "response": "bandpass", "taps": 63, "cutoff_hz": [300, 3000], "window": "kaiser", "beta": 8.6}),
        json!({"type": "fir", "coefficients": [0.25, 0.5, 0.25]}),
        json!({"type": "sos", "sections": [[1, 0, 0, 1, -0.5, 0], [0.5, 0.5, 0, 1, 0.2, 0.1]]}),
        json!({"type": "gain", "gain_db": -3}),
    ];
    let wrap = |s: Vec<Value>| json!({"format": "ferrofx-chain", "version": 1, "stages": s}).to_string();
    let mut out: Vec<String> = stages.iter().map(|s| wrap(vec![s.clone()])).collect();
    out.push(wrap(stages.clone()));
    out.push(wrap(stages.iter().rev().cloned().collect()));
    out.push(wrap(vec![]));
    out
}

/// Values that sit on or past a limit of the contract, or break a type.
const EXTREMES: &[f64] = &[
    0.0, -0.0, -1.0, 0.5, 1.0, 2.0, 3.0, 24.0, 25.0, 1e-300, 5e-324, 1e-45, 1e30, 1e31, 1e39, 1e300, 1.7976931348623157e308,
    -1e300, 600.0, 600.5, 6200.0, -6200.0, 700.0, 713.0, 65_536.0, 65_537.0, 1_048_576.0, 1_048_577.0, 4.5, 23_999.0,
    24_000.0, 192_000.0, 9_007_199_254_740_993.0, 18_446_744_073_709_551_615.0,
];

/// A name to put where a name goes (see [`OTHER_NAMES`]).
fn name(r: &mut Rng) -> String {
    let types = ferrofx::chain::STAGE_TYPES;
    let i = r.below(types.len() + OTHER_NAMES.len());
    types.get(i).copied().unwrap_or_else(|| OTHER_NAMES[i - types.len()]).to_string()
}

/// Names to put where a name goes: every stage type of the format (the core's list,
/// [`ferrofx::chain::STAGE_TYPES`]) and these.
const OTHER_NAMES: &[&str] = &[
    "lowpass", "highpass", "bandpass", "bandstop", "bandpass_skirt", "notch", "allpass", "peaking", "low_shelf",
    "high_shelf", "rectangular", "hann", "hamming", "blackman", "kaiser", "ferrofx-chain", "", "Lowpass", "\u{0}", "é",
];

const KEYS: &[&str] = &[
    "type", "response", "order", "cutoff_hz", "ripple_db", "attenuation_db", "kind", "freq_hz", "q", "gain_db", "taps",
    "window", "beta", "coefficients", "sections", "enabled", "label", "format", "version", "stages", "extra",
];

fn random_value(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth > 2 { 5 } else { 8 }) {
        0 => json!(*r.pick(EXTREMES)),
        1 => json!(name(r)),
        2 => Value::Null,
        3 => json!(r.chance(0.5)),
        4 => json!(r.next_u64() % 100_000),
        5 => Value::Array((0..r.below(8)).map(|_| random_value(r, depth + 1)).collect()),
        6 => Value::Array((0..6).map(|_| json!(*r.pick(EXTREMES))).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..r.below(4) {
                m.insert(r.pick(KEYS).to_string(), random_value(r, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Every node of a value, as a path of object keys and array indices.
fn paths(v: &Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for k in m.keys() {
                prefix.push(PathStep::Key(k.clone()));
                paths(&m[k], prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, item) in a.iter().enumerate().take(64) {
                prefix.push(PathStep::Index(i));
                paths(item, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    path.iter().fold(v, |v, step| match step {
        PathStep::Key(k) => &mut v[k.as_str()],
        PathStep::Index(i) => &mut v[*i],
    })
}

/// One structural change to a parsed chain.
fn mutate_value(r: &mut Rng, root: &mut Value) {
    let mut all = Vec::new();
    paths(root, &mut Vec::new(), &mut all);
    let path = r.pick(&all).clone();
    let node = at(root, &path);
    match r.below(9) {
        0 | 1 => *node = json!(*r.pick(EXTREMES)),
        2 => *node = random_value(r, 0),
        3 => {
            if let Value::Object(m) = node {
                if !m.is_empty() {
                    let k = m.keys().nth(r.below(m.len())).cloned().unwrap_or_default();
                    m.shift_remove(&k);
                }
            }
        }
        4 => {
            if let Value::Object(m) = node {
                m.insert(r.pick(KEYS).to_string(), random_value(r, 1));
            }
        }
        5 => {
            // Repeat an array's items (many stages, many sections, long FIRs).
            if let Value::Array(a) = node {
                if let Some(item) = a.first().cloned() {
                    let times = *r.pick(&[2usize, 10, 100, 1000, 5000]);
                    a.extend(std::iter::repeat_n(item, times));
                }
            }
        }
        6 => *node = json!(name(r)),
        7 => {
            if let Value::Array(a) = node {
                a.clear();
            }
        }
        _ => {
            if let Value::Number(n) = node {
                let v = n.as_f64().unwrap_or(1.0);
                *node = json!(v * r.pick(&[-1.0, 0.5, 2.0, 1e10, 1e-10, 1.000_000_1]));
            }
        }
    }
}

/// Text-level damage to a serialised chain.
fn mutate_text(r: &mut Rng, text: &mut String) {
    let mut bytes = std::mem::take(text).into_bytes();
    match r.below(6) {
        0 if !bytes.is_empty() => {
            let i = r.below(bytes.len());
            bytes[i] = r.next_u64() as u8;
        }
        1 if !bytes.is_empty() => {
            let n = r.below(bytes.len());
            bytes.truncate(n);
        }
        2 => {
            // A key given twice.
            let s = String::from_utf8_lossy(&bytes).into_owned();
            let key = r.pick(KEYS);
            let needle = format!("\"{key}\":");
            bytes = match s.find(&needle) {
                Some(i) => format!("{}\"{key}\": 1, {}", &s[..i], &s[i..]).into_bytes(),
                None => s.into_bytes(),
            };
        }
        3 => {
            let i = r.below(bytes.len() + 1);
            let junk = *r.pick(&["1e999", "-", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "\"", "}", "null", "\u{feff}", "0x10", ",,"]);
            bytes.splice(i..i, junk.bytes());
        }
        4 => {
            // Deep nesting.
            let depth = *r.pick(&[10usize, 200, 5000]);
            let s = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            bytes.extend_from_slice(s.as_bytes());
        }
        _ => {
            let i = r.below(bytes.len() + 1);
            bytes.insert(i, r.next_u64() as u8);
        }
    }
    *text = String::from_utf8_lossy(&bytes).into_owned();
}

/// The `n`-th mutant of the seed corpus for `seed`: one to four changes, structural
/// mostly, text-level sometimes. The same (seed, n) gives the same text everywhere.
pub fn chain_mutant(seed: u64, n: u64) -> String {
    let mut r = Rng::new(seed ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let corpus = seed_chains();
    let base = r.pick(&corpus).clone();
    let mut value: Value = serde_json::from_str(&base).expect("the seed corpus is valid JSON");
    for _ in 0..1 + r.below(3) {
        mutate_value(&mut r, &mut value);
    }
    let mut text = value.to_string();
    if r.chance(0.25) {
        mutate_text(&mut r, &mut text);
    }
    text
}

#[cfg(test)]
mod tests {
    /// The seed corpus has a chain of every stage type of the format (the core's list).
    #[test]
    fn the_seed_corpus_covers_every_stage_type() {
        let seeds = super::seed_chains();
        for t in ferrofx::chain::STAGE_TYPES {
            assert!(seeds.iter().any(|c| c.contains(&format!(r#""type":"{t}""#))), "no seed chain has a `{t}` stage");
        }
    }
}
