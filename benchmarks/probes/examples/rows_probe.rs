//! SciPy's recurrences on the rows kernels (`ferrofx::signal`, the Python drop-ins' engine):
//! nanoseconds per section-sample (`sosfilt_rows`, 15 sections) or per sample
//! (`lfilter_rows`, orders 2-12) on one thread, for 1-16 rows.
//! Run: `cargo run --release -p ferrofx-probes --example rows_probe`.

use ferrofx::signal as rows;

fn best(f: impl FnMut()) -> f64 {
    ferrofx_probes::best_of(5, f)
}

fn main() {
    let frames = 480_000;
    let mut rng = ferrofx_testkit::Rng::new(1);
    // A stable 15-section cascade: poles at radius 0.9-0.99.
    let sos: Vec<[f64; 6]> = (0..15)
        .map(|k| {
            let r = 0.9 + 0.006 * k as f64;
            let th = 0.05 + 0.1 * k as f64;
            [0.2, 0.1, 0.05, 1.0, -2.0 * r * f64::cos(th), r * r]
        })
        .collect();
    println!("{}", ferrofx_probes::cpu_line());
    for channels in [1usize, 2, 4, 8, 16] {
        let x: Vec<Vec<f64>> = (0..channels)
            .map(|_| (0..frames).map(|_| rng.unit() - 0.5).collect())
            .collect();
        let mut d = x.clone();
        let mut z = vec![0.0; channels * 30];
        let t = best(|| {
            let mut v: Vec<&mut [f64]> = d.iter_mut().map(|r| r.as_mut_slice()).collect();
            rows::sosfilt_rows(&sos, &mut v, &mut z).unwrap();
        });
        print!(
            "{channels:>2} rows: sosfilt {:.3} ns/section-sample; lfilter ns/sample",
            t / (channels * frames * 15) as f64 * 1e9
        );
        for order in [2usize, 4, 8, 12] {
            let b = vec![0.1; order + 1];
            let mut a = vec![0.0; order + 1];
            a[0] = 1.0;
            a[1] = -0.5;
            let mut z = vec![0.0; channels * order];
            let mut d = x.clone();
            let t = best(|| {
                let mut v: Vec<&mut [f64]> = d.iter_mut().map(|r| r.as_mut_slice()).collect();
                rows::lfilter_rows(&b, &a, &mut v, &mut z).unwrap();
            });
            print!(
                " order {order}: {:.2}",
                t / (channels * frames) as f64 * 1e9
            );
        }
        println!();
    }
}
