//! Running chains through the CPU engine the ways the tests compare against, and the
//! error measures they use.

use ferrofx::chain::{Chain, Stage};
use ferrofx::engine::{Engine, EngineOptions};
use ferrofx::DesignedChain;

/// Runs `input` through a fresh engine in blocks of `block` frames.
pub fn run_engine(designed: &DesignedChain, input: &[Vec<f32>], block: usize, options: EngineOptions) -> Vec<Vec<f32>> {
    let mut engine = Engine::with_options(designed, input.len(), block, options);
    let mut out: Vec<Vec<f32>> = input.to_vec();
    let n = out[0].len();
    let mut start = 0;
    while start < n {
        let end = (start + block).min(n);
        let mut slices: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[start..end]).collect();
        engine.process(&mut slices);
        start = end;
    }
    out
}

/// `max |y - y_ref| / max |y_ref|`, the worst over channels.
pub fn rel_error(y: &[Vec<f32>], y_ref: &[Vec<f32>]) -> f64 {
    y.iter()
        .zip(y_ref)
        .map(|(a, b)| {
            let peak = b.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64));
            let err = a.iter().zip(b).fold(0.0f64, |m, (x, r)| m.max((*x as f64 - *r as f64).abs()));
            if peak > 0.0 { err / peak } else { err }
        })
        .fold(0.0, f64::max)
}

/// The chain of one stage.
pub fn chain_of(stage: Stage) -> Chain {
    Chain::from(stage)
}

/// A cascade in plain float64 transposed direct form II, sample by sample from zero
/// state: the sequential truth the SIMD kernels are held to.
pub fn sos_f64(sections: &[ferrofx::design::Sos], x: &[f32]) -> Vec<f64> {
    let coefs: Vec<ferrofx::design::Sos> = sections.iter().map(|c| c.normalized()).collect();
    let mut s = vec![[0.0f64; 2]; coefs.len()];
    x.iter()
        .map(|&v| {
            let mut v = f64::from(v);
            for (c, st) in coefs.iter().zip(s.iter_mut()) {
                let y = c.b[0] * v + st[0];
                st[0] = c.b[1] * v - c.a[1] * y + st[1];
                st[1] = c.b[2] * v - c.a[2] * y;
                v = y;
            }
            v
        })
        .collect()
}

/// `input` (planar) through `process` in place, in blocks of the given lengths cycled
/// until the end; `process` gets each block's channel slices and its length.
pub fn in_cuts(input: &[Vec<f32>], cuts: &[usize], mut process: impl FnMut(&mut [&mut [f32]], usize)) -> Vec<Vec<f32>> {
    let frames = input.iter().map(|b| b.len()).min().unwrap_or(0);
    let mut out = input.to_vec();
    let mut start = 0;
    for len in cuts.iter().cycle() {
        if start >= frames {
            break;
        }
        let end = (start + len).min(frames);
        let mut s: Vec<&mut [f32]> = out.iter_mut().map(|b| &mut b[start..end]).collect();
        process(&mut s, end - start);
        start = end;
    }
    out
}

/// `input` (rows) cut at the frames `cuts` (ascending), each piece through `call` (its rows
/// in, its output rows back), the outputs joined: a stream of calls, e.g. on device buffers.
pub fn at_cut_points(input: &[Vec<f32>], cuts: &[usize], mut call: impl FnMut(Vec<Vec<f32>>) -> Vec<Vec<f32>>) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new(); input.len()];
    let mut bounds = vec![0];
    bounds.extend(cuts.iter().copied());
    bounds.push(input.first().map_or(0, Vec::len));
    for w in bounds.windows(2) {
        let piece: Vec<Vec<f32>> = input.iter().map(|r| r[w[0]..w[1]].to_vec()).collect();
        for (o, r) in out.iter_mut().zip(call(piece)) {
            o.extend_from_slice(&r);
        }
    }
    out
}

/// Planar channels delayed by `block` frames (zeros first, the length kept): an offloaded
/// stream is its CPU reference one block late.
pub fn one_block_late(y: Vec<Vec<f32>>, block: usize) -> Vec<Vec<f32>> {
    y.into_iter()
        .map(|c| {
            let mut d = vec![0.0f32; block];
            d.extend_from_slice(&c[..c.len() - block]);
            d
        })
        .collect()
}

/// `chain` designed at `fs` through a fresh engine, `input` (planar) in blocks of `block`
/// frames: what a render or a host of the same chain should produce.
pub fn engine_output(chain: &Chain, fs: f64, input: &[Vec<f32>], block: usize) -> Vec<Vec<f32>> {
    let designed = chain.design(fs).expect("the expected chain designs");
    run_engine(&designed, input, block, EngineOptions::default())
}

/// A chain with every kind of stage at `fs`: cascades (Butterworth, Chebyshev, a
/// cookbook bell) around a designed FIR of `fir_taps` taps (odd).
pub fn mixed_chain(fs: f64, fir_taps: usize) -> DesignedChain {
    use ferrofx::chain::{Biquad, Butterworth, Chebyshev1, Fir};
    (Butterworth::highpass(20.0, 4) | Fir::lowpass(fir_taps, 12_000.0) | Chebyshev1::lowpass(9000.0, 6, 0.5) | Biquad::peaking(1000.0, 2.0, 6.0))
        .design(fs)
        .expect("the mixed chain designs")
}

/// `input` (a buffer per channel) through `process` in consecutive blocks of `blocks`
/// frames (their sum at most the input's length): each block handed over planar
/// (`channels x n`, with `n`), the filtered blocks joined again per channel.
pub fn through_blocks(input: &[Vec<f32>], blocks: &[usize], mut process: impl FnMut(&mut [f32], usize)) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new(); input.len()];
    let mut at = 0;
    for &n in blocks {
        let mut data: Vec<f32> = input.iter().flat_map(|c| c[at..at + n].iter().copied()).collect();
        process(&mut data, n);
        for (ch, o) in out.iter_mut().enumerate() {
            o.extend_from_slice(&data[ch * n..(ch + 1) * n]);
        }
        at += n;
    }
    out
}

/// A plugin-like chain at `fs`: a 25 Hz cookbook highpass and `bands - 1` cookbook bells
/// from 60 Hz to 15 kHz, alternating -3 and +2.5 dB: `bands` one-section stages.
pub fn bands_chain(fs: f64, bands: usize) -> DesignedChain {
    use ferrofx::chain::Biquad;
    let mut chain = Chain::from(Biquad::highpass(25.0, std::f64::consts::FRAC_1_SQRT_2));
    let n = bands.saturating_sub(1);
    for i in 0..n {
        let f = 60.0 * (15_000.0f64 / 60.0).powf(i as f64 / (n.max(2) - 1) as f64);
        chain.push(Biquad::peaking(f, 1.2, if i % 2 == 0 { -3.0 } else { 2.5 }));
    }
    chain.design(fs).expect("the bands chain designs")
}

/// One channel through the given FIR `taps` at `fs` (the core engine in one block).
pub fn fir_output(taps: &[f64], fs: f64, x: &[f32]) -> Vec<f32> {
    let chain = Chain::from(ferrofx::chain::Fir::coefficients(taps.to_vec()));
    engine_output(&chain, fs, &[x.to_vec()], x.len().max(1)).remove(0)
}

/// The largest absolute difference between two buffers of the same length.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "buffers of different lengths");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// `max |a - b| / max |b|` over all channels together.
pub fn max_rel_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    let peak = b.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs() as f64));
    let err = a.iter().flatten().zip(b.iter().flatten()).fold(0.0f64, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()));
    err / peak
}

/// The designed chain's IIR cascades (each SOS stage's sections, in order; FIR stages
/// left out), as the GPU paths' error estimates take them.
pub fn sos_cascades(designed: &DesignedChain) -> Vec<Vec<ferrofx::dsp::sos::SosCoefs>> {
    designed
        .stages
        .iter()
        .filter_map(|s| if let ferrofx::chain::DesignedStage::Sos(v) = s { Some(v.iter().map(ferrofx::dsp::sos::SosCoefs::from).collect()) } else { None })
        .collect()
}

/// Every section of an IIR-only chain in the GPU's delta form, in order (one cascade:
/// consecutive SOS stages are one on the GPU). Panics on a FIR stage.
pub fn gpu_forms(designed: &DesignedChain) -> Vec<ferrofx::gpu::realize::Realization> {
    assert!(designed.stages.iter().all(|s| matches!(s, ferrofx::chain::DesignedStage::Sos(_))), "an IIR-only chain");
    sos_cascades(designed).iter().flatten().map(ferrofx::gpu::realize::Realization::new).collect()
}
