//! Files and programs for the end-to-end tests: WAV files written and read (float32, or
//! any format as full-scale values), chain files, a command run with its output shown, a
//! folder's entries, the repository's root.
//! [`xtask_command!`](crate::xtask_command) names the `xtask` binary of the calling test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A `Command` for the workspace's `xtask` binary, from an `xtask` integration test
/// (cargo names the binary for those: `CARGO_BIN_EXE_xtask`).
#[macro_export]
macro_rules! xtask_command {
    () => {
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
    };
}

/// The workspace's root, for a test of a crate one folder below it.
pub fn repo_root() -> PathBuf {
    // Read at run time (cargo sets it for the test process): a test binary that cargo
    // reuses from a build of another checkout sharing the target folder would otherwise
    // point into that checkout.
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")).join("..")
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

pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A chain file of `stages` (the JSON of each, comma-separated) written as `dir/name`.
pub fn chain_file(dir: &Path, name: &str, stages: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!(r#"{{"format": "ferrofx-chain", "version": 1, "stages": [{stages}]}}"#)).unwrap();
    p
}

/// A chain that passes its input through (a 0 dB gain stage), as `dir/unity.json`.
pub fn unity_chain(dir: &Path) -> PathBuf {
    chain_file(dir, "unity.json", r#"{"type": "gain", "gain_db": 0}"#)
}

/// A WAV's samples as `f64` in full-scale units (integer samples over 2^(bits-1)), by
/// hound, with the header's format and the speaker mask of a WAVE_FORMAT_EXTENSIBLE
/// header (its `fmt ` chunk read here; hound does not give it).
pub fn read_wav_any(path: &Path) -> (hound::WavSpec, Vec<Vec<f64>>, Option<u32>) {
    let mut r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let spec = r.spec();
    let flat: Vec<f64> = match spec.sample_format {
        hound::SampleFormat::Float => r.samples::<f32>().map(|s| f64::from(s.unwrap())).collect(),
        hound::SampleFormat::Int => {
            let scale = (1u64 << (spec.bits_per_sample - 1)) as f64;
            r.samples::<i32>().map(|s| f64::from(s.unwrap()) / scale).collect()
        }
    };
    let c = spec.channels as usize;
    let planar = (0..c).map(|ch| flat.iter().skip(ch).step_by(c).copied().collect()).collect();
    let bytes = std::fs::read(path).unwrap();
    let fmt = bytes.windows(4).position(|w| w == b"fmt ").unwrap() + 8;
    let tag = u16::from_le_bytes([bytes[fmt], bytes[fmt + 1]]);
    let mask = (tag == 0xFFFE).then(|| u32::from_le_bytes(bytes[fmt + 20..fmt + 24].try_into().unwrap()));
    (spec, planar, mask)
}
