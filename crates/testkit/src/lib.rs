//! Test helpers shared by FerroFX's crates (dev-only; never a dependency of the product):
//! a seeded random source and noise, the SciPy reference cases (`reference`), chains
//! through the CPU engine and the error measures (`engine`), retunes on a GPU backend
//! (`retune`), WAV files and commands (`files`), a mutator of chain files for fuzzing
//! (`mutate`), the GPU tests' devices (`gpu`); with features, a small CLAP host (`clap-host`: `clap`), a minimal VST3
//! host (`vst3-host`: `vst3`); and the plugin's host tests' shared settings (`plugin`).

#[cfg(feature = "clap-host")]
pub mod clap;
pub mod engine;
pub mod files;
pub mod float64;
pub mod gpu;
pub mod mutate;
pub mod plugin;
pub mod reference;
pub mod retune;
#[cfg(feature = "vst3-host")]
pub mod vst3;

/// xorshift64*: small, fast, and the same sequence on every machine for a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// `n` samples of white noise in `[-0.9, 0.9)`, the same for a seed everywhere.
pub fn noise(n: usize, seed: u64) -> Vec<f32> {
    noise_amp(n, seed, 0.9)
}

/// `n` samples of white noise in `[-amplitude, amplitude)`, the same for a seed everywhere.
pub fn noise_amp(n: usize, seed: u64, amplitude: f32) -> Vec<f32> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| ((r.unit() * 2.0 - 1.0) as f32) * amplitude).collect()
}

/// `channels` buffers of `frames` samples of white noise in `[-amplitude, amplitude)`,
/// each channel from its own seed (`seed + channel`).
pub fn noise_channels(channels: usize, frames: usize, seed: u64, amplitude: f32) -> Vec<Vec<f32>> {
    (0..channels).map(|c| noise_amp(frames, seed.wrapping_add(c as u64), amplitude)).collect()
}

/// `seconds` of a sine at `freq_hz` peaking at `level_db` (dBFS), at `fs`.
pub fn tone(level_db: f64, freq_hz: f64, seconds: f64, fs: f64) -> Vec<f32> {
    let a = 10f64.powf(level_db / 20.0);
    (0..(fs * seconds) as usize).map(|k| (a * (2.0 * std::f64::consts::PI * freq_hz * k as f64 / fs).sin()) as f32).collect()
}

/// The peak level in dB of a sine over the last `frames` samples of `y` (its RMS plus
/// 3 dB).
pub fn tail_sine_level_db(y: &[f32], frames: usize) -> f64 {
    let tail = &y[y.len().saturating_sub(frames)..];
    let ms = tail.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / tail.len().max(1) as f64;
    10.0 * (2.0 * ms).log10()
}

/// What the plugin benchmarks share (`cargo xtask bench --plugin` and its LV2 host): the
/// bands they set and the statistics they report.
pub mod bench {
    /// Band `i` of `n` (0-based): a bell from 40 Hz to 16 kHz evenly in log frequency (one
    /// band: their geometric middle), +3/-3 dB alternating; `(freq_hz, gain_db)`.
    pub fn bell(i: usize, n: usize) -> (f64, f64) {
        let freq_hz = if n <= 1 { (40.0f64 * 16_000.0).sqrt() } else { 40.0 * 400f64.powf(i as f64 / (n - 1) as f64) };
        (freq_hz, if i.is_multiple_of(2) { 3.0 } else { -3.0 })
    }

    /// Per-block times in seconds as `(min, median, p99.9)` in microseconds (order
    /// statistics; zeros for no times).
    pub fn block_stats_us(mut times_s: Vec<f64>) -> (f64, f64, f64) {
        times_s.sort_by(f64::total_cmp);
        let n = times_s.len().max(1);
        let at = |q: f64| times_s.get(((q * (n - 1) as f64).round() as usize).min(n - 1)).copied().unwrap_or(0.0) * 1e6;
        (at(0.0), at(0.5), at(0.999))
    }

    /// The interrupts the kernel has counted on one CPU (the sum of its column over every
    /// row of `/proc/interrupts`: timer, inter-processor calls, TLB shootdowns, devices),
    /// re-read from a file kept open. Reading it before and after a timed block (outside
    /// the timing) tells whether one landed in the block. A vCPU preempted by its
    /// hypervisor is not counted.
    pub struct Interrupts {
        file: std::fs::File,
        cpu: usize,
        text: String,
    }

    impl Interrupts {
        /// For CPU `cpu`; `None` where `/proc/interrupts` cannot be read (not Linux).
        pub fn on_cpu(cpu: usize) -> Option<Interrupts> {
            let mut irq = Interrupts { file: std::fs::File::open("/proc/interrupts").ok()?, cpu, text: String::with_capacity(1 << 16) };
            irq.count().map(|_| irq)
        }

        /// The CPU's count now; `None` if the file could not be read again.
        pub fn count(&mut self) -> Option<u64> {
            use std::io::{Read, Seek};
            self.file.rewind().ok()?;
            self.text.clear();
            self.file.read_to_string(&mut self.text).ok()?;
            Some(interrupt_column_sum(&self.text, self.cpu))
        }
    }

    /// The CPU the calling thread runs on (Linux), if the kernel says.
    pub fn current_cpu() -> Option<usize> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sched_getcpu takes no arguments and only returns a number (or -1).
            usize::try_from(unsafe { libc::sched_getcpu() }).ok()
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// The times of the blocks no interrupt landed in (`hit[i]` false).
    pub fn uninterrupted(times: &[f64], hit: &[bool]) -> Vec<f64> {
        times.iter().zip(hit).filter(|(_, &h)| !h).map(|(t, _)| *t).collect()
    }

    /// The sum of CPU `cpu`'s column of a `/proc/interrupts` text: rows are `NAME:` and
    /// then one count per CPU (the header names the CPUs); rows with fewer counts (`ERR`,
    /// `MIS`) are left out.
    pub fn interrupt_column_sum(text: &str, cpu: usize) -> u64 {
        text.lines().skip(1).filter_map(|line| line.split_whitespace().nth(1 + cpu)?.parse::<u64>().ok()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bells_span_40_hz_to_16_khz_alternating_and_stats_are_order_statistics() {
        let (lo, g0) = bench::bell(0, 24);
        let (hi, g23) = bench::bell(23, 24);
        assert!((lo - 40.0).abs() < 1e-9 && (hi - 16_000.0).abs() < 1e-6);
        assert_eq!((g0, g23), (3.0, -3.0));
        assert!((bench::bell(0, 1).0 - 800.0).abs() < 1e-9);
        let (min, median, p999) = bench::block_stats_us((1..=1000).map(|v| v as f64 * 1e-6).collect());
        assert_eq!((min.round(), median.round(), p999.round()), (1.0, 501.0, 999.0));
        let text = "           CPU0       CPU1       \n 24:          1          0  IO-APIC   5-edge      ACPI:Ged\nLOC:    9799804    9855507   Local timer interrupts\nCAL:   15976379   16874170   Function call interrupts\nERR:          0\nMIS:          0\n";
        assert_eq!(bench::interrupt_column_sum(text, 0), 1 + 9_799_804 + 15_976_379);
        assert_eq!(bench::interrupt_column_sum(text, 1), 9_855_507 + 16_874_170);
        assert_eq!(bench::uninterrupted(&[1.0, 2.0, 3.0], &[false, true, false]), vec![1.0, 3.0]);
    }

    #[test]
    fn a_tone_reads_back_at_its_level() {
        let y = tone(-12.0, 1000.0, 0.5, 48_000.0);
        assert_eq!(y.len(), 24_000);
        assert!((tail_sine_level_db(&y, 4800) + 12.0).abs() < 0.01);
    }

    #[test]
    fn noise_is_seeded_bounded_and_white() {
        let a = noise_amp(100_000, 7, 0.5);
        assert_eq!(a, noise_amp(100_000, 7, 0.5));
        assert_ne!(a, noise_amp(100_000, 8, 0.5));
        assert!(a.iter().all(|v| (-0.5..0.5).contains(v)));
        let mean = a.iter().map(|&v| f64::from(v)).sum::<f64>() / a.len() as f64;
        let power = a.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / a.len() as f64;
        // Uniform on [-0.5, 0.5): mean 0, power 1/12; lag-1 correlation near 0.
        assert!(mean.abs() < 0.005, "mean {mean}");
        assert!((power - 1.0 / 12.0).abs() < 0.002, "power {power}");
        let lag1 = a.windows(2).map(|w| f64::from(w[0]) * f64::from(w[1])).sum::<f64>() / a.len() as f64 / power;
        assert!(lag1.abs() < 0.01, "lag-1 correlation {lag1}");
        let ch = noise_channels(3, 10, 7, 0.5);
        assert_eq!(ch[0], noise_amp(10, 7, 0.5));
        assert_ne!(ch[1], ch[2]);
    }
}
