//! Measures candidate SOS structures on a SciPy reference set (IIR and
//! biquad cases, given `sos`), the measurement behind the choice in `src/sos.rs`.
//!
//! `cargo run --release -p ferrofx-probes --example structure_survey [REFERENCE_DIR]`
//! (default: the set `scripts/scipy_reference.py vectors` generates into `target/ferrofx-generated/reference`). Prints, per structure, how many cases miss the
//! 1e-4 tolerance and the 1e-5 aim, and the worst error overall and on `lowfreq` cases.

use ferrofx::chain::{Chain, Stage};
use ferrofx::engine::Engine;
use serde_json::Value;
use std::path::PathBuf;

fn read_f32(path: PathBuf) -> Vec<f32> {
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Transposed direct form II with coefficients and state of type `T`.
fn tdf2<T>(rows: &[[f64; 6]], x: &[f32], conv: impl Fn(f64) -> T) -> Vec<f32>
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + Into<f64> + From<f32>,
{
    let zero = conv(0.0);
    let c: Vec<[T; 5]> = rows
        .iter()
        .map(|r| [conv(r[0] / r[3]), conv(r[1] / r[3]), conv(r[2] / r[3]), conv(r[4] / r[3]), conv(r[5] / r[3])])
        .collect();
    let mut s = vec![[zero, zero]; rows.len()];
    x.iter()
        .map(|&v| {
            let mut v: T = T::from(v);
            for (k, st) in c.iter().zip(s.iter_mut()) {
                let y = k[0] * v + st[0];
                st[0] = k[1] * v - k[3] * y + st[1];
                st[1] = k[2] * v - k[4] * y;
                v = y;
            }
            let out: f64 = v.into();
            out as f32
        })
        .collect()
}

/// Direct form I, f32 state and arithmetic, f64-designed coefficients rounded to f32.
fn df1_f32(rows: &[[f64; 6]], x: &[f32]) -> Vec<f32> {
    let c: Vec<[f32; 5]> = rows
        .iter()
        .map(|r| [(r[0] / r[3]) as f32, (r[1] / r[3]) as f32, (r[2] / r[3]) as f32, (r[4] / r[3]) as f32, (r[5] / r[3]) as f32])
        .collect();
    let mut s = vec![[0.0f32; 4]; rows.len()];
    x.iter()
        .map(|&v| {
            let mut v = v;
            for (k, st) in c.iter().zip(s.iter_mut()) {
                let y = k[0] * v + k[1] * st[0] + k[2] * st[1] - k[3] * st[2] - k[4] * st[3];
                *st = [v, st[0], y, st[2]];
                v = y;
            }
            v
        })
        .collect()
}

fn rel_err(y: &[f32], r: &[f32]) -> f64 {
    let peak = r.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64));
    y.iter().zip(r).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - *b as f64).abs())) / peak
}

fn main() {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target/ferrofx-generated/reference"));
    let index: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let names = ["f32 TDF-II (f32 coefs)", "f32 DF-I (f32 coefs)", "f32 TDF-II state, f64 coefs", "f64 TDF-II (engine)"];
    let mut stats = vec![(0usize, 0usize, 0.0f64, 0.0f64); names.len()];
    let mut count = 0;
    for c in index["cases"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("cases/{id}.json"))).unwrap()).unwrap();
        if case["spec"]["kind"] == "fir" {
            continue;
        }
        count += 1;
        let lowfreq = c["tags"].as_array().unwrap().iter().any(|t| t == "lowfreq");
        let rows: Vec<[f64; 6]> =
            serde_json::from_value(case["sos"].clone()).expect("sos rows of six numbers");
        let input = read_f32(dir.join(case["input"]["file"].as_str().unwrap()));
        let expected = read_f32(dir.join(case["expected"]["file"].as_str().unwrap()));
        let n = input.len() / 2;
        let designed = Chain::from(Stage::sos(rows.clone())).design(case["spec"]["fs"].as_f64().unwrap()).unwrap();
        for ch in 0..2 {
            let x = &input[ch * n..(ch + 1) * n];
            let r = &expected[ch * n..(ch + 1) * n];
            let mut engine_out = x.to_vec();
            Engine::new(&designed, 1, n).process(&mut [&mut engine_out[..]]);
            let outs = [
                tdf2::<f32>(&rows, x, |v| v as f32),
                df1_f32(&rows, x),
                // f64 coefficients applied to an f32 state: products rounded to f32.
                {
                    let mut s = vec![[0.0f32; 2]; rows.len()];
                    x.iter()
                        .map(|&v| {
                            let mut v = v as f64;
                            for (row, st) in rows.iter().zip(s.iter_mut()) {
                                let k: Vec<f64> = row.iter().map(|c| c / row[3]).collect();
                                let y = k[0] * v + st[0] as f64;
                                st[0] = (k[1] * v - k[4] * y + st[1] as f64) as f32;
                                st[1] = (k[2] * v - k[5] * y) as f32;
                                v = y;
                            }
                            v as f32
                        })
                        .collect()
                },
                engine_out,
            ];
            for (s, y) in stats.iter_mut().zip(&outs) {
                let e = rel_err(y, r);
                if ch == 0 {
                    s.0 += (e > 1e-4) as usize;
                    s.1 += (e > 1e-5) as usize;
                }
                s.2 = s.2.max(e);
                if lowfreq {
                    s.3 = s.3.max(e);
                }
            }
        }
    }
    println!("{count} IIR/biquad reference cases (given sos), channel 0 counts, worst over both channels");
    println!("| structure | cases > 1e-4 | cases > 1e-5 | worst | worst lowfreq |");
    println!("|---|---|---|---|---|");
    for (name, s) in names.iter().zip(&stats) {
        println!("| {name} | {} | {} | {:.1e} | {:.1e} |", s.0, s.1, s.2, s.3);
    }
}
