//! The gradients through `sosfilt` on the CPU (`ferrofx::signal::sosfilt_backward_rows`,
//! what `ferrofx.torch`'s backward runs on CPU tensors) against the forward filter
//! (`sosfilt_rows`) on the same rows, one thread: milliseconds and their ratio, the best
//! of 7, for 1, 2, 4 and 8 rows of 441,000 frames through 15 sections (`api_chain`'s shape at
//! 10 s) and 8 sections.
//! Run: `cargo run --release -p ferrofx-probes --example adjoint_probe`.

use ferrofx::signal as rows;

fn best(f: impl FnMut()) -> f64 {
    ferrofx_probes::best_of(7, f)
}

fn main() {
    let frames = 441_000;
    let mut rng = ferrofx_testkit::Rng::new(3);
    println!("{}", ferrofx_probes::cpu_line());
    for sections in [15usize, 8] {
        let sos: Vec<[f64; 6]> = (0..sections)
            .map(|k| {
                let r = 0.9 + 0.006 * k as f64;
                let th = 0.05 + 0.1 * k as f64;
                [0.2, 0.1, 0.05, 1.0, -2.0 * r * f64::cos(th), r * r]
            })
            .collect();
        for count in [1usize, 2, 4, 8] {
            let x: Vec<Vec<f64>> = (0..count).map(|_| (0..frames).map(|_| rng.unit() - 0.5).collect()).collect();
            let g: Vec<Vec<f64>> = (0..count).map(|_| (0..frames).map(|_| rng.unit() - 0.5).collect()).collect();
            let mut y = x.clone();
            let forward = best(|| {
                y.clone_from(&x);
                let mut v: Vec<&mut [f64]> = y.iter_mut().map(|r| r.as_mut_slice()).collect();
                rows::sosfilt_rows(&sos, &mut v, &mut vec![0.0; count * 2 * sections]).unwrap();
            });
            let mut gx = x.clone();
            let backward = best(|| {
                let xr: Vec<&[f64]> = x.iter().map(|r| r.as_slice()).collect();
                let gr: Vec<&[f64]> = g.iter().map(|r| r.as_slice()).collect();
                let mut gxr: Vec<&mut [f64]> = gx.iter_mut().map(|r| r.as_mut_slice()).collect();
                let mut gs = vec![[0.0; 6]; sections];
                rows::sosfilt_backward_rows(&sos, &xr, &gr, &mut gxr, &mut gs).unwrap();
            });
            println!("{sections:>2} sections, {count} rows x {frames}: forward {:.1} ms, backward {:.1} ms, ratio {:.2}", forward * 1e3, backward * 1e3, backward / forward);
        }
    }
}
