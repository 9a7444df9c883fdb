//! Helpers shared by the renderer's end-to-end tests: the binary, seeded noise, WAV
//! files, the engine's in-process output to compare with.
#![allow(dead_code)]

use ferrofx::{Chain, Engine};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

pub fn repo_root() -> PathBuf {
    // Read at run time (cargo sets it for the test process): a test binary that cargo
    // reuses from a build of another checkout sharing the target folder would otherwise
    // point into that checkout.
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR"))).join("..")
}

/// The reference set (see `ferrofx_testkit::reference_dir`).
pub fn reference_dir() -> PathBuf {
    ferrofx_testkit::reference_dir()
}

pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    ferrofx_testkit::noise(n, seed)
}

pub fn write_wav_f32(path: &Path, planar: &[Vec<f32>], fs: u32) {
    let spec = hound::WavSpec { channels: planar.len() as u16, sample_rate: fs, bits_per_sample: 32, sample_format: hound::SampleFormat::Float };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..planar[0].len() {
        for ch in planar {
            w.write_sample(ch[i]).unwrap();
        }
    }
    w.finalize().unwrap();
}

pub fn read_wav(path: &Path) -> (hound::WavSpec, Vec<Vec<f32>>) {
    let mut r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let spec = r.spec();
    assert_eq!((spec.sample_format, spec.bits_per_sample), (hound::SampleFormat::Float, 32), "output must be float32 WAV");
    let flat: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).collect();
    let c = spec.channels as usize;
    let planar = (0..c).map(|ch| flat.iter().skip(ch).step_by(c).copied().collect()).collect();
    (spec, planar)
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run xtask");
    eprintln!("stdout: {}\nstderr: {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn engine_output(chain: &Chain, fs: f64, input: &[Vec<f32>], block: usize) -> Vec<Vec<f32>> {
    let designed = chain.design(fs).unwrap();
    let mut engine = Engine::new(&designed, input.len(), block);
    let mut out = input.to_vec();
    let n = out[0].len();
    for start in (0..n).step_by(block) {
        let end = (start + block).min(n);
        let mut s: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[start..end]).collect();
        engine.process(&mut s);
    }
    out
}

pub fn max_rel_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    let peak = b.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs() as f64));
    let err = a.iter().flatten().zip(b.iter().flatten()).fold(0.0f64, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()));
    err / peak
}

pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}
