//! What a render writes: the output format, the word-length reduction and the clipping
//! report. (Where the bytes go, and how safely: `output.rs`.)
//!
//! - Formats: WAV with 16, 24 or 32-bit integer or 32/64-bit float samples, FLAC with 16
//!   or 24-bit samples; chosen by `--format` or by the output's extension (`.flac`: FLAC
//!   24-bit; anything else: 32-bit float WAV, the renderer's lossless default).
//! - Integer samples are `round(x * 2^(bits-1))`, the scale every reader divides by.
//!   Reducing the float32 signal to integers adds TPDF dither (the sum of two independent
//!   uniform values of one LSB each, a triangle over +-1 LSB), seeded per channel so a
//!   render is reproducible and independent of the block size; `--dither none` rounds
//!   only. Optional noise shaping feeds the total error (rounding plus dither) back through
//!   `1 - z^-1` or `(1 - z^-1)^2`, moving the noise up in frequency: less below a sixth of
//!   the sample rate, more above.
//! - Clipping: an integer sample beyond full scale is clamped and counted; a float sample
//!   beyond full scale is kept and counted. The render reports how many, the first one's
//!   frame and channel, and the peak, instead of wrapping or clipping silently.

use anyhow::{bail, Result};
use std::path::Path;

/// The output formats `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    WavF32,
    WavF64,
    Wav16,
    Wav24,
    Wav32,
    Flac16,
    Flac24,
}

/// The container of an [`OutputFormat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    Wav,
    Flac,
}

impl OutputFormat {
    pub const ALL: [OutputFormat; 7] = [
        OutputFormat::WavF32,
        OutputFormat::WavF64,
        OutputFormat::Wav16,
        OutputFormat::Wav24,
        OutputFormat::Wav32,
        OutputFormat::Flac16,
        OutputFormat::Flac24,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::WavF32 => "wav-f32",
            OutputFormat::WavF64 => "wav-f64",
            OutputFormat::Wav16 => "wav-16",
            OutputFormat::Wav24 => "wav-24",
            OutputFormat::Wav32 => "wav-32",
            OutputFormat::Flac16 => "flac-16",
            OutputFormat::Flac24 => "flac-24",
        }
    }

    pub fn parse(name: &str) -> Option<OutputFormat> {
        OutputFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    pub fn container(self) -> Container {
        match self {
            OutputFormat::Flac16 | OutputFormat::Flac24 => Container::Flac,
            _ => Container::Wav,
        }
    }

    /// The file extension of the container.
    pub fn extension(self) -> &'static str {
        match self.container() {
            Container::Wav => "wav",
            Container::Flac => "flac",
        }
    }

    /// Bits of an integer sample; `None` for float.
    pub fn int_bits(self) -> Option<u32> {
        match self {
            OutputFormat::WavF32 | OutputFormat::WavF64 => None,
            OutputFormat::Wav16 | OutputFormat::Flac16 => Some(16),
            OutputFormat::Wav24 | OutputFormat::Flac24 => Some(24),
            OutputFormat::Wav32 => Some(32),
        }
    }

    /// Bytes per sample in a WAV file (FLAC compresses).
    pub fn wav_bytes_per_sample(self) -> u64 {
        match self {
            OutputFormat::WavF64 => 8,
            OutputFormat::Wav16 | OutputFormat::Flac16 => 2,
            OutputFormat::Wav24 | OutputFormat::Flac24 => 3,
            OutputFormat::WavF32 | OutputFormat::Wav32 => 4,
        }
    }

    /// The format for `output`: `--format` when given (its container must agree with a
    /// `.wav` or `.flac` extension), else by the extension (`.flac`: FLAC 24-bit; other
    /// names: 32-bit float WAV). Names that promise another audio format are refused.
    pub fn choose(format: Option<OutputFormat>, output: &Path) -> Result<OutputFormat> {
        let ext = output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let by_name = match ext.as_deref() {
            Some("flac") => Some(Container::Flac),
            Some("wav" | "wave") => Some(Container::Wav),
            Some(other) if OTHER_AUDIO_EXTENSIONS.contains(&other) => bail!(
                "{}: the renderer writes WAV and FLAC, so a .{other} name would hold another format; name the output .wav or .flac",
                output.display()
            ),
            _ => None,
        };
        Ok(match (format, by_name) {
            (Some(f), Some(c)) if f.container() != c => bail!(
                "{}: --format {} writes {}, but the name says {}; name it .{} or choose another --format",
                output.display(),
                f.name(),
                f.extension().to_uppercase(),
                ext.unwrap_or_default().to_uppercase(),
                f.extension()
            ),
            (Some(f), _) => f,
            (None, Some(Container::Flac)) => OutputFormat::Flac24,
            (None, _) => OutputFormat::WavF32,
        })
    }
}

/// Extensions of audio formats the renderer does not write.
const OTHER_AUDIO_EXTENSIONS: &[&str] =
    &["mp3", "ogg", "oga", "opus", "aif", "aiff", "aifc", "m4a", "mp4", "aac", "wma", "wv", "caf", "w64", "rf64"];

/// `--noise-shaping`: the filter the total quantisation error is fed back through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoiseShaping {
    None,
    /// Noise transfer `1 - z^-1`: no noise at DC, +6 dB at Nyquist.
    FirstOrder,
    /// Noise transfer `(1 - z^-1)^2`: deeper at low frequencies, +12 dB at Nyquist.
    SecondOrder,
}

impl NoiseShaping {
    pub const NAMES: [&'static str; 3] = ["none", "first-order", "second-order"];

    pub fn parse(name: &str) -> Option<NoiseShaping> {
        match name {
            "none" => Some(NoiseShaping::None),
            "first-order" => Some(NoiseShaping::FirstOrder),
            "second-order" => Some(NoiseShaping::SecondOrder),
            _ => None,
        }
    }
}

/// How float samples become integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reduction {
    /// TPDF dither (on by default).
    pub dither: bool,
    /// Seeds the dither (each channel's generator is seeded from it and the channel).
    pub seed: u64,
    pub shaping: NoiseShaping,
}

impl Default for Reduction {
    fn default() -> Self {
        Reduction { dither: true, seed: 0, shaping: NoiseShaping::None }
    }
}

/// SplitMix64: a small, well-mixed generator (the dither needs independence between
/// samples and reproducibility, not cryptographic strength).
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Where and how much the signal went beyond full scale.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClipReport {
    /// Samples beyond full scale (clamped for integer formats, kept for float).
    pub samples: u64,
    /// The first one: (frame, channel).
    pub first: Option<(u64, usize)>,
    /// The largest magnitude seen beyond full scale (1.0 = full scale).
    pub peak: f64,
    /// Whether the samples were clamped (integer formats) or kept (float formats).
    pub clamped: bool,
}

impl ClipReport {
    /// One line for the user, or `None` when nothing went beyond full scale.
    pub fn message(&self, sample_rate: u32) -> Option<String> {
        let (frame, channel) = self.first?;
        let what = if self.clamped { "clipped at full scale" } else { "over full scale, kept as they are (float output)" };
        Some(format!(
            "{} samples {what}; the first at frame {frame} ({:.3} s), channel {}; peak {:+.2} dBFS",
            self.samples,
            frame as f64 / f64::from(sample_rate),
            channel + 1,
            20.0 * self.peak.log10()
        ))
    }

    fn note(&mut self, frame: u64, channel: usize, magnitude: f64) {
        self.samples += 1;
        match self.first {
            Some((f, c)) if (f, c) <= (frame, channel) => {}
            _ => self.first = Some((frame, channel)),
        }
        self.peak = self.peak.max(magnitude);
    }
}

/// Turns planar float blocks into a format's samples, channel by channel, keeping each
/// channel's dither generator and shaping memory between blocks.
pub struct Quantizer {
    format: OutputFormat,
    reduction: Reduction,
    channels: Vec<ChannelState>,
    frames_done: u64,
    pub clips: ClipReport,
}

#[derive(Clone, Debug)]
struct ChannelState {
    rng: SplitMix64,
    /// The last two total errors (output minus shaped input), in LSB.
    error: [f64; 2],
}

impl Quantizer {
    pub fn new(format: OutputFormat, channels: usize, reduction: Reduction) -> Quantizer {
        let channels = (0..channels)
            .map(|c| {
                let mut seeder = SplitMix64(reduction.seed ^ (c as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
                ChannelState { rng: SplitMix64(seeder.next_u64()), error: [0.0; 2] }
            })
            .collect();
        Quantizer { format, reduction, channels, frames_done: 0, clips: ClipReport { clamped: format.int_bits().is_some(), ..Default::default() } }
    }

    /// Integer samples of `frames` frames, interleaved into `out` (float formats: use
    /// [`Quantizer::check_float`]).
    pub fn quantize(&mut self, planar: &[Vec<f32>], frames: usize, out: &mut Vec<i32>) {
        let bits = self.format.int_bits().expect("an integer format");
        let scale = (1u64 << (bits - 1)) as f64;
        let (lo, hi) = (-scale, scale - 1.0);
        let n_ch = self.channels.len();
        out.clear();
        out.resize(frames * n_ch, 0);
        let Reduction { dither, shaping, .. } = self.reduction;
        for (c, (state, samples)) in self.channels.iter_mut().zip(planar).enumerate() {
            for (i, &x) in samples[..frames].iter().enumerate() {
                let v = f64::from(x) * scale;
                let w = match shaping {
                    NoiseShaping::None => v,
                    NoiseShaping::FirstOrder => v - state.error[0],
                    NoiseShaping::SecondOrder => v - 2.0 * state.error[0] + state.error[1],
                };
                let d = if dither { state.rng.uniform() + state.rng.uniform() - 1.0 } else { 0.0 };
                let q = (w + d).round();
                // The error fed back is the quantiser's own (rounding and dither), never
                // a clamp's, so a clipped passage cannot drive the shaping unstable.
                state.error = [q - w, state.error[0]];
                let y = if q > hi || q < lo {
                    self.clips.note(self.frames_done + i as u64, c, v.abs() / scale);
                    q.clamp(lo, hi)
                } else {
                    q
                };
                out[i * n_ch + c] = y as i32;
            }
        }
        self.frames_done += frames as u64;
    }

    /// Counts float samples beyond full scale (they are written as they are).
    pub fn check_float(&mut self, planar: &[Vec<f32>], frames: usize) {
        for (c, samples) in planar.iter().take(self.channels.len()).enumerate() {
            for (i, &x) in samples[..frames].iter().enumerate() {
                if x.abs() > 1.0 {
                    self.clips.note(self.frames_done + i as u64, c, f64::from(x.abs()));
                }
            }
        }
        self.frames_done += frames as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(frames: usize, amplitude: f32) -> Vec<f32> {
        (0..frames).map(|i| amplitude * (i as f32 * 0.0123).sin()).collect()
    }

    #[test]
    fn formats_come_from_the_flag_or_the_extension_and_disagreements_are_refused() {
        let p = Path::new;
        assert_eq!(OutputFormat::choose(None, p("a.wav")).unwrap(), OutputFormat::WavF32);
        assert_eq!(OutputFormat::choose(None, p("a.FLAC")).unwrap(), OutputFormat::Flac24);
        assert_eq!(OutputFormat::choose(None, p("/dev/stdout")).unwrap(), OutputFormat::WavF32);
        assert_eq!(OutputFormat::choose(Some(OutputFormat::Flac16), p("pipe")).unwrap(), OutputFormat::Flac16);
        assert_eq!(OutputFormat::choose(Some(OutputFormat::Wav24), p("a.wav")).unwrap(), OutputFormat::Wav24);
        let e = OutputFormat::choose(Some(OutputFormat::Flac16), p("a.wav")).unwrap_err().to_string();
        assert!(e.contains("--format flac-16 writes FLAC") && e.contains(".flac"), "{e}");
        assert!(OutputFormat::choose(Some(OutputFormat::Wav16), p("a.flac")).is_err());
        assert!(OutputFormat::choose(None, p("a.mp3")).unwrap_err().to_string().contains(".mp3"));
        for f in OutputFormat::ALL {
            assert_eq!(OutputFormat::parse(f.name()), Some(f));
        }
    }

    #[test]
    fn without_dither_integers_are_rounded_and_with_it_the_error_is_a_triangle_of_one_lsb() {
        let x = vec![tone(50_000, 0.7)];
        let mut q = Quantizer::new(OutputFormat::Wav16, 1, Reduction { dither: false, ..Default::default() });
        let mut out = Vec::new();
        q.quantize(&x, 50_000, &mut out);
        for (o, v) in out.iter().zip(&x[0]) {
            assert_eq!(*o, (f64::from(*v) * 32768.0).round() as i32);
        }
        let mut q = Quantizer::new(OutputFormat::Wav16, 1, Reduction::default());
        q.quantize(&x, 50_000, &mut out);
        let errors: Vec<f64> = out.iter().zip(&x[0]).map(|(o, v)| f64::from(*o) - f64::from(*v) * 32768.0).collect();
        // Rounding (uniform, variance 1/12) plus TPDF dither (variance 1/6): 1/4 LSB^2,
        // never more than 1.5 LSB, mean 0.
        let n = errors.len() as f64;
        let mean = errors.iter().sum::<f64>() / n;
        let var = errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / n;
        assert!(errors.iter().all(|e| e.abs() <= 1.5), "an error beyond 1.5 LSB");
        assert!(mean.abs() < 0.01 && (var - 0.25).abs() < 0.01, "mean {mean}, variance {var}");
        assert!(q.clips.message(48_000).is_none());
    }

    #[test]
    fn dither_is_reproducible_per_seed_and_independent_of_the_block_size() {
        let x = vec![tone(9_999, 0.3), tone(9_999, -0.2)];
        let whole = |seed| {
            let mut q = Quantizer::new(OutputFormat::Wav24, 2, Reduction { seed, ..Default::default() });
            let mut out = Vec::new();
            q.quantize(&x, 9_999, &mut out);
            out
        };
        let mut q = Quantizer::new(OutputFormat::Wav24, 2, Reduction::default());
        let mut blocks = Vec::new();
        let mut out = Vec::new();
        for start in (0..9_999).step_by(1_000) {
            let n = (9_999 - start).min(1_000);
            let part: Vec<Vec<f32>> = x.iter().map(|c| c[start..start + n].to_vec()).collect();
            q.quantize(&part, n, &mut out);
            blocks.extend_from_slice(&out);
        }
        assert_eq!(blocks, whole(0));
        assert_ne!(whole(0), whole(1));
    }

    /// The shaped error's spectrum follows the noise transfer function: against flat
    /// TPDF, less noise at low frequencies, more near Nyquist, by the analytic factors.
    #[test]
    fn noise_shaping_moves_the_error_to_high_frequencies_by_its_transfer_function() {
        let frames = 1 << 15;
        let x = vec![tone(frames, 0.001)];
        let error_power_in = |shaping, lo: f64, hi: f64| {
            let mut q = Quantizer::new(OutputFormat::Wav16, 1, Reduction { shaping, ..Default::default() });
            let mut out = Vec::new();
            q.quantize(&x, frames, &mut out);
            let e: Vec<f64> = out.iter().zip(&x[0]).map(|(o, v)| f64::from(*o) - f64::from(*v) * 32768.0).collect();
            // Band power by a Hann-windowed DFT over a few bins (fractions of the sample
            // rate); the window keeps the loud high band from leaking into the quiet low one.
            let e: Vec<f64> = e
                .iter()
                .enumerate()
                .map(|(n, v)| v * (0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / frames as f64).cos()))
                .collect();
            let bins = 64;
            let mut p = 0.0;
            for k in 0..bins {
                let f = lo + (hi - lo) * (k as f64 + 0.5) / bins as f64;
                let (mut re, mut im) = (0.0, 0.0);
                for (n, v) in e.iter().enumerate() {
                    let ph = 2.0 * std::f64::consts::PI * f * n as f64;
                    re += v * ph.cos();
                    im += v * ph.sin();
                }
                p += (re * re + im * im) / e.len() as f64;
            }
            p / bins as f64
        };
        let flat_low = error_power_in(NoiseShaping::None, 0.01, 0.03);
        let flat_high = error_power_in(NoiseShaping::None, 0.45, 0.49);
        for (shaping, order) in [(NoiseShaping::FirstOrder, 1), (NoiseShaping::SecondOrder, 2)] {
            let ntf = |f: f64| (2.0 * (std::f64::consts::PI * f).sin()).powi(2 * order);
            let low = error_power_in(shaping, 0.01, 0.03) / flat_low;
            let high = error_power_in(shaping, 0.45, 0.49) / flat_high;
            let want_low = (0..64).map(|k| ntf(0.01 + 0.02 * (k as f64 + 0.5) / 64.0)).sum::<f64>() / 64.0;
            let want_high = (0..64).map(|k| ntf(0.45 + 0.04 * (k as f64 + 0.5) / 64.0)).sum::<f64>() / 64.0;
            assert!((low / want_low).log10().abs() < 0.15, "{shaping:?}: low band {low}, expected {want_low}");
            assert!((high / want_high).log10().abs() < 0.15, "{shaping:?}: high band {high}, expected {want_high}");
        }
    }

    #[test]
    fn clipping_is_clamped_counted_and_located_and_float_overs_are_counted_only() {
        let mut a = vec![0.0f32; 100];
        let mut b = vec![0.0f32; 100];
        a[40] = 1.5;
        b[30] = -2.0;
        b[31] = 1.0; // 32768 after rounding: one past the largest 16-bit value
        let x = vec![a, b];
        let mut q = Quantizer::new(OutputFormat::Wav16, 2, Reduction { dither: false, ..Default::default() });
        let mut out = Vec::new();
        q.quantize(&x, 100, &mut out);
        assert_eq!(out[40 * 2], 32767);
        assert_eq!(out[30 * 2 + 1], -32768);
        assert_eq!(out[31 * 2 + 1], 32767);
        assert_eq!(q.clips.samples, 3);
        assert_eq!(q.clips.first, Some((30, 1)));
        let m = q.clips.message(100).unwrap();
        assert!(m.contains("3 samples clipped") && m.contains("frame 30") && m.contains("channel 2") && m.contains("+6.02 dBFS"), "{m}");
        let mut q = Quantizer::new(OutputFormat::WavF32, 2, Reduction::default());
        q.check_float(&x, 100);
        assert_eq!((q.clips.samples, q.clips.first), (2, Some((30, 1))));
        assert!(q.clips.message(100).unwrap().contains("kept as they are"));
    }
}
