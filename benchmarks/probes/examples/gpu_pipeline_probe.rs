//! GPU stream: one synchronous round trip per block against two blocks in flight
//! (`WgpuStream::process` vs `process_pipelined`), same chain, same input, in one run.
//! `cargo run --release -p ferrofx-probes --example gpu_pipeline_probe` (needs an adapter; lavapipe works
//! but its "device" shares the CPU, so only a real GPU shows what overlap buys).
use ferrofx::chain::{Biquad, Butterworth, Elliptic, Fir};
use ferrofx::gpu::wgpu::{WgpuStream, WgpuContext};
use std::time::Instant;

fn main() {
    let ctx = match WgpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no adapter: {e}");
            std::process::exit(2);
        }
    };
    println!("adapter: {}", ctx.report());
    let chain = Butterworth::highpass(30.0, 4) | Fir::lowpass(101, 5000.0) | Elliptic::lowpass(3000.0, 6, 0.5, 60.0) | Biquad::peaking(900.0, 1.0, 3.0);
    let designed = chain.design(48_000.0).unwrap();
    let channels = 8;
    let frames = 48_000 * 20;
    let input = ferrofx_testkit::noise_channels(channels, frames, 1, 0.5);
    for block in [4096usize, 65536] {
        let mut best = [f64::INFINITY; 2];
        for _ in 0..3 {
            for (k, piped) in [false, true].into_iter().enumerate() {
                let mut g = WgpuStream::new(&ctx, &designed, channels, block).unwrap();
                let mut buf = input.clone();
                let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..]).collect();
                let t = Instant::now();
                if piped {
                    g.process_pipelined(&mut slices).unwrap();
                } else {
                    g.process(&mut slices).unwrap();
                }
                best[k] = best[k].min(t.elapsed().as_secs_f64());
            }
        }
        println!(
            "{channels} ch x {frames} frames, blocks of {block}: synchronous {:.3} s, pipelined {:.3} s ({:.2}x)",
            best[0],
            best[1],
            best[0] / best[1]
        );
    }
}
