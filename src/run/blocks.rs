//! How long a block a host-to-host GPU stream should move at a time: a cost model of the
//! link between host memory and the device, measured on the device, instead of a fixed
//! length.
//!
//! Every block costs a fixed part (launches, synchronisation, the driver's bookkeeping)
//! and a part that grows with its bytes (the bus, the kernels). Short blocks pay the
//! fixed part too often; long ones leave the pipeline's first upload and last download
//! unshared (the overlapped stream keeps upload, kernels and download of three blocks in
//! flight, so a stream of `n` blocks takes about `n + 2` block times). [`LinkCost`] is
//! fitted to two timed round trips of the chain itself on the device
//! ([`LinkCost::measure_stream`]: a short block for the fixed part, a long one for the
//! rate; copies and kernels together, so a chain whose kernels are slower than the bus is
//! modelled as such), and [`stream_block_frames`] picks the length with the least
//! predicted time for the input. The choice is a block length, never a result: the
//! output is within the reference tolerance at any length.

use super::stream::BlockStream;
use std::ops::RangeInclusive;
use std::time::Instant;

/// Block lengths of the two probe round trips [`LinkCost::measure_stream`] times.
pub const PROBE_FRAMES: (usize, usize) = (4096, 131_072);
/// Blocks in flight a host-to-host stream overlaps (upload, kernels, download): a stream
/// of `n` blocks costs `n + STREAM_STAGES - 1` block times.
pub const STREAM_STAGES: usize = 3;
/// The lengths a stream's block is chosen from: at least 4,096 frames (the CPU's block),
/// at most 1,048,576 (the renderer's limit on `--block-size`).
pub const STREAM_BLOCK_RANGE: RangeInclusive<usize> = 4096..=1 << 20;
/// Device memory a chain's stream buffers may take for its blocks (samples in flight,
/// work buffers, pinned staging: about ten copies of a block): the block length's limit
/// for many channels.
pub const STREAM_BLOCK_MAX_BYTES: usize = 512 << 20;
/// Copies of a block the stream's buffers hold (see [`STREAM_BLOCK_MAX_BYTES`]).
const BLOCK_COPIES: usize = 10;

/// The cost of moving one block between host memory and the device and back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkCost {
    /// Seconds a block costs whatever its length.
    pub fixed_s: f64,
    /// Bytes a second the link moves (a block's bytes, there and back).
    pub bytes_per_s: f64,
}

impl LinkCost {
    /// The line through two timed round trips, `(bytes, seconds)` each: the rate from
    /// their difference, the fixed part what is left of the small one (never negative).
    /// `None` where the two do not make one (the larger no slower, a time not finite).
    pub fn fit(small: (usize, f64), large: (usize, f64)) -> Option<LinkCost> {
        let ((b0, t0), (b1, t1)) = ((small.0 as f64, small.1), (large.0 as f64, large.1));
        if !(b1 > b0 && t0.is_finite() && t1.is_finite() && t0 >= 0.0 && t1 > t0) {
            return None;
        }
        let bytes_per_s = (b1 - b0) / (t1 - t0);
        Some(LinkCost { fixed_s: (t0 - b0 / bytes_per_s).max(0.0), bytes_per_s })
    }

    /// The cost of `stream`'s own blocks of `channels` channels (prepared for blocks of
    /// at least [`PROBE_FRAMES`]`.1` frames): synchronous round trips of a short and a
    /// long block of noise, the median of `runs` each after one warm-up. `None` where a
    /// round trip fails or the timings make no line. The stream's filter state is reset
    /// afterwards.
    pub fn measure_stream(stream: &mut BlockStream, channels: usize, runs: usize) -> Option<LinkCost> {
        let (short, long) = PROBE_FRAMES;
        let mut data: Vec<Vec<f32>> = (0..channels).map(|c| (0..long).map(|n| ((n * 7919 + c * 104_729) % 2003) as f32 / 1001.5 - 1.0).collect()).collect();
        let mut time = |frames: usize| -> Option<f64> {
            let mut times = Vec::with_capacity(runs);
            for run in 0..=runs.max(1) {
                let mut slices: Vec<&mut [f32]> = data.iter_mut().map(|c| &mut c[..frames]).collect();
                let t = Instant::now();
                stream.process(&mut slices).ok()?;
                if run > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            Some(super::backend::median_s(times))
        };
        let (t_short, t_long) = (time(short), time(long));
        stream.reset();
        let bytes = |frames: usize| 4 * channels.max(1) * frames;
        LinkCost::fit((bytes(short), t_short?), (bytes(long), t_long?))
    }

    /// Seconds one block of `bytes` costs.
    pub fn block_s(&self, bytes: f64) -> f64 {
        self.fixed_s + bytes / self.bytes_per_s
    }

    /// Predicted seconds for `total_frames` frames of `channels` float32 channels in
    /// blocks of `block_frames`: `n + STREAM_STAGES - 1` times one block's cost (a block
    /// longer than the input costs the input's bytes).
    pub fn stream_s(&self, total_frames: u64, channels: usize, block_frames: usize) -> f64 {
        let block = block_frames.max(1) as u64;
        let blocks = total_frames.div_ceil(block).max(1);
        let bytes = (4 * channels as u64 * block.min(total_frames.max(1))) as f64;
        (blocks + STREAM_STAGES as u64 - 1) as f64 * self.block_s(bytes)
    }
}

/// The block length for a stream of `total_frames` frames of `channels` channels over a
/// link costing `cost`: of the powers of two in `range` (its ends too), and the input's
/// own length where it lies in it, the one with the least predicted time (the shorter on
/// a tie); never so long that the stream's buffers pass [`STREAM_BLOCK_MAX_BYTES`]
/// (unless `range` allows nothing shorter).
pub fn stream_block_frames(total_frames: u64, channels: usize, cost: &LinkCost, range: RangeInclusive<usize>) -> usize {
    let (lo, hi) = (*range.start().max(&1), *range.end());
    let by_memory = STREAM_BLOCK_MAX_BYTES / (4 * BLOCK_COPIES * channels.max(1));
    let hi = hi.min(by_memory).max(lo);
    let mut candidates: Vec<usize> = std::iter::successors(Some(lo.next_power_of_two()), |&b| b.checked_mul(2)).take_while(|&b| b <= hi).collect();
    candidates.extend([lo, hi]);
    if let Ok(t) = usize::try_from(total_frames) {
        if (lo..=hi).contains(&t) {
            candidates.push(t);
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    let mut best = (f64::INFINITY, lo);
    for b in candidates {
        let t = cost.stream_s(total_frames, channels, b);
        if t < best.0 {
            best = (t, b);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_through_two_points_of_a_line_gives_the_line_back() {
        let truth = LinkCost { fixed_s: 25e-6, bytes_per_s: 24e9 };
        let at = |b: usize| truth.block_s(b as f64);
        let (small, large) = (64 << 10, 16 << 20);
        let fit = LinkCost::fit((small, at(small)), (large, at(large))).unwrap();
        assert!((fit.fixed_s - truth.fixed_s).abs() < 1e-12 && (fit.bytes_per_s / truth.bytes_per_s - 1.0).abs() < 1e-9, "{fit:?}");
        // A large copy no slower than a small one, or a time that is not one: no line.
        assert_eq!(LinkCost::fit((1000, 2e-3), (10_000, 1e-3)), None);
        assert_eq!(LinkCost::fit((1000, f64::NAN), (10_000, 1e-3)), None);
        assert_eq!(LinkCost::fit((10_000, 1e-3), (1000, 2e-3)), None);
        // The small copy faster than the rate allows: the fixed part is 0, not negative.
        assert_eq!(LinkCost::fit((1000, 0.0), (2000, 1e-6)).unwrap().fixed_s, 0.0);
    }

    /// Against the analytic optimum: for an input of `T` frames (many blocks), the time
    /// `(T/b + d)(c + k b)` is least at `b* = sqrt(T c / (d k))`; the chosen power of two
    /// lies within a factor 2 of it and costs at most 6.1 % more in the part that
    /// depends on the block (the cost at `b* x sqrt(2)`).
    #[test]
    fn the_choice_is_near_the_analytic_optimum_over_a_sweep_of_links_and_inputs() {
        let mut checked = 0;
        for fixed_us in [2.0, 10.0, 40.0, 150.0, 1000.0] {
            for gb_s in [2.0, 12.0, 25.0, 50.0] {
                for channels in [1usize, 2, 8, 32] {
                    for seconds in [10.0, 60.0, 600.0, 3600.0] {
                        let cost = LinkCost { fixed_s: fixed_us * 1e-6, bytes_per_s: gb_s * 1e9 };
                        let total = (seconds * 48_000.0) as u64;
                        let b = stream_block_frames(total, channels, &cost, STREAM_BLOCK_RANGE);
                        let k = 4.0 * channels as f64 / cost.bytes_per_s;
                        let d = (STREAM_STAGES - 1) as f64;
                        let opt = (total as f64 * cost.fixed_s / (d * k)).sqrt();
                        let by_memory = (STREAM_BLOCK_MAX_BYTES / (40 * channels)) as f64;
                        let (lo, hi) = (*STREAM_BLOCK_RANGE.start() as f64, (*STREAM_BLOCK_RANGE.end() as f64).min(by_memory));
                        assert!(STREAM_BLOCK_RANGE.contains(&b) && b as f64 <= hi.max(lo), "{b} outside the limits");
                        // Where the optimum is well inside the limits and the input is
                        // many blocks long, the analytic bounds hold.
                        if opt > 2.0 * lo && opt < hi / 2.0 && total as f64 > 16.0 * opt {
                            let what = format!("{fixed_us} us, {gb_s} GB/s, {channels} ch, {seconds} s: chose {b}, optimum {opt:.0}");
                            assert!((b as f64) < 2.0 * opt && (b as f64) > opt / 2.0, "{what}");
                            // The model's time at the choice against the continuous
                            // optimum: at most the 6.07 % of the nearest power of two on
                            // the part that depends on the block, plus one block (a
                            // partial last block rounds the count up).
                            let (t, c) = (total as f64, cost.fixed_s);
                            let variable = t * c / opt + d * k * opt;
                            let best = t * k + d * c + variable;
                            let got = cost.stream_s(total, channels, b);
                            assert!(got <= best + 0.0607 * variable + cost.block_s(4.0 * (channels * b) as f64), "{what}: {got} s against {best} s");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked >= 40, "only {checked} cases inside the limits");
    }

    #[test]
    fn short_inputs_take_one_block_and_limits_hold() {
        let cost = LinkCost { fixed_s: 30e-6, bytes_per_s: 20e9 };
        // An input inside the range: one block of exactly its length.
        assert_eq!(stream_block_frames(10_000, 2, &cost, STREAM_BLOCK_RANGE), 10_000);
        // Shorter than the range's start: the start.
        assert_eq!(stream_block_frames(100, 2, &cost, STREAM_BLOCK_RANGE), 4096);
        // Many channels: the stream's buffers within their memory.
        let b = stream_block_frames(u64::MAX / 2, 1024, &LinkCost { fixed_s: 1.0, bytes_per_s: 1e9 }, STREAM_BLOCK_RANGE);
        assert!(b > 4096 && b * 4 * BLOCK_COPIES * 1024 <= STREAM_BLOCK_MAX_BYTES, "{b}");
        // So many that not even the range's start fits: the start.
        assert_eq!(stream_block_frames(u64::MAX / 2, 8192, &LinkCost { fixed_s: 1.0, bytes_per_s: 1e9 }, STREAM_BLOCK_RANGE), 4096);
        // A dearer fixed part never shortens the block.
        let mut last = 0;
        for fixed_us in [1.0, 5.0, 20.0, 80.0, 320.0, 1280.0] {
            let b = stream_block_frames(48_000 * 600, 8, &LinkCost { fixed_s: fixed_us * 1e-6, bytes_per_s: 25e9 }, STREAM_BLOCK_RANGE);
            assert!(b >= last, "{fixed_us} us: {b} < {last}");
            last = b;
        }
        assert!(last > 4096, "a dear fixed part lengthens the block");
    }
}
