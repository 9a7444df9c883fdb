use realfft::RealFftPlanner;
use std::time::Instant;
fn main() {
    for n in [256usize, 2048, 16384, 131072] {
        let mut p = RealFftPlanner::<f32>::new();
        let f = p.plan_fft_forward(n);
        let i = p.plan_fft_inverse(n);
        let mut a = f.make_input_vec();
        let mut b = f.make_output_vec();
        let mut sf = f.make_scratch_vec();
        let mut si = i.make_scratch_vec();
        let reps = (1 << 24) / n;
        let t0 = Instant::now();
        for _ in 0..reps {
            f.process_with_scratch(&mut a, &mut b, &mut sf).unwrap();
            b[0].im = 0.0; b[n / 2].im = 0.0;
            i.process_with_scratch(&mut b, &mut a, &mut si).unwrap();
        }
        let dt = t0.elapsed().as_secs_f64() / reps as f64;
        println!("n={n}: fwd+inv {:.2} us, {:.2} ns per sample of a block of n/2", dt * 1e6, dt * 1e9 / (n / 2) as f64);
    }
}
