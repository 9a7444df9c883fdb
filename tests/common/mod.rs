//! Helpers shared by the integration tests: the SciPy reference vectors and
//! error measures.
#![allow(dead_code)]

pub mod retune;

use ferrofx::chain::{Chain, Stage, StageKind};
use ferrofx::design::{BiquadKind, Cutoff, IirFamily, Response, Window};
use ferrofx::engine::{Engine, EngineOptions};
use ferrofx::DesignedChain;
use serde_json::Value;
use std::path::PathBuf;

/// The reference set (see `ferrofx_testkit::reference_dir`).
pub fn reference_dir() -> PathBuf {
    ferrofx_testkit::reference_dir()
}

pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// One reference case.
pub struct Case {
    pub id: String,
    pub kind: String,
    pub family: String,
    pub tags: Vec<String>,
    pub fs: f64,
    pub json: Value,
    /// Planar input and expected output, `channels` x `samples`.
    pub input: Vec<Vec<f32>>,
    pub expected: Vec<Vec<f32>>,
}

impl Case {
    pub fn is_lowfreq(&self) -> bool {
        self.tags.iter().any(|t| t == "lowfreq")
    }

    /// The stage described by the case's `spec`.
    pub fn spec_stage(&self) -> Stage {
        let s = &self.json["spec"];
        let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{}: spec.{k}", self.id));
        let cutoff = |v: &Value| match v {
            Value::Array(a) => Cutoff::Band(a[0].as_f64().unwrap(), a[1].as_f64().unwrap()),
            v => Cutoff::Single(v.as_f64().unwrap()),
        };
        let response = |name: &str| match name {
            "lowpass" => Response::Lowpass,
            "highpass" => Response::Highpass,
            "bandpass" => Response::Bandpass,
            "bandstop" => Response::Bandstop,
            other => panic!("{}: response {other}", self.id),
        };
        match self.kind.as_str() {
            "iir" => {
                let family = match s["family"].as_str().unwrap() {
                    "butterworth" => IirFamily::Butterworth,
                    "chebyshev1" => IirFamily::Chebyshev1 { ripple_db: f("ripple_db") },
                    "chebyshev2" => IirFamily::Chebyshev2 { attenuation_db: f("attenuation_db") },
                    "elliptic" => IirFamily::Elliptic { ripple_db: f("ripple_db"), attenuation_db: f("attenuation_db") },
                    "bessel" => IirFamily::Bessel,
                    other => panic!("{}: family {other}", self.id),
                };
                Stage::new(StageKind::Iir {
                    family,
                    response: response(s["btype"].as_str().unwrap()),
                    order: s["order"].as_u64().unwrap() as usize,
                    cutoff: cutoff(&s["cutoff_hz"]),
                    matched: false,
                })
            }
            "rbj" => {
                let kind = match s["shape"].as_str().unwrap() {
                    "lowshelf" => BiquadKind::LowShelf,
                    "highshelf" => BiquadKind::HighShelf,
                    "bandpass_peak" => BiquadKind::Bandpass,
                    other => BiquadKind::from_name(other).unwrap_or_else(|| panic!("{}: shape {other}", self.id)),
                };
                let gain_db = kind.uses_gain().then(|| f("gain_db"));
                Stage::new(StageKind::Biquad { kind, freq_hz: f("f0_hz"), q: f("q"), gain_db, matched: false })
            }
            "fir" => {
                let window = match s["window"].as_str().unwrap() {
                    "hamming" => Window::Hamming,
                    "hann" => Window::Hann,
                    "blackman" => Window::Blackman,
                    "boxcar" | "rectangular" => Window::Rectangular,
                    "kaiser" => Window::Kaiser { beta: f("kaiser_beta") },
                    other => panic!("{}: window {other}", self.id),
                };
                Stage::new(StageKind::FirDesign {
                    response: response(s["ftype"].as_str().unwrap()),
                    taps: s["numtaps"].as_u64().unwrap() as usize,
                    cutoff: cutoff(&s["cutoff_hz"]),
                    window,
                })
            }
            other => panic!("{}: kind {other}", self.id),
        }
    }

    /// The stage running the case's given coefficients (`sos` rows or FIR `taps`).
    pub fn given_stage(&self) -> Stage {
        if self.kind == "fir" {
            let taps = self.json["taps"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            Stage::new(StageKind::FirGiven { coefficients: taps })
        } else {
            let rows = self.json["sos"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let r: Vec<f64> = r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
                    [r[0], r[1], r[2], r[3], r[4], r[5]]
                })
                .collect();
            Stage::sos(rows)
        }
    }

    pub fn freqs_and_mag(&self) -> (Vec<f64>, Vec<f64>) {
        let v = |k: &str| self.json[k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        (v("freqs_hz"), v("mag"))
    }
}

fn planar(flat: Vec<f32>, channels: usize) -> Vec<Vec<f32>> {
    let n = flat.len() / channels;
    flat.chunks_exact(n).map(|c| c.to_vec()).collect()
}

pub fn load_cases() -> Vec<Case> {
    let dir = reference_dir();
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("index.json"))
            .unwrap_or_else(|e| panic!("{e}: {}", ferrofx_testkit::reference_hint(&dir))),
    )
    .unwrap();
    let listed = index["cases"].as_array().unwrap();
    if let Some(count) = index["count"].as_u64() {
        assert_eq!(listed.len() as u64, count, "{}: the index lists {} of {count} cases", dir.display(), listed.len());
    }
    listed
        .iter()
        .map(|c| {
            let id = c["id"].as_str().unwrap().to_string();
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join(format!("cases/{id}.json"))).unwrap()).unwrap();
            let channels = json["input"]["channels"].as_u64().unwrap() as usize;
            let input = planar(read_f32(&dir.join(json["input"]["file"].as_str().unwrap())), channels);
            let expected = planar(read_f32(&dir.join(json["expected"]["file"].as_str().unwrap())), channels);
            let spec = &json["spec"];
            let family = match spec["kind"].as_str().unwrap() {
                "iir" => spec["family"].as_str().unwrap().to_string(),
                k => k.to_string(),
            };
            Case {
                kind: spec["kind"].as_str().unwrap().to_string(),
                family,
                tags: c["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect(),
                fs: spec["fs"].as_f64().unwrap(),
                id,
                json,
                input,
                expected,
            }
        })
        .collect()
}

/// Runs `input` through a fresh engine in blocks of `block` frames.
pub fn run_engine(designed: &DesignedChain, input: &[Vec<f32>], block: usize, options: EngineOptions) -> Vec<Vec<f32>> {
    let mut engine = Engine::with_options(designed, input.len(), block, options);
    let mut out: Vec<Vec<f32>> = input.to_vec();
    let n = out[0].len();
    let mut start = 0;
    while start < n {
        let end = (start + block).min(n);
        let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[start..end]).collect();
        engine.process(&mut slices);
        start = end;
    }
    out
}

/// `max |y - y_ref| / max |y_ref|`, the worst over channels.
pub fn rel_error(y: &[Vec<f32>], y_ref: &[Vec<f32>]) -> f64 {
    y.iter()
        .zip(y_ref)
        .map(|(a, b)| {
            let peak = b.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64));
            let err = a.iter().zip(b).fold(0.0f64, |m, (x, r)| m.max((*x as f64 - *r as f64).abs()));
            if peak > 0.0 { err / peak } else { err }
        })
        .fold(0.0, f64::max)
}

/// The chain of one stage.
pub fn chain_of(stage: Stage) -> Chain {
    Chain::from(stage)
}

/// A cascade in plain float64 transposed direct form II, sample by sample from zero
/// state: the sequential truth the SIMD kernels are held to.
pub fn sos_f64(sections: &[ferrofx::design::Sos], x: &[f32]) -> Vec<f64> {
    let coefs: Vec<ferrofx::design::Sos> = sections.iter().map(|c| c.normalized()).collect();
    let mut s = vec![[0.0f64; 2]; coefs.len()];
    x.iter()
        .map(|&v| {
            let mut v = f64::from(v);
            for (c, st) in coefs.iter().zip(s.iter_mut()) {
                let y = c.b[0] * v + st[0];
                st[0] = c.b[1] * v - c.a[1] * y + st[1];
                st[1] = c.b[2] * v - c.a[2] * y;
                v = y;
            }
            v
        })
        .collect()
}

/// `input` (planar) through `process` in place, in blocks of the given lengths cycled
/// until the end; `process` gets each block's channel slices and its length.
pub fn in_cuts(input: &[Vec<f32>], cuts: &[usize], mut process: impl FnMut(&mut [&mut [f32]], usize)) -> Vec<Vec<f32>> {
    let frames = input.iter().map(|b| b.len()).min().unwrap_or(0);
    let mut out = input.to_vec();
    let mut start = 0;
    for len in cuts.iter().cycle() {
        if start >= frames {
            break;
        }
        let end = (start + len).min(frames);
        let mut s: Vec<&mut [f32]> = out.iter_mut().map(|b| &mut b[start..end]).collect();
        process(&mut s, end - start);
        start = end;
    }
    out
}

/// Planar channels delayed by `block` frames (zeros first, the length kept): an offloaded
/// stream is its CPU reference one block late.
pub fn one_block_late(y: Vec<Vec<f32>>, block: usize) -> Vec<Vec<f32>> {
    y.into_iter()
        .map(|c| {
            let mut d = vec![0.0f32; block];
            d.extend_from_slice(&c[..c.len() - block]);
            d
        })
        .collect()
}
