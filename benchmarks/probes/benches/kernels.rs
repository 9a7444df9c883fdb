//! Criterion benchmarks of the kernels, per structure, per SIMD level and per channel
//! count, so regressions show: `cargo bench -p ferrofx-probes --bench kernels` (add `-- sos/` etc. to
//! filter). Throughput is reported in samples (frames x channels) per second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrofx::chain::{Butterworth, Chain, Chebyshev1};
use ferrofx::design::Sos;
use ferrofx::dsp::fir::{FirFilter, FirMode};
use ferrofx::dsp::simd::Isa;
use ferrofx::dsp::sos::SosCascade;
use std::hint::black_box;

const FRAMES: usize = 4096;

fn noise(channels: usize) -> Vec<Vec<f32>> {
    ferrofx_testkit::noise_channels(channels, FRAMES, 0x1234_5678, 0.5)
}

fn sections(chain: Chain) -> Vec<Sos> {
    match &chain.design(44_100.0).unwrap().stages[0] {
        ferrofx::DesignedStage::Sos(s) => s.clone(),
        _ => unreachable!(),
    }
}

fn sos(c: &mut Criterion) {
    let cascades = [
        ("4sec", sections(Butterworth::highpass(1000.0, 2) | Butterworth::lowpass(5000.0, 2) | Chebyshev1::highpass(1500.0, 2, 0.1) | Chebyshev1::lowpass(1800.0, 2, 0.1))),
        ("15sec", sections(Chebyshev1::highpass(20.0, 4, 0.1) | Chebyshev1::highpass(60.0, 4, 0.1) | Chebyshev1::highpass(65.0, 4, 0.1) | Butterworth::lowpass(5000.0, 5) | Butterworth::lowpass(4900.0, 5) | Butterworth::lowpass(4850.0, 5))),
    ];
    let mut g = c.benchmark_group("sos");
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if !isa.is_supported() {
            continue;
        }
        for (name, secs) in &cascades {
            for channels in [1usize, 2, 8, 12] {
                g.throughput(Throughput::Elements((FRAMES * channels) as u64));
                let mut cascade = SosCascade::with_isa(secs, channels, isa);
                let mut bufs = noise(channels);
                g.bench_function(BenchmarkId::new(format!("{}/{name}", isa.name()), channels), |b| {
                    b.iter(|| {
                        let mut slices: Vec<&mut [f32]> = bufs.iter_mut().map(|c| &mut c[..]).collect();
                        cascade.process(black_box(&mut slices), FRAMES);
                    })
                });
            }
        }
    }
    g.finish();
}

fn fir(c: &mut Criterion) {
    let mut g = c.benchmark_group("fir");
    for taps in [31usize, 103, 511, 4096, 65_536, 262_144] {
        let h: Vec<f64> = (0..taps).map(|i| ((i * 31 % 17) as f64 - 8.0) / 100.0).collect();
        let mut modes = vec![FirMode::Direct, FirMode::Partitioned { partition: 128 }];
        if taps > 16_384 {
            modes.remove(0);
        }
        for mode in modes {
            if let FirMode::Partitioned { partition } = mode {
                if partition >= taps {
                    continue;
                }
            }
            let label = match mode {
                FirMode::Direct => "direct".to_string(),
                FirMode::Partitioned { partition } => format!("partitioned{partition}"),
                FirMode::Auto => unreachable!(),
            };
            let channels = 2;
            g.throughput(Throughput::Elements((FRAMES * channels) as u64));
            let mut f = FirFilter::new(&h, channels, mode, FRAMES);
            let mut bufs = noise(channels);
            g.bench_function(BenchmarkId::new(label, taps), |b| {
                b.iter(|| {
                    let mut slices: Vec<&mut [f32]> = bufs.iter_mut().map(|c| &mut c[..]).collect();
                    f.process(black_box(&mut slices), FRAMES);
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = sos, fir
}
criterion_main!(benches);
