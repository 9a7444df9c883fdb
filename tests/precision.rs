//! Mixed precision (`SosCascade::set_mixed_precision`, `EngineOptions::mixed_precision`):
//! the float32 sections a plan chooses keep the whole cascade within the plan's
//! worst-case bound of the float64 result on measured signals, on every kernel; every
//! kernel and channel grouping computes the same bits; new coefficients return the
//! cascade to float64.

use ferrofx::chain::{Butterworth, Chain, Chebyshev1};
use ferrofx::design::{rbj, BiquadKind, Sos};
use ferrofx::dsp::sos::precision::{f32_bound, F32_BUDGET};
use ferrofx::dsp::sos::{Isa, SosCascade};
use ferrofx::engine::{Engine, EngineOptions};
use ferrofx::DesignedStage;

mod common;

const U: f64 = 1.0 / (1u64 << 24) as f64;

fn sections_of(chain: impl Into<Chain>, fs: f64) -> Vec<Sos> {
    match &chain.into().design(fs).unwrap().stages[0] {
        DesignedStage::Sos(s) => s.clone(),
        _ => unreachable!(),
    }
}

/// A seeded random cascade: cookbook biquads (mostly above 1 kHz, where float32 tends to
/// be allowed, some lower) or a designed band-pass / high-pass.
fn random_cascade(r: &mut ferrofx_testkit::Rng, fs: f64) -> Vec<Sos> {
    match r.below(4) {
        0 => {
            let low = 200.0 + 2000.0 * r.unit();
            sections_of(Butterworth::bandpass(low, low * (2.0 + 4.0 * r.unit()), 2 + 2 * r.below(4)), fs)
        }
        1 => sections_of(Chebyshev1::highpass(1000.0 + 8000.0 * r.unit(), 2 + 2 * r.below(5), 0.1) | Butterworth::lowpass(0.3 * fs, 4), fs),
        _ => {
            let kinds = [BiquadKind::Peaking, BiquadKind::Peaking, BiquadKind::HighShelf, BiquadKind::Lowpass, BiquadKind::Highpass, BiquadKind::Bandpass];
            (0..2 + r.below(15))
                .map(|_| {
                    let freq_hz = if r.below(5) == 0 { 100.0 + 900.0 * r.unit() } else { 1000.0 + 0.4 * fs * r.unit() };
                    rbj::biquad(kinds[r.below(kinds.len())], freq_hz, 0.5 + 2.0 * r.unit(), 18.0 * r.unit() - 9.0, fs)
                })
                .collect()
        }
    }
}

/// The loudest frequency of the cascade on a grid (Hz).
fn loudest_hz(sections: &[Sos], fs: f64) -> f64 {
    (1..400)
        .map(|i| fs / 2.0 * i as f64 / 400.0)
        .map(|f| (f, sections.iter().map(|s| s.response(2.0 * std::f64::consts::PI * f / fs).norm()).product::<f64>()))
        .fold((0.0, -1.0), |best, x| if x.1 > best.1 { x } else { best })
        .0
}

/// Eight channels that probe the bound: noise at two levels, a tone at the loudest
/// frequency, a square wave a little below it, an impulse, noise with a loud burst.
fn probes(sections: &[Sos], fs: f64, frames: usize, seed: u64) -> Vec<Vec<f32>> {
    let f = loudest_hz(sections, fs);
    let tone: Vec<f32> = (0..frames).map(|t| (2.0 * std::f64::consts::PI * f * t as f64 / fs).sin() as f32).collect();
    let period = (fs / (0.6 * f)).max(2.0);
    let square: Vec<f32> = (0..frames).map(|t| if (t as f64 % period) < period / 2.0 { 0.9 } else { -0.9 }).collect();
    let mut impulse = vec![0.0f32; frames];
    impulse[17] = 1.0;
    let mut burst = ferrofx_testkit::noise_amp(frames, seed + 3, 0.05);
    burst[frames / 2..frames / 2 + 200].iter_mut().for_each(|v| *v *= 20.0);
    vec![
        ferrofx_testkit::noise_amp(frames, seed, 1.0),
        ferrofx_testkit::noise_amp(frames, seed + 1, 0.3),
        tone,
        square,
        impulse,
        burst,
        ferrofx_testkit::noise_amp(frames, seed + 2, 1.0),
        ferrofx_testkit::noise_amp(frames, seed + 4, 0.01),
    ]
}

fn peak<T: Copy + Into<f64>>(x: &[T]) -> f64 {
    x.iter().fold(0.0f64, |m, &v| m.max(v.into().abs()))
}

/// On a seeded sweep of cascades, with the default budget and with a 100x larger one (more
/// sections in float32), every channel of every kernel stays within the plan's bound of
/// the float64 reference: `max|y - ref| <= bound * max|x|`, plus the output's own float32
/// rounding. At least a few dozen cascades must have float32 sections, or the sweep
/// proves nothing.
#[test]
fn mixed_cascades_stay_within_their_bound() {
    let fs = 48_000.0;
    let mut r = ferrofx_testkit::Rng::new(20_261_126);
    let isas: Vec<Isa> = [Isa::Portable, Isa::Avx2, Isa::Avx512].into_iter().filter(|i| i.is_supported()).collect();
    let (mut with_f32, mut cases, mut worst_share) = (0, 0, 0.0f64);
    for case in 0..60 {
        let sections = random_cascade(&mut r, fs);
        for budget in [F32_BUDGET, 100.0 * F32_BUDGET] {
            let mut probe = SosCascade::new(&sections, 8);
            if probe.set_mixed_precision(budget) == 0 {
                continue;
            }
            let plan = probe.f32_sections().to_vec();
            let bound = f32_bound(probe.coefficients(), &plan).expect("a plan was made, so the bound exists");
            assert!(bound <= budget * (1.0 + 1e-9), "case {case}: bound {bound:e} over budget {budget:e}");
            with_f32 += 1;
            let frames = 6000;
            let input = probes(&sections, fs, frames, case as u64);
            for &isa in &isas {
                let mut c = SosCascade::with_isa(&sections, 8, isa);
                assert_eq!(c.set_mixed_precision(budget), plan.iter().filter(|&&f| f).count());
                let out = common::in_cuts(&input, &[frames / 3, 1, 999], |s, n| c.process(s, n));
                for (ch, (x, y)) in input.iter().zip(&out).enumerate() {
                    let want = common::sos_f64(&sections, x);
                    let err = y.iter().zip(&want).fold(0.0f64, |m, (&a, &b)| m.max((f64::from(a) - b).abs()));
                    let allowed = bound * peak(x) + U * peak(&want) + 1e-12 * peak(x);
                    assert!(err <= allowed, "case {case}, {}, channel {ch}: error {err:e} > allowed {allowed:e} (bound {bound:e}, plan {plan:?})", isa.name());
                    if peak(x) > 0.0 {
                        worst_share = worst_share.max(err / allowed);
                    }
                }
            }
            cases += 1;
        }
    }
    println!("{cases} mixed cascades ({with_f32} with float32 sections); worst error {worst_share:.3} of what the bound allows");
    assert!(with_f32 >= 30, "only {with_f32} cascades got float32 sections: the sweep checks too little");
}

/// A mixed cascade computes the same bits on the AVX-512 kernel (two float32 sections per
/// 16-lane vector for groups of eight channels), the AVX2 kernel (frame by frame) and in
/// any channel grouping and block cuts; and it is not the float64 result (float32 did
/// run).
#[test]
fn mixed_kernels_and_groupings_agree_bit_for_bit() {
    let fs = 16_000.0;
    let sections = sections_of(Butterworth::bandpass(300.0, 3400.0, 8) | Butterworth::highpass(2000.0, 8), fs);
    let frames = 3000;
    let input = ferrofx_testkit::noise_channels(12, frames, 5, 0.8);
    let run = |isa: Isa, group: &[Vec<f32>], cuts: &[usize], mixed: bool| -> Vec<Vec<f32>> {
        let mut c = SosCascade::with_isa(&sections, group.len(), isa);
        if mixed {
            assert!(c.set_mixed_precision(F32_BUDGET) >= 2, "this cascade has float32 pairs");
        }
        common::in_cuts(group, cuts, |s, n| c.process(s, n))
    };
    let same = |a: &[Vec<f32>], b: &[Vec<f32>]| a.iter().flatten().zip(b.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits());
    let have: Vec<Isa> = [Isa::Avx2, Isa::Avx512].into_iter().filter(|i| i.is_supported()).collect();
    if have.is_empty() {
        println!("SKIPPED: this CPU has neither AVX2 nor AVX-512");
        return;
    }
    let all = run(have[0], &input, &[frames], true);
    assert!(!same(&all, &run(have[0], &input, &[frames], false)), "the mixed cascade gave the float64 bits");
    for &isa in &have {
        for (width, cuts) in [(12usize, &[frames][..]), (8, &[5, 300][..]), (1, &[1, 13, 500][..]), (2, &[3, 256, 40][..]), (4, &[700][..]), (5, &[9, 1000][..])] {
            for first in (0..12).step_by(width) {
                let group = &input[first..(first + width).min(12)];
                let got = run(isa, group, cuts, true);
                assert!(same(&got, &all[first..first + group.len()]), "{}: channels {first}.. in a group of {width} differ", isa.name());
            }
        }
    }
}

/// New coefficients are not covered by the plan: the cascade runs them in float64 (the
/// same bits as a cascade built without a plan) until it is planned again.
#[test]
fn new_coefficients_return_the_cascade_to_float64() {
    let fs = 16_000.0;
    let a = sections_of(Butterworth::bandpass(300.0, 3400.0, 8), fs);
    let b = sections_of(Butterworth::bandpass(400.0, 3000.0, 8), fs);
    let input = ferrofx_testkit::noise_channels(8, 2000, 9, 0.5);
    let mut mixed = SosCascade::new(&a, 8);
    assert!(mixed.set_mixed_precision(F32_BUDGET) > 0);
    mixed.set_coefficients(&b).unwrap();
    assert!(mixed.f32_sections().iter().all(|&f| !f));
    let mut plain = SosCascade::new(&b, 8);
    let got = common::in_cuts(&input, &[700], |s, n| mixed.process(s, n));
    let want = common::in_cuts(&input, &[700], |s, n| plain.process(s, n));
    assert!(got.iter().flatten().zip(want.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// The engine option: the same bits as its cascades planned by hand, and within the
/// reference tolerance (1e-4 of the output's peak) of the float64 result on noise.
#[test]
fn the_engine_option_plans_every_cascade() {
    let fs = 16_000.0;
    let chain = Butterworth::bandpass(300.0, 3400.0, 8) | Butterworth::highpass(2000.0, 8);
    let designed = chain.design(fs).unwrap();
    let sections = sections_of(chain, fs);
    let input = ferrofx_testkit::noise_channels(8, 5000, 11, 0.9);
    let mut engine = Engine::with_options(&designed, 8, 1024, EngineOptions { mixed_precision: true, ..EngineOptions::offline(8) });
    let got = common::in_cuts(&input, &[1024], |s, _| engine.process(s));
    let mut c = SosCascade::new(&sections, 8);
    assert!(c.set_mixed_precision(F32_BUDGET) > 0);
    let want = common::in_cuts(&input, &[1024], |s, n| c.process(s, n));
    assert!(got.iter().flatten().zip(want.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits()));
    for (x, y) in input.iter().zip(&got) {
        let reference = common::sos_f64(&sections, x);
        let err = y.iter().zip(&reference).fold(0.0f64, |m, (&a, &b)| m.max((f64::from(a) - b).abs()));
        assert!(err <= 1e-4 * peak(&reference), "error {err:e} of peak {:e}", peak(&reference));
    }
}
