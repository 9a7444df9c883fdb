//! Audio file input (streaming, block by block) and atomic float32 WAV output.
//!
//! Input: `hound` reads the WAV header (any channel count, 8/16/24/32-bit integer, 32-bit
//! float); up to 8 channels the samples are then decoded by `symphonia`, whole packets at
//! a time (hound's reader goes sample by sample: ~80 % of a pure-I/O render's CPU time on
//! long files, measured with `perf`), wider files by hound. What hound does not read
//! (FLAC, 64-bit float WAV, ...) goes through `symphonia`.
//!
//! Output: `hound` writes the float32 WAV header, the samples are written in bulk (hound
//! has no bulk write for float samples; one call per sample cost ~20 %) and the two size
//! fields are set at the end, as hound's own `finalize` does. The file is a temporary one
//! in the destination folder, renamed over the destination only once complete, so an
//! existing file is never left truncated or half-written.

use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
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
}

impl AudioReader {
    pub fn open(path: &Path) -> Result<AudioReader> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        match hound::WavReader::new(BufReader::new(file)) {
            Ok(reader) => {
                let spec = reader.spec();
                let int_scale = match spec.sample_format {
                    hound::SampleFormat::Float => None,
                    hound::SampleFormat::Int => Some(1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32),
                };
                let info = AudioInfo {
                    channels: spec.channels as usize,
                    sample_rate: spec.sample_rate,
                    frames: Some(u64::from(reader.duration())),
                };
                // symphonia decodes whole packets; its WAV reader derives a speaker
                // mask from the channel count, which overflows beyond 32 channels
                // (a panic in symphonia-format-riff 0.5.5), so wide files stay with hound.
                if info.channels <= SYMPHONIA_MAX_CHANNELS {
                    if let Ok(s) = SymphoniaReader::open(path) {
                        if s.info.channels == info.channels && s.info.sample_rate == info.sample_rate {
                            return Ok(AudioReader::Symphonia(Box::new(s)));
                        }
                    }
                }
                Ok(AudioReader::Wav { reader, info, int_scale })
            }
            // Not a WAV hound reads (FLAC, 64-bit float WAV, ...): let symphonia try.
            Err(_) => Ok(AudioReader::Symphonia(Box::new(SymphoniaReader::open(path)?))),
        }
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
    fn open(path: &Path) -> Result<SymphoniaReader> {
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
            info: AudioInfo { channels, sample_rate, frames: params.n_frames },
            pending: Vec::new(),
            samples: None,
            pos: 0,
            finished: false,
        })
    }

    /// Decodes the next packet of our track into `pending`; false at the end.
    fn decode_next(&mut self) -> Result<bool> {
        loop {
            let packet = match self.format.next_packet() {
                Ok(p) => p,
                Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => bail!("reading the stream: {e}"),
            };
            if packet.track_id() != self.track_id {
                continue;
            }
            let decoded = self.decoder.decode(&packet).map_err(|e| anyhow!("decoding: {e}"))?;
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

/// A float32 WAV being written to a temporary file beside its destination.
pub struct AtomicWavWriter {
    writer: BufWriter<File>,
    /// Bytes of the header hound wrote (its last field is the data chunk's length).
    header_len: u64,
    data_bytes: u64,
    /// Interleaved little-endian bytes of one block, reused.
    bytes: Vec<u8>,
    temp: tempfile::TempPath,
    destination: PathBuf,
    channels: usize,
}

impl AtomicWavWriter {
    pub fn create(destination: &Path, channels: usize, sample_rate: u32) -> Result<AtomicWavWriter> {
        let dir = match destination.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = destination.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // Temporary files are private (0600) by default; the render is an ordinary
        // output file, so create it like one (0666 less the umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder
            .tempfile_in(&dir)
            .with_context(|| format!("cannot write in {}", dir.display()))?;
        let (mut file, temp) = temp.into_parts();
        let spec = hound::WavSpec {
            channels: u16::try_from(channels).context("too many channels for WAV")?,
            sample_rate,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        let context = || format!("cannot write {}", destination.display());
        // hound writes the header of an empty file; the data follows it.
        let header = file.try_clone().with_context(context)?;
        hound::WavWriter::new(BufWriter::new(header), spec).with_context(context)?.finalize().with_context(context)?;
        let header_len = file.seek(SeekFrom::End(0)).with_context(context)?;
        Ok(AtomicWavWriter {
            writer: BufWriter::with_capacity(1 << 16, file),
            header_len,
            data_bytes: 0,
            bytes: Vec::new(),
            temp,
            destination: destination.to_path_buf(),
            channels,
        })
    }

    /// Appends `frames` frames from planar buffers.
    pub fn write(&mut self, planar: &[Vec<f32>], frames: usize) -> Result<()> {
        let channels = self.channels;
        self.bytes.resize(frames * channels * 4, 0);
        for (c, ch) in planar.iter().take(channels).enumerate() {
            for (i, &v) in ch[..frames].iter().enumerate() {
                let at = (i * channels + c) * 4;
                self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        let data_bytes = self.data_bytes + self.bytes.len() as u64;
        // RIFF sizes are 32-bit: refuse before writing what no header could describe.
        if self.header_len - 8 + data_bytes > u64::from(u32::MAX) {
            bail!("{} would exceed the 4 GiB a WAV file can hold; nothing written", self.destination.display());
        }
        self.writer.write_all(&self.bytes).with_context(|| format!("writing {}", self.destination.display()))?;
        self.data_bytes = data_bytes;
        Ok(())
    }

    /// Completes the file (the RIFF and data chunk sizes) and moves it over the
    /// destination.
    pub fn commit(self) -> Result<()> {
        let AtomicWavWriter { writer, header_len, data_bytes, temp, destination, .. } = self;
        let context = || format!("writing {}", destination.display());
        let mut file = writer.into_inner().map_err(|e| e.into_error()).with_context(context)?;
        // `write` keeps both within u32.
        let riff_len = (header_len - 8 + data_bytes) as u32;
        file.seek(SeekFrom::Start(4)).with_context(context)?;
        file.write_all(&riff_len.to_le_bytes()).with_context(context)?;
        file.seek(SeekFrom::Start(header_len - 4)).with_context(context)?;
        file.write_all(&(data_bytes as u32).to_le_bytes()).with_context(context)?;
        file.flush().with_context(context)?;
        drop(file);
        temp.persist(&destination).map_err(|e| anyhow!("cannot replace {}: {}", destination.display(), e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_wavs_read_back_and_a_wav_past_4_gib_is_refused_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.wav");
        let planar = vec![vec![0.5f32, -0.25, 1.0e-3], vec![-1.0f32, 0.0, 3.0]];
        let mut w = AtomicWavWriter::create(&path, 2, 44_100).unwrap();
        w.write(&planar, 3).unwrap();
        w.commit().unwrap();
        let mut r = hound::WavReader::open(&path).unwrap();
        assert_eq!(r.spec().channels, 2);
        assert_eq!(r.spec().sample_format, hound::SampleFormat::Float);
        let got: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).collect();
        assert_eq!(got, vec![0.5, -1.0, -0.25, 0.0, 1.0e-3, 3.0]);

        // A writer that already holds just under 4 GiB of samples: the next block would
        // overflow the RIFF sizes, so it is refused and nothing reaches the file.
        let big = dir.path().join("big.wav");
        let mut w = AtomicWavWriter::create(&big, 2, 44_100).unwrap();
        w.data_bytes = u64::from(u32::MAX) - w.header_len;
        let err = w.write(&planar, 3).unwrap_err().to_string();
        assert!(err.contains("4 GiB"), "{err}");
        drop(w);
        assert!(!big.exists(), "an uncommitted render must not appear at its destination");
    }
}
