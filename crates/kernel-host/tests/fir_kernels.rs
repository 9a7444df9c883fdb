//! The FIR kernels (direct and FFT-partitioned) and the row copies that change the sample
//! type, compiled for the host: the FIR kernels against one long convolution over blocks
//! (bit for bit float32 accumulation where the kernel's order is fixed, float64 within the
//! tolerance), the copies against plain loops. Split from `kernels.rs` (the SOS kernels)
//! and `fused_kernels.rs` (the fused cascade scan).

use ferrofx_kernel_host::{fir_direct, fir_history, FirParams};
use ferrofx_testkit::{noise_amp, Rng};

#[test]
fn fir_kernel_equals_one_long_convolution_over_blocks() {
    // Random FIRs (1 to 3,000 taps) over blocks of random length, two channels and two
    // FIR stages packed in one taps buffer: each block's output equals float32 fma
    // accumulation over k ascending (what the tiles do, zero taps adding nothing), bit
    // for bit, and float64 convolution of the whole signal within 1e-5 of its peak (float32
    // accumulation over up to 3,000 taps; the reference tolerance is 1e-4); the
    // history kernel carries the last taps-1 inputs across blocks.
    let mut rng = Rng::new(99);
    for case in 0..24u64 {
        let channels = 1 + rng.below(2);
        let taps_n = [1, 2, 255, 256, 257, 700, 3000][rng.below(7)];
        let offset = rng.below(40); // this stage's first tap in the shared taps buffer
        let taps: Vec<f32> = (0..offset + taps_n).map(|_| (rng.unit() as f32 - 0.5) * 0.2).collect();
        let h = &taps[offset..];
        let hist_len = taps_n - 1;
        let hist_base = rng.below(10);
        let total = 5000 + rng.below(3000);
        let signal: Vec<Vec<f32>> = (0..channels).map(|c| noise_amp(total, case * 7 + c as u64, 0.7)).collect();
        let mut history = vec![0.0f32; hist_base + channels * hist_len];
        let mut out_all = vec![Vec::new(); channels];
        let mut pos = 0;
        while pos < total {
            let frames = (1 + rng.below(1500)).min(total - pos);
            let stride = frames + 5;
            let mut work = vec![0.0f32; channels * stride];
            for c in 0..channels {
                work[c * stride..c * stride + frames].copy_from_slice(&signal[c][pos..pos + frames]);
            }
            let p = FirParams {
                frames: frames as u32,
                taps: taps_n as u32,
                stride: stride as u32,
                tap_base: offset as u32,
                hist_base: hist_base as u32,
                channels: channels as u32,
                pad0: 0,
                pad1: 0,
            };
            let mut out = vec![0.0f32; channels * stride];
            fir_direct(p, &work, &taps, &history, &mut out);
            if hist_len > 0 {
                let mut next = history.clone();
                fir_history(p, &work, &history, &mut next);
                history = next;
            }
            for c in 0..channels {
                out_all[c].extend_from_slice(&out[c * stride..c * stride + frames]);
            }
            pos += frames;
        }
        for c in 0..channels {
            let x = &signal[c];
            let mut peak = 0.0f64;
            let mut worst = 0.0f64;
            for n in 0..total {
                let mut acc32 = 0.0f32;
                let mut acc64 = 0.0f64;
                for (k, &hk) in h.iter().enumerate() {
                    let v = if n >= k { x[n - k] } else { 0.0 };
                    acc32 = hk.mul_add(v, acc32);
                    acc64 += f64::from(hk) * f64::from(v);
                }
                assert_eq!(out_all[c][n].to_bits(), acc32.to_bits(), "case {case}, channel {c}, sample {n} ({taps_n} taps)");
                peak = peak.max(acc64.abs());
                worst = worst.max((f64::from(out_all[c][n]) - acc64).abs());
            }
            assert!(worst <= 1e-5 * peak.max(1e-30), "case {case}: {worst:e} of {peak:e}");
        }
    }
}

#[test]
fn fft_fir_kernels_equal_one_long_convolution_over_blocks() {
    // Long random FIRs (600 to 40,000 taps, partitions from fft_partition_for) over
    // blocks of random length with the history carried by the history kernel, two FIR
    // stages' spectra packed in one buffer: the output is float64 convolution of the whole
    // signal within 5e-6 of its peak (float32 FFTs, measured about 3e-7; the reference
    // tolerance is 1e-4).
    use ferrofx::gpu::realize::{fft_partition_for, partition_spectra};
    use ferrofx_kernel_host::{fft_fir, FftParams};
    let mut rng = Rng::new(4242);
    for case in 0..8u64 {
        let channels = 1 + rng.below(2);
        let taps_n = [600, 1000, 4097, 12_000, 40_000][case as usize % 5];
        let h: Vec<f64> = (0..taps_n).map(|i| (rng.unit() - 0.5) * (-(i as f64) / (taps_n as f64 / 4.0)).exp()).collect();
        let part = fft_partition_for(taps_n);
        let n = 2 * part;
        let pcount = taps_n.div_ceil(part);
        // Another stage's spectra first, so this one starts at kernel_base > 0.
        let mut kernel = partition_spectra(&[0.5, 0.25], part);
        let kernel_base = kernel.len();
        kernel.extend(partition_spectra(&h, part));
        let n_max = n * 2;
        let tw: Vec<[f32; 2]> = (0..n_max / 2)
            .map(|m| {
                let a = -2.0 * std::f64::consts::PI * m as f64 / n_max as f64;
                [a.cos() as f32, a.sin() as f32]
            })
            .collect();
        let hist_len = taps_n - 1;
        let total = 30_000 + rng.below(20_000);
        let signal: Vec<Vec<f32>> = (0..channels).map(|c| noise_amp(total, 500 + case * 3 + c as u64, 0.7)).collect();
        let mut history = vec![0.0f32; channels * hist_len];
        let mut got = vec![Vec::new(); channels];
        let mut pos = 0;
        while pos < total {
            let frames = (1 + rng.below(9000)).min(total - pos);
            let stride = frames + 1;
            let mut work = vec![0.0f32; channels * stride];
            for c in 0..channels {
                work[c * stride..c * stride + frames].copy_from_slice(&signal[c][pos..pos + frames]);
            }
            let outs = frames.div_ceil(part);
            let p = FftParams {
                n: n as u32,
                tw_scale: (n_max / n) as u32,
                part: part as u32,
                pcount: pcount as u32,
                segs: (outs + pcount) as u32,
                outs: outs as u32,
                taps: taps_n as u32,
                frames: frames as u32,
                stride: stride as u32,
                hist_base: 0,
                kernel_base: kernel_base as u32,
                channels: channels as u32,
                ..FftParams::default()
            };
            let mut out = vec![0.0f32; channels * stride];
            fft_fir(p, &work, &history, &kernel, &tw, &mut out);
            let fp = FirParams { frames: frames as u32, taps: taps_n as u32, stride: stride as u32, channels: channels as u32, ..FirParams::default() };
            let mut next = history.clone();
            fir_history(fp, &work, &history, &mut next);
            history = next;
            for c in 0..channels {
                got[c].extend_from_slice(&out[c * stride..c * stride + frames]);
            }
            pos += frames;
        }
        for c in 0..channels {
            let x = &signal[c];
            let (mut peak, mut worst) = (0.0f64, 0.0f64);
            // Every 7th sample (the convolution is O(taps) per sample).
            for n_out in (0..total).step_by(7) {
                let lo = n_out.saturating_sub(taps_n - 1);
                let want: f64 = (lo..=n_out).map(|m| h[n_out - m] as f32 as f64 * f64::from(x[m])).sum();
                peak = peak.max(want.abs());
                worst = worst.max((f64::from(got[c][n_out]) - want).abs());
            }
            println!("case {case}: {taps_n} taps, partitions of {part}: error {:.2e} of peak", worst / peak);
            assert!(worst <= 5e-6 * peak, "case {case} ({taps_n} taps), channel {c}: {worst:e} of {peak:e}");
        }
    }
}

/// The row copies that change the sample type (convert.cu): every sample of every row
/// lands where a plain loop puts it, rounded as Rust's `as` rounds (to nearest), nothing
/// outside the rows touched; rows more than the grid's walk grid-y apart.
#[test]
fn row_conversion_kernels_move_every_sample_once_and_nothing_else() {
    use ferrofx_kernel_host::{rows_f32_to_f64, rows_f64_to_f32, RowsParams};
    let mut rng = Rng::new(6402);
    for case in 0..40 {
        let rows = 1 + rng.below(9);
        let n = 1 + rng.below(1200);
        let (src_at, dst_at) = (rng.below(50), rng.below(50));
        let src_stride = src_at + n + rng.below(30);
        let dst_stride = dst_at + n + rng.below(30);
        let p = RowsParams { src_stride: src_stride as u32, src_at: src_at as u32, dst_stride: dst_stride as u32, dst_at: dst_at as u32, rows: rows as u32, n: n as u32, ..Default::default() };
        let grid_y = 1 + rng.below(rows) as u32;
        let src64: Vec<f64> = (0..rows * src_stride).map(|_| (rng.unit() - 0.5) * 1e3).collect();
        let mut dst32 = vec![f32::NAN; rows * dst_stride];
        rows_f64_to_f32(p, grid_y, &src64, &mut dst32);
        let src32: Vec<f32> = src64.iter().map(|&v| v as f32).collect();
        let mut dst64 = vec![f64::NAN; rows * dst_stride];
        rows_f32_to_f64(p, grid_y, &src32, &mut dst64);
        for r in 0..rows {
            for j in 0..dst_stride {
                let at = r * dst_stride + j;
                if (dst_at..dst_at + n).contains(&j) {
                    let want = src64[r * src_stride + src_at + j - dst_at];
                    assert_eq!(dst32[at].to_bits(), (want as f32).to_bits(), "case {case}: row {r} sample {j}");
                    assert_eq!(dst64[at].to_bits(), f64::from(want as f32).to_bits(), "case {case}: row {r} sample {j}");
                } else {
                    assert!(dst32[at].is_nan() && dst64[at].is_nan(), "case {case}: row {r} slot {j} outside the copy was written");
                }
            }
        }
    }
}
