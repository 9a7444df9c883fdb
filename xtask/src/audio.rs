//! Audio file input, streaming block by block. (Output: `output.rs`.)
//!
//! Every file's header is checked first (`header.rs`: consistent fields, sizes within
//! the file). Then `hound` reads the WAV header (any channel count, 8/16/24/32-bit integer, 32-bit
//! float); up to 8 channels the samples are then decoded by `symphonia`, whole packets at
//! a time (hound's reader goes sample by sample: ~80 % of a pure-I/O render's CPU time on
//! long files, measured with `perf`), wider files by hound. What hound does not read
//! (FLAC, 64-bit float WAV, ...) goes through `symphonia`.
//!
//! Damage: symphonia's FLAC reader skips a frame that fails its checksum and goes on with
//! the next one. Every packet carries its first frame's timestamp, so a skipped frame shows
//! as a gap, and a packet the decoder refuses as an error; a stream shorter than its header
//! states shows at the end. Each is an error, or, with `allow_damaged`, that many frames of
//! silence in its place (the output keeps the input's length) and a report of where.
//! A damaged *last* frame of a FLAC that does not state its length cannot be told from a
//! shorter stream: no decoder can see it.

use crate::header;
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{Decoder, DecoderOptions, CODEC_TYPE_NULL};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatOptions, FormatReader};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

/// WAV files with at most this many channels are decoded by symphonia, wider ones by hound.
const SYMPHONIA_MAX_CHANNELS: usize = 8;

/// What the decoder found in the file header.
#[derive(Clone, Copy, Debug)]
pub struct AudioInfo {
    pub channels: usize,
    pub sample_rate: u32,
    /// Total frames when the header says.
    pub frames: Option<u64>,
    /// The speaker positions the header names (`header::Header::channel_mask`).
    pub channel_mask: Option<u32>,
}

/// A streaming decoder yielding planar `f32` blocks.
pub enum AudioReader {
    Wav { reader: hound::WavReader<BufReader<File>>, info: AudioInfo, int_scale: Option<f32> },
    Symphonia(Box<SymphoniaReader>),
}

pub struct SymphoniaReader {
    format: Box<dyn FormatReader>,
    decoder: Box<dyn Decoder>,
    track_id: u32,
    info: AudioInfo,
    /// Decoded interleaved samples not yet handed out, from `pos`.
    pending: Vec<f32>,
    /// Conversion buffer, reused while packets fit.
    samples: Option<SampleBuffer<f32>>,
    pos: usize,
    finished: bool,
    /// The timestamp (frame) the next packet should start at.
    next_ts: u64,
    /// Frames of silence to hand out before `pending` (replacing damaged frames).
    silence: u64,
    allow_damaged: bool,
    /// Damaged regions replaced by silence: (first frame, frames).
    damage: Vec<(u64, u64)>,
}

impl AudioReader {
    /// Opens `path` after checking its header. With `allow_damaged`, frames that cannot
    /// be decoded become silence (see [`AudioReader::damage_report`]); otherwise they are
    /// an error.
    pub fn open(path: &Path, allow_damaged: bool) -> Result<AudioReader> {
        let checked = header::check(path)?;
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        match hound::WavReader::new(BufReader::new(file)) {
            Ok(reader) => {
                let spec = reader.spec();
                let int_scale = match spec.sample_format {
                    hound::SampleFormat::Float => None,
                    hound::SampleFormat::Int if (1..=32).contains(&spec.bits_per_sample) => {
                        Some(1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32)
                    }
                    hound::SampleFormat::Int => bail!("{} bits per integer sample is not readable", spec.bits_per_sample),
                };
                let info = AudioInfo {
                    channels: spec.channels as usize,
                    sample_rate: spec.sample_rate,
                    frames: Some(u64::from(reader.duration())),
                    channel_mask: checked.and_then(|h| h.channel_mask),
                };
                // symphonia decodes whole packets; its WAV reader derives a speaker
                // mask from the channel count, which overflows beyond 32 channels
                // (a panic in symphonia-format-riff 0.5.5), so wide files stay with hound.
                if checked.is_some_and(|h| h.frames != info.frames || h.channels != info.channels) {
                    bail!("the WAV header reads differently to two parsers (a damaged header)");
                }
                if info.channels <= SYMPHONIA_MAX_CHANNELS {
                    if let Ok(s) = SymphoniaReader::open(path, allow_damaged) {
                        if s.info.channels == info.channels && s.info.sample_rate == info.sample_rate {
                            let mut s = s;
                            s.info.channel_mask = info.channel_mask;
                            return Ok(AudioReader::Symphonia(Box::new(s)));
                        }
                    }
                }
                Ok(AudioReader::Wav { reader, info, int_scale })
            }
            // Not a WAV hound reads (FLAC, 64-bit float WAV, ...): let symphonia try.
            Err(_) => {
                let mut s = SymphoniaReader::open(path, allow_damaged)?;
                s.info.channel_mask = checked.and_then(|h| h.channel_mask);
                if let Some(h) = checked {
                    if (h.channels, h.sample_rate) != (s.info.channels, s.info.sample_rate) {
                        bail!("the header reads differently to two parsers (a damaged header)");
                    }
                }
                Ok(AudioReader::Symphonia(Box::new(s)))
            }
        }
    }

    /// With `allow_damaged`: a line saying how many frames were replaced by silence and
    /// where, or `None` when the stream was whole.
    pub fn damage_report(&self, sample_rate: u32) -> Option<String> {
        let AudioReader::Symphonia(s) = self else { return None };
        let (&(first, _), total) = (s.damage.first()?, s.damage.iter().map(|d| d.1).sum::<u64>());
        let secs = |f: u64| f as f64 / f64::from(sample_rate);
        Some(format!(
            "{total} damaged frames ({:.3} s) replaced by silence in {} region(s), the first at frame {first} ({:.3} s)",
            secs(total),
            s.damage.len(),
            secs(first)
        ))
    }

    pub fn info(&self) -> AudioInfo {
        match self {
            AudioReader::Wav { info, .. } => *info,
            AudioReader::Symphonia(s) => s.info,
        }
    }

    /// Fills `out[c][..n]` for every channel with the next `n <= max_frames` frames;
    /// returns `n` (0 at the end of the stream).
    pub fn read(&mut self, out: &mut [Vec<f32>], max_frames: usize) -> Result<usize> {
        match self {
            AudioReader::Wav { reader, info, int_scale } => {
                let channels = info.channels;
                let mut n = 0;
                match int_scale {
                    None => {
                        let mut samples = reader.samples::<f32>();
                        while n < max_frames {
                            for (c, ch) in out.iter_mut().enumerate().take(channels) {
                                match samples.next() {
                                    Some(s) => ch[n] = s.context("reading WAV samples")?,
                                    None if c == 0 => return Ok(n),
                                    None => bail!("the WAV data ends in the middle of a frame"),
                                }
                            }
                            n += 1;
                        }
                    }
                    Some(scale) => {
                        let scale = *scale;
                        let mut samples = reader.samples::<i32>();
                        while n < max_frames {
                            for (c, ch) in out.iter_mut().enumerate().take(channels) {
                                match samples.next() {
                                    Some(s) => ch[n] = s.context("reading WAV samples")? as f32 * scale,
                                    None if c == 0 => return Ok(n),
                                    None => bail!("the WAV data ends in the middle of a frame"),
                                }
                            }
                            n += 1;
                        }
                    }
                }
                Ok(n)
            }
            AudioReader::Symphonia(s) => s.read(out, max_frames),
        }
    }
}

impl SymphoniaReader {
    fn open(path: &Path, allow_damaged: bool) -> Result<SymphoniaReader> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mss = MediaSourceStream::new(Box::new(file), Default::default());
        let mut hint = Hint::new();
        if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
            hint.with_extension(ext);
        }
        let probed = symphonia::default::get_probe()
            .format(&hint, mss, &FormatOptions::default(), &MetadataOptions::default())
            .map_err(|e| anyhow!("not an audio file this build can read (WAV, FLAC): {e}"))?;
        let format = probed.format;
        let track = format
            .tracks()
            .iter()
            .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
            .ok_or_else(|| anyhow!("no audio track"))?;
        let params = track.codec_params.clone();
        let decoder = symphonia::default::get_codecs()
            .make(&params, &DecoderOptions::default())
            .map_err(|e| anyhow!("unsupported codec: {e}"))?;
        let channels = params.channels.map(|c| c.count()).ok_or_else(|| anyhow!("the file does not say its channel count"))?;
        let sample_rate = params.sample_rate.ok_or_else(|| anyhow!("the file does not say its sample rate"))?;
        Ok(SymphoniaReader {
            track_id: track.id,
            format,
            decoder,
            info: AudioInfo { channels, sample_rate, frames: params.n_frames, channel_mask: None },
            pending: Vec::new(),
            samples: None,
            pos: 0,
            finished: false,
            next_ts: 0,
            silence: 0,
            allow_damaged,
            damage: Vec::new(),
        })
    }

    /// Frames `first..first + frames` could not be decoded: an error, or silence.
    fn damaged(&mut self, first: u64, frames: u64, why: &str) -> Result<()> {
        if !self.allow_damaged {
            let fs = f64::from(self.info.sample_rate);
            bail!(
                "the stream is damaged: frames {first}..{} ({:.3} s from {:.3} s) {why}; nothing written (--allow-damaged replaces damaged frames with silence)",
                first + frames,
                frames as f64 / fs,
                first as f64 / fs
            );
        }
        self.damage.push((first, frames));
        self.silence += frames;
        Ok(())
    }

    /// Decodes the next packet of our track into `pending`; false at the end.
    fn decode_next(&mut self) -> Result<bool> {
        loop {
            let packet = match self.format.next_packet() {
                Ok(p) => p,
                Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    // A stream that ends before the frames its header states.
                    if let Some(stated) = self.info.frames.filter(|&n| n > self.next_ts) {
                        self.damaged(self.next_ts, stated - self.next_ts, "are missing at the end of the stream")?;
                        self.next_ts = stated;
                        return Ok(true);
                    }
                    return Ok(false);
                }
                Err(e) => bail!("reading the stream: {e}"),
            };
            if packet.track_id() != self.track_id {
                continue;
            }
            let ts = packet.ts();
            if ts > self.next_ts {
                // The reader skipped data it could not parse (a frame that failed its checksum).
                // The silence goes out before this packet's samples.
                self.damaged(self.next_ts, ts - self.next_ts, "failed their checks and were skipped by the decoder")?;
                self.next_ts = ts;
            }
            if ts < self.next_ts {
                bail!("the stream is damaged: a packet at frame {ts} overlaps frames already decoded (up to {})", self.next_ts);
            }
            let decoded = match self.decoder.decode(&packet) {
                Ok(d) => d,
                Err(SymphoniaError::DecodeError(e)) => {
                    let frames = packet.dur();
                    self.damaged(ts, frames, &format!("could not be decoded ({e})"))?;
                    self.next_ts = ts + frames;
                    return Ok(true);
                }
                Err(e) => bail!("decoding: {e}"),
            };
            self.next_ts = ts + decoded.frames() as u64;
            if decoded.spec().channels.count() != self.info.channels {
                bail!("the channel count changes inside the stream");
            }
            let fits = self.samples.as_ref().is_some_and(|b| b.capacity() >= decoded.capacity() * self.info.channels);
            if !fits {
                self.samples = Some(SampleBuffer::<f32>::new(decoded.capacity() as u64, *decoded.spec()));
            }
            let buf = self.samples.as_mut().expect("set above");
            buf.copy_interleaved_ref(decoded);
            self.pending.clear();
            self.pending.extend_from_slice(buf.samples());
            self.pos = 0;
            return Ok(true);
        }
    }

    fn read(&mut self, out: &mut [Vec<f32>], max_frames: usize) -> Result<usize> {
        let channels = self.info.channels;
        let mut n = 0;
        while n < max_frames {
            if self.silence > 0 {
                let take = (self.silence.min((max_frames - n) as u64)) as usize;
                for ch in out.iter_mut().take(channels) {
                    ch[n..n + take].fill(0.0);
                }
                self.silence -= take as u64;
                n += take;
                continue;
            }
            if self.pos >= self.pending.len() {
                if self.finished || !self.decode_next()? {
                    self.finished = true;
                    break;
                }
                continue;
            }
            let available = (self.pending.len() - self.pos) / channels;
            let take = available.min(max_frames - n);
            for i in 0..take {
                let frame = &self.pending[self.pos + i * channels..self.pos + (i + 1) * channels];
                for (ch, &s) in out.iter_mut().zip(frame) {
                    ch[n + i] = s;
                }
            }
            self.pos += take * channels;
            n += take;
        }
        Ok(n)
    }
}
