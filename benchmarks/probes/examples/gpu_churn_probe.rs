//! Resident memory across repeated GPU chain builds: builds and drops `WgpuChain`s on one
//! context, runs one block through each, and prints RSS every `--every` builds.
//! `cargo run --release -p ferrofx-probes --example gpu_churn_probe -- [builds] [every]`
use ferrofx::chain::{Biquad, Butterworth, Elliptic, Fir};
use ferrofx::gpu::wgpu::{WgpuChain, WgpuContext};

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = s.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / 1e6
}

fn main() {
    let mut args = std::env::args().skip(1);
    let builds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(400);
    let every: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let ctx = match WgpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no adapter: {e}");
            std::process::exit(2);
        }
    };
    println!("adapter: {}", ctx.report());
    let channels = 2;
    let data = vec![0.1f32; channels * 4096];
    let started = std::time::Instant::now();
    for i in 0..builds {
        let f = 200.0 + (i % 37) as f64 * 40.0;
        let chain = Butterworth::highpass(30.0, 2 + i % 4)
            | Biquad::peaking(f, 1.0, 3.0)
            | Elliptic::lowpass(3000.0 + f, 4, 0.5, 60.0)
            | Fir::lowpass(31 + (i % 5) * 50, 5000.0);
        let block = [256usize, 1024, 2048, 4096][i % 4];
        let taps = if i % 3 == 0 { 2000 } else { 31 };
        let designed = (chain | Fir::lowpass(taps, 9000.0)).design(48_000.0).unwrap();
        let ctx2 = ctx.clone();
        let data2 = data.clone();
        std::thread::spawn(move || {
            let mut data = data2;
            let mut g = WgpuChain::new(&ctx2, &designed, channels, block).unwrap();
            let mut st = g.new_state();
            g.process(&mut data[..channels * block], block, &mut st).unwrap();
        })
        .join()
        .unwrap();
        if i % every == 0 || i + 1 == builds {
            println!("build {i:5}: rss {:.2} MB, {:.1} ms per build so far", rss_mb(), started.elapsed().as_secs_f64() * 1e3 / (i + 1) as f64);
        }
    }
}
