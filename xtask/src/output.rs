//! Where a render's output goes, and how it gets there without ever leaving a half-written
//! or wrongly-typed file behind.
//!
//! What `--output PATH` (or a file in `--out-dir`) does, by what `PATH` is now:
//!
//! | `PATH` is | the render |
//! |---|---|
//! | missing | is written to a temporary file beside it, flushed to disk, renamed to `PATH`, and the folder flushed |
//! | a writable regular file | the same; the new file keeps the old one's permissions (and owner, when run as root) |
//! | a read-only regular file | is refused; the file is untouched |
//! | a symbolic link | goes to the file the link points to (by the rules above); the link stays a link |
//! | a FIFO or a character/block device | is staged in a temporary file and, once complete, written through the node; the node stays what it was |
//! | a directory or a socket | is refused |
//!
//! Temporary files are named `.NAME.ferrofx-render-XXXXXX.tmp` and locked while in use, so
//! one left by a killed render is recognised and removed by the next render of the same
//! output as soon as no process holds its lock (a temporary file still locked by a
//! running render is left alone). A render that creates its temporary file locks it and
//! then checks that the name still leads to its file: a cleaner that took the file for
//! stale in the moment between its creation and its lock has removed it, and the render
//! starts a new one. So no age threshold is needed.

use crate::encode::{ClipReport, Container, OutputFormat, Quantizer, Reduction};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::{File, Metadata};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The marker in temporary file names.
const TEMP_MARK: &str = ".ferrofx-render-";
const TEMP_SUFFIX: &str = ".tmp";

/// What the render will do with its destination.
#[derive(Debug)]
enum Target {
    /// Write a temporary file beside `path` and rename it over `path` (which may or may
    /// not exist; `existing` is its metadata when it does).
    Replace { path: PathBuf, existing: Option<Metadata> },
    /// Write through the node at `path` (a FIFO or device) once the render is complete.
    Stream { path: PathBuf },
}

/// Follows symbolic links to the path that will receive the data and decides by its kind.
fn resolve(requested: &Path) -> Result<Target> {
    let mut path = requested.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Replace { path, existing: None }),
            Err(e) => bail!("cannot inspect {}: {e}", path.display()),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let to = std::fs::read_link(&path).with_context(|| format!("cannot read the link {}", path.display()))?;
            path = match path.parent() {
                Some(parent) if to.is_relative() => parent.join(to),
                _ => to,
            };
            continue;
        }
        if kind.is_dir() {
            bail!("{} is a directory; give a file name", requested.display());
        }
        if kind.is_file() {
            if is_read_only(&meta) {
                bail!("{} is read-only, so it is not replaced; make it writable or choose another name", path.display());
            }
            return Ok(Target::Replace { path, existing: Some(meta) });
        }
        if is_stream_node(&meta) {
            return Ok(Target::Stream { path });
        }
        bail!("{} is neither a file, a FIFO nor a device (a socket?); not written", path.display());
    }
    bail!("{}: too many levels of symbolic links", requested.display())
}

#[cfg(unix)]
fn is_read_only(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    // By the mode bits, not by whether this process could write (root always can).
    meta.permissions().mode() & 0o222 == 0
}

#[cfg(not(unix))]
fn is_read_only(meta: &Metadata) -> bool {
    meta.permissions().readonly()
}

#[cfg(unix)]
fn is_stream_node(meta: &Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    t.is_fifo() || t.is_char_device() || t.is_block_device()
}

#[cfg(not(unix))]
fn is_stream_node(_: &Metadata) -> bool {
    false
}

/// Removes temporary files of earlier renders of `name` in `dir` that no process holds
/// any more (a render killed before it could clean up). Errors are ignored: a file that
/// cannot be removed is only clutter.
fn clear_stale(dir: &Path, name: &str) {
    let prefix = format!(".{name}{TEMP_MARK}");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else { continue };
        if !(n.starts_with(&prefix) && n.ends_with(TEMP_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        // A running render holds an exclusive lock on its temporary file until it ends;
        // the file is removed while this lock is held (see `staged_file` for the race
        // with a render that has just created its file).
        if let Ok(f) = File::open(&path) {
            if f.try_lock().is_ok() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Whether `path` still names the file open as `file` (the same device and inode).
#[cfg(unix)]
fn still_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_named(_: &File, path: &Path) -> bool {
    path.exists()
}

/// A temporary file, locked while it is written; removed on drop unless persisted.
fn staged_file(dir: &Path, name: &str) -> Result<(File, tempfile::TempPath)> {
    clear_stale(dir, name);
    let prefix = format!(".{name}{TEMP_MARK}");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMP_SUFFIX);
    // Temporary files are private (0600) by default; the render is an ordinary output
    // file, so create it like one (0666 less the umask).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    for _ in 0..16 {
        let temp = builder.tempfile_in(dir).with_context(|| format!("cannot write in {}", dir.display()))?;
        let (file, path) = temp.into_parts();
        file.lock().with_context(|| format!("cannot lock {}", path.display()))?;
        // Between the creation and the lock another render's cleaner may have found the
        // file unlocked and removed it: then this one is unnamed, and a new one is made.
        if still_named(&file, &path) {
            return Ok((file, path));
        }
        // Nothing to remove: `path` is gone or names another render's file.
        let _ = path.keep();
    }
    bail!("cannot keep a temporary file in {} (removed as soon as it was created, 16 times)", dir.display())
}

/// Flushes a folder's entries (the rename) to disk. Not every file system allows it;
/// where it fails the rename has still happened.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// What an output file holds: its layout and how its samples are made.
#[derive(Clone, Copy, Debug)]
pub struct OutputSpec {
    pub channels: usize,
    pub sample_rate: u32,
    /// The input's speaker positions (WAVE_FORMAT_EXTENSIBLE's `dwChannelMask`), kept.
    pub channel_mask: Option<u32>,
    pub format: OutputFormat,
    pub reduction: Reduction,
}

/// A rendered file being written to a temporary file, delivered to its destination by
/// [`AudioOutput::commit`] only once complete.
pub struct AudioOutput {
    writer: BufWriter<File>,
    encoder: Encoder,
    quantizer: Quantizer,
    temp: tempfile::TempPath,
    target: Target,
    /// The path the user named, for messages.
    requested: PathBuf,
    channels: usize,
    /// Interleaved integer samples of one block, reused.
    ints: Vec<i32>,
}

enum Encoder {
    Wav(WavState),
    Flac(Box<FlacState>),
}

struct WavState {
    format: OutputFormat,
    /// Where the data chunk's samples start (its length field is the 4 bytes before).
    data_at: u64,
    /// Where the `fact` chunk's sample count is (float formats).
    fact_at: Option<u64>,
    data_bytes: u64,
    frames: u64,
    /// Little-endian bytes of one block, reused.
    bytes: Vec<u8>,
}

/// FLAC frames encoded block by block (flacenc), the STREAMINFO rewritten at the end.
struct FlacState {
    config: flacenc::error::Verified<flacenc::config::Encoder>,
    info: flacenc::component::StreamInfo,
    frame: flacenc::source::FrameBuf,
    context: flacenc::source::Context,
    /// Interleaved samples not yet a whole FLAC block.
    pending: Vec<i32>,
    frames_written: usize,
}

/// The bytes of a FLAC component (flacenc writes whole bytes for STREAMINFO and frames).
fn flac_bytes<T: flacenc::component::BitRepr>(c: &T) -> Result<Vec<u8>> {
    let mut sink = flacenc::bitsink::MemSink::<u8>::with_capacity(c.count_bits());
    c.write(&mut sink).map_err(|e| anyhow!("FLAC encoder: {e:?}"))?;
    Ok(sink.into_inner())
}

/// Frames per FLAC block (the reference encoder's default at 44.1/48 kHz).
const FLAC_BLOCK: usize = 4096;
/// FLAC holds at most this many channels.
pub const FLAC_MAX_CHANNELS: usize = 8;

/// The speaker mask a WAV reader assumes for `channels` channels without one.
fn default_wav_mask(channels: usize) -> u32 {
    if channels <= 18 { (1u32 << channels) - 1 } else { 0 }
}

/// The speaker positions FLAC implies for each channel count (its format specification).
fn flac_mask(channels: usize) -> u32 {
    [0x4, 0x3, 0x7, 0x33, 0x37, 0x3F, 0x70F, 0x63F][channels - 1]
}

/// A WAV header for `spec` with zero lengths (patched at commit), and where the data
/// and the `fact` count go. Written here rather than by hound: hound's `WavSpec` cannot
/// carry a speaker mask, and the render keeps the input's.
fn wav_header(spec: &OutputSpec) -> Result<(Vec<u8>, u64, Option<u64>)> {
    let channels = u16::try_from(spec.channels).context("too many channels for WAV")?;
    let float = spec.format.int_bits().is_none();
    let bytes = spec.format.wav_bytes_per_sample() as u16;
    let bits = bytes * 8;
    let tag: u16 = if float { 3 } else { 1 };
    let mask = spec.channel_mask.unwrap_or_else(|| default_wav_mask(spec.channels));
    // WAVE_FORMAT_EXTENSIBLE where plain WAV is ambiguous (more than two channels, integer
    // samples wider than 16 bits) or the input named its speakers.
    let extensible = spec.channels > 2 || (!float && bits > 16) || spec.channel_mask.is_some();
    let mut fmt = Vec::new();
    fmt.extend_from_slice(&(if extensible { 0xFFFEu16 } else { tag }).to_le_bytes());
    fmt.extend_from_slice(&channels.to_le_bytes());
    fmt.extend_from_slice(&spec.sample_rate.to_le_bytes());
    fmt.extend_from_slice(&(spec.sample_rate * u32::from(channels) * u32::from(bytes)).to_le_bytes());
    fmt.extend_from_slice(&(channels * bytes).to_le_bytes());
    fmt.extend_from_slice(&bits.to_le_bytes());
    if extensible {
        fmt.extend_from_slice(&22u16.to_le_bytes());
        fmt.extend_from_slice(&bits.to_le_bytes());
        fmt.extend_from_slice(&mask.to_le_bytes());
        // KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT: the tag, then the fixed GUID tail.
        fmt.extend_from_slice(&u32::from(tag).to_le_bytes());
        fmt.extend_from_slice(&[0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]);
    } else if float {
        fmt.extend_from_slice(&0u16.to_le_bytes());
    }
    let mut h = Vec::new();
    h.extend_from_slice(b"RIFF\0\0\0\0WAVEfmt ");
    h.extend_from_slice(&(fmt.len() as u32).to_le_bytes());
    h.extend_from_slice(&fmt);
    // Non-PCM WAV carries a `fact` chunk: the length in frames.
    let fact_at = if float {
        h.extend_from_slice(b"fact");
        h.extend_from_slice(&4u32.to_le_bytes());
        let at = h.len() as u64;
        h.extend_from_slice(&0u32.to_le_bytes());
        Some(at)
    } else {
        None
    };
    h.extend_from_slice(b"data\0\0\0\0");
    let data_at = h.len() as u64;
    Ok((h, data_at, fact_at))
}

/// The FLAC stream's head: the marker, STREAMINFO (rewritten at commit) and, where the
/// speakers differ from FLAC's default for the channel count, the Vorbis comment
/// `WAVEFORMATEXTENSIBLE_CHANNEL_MASK` that the reference tools read and write.
fn flac_head(info: &flacenc::component::StreamInfo, spec: &OutputSpec) -> Result<Vec<u8>> {
    let comment = spec.channel_mask.filter(|&m| m != flac_mask(spec.channels)).map(|m| {
        let vendor = b"FerroFX";
        let tag = format!("WAVEFORMATEXTENSIBLE_CHANNEL_MASK=0x{m:04X}");
        let mut b = Vec::new();
        b.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
        b.extend_from_slice(vendor);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(tag.len() as u32).to_le_bytes());
        b.extend_from_slice(tag.as_bytes());
        b
    });
    let mut h = b"fLaC".to_vec();
    h.push(if comment.is_some() { 0x00 } else { 0x80 });
    h.extend_from_slice(&34u32.to_be_bytes()[1..]);
    h.extend_from_slice(&flac_bytes(info)?);
    if let Some(c) = comment {
        h.push(0x80 | 4);
        h.extend_from_slice(&(c.len() as u32).to_be_bytes()[1..]);
        h.extend_from_slice(&c);
    }
    Ok(h)
}

impl AudioOutput {
    /// Opens the temporary file for `destination` and writes the header. `frames`, when
    /// known, lets a WAV that could not hold them be refused before any work.
    pub fn create(destination: &Path, spec: OutputSpec, frames: Option<u64>) -> Result<AudioOutput> {
        if spec.format.container() == Container::Flac && spec.channels > FLAC_MAX_CHANNELS {
            bail!("FLAC holds at most {FLAC_MAX_CHANNELS} channels and the input has {}; write WAV (--format wav-24, ...)", spec.channels);
        }
        if let (Container::Wav, Some(frames)) = (spec.format.container(), frames) {
            let bytes = frames * spec.channels as u64 * spec.format.wav_bytes_per_sample();
            if bytes + 80 > u64::from(u32::MAX) {
                bail!(
                    "{} frames of {} channels in {} need {:.2} GiB, more than the 4 GiB a WAV file can hold; nothing written (write FLAC, or fewer bytes per sample)",
                    frames,
                    spec.channels,
                    spec.format.name(),
                    bytes as f64 / f64::from(1u32 << 30)
                );
            }
        }
        let target = resolve(destination)?;
        let name = destination.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "output".into());
        let (file, temp) = match &target {
            Target::Replace { path, .. } => {
                let dir = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let final_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(name);
                staged_file(&dir, &final_name)?
            }
            // Never create files beside a device node (`/dev`): stage in the temp folder.
            Target::Stream { .. } => staged_file(&std::env::temp_dir(), &name)?,
        };
        let context = || format!("cannot write {}", destination.display());
        let mut writer = BufWriter::with_capacity(1 << 16, file);
        let encoder = match spec.format.container() {
            Container::Wav => {
                let (header, data_at, fact_at) = wav_header(&spec)?;
                writer.write_all(&header).with_context(context)?;
                Encoder::Wav(WavState { format: spec.format, data_at, fact_at, data_bytes: 0, frames: 0, bytes: Vec::new() })
            }
            Container::Flac => {
                use flacenc::error::Verify;
                let bits = spec.format.int_bits().expect("FLAC is integer") as usize;
                let flac_error = |e: &dyn std::fmt::Display| anyhow!("FLAC encoder: {e}");
                let config = flacenc::config::Encoder::default().into_verified().map_err(|e| flac_error(&e.1))?;
                let info = flacenc::component::StreamInfo::new(spec.sample_rate as usize, spec.channels, bits).map_err(|e| flac_error(&e))?;
                let frame = flacenc::source::FrameBuf::with_size(spec.channels, FLAC_BLOCK).map_err(|e| flac_error(&e))?;
                writer.write_all(&flac_head(&info, &spec)?).with_context(context)?;
                Encoder::Flac(Box::new(FlacState {
                    config,
                    info,
                    frame,
                    context: flacenc::source::Context::new(bits, spec.channels),
                    pending: Vec::new(),
                    frames_written: 0,
                }))
            }
        };
        Ok(AudioOutput {
            writer,
            encoder,
            quantizer: Quantizer::new(spec.format, spec.channels, spec.reduction),
            temp,
            target,
            requested: destination.to_path_buf(),
            channels: spec.channels,
            ints: Vec::new(),
        })
    }

    /// Appends `frames` frames from planar buffers.
    pub fn write(&mut self, planar: &[Vec<f32>], frames: usize) -> Result<()> {
        let channels = self.channels;
        let context = || format!("writing {}", self.requested.display());
        match &mut self.encoder {
            Encoder::Wav(w) => {
                let per = w.format.wav_bytes_per_sample() as usize;
                w.bytes.clear();
                w.bytes.reserve(frames * channels * per);
                match w.format {
                    OutputFormat::WavF32 | OutputFormat::WavF64 => {
                        self.quantizer.check_float(planar, frames);
                        for i in 0..frames {
                            for ch in planar.iter().take(channels) {
                                if w.format == OutputFormat::WavF32 {
                                    w.bytes.extend_from_slice(&ch[i].to_le_bytes());
                                } else {
                                    w.bytes.extend_from_slice(&f64::from(ch[i]).to_le_bytes());
                                }
                            }
                        }
                    }
                    _ => {
                        self.quantizer.quantize(planar, frames, &mut self.ints);
                        for v in &self.ints {
                            w.bytes.extend_from_slice(&v.to_le_bytes()[..per]);
                        }
                    }
                }
                let data_bytes = w.data_bytes + w.bytes.len() as u64;
                // RIFF sizes are 32-bit: refuse before writing what no header could
                // describe (with the pad byte an odd length needs).
                if w.data_at - 8 + data_bytes + (data_bytes & 1) > u64::from(u32::MAX) {
                    bail!("{} would exceed the 4 GiB a WAV file can hold; nothing written", self.requested.display());
                }
                self.writer.write_all(&w.bytes).with_context(context)?;
                w.data_bytes = data_bytes;
                w.frames += frames as u64;
            }
            Encoder::Flac(f) => {
                self.quantizer.quantize(planar, frames, &mut self.ints);
                let mut pending = std::mem::take(&mut f.pending);
                pending.extend_from_slice(&self.ints);
                let block = FLAC_BLOCK * channels;
                let mut at = 0;
                while pending.len() - at >= block {
                    f.encode(&pending[at..at + block], &mut self.writer).with_context(context)?;
                    at += block;
                }
                pending.drain(..at);
                f.pending = pending;
            }
        }
        Ok(())
    }

    /// Completes the file (WAV lengths; FLAC's last block and STREAMINFO), flushes it
    /// to disk and delivers it: renamed over its destination, or written through a FIFO
    /// or device. Returns what went beyond full scale.
    pub fn commit(self) -> Result<ClipReport> {
        let AudioOutput { mut writer, encoder, quantizer, temp, target, requested, .. } = self;
        let context = || format!("writing {}", requested.display());
        match encoder {
            Encoder::Wav(w) => {
                if w.data_bytes & 1 == 1 {
                    writer.write_all(&[0]).with_context(context)?;
                }
                let mut file = writer.into_inner().map_err(|e| e.into_error()).with_context(context)?;
                // `write` keeps both within u32.
                let riff_len = (w.data_at - 8 + w.data_bytes + (w.data_bytes & 1)) as u32;
                file.seek(SeekFrom::Start(4)).with_context(context)?;
                file.write_all(&riff_len.to_le_bytes()).with_context(context)?;
                file.seek(SeekFrom::Start(w.data_at - 4)).with_context(context)?;
                file.write_all(&(w.data_bytes as u32).to_le_bytes()).with_context(context)?;
                if let Some(at) = w.fact_at {
                    file.seek(SeekFrom::Start(at)).with_context(context)?;
                    file.write_all(&u32::try_from(w.frames).unwrap_or(u32::MAX).to_le_bytes()).with_context(context)?;
                }
                deliver(file, temp, target, &requested)?;
            }
            Encoder::Flac(mut f) => {
                let rest = std::mem::take(&mut f.pending);
                if !rest.is_empty() {
                    f.encode(&rest, &mut writer).with_context(context)?;
                }
                let flac_error = |e: flacenc::error::VerifyError| anyhow!("FLAC encoder: {e}");
                f.info.set_md5_digest(&f.context.md5_digest());
                f.info.set_block_sizes(FLAC_BLOCK, FLAC_BLOCK).map_err(flac_error)?;
                if f.frames_written == 0 {
                    f.info.set_frame_sizes(0, 0).map_err(flac_error)?;
                }
                let mut file = writer.into_inner().map_err(|e| e.into_error()).with_context(context)?;
                file.seek(SeekFrom::Start(8)).with_context(context)?;
                file.write_all(&flac_bytes(&f.info)?).with_context(context)?;
                deliver(file, temp, target, &requested)?;
            }
        }
        Ok(quantizer.clips)
    }
}

impl FlacState {
    /// Encodes one block of interleaved samples (a whole [`FLAC_BLOCK`], or the last,
    /// shorter one) and appends the frame.
    fn encode(&mut self, interleaved: &[i32], out: &mut impl Write) -> Result<()> {
        use flacenc::source::Fill;
        let flac_error = |e: &dyn std::fmt::Display| anyhow!("FLAC encoder: {e}");
        self.frame.fill_interleaved(interleaved).map_err(|e| flac_error(&e))?;
        self.context.fill_interleaved(interleaved).map_err(|e| flac_error(&e))?;
        let number = self.context.current_frame_number().unwrap_or(0);
        let frame = flacenc::encode_fixed_size_frame(&self.config, &self.frame, number, &self.info).map_err(|e| flac_error(&e))?;
        self.info.update_frame_info(&frame);
        out.write_all(&flac_bytes(&frame)?)?;
        self.frames_written += 1;
        Ok(())
    }
}

/// Flushes the finished temporary file and puts it where it belongs.
fn deliver(mut file: File, temp: tempfile::TempPath, target: Target, requested: &Path) -> Result<()> {
    let context = || format!("writing {}", requested.display());
    match target {
        Target::Replace { path, existing } => {
            if let Some(meta) = &existing {
                keep_owner_and_mode(&file, meta);
            }
            file.sync_all().with_context(context)?;
            drop(file);
            temp.persist(&path).map_err(|e| anyhow!("cannot replace {}: {}", path.display(), e.error))?;
            sync_dir(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")));
        }
        Target::Stream { path } => {
            file.seek(SeekFrom::Start(0)).with_context(context)?;
            let mut node = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open {} for writing", path.display()))?;
            std::io::copy(&mut file, &mut node).with_context(|| format!("writing through {}", path.display()))?;
            node.flush().with_context(|| format!("writing through {}", path.display()))?;
            // The staged copy is removed when `temp` drops.
            drop(temp);
        }
    }
    Ok(())
}

/// Gives the new file the permissions (and, where allowed, the owner) of the file it
/// replaces. Failing to change the owner is not an error: only root may.
#[cfg(unix)]
fn keep_owner_and_mode(file: &File, old: &Metadata) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _ = file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777));
    let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
}

#[cfg(not(unix))]
fn keep_owner_and_mode(file: &File, old: &Metadata) {
    let _ = file.set_permissions(old.permissions());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_wavs_read_back_and_a_wav_past_4_gib_is_refused_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.wav");
        let planar = vec![vec![0.5f32, -0.25, 1.0e-3], vec![-1.0f32, 0.0, 3.0]];
        let mut w = AudioOutput::create(&path, float_spec(2), None).unwrap();
        w.write(&planar, 3).unwrap();
        let clips = w.commit().unwrap();
        assert_eq!((clips.samples, clips.first), (1, Some((2, 1))), "3.0 is over full scale, kept");
        let mut r = hound::WavReader::open(&path).unwrap();
        assert_eq!(r.spec().channels, 2);
        assert_eq!(r.spec().sample_format, hound::SampleFormat::Float);
        let got: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).collect();
        assert_eq!(got, vec![0.5, -1.0, -0.25, 0.0, 1.0e-3, 3.0]);

        // A writer that already holds just under 4 GiB of samples: the next block would
        // overflow the RIFF sizes, so it is refused and nothing reaches the file.
        let big = dir.path().join("big.wav");
        let mut w = AudioOutput::create(&big, float_spec(2), None).unwrap();
        let Encoder::Wav(state) = &mut w.encoder else { unreachable!() };
        state.data_bytes = u64::from(u32::MAX) - state.data_at;
        let err = w.write(&planar, 3).unwrap_err().to_string();
        assert!(err.contains("4 GiB"), "{err}");
        drop(w);
        assert!(!big.exists(), "an uncommitted render must not appear at its destination");
        // Nothing but the committed file is left in the folder.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.wav")]);
    }

    /// A temporary file whose render is gone is stale at once, whatever its age; one whose
    /// lock is held is kept.
    #[test]
    fn stale_temporaries_are_cleared_and_locked_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(format!(".out.wav{TEMP_MARK}old{TEMP_SUFFIX}"));
        let busy = dir.path().join(format!(".out.wav{TEMP_MARK}busy{TEMP_SUFFIX}"));
        let other = dir.path().join(format!(".other.wav{TEMP_MARK}old{TEMP_SUFFIX}"));
        for p in [&stale, &busy, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        let holder = File::open(&busy).unwrap();
        holder.lock().unwrap();
        clear_stale(dir.path(), "out.wav");
        assert!(!stale.exists(), "an unlocked temporary of this output is stale");
        assert!(busy.exists(), "a locked temporary belongs to a running render");
        assert!(other.exists(), "another output's temporaries are not ours to clear");
    }

    /// The check a render makes after locking its new temporary file: a file removed by
    /// a cleaner in between is seen as unnamed (and replaced by a new one).
    #[test]
    fn a_temporary_removed_before_its_lock_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let (file, path) = staged_file(dir.path(), "out.wav").unwrap();
        assert!(still_named(&file, &path));
        std::fs::remove_file(&path).unwrap();
        assert!(!still_named(&file, &path));
        std::fs::write(&path, b"another file under the same name").unwrap();
        assert!(!still_named(&file, &path));
    }

    #[test]
    fn a_wav_too_long_for_4_gib_or_a_flac_of_9_channels_is_refused_before_any_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.wav");
        let spec = OutputSpec { format: OutputFormat::WavF64, ..float_spec(8) };
        let e = AudioOutput::create(&path, spec, Some(70_000_000)).err().unwrap().to_string();
        assert!(e.contains("4 GiB") && e.contains("wav-f64"), "{e}");
        let spec = OutputSpec { format: OutputFormat::Flac24, ..float_spec(9) };
        let e = AudioOutput::create(&dir.path().join("out.flac"), spec, Some(10)).err().unwrap().to_string();
        assert!(e.contains("at most 8 channels"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing is created");
    }

    fn float_spec(channels: usize) -> OutputSpec {
        OutputSpec { channels, sample_rate: 44_100, channel_mask: None, format: OutputFormat::WavF32, reduction: Reduction::default() }
    }
}
