//! Offline time segments (`EngineOptions::time_segments`): a long block's segments run as
//! SIMD lanes, each warmed up over the frames before it. Checked against a plain float64
//! transposed-direct-form-II loop (the sequential truth) on seeded random designs across
//! the families, orders, cutoffs (low-frequency ones included) and sample rates, and the
//! warm-up's tail bound against the impulse response itself.

use ferrofx::chain::{Bessel, Biquad, Butterworth, Chain, Chebyshev1, Chebyshev2, Elliptic, LinkwitzRiley, Stage};
use ferrofx::design::Sos;
use ferrofx::dsp::sos::segments::{warmup_frames, Segments, TAIL_BOUND};
use ferrofx::dsp::sos::{SosCascade, SosCoefs};
use ferrofx::engine::{offline_segments, EngineOptions};
use ferrofx::{DesignedStage, Engine};
use ferrofx_testkit::Rng;

/// Every SOS section of a designed chain, in order.
fn sections(chain: &Chain, fs: f64) -> Option<Vec<Sos>> {
    let d = chain.design(fs).ok()?;
    let mut out = Vec::new();
    for s in &d.stages {
        if let DesignedStage::Sos(v) = s {
            out.extend_from_slice(v);
        }
    }
    Some(out)
}

/// The cascade in float64, sample by sample, from zero state: the sequential truth.
fn reference(sections: &[Sos], x: &[f32]) -> Vec<f64> {
    ferrofx_testkit::engine::sos_f64(sections, x)
}

/// A random design over the chain format's IIR families, cutoffs log-uniform from
/// `lowest * fs` to 0.45 fs (from 1e-4 fs, the low-frequency designs whose responses last
/// longest are among them).
fn random_stage(r: &mut Rng, fs: f64, lowest: f64) -> Stage {
    let f = |r: &mut Rng| fs * lowest * (0.45f64 / lowest).powf(r.unit());
    let order = 1 + r.below(10);
    let band = |r: &mut Rng| {
        let lo = f(r).min(fs * 0.3);
        (lo, (lo * (1.2 + 4.0 * r.unit())).min(fs * 0.45))
    };
    match r.below(10) {
        0 => Butterworth::lowpass(f(r), order),
        1 => Butterworth::highpass(f(r), order),
        2 => {
            let (lo, hi) = band(r);
            Butterworth::bandpass(lo, hi, order.min(6))
        }
        3 => Chebyshev1::lowpass(f(r), order, 0.1 + 2.0 * r.unit()),
        4 => Chebyshev2::highpass(f(r), order, 30.0 + 50.0 * r.unit()),
        5 => Elliptic::lowpass(f(r), order.min(8), 0.1 + r.unit(), 40.0 + 40.0 * r.unit()),
        6 => Bessel::highpass(f(r), order),
        7 => LinkwitzRiley::lowpass(f(r), 2 * (1 + r.below(4))),
        8 => Biquad::peaking(f(r), 0.3 + 8.0 * r.unit(), -18.0 + 36.0 * r.unit()),
        _ => Biquad::low_shelf(f(r), 0.5 + r.unit(), -12.0 + 24.0 * r.unit()),
    }
}

fn noise(frames: usize, seed: u64) -> Vec<f32> {
    let mut r = Rng::new(seed);
    (0..frames).map(|_| (r.unit() * 2.0 - 1.0) as f32).collect()
}

/// `input` (planar) through `engine` in blocks of the given lengths, cycled.
fn run(engine: &mut Engine, input: &[Vec<f32>], cuts: &[usize]) -> Vec<Vec<f32>> {
    ferrofx_testkit::engine::in_cuts(input, cuts, |s, _| engine.process(s))
}

/// The warm-up's claim, checked on the impulse response itself: past `D` frames, the
/// sum of `|h|` (simulated for 8 D more, then bounded by the slowest pole) is within
/// `TAIL_BOUND`.
#[test]
fn the_warmup_bounds_the_impulse_response_tail() {
    let mut r = Rng::new(0x5E6);
    let (mut measured, mut declined, mut worst) = (0, 0, 0.0f64);
    let mut sums = vec![0.0; (2 << 17) / 64 + 8];
    for _ in 0..400 {
        let fs = *r.pick(&[8_000.0, 44_100.0, 48_000.0, 96_000.0, 192_000.0]);
        let Some(sos) = sections(&Chain::from(random_stage(&mut r, fs, 1e-4)), fs) else { continue };
        let coefs: Vec<SosCoefs> = sos.iter().map(SosCoefs::from).collect();
        let mut state = vec![[0.0; 2]; coefs.len()];
        let Some(d) = warmup_frames(&coefs, 1 << 17, &mut sums, &mut state) else {
            declined += 1;
            continue;
        };
        measured += 1;
        let mut x = vec![0.0f32; 9 * d.max(64)];
        x[0] = 1.0;
        let h = reference(&sos, &x);
        let tail: f64 = h[d..].iter().map(|v| v.abs()).sum();
        worst = worst.max(tail);
        assert!(tail <= TAIL_BOUND, "tail after D = {d}: {tail:.3e} > {TAIL_BOUND:e} for {sos:?} at {fs} Hz");
    }
    println!("warm-up measured for {measured} designs, declined for {declined}; worst tail {worst:.2e}");
    assert!(measured >= 300, "only {measured} of 400 random designs got a warm-up");
}

/// A pole on the unit circle never decays: no warm-up, no segments, the plain path.
#[test]
fn a_cascade_that_does_not_decay_is_not_segmented() {
    let resonator = Sos { b: [1.0, 0.0, 0.0], a: [1.0, -2.0 * 0.3f64.cos(), 1.0] };
    let cascade = SosCascade::new(&[resonator], 1);
    let seg = Segments::new(&cascade, 8, 1 << 16);
    assert_eq!(seg.warmup(), None);
    assert_eq!(seg.segments_for(1 << 16), 1);
}

/// Random designs, 1-7 channels, long blocks cut at random: the segmented engine's
/// output against the sequential float64 truth, and against the unsegmented engine (apart
/// by at most the tail bound and one float32 rounding step, and only on rare samples).
#[test]
fn segmented_blocks_match_the_sequential_cascade() {
    let mut r = Rng::new(0xB10C);
    let (mut cases, mut segmented_blocks, mut worst, mut differing, mut total) = (0, 0usize, 0.0f64, 0usize, 0usize);
    while cases < 40 {
        let fs = *r.pick(&[44_100.0, 48_000.0, 96_000.0]);
        // Most blocks here are long enough for cutoffs above ~1e-3 fs; some go lower.
        let lowest = if r.chance(0.25) { 1e-4 } else { 2e-3 };
        let chain = Chain::from(random_stage(&mut r, fs, lowest)) | random_stage(&mut r, fs, lowest);
        let Some(sos) = sections(&chain, fs) else { continue };
        let designed = chain.design(fs).unwrap();
        cases += 1;
        let channels = 1 + r.below(7);
        let frames = 80_000 + r.below(120_000);
        let input: Vec<Vec<f32>> = (0..channels).map(|c| noise(frames, 7 * cases as u64 + c as u64)).collect();
        // Long blocks (segmented when the warm-up allows) mixed with short ones (never).
        let cuts = [40_000 + r.below(60_000), 1 + r.below(5000), 20_000 + r.below(40_000)];
        let mut offline = Engine::with_options(&designed, channels, 1 << 17, EngineOptions::offline(channels));
        let mut plain = Engine::new(&designed, channels, 1 << 17);
        let y = run(&mut offline, &input, &cuts);
        let z = run(&mut plain, &input, &cuts);
        for p in offline.processors() {
            if let ferrofx::engine::Processor::Sos(c) = p {
                let seg = Segments::new(c, offline_segments(channels), 1 << 17);
                segmented_blocks += cuts.iter().filter(|&&n| seg.segments_for(n) > 1).count();
            }
        }
        for c in 0..channels {
            let want = reference(&sos, &input[c]);
            let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-30);
            for (i, ((&a, &b), &w)) in y[c].iter().zip(&z[c]).zip(&want).enumerate() {
                let e = (f64::from(a) - w).abs() / peak;
                worst = worst.max(e);
                assert!(e <= 1e-5, "case {cases} ({channels} ch) sample {i}: {a} against {w} (error {e:.2e} of the peak)");
                if a != b {
                    differing += 1;
                    // The truncated history (at most TAIL_BOUND per unit of input peak, here 1),
                    // then each side's float32 rounding.
                    let step = f64::from(f32::EPSILON) * f64::from(b.abs()).max(f64::from(f32::MIN_POSITIVE));
                    assert!(
                        (f64::from(a) - f64::from(b)).abs() <= step + TAIL_BOUND,
                        "case {cases} sample {i}: {a} against unsegmented {b}"
                    );
                }
            }
            total += frames;
        }
    }
    println!(
        "{cases} random chains, {segmented_blocks} of their long blocks segmented; worst error {worst:.2e} of the peak; \
         {differing} of {total} samples one float32 step from the unsegmented engine"
    );
    assert!(segmented_blocks >= 25, "only {segmented_blocks} long blocks were segmented: the test does not test the path");
    assert!(differing * 1000 <= total, "{differing} of {total} samples differ from the unsegmented engine");
}

/// The split the renderer makes for `--threads` (channels spread over engines) computes
/// the same bits as one engine, when every engine takes the whole stream's segment count.
#[test]
fn split_engines_compute_the_same_bits() {
    let fs = 48_000.0;
    let chain = Butterworth::highpass(80.0, 4) | Chebyshev1::lowpass(9000.0, 6, 0.5);
    let designed = chain.design(fs).unwrap();
    let input: Vec<Vec<f32>> = (0..3).map(|c| noise(150_000, 40 + c)).collect();
    let options = EngineOptions::offline(3);
    let mut whole = Engine::with_options(&designed, 3, 1 << 16, options);
    let y = run(&mut whole, &input, &[1 << 16]);
    let mut first = Engine::with_options(&designed, 1, 1 << 16, options);
    let mut rest = Engine::with_options(&designed, 2, 1 << 16, options);
    let a = run(&mut first, &input[..1], &[1 << 16]);
    let b = run(&mut rest, &input[1..], &[1 << 16]);
    assert_eq!(y[0], a[0]);
    assert_eq!(y[1..], b[..]);
}

/// A low-frequency design (poles within 1e-3 of z = 1) needs a long warm-up; in a block
/// long enough for it, mono is segmented and still matches the sequential truth.
#[test]
fn a_low_frequency_design_in_a_long_block() {
    let fs = 48_000.0;
    let chain = Butterworth::highpass(20.0, 4) | Biquad::low_shelf(40.0, 0.7, 6.0);
    let sos = sections(&chain, fs).unwrap();
    let designed = chain.design(fs).unwrap();
    let block = 1 << 20;
    let mut engine = Engine::with_options(&designed, 1, block, EngineOptions::offline(1));
    for p in engine.processors() {
        if let ferrofx::engine::Processor::Sos(c) = p {
            let seg = Segments::new(c, 8, block);
            let d = seg.warmup().expect("a warm-up within a quarter of the block");
            assert!(d > 10_000, "a 20 Hz design at 48 kHz decays slowly, yet D = {d}");
            assert_eq!(seg.segments_for(block), 8);
        }
    }
    let x = vec![noise(block + 12_345, 99)];
    let y = run(&mut engine, &x, &[block]);
    let want = reference(&sos, &x[0]);
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = y[0].iter().zip(&want).map(|(&a, &w)| (f64::from(a) - w).abs() / peak).fold(0.0, f64::max);
    assert!(worst <= 1e-6, "error {worst:.2e} of the peak");
}
