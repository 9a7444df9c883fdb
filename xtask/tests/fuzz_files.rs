//! A corpus run of the renderer binary on mutated inputs: WAV and FLAC files with flipped
//! bytes, truncations, header fields set to extremes (sizes, channels, rates, bits, block
//! alignment), huge metadata chunks; and mutated chain files. Every run must end on its
//! own (no hang), without a panic, with exit 0 and a finite output of the input's length,
//! or with one error line per failed file (exit 2, or 1 for a batch), nothing written for
//! it and an existing output untouched. `FERROFX_FUZZ_CASES` scales both corpora (CI:
//! 1,500 audio files, 300 chain files), `FERROFX_FUZZ_SEED` sets the seed.

use ferrofx_testkit::files::{dir_entries, read_wav, repo_root, stderr, write_wav_f32};
use ferrofx_testkit::{noise, xtask_command};
use ferrofx_testkit::{mutate::chain_mutant, Rng};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Runs with a deadline: a run past it is killed and reported as a hang. Its output is
/// read while it runs, so a long message cannot fill a pipe and stall it.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    use std::io::Read;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start xtask");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let t = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!("hang: killed after {limit:?}; stderr: {}", String::from_utf8_lossy(&stderr[..stderr.len().min(2000)]));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() }
}

/// Seed files: 16-bit stereo, 24-bit 3-channel, float32 mono and 64-bit float WAVs, and
/// a FLAC when the `flac` tool is there.
fn seed_audio(dir: &Path) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let wav = |channels: u16, bits: u16, float: bool, frames: usize| {
        let p = dir.join("seed.wav");
        let format = if float { hound::SampleFormat::Float } else { hound::SampleFormat::Int };
        let spec = hound::WavSpec { channels, sample_rate: 44_100, bits_per_sample: bits, sample_format: format };
        let mut w = hound::WavWriter::create(&p, spec).unwrap();
        let samples = ferrofx_testkit::noise(frames * channels as usize, u64::from(bits));
        for s in samples {
            match (float, bits) {
                (true, _) => w.write_sample(s).unwrap(),
                (false, 16) => w.write_sample((s * 32_000.0) as i16).unwrap(),
                (false, _) => w.write_sample((s * 8_000_000.0) as i32).unwrap(),
            }
        }
        w.finalize().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        bytes
    };
    seeds.push(wav(2, 16, false, 3_000));
    seeds.push(wav(3, 24, false, 2_000));
    seeds.push(wav(1, 32, true, 2_500));
    let pcm = wav(2, 16, false, 20_000);
    let (src, flac) = (dir.join("seed_src.wav"), dir.join("seed.flac"));
    std::fs::write(&src, &pcm).unwrap();
    if Command::new("flac").args(["-s", "-f", "-o"]).arg(&flac).arg(&src).status().is_ok_and(|s| s.success()) {
        seeds.push(std::fs::read(&flac).unwrap());
        std::fs::remove_file(&flac).unwrap();
    } else {
        eprintln!("no flac tool: the FLAC seed is left out");
    }
    std::fs::remove_file(&src).unwrap();
    seeds
}

/// One to three mutations of a seed file.
fn mutate_audio(r: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    // Offsets of interesting header fields in a canonical WAV and a FLAC STREAMINFO.
    const FIELDS: &[(usize, usize)] = &[(4, 4), (16, 4), (20, 2), (22, 2), (24, 4), (28, 4), (32, 2), (34, 2), (40, 4), (8, 4), (18, 4), (21, 3)];
    for _ in 0..1 + r.below(3) {
        match r.below(7) {
            0 | 1 => {
                // A header field set to an extreme.
                let (at, len) = *r.pick(FIELDS);
                let value = *r.pick(&[0u64, 1, 2, 0xFF, 0xFFFF, 0xFFFF_FFFF, 0x7FFF_FFFF, 65, 0xFFFE, 3, 64, 7, 8_000, 384_001]);
                for i in 0..len.min(v.len().saturating_sub(at)) {
                    v[at + i] = (value >> (8 * i)) as u8;
                }
            }
            2 if !v.is_empty() => {
                let i = r.below(v.len().min(128));
                v[i] = r.next_u64() as u8;
            }
            3 if !v.is_empty() => {
                let i = r.below(v.len());
                for b in v.iter_mut().skip(i).take(1 + r.below(64)) {
                    *b ^= r.next_u64() as u8;
                }
            }
            4 if !v.is_empty() => {
                let n = r.below(v.len());
                v.truncate(n);
            }
            5 => {
                // A chunk that declares a huge size, before the samples.
                let at = 12.min(v.len());
                let mut chunk = b"LIST".to_vec();
                chunk.extend_from_slice(&(*r.pick(&[0xFFFF_FFF0u32, 0x7FFF_FFFF, 100, 1])).to_le_bytes());
                v.splice(at..at, chunk);
            }
            _ => {
                let i = r.below(v.len() + 1);
                let junk: Vec<u8> = (0..r.below(32)).map(|_| r.next_u64() as u8).collect();
                v.splice(i..i, junk);
            }
        }
    }
    v
}

#[test]
fn mutated_audio_files_in_a_batch_never_panic_or_hang_and_fail_one_by_one() {
    let count = env_u64("FERROFX_FUZZ_CASES", 1_500) as usize;
    let seed = env_u64("FERROFX_FUZZ_SEED", 0xF11E);
    let dir = tempfile::tempdir().unwrap();
    let seeds = seed_audio(dir.path());
    let inputs_dir = dir.path().join("in");
    std::fs::create_dir(&inputs_dir).unwrap();
    let mut r = Rng::new(seed);
    let inputs: Vec<PathBuf> = (0..count)
        .map(|i| {
            let which = r.below(seeds.len());
            let ext = if seeds[which].starts_with(b"fLaC") { "flac" } else { "wav" };
            let p = inputs_dir.join(format!("m{i:05}.{ext}"));
            std::fs::write(&p, mutate_audio(&mut r, &seeds[which])).unwrap();
            p
        })
        .collect();
    let chain = repo_root().join("examples/chains/demo.json");
    let out_dir = dir.path().join("out");
    let mut total_failed = 0;
    // Batches of 250 so that one command line stays short.
    for batch in inputs.chunks(250) {
        let o = run_bounded(
            xtask_command!().args(["render", "--backend", "cpu", "--chain"]).arg(&chain).arg("--out-dir").arg(&out_dir).args(batch),
            Duration::from_secs(300),
        );
        let err = stderr(&o);
        assert!(!err.contains("panic"), "{err}");
        let failed: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(o.status.code(), Some(if failed.is_empty() { 0 } else { 1 }), "{err}");
        total_failed += failed.len();
        for input in batch {
            let name = input.file_name().unwrap().to_string_lossy();
            let out = out_dir.join(Path::new(&*name).with_extension("wav"));
            let named = failed.iter().any(|l| l.contains(&*name));
            assert_ne!(named, out.exists(), "{name}: either an error line or an output, never both or neither");
            if out.exists() {
                // A success is a float WAV with finite samples.
                let (_, planar) = read_wav(&out);
                assert!(planar.iter().flatten().all(|v| v.is_finite()), "{name}");
            }
        }
    }
    let leftovers: Vec<String> = dir_entries(&out_dir).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    println!("audio fuzz (seed {seed:#x}): {count} mutants, {total_failed} refused, {} rendered, 0 panics, 0 hangs", count - total_failed);
    assert!(total_failed > count / 10 && total_failed < count, "unbalanced corpus: {total_failed} of {count} refused");
}

#[test]
fn mutated_chain_files_exit_0_or_2_and_leave_an_existing_output_alone() {
    let count = env_u64("FERROFX_FUZZ_CASES", 1_500) / 5;
    let seed = env_u64("FERROFX_FUZZ_SEED", 0xC4A1);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(2_000, 1), noise(2_000, 2)], 48_000);
    let out = dir.path().join("out.wav");
    let chain = dir.path().join("chain.json");
    let (mut refused, mut rendered) = (0, 0);
    for n in 0..count {
        std::fs::write(&out, b"an earlier render").unwrap();
        std::fs::write(&chain, chain_mutant(seed, n)).unwrap();
        let o = run_bounded(
            xtask_command!().args(["render", "--backend", "cpu", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input),
            Duration::from_secs(120),
        );
        let err = stderr(&o);
        assert!(!err.contains("panic"), "mutant {n}: {err}");
        match o.status.code() {
            Some(0) => {
                let (_, planar) = read_wav(&out);
                assert_eq!(planar[0].len(), 2_000, "mutant {n}");
                assert!(planar.iter().flatten().all(|v| v.is_finite()), "mutant {n}");
                rendered += 1;
            }
            Some(2) => {
                assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "mutant {n}: {err}");
                // One readable line: the file's content is quoted in excerpts, not whole.
                assert!(err.len() < 2_000, "mutant {n}: an error line of {} bytes: {}", err.len(), &err[..300]);
                assert_eq!(std::fs::read(&out).unwrap(), b"an earlier render", "mutant {n}: the existing output changed");
                refused += 1;
            }
            other => panic!("mutant {n}: exit {other:?}: {err}"),
        }
    }
    assert_eq!(dir_entries(dir.path()), vec!["chain.json", "in.wav", "out.wav"], "temporary files left");
    println!("chain-file fuzz of the binary (seed {seed:#x}): {count} mutants, {refused} refused, {rendered} rendered, 0 panics, 0 hangs");
    assert!(refused > 0 && rendered > 0);
}
