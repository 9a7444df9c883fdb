use ferrofx::design::Sos;
use ferrofx::dsp::sos::{Isa, SosCascade};
use std::time::Instant;
fn main() {
    let s = ferrofx::design::rbj::biquad(ferrofx::design::BiquadKind::Peaking, 1000.0, 1.0, 3.0, 48000.0);
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        for ch in [1usize, 2, 8, 12] {
            for n in [1usize, 4, 8, 15, 16] {
                let secs: Vec<Sos> = vec![s; n];
                let mut c = SosCascade::with_isa(&secs, ch, isa);
                let frames = 4096;
                let mut bufs: Vec<Vec<f32>> = (0..ch).map(|_| (0..frames).map(|i| ((i * 7919) % 100) as f32 / 100.0).collect()).collect();
                let reps = 200;
                let t0 = Instant::now();
                for _ in 0..reps {
                    let mut sl: Vec<&mut [f32]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
                    c.process(&mut sl, frames);
                }
                let dt = t0.elapsed().as_secs_f64() / reps as f64;
                println!("{:<10} ch {ch:>2} sections {n:>2}: {:.3} ns/frame  {:.3} ns/sample/ch/section", isa.name(), dt * 1e9 / frames as f64, dt * 1e9 / (frames * ch * n) as f64);
            }
        }
    }
}
