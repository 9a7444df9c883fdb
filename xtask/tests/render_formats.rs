//! `xtask render`'s output formats end to end: integer WAV with dither and noise shaping,
//! FLAC checked by the reference `flac` tool, speaker layouts, the clipping report, and
//! how a format is chosen (the binary this package builds, run on real files).

use ferrofx::Chain;
use ferrofx_testkit::files::{dir_entries, read_wav_any as read_any_wav, repo_root, run, stderr, unity_chain, write_wav_f32};
use ferrofx_testkit::{noise, xtask_command};
use std::path::Path;
use std::process::Command;

fn flac_tool() -> bool {
    let there = Command::new("flac").arg("--version").output().is_ok();
    if !there {
        println!("SKIPPED: the `flac` tool is not installed (scripts/install-deps.sh installs it); FLAC output not checked against it");
    }
    there
}

/// Float -> 24-bit (and 16-bit) WAV -> float: within one LSB plus the dither (TPDF over
/// +-1 LSB, so 1.5 LSB), the error's mean zero and its variance rounding's plus the
/// dither's (1/12 + 1/6 LSB^2); without dither, rounding only (half an LSB). The sample
/// rate and channel count are kept, the file is valid to hound.
#[test]
fn float_to_integer_wav_and_back_differs_by_at_most_one_lsb_plus_the_dither() {
    let dir = tempfile::tempdir().unwrap();
    let chain = unity_chain(dir.path());
    let frames = 40_000;
    // Quiet noise: 24-bit quantisation of a -60 dBFS signal is where dither matters.
    let input: Vec<Vec<f32>> = (0..3).map(|c| noise(frames, 70 + c).iter().map(|v| v * 1e-3).collect()).collect();
    let in_path = dir.path().join("in.wav");
    write_wav_f32(&in_path, &input, 96_000);
    for (format, bits) in [("wav-24", 24u32), ("wav-16", 16), ("wav-32", 32)] {
        for dither in ["tpdf", "none"] {
            let out = dir.path().join(format!("{format}-{dither}.wav"));
            let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", format, "--dither", dither, "--output"]).arg(&out).arg(&in_path));
            assert!(o.status.success(), "{}", stderr(&o));
            let (spec, got, mask) = read_any_wav(&out);
            assert_eq!((spec.channels, spec.sample_rate, spec.bits_per_sample, spec.sample_format), (3, 96_000, bits as u16, hound::SampleFormat::Int));
            assert_eq!(mask, Some(0b111), "3 channels: WAVE_FORMAT_EXTENSIBLE with the default positions");
            let lsb = 1.0 / (1u64 << (bits - 1)) as f64;
            let errors: Vec<f64> = got.iter().zip(&input).flat_map(|(g, x)| g.iter().zip(x).map(|(g, x)| (g - f64::from(*x)) / lsb)).collect();
            assert_eq!(errors.len(), 3 * frames);
            let worst = errors.iter().fold(0.0f64, |m, e| m.max(e.abs()));
            let n = errors.len() as f64;
            let mean = errors.iter().sum::<f64>() / n;
            let var = errors.iter().map(|e| (e - mean) * (e - mean)).sum::<f64>() / n;
            if dither == "tpdf" {
                assert!(worst <= 1.5 + 1e-9, "{format}: an error of {worst} LSB");
                if bits < 32 {
                    // (At 32 bits a float32 sample of 1e-3 is itself not on the 2^-31 grid
                    // with room to spare, so the statistics hold too, but loosely.)
                    assert!(mean.abs() < 0.02 && (var - 0.25).abs() < 0.02, "{format}: mean {mean}, variance {var} LSB^2");
                }
            } else {
                assert!(worst <= 0.5 + 1e-9, "{format} undithered: an error of {worst} LSB");
            }
        }
    }
    // Noise shaping through the command line: the error is the quantiser's (at most 1.5
    // LSB) through 1 - z^-1 or (1 - z^-1)^2, so at most 3 or 6 LSB, and not flat any more.
    for (shaping, bound) in [("first-order", 3.0), ("second-order", 6.0)] {
        let out = dir.path().join(format!("{shaping}.wav"));
        let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "wav-16", "--noise-shaping", shaping, "--output"]).arg(&out).arg(&in_path));
        assert!(o.status.success(), "{}", stderr(&o));
        let (_, got, _) = read_any_wav(&out);
        let e: Vec<f64> = got[0].iter().zip(&input[0]).map(|(g, x)| (g - f64::from(*x)) * 32768.0).collect();
        let worst = e.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        // Lag-1 correlation of the error: 0 when flat, -1/2 (first order) or -2/3 (second).
        let r1 = e.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / e.iter().map(|v| v * v).sum::<f64>();
        assert!(worst <= bound + 1e-9 && r1 < -0.4, "{shaping}: worst {worst} LSB, lag-1 correlation {r1}");
    }
    // The same seed gives the same file; another seed another dither.
    let render_seed = |seed: &str, name: &str| {
        let out = dir.path().join(name);
        assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "wav-16", "--dither-seed", seed, "--output"]).arg(&out).arg(&in_path)).status.success());
        std::fs::read(out).unwrap()
    };
    assert_eq!(render_seed("7", "a.wav"), render_seed("7", "b.wav"));
    assert_ne!(render_seed("7", "a.wav"), render_seed("8", "b.wav"));
}

/// FLAC output at 16 and 24 bits decodes with the reference `flac` tool (which checks
/// its MD5) to the very samples of the WAV of the same format and seed; a 5.1 layout that
/// is not FLAC's default travels in the comment the tool turns back into a WAV mask.
#[test]
fn flac_output_decodes_with_the_flac_tool_to_the_same_samples_as_the_wav() {
    if !flac_tool() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let chain = repo_root().join("examples/chains/demo.json");
    let frames = 30_001; // not a whole number of FLAC blocks
    for (channels, mask) in [(2usize, None), (6, Some(0x60Fu32))] {
        let input: Vec<Vec<f32>> = (0..channels).map(|c| noise(frames, 90 + c as u64).iter().map(|v| v * 0.5).collect()).collect();
        let in_path = dir.path().join(format!("in{channels}.wav"));
        write_wav_f32(&in_path, &input, 44_100);
        if let Some(mask) = mask {
            set_wav_mask(&in_path, mask);
        }
        for bits in ["16", "24"] {
            let wav = dir.path().join(format!("o{channels}-{bits}.wav"));
            let flac = dir.path().join(format!("o{channels}-{bits}.flac"));
            for (format, out) in [(format!("wav-{bits}"), &wav), (format!("flac-{bits}"), &flac)] {
                let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", &format, "--output"]).arg(out).arg(&in_path));
                assert!(o.status.success(), "{}", stderr(&o));
            }
            let decoded = dir.path().join(format!("d{channels}-{bits}.wav"));
            let st = Command::new("flac").args(["-d", "-s", "-f", "-o"]).arg(&decoded).arg(&flac).output().unwrap();
            assert!(st.status.success(), "flac -d: {}", String::from_utf8_lossy(&st.stderr));
            let t = Command::new("flac").args(["-t", "-s"]).arg(&flac).output().unwrap();
            assert!(t.status.success(), "flac -t (frame CRCs, MD5 of the samples): {}", String::from_utf8_lossy(&t.stderr));
            let (ws, wsamples, wmask) = read_any_wav(&wav);
            let (ds, dsamples, dmask) = read_any_wav(&decoded);
            assert_eq!((ds.channels, ds.sample_rate, ds.bits_per_sample), (ws.channels, 44_100, ws.bits_per_sample));
            assert_eq!(dsamples, wsamples, "{channels} ch {bits}-bit: FLAC and WAV differ");
            assert_eq!(dsamples[0].len(), frames);
            assert_eq!(wmask.filter(|_| mask.is_some()), mask, "the WAV keeps the input's speakers");
            if let Some(mask) = mask {
                assert_eq!(dmask, Some(mask), "the FLAC keeps the input's speakers");
            }
        }
    }
}

/// Writes a speaker mask into a WAV written by hound (which makes >2 channels
/// WAVE_FORMAT_EXTENSIBLE with the default positions).
fn set_wav_mask(path: &Path, mask: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    let fmt = bytes.windows(4).position(|w| w == b"fmt ").unwrap() + 8;
    assert_eq!(u16::from_le_bytes([bytes[fmt], bytes[fmt + 1]]), 0xFFFE);
    bytes[fmt + 20..fmt + 24].copy_from_slice(&mask.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

/// Samples beyond full scale: clamped in integer formats (no wrap-around) and reported
/// with their count, the first one's place and the peak; kept in float and reported.
#[test]
fn clipping_is_reported_with_count_place_and_peak_never_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    let chain = unity_chain(dir.path());
    let mut left = vec![0.25f32; 1000];
    let mut right = vec![-0.25f32; 1000];
    left[700] = 1.5;
    right[500] = -2.0;
    right[501] = -1.2;
    let in_path = dir.path().join("in.wav");
    write_wav_f32(&in_path, &[left, right], 10_000);
    let out = dir.path().join("out.wav");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "wav-16", "--output"]).arg(&out).arg(&in_path));
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("3 samples clipped at full scale") && err.contains("frame 500 (0.050 s), channel 2") && err.contains("+6.02 dBFS"),
        "{err}"
    );
    let (_, got, _) = read_any_wav(&out);
    assert_eq!((got[0][700], got[1][500], got[1][501]), (32767.0 / 32768.0, -1.0, -1.0));
    let out = dir.path().join("out-float.wav");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&in_path));
    assert!(o.status.success() && stderr(&o).contains("3 samples over full scale, kept"), "{}", stderr(&o));
    assert_eq!(read_any_wav(&out).1[1][500], -2.0);
    // A clean render says nothing.
    let quiet = dir.path().join("quiet.wav");
    write_wav_f32(&quiet, &[vec![0.5f32; 100]], 10_000);
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "wav-24", "--output"]).arg(dir.path().join("q.wav")).arg(&quiet));
    assert!(o.status.success() && !stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// The format comes from `--format` or the extension; `--out-dir` names files by the
/// format; a flag that contradicts the name, and FLAC beyond 8 channels, are refused
/// (exit 2, nothing written); every format is in `--help`.
#[test]
fn formats_by_flag_or_extension_and_contradictions_refused() {
    let dir = tempfile::tempdir().unwrap();
    let chain = unity_chain(dir.path());
    let in_path = dir.path().join("take.wav");
    write_wav_f32(&in_path, &[noise(5000, 3), noise(5000, 4)], 48_000);
    let out = dir.path().join("x.wav");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "flac-16", "--output"]).arg(&out).arg(&in_path));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--format flac-16 writes FLAC"), "{}", stderr(&o));
    assert!(!out.exists());
    // By extension: .flac is 24-bit FLAC, .wav float32.
    let flac = dir.path().join("x.flac");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&flac).arg(&in_path));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("flac-24"));
    assert_eq!(&std::fs::read(&flac).unwrap()[..4], b"fLaC");
    let wav = dir.path().join("y.wav");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&wav).arg(&in_path)).status.success());
    assert_eq!(read_any_wav(&wav).0.sample_format, hound::SampleFormat::Float);
    // wav-f64 holds the float32 result exactly.
    let f64_out = dir.path().join("z.wav");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "wav-f64", "--output"]).arg(&f64_out).arg(&in_path)).status.success());
    let back = ferrofx_testkit::engine::engine_output(&Chain::from_file(&chain).unwrap(), 48_000.0, &[noise(5000, 3), noise(5000, 4)], 4096);
    let bytes = std::fs::read(&f64_out).unwrap();
    let data = bytes.windows(4).position(|w| w == b"data").unwrap() + 8;
    let first: Vec<f64> = bytes[data..data + 16].chunks(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
    assert_eq!(first, vec![f64::from(back[0][0]), f64::from(back[1][0])]);
    // --out-dir: the format's extension.
    let out_dir = dir.path().join("out");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).args(["--format", "flac-16", "--out-dir"]).arg(&out_dir).arg(&in_path)).status.success());
    assert_eq!(dir_entries(&out_dir), vec!["take.flac".to_string()]);
    // FLAC holds at most 8 channels.
    let wide = dir.path().join("wide.wav");
    write_wav_f32(&wide, &(0..9).map(|c| noise(100, c)).collect::<Vec<_>>(), 48_000);
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(dir.path().join("wide.flac")).arg(&wide));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("at most 8 channels"), "{}", stderr(&o));
    assert!(!dir.path().join("wide.flac").exists());
    let help = run(xtask_command!().args(["render", "--help"]));
    let text = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("[possible values: wav-f32, wav-f64, wav-16, wav-24, wav-32, flac-16, flac-24]"), "{text}");
}
