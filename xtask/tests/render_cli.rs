//! `xtask render` end to end: the binary this package builds, run on real files.

use ferrofx_testkit::engine::{engine_output, max_rel_diff};
use ferrofx_testkit::files::{dir_entries, read_wav, repo_root, run, stderr, write_wav_f32};
use ferrofx_testkit::reference::reference_dir;
use ferrofx_testkit::{noise, xtask_command};
use ferrofx::Chain;
use std::path::Path;
use std::process::Command;

#[test]
fn stereo_and_8_channel_renders_equal_the_engine_in_process() {
    let chain_path = repo_root().join("examples/chains/everything.json");
    let chain = Chain::from_json(&std::fs::read_to_string(&chain_path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (channels, fs, frames) in [(2usize, 48_000u32, 30_011usize), (8, 44_100, 20_000)] {
        let input: Vec<Vec<f32>> = (0..channels).map(|c| noise(frames, c as u64 * 31 + 1)).collect();
        let in_path = dir.path().join(format!("in{channels}.wav"));
        let out_path = dir.path().join(format!("out{channels}.wav"));
        write_wav_f32(&in_path, &input, fs);
        let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain_path).args(["--block-size", "1000", "--output"]).arg(&out_path).arg(&in_path));
        assert!(o.status.success());
        let (spec, rendered) = read_wav(&out_path);
        assert_eq!((spec.channels as usize, spec.sample_rate), (channels, fs));
        assert_eq!(rendered[0].len(), frames, "same length as the input");
        // The same block size gives the same samples; another block size the same within rounding.
        assert_eq!(rendered, engine_output(&chain, fs as f64, &input, 1000));
        let d = max_rel_diff(&rendered, &engine_output(&chain, fs as f64, &input, 4096));
        assert!(d < 1e-6, "{channels} ch: block-size dependence {d:e}");
    }
}

#[test]
fn renders_match_the_scipy_reference() {
    let dir = tempfile::tempdir().unwrap();
    // From whichever reference set is given: a low-frequency IIR case, an elliptic one
    // and the longest FIR (in the project's shared set: a 10 Hz Butterworth, a 10 Hz elliptic
    // highpass and a 1025-tap bandpass, all at 96 kHz).
    let text = std::fs::read_to_string(reference_dir().join("index.json"))
        .unwrap_or_else(|e| panic!("{e}: {}", ferrofx_testkit::reference::reference_hint(&reference_dir())));
    let index: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = index["cases"].as_array().unwrap();
    let id_of = |c: &serde_json::Value| c["id"].as_str().unwrap().to_string();
    let lowfreq = cases.iter().find(|c| c["kind"] == "iir" && c["tags"].as_array().unwrap().iter().any(|t| t == "lowfreq")).map(id_of);
    let elliptic = cases.iter().find(|c| id_of(c).contains("ellip")).map(id_of);
    let longest_fir = cases
        .iter()
        .filter(|c| c["kind"] == "fir")
        .max_by_key(|c| std::fs::metadata(reference_dir().join(format!("cases/{}.json", id_of(c)))).map(|m| m.len()).unwrap_or(0))
        .map(id_of);
    let ids = [lowfreq, elliptic, longest_fir].map(|id| id.expect("the reference set has low-frequency IIR, elliptic and FIR cases"));
    for id in &ids {
        let case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(reference_dir().join(format!("cases/{id}.json"))).unwrap()).unwrap();
        let read = |name: &str| -> Vec<Vec<f32>> {
            let bytes = std::fs::read(reference_dir().join(name)).unwrap();
            let flat: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
            let n = flat.len() / 2;
            vec![flat[..n].to_vec(), flat[n..].to_vec()]
        };
        let input = read(case["input"]["file"].as_str().unwrap());
        let expected = read(case["expected"]["file"].as_str().unwrap());
        let stage = if case["spec"]["kind"] == "fir" {
            serde_json::json!({"type": "fir", "coefficients": case["taps"]})
        } else {
            serde_json::json!({"type": "sos", "sections": case["sos"]})
        };
        let chain_path = dir.path().join(format!("{id}.json"));
        std::fs::write(&chain_path, serde_json::json!({"format": "ferrofx-chain", "version": 1, "stages": [stage]}).to_string()).unwrap();
        let in_path = dir.path().join(format!("{id}.in.wav"));
        let out_path = dir.path().join(format!("{id}.out.wav"));
        write_wav_f32(&in_path, &input, case["spec"]["fs"].as_u64().unwrap() as u32);
        let o = run(xtask_command!().args(["render", "--block-size", "64", "--chain"]).arg(&chain_path).arg("--output").arg(&out_path).arg(&in_path));
        assert!(o.status.success());
        let (_, rendered) = read_wav(&out_path);
        let e = (0..2).map(|c| max_rel_diff(&rendered[c..c + 1], &expected[c..c + 1])).fold(0.0, f64::max);
        println!("{id}: rendered vs SciPy {e:.2e}");
        assert!(e <= 1e-4, "{id}: {e:e}");
    }
}

#[test]
fn integer_and_64_bit_float_inputs_decode_to_the_right_values() {
    let dir = tempfile::tempdir().unwrap();
    let chain_path = ferrofx_testkit::files::unity_chain(dir.path());
    let values: Vec<i32> = vec![0, 1, -1, 12345, -32768, 32767, 100, -100];
    for bits in [16u16, 24] {
        let path = dir.path().join(format!("int{bits}.wav"));
        let spec = hound::WavSpec { channels: 2, sample_rate: 22_050, bits_per_sample: bits, sample_format: hound::SampleFormat::Int };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        let scale = if bits == 24 { 256 } else { 1 };
        for v in &values {
            w.write_sample(*v * scale).unwrap();
        }
        w.finalize().unwrap();
        let out = dir.path().join(format!("int{bits}.out.wav"));
        assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain_path).arg("--output").arg(&out).arg(&path)).status.success());
        let (_, got) = read_wav(&out);
        let want: Vec<f32> = values.iter().map(|&v| v as f32 / 32768.0).collect();
        let got_interleaved: Vec<f32> = (0..4).flat_map(|i| [got[0][i], got[1][i]]).collect();
        assert_eq!(got_interleaved, want, "{bits}-bit");
    }
    // 64-bit float WAV (hound cannot read it; symphonia does). Header written by hand.
    let samples: Vec<f64> = vec![0.5, -0.25, 0.125, 1.0 / 3.0];
    let mut bytes = Vec::new();
    let data_len = (samples.len() * 8) as u32;
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + data_len).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&48_000u32.to_le_bytes());
    bytes.extend_from_slice(&(48_000u32 * 8).to_le_bytes());
    bytes.extend_from_slice(&8u16.to_le_bytes());
    bytes.extend_from_slice(&64u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for s in &samples {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    let path = dir.path().join("f64.wav");
    std::fs::write(&path, bytes).unwrap();
    let out = dir.path().join("f64.out.wav");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain_path).arg("--output").arg(&out).arg(&path)).status.success());
    let (_, got) = read_wav(&out);
    assert_eq!(got[0], samples.iter().map(|&s| s as f32).collect::<Vec<_>>());
}

#[test]
fn flac_input_renders_like_the_same_wav() {
    if Command::new("flac").arg("--version").output().is_err() {
        println!("SKIPPED: the `flac` encoder is not installed (apt-get install flac); FLAC decoding not exercised");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("x.wav");
    let spec = hound::WavSpec { channels: 2, sample_rate: 44_100, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    let n = noise(2 * 9000, 5);
    for v in &n {
        w.write_sample((v * 20000.0) as i16).unwrap();
    }
    w.finalize().unwrap();
    let flac = dir.path().join("x.flac");
    assert!(Command::new("flac").args(["-s", "-f", "-o"]).arg(&flac).arg(&wav).status().unwrap().success());
    let chain = repo_root().join("examples/chains/demo.json");
    let out_dir = dir.path().join("out");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--out-dir").arg(&out_dir).arg(&flac));
    assert!(o.status.success());
    let from_wav = dir.path().join("from_wav.wav");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&from_wav).arg(&wav)).status.success());
    // x.flac renders to out/x.wav.
    assert_eq!(read_wav(&out_dir.join("x.wav")).1, read_wav(&from_wav).1);
}

#[test]
fn a_bad_chain_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(1000, 1)], 48_000);
    let chain = dir.path().join("bad.json");
    std::fs::write(&chain, r#"{"format": "ferrofx-chain", "version": 1, "stages": [{"type": "butterworth", "response": "lowpass", "order": 4, "cutoff_hz": 30000}]}"#).unwrap();
    let out = dir.path().join("out.wav");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("stage 0 (butterworth): cutoff_hz 30000 is above Nyquist (24000 Hz at fs=48000)"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "one clear line: {e}");
    assert!(!out.exists());
    assert_eq!(dir_entries(dir.path()), ["bad.json", "in.wav"], "no temporary files left");
    // A chain that is not even JSON: same exit status, line and column in the message.
    std::fs::write(&chain, "{\n  \"format\": \"ferrofx-chain\",\n  oops\n}").unwrap();
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn an_existing_output_stays_intact_when_rendering_fails() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(5000, 2), noise(5000, 3)], 44_100);
    let out = dir.path().join("precious.wav");
    std::fs::write(&out, b"the previous render").unwrap();
    let good_chain = repo_root().join("examples/chains/demo.json");
    let bad_chain = dir.path().join("nyquist.json");
    std::fs::write(&bad_chain, r#"{"format": "ferrofx-chain", "version": 1, "stages": [{"type": "biquad", "kind": "notch", "freq_hz": 23000, "q": 1}]}"#).unwrap();
    let garbage = dir.path().join("garbage.wav");
    std::fs::write(&garbage, b"RIFF....this is not audio").unwrap();
    // A WAV whose data ends mid-stream: hound reports it while streaming, after the
    // temporary file already holds samples.
    let truncated = dir.path().join("truncated.wav");
    let full = std::fs::read(&input).unwrap();
    std::fs::write(&truncated, &full[..full.len() / 2 + 3]).unwrap();
    for (chain, inp, why) in [
        (&bad_chain, &input, "freq_hz 23000 is above Nyquist"),
        (&good_chain, &garbage, "garbage.wav"),
        (&good_chain, &truncated, "truncated.wav"),
        (&good_chain, &dir.path().join("missing.wav"), "missing.wav"),
    ] {
        let o = run(xtask_command!().args(["render", "--chain"]).arg(chain).arg("--output").arg(&out).arg(inp));
        assert_eq!(o.status.code(), Some(2), "{why}");
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), b"the previous render", "{why}: output was touched");
    }
    let mut names = dir_entries(dir.path());
    names.retain(|n| n.starts_with('.'));
    assert!(names.is_empty(), "temporary files left: {names:?}");
    // And a successful render replaces it.
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&good_chain).arg("--output").arg(&out).arg(&input)).status.success());
    assert_eq!(read_wav(&out).1[0].len(), 5000);
}

#[test]
fn many_files_with_out_dir_report_bad_ones_and_render_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.wav");
    let b = dir.path().join("b.wav");
    let bad = dir.path().join("bad.wav");
    write_wav_f32(&a, &[noise(3000, 1)], 48_000);
    write_wav_f32(&b, &[noise(4000, 2), noise(4000, 3)], 96_000);
    std::fs::write(&bad, b"not audio at all").unwrap();
    let out_dir = dir.path().join("rendered");
    let chain = repo_root().join("examples/chains/demo.json");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--out-dir").arg(&out_dir).args([&a, &bad, &b]));
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("bad.wav"), "{e}");
    let errors: Vec<&str> = e.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(errors.len() == 1 && errors[0].contains("bad.wav"), "only the bad file is an error: {e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("rendered 2 of 3 files"));
    assert_eq!(dir_entries(&out_dir), ["a.wav", "b.wav"]);
    assert_eq!(read_wav(&out_dir.join("b.wav")).1[1].len(), 4000);
    // The output name refuses to replace an input.
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--out-dir").arg(dir.path()).arg(&a));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("would replace its own input"), "{}", stderr(&o));
}

#[test]
fn unavailable_backends_and_bad_options_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(100, 1)], 48_000);
    let chain = repo_root().join("examples/chains/demo.json");
    let out = dir.path().join("out.wav");
    // wgpu with WGPU_BACKEND naming a backend this platform does not have: no adapter.
    let nowhere = if cfg!(windows) { "metal" } else { "dx12" };
    for (backend, env) in [("wgpu", Some(nowhere)), ("cuda", None)] {
        let mut cmd = xtask_command!();
        if let Some(v) = env {
            cmd.env("WGPU_BACKEND", v);
        }
        let o = run(cmd.args(["render", "--backend", backend, "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
        assert_eq!(o.status.code(), Some(2));
        if backend == "cuda" && ferrofx::gpu::cuda::context::driver_present() {
            continue; // a machine with an NVIDIA driver: tests/gpu_cuda.rs runs it
        }
        assert!(stderr(&o).contains(&format!("backend {backend} is not available")), "{}", stderr(&o));
        if backend == "cuda" {
            assert!(stderr(&o).contains("CUDA unavailable: the NVIDIA driver library (libcuda.so) was not found"), "{}", stderr(&o));
        }
        assert_eq!(stderr(&o).trim().lines().count(), 1, "one line: {}", stderr(&o));
        assert!(!out.exists());
    }
    let o = run(xtask_command!().env("WGPU_BACKEND", nowhere).args(["render", "--backend", "wgpu", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
    assert!(stderr(&o).contains("no GPU adapter found"), "{}", stderr(&o));
    let o = run(xtask_command!().args(["render", "--block-size", "0", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
    assert_eq!(o.status.code(), Some(2));
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&out).args([&input, &input]));
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
    // auto and cpu both work.
    for backend in ["auto", "cpu"] {
        assert!(run(xtask_command!().args(["render", "--backend", backend, "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input)).status.success());
    }
}

/// True when a wgpu adapter is there (lavapipe in CI); without one the GPU render tests
/// print why and pass, unless `FERROFX_REQUIRE_GPU` is set.
fn gpu_available() -> bool {
    match ferrofx::gpu::wgpu::WgpuContext::new() {
        Ok(ctx) => {
            println!("wgpu adapter: {}", ctx.report());
            true
        }
        Err(e) => {
            assert!(std::env::var_os("FERROFX_REQUIRE_GPU").is_none(), "FERROFX_REQUIRE_GPU is set but: {e}");
            println!("skipped: {e}");
            false
        }
    }
}

#[test]
fn wgpu_renders_equal_cpu_renders_on_stereo_and_8_channel_files() {
    if !gpu_available() {
        return;
    }
    let chain_path = repo_root().join("examples/chains/everything.json");
    let dir = tempfile::tempdir().unwrap();
    for (channels, fs, frames, block) in [(2usize, 48_000u32, 70_001usize, "65536"), (8, 44_100, 30_000, "4096"), (2, 96_000, 9_000, "64")] {
        let input: Vec<Vec<f32>> = (0..channels).map(|c| noise(frames, c as u64 * 17 + 5)).collect();
        let in_path = dir.path().join(format!("in{channels}_{block}.wav"));
        write_wav_f32(&in_path, &input, fs);
        let mut rendered = Vec::new();
        for backend in ["cpu", "wgpu"] {
            let out = dir.path().join(format!("out{channels}_{block}_{backend}.wav"));
            let o = run(xtask_command!().args(["render", "--backend", backend, "--block-size", block, "--chain"]).arg(&chain_path).arg("--output").arg(&out).arg(&in_path));
            assert!(o.status.success(), "{backend}: {}", stderr(&o));
            let stdout = String::from_utf8_lossy(&o.stdout).to_string();
            assert!(stdout.contains(&format!("backend {backend}")), "{stdout}");
            let (spec, y) = read_wav(&out);
            assert_eq!((spec.channels as usize, y[0].len()), (channels, frames));
            rendered.push(y);
        }
        let d = max_rel_diff(&rendered[1], &rendered[0]);
        println!("{channels} ch, block {block}: wgpu vs cpu {d:.2e}");
        assert!(d < 1e-4, "{channels} ch, block {block}: wgpu vs cpu {d:e}");
    }
}

/// A file long enough for `auto` to probe both paths: the output line says what it chose
/// and why, and the render equals that backend's own render (the probe leaves no state).
#[test]
fn auto_probes_long_files_and_renders_like_its_choice() {
    let chain_path = repo_root().join("examples/chains/everything.json");
    let dir = tempfile::tempdir().unwrap();
    let input: Vec<Vec<f32>> = (0..8).map(|c| noise(600_000, c as u64 + 90)).collect();
    let in_path = dir.path().join("long8.wav");
    write_wav_f32(&in_path, &input, 48_000);
    let auto_out = dir.path().join("auto.wav");
    let o = run(xtask_command!().args(["render", "--backend", "auto", "--chain"]).arg(&chain_path).arg("--output").arg(&auto_out).arg(&in_path));
    assert!(o.status.success(), "{}", stderr(&o));
    let line = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(line.contains("(auto: "), "{line}");
    let chosen = ["wgpu", "cuda"].into_iter().find(|b| line.contains(&format!("backend {b}"))).unwrap_or("cpu");
    if gpu_available() {
        // The same frames through each path, each in its own blocks (the GPU's chosen
        // from the chain's measured round trips).
        assert!(line.contains("frames: CPU") && line.contains("ms in blocks of 4096, GPU") && line.contains("wgpu on"), "the probe's figures: {line}");
    }
    // Every GPU backend of the list is tried, or the line says why not.
    if !ferrofx::gpu::cuda::context::driver_present() {
        assert!(line.contains("not tried: cuda: CUDA unavailable"), "{line}");
    }
    let own_out = dir.path().join("own.wav");
    let o = run(xtask_command!().args(["render", "--backend", chosen, "--chain"]).arg(&chain_path).arg("--output").arg(&own_out).arg(&in_path));
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, a) = read_wav(&auto_out);
    let (_, b) = read_wav(&own_out);
    if chosen == "cpu" {
        assert_eq!(a, b, "auto chose the CPU: its render must be the CPU's render");
    } else {
        // A GPU's block is measured again by the second run and may differ, and a GPU's
        // bits depend on its block (within the tolerance): no probe state may be left.
        let d = max_rel_diff(&a, &b);
        assert!(d < 1e-4, "auto chose {chosen}: {d:e} from {chosen}'s own render");
    }
}

/// Without `--block-size` a GPU render chooses its block: a file no longer than the
/// cost probe is one block; a longer one takes the length the chain's measured round
/// trips predict fastest (within the renderer's range), said in the output line; both
/// equal the CPU's render within the tolerance.
#[test]
fn gpu_renders_choose_their_block_from_the_chains_round_trips() {
    if !gpu_available() {
        return;
    }
    let chain_path = repo_root().join("examples/chains/everything.json");
    let dir = tempfile::tempdir().unwrap();
    for frames in [50_000usize, 300_000] {
        let input: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, c as u64 + 300)).collect();
        let in_path = dir.path().join(format!("in{frames}.wav"));
        write_wav_f32(&in_path, &input, 48_000);
        let mut rendered = Vec::new();
        let mut line = String::new();
        for backend in ["cpu", "wgpu"] {
            let out = dir.path().join(format!("out{frames}_{backend}.wav"));
            let o = run(xtask_command!().args(["render", "--backend", backend, "--chain"]).arg(&chain_path).arg("--output").arg(&out).arg(&in_path));
            assert!(o.status.success(), "{backend}: {}", stderr(&o));
            line = String::from_utf8_lossy(&o.stdout).to_string();
            rendered.push(read_wav(&out).1);
        }
        if frames <= 131_072 {
            assert!(line.contains(&format!("one block of {frames} frames")), "{line}");
        } else {
            let at = line.find("blocks of ").unwrap_or_else(|| panic!("no block in {line}"));
            let n: usize = line[at + 10..].split(' ').next().unwrap().parse().unwrap();
            assert!((4096..=1 << 20).contains(&n) && line.contains("frames for a measured"), "{line}");
        }
        let d = max_rel_diff(&rendered[1], &rendered[0]);
        println!("{frames} frames: {line}wgpu vs cpu {d:.2e}");
        assert!(d < 1e-4, "{frames} frames: wgpu vs cpu {d:e}");
    }
}

#[test]
fn sixty_four_channels_render_and_sixty_five_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let chain_path = repo_root().join("examples/chains/demo.json");
    let chain = Chain::from_json(&std::fs::read_to_string(&chain_path).unwrap()).unwrap();
    let input: Vec<Vec<f32>> = (0..64).map(|c| noise(3000, c as u64 + 100)).collect();
    let in_path = dir.path().join("in64.wav");
    let out_path = dir.path().join("out64.wav");
    write_wav_f32(&in_path, &input, 48_000);
    let o = run(xtask_command!().args(["render", "--block-size", "512", "--chain"]).arg(&chain_path).arg("--output").arg(&out_path).arg(&in_path));
    assert!(o.status.success());
    let (spec, rendered) = read_wav(&out_path);
    assert_eq!(spec.channels, 64);
    assert_eq!(rendered, engine_output(&chain, 48_000.0, &input, 512));

    let too_many: Vec<Vec<f32>> = (0..65).map(|c| noise(100, c as u64)).collect();
    let in65 = dir.path().join("in65.wav");
    write_wav_f32(&in65, &too_many, 48_000);
    let out65 = dir.path().join("out65.wav");
    let o = run(xtask_command!().args(["render", "--chain"]).arg(&chain_path).arg("--output").arg(&out65).arg(&in65));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("65 channels is out of range (1..=64)"), "{}", stderr(&o));
    assert!(!out65.exists());
}

#[test]
fn sample_rates_outside_8k_to_384k_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (fs, ok) in [(7_999u32, false), (8_000, true), (384_000, true), (384_001, false)] {
        let input = dir.path().join(format!("in{fs}.wav"));
        write_wav_f32(&input, &[noise(500, 1)], fs);
        let out = dir.path().join(format!("out{fs}.wav"));
        // A chain valid at every rate tried (1 kHz is below 4 kHz Nyquist at 8 kHz).
        let unity = dir.path().join("unity.json");
        std::fs::write(&unity, r#"{"format": "ferrofx-chain", "version": 1, "stages": [{"type": "biquad", "kind": "lowpass", "freq_hz": 1000, "q": 0.7}]}"#).unwrap();
        let o = run(xtask_command!().args(["render", "--chain"]).arg(&unity).arg("--output").arg(&out).arg(&input));
        assert_eq!(o.status.success(), ok, "{fs} Hz");
        if !ok {
            assert_eq!(o.status.code(), Some(2));
            assert!(stderr(&o).contains(&format!("sample rate {fs} Hz is out of range")), "{}", stderr(&o));
            assert!(!out.exists());
        }
    }
}

#[test]
fn bench_json_lines_carry_the_contract_fields() {
    let o = run(xtask_command!().args(["bench", "--quick", "--json", "--workload", "iir_chain", "--workload", "realtime_block"]));
    assert!(o.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 12 + 6, "iir_chain grid (4 x 3) and 6 realtime block sizes");
    for v in &lines {
        for key in ["workload", "backend", "channels", "frames", "sections", "taps", "runs", "median_s", "min_s", "ns_per_sample"] {
            assert!(v.get(key).is_some(), "{key} missing in {v}");
        }
        let expected = v["median_s"].as_f64().unwrap() * 1e9 / (v["frames"].as_f64().unwrap() * v["channels"].as_f64().unwrap());
        assert!((v["ns_per_sample"].as_f64().unwrap() / expected - 1.0).abs() < 1e-9);
        assert_eq!(v["backend"], "cpu");
    }
    assert!(lines.iter().filter(|v| v["workload"] == "iir_chain").all(|v| v["sections"] == 4));
    let nowhere = if cfg!(windows) { "metal" } else { "dx12" };
    let o = run(xtask_command!().env("WGPU_BACKEND", nowhere).args(["bench", "--quick", "--backend", "wgpu"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("backend wgpu is not available"), "{}", stderr(&o));
}

#[test]
fn bench_runs_the_workloads_on_wgpu_and_says_what_the_adapter_is() {
    if !gpu_available() {
        return;
    }
    let o = run(xtask_command!().args(["bench", "--quick", "--json", "--backend", "wgpu", "--workload", "iir_chain", "--workload", "realtime_block", "--workload", "long_fir"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 12 + 8 + 1, "iir_chain grid, 8 realtime block sizes on a GPU (32-4096 frames), long_fir");
    assert!(lines.iter().all(|v| v["backend"] == "wgpu" && v["median_s"].as_f64().unwrap() > 0.0));
    assert!(lines.iter().any(|v| v["workload"] == "long_fir" && v["taps"] == 262_144));
    // Every offline workload beside the host-to-host copy floor of its bytes; the
    // realtime blocks (one round trip each) without.
    for v in &lines {
        let offline = v["workload"] != "realtime_block";
        assert_eq!(v.get("copy_floor_s").is_some(), offline, "{v}");
        if offline {
            let floor = v["copy_floor_s"].as_f64().unwrap();
            assert!(floor > 0.0 && (v["x_copy_floor"].as_f64().unwrap() - v["median_s"].as_f64().unwrap() / floor).abs() < 1e-9, "{v}");
        }
    }
    let err = stderr(&o);
    assert!(err.contains("wgpu backend on"), "{err}");
    if err.contains("Cpu") {
        assert!(err.contains("not GPU speed"), "{err}");
    }
}

/// Renders 7 channels of noise through `chain_path` with each `--threads` value and
/// asserts that every output equals the first, sample for sample.
fn assert_threads_change_nothing(dir: &Path, chain_path: &Path, seed: u64, threads: &[&str]) {
    let input: Vec<Vec<f32>> = (0..7).map(|c| noise(9000, c as u64 + seed)).collect();
    let in_path = dir.join("in7.wav");
    write_wav_f32(&in_path, &input, 48_000);
    let mut outputs = Vec::new();
    for t in threads {
        let out = dir.join(format!("out{t}.wav"));
        let o = run(xtask_command!().args(["render", "--threads", t, "--chain"]).arg(chain_path).arg("--output").arg(&out).arg(&in_path));
        assert!(o.status.success(), "{}", stderr(&o));
        outputs.push(read_wav(&out).1);
    }
    for (o, t) in outputs[1..].iter().zip(&threads[1..]) {
        assert!(o == &outputs[0], "--threads {t}: channel split must not change the samples");
    }
}

#[test]
fn splitting_channels_over_threads_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert_threads_change_nothing(dir.path(), &repo_root().join("examples/chains/everything.json"), 40, &["1", "3", "7", "16"]);
}

#[cfg(unix)]
#[test]
fn rendered_files_are_ordinary_files_not_private_temporaries() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(100, 1)], 48_000);
    let out = dir.path().join("out.wav");
    let chain = repo_root().join("examples/chains/demo.json");
    assert!(run(xtask_command!().args(["render", "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input)).status.success());
    // Group/other read bits follow the umask like any new file; the temporary file's
    // private 0600 must not leak through (umask is 022 or 002 on these machines).
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_ne!(mode, 0o600, "output mode {mode:o}");
    assert!(mode & 0o044 != 0, "output not readable by group/others: {mode:o}");
}

/// A long FIR runs on the partitioned path, which pairs channels in complex FFTs: any
/// split over threads must still compute every channel exactly as one engine does.
#[test]
fn splitting_channels_over_threads_changes_nothing_on_the_fft_fir_path() {
    let dir = tempfile::tempdir().unwrap();
    let taps: Vec<f64> = noise(1500, 99).iter().enumerate().map(|(i, &v)| f64::from(v) * (-(i as f64) / 300.0).exp()).collect();
    let chain = serde_json::json!({"format": "ferrofx-chain", "version": 1, "stages": [{"type": "fir", "coefficients": taps}]});
    let chain_path = dir.path().join("long_fir.json");
    std::fs::write(&chain_path, chain.to_string()).unwrap();
    assert_threads_change_nothing(dir.path(), &chain_path, 60, &["1", "2", "3", "16"]);
}

#[test]
fn a_successful_gpu_render_prints_no_error_line_without_xdg_runtime_dir() {
    if !gpu_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(4_000, 5)], 48_000);
    let out = dir.path().join("out.wav");
    let chain = repo_root().join("examples/chains/demo.json");
    for backend in ["wgpu", "auto"] {
        let o = run(xtask_command!().env_remove("XDG_RUNTIME_DIR").args(["render", "--backend", backend, "--chain"]).arg(&chain).arg("--output").arg(&out).arg(&input));
        assert!(o.status.success());
        assert!(!stderr(&o).contains("error"), "{backend}: {}", stderr(&o));
    }
}

/// A design whose float32 form would miss the tolerance: on a device without float64 (here
/// `FERROFX_WGPU_FLOAT64=0`) a forced GPU render is refused, writing nothing; on one with
/// it (lavapipe has it) the render runs in float64 and equals the CPU's within the tolerance.
#[test]
fn a_forced_gpu_render_of_a_design_float32_cannot_run_is_refused_not_wrong() {
    if !gpu_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.wav");
    write_wav_f32(&input, &[noise(4_000, 7)], 192_000);
    // A 23rd-order Chebyshev highpass near Nyquist: within 1e-6 of SciPy on the CPU
    // (the stress suite's case), about 1e-2 of the peak off in float32.
    let chain = dir.path().join("hard.json");
    std::fs::write(&chain, r#"{"format": "ferrofx-chain", "version": 1, "stages": [{"type": "chebyshev1", "response": "highpass", "order": 23, "cutoff_hz": 81437.9, "ripple_db": 2.335}]}"#).unwrap();
    let out = dir.path().join("out.wav");
    let render = |backend: &str, float64: bool, to: &Path| {
        let mut c = xtask_command!();
        if !float64 {
            c.env("FERROFX_WGPU_FLOAT64", "0");
        }
        run(c.args(["render", "--backend", backend, "--chain"]).arg(&chain).arg("--output").arg(to).arg(&input))
    };
    let o = render("wgpu", false, &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("declined by the GPU path") && stderr(&o).contains("in float32") && stderr(&o).contains("the CPU backend runs it"), "{}", stderr(&o));
    assert!(!out.exists());
    assert!(render("cpu", true, &out).status.success());
    let cpu = read_wav(&out).1;
    let wide = dir.path().join("out_f64.wav");
    let o = render("wgpu", true, &wide);
    if o.status.code() == Some(2) && stderr(&o).contains("no float64 form") {
        println!("skipped the float64 half: the adapter has no float64");
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let d = max_rel_diff(&read_wav(&wide).1, &cpu);
    println!("float64 on the GPU against the CPU: {d:.2e} of the peak");
    assert!(d < 1e-4, "{d:e}");
}

/// The backends a render and a benchmark take come from the core's list: `--help` lists
/// every one of them, and a name not in it is refused with the list (exit 2, nothing
/// written).
#[test]
fn every_backend_of_the_core_list_is_offered_by_name() {
    let names = ferrofx::backends::Choice::names();
    let render = run(xtask_command!().args(["render", "--help"]));
    // clap wraps help to the terminal's width: compare with the line breaks folded.
    let fold = |b: &[u8]| String::from_utf8_lossy(b).split_whitespace().collect::<Vec<_>>().join(" ");
    let text = fold(&render.stdout);
    assert!(text.contains(&format!("[possible values: {}]", names.join(", "))), "render --help: {text}");
    let gpus: Vec<&str> = names.iter().copied().filter(|n| !["auto", "cpu"].contains(n)).collect();
    let bench = run(xtask_command!().args(["bench", "--help"]));
    let text = fold(&bench.stdout);
    let want = std::iter::once("cpu").chain(gpus.iter().copied()).collect::<Vec<_>>().join(", ");
    assert!(text.contains(&format!("[possible values: {want}]")), "bench --help: {text}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.wav");
    let o = run(xtask_command!().args(["render", "--backend", "no-such-device", "--chain", "x.json", "--output"]).arg(&out).arg("in.wav"));
    assert_eq!(o.status.code(), Some(2));
    let err = fold(&o.stderr);
    assert!(err.contains("possible values") && names.iter().all(|n| err.contains(n)), "{err}");
    assert!(!out.exists());
}
