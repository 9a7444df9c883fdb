//! Impulse-response files as given-FIR stages: the samples exactly as written (WAV
//! integer and float, FLAC from the reference encoder), and every refusal with its reason.

use std::path::{Path, PathBuf};

use ferrofx::chain::MAX_GIVEN_TAPS;
use ferrofx::StageKind;
use ferrofx_plugin::control::ir::{self, IrError};
use ferrofx_testkit::Rng;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrofx-ir-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `frames` frames of `channels` channels; returns the samples as read back scaled.
fn write_int(
    path: &Path,
    bits: u16,
    channels: u16,
    rate: u32,
    frames: usize,
    seed: u64,
) -> Vec<f64> {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    let mut rng = Rng::new(seed);
    let full = 1i64 << (bits - 1);
    let mut out = Vec::new();
    for _ in 0..frames * channels as usize {
        let v = (rng.next_u64() % (2 * full as u64)) as i64 - full;
        w.write_sample(v as i32).unwrap();
        out.push(v as f64 / full as f64);
    }
    w.finalize().unwrap();
    out
}

#[test]
fn wav_and_flac_samples_arrive_exactly() {
    let d = dir("exact");
    for bits in [16u16, 24] {
        let wav = d.join(format!("i{bits}.wav"));
        let expected = write_int(&wav, bits, 1, 48_000, 5_000, u64::from(bits));
        let read = ir::read(&wav).unwrap();
        assert_eq!(read.sample_rate_hz, 48_000);
        assert_eq!(read.taps, expected, "{bits}-bit WAV");
        // The same samples through the reference FLAC encoder.
        let flac = d.join(format!("i{bits}.flac"));
        let ok = std::process::Command::new("flac")
            .args(["-s", "-f", "-o"])
            .arg(&flac)
            .arg(&wav)
            .status()
            .expect("the flac tool (scripts/install-deps.sh installs it)");
        assert!(ok.success());
        assert_eq!(ir::read(&flac).unwrap().taps, expected, "{bits}-bit FLAC");
    }
    let float = d.join("f32.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 96_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&float, spec).unwrap();
    let samples = ferrofx_testkit::noise_amp(3_001, 5, 2.5);
    for &s in &samples {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
    let read = ir::read(&float).unwrap();
    assert_eq!(read.sample_rate_hz, 96_000);
    assert_eq!(
        read.taps,
        samples.iter().map(|&s| f64::from(s)).collect::<Vec<_>>()
    );
    let stage = ir::fir_stage(&float, 96_000.0).unwrap();
    assert_eq!(stage.label.as_deref(), Some("f32.wav"));
    assert!(
        matches!(&stage.kind, StageKind::FirGiven { coefficients } if coefficients.len() == 3_001)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn unusable_files_are_refused_with_the_reason() {
    let d = dir("refused");
    let stereo = d.join("stereo.wav");
    write_int(&stereo, 16, 2, 48_000, 100, 1);
    assert_eq!(
        ir::read(&stereo),
        Err(IrError::Channels {
            path: stereo.display().to_string(),
            channels: 2
        })
    );
    let wide = d.join("wide.wav");
    write_int(&wide, 16, 40, 48_000, 10, 1);
    assert!(
        matches!(ir::read(&wide), Err(IrError::Channels { channels: 40, .. })),
        "refused before any decoder sees 40 channels"
    );

    let at44 = d.join("at44.wav");
    write_int(&at44, 16, 1, 44_100, 100, 2);
    let e = ir::fir_stage(&at44, 48_000.0).unwrap_err();
    assert!(
        matches!(
            e,
            IrError::SampleRate {
                file_hz: 44_100,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("resample"), "{e}");

    let empty = d.join("empty.wav");
    write_int(&empty, 16, 1, 48_000, 0, 3);
    assert!(matches!(ir::read(&empty), Err(IrError::Empty { .. })));

    // Cut short: the header states more frames than the file holds.
    let whole = d.join("whole.wav");
    write_int(&whole, 24, 1, 48_000, 4_000, 4);
    let bytes = std::fs::read(&whole).unwrap();
    let cut = d.join("cut.wav");
    std::fs::write(&cut, &bytes[..bytes.len() - 3_000]).unwrap();
    assert!(
        matches!(ir::read(&cut), Err(IrError::Damaged { .. })),
        "{:?}",
        ir::read(&cut)
    );

    // A header cut inside its format chunk: refused, never read past its end.
    let stub = d.join("stub.wav");
    let mut bytes = b"RIFF\x0f\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01".to_vec();
    assert_eq!(bytes.len(), 23);
    std::fs::write(&stub, &bytes).unwrap();
    assert!(matches!(ir::read(&stub), Err(IrError::NotAudio { .. })), "{:?}", ir::read(&stub));
    bytes.truncate(21);
    std::fs::write(&stub, &bytes).unwrap();
    assert!(matches!(ir::read(&stub), Err(IrError::NotAudio { .. })));

    let text = d.join("notes.wav");
    std::fs::write(&text, "not audio at all").unwrap();
    assert!(matches!(ir::read(&text), Err(IrError::NotAudio { .. })));
    assert!(
        matches!(ir::read(&d), Err(IrError::Read { .. })),
        "a directory"
    );
    assert!(matches!(
        ir::read(&d.join("missing.wav")),
        Err(IrError::Read { .. })
    ));

    let long = d.join("long.wav");
    write_int(&long, 16, 1, 48_000, MAX_GIVEN_TAPS + 1, 6);
    assert!(matches!(ir::read(&long), Err(IrError::TooLong { .. })));
    let _ = std::fs::remove_dir_all(&d);
}
