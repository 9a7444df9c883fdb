//! The renderer as a careful file tool: one test per class of what it must refuse, write
//! or keep (non-finite output, sizes and memory, inconsistent or damaged audio, special
//! output paths, durability and leftovers, duplicate keys, batches). Every path a test
//! touches is inside its own temporary folder.

use ferrofx_testkit::engine::max_rel_diff;
use ferrofx_testkit::files::{chain_file, dir_entries, read_wav, run, stderr, unity_chain as unity, write_wav_f32};
use ferrofx_testkit::{noise, xtask_command};
use std::path::{Path, PathBuf};
use std::process::Output;

fn render(chain: &Path, input: &Path, output: &Path, extra: &[&str]) -> Output {
    run(xtask_command!().arg("render").arg("--chain").arg(chain).args(extra).arg("--output").arg(output).arg(input))
}

/// Exit 2, one `error:` line naming each of `words`, and no panic.
#[track_caller]
fn assert_refused(o: &Output, words: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.starts_with("error: ") && e.trim_end().lines().count() == 1, "one error line expected: {e}");
    assert!(!e.contains("panic"), "{e}");
    for w in words {
        assert!(e.contains(w), "{w:?} not in {e}");
    }
}

/// Only `expected` is left in `dir` (no temporary files).
#[track_caller]
fn assert_only(dir: &Path, expected: &[&str]) {
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(dir_entries(dir), want);
}

fn stereo_input(dir: &Path, frames: usize) -> (PathBuf, Vec<Vec<f32>>) {
    let input = vec![noise(frames, 1), noise(frames, 2)];
    let p = dir.join("in.wav");
    write_wav_f32(&p, &input, 48_000);
    (p, input)
}

#[test]
fn non_finite_output_fails_naming_the_stage_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 5_000);
    let out = dir.path().join("out.wav");
    std::fs::write(&out, b"an earlier render").unwrap();
    // Each case is within every per-value bound, but together the stages overflow:
    // (chain, the stage that first leaves float32's range).
    let big_sos = r#"{"type": "sos", "sections": [[1e29, 0, 0, 1, -0.5, 0]]}"#;
    let cases = [
        (format!(r#"{{"type": "gain", "gain_db": 0}}, {big_sos}, {big_sos}"#), "stage 2 (sos)"),
        (r#"{"type": "gain", "gain_db": 600}, {"type": "biquad", "kind": "lowpass", "freq_hz": 1000, "q": 0.7}, {"type": "gain", "gain_db": 600}"#.to_string(), "stage 2 (gain)"),
        (r#"{"type": "gain", "gain_db": 500}, {"type": "fir", "coefficients": [1e20, 0.5]}"#.to_string(), "stage 1 (fir)"),
    ];
    for (stages, guilty) in &cases {
        let chain = chain_file(dir.path(), "c.json", stages);
        let o = render(&chain, &input, &out, &[]);
        assert_refused(&o, &["non-finite at frame", guilty, "nothing written"]);
        assert_eq!(std::fs::read(&out).unwrap(), b"an earlier render", "{stages}");
    }
    // 10,000 gain sections whose product passes the float range.
    let many = vec![r#"{"type": "gain", "gain_db": 60}"#; 10_000].join(", ");
    let chain = chain_file(dir.path(), "c.json", &many);
    assert_refused(&render(&chain, &input, &out, &[]), &["non-finite", "stage 12 (gain)"]);
    assert_only(dir.path(), &["c.json", "in.wav", "out.wav"]);
}

#[test]
fn oversized_chain_files_and_block_sizes_exit_2_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 1_000);
    let out = dir.path().join("out.wav");
    // An endless chain file: a FIFO fed with zeros until the reader stops.
    let fifo = dir.path().join("endless.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let feeder = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            let zeros = vec![0u8; 1 << 16];
            while f.write_all(&zeros).is_ok() {}
        })
    };
    let o = render(&fifo, &input, &out, &[]);
    assert_refused(&o, &["larger than 128 MiB"]);
    feeder.join().unwrap();
    for block in ["1000000000000", "18446744073709551615", "0", "1048577"] {
        let o = render(&unity(dir.path()), &input, &out, &["--block-size", block]);
        assert_eq!(o.status.code(), Some(2), "--block-size {block}");
        assert!(stderr(&o).contains("1048576") || stderr(&o).contains("not a whole number"), "{}", stderr(&o));
        assert!(!out.exists());
    }
    // The largest block size works.
    assert!(render(&unity(dir.path()), &input, &out, &["--block-size", "1048576"]).status.success());
    assert_only(dir.path(), &["endless.json", "in.wav", "out.wav", "unity.json"]);
}

#[test]
fn half_a_million_biquad_stages_still_render() {
    let dir = tempfile::tempdir().unwrap();
    let (input, samples) = stereo_input(dir.path(), 64);
    // Peaking biquads of 0 dB are exact identities: the output is the input.
    let stages = vec![r#"{"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1, "gain_db": 0}"#; 500_000].join(",");
    let chain = chain_file(dir.path(), "big.json", &stages);
    let out = dir.path().join("out.wav");
    assert!(render(&chain, &input, &out, &["--backend", "cpu"]).status.success());
    let (_, got) = read_wav(&out);
    assert!(max_rel_diff(&got, &samples) < 1e-5);
}

/// A WAV of `frames` stereo 16-bit frames with one header field changed.
fn pcm16_wav(frames: usize, patch: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let data = frames * 4;
    let mut v = Vec::new();
    v.extend_from_slice(b"RIFF");
    v.extend_from_slice(&(36 + data as u32).to_le_bytes());
    v.extend_from_slice(b"WAVEfmt ");
    for x in [16u32.to_le_bytes().to_vec(), 1u16.to_le_bytes().to_vec(), 2u16.to_le_bytes().to_vec(), 48_000u32.to_le_bytes().to_vec(), (48_000u32 * 4).to_le_bytes().to_vec(), 4u16.to_le_bytes().to_vec(), 16u16.to_le_bytes().to_vec()] {
        v.extend_from_slice(&x);
    }
    v.extend_from_slice(b"data");
    v.extend_from_slice(&(data as u32).to_le_bytes());
    for (i, s) in noise(frames * 2, 9).iter().enumerate() {
        let _ = i;
        v.extend_from_slice(&((s * 30_000.0) as i16).to_le_bytes());
    }
    patch(&mut v);
    v
}

#[test]
fn inconsistent_headers_are_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.wav");
    type Damage = fn(&mut Vec<u8>);
    let cases: [(&str, Damage, &str); 4] = [
        ("blockalign.wav", |v| v[32..34].copy_from_slice(&65_535u16.to_le_bytes()), "nBlockAlign 65535"),
        ("zero_hz.wav", |v| v[24..28].copy_from_slice(&0u32.to_le_bytes()), "0 Hz"),
        ("zero_channels.wav", |v| v[22..24].copy_from_slice(&0u16.to_le_bytes()), "0 channels"),
        ("huge_data.wav", |v| v[40..44].copy_from_slice(&u32::MAX.to_le_bytes()), "promises 4294967295 bytes"),
    ];
    for (name, patch, words) in cases {
        let input = dir.path().join(name);
        std::fs::write(&input, pcm16_wav(1_000, patch)).unwrap();
        assert_refused(&render(&unity(dir.path()), &input, &out, &[]), &[name, words]);
        assert!(!out.exists());
    }
}

/// A stereo 48 kHz FLAC of `frames` frames encoded by the `flac` tool, its STREAMINFO
/// length cleared (as a streamed FLAC's is) when `state_length` is false, and the
/// frame at about `damage_at` of the file's bytes damaged. Returns it and its samples.
fn damaged_flac(dir: &Path, frames: usize, state_length: bool, damage_at: Option<f64>) -> (PathBuf, Vec<Vec<f32>>) {
    let samples: Vec<Vec<f32>> = vec![noise(frames, 3), noise(frames, 4)];
    let pcm = dir.join("clean.wav");
    let spec = hound::WavSpec { channels: 2, sample_rate: 48_000, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
    let mut w = hound::WavWriter::create(&pcm, spec).unwrap();
    let mut exact = vec![Vec::new(), Vec::new()];
    for i in 0..frames {
        for (c, channel) in samples.iter().enumerate() {
            let q = (channel[i] * 32_767.0) as i16;
            w.write_sample(q).unwrap();
            exact[c].push(f32::from(q) / 32_768.0);
        }
    }
    w.finalize().unwrap();
    let flac = dir.join("in.flac");
    let ok = std::process::Command::new("flac").args(["-s", "-f", "--no-padding", "-o"]).arg(&flac).arg(&pcm).status().unwrap();
    assert!(ok.success(), "the flac tool (scripts/install-deps.sh installs it)");
    std::fs::remove_file(&pcm).unwrap();
    let mut bytes = std::fs::read(&flac).unwrap();
    if !state_length {
        // STREAMINFO's total samples: the low 4 bits of byte 8+13 and bytes 8+14..8+18.
        bytes[8 + 13] &= 0xf0;
        bytes[8 + 14..8 + 18].fill(0);
    }
    if let Some(at) = damage_at {
        let i = (bytes.len() as f64 * at) as usize;
        for b in &mut bytes[i..i + 64] {
            *b ^= 0x5a;
        }
    }
    std::fs::write(&flac, bytes).unwrap();
    (flac, exact)
}

#[test]
fn damaged_flac_without_a_stated_length_is_an_error_or_reported_silence() {
    let dir = tempfile::tempdir().unwrap();
    let frames = 192_000;
    let (flac, exact) = damaged_flac(dir.path(), frames, false, Some(0.5));
    let out = dir.path().join("out.wav");
    let o = render(&unity(dir.path()), &flac, &out, &[]);
    assert_refused(&o, &["damaged", "--allow-damaged"]);
    assert!(!out.exists());
    // With --allow-damaged: the input's length, silence where the frames were lost, the
    // rest exact, and a warning that says how much and where.
    let o = render(&unity(dir.path()), &flac, &out, &["--allow-damaged"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("warning:") && e.contains("replaced by silence") && e.contains("first at frame"), "{e}");
    let (_, got) = read_wav(&out);
    assert_eq!(got[0].len(), frames, "the output keeps the input's length");
    let silent: Vec<usize> = (0..frames).filter(|&i| got[0][i] == 0.0 && got[1][i] == 0.0 && exact[0][i] != 0.0).collect();
    assert!(!silent.is_empty(), "the damaged region is silence");
    let (first, last) = (silent[0], *silent.last().unwrap());
    assert!(e.contains(&format!("first at frame {first}")), "{e} (first silent frame {first})");
    for i in (0..frames).filter(|&i| i < first || i > last) {
        assert_eq!((got[0][i], got[1][i]), (exact[0][i], exact[1][i]), "frame {i} outside the damage");
    }
    // An undamaged FLAC without a stated length renders whole, with no warning.
    let (flac, exact) = damaged_flac(dir.path(), frames, false, None);
    let o = render(&unity(dir.path()), &flac, &out, &[]);
    assert!(o.status.success() && !stderr(&o).contains("warning"), "{}", stderr(&o));
    assert_eq!(read_wav(&out).1, exact);
}

#[test]
fn special_output_paths_keep_what_they_are() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 2_000);
    let chain = unity(dir.path());
    let plain = dir.path().join("plain.wav");
    assert!(render(&chain, &input, &plain, &[]).status.success());
    let expected = std::fs::read(&plain).unwrap();

    // A FIFO: the render is written through it, and it stays a FIFO.
    let fifo = dir.path().join("pipe.wav");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    // The render is staged in the temporary folder: keep that inside this test's folder.
    let staging = dir.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    let o = run(xtask_command!().env("TMPDIR", &staging).arg("render").arg("--chain").arg(&chain).arg("--output").arg(&fifo).arg(&input));
    assert!(o.status.success());
    assert_eq!(reader.join().unwrap(), expected);
    let staged: Vec<String> = dir_entries(&staging).into_iter().filter(|n| n.contains("ferrofx-render")).collect();
    assert!(staged.is_empty(), "the staged copy is removed: {staged:?}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    // A character device (a null device made here; needs CAP_MKNOD).
    let null = dir.path().join("null");
    if std::process::Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().is_ok_and(|s| s.success()) {
        let o = run(xtask_command!().env("TMPDIR", &staging).arg("render").arg("--chain").arg(&chain).arg("--output").arg(&null).arg(&input));
        assert!(o.status.success());
        assert!(std::fs::symlink_metadata(&null).unwrap().file_type().is_char_device(), "the device node was replaced");
        std::fs::remove_file(&null).unwrap();
    } else {
        eprintln!("skipped the character-device case: mknod is not permitted here");
    }

    // A symbolic link: its target receives the render; the link stays a link. Also a
    // dangling link, whose target is created.
    let target = dir.path().join("target.wav");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.path().join("link.wav");
    std::os::unix::fs::symlink("target.wav", &link).unwrap();
    assert!(render(&chain, &input, &link, &[]).status.success());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), expected);
    let dangling = dir.path().join("dangling.wav");
    std::os::unix::fs::symlink("created.wav", &dangling).unwrap();
    assert!(render(&chain, &input, &dangling, &[]).status.success());
    assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(dir.path().join("created.wav")).unwrap(), expected);

    // A read-only file is refused and left as it was; a writable one keeps its mode.
    let ro = dir.path().join("ro.wav");
    std::fs::write(&ro, b"keep me").unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_refused(&render(&chain, &input, &ro, &[]), &["read-only"]);
    assert_eq!(std::fs::read(&ro).unwrap(), b"keep me");
    assert_eq!(std::fs::metadata(&ro).unwrap().permissions().mode() & 0o777, 0o444);
    let private = dir.path().join("private.wav");
    std::fs::write(&private, b"old").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(render(&chain, &input, &private, &[]).status.success());
    assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read(&private).unwrap(), expected);

    // A directory is refused; nothing is created inside it.
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    assert_refused(&render(&chain, &input, &folder, &[]), &["is a directory"]);
    assert!(dir_entries(&folder).is_empty());
    // An MP3 name would hold another format: refused.
    assert_refused(&render(&chain, &input, &dir.path().join("out.mp3"), &[]), &["writes WAV and FLAC", ".mp3"]);
    assert_only(
        dir.path(),
        &["created.wav", "dangling.wav", "folder", "in.wav", "link.wav", "pipe.wav", "plain.wav", "private.wav", "ro.wav", "staging", "target.wav", "unity.json"],
    );
}

#[test]
fn the_file_and_its_folder_are_flushed_around_the_rename() {
    if std::process::Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not installed (scripts/install-deps.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 1_000);
    let out = dir.path().join("out.wav");
    let log = dir.path().join("trace");
    let o = run(std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args(["render", "--backend", "cpu", "--chain"])
        .arg(unity(dir.path()))
        .arg("--output")
        .arg(&out)
        .arg(&input));
    assert!(o.status.success());
    let trace = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = trace
        .lines()
        .filter_map(|l| ["fsync(", "fdatasync(", "rename"].into_iter().find(|c| l.contains(c)))
        .collect();
    let rename = calls.iter().position(|c| c.starts_with("rename")).unwrap_or_else(|| panic!("no rename: {trace}"));
    assert!(calls[..rename].iter().any(|c| c.contains("sync")), "no flush before the rename: {trace}");
    assert!(calls[rename + 1..].iter().any(|c| c.contains("sync")), "the folder is not flushed after the rename: {trace}");
}

#[test]
fn a_killed_render_leaves_a_temporary_that_the_next_render_clears() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 96_000);
    // Slow on purpose: 20,000 sections on 2 s of stereo.
    let slow = vec![r#"{"type": "biquad", "kind": "lowpass", "freq_hz": 10000, "q": 0.7}"#; 20_000].join(",");
    let chain = chain_file(dir.path(), "slow.json", &slow);
    let out = dir.path().join("out.wav");
    let mut child = xtask_command!()
        .args(["render", "--backend", "cpu", "--chain"])
        .arg(&chain)
        .arg("--output")
        .arg(&out)
        .arg(&input)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let temporaries = || dir_entries(dir.path()).into_iter().filter(|n| n.starts_with(".out.wav.ferrofx-render-")).count();
    let t = std::time::Instant::now();
    while temporaries() == 0 {
        assert!(t.elapsed().as_secs() < 60, "the render never created its temporary file");
        assert!(child.try_wait().unwrap().is_none(), "the render ended before it could be killed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(temporaries(), 1, "SIGKILL leaves the temporary file");
    assert!(!out.exists());
    // The next render of the same output, started at once, removes it: no process holds
    // its lock any more.
    assert!(render(&unity(dir.path()), &input, &out, &[]).status.success());
    assert_eq!(temporaries(), 0, "{:?}", dir_entries(dir.path()));
    assert!(out.exists());
}

#[test]
fn duplicate_keys_exit_2_naming_the_key_the_stage_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = stereo_input(dir.path(), 100);
    let chain = dir.path().join("dup.json");
    std::fs::write(&chain, "{\"format\": \"ferrofx-chain\", \"version\": 1, \"stages\": [\n {\"type\": \"butterworth\", \"response\": \"lowpass\",\n  \"order\": 4, \"order\": 8, \"cutoff_hz\": 100}]}").unwrap();
    let out = dir.path().join("out.wav");
    assert_refused(&render(&chain, &input, &out, &[]), &["stage 0", "duplicate key `order`", "line 3"]);
    assert!(!out.exists());
}

#[test]
fn a_bad_file_in_a_batch_is_named_and_the_rest_are_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _) = stereo_input(dir.path(), 1_000);
    let zero_hz = dir.path().join("zero_hz.wav");
    std::fs::write(&zero_hz, pcm16_wav(1_000, |v| v[24..28].copy_from_slice(&0u32.to_le_bytes()))).unwrap();
    let good2 = dir.path().join("good2.wav");
    std::fs::copy(&good, &good2).unwrap();
    let out_dir = dir.path().join("out");
    let o = run(xtask_command!().arg("render").arg("--chain").arg(unity(dir.path())).arg("--out-dir").arg(&out_dir).args([&good, &zero_hz, &good2]));
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("zero_hz.wav") && e.contains("0 Hz") && !e.contains("panic"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("rendered 2 of 3 files"));
    assert_eq!(dir_entries(&out_dir), vec!["good2.wav", "in.wav"]);
}
