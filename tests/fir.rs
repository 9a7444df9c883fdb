//! FIR paths against a plain float64 convolution: every partition size and host block
//! pattern, random partition layouts, a million-tap kernel, and the cost-model choice.

use ferrofx::dsp::fir::{choose_mode, choose_mode_for, FirFilter, FirMode, Layout};
use ferrofx::dsp::simd::Isa;

/// Uniform samples in `[-1, 1)` from the shared seeded generator.
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut r = ferrofx_testkit::Rng::new(seed);
    move || r.unit() * 2.0 - 1.0
}

fn convolve(h: &[f64], x: &[f32]) -> Vec<f64> {
    (0..x.len())
        .map(|n| (0..h.len().min(n + 1)).map(|k| h[k] * x[n - k] as f64).sum())
        .collect()
}

/// Runs `x` through `filter` in the given repeating pattern of block sizes.
fn run(filter: &mut FirFilter, x: &[f32], pattern: &[usize]) -> Vec<f32> {
    let mut y = x.to_vec();
    let (mut start, mut i) = (0, 0);
    while start < y.len() {
        let end = (start + pattern[i % pattern.len()]).min(y.len());
        filter.process(&mut [&mut y[start..end]], end - start);
        start = end;
        i += 1;
    }
    y
}

#[test]
fn every_path_equals_plain_convolution_for_any_block_pattern() {
    let mut rnd = uniform(1);
    for &taps in &[1usize, 2, 7, 64, 65, 300, 1025, 5000] {
        let h: Vec<f64> = (0..taps).map(|i| rnd() * (-(i as f64) / 500.0).exp()).collect();
        let x: Vec<f32> = (0..7000).map(|_| rnd() as f32).collect();
        let want = convolve(&h, &x);
        let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut modes = vec![FirMode::Auto, FirMode::Direct];
        for p in [8usize, 16, 64, 256, 1024] {
            modes.push(FirMode::Partitioned { partition: p });
        }
        for mode in modes {
            for pattern in [&[1usize][..], &[7], &[64], &[4096], &[1, 500, 3, 64, 1000, 2]] {
                let mut f = FirFilter::new(&h, 1, mode, 512);
                let y = run(&mut f, &x, pattern);
                let err = y.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - b).abs())) / peak;
                assert!(err < 2e-6, "taps {taps} {mode:?} (running {:?}) blocks {pattern:?}: error {err:e}", f.mode());
            }
        }
    }
}

#[test]
fn random_layouts_equal_plain_convolution_on_paired_channels() {
    // Heads and level growths drawn at random (the layouts the planner may pick, and
    // others), three channels (a complex pair and one alone), irregular host blocks.
    let mut rng = ferrofx_testkit::Rng::new(77);
    let mut rnd = uniform(78);
    for case in 0..24 {
        let taps = 200 + (rng.unit() * 6000.0) as usize;
        let head = 8usize << (rng.unit() * 6.0) as usize;
        let ratios: Vec<usize> = (0..(rng.unit() * 5.0) as usize).map(|_| 2usize << (rng.unit() * 5.0) as usize).collect();
        let layout = Layout { head, ratios };
        let h: Vec<f64> = (0..taps).map(|i| rnd() * (-(i as f64) / 800.0).exp()).collect();
        let x: Vec<Vec<f32>> = (0..3).map(|_| (0..9000).map(|_| rnd() as f32).collect()).collect();
        let mut f = FirFilter::with_layout(&h, 3, &layout, 512);
        let mut y = x.clone();
        let pattern = [1usize, 500, 3, 64, 1000, 2, 4096];
        let (mut start, mut i) = (0, 0);
        while start < 9000 {
            let end = (start + pattern[i % pattern.len()]).min(9000);
            let (a, rest) = y.split_at_mut(1);
            let (b, c) = rest.split_at_mut(1);
            f.process(&mut [&mut a[0][start..end], &mut b[0][start..end], &mut c[0][start..end]], end - start);
            start = end;
            i += 1;
        }
        for (c, (yc, xc)) in y.iter().zip(&x).enumerate() {
            let want = convolve(&h, xc);
            let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let err = yc.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - b).abs())) / peak;
            assert!(err < 2e-6, "case {case}: {taps} taps, {layout:?} ({:?}), channel {c}: error {err:e}", f.mode());
        }
    }
}

#[test]
fn a_million_taps_stream_with_zero_latency() {
    // Sparse input so the exact output is cheap: y[n] = sum_i a_i h[n - t_i].
    let taps = 1 << 20;
    let mut rnd = uniform(7);
    let h: Vec<f64> = (0..taps).map(|i| rnd() * (-(i as f64) / 300_000.0).exp()).collect();
    let spikes = [(0usize, 1.0f32), (1234, -0.5), (77_777, 0.25), (500_001, 0.75)];
    let n = taps + 600_000;
    let mut x = vec![0.0f32; n];
    for &(t, a) in &spikes {
        x[t] = a;
    }
    let mut f = FirFilter::new(&h, 1, FirMode::Auto, 4096);
    assert!(matches!(f.mode(), FirMode::Partitioned { .. }), "{:?}", f.mode());
    let y = run(&mut f, &x, &[4096, 1000, 17]);
    let mut worst = 0.0f64;
    for (m, &got) in y.iter().enumerate() {
        let want: f64 = spikes.iter().filter(|&&(t, _)| m >= t && m - t < taps).map(|&(t, a)| a as f64 * h[m - t]).sum();
        worst = worst.max((got as f64 - want).abs());
    }
    assert!(worst < 1e-5, "worst absolute error {worst:e} (peak ~1)");
}

#[test]
fn the_cost_model_picks_direct_for_short_and_fft_for_long_kernels() {
    assert_eq!(choose_mode(1), FirMode::Direct);
    assert_eq!(choose_mode(31), FirMode::Direct);
    for taps in [2048usize, 65_536, 1 << 20] {
        match choose_mode(taps) {
            FirMode::Partitioned { partition } => {
                assert!(partition.is_power_of_two() && partition < taps, "{taps}: {partition}");
                // The head runs directly per sample: it must be far shorter than the kernel.
                assert!(partition * 8 <= taps, "{taps}: partition {partition}");
            }
            other => panic!("{taps} taps: {other:?}"),
        }
    }
}

#[test]
fn set_taps_changes_the_kernel_without_losing_history() {
    let mut rnd = uniform(3);
    let h1: Vec<f64> = (0..700).map(|_| rnd()).collect();
    let h2: Vec<f64> = (0..700).map(|_| rnd()).collect();
    let x: Vec<f32> = (0..3000).map(|_| rnd() as f32).collect();
    for mode in [FirMode::Direct, FirMode::Partitioned { partition: 64 }] {
        let mut f = FirFilter::new(&h1, 1, mode, 256);
        let mut y = x.clone();
        f.process(&mut [&mut y[..1000]], 1000);
        f.set_taps(&h2).unwrap();
        f.process(&mut [&mut y[1000..]], 2000);
        // After the switch, output is the new kernel over the whole input history.
        let want = convolve(&h2, &x);
        let err = y[1000..].iter().zip(&want[1000..]).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - b).abs()));
        assert!(err < 1e-4, "{mode:?}: {err:e}");
        assert!(f.set_taps(&h2[..699]).is_err());
    }
}

/// Each instruction set's direct kernel (the AVX-512 ring kernel, the 4 x 16 tiles with
/// AVX2, the portable loops) against plain float64 convolution, with tap counts around the
/// kernels' phase and tile sizes and blocks that mix whole tiles with remainders.
#[test]
fn every_direct_kernel_equals_plain_convolution() {
    let mut rnd = uniform(9);
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if !isa.is_supported() {
            println!("SKIPPED {}: this CPU lacks it", isa.name());
            continue;
        }
        for &taps in &[1usize, 5, 8, 9, 15, 16, 17, 47, 48, 49, 127, 128, 129, 511, 700] {
            let h: Vec<f64> = (0..taps).map(|i| rnd() * (-(i as f64) / 300.0).exp()).collect();
            let x: Vec<f32> = (0..3000).map(|_| rnd() as f32).collect();
            let want = convolve(&h, &x);
            let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for pattern in [&[3000usize][..], &[129, 48, 1000, 7]] {
                let mut f = FirFilter::with_isa(&h, 1, FirMode::Direct, 4096, isa);
                let y = run(&mut f, &x, pattern);
                let err = y.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - b).abs())) / peak;
                assert!(err < 2e-6, "{} taps {taps} blocks {pattern:?}: error {err:e}", isa.name());
            }
        }
    }
}

/// Channels travel through the FFT levels in pairs (real and imaginary part of one
/// complex FFT): each channel of an odd count must still get exactly its own
/// convolution, and leaving a pair's partner out of a call must not disturb the other.
#[test]
fn paired_channels_stay_separate_on_the_partitioned_path() {
    let mut rnd = uniform(11);
    let h: Vec<f64> = (0..1500).map(|i| rnd() * (-(i as f64) / 400.0).exp()).collect();
    let xs: Vec<Vec<f32>> = (0..3).map(|c| (0..6000).map(|_| rnd() as f32 * (1.0 + c as f32)).collect()).collect();
    let wants: Vec<Vec<f64>> = xs.iter().map(|x| convolve(&h, x)).collect();
    let mut f = FirFilter::new(&h, 3, FirMode::Partitioned { partition: 32 }, 512);
    let mut ys = xs.clone();
    let pattern = [1usize, 500, 3, 64, 1000, 2];
    let (mut start, mut i, mut switch) = (0, 0, 6000);
    while start < 6000 {
        let end = (start + pattern[i % pattern.len()]).min(6000);
        // From the first call at or after sample 4000 on only channel 0 is passed: its
        // partner (channel 1) and channel 2 are left out.
        let used = if start >= 4000 { 1 } else { 3 };
        if used == 1 {
            switch = switch.min(start);
        }
        let mut slices: Vec<&mut [f32]> = ys[..used].iter_mut().map(|y| &mut y[start..end]).collect();
        f.process(&mut slices, end - start);
        start = end;
        i += 1;
    }
    for c in 0..3 {
        let until = if c == 0 { 6000 } else { switch };
        let peak = wants[c].iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = ys[c][..until].iter().zip(&wants[c]).fold(0.0f64, |m, (a, b)| m.max((*a as f64 - b).abs())) / peak;
        assert!(err < 2e-6, "channel {c}: error {err:e} of the peak");
    }
    // The channels left out were not touched.
    assert!(switch < 5000 && ys[1][switch..] == xs[1][switch..] && ys[2][switch..] == xs[2][switch..]);
}

/// Channels sharing complex FFTs in pairs make the partitioned path cheaper per channel,
/// so with two channels the cost model switches to it at a shorter kernel than with one,
/// and at the same length for any count of two or more (channel groups of a split
/// render must agree).
#[test]
fn paired_channels_switch_to_the_fft_path_at_shorter_kernels() {
    let first = |channels: usize| {
        (129..8192).find(|&taps| matches!(choose_mode_for(taps, channels), FirMode::Partitioned { .. })).expect("partitioned below 8192 taps")
    };
    let (one, two) = (first(1), first(2));
    assert!(two < one, "two channels switch at {two} taps, one at {one}");
    for channels in [3, 7, 8, 12] {
        assert_eq!(first(channels), two, "{channels} channels");
    }
    assert_eq!(choose_mode_for(one, 1), choose_mode(one));
}
