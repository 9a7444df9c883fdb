//! Header checks run on every input before a decoder sees it.
//!
//! The decoders trust their headers: symphonia 0.5.5 panics on a WAV that says 0 Hz,
//! allocates whatever size a metadata chunk declares, and a WAV whose `nBlockAlign`
//! disagrees with its channels and bits decodes to nothing. So the header fields are
//! read here first (RIFF/WAVE chunks, FLAC metadata blocks), checked against each other
//! and against the file's real size, and any inconsistency is refused with the field,
//! its value and what it should be. Nothing here reads sample data, and nothing reads
//! more than [`MAX_METADATA_BYTES`] of metadata, whatever the header declares.

use anyhow::{bail, Context, Result};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Channel counts the renderer accepts (`docs/limits.md`).
pub const MAX_CHANNELS: usize = 64;
/// Sample rates the renderer accepts, in Hz.
pub const SAMPLE_RATES_HZ: std::ops::RangeInclusive<u32> = 8_000..=384_000;
/// The most metadata (WAV chunks other than `data`, FLAC metadata blocks) a file may
/// hold: the decoders read metadata into memory.
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

const WAVE_FORMAT_PCM: u16 = 1;
const WAVE_FORMAT_IEEE_FLOAT: u16 = 3;
const WAVE_FORMAT_ALAW: u16 = 6;
const WAVE_FORMAT_MULAW: u16 = 7;
const WAVE_FORMAT_EXTENSIBLE: u16 = 0xFFFE;

/// What the header says, once checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub channels: usize,
    pub sample_rate: u32,
    /// Frames, when the header states them (a streamed FLAC does not).
    pub frames: Option<u64>,
    /// The speaker positions, where the file names them: WAVE_FORMAT_EXTENSIBLE's
    /// `dwChannelMask`, or a FLAC's `WAVEFORMATEXTENSIBLE_CHANNEL_MASK` comment (without
    /// one a FLAC has its format's default layout for the channel count).
    pub channel_mask: Option<u32>,
}

/// Checks the header of `path` (WAV or FLAC). Other files are left to the decoder,
/// which refuses what it cannot read.
pub fn check(path: &Path) -> Result<Option<Header>> {
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("cannot open {}", path.display()))?;
    if meta.is_dir() {
        bail!("is a directory, not an audio file");
    }
    let len = meta.len();
    let mut magic = [0u8; 12];
    let got = read_up_to(&mut file, &mut magic)?;
    match &magic[..got.min(4)] {
        b"RIFF" if got == 12 && &magic[8..12] == b"WAVE" => wav(&mut file, len).map(Some),
        b"fLaC" => {
            file.seek(SeekFrom::Start(4))?;
            flac(&mut file, len).map(Some)
        }
        b"RIFF" | b"RIFX" | b"RF64" => bail!("not a WAV file this build reads (a RIFF file without a WAVE form, big-endian or RF64)"),
        _ => Ok(None),
    }
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The fields of a `fmt ` chunk that decide the layout of the samples.
struct Fmt {
    tag: u16,
    channels: u16,
    sample_rate: u32,
    block_align: u16,
    bits: u16,
    channel_mask: Option<u32>,
}

fn check_common(channels: usize, sample_rate: u32) -> Result<()> {
    if channels == 0 {
        bail!("the header says 0 channels");
    }
    if channels > MAX_CHANNELS {
        bail!("{channels} channels is out of range (1..={MAX_CHANNELS}); see docs/limits.md");
    }
    if sample_rate == 0 {
        bail!("the header says the sample rate is 0 Hz");
    }
    if !SAMPLE_RATES_HZ.contains(&sample_rate) {
        bail!("sample rate {sample_rate} Hz is out of range (8000..=384000 Hz); see docs/limits.md");
    }
    Ok(())
}

fn parse_fmt(body: &[u8]) -> Result<Fmt> {
    if body.len() < 16 {
        bail!("the WAV fmt chunk is {} bytes, shorter than the 16 every WAV needs", body.len());
    }
    let mut fmt = Fmt {
        tag: u16le(body, 0),
        channels: u16le(body, 2),
        sample_rate: u32le(body, 4),
        block_align: u16le(body, 12),
        bits: u16le(body, 14),
        channel_mask: None,
    };
    if fmt.tag == WAVE_FORMAT_EXTENSIBLE {
        if body.len() < 40 {
            bail!("the WAV fmt chunk says WAVE_FORMAT_EXTENSIBLE but is only {} bytes (40 needed)", body.len());
        }
        // The sub-format GUID starts with the format tag it stands for.
        fmt.tag = u16le(body, 24);
        fmt.channel_mask = Some(u32le(body, 20));
        // Readers scale integer samples by the valid bits, which must fit the container.
        let valid = u16le(body, 18);
        if valid == 0 || valid > fmt.bits || (fmt.tag == WAVE_FORMAT_IEEE_FLOAT && valid != fmt.bits) {
            bail!("the WAV header is inconsistent: {valid} valid bits in {}-bit samples", fmt.bits);
        }
    }
    check_common(usize::from(fmt.channels), fmt.sample_rate)?;
    let valid_bits: &[u16] = match fmt.tag {
        WAVE_FORMAT_PCM => &[8, 16, 24, 32],
        WAVE_FORMAT_IEEE_FLOAT => &[32, 64],
        WAVE_FORMAT_ALAW | WAVE_FORMAT_MULAW => &[8],
        other => bail!("WAV encoding 0x{other:04x} is not supported (PCM, IEEE float, A-law and mu-law are)"),
    };
    if !valid_bits.contains(&fmt.bits) {
        bail!("{} bits per sample is not valid for WAV encoding 0x{:04x} (expected one of {valid_bits:?})", fmt.bits, fmt.tag);
    }
    let expected = u32::from(fmt.channels) * u32::from(fmt.bits / 8);
    if u32::from(fmt.block_align) != expected {
        bail!(
            "the WAV header is inconsistent: nBlockAlign {} disagrees with {} channels of {} bits (expected {expected})",
            fmt.block_align,
            fmt.channels,
            fmt.bits
        );
    }
    Ok(fmt)
}

fn wav(file: &mut std::fs::File, len: u64) -> Result<Header> {
    let mut fmt: Option<Fmt> = None;
    let mut metadata: u64 = 0;
    let mut at: u64 = 12;
    loop {
        let mut head = [0u8; 8];
        file.seek(SeekFrom::Start(at))?;
        if read_up_to(file, &mut head)? < 8 {
            bail!("the WAV file ends before its data chunk (truncated, or not a WAV)");
        }
        let id = [head[0], head[1], head[2], head[3]];
        let size = u64::from(u32le(&head, 4));
        let body_at = at + 8;
        let left = len.saturating_sub(body_at);
        let name = String::from_utf8_lossy(&id).into_owned();
        if &id == b"data" {
            let Some(fmt) = fmt else { bail!("the WAV data chunk comes before any fmt chunk") };
            if size > left {
                bail!(
                    "the WAV header promises {size} bytes of samples but the file holds only {left} after the header (truncated, or a streamed WAV whose sizes were never written)"
                );
            }
            let frame = u64::from(fmt.block_align);
            if size % frame != 0 {
                bail!("the WAV data chunk is {size} bytes, not a whole number of {frame}-byte frames");
            }
            return Ok(Header {
                channels: usize::from(fmt.channels),
                sample_rate: fmt.sample_rate,
                frames: Some(size / frame),
                channel_mask: fmt.channel_mask,
            });
        }
        if size > left {
            bail!("the WAV chunk `{name}` declares {size} bytes but only {left} follow (a damaged header)");
        }
        metadata += size;
        if metadata > MAX_METADATA_BYTES {
            bail!("the WAV file holds more than {} MiB of chunks before its samples (see docs/limits.md)", MAX_METADATA_BYTES >> 20);
        }
        if &id == b"fmt " {
            if fmt.is_some() {
                bail!("the WAV file has two fmt chunks");
            }
            let mut body = vec![0u8; size as usize];
            file.read_exact(&mut body).context("reading the WAV fmt chunk")?;
            fmt = Some(parse_fmt(&body)?);
        }
        // Chunks are padded to an even length.
        at = body_at + size + (size & 1);
    }
}

fn flac(file: &mut std::fs::File, len: u64) -> Result<Header> {
    let mut at: u64 = 4;
    let mut header: Option<Header> = None;
    let mut metadata: u64 = 0;
    loop {
        let mut head = [0u8; 4];
        if read_up_to(file, &mut head)? < 4 {
            bail!("the FLAC file ends inside its metadata (truncated)");
        }
        let last = head[0] & 0x80 != 0;
        let kind = head[0] & 0x7f;
        let size = u64::from(u32::from_be_bytes([0, head[1], head[2], head[3]]));
        at += 4;
        if size > len.saturating_sub(at) {
            bail!("the FLAC metadata block of type {kind} declares {size} bytes but only {} follow", len.saturating_sub(at));
        }
        metadata += size;
        if metadata > MAX_METADATA_BYTES {
            bail!("the FLAC file holds more than {} MiB of metadata (see docs/limits.md)", MAX_METADATA_BYTES >> 20);
        }
        match (kind, header.is_some()) {
            (0, false) => {
                if size != 34 {
                    bail!("the FLAC STREAMINFO block is {size} bytes, not 34");
                }
                let mut b = [0u8; 34];
                file.read_exact(&mut b)?;
                let min_block = u16::from_be_bytes([b[0], b[1]]);
                let max_block = u16::from_be_bytes([b[2], b[3]]);
                let sample_rate = (u32::from(b[10]) << 12) | (u32::from(b[11]) << 4) | (u32::from(b[12]) >> 4);
                let channels = usize::from((b[12] >> 1) & 0x07) + 1;
                let total = ((u64::from(b[13]) & 0x0f) << 32) | u64::from(u32::from_be_bytes([b[14], b[15], b[16], b[17]]));
                check_common(channels, sample_rate)?;
                if min_block < 16 || max_block < min_block {
                    bail!("the FLAC STREAMINFO block sizes are invalid (minimum {min_block}, maximum {max_block}; at least 16 and minimum <= maximum)");
                }
                header = Some(Header { channels, sample_rate, frames: (total > 0).then_some(total), channel_mask: None });
            }
            (0, true) => bail!("the FLAC file has two STREAMINFO blocks"),
            (_, false) => bail!("the FLAC file does not start with a STREAMINFO block"),
            (127, _) => bail!("the FLAC file has an invalid metadata block type (127)"),
            (4, true) => {
                let mut body = vec![0u8; size as usize];
                file.read_exact(&mut body).context("reading the FLAC Vorbis comment")?;
                if let (Some(h), Some(mask)) = (header.as_mut(), vorbis_channel_mask(&body)) {
                    h.channel_mask = Some(mask);
                }
            }
            _ => {
                file.seek(SeekFrom::Current(size as i64))?;
            }
        }
        at += size;
        if last {
            return header.ok_or_else(|| anyhow::anyhow!("the FLAC file has no STREAMINFO block"));
        }
    }
}

/// The `WAVEFORMATEXTENSIBLE_CHANNEL_MASK=0x...` tag of a Vorbis comment block, if it
/// has one (a malformed block is the decoder's business: it is only not read here).
fn vorbis_channel_mask(body: &[u8]) -> Option<u32> {
    let len_at = |at: usize| body.get(at..at + 4).map(|b| u32le(b, 0) as usize);
    let mut at = 4 + len_at(0)?;
    let count = len_at(at)?;
    at += 4;
    for _ in 0..count {
        let n = len_at(at)?;
        let text = body.get(at + 4..at + 4 + n)?;
        at += 4 + n;
        let text = std::str::from_utf8(text).ok()?;
        if let Some((key, value)) = text.split_once('=') {
            if key.eq_ignore_ascii_case("WAVEFORMATEXTENSIBLE_CHANNEL_MASK") {
                let hex = value.trim().trim_start_matches("0x").trim_start_matches("0X");
                return u32::from_str_radix(hex, 16).ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav_bytes(tag: u16, channels: u16, rate: u32, bits: u16, block_align: u16, data: u32, actual: usize) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(b"RIFF");
        v.extend_from_slice(&(36 + actual as u32).to_le_bytes());
        v.extend_from_slice(b"WAVEfmt ");
        v.extend_from_slice(&16u32.to_le_bytes());
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&channels.to_le_bytes());
        v.extend_from_slice(&rate.to_le_bytes());
        v.extend_from_slice(&(rate * u32::from(block_align)).to_le_bytes());
        v.extend_from_slice(&block_align.to_le_bytes());
        v.extend_from_slice(&bits.to_le_bytes());
        v.extend_from_slice(b"data");
        v.extend_from_slice(&data.to_le_bytes());
        v.resize(v.len() + actual, 0);
        v
    }

    fn check_bytes(bytes: &[u8]) -> Result<Option<Header>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.wav");
        std::fs::write(&p, bytes).unwrap();
        check(&p)
    }

    #[test]
    fn consistent_wavs_pass_and_each_inconsistency_is_named() {
        let ok = check_bytes(&wav_bytes(1, 2, 48_000, 16, 4, 400, 400)).unwrap().unwrap();
        assert_eq!(ok, Header { channels: 2, sample_rate: 48_000, frames: Some(100), channel_mask: None });
        let cases: &[(Vec<u8>, &str)] = &[
            (wav_bytes(1, 2, 0, 16, 4, 400, 400), "0 Hz"),
            (wav_bytes(1, 2, 1_000, 16, 4, 400, 400), "1000 Hz is out of range"),
            (wav_bytes(1, 0, 48_000, 16, 0, 400, 400), "0 channels"),
            (wav_bytes(1, 65, 48_000, 16, 130, 1300, 1300), "65 channels"),
            (wav_bytes(1, 2, 48_000, 16, 65_535, 400, 400), "nBlockAlign 65535"),
            (wav_bytes(1, 2, 48_000, 12, 4, 400, 400), "12 bits"),
            (wav_bytes(3, 2, 48_000, 16, 4, 400, 400), "16 bits"),
            (wav_bytes(0x55, 2, 48_000, 16, 4, 400, 400), "0x0055"),
            (wav_bytes(1, 2, 48_000, 16, 4, 402, 402), "whole number"),
            (wav_bytes(1, 2, 48_000, 16, 4, 0xFFFF_FFFF, 400), "promises 4294967295 bytes"),
            (wav_bytes(1, 2, 48_000, 16, 4, 4000, 400), "promises 4000 bytes"),
        ];
        for (bytes, words) in cases {
            let e = check_bytes(bytes).unwrap_err().to_string();
            assert!(e.contains(words), "{words:?} not in {e:?}");
        }
        // A metadata chunk declaring more than the file holds: refused without reading it.
        let mut v = wav_bytes(1, 2, 48_000, 16, 4, 400, 400);
        let data_at = v.len() - 408;
        let mut list = b"LIST".to_vec();
        list.extend_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        v.splice(data_at..data_at, list);
        assert!(check_bytes(&v).unwrap_err().to_string().contains("declares 4294967280 bytes"));
    }

    #[test]
    fn flac_streaminfo_is_checked() {
        let streaminfo = |rate: u32, min_block: u16, total: u64| {
            let mut v = b"fLaC".to_vec();
            v.extend_from_slice(&[0x80, 0, 0, 34]);
            let mut b = [0u8; 34];
            b[0..2].copy_from_slice(&min_block.to_be_bytes());
            b[2..4].copy_from_slice(&4096u16.to_be_bytes());
            b[10] = (rate >> 12) as u8;
            b[11] = (rate >> 4) as u8;
            // 2 channels (stored as 1), 16 bits (stored as 15 = 0b0_1111 over two bytes).
            b[12] = ((rate & 0xf) << 4) as u8 | (1 << 1);
            b[13] = 0xf0 | ((total >> 32) as u8 & 0x0f);
            b[14..18].copy_from_slice(&(total as u32).to_be_bytes());
            v.extend_from_slice(&b);
            v
        };
        let h = check_bytes(&streaminfo(44_100, 4096, 1000)).unwrap().unwrap();
        assert_eq!(h, Header { channels: 2, sample_rate: 44_100, frames: Some(1000), channel_mask: None });
        assert_eq!(check_bytes(&streaminfo(44_100, 4096, 0)).unwrap().unwrap().frames, None);
        assert!(check_bytes(&streaminfo(0, 4096, 0)).unwrap_err().to_string().contains("0 Hz"));
        assert!(check_bytes(&streaminfo(44_100, 8, 0)).unwrap_err().to_string().contains("block sizes"));
        let mut truncated = streaminfo(44_100, 4096, 0);
        truncated.truncate(20);
        assert!(check_bytes(&truncated).is_err());
    }
}
