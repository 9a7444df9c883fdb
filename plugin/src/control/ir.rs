//! Impulse responses read from audio files (WAV or FLAC) into a given-FIR chain stage.
//!
//! The file must be mono (chain stages apply one filter to every channel), at the
//! session's sample rate (an impulse response at another rate would be a different
//! filter; it is refused, not resampled), between 1 and [`MAX_GIVEN_TAPS`] samples
//! long, and whole: a damaged or truncated stream is an error, never a shorter filter.
//! Every refusal names the file and what to do.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use ferrofx::chain::MAX_GIVEN_TAPS;
use ferrofx::{Stage, StageKind};
use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{DecoderOptions, CODEC_TYPE_NULL};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

/// Why a file is not usable as an impulse response.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IrError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path} is not an audio file this build reads (WAV, FLAC): {message}")]
    NotAudio { path: String, message: String },
    #[error("{path} has {channels} channels; chain stages apply one filter to every channel, so an impulse response must be mono (export one channel of it)")]
    Channels { path: String, channels: usize },
    #[error("{path} is at {file_hz} Hz but the session runs at {session_hz} Hz; resample the impulse response to {session_hz} Hz first (it is not converted here)")]
    SampleRate {
        path: String,
        file_hz: u32,
        session_hz: f64,
    },
    #[error("{path} holds no samples")]
    Empty { path: String },
    #[error("{path} is longer than {MAX_GIVEN_TAPS} samples, the most a given FIR may have (limits: docs/limits.md)")]
    TooLong { path: String },
    #[error("{path} is damaged: {message}")]
    Damaged { path: String, message: String },
}

/// A mono impulse response and the rate it was recorded at.
#[derive(Clone, Debug, PartialEq)]
pub struct ImpulseResponse {
    pub taps: Vec<f64>,
    pub sample_rate_hz: u32,
}

/// The channel count a RIFF/WAVE header states, read before any decoder sees the file
/// (symphonia's WAV reader panics on more than 32 channels). `None` for other files.
fn wav_channels(path: &Path) -> Result<Option<usize>, std::io::Error> {
    let mut head = Vec::new();
    File::open(path)?.take(1 << 16).read_to_end(&mut head)?;
    if head.len() < 12 || &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return Ok(None);
    }
    let mut at = 12;
    while at + 8 <= head.len() {
        let size =
            u32::from_le_bytes([head[at + 4], head[at + 5], head[at + 6], head[at + 7]]) as usize;
        if &head[at..at + 4] == b"fmt " && at + 12 <= head.len() {
            return Ok(Some(usize::from(u16::from_le_bytes([
                head[at + 10],
                head[at + 11],
            ]))));
        }
        at = at.saturating_add(8).saturating_add(size + (size & 1));
    }
    Ok(None)
}

/// Reads a mono WAV or FLAC file whole.
pub fn read(path: &Path) -> Result<ImpulseResponse, IrError> {
    let name = path.display().to_string();
    let read_error = |e: &dyn std::fmt::Display| IrError::Read {
        path: name.clone(),
        message: e.to_string(),
    };
    if std::fs::metadata(path)
        .map_err(|e| read_error(&e))?
        .is_dir()
    {
        return Err(read_error(&"is a directory"));
    }
    if let Some(channels) = wav_channels(path).map_err(|e| read_error(&e))? {
        if channels != 1 {
            return Err(IrError::Channels {
                path: name,
                channels,
            });
        }
    }
    let not_audio = |e: &dyn std::fmt::Display| IrError::NotAudio {
        path: name.clone(),
        message: e.to_string(),
    };
    let damaged = |m: String| IrError::Damaged {
        path: name.clone(),
        message: m,
    };
    let file = File::open(path).map_err(|e| read_error(&e))?;
    let mss = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let probed = symphonia::default::get_probe()
        .format(
            &hint,
            mss,
            &FormatOptions::default(),
            &MetadataOptions::default(),
        )
        .map_err(|e| not_audio(&e))?;
    let mut format = probed.format;
    let track = format
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| not_audio(&"no audio track"))?;
    let params = track.codec_params.clone();
    let track_id = track.id;
    let channels = params
        .channels
        .map(|c| c.count())
        .ok_or_else(|| not_audio(&"the file does not say its channel count"))?;
    if channels != 1 {
        return Err(IrError::Channels {
            path: name,
            channels,
        });
    }
    let sample_rate_hz = params
        .sample_rate
        .ok_or_else(|| not_audio(&"the file does not say its sample rate"))?;
    if params.n_frames.is_some_and(|n| n > MAX_GIVEN_TAPS as u64) {
        return Err(IrError::TooLong { path: name });
    }
    let mut decoder = symphonia::default::get_codecs()
        .make(&params, &DecoderOptions::default())
        .map_err(|e| not_audio(&e))?;
    let mut taps: Vec<f64> = Vec::new();
    let mut next_ts = 0u64;
    let mut buf: Option<SampleBuffer<f32>> = None;
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break
            }
            Err(e) => return Err(damaged(format!("reading the stream: {e}"))),
        };
        if packet.track_id() != track_id {
            continue;
        }
        if packet.ts() != next_ts {
            // The reader skipped a frame it could not check, or the stream overlaps itself.
            return Err(damaged(format!(
                "frames from {next_ts} are missing or repeated (the next packet starts at {})",
                packet.ts()
            )));
        }
        let decoded = decoder
            .decode(&packet)
            .map_err(|e| damaged(format!("frame {next_ts} could not be decoded ({e})")))?;
        next_ts += decoded.frames() as u64;
        if decoded.spec().channels.count() != 1 {
            return Err(damaged(String::from(
                "the channel count changes inside the stream",
            )));
        }
        if buf
            .as_ref()
            .is_none_or(|b| b.capacity() < decoded.capacity())
        {
            buf = Some(SampleBuffer::<f32>::new(
                decoded.capacity() as u64,
                *decoded.spec(),
            ));
        }
        let b = buf.as_mut().expect("set above");
        b.copy_interleaved_ref(decoded);
        taps.extend(b.samples().iter().map(|&s| f64::from(s)));
        if taps.len() > MAX_GIVEN_TAPS {
            return Err(IrError::TooLong { path: name });
        }
    }
    if let Some(stated) = params.n_frames.filter(|&n| n != taps.len() as u64) {
        return Err(damaged(format!(
            "the header states {stated} frames, the stream holds {}",
            taps.len()
        )));
    }
    if taps.is_empty() {
        return Err(IrError::Empty { path: name });
    }
    if let Some(i) = taps.iter().position(|t| !t.is_finite()) {
        return Err(damaged(format!("sample {i} is not a finite number")));
    }
    Ok(ImpulseResponse {
        taps,
        sample_rate_hz,
    })
}

/// A given-FIR stage of the impulse response in `path`, labelled with the file's name,
/// for a session at `session_hz`.
pub fn fir_stage(path: &Path, session_hz: f64) -> Result<Stage, IrError> {
    let ir = read(path)?;
    if f64::from(ir.sample_rate_hz) != session_hz {
        return Err(IrError::SampleRate {
            path: path.display().to_string(),
            file_hz: ir.sample_rate_hz,
            session_hz,
        });
    }
    let label = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Stage::new(StageKind::FirGiven {
        coefficients: ir.taps,
    })
    .labelled(label))
}
