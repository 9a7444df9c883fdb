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
//! output (a temporary file still locked by a running render is left alone).

use anyhow::{anyhow, bail, Context, Result};
use std::fs::{File, Metadata};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The marker in temporary file names.
const TEMP_MARK: &str = ".ferrofx-render-";
const TEMP_SUFFIX: &str = ".tmp";
/// A temporary file younger than this is never taken for stale (it may be one that a
/// concurrent render has created and not locked yet).
const STALE_AFTER: Duration = Duration::from_secs(2);

/// Extensions of audio formats the renderer does not write: an output named so would
/// hold WAV data under a misleading name.
const OTHER_AUDIO_EXTENSIONS: &[&str] =
    &["flac", "mp3", "ogg", "oga", "opus", "aif", "aiff", "aifc", "m4a", "mp4", "aac", "wma", "wv", "caf", "w64", "rf64"];

/// Refuses output names whose extension promises another audio format.
pub fn check_output_name(path: &Path) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if let Some(ext) = ext.filter(|e| OTHER_AUDIO_EXTENSIONS.contains(&e.as_str())) {
        bail!(
            "{}: the renderer writes 32-bit float WAV only, so a .{ext} name would hold WAV data; name the output .wav",
            path.display()
        );
    }
    Ok(())
}

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
        let old_enough = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() >= STALE_AFTER);
        if !old_enough {
            continue;
        }
        // A running render holds an exclusive lock on its temporary file until it ends.
        if let Ok(f) = File::open(&path) {
            if f.try_lock().is_ok() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
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
    let temp = builder.tempfile_in(dir).with_context(|| format!("cannot write in {}", dir.display()))?;
    let (file, path) = temp.into_parts();
    file.lock().with_context(|| format!("cannot lock {}", path.display()))?;
    Ok((file, path))
}

/// Flushes a folder's entries (the rename) to disk. Not every file system allows it;
/// where it fails the rename has still happened.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A float32 WAV being written to a temporary file, delivered to its destination by
/// [`WavOutput::commit`] only once complete.
pub struct WavOutput {
    writer: BufWriter<File>,
    /// Bytes of the header hound wrote (its last field is the data chunk's length).
    header_len: u64,
    data_bytes: u64,
    /// Interleaved little-endian bytes of one block, reused.
    bytes: Vec<u8>,
    temp: tempfile::TempPath,
    target: Target,
    /// The path the user named, for messages.
    requested: PathBuf,
    channels: usize,
}

impl WavOutput {
    pub fn create(destination: &Path, channels: usize, sample_rate: u32) -> Result<WavOutput> {
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
        let spec = hound::WavSpec {
            channels: u16::try_from(channels).context("too many channels for WAV")?,
            sample_rate,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        let context = || format!("cannot write {}", destination.display());
        // hound writes the header of an empty file; the data follows it.
        let mut file = file;
        let header = file.try_clone().with_context(context)?;
        hound::WavWriter::new(BufWriter::new(header), spec).with_context(context)?.finalize().with_context(context)?;
        let header_len = file.seek(SeekFrom::End(0)).with_context(context)?;
        Ok(WavOutput {
            writer: BufWriter::with_capacity(1 << 16, file),
            header_len,
            data_bytes: 0,
            bytes: Vec::new(),
            temp,
            target,
            requested: destination.to_path_buf(),
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
            bail!("{} would exceed the 4 GiB a WAV file can hold; nothing written", self.requested.display());
        }
        self.writer.write_all(&self.bytes).with_context(|| format!("writing {}", self.requested.display()))?;
        self.data_bytes = data_bytes;
        Ok(())
    }

    /// Completes the file (the RIFF and data chunk sizes), flushes it to disk and
    /// delivers it: renamed over its destination, or written through a FIFO or device.
    pub fn commit(self) -> Result<()> {
        let WavOutput { writer, header_len, data_bytes, temp, target, requested, .. } = self;
        let context = || format!("writing {}", requested.display());
        let mut file = writer.into_inner().map_err(|e| e.into_error()).with_context(context)?;
        // `write` keeps both within u32.
        let riff_len = (header_len - 8 + data_bytes) as u32;
        file.seek(SeekFrom::Start(4)).with_context(context)?;
        file.write_all(&riff_len.to_le_bytes()).with_context(context)?;
        file.seek(SeekFrom::Start(header_len - 4)).with_context(context)?;
        file.write_all(&(data_bytes as u32).to_le_bytes()).with_context(context)?;
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
        let mut w = WavOutput::create(&path, 2, 44_100).unwrap();
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
        let mut w = WavOutput::create(&big, 2, 44_100).unwrap();
        w.data_bytes = u64::from(u32::MAX) - w.header_len;
        let err = w.write(&planar, 3).unwrap_err().to_string();
        assert!(err.contains("4 GiB"), "{err}");
        drop(w);
        assert!(!big.exists(), "an uncommitted render must not appear at its destination");
        // Nothing but the committed file is left in the folder.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.wav")]);
    }

    #[test]
    fn stale_temporaries_are_cleared_and_locked_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(format!(".out.wav{TEMP_MARK}old{TEMP_SUFFIX}"));
        let busy = dir.path().join(format!(".out.wav{TEMP_MARK}busy{TEMP_SUFFIX}"));
        let other = dir.path().join(format!(".other.wav{TEMP_MARK}old{TEMP_SUFFIX}"));
        for p in [&stale, &busy, &other] {
            std::fs::write(p, b"x").unwrap();
            let old = SystemTime::now() - Duration::from_secs(60);
            File::options().write(true).open(p).unwrap().set_modified(old).unwrap();
        }
        let holder = File::open(&busy).unwrap();
        holder.lock().unwrap();
        clear_stale(dir.path(), "out.wav");
        assert!(!stale.exists(), "an unlocked temporary of this output is stale");
        assert!(busy.exists(), "a locked temporary belongs to a running render");
        assert!(other.exists(), "another output's temporaries are not ours to clear");
    }

    #[test]
    fn other_audio_extensions_are_refused() {
        assert!(check_output_name(Path::new("x/out.FLAC")).unwrap_err().to_string().contains(".flac"));
        assert!(check_output_name(Path::new("out.mp3")).is_err());
        for ok in ["out.wav", "out.WAVE", "pipe", "take.1"] {
            check_output_name(Path::new(ok)).unwrap();
        }
    }
}
