//! Processing time per host block over the last second, as a share of the real-time
//! budget (the block's duration at the sample rate): median and worst.

use std::collections::VecDeque;

use crate::shared::telemetry::Telemetry;

/// The blocks of the last second: (nanoseconds, frames).
#[derive(Default)]
pub struct Load {
    blocks: VecDeque<(u32, u32)>,
}

/// Median and worst share of the budget, and how many blocks they cover.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadFigures {
    pub median: f64,
    pub worst: f64,
    pub blocks: usize,
}

impl Load {
    /// Takes what the audio thread measured since the last call and forgets blocks older
    /// than one second of audio at `sample_rate_hz`.
    pub fn update(&mut self, t: &Telemetry, sample_rate_hz: f64) {
        // Only the GUI thread takes this lock; the audio thread holds the producer.
        if let Ok(mut guard) = t.process_times.try_lock() {
            if let Some(ring) = guard.as_mut() {
                while let Ok(v) = ring.pop() {
                    self.blocks.push_back(((v >> 32) as u32, v as u32));
                }
            }
        }
        let second = sample_rate_hz.max(1.0) as u64;
        let mut frames: u64 = self.blocks.iter().map(|b| u64::from(b.1)).sum();
        while frames > second {
            let Some(old) = self.blocks.pop_front() else { break };
            frames -= u64::from(old.1);
        }
    }

    /// The figures at `sample_rate_hz`, if any block was measured.
    pub fn figures(&self, sample_rate_hz: f64) -> Option<LoadFigures> {
        let mut shares: Vec<f64> =
            self.blocks.iter().filter(|b| b.1 > 0).map(|&(ns, frames)| f64::from(ns) * 1e-9 / (f64::from(frames) / sample_rate_hz)).collect();
        if shares.is_empty() {
            return None;
        }
        shares.sort_by(f64::total_cmp);
        let n = shares.len();
        let median = if n % 2 == 1 { shares[n / 2] } else { 0.5 * (shares[n / 2 - 1] + shares[n / 2]) };
        Some(LoadFigures { median, worst: shares[n - 1], blocks: n })
    }
}

/// "process 2.1 % median, 6.3 % worst of real time (last 1 s, 94 blocks)".
pub fn describe(f: Option<LoadFigures>) -> String {
    match f {
        None => String::from("process time: no blocks yet"),
        Some(f) => format!(
            "process {:.1} % median, {:.1} % worst of real time (last 1 s, {} blocks)",
            100.0 * f.median,
            100.0 * f.worst,
            f.blocks
        ),
    }
}
