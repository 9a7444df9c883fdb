//! Times the SOS cascade per kernel, channel count and section count:
//! `cargo run --release -p ferrofx-probes --example sos_probe [frames per call] [isa: portable|avx2|avx512|all]`.
use ferrofx::design::Sos;
use ferrofx::dsp::sos::{Isa, SosCascade};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let frames: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4096);
    let which = args.get(2).map(String::as_str).unwrap_or("all");
    // Optional filters: FERROFX_PROBE_CHANNELS=2 FERROFX_PROBE_SECTIONS=24.
    let only = |var: &str| std::env::var(var).ok().and_then(|v| v.parse::<usize>().ok());
    let (only_ch, only_n) = (only("FERROFX_PROBE_CHANNELS"), only("FERROFX_PROBE_SECTIONS"));
    let s = ferrofx::design::rbj::biquad(ferrofx::design::BiquadKind::Peaking, 1000.0, 1.0, 3.0, 48000.0);
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if which != "all" && !isa.name().starts_with(which) {
            continue;
        }
        for ch in [1usize, 2, 8, 12] {
            for n in [1usize, 4, 8, 15, 16, 24, 32, 48] {
                if only_ch.is_some_and(|c| c != ch) || only_n.is_some_and(|m| m != n) {
                    continue;
                }
                let secs: Vec<Sos> = vec![s; n];
                let mut c = SosCascade::with_isa(&secs, ch, isa);
                let mut bufs: Vec<Vec<f32>> = (0..ch).map(|_| (0..frames).map(|i| ((i * 7919) % 100) as f32 / 100.0).collect()).collect();
                let reps = (800_000 / (frames * n)).max(20) * if only_n.is_some() { 50 } else { 1 };
                let mut best = f64::INFINITY;
                for _ in 0..5 {
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        let mut sl: Vec<&mut [f32]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
                        c.process(&mut sl, frames);
                    }
                    best = best.min(t0.elapsed().as_secs_f64() / reps as f64);
                }
                println!("{:<10} ch {ch:>2} sections {n:>2}: {:8.3} ns/frame  {:.3} ns/sample/ch/section", isa.name(), best * 1e9 / frames as f64, best * 1e9 / (frames * ch * n) as f64);
            }
        }
    }
}
