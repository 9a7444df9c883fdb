//! rustfft's single-precision complex FFT at the partitioned FIR's sizes, timed like
//! `benchmarks/fft/fftw_bench.c` times FFTW: in place, a forward and an inverse transform
//! per round, the fastest of 15 batches of rounds (wall clock), one thread.
//!
//!     cargo run --release -p ferrofx-probes --example fft_probe -- N...     (one JSON line per size)
//!
//! `benchmarks/fft/compare.sh` runs both sides, pinned, in alternating order.
use rustfft::num_complex::Complex32;
use rustfft::FftPlanner;
use std::time::Instant;

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("sizes are integers")).collect();
    let mut planner = FftPlanner::<f32>::new();
    for n in sizes {
        let (fwd, inv) = (planner.plan_fft_forward(n), planner.plan_fft_inverse(n));
        let mut buf: Vec<Complex32> = (0..n)
            .map(|i| Complex32::new(((i * 7919) % 1000) as f32 / 1000.0 - 0.5, ((i * 104_729) % 1000) as f32 / 1000.0 - 0.5))
            .collect();
        let mut scratch = vec![Complex32::default(); fwd.get_inplace_scratch_len().max(inv.get_inplace_scratch_len())];
        // About 20 ms per batch.
        let rounds = (2e7 / (5.0 * n as f64 * (n.trailing_zeros() + 1) as f64)) as usize + 1;
        let mut best = f64::INFINITY;
        for _ in 0..15 {
            let t0 = Instant::now();
            for _ in 0..rounds {
                fwd.process_with_scratch(&mut buf, &mut scratch);
                inv.process_with_scratch(&mut buf, &mut scratch);
                // The round trip is scaled by n; keep the data bounded.
                buf[0] *= 1.0 / n as f32;
            }
            best = best.min(t0.elapsed().as_secs_f64() / rounds as f64);
        }
        std::hint::black_box(&buf);
        println!("{{\"library\":\"rustfft\",\"n\":{n},\"ns_per_pair\":{:.1},\"ns_per_point\":{:.3}}}", best * 1e9, best * 1e9 / n as f64);
    }
}
