//! Times the partitioned FIR path's layouts (head size and level growth) per kernel
//! length, stereo (one complex FFT pair), against the fixed growth of 8 the filter runs.
//! `cargo run --release -p ferrofx-probes --example layout_probe [taps...]`. Prints one line per layout:
//! taps, head, ratios, and the measured ns per stereo frame (best of `LAYOUT_PROBE_REPS`
//! runs, default 5, over 2 s of audio, the runs of all layouts interleaved); the layout
//! the filter runs is marked. `LAYOUT_PROBE_CHUNK` sets the frames per call (default 512).
//! `LAYOUT_PROBE_ONLY="128:8,8,8 512:16,16"` times only the layouts listed (head:ratios).
use ferrofx::dsp::fir::{FirFilter, Layout};
use std::time::Instant;

/// Timed runs per layout (`LAYOUT_PROBE_REPS` overrides).
fn reps() -> usize {
    std::env::var("LAYOUT_PROBE_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

/// Frames per call (`LAYOUT_PROBE_CHUNK`, default 512).
fn chunk() -> usize {
    std::env::var("LAYOUT_PROBE_CHUNK").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
}

fn candidates(taps: usize) -> Vec<Layout> {
    let mut out = Vec::new();
    for head in [64usize, 128, 256, 512] {
        for growth in [2usize, 4, 8, 16, 32] {
            // Uniform growth, the last level the rest; plus all-rest (one level).
            let mut ratios = Vec::new();
            let mut block = head;
            while block * growth * 2 < taps {
                ratios.push(growth);
                block *= growth;
            }
            out.push(Layout { head, ratios });
        }
        out.push(Layout { head, ratios: Vec::new() });
    }
    let chosen = Layout::fixed(taps, 128);
    if !out.contains(&chosen) {
        out.push(chosen);
    }
    out.sort_by_key(|l| (l.head, l.ratios.clone()));
    out.dedup();
    out
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let lengths = if args.is_empty() { vec![4096, 16_384, 65_536, 262_144, 1 << 20] } else { args };
    let frames = 88_200;
    let x: Vec<f32> = (0..frames).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    for taps in lengths {
        let h: Vec<f64> = (0..taps).map(|i| (((i * 31) % 17) as f64 / 17.0 - 0.5) * (-(i as f64) / taps as f64 * 4.0).exp()).collect();
        let layouts = match std::env::var("LAYOUT_PROBE_ONLY") {
            Ok(list) => list
                .split_whitespace()
                .filter_map(|l| {
                    let (head, ratios) = l.split_once(':').unwrap_or((l, ""));
                    Some(Layout { head: head.parse().ok()?, ratios: ratios.split(',').filter_map(|r| r.parse().ok()).collect() })
                })
                .collect(),
            Err(_) => candidates(taps),
        };
        let mut filters: Vec<FirFilter> = layouts.iter().map(|l| FirFilter::with_layout(&h, 2, l, 4096)).collect();
        let mut best = vec![f64::INFINITY; layouts.len()];
        for _ in 0..reps() {
            for (f, b) in filters.iter_mut().zip(best.iter_mut()) {
                let (mut l, mut r) = (x.clone(), x.clone());
                let t0 = Instant::now();
                for (cl, cr) in l.chunks_mut(chunk()).zip(r.chunks_mut(chunk())) {
                    let n = cl.len();
                    f.process(&mut [cl, cr], n);
                }
                *b = b.min(t0.elapsed().as_secs_f64() * 1e9 / frames as f64);
                std::hint::black_box((&l, &r));
            }
        }
        let chosen = Layout::fixed(taps, 128);
        for (l, ns) in layouts.iter().zip(&best) {
            let mark = if l.levels(taps) == chosen.levels(taps) && l.head == chosen.head { " <- the filter's" } else { "" };
            println!("{taps} {} {:?} {ns:.2}{mark}", l.head, l.ratios);
        }
    }
}
