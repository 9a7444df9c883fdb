//! Times the FIR paths per kernel length (calibrates `fir::choose_mode` and, with the
//! two-channel `p128x2` column, `fir::pairing_factor`).
use ferrofx::dsp::fir::{choose_mode, FirFilter, FirMode};
use ferrofx::dsp::simd::Isa;
use std::time::Instant;
fn main() {
    let frames = 44_100;
    let x: Vec<f32> = (0..frames).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    for taps in [32usize, 64, 128, 256, 511, 1024, 2048, 4096, 16384, 65536, 262_144] {
        let h: Vec<f64> = (0..taps).map(|i| ((i * 31) % 17) as f64 / 17.0 - 0.5).collect();
        let mut modes = vec![FirMode::Direct];
        for b in [16usize, 32, 64, 128, 256, 512, 1024] {
            if b < taps {
                modes.push(FirMode::Partitioned { partition: b });
            }
        }
        let mut line = format!("{taps:>7} taps (auto {:?}):", choose_mode(taps));
        for mode in modes {
            if mode == FirMode::Direct && taps > 20_000 {
                continue;
            }
            let mut f = FirFilter::new(&h, 1, mode, 4096);
            let mut y = x.clone();
            let t0 = Instant::now();
            for c in y.chunks_mut(4096) {
                let n = c.len();
                f.process(&mut [c], n);
            }
            let ns = t0.elapsed().as_secs_f64() * 1e9 / frames as f64;
            let name = match mode { FirMode::Direct => "direct".to_string(), FirMode::Partitioned { partition } => format!("p{partition}"), _ => unreachable!() };
            line += &format!(" {name}={ns:.1}");
        }
        // The direct path's narrower kernels on this CPU, for the per-instruction-set cost model.
        for isa in [Isa::Avx2, Isa::Portable] {
            if taps > 20_000 || !isa.is_supported() {
                continue;
            }
            let mut f = FirFilter::with_isa(&h, 1, FirMode::Direct, 4096, isa);
            let mut y = x.clone();
            let t0 = Instant::now();
            for c in y.chunks_mut(4096) {
                let n = c.len();
                f.process(&mut [c], n);
            }
            line += &format!(" direct-{}={:.1}", isa.name(), t0.elapsed().as_secs_f64() * 1e9 / frames as f64);
        }
        // The partitioned path with two channels sharing complex FFTs (fir::pairing_factor).
        if taps > 128 {
            let mut f = FirFilter::new(&h, 2, FirMode::Partitioned { partition: 128 }, 4096);
            let (mut a, mut b) = (x.clone(), x.clone());
            let t0 = Instant::now();
            for (ca, cb) in a.chunks_mut(4096).zip(b.chunks_mut(4096)) {
                let n = ca.len();
                f.process(&mut [ca, cb], n);
            }
            line += &format!(" p128x2={:.1}", t0.elapsed().as_secs_f64() * 1e9 / (2 * frames) as f64);
        }
        println!("{line}  (ns/sample per channel)");
    }
}
