//! Per-block times of the equaliser alone (no host, no plugin framework) with the plugin
//! benchmark's bands and automation: 24 cookbook bells stereo (`MATCHED=1`: analog-
//! matched), every gain moving a little every block, `BLOCK` frames (64). Prints min,
//! median, p99, p99.9 and max over 10 s of audio after 0.5 s of warm-up, beside the same
//! statistics for plain arithmetic calibrated to the median's length and run between the
//! equaliser's blocks (the machine's own tail at that length, under the same conditions:
//! when the two tails match, the machine sets them, not the equaliser), and the worst
//! blocks' positions. `STATIC=1`: no automation. `DUMP=FILE` writes each block's
//! equaliser and plain-arithmetic microseconds, one pair per line.
//!
//! On Linux each timed block is also bracketed (outside its timing) by reads of
//! `/proc/interrupts` for the CPU it runs on, and the statistics are printed again over
//! the blocks that no interrupt the guest kernel counts (timer, IPIs, devices) landed in:
//! what remains of the tail there is the code's own or the hypervisor's (a vCPU
//! preempted by its host is not counted). Pin the probe (`taskset -c 1`) so that the
//! column read is the one it runs on. `INTERRUPTS=0` leaves the reads out (for `perf`,
//! whose sampling interrupts every block anyway).
//! `cargo run --release -p ferrofx-probes --example automation_tail_probe`.
use ferrofx_plugin::shared::bands::{Band, Shape, BANDS};
use ferrofx_plugin::audio::equaliser::Equaliser;
use ferrofx_testkit::bench::{bell, current_cpu, uninterrupted, Interrupts};
use std::hint::black_box;
use std::time::Instant;

fn percentiles(mut t: Vec<f64>) -> String {
    if t.is_empty() {
        return "no blocks".into();
    }
    t.sort_by(f64::total_cmp);
    let n = t.len();
    let at = |q: f64| t[((q * (n - 1) as f64).round() as usize).min(n - 1)] * 1e6;
    format!(
        "min {:.2}  median {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2} us  (p99.9/median {:.2})",
        at(0.0),
        at(0.5),
        at(0.99),
        at(0.999),
        at(1.0),
        at(0.999) / at(0.5)
    )
}

/// `steps` dependent multiply-adds (nothing in memory): a block of plain arithmetic.
fn plain(steps: u64) -> f64 {
    let mut x = 1.0f64;
    for i in 0..steps {
        x = black_box(x * 1.000_000_1 + (i as f64) * 1e-12);
    }
    x
}

fn time<T>(f: impl FnOnce() -> T) -> f64 {
    let t0 = Instant::now();
    black_box(f());
    t0.elapsed().as_secs_f64()
}

fn main() {
    let fs = 48_000.0;
    let block: usize = std::env::var("BLOCK").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let matched = std::env::var("MATCHED").is_ok_and(|v| v == "1");
    let automated = !std::env::var("STATIC").is_ok_and(|v| v == "1");
    let warm = (0.5 * fs) as usize / block;
    let blocks = (10.0 * fs) as usize / block;
    let noise: Vec<f32> = ferrofx_testkit::noise_amp(1 << 18, 7, 0.5);
    let mut eq = Equaliser::new(fs, 2, block);
    let band = |j: usize, gain_db: f64| {
        let (freq_hz, _) = bell(j, BANDS);
        Band { enabled: true, shape: Shape::Peak, freq_hz, gain_db, q: 1.0, matched, ..Band::default() }
    };
    for i in 0..BANDS {
        eq.set_band(i, band(i, bell(i, BANDS).1));
    }
    eq.snap();
    let mut left = vec![0f32; block];
    let mut right = vec![0f32; block];
    let mut run_block = |k: usize| {
        let start = (k * block) % (noise.len() - block);
        left.copy_from_slice(&noise[start..start + block]);
        let r = (start + 7919) % (noise.len() - block);
        right.copy_from_slice(&noise[r..r + block]);
        time(|| {
            if automated {
                for j in 0..BANDS {
                    // The benchmark's automation: +-10 % of the -24..24 dB range, a slow sine.
                    let phase = (k + 1) as f64 * 0.01 + j as f64;
                    eq.set_band(j, band(j, -24.0 + 48.0 * (0.5 + 0.1 * phase.sin())));
                }
            }
            eq.process(&mut [&mut left[..], &mut right[..]]);
            left[0]
        })
    };
    // Warm-up, then plain arithmetic calibrated to the equaliser's median block.
    let mut first: Vec<f64> = (0..warm).map(&mut run_block).collect();
    first.sort_by(f64::total_cmp);
    let target = first[first.len() / 2];
    let probe_steps = 100_000u64;
    let per_step = (0..5).map(|_| time(|| plain(probe_steps))).fold(f64::INFINITY, f64::min) / probe_steps as f64;
    let steps = ((target / per_step) as u64).max(1);
    // Interleaved, so that both meet the same machine: equaliser block, plain block, ...
    let mut times = Vec::with_capacity(blocks);
    let mut plain_times = Vec::with_capacity(blocks);
    // Whether an interrupt landed in each equaliser and plain block.
    let mut hit = Vec::with_capacity(blocks);
    let mut plain_hit = Vec::with_capacity(blocks);
    let cpu = current_cpu();
    let reads = !std::env::var("INTERRUPTS").is_ok_and(|v| v == "0");
    let mut irq = cpu.filter(|_| reads).and_then(Interrupts::on_cpu);
    for k in warm..warm + blocks {
        let mut count = || irq.as_mut().and_then(Interrupts::count);
        let a = count();
        times.push(run_block(k));
        let b = count();
        plain_times.push(time(|| plain(steps)));
        let c = count();
        hit.push(a != b);
        plain_hit.push(b != c);
    }
    if let Ok(path) = std::env::var("DUMP") {
        let text: Vec<String> = times.iter().zip(&plain_times).map(|(t, p)| format!("{:.3} {:.3}", t * 1e6, p * 1e6)).collect();
        std::fs::write(path, text.join("\n")).expect("writing DUMP");
    }
    println!("equaliser, {block} frames, {}{}: {}", if automated { "automated" } else { "static" }, if matched { ", matched" } else { "" }, percentiles(times.clone()));
    let mut worst: Vec<(usize, f64)> = times.iter().copied().enumerate().collect();
    worst.sort_by(|a, b| b.1.total_cmp(&a.1));
    let list: Vec<String> = worst.iter().take(12).map(|(i, t)| format!("{i}:{:.1}", t * 1e6)).collect();
    println!("  worst blocks (index:us): {}", list.join(" "));
    println!("plain arithmetic ({steps} steps), interleaved: {}", percentiles(plain_times.clone()));
    if let (Some(_), Some(cpu)) = (&irq, cpu) {
        let share = |h: &[bool]| 100.0 * h.iter().filter(|&&h| h).count() as f64 / h.len() as f64;
        println!(
            "blocks no counted interrupt landed in (CPU {cpu}): equaliser {:.1} % hit, the rest: {}",
            share(&hit),
            percentiles(uninterrupted(&times, &hit))
        );
        println!("  plain arithmetic {:.1} % hit, the rest: {}", share(&plain_hit), percentiles(uninterrupted(&plain_times, &plain_hit)));
    }
}
