//! What the plugin's equaliser costs per 64-frame stereo block at 48 kHz: settled (the
//! fused SIMD cascade) and while a band moves (every section in state-variable form,
//! coefficients re-designed every 32 samples and gliding per sample).
//! `cargo bench -p ferrofx-probes --bench equaliser`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrofx_plugin::shared::bands::{Band, Shape, Slope};
use ferrofx_plugin::audio::equaliser::Equaliser;
use std::hint::black_box;

const BLOCK: usize = 64;

fn bands(count: usize) -> Vec<Band> {
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::Notch];
    (0..count)
        .map(|i| Band {
            enabled: true,
            bypassed: false,
            shape: if i == 0 { Shape::LowCut } else { shapes[i % 4] },
            freq_hz: 40.0 * 1.6f64.powi(i as i32),
            gain_db: 3.0,
            q: 1.0,
            slope: Slope { db_per_oct: 24, linkwitz_riley: false },
            ..Band::default()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("equaliser");
    group.throughput(Throughput::Elements((BLOCK * 2) as u64));
    for count in [4usize, 8, 16] {
        let set = bands(count);
        let mut buf = vec![vec![0.1f32; BLOCK]; 2];
        let mut eq = Equaliser::new(48_000.0, 2, BLOCK);
        for (i, b) in set.iter().enumerate() {
            eq.set_band(i, *b);
        }
        eq.snap();
        group.bench_function(BenchmarkId::new("settled", count), |b| {
            b.iter(|| {
                let (l, r) = buf.split_at_mut(1);
                eq.process(&mut [&mut l[0][..], &mut r[0][..]]);
                black_box(&buf);
            })
        });
        let mut k = 0u64;
        group.bench_function(BenchmarkId::new("moving", count), |b| {
            b.iter(|| {
                // One band's frequency moves all the time.
                k += 1;
                let mut moving = set[1];
                moving.freq_hz = 200.0 * (1.0 + 0.5 * ((k as f64) * 0.01).sin());
                eq.set_band(1, moving);
                let (l, r) = buf.split_at_mut(1);
                eq.process(&mut [&mut l[0][..], &mut r[0][..]]);
                black_box(&buf);
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
