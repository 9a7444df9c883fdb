//! The SciPy reference vectors the tests read: where the set is, and its cases (a
//! chain stage, the input and SciPy's float64 output, as float32).

use ferrofx::chain::{Stage, StageKind};
use ferrofx::design::{BiquadKind, Cutoff, IirFamily, Response, Window};
use serde_json::Value;

/// The SciPy reference set the tests read: `FERROFX_REFERENCE_DIR` when set, otherwise
/// the set `scripts/scipy_reference.py vectors` generates into the target folder
/// (`$CARGO_TARGET_DIR/ferrofx-generated/reference`, as `scripts/test.sh` does). Any
/// other set, such as the project's shared one, is named through the variable.
pub fn reference_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("FERROFX_REFERENCE_DIR") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(std::path::PathBuf::from))
        .unwrap_or_else(|| {
            // The workspace's target folder, found from this crate's folder at run time
            // when cargo says where the test's package is (see `xtask`'s `repo_root`).
            let here = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
            let workspace = here.and_then(|d| d.ancestors().find(|a| a.join("Cargo.lock").exists()).map(|a| a.to_path_buf()));
            workspace.unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).join("target")
        });
    target.join("ferrofx-generated/reference")
}

/// How to get a reference set, for the message when none is found at `dir`.
pub fn reference_hint(dir: &std::path::Path) -> String {
    format!(
        "no reference set at {}: generate one with `python scripts/scipy_reference.py vectors {}` (scripts/test.sh does), or name one with FERROFX_REFERENCE_DIR",
        dir.display(),
        dir.display()
    )
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
            .unwrap_or_else(|e| panic!("{e}: {}", reference_hint(&dir))),
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

