//! Every SOS kernel (portable, AVX2+FMA, AVX-512+FMA, each lane width) computes the same
//! cascade as a plain float64 transposed-direct-form-II loop, for any channel count,
//! section count and block length.

use ferrofx::chain::{Butterworth, Chain, Chebyshev2, Elliptic};
use ferrofx::design::Sos;
use ferrofx::dsp::sos::{Isa, SosCascade};

/// The plain float64 loop, rounded to float32 like the kernels' output.
fn reference(sections: &[Sos], x: &[f32]) -> Vec<f32> {
    ferrofx_testkit::engine::sos_f64(sections, x).into_iter().map(|v| v as f32).collect()
}

fn sections_of(chain: Chain) -> Vec<Sos> {
    match &chain.design(48_000.0).unwrap().stages[0] {
        ferrofx::DesignedStage::Sos(s) => s.clone(),
        _ => unreachable!(),
    }
}

/// Uniform samples in [-0.5, 0.5).
fn uniform(seed: u32) -> impl FnMut() -> f32 {
    let mut r = ferrofx_testkit::Rng::new(u64::from(seed));
    move || (r.unit() - 0.5) as f32
}

/// `input` through `c` in blocks of the given lengths, repeated until the end.
fn process_in_cuts(c: &mut SosCascade, input: &[Vec<f32>], cuts: &[usize]) -> Vec<Vec<f32>> {
    ferrofx_testkit::engine::in_cuts(input, cuts, |s, n| c.process(s, n))
}

#[test]
fn all_kernels_match_the_scalar_reference() {
    let cascades = [
        sections_of(Chain::from(Butterworth::lowpass(20.0, 2))),
        sections_of(Butterworth::highpass(30.0, 7) | Elliptic::lowpass(9000.0, 6, 0.5, 70.0)),
        sections_of(Butterworth::bandpass(100.0, 5000.0, 12) | Chebyshev2::highpass(50.0, 8, 60.0)),
    ];
    let mut rnd = uniform(1);
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if !isa.is_supported() {
            println!("SKIPPED {}: this CPU lacks it", isa.name());
            continue;
        }
        for sections in &cascades {
            for channels in [1usize, 2, 3, 4, 5, 8, 9, 12, 13, 64] {
                let frames = 1500;
                let input: Vec<Vec<f32>> = (0..channels).map(|_| (0..frames).map(|_| rnd()).collect()).collect();
                let mut c = SosCascade::with_isa(sections, channels, isa);
                assert_eq!(c.isa(), isa);
                // Irregular blocks, including ones longer than the internal sub-block.
                let out = process_in_cuts(&mut c, &input, &[1, 300, 7, 600, 592]);
                for ch in 0..channels {
                    let want = reference(sections, &input[ch]);
                    let peak = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    let err = out[ch].iter().zip(&want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs())) / peak;
                    assert!(err < 1e-6, "{} {} sections, {channels} ch, channel {ch}: {err:e}", isa.name(), sections.len());
                }
            }
        }
    }
}

/// The fused kernels (AVX2+FMA, AVX-512+FMA) do the same five operations in the same order
/// whatever the layout (channels in lanes, sections in lanes with a time skew, sample-outer
/// chunks), so a channel's output does not depend on how many channels run beside it or on
/// how the stream is cut into blocks: `render --threads` splits a file's channels over
/// threads and promises bit-identical output.
#[test]
fn channel_grouping_and_block_cuts_do_not_change_a_bit() {
    let sections = sections_of(Butterworth::highpass(30.0, 7) | Elliptic::lowpass(9000.0, 6, 0.5, 70.0));
    let frames = 3000;
    let mut rnd = uniform(7);
    let input: Vec<Vec<f32>> = (0..12).map(|_| (0..frames).map(|_| rnd()).collect()).collect();
    let run = |isa: Isa, group: &[Vec<f32>], cuts: &[usize]| -> Vec<Vec<f32>> {
        let mut c = SosCascade::with_isa(&sections, group.len(), isa);
        process_in_cuts(&mut c, group, cuts)
    };
    let mut checked = 0;
    for isa in [Isa::Avx2, Isa::Avx512] {
        if !isa.is_supported() {
            println!("SKIPPED {}: this CPU lacks it", isa.name());
            continue;
        }
        let all = run(isa, &input, &[frames]);
        for (width, cuts) in [(1usize, &[1usize, 13, 500][..]), (2, &[3, 256, 40][..]), (4, &[700][..]), (5, &[9, 1000][..]), (8, &[64, 1][..])] {
            for first in (0..12).step_by(width) {
                let group = &input[first..(first + width).min(12)];
                let got = run(isa, group, cuts);
                for (i, ch) in got.iter().enumerate() {
                    let want = &all[first + i];
                    let same = ch.iter().zip(want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{}: channel {} alone in a group of {width} differs from the 12-channel run", isa.name(), first + i);
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} channel runs compared bit for bit");
}

/// A seeded sweep over cascade lengths (1 to 60 sections: one, two and three vectors of
/// section lanes per chunk for one and two channels, one to three section pairs per
/// chunk for a group of four, and every remainder) for one, two, four and twelve
/// channels, in random block cuts down to single frames (shorter than the pipelines'
/// fill): the AVX-512 and AVX2 kernels agree bit for bit, and both with the float64
/// reference to 1e-6 of the peak.
#[test]
fn chunks_of_every_length_match() {
    use ferrofx::design::{rbj, BiquadKind};
    let have = [Isa::Avx2, Isa::Avx512].into_iter().filter(|i| i.is_supported()).collect::<Vec<_>>();
    if have.is_empty() {
        println!("SKIPPED: this CPU has neither AVX2 nor AVX-512");
        return;
    }
    let mut r = ferrofx_testkit::Rng::new(20_261_126);
    let kinds = [BiquadKind::Peaking, BiquadKind::Peaking, BiquadKind::LowShelf, BiquadKind::HighShelf, BiquadKind::Lowpass, BiquadKind::Highpass, BiquadKind::Allpass];
    let mut cases = 0;
    for count in (1..=60).chain([24, 48, 12, 13, 25]) {
        let fs = 48_000.0;
        let sections: Vec<Sos> = (0..count)
            .map(|_| {
                let kind = kinds[r.below(kinds.len())];
                let freq_hz = 40.0 * (400.0f64).powf(r.unit());
                let q = 0.4 + 3.0 * r.unit();
                let gain_db = 24.0 * r.unit() - 12.0;
                rbj::biquad(kind, freq_hz, q, gain_db, fs)
            })
            .collect();
        for channels in [1usize, 2, 4, 12] {
            let frames = 200 + r.below(1200);
            let input: Vec<Vec<f32>> = (0..channels).map(|_| (0..frames).map(|_| (r.unit() - 0.5) as f32).collect()).collect();
            let cuts: Vec<usize> = (0..6).map(|_| if r.below(3) == 0 { 1 + r.below(8) } else { 1 + r.below(400) }).collect();
            let mut outs = Vec::new();
            for &isa in &have {
                let mut c = SosCascade::with_isa(&sections, channels, isa);
                let out = process_in_cuts(&mut c, &input, &cuts);
                for ch in 0..channels {
                    let want = reference(&sections, &input[ch]);
                    let peak = want.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-30);
                    let err = out[ch].iter().zip(&want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs())) / peak;
                    assert!(err < 1e-6, "{}: {count} sections, {channels} ch, cuts {cuts:?}: {err:e} of the peak", isa.name());
                }
                outs.push(out);
            }
            if let [a, b] = &outs[..] {
                let same = a.iter().flatten().zip(b.iter().flatten()).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "AVX2 and AVX-512 differ: {count} sections, {channels} ch, cuts {cuts:?}");
            }
            cases += 1;
        }
    }
    println!("{cases} cascades compared");
}

/// Input with the values the engine's input rule removes (NaN, both infinities,
/// subnormals of both signs, negative zero) and the edge values it keeps (the smallest
/// normal, the largest finite), scattered through noise by a seeded generator.
fn salted(channels: usize, frames: usize, seed: u64) -> Vec<Vec<f32>> {
    let special = [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, -1e-42, f32::from_bits(1), -0.0, f32::MIN_POSITIVE, -f32::MIN_POSITIVE, f32::MAX, -f32::MAX];
    let mut r = ferrofx_testkit::Rng::new(seed);
    (0..channels)
        .map(|_| (0..frames).map(|_| if r.unit() < 0.05 { special[(r.unit() * special.len() as f64) as usize % special.len()] } else { (r.unit() - 0.5) as f32 }).collect())
        .collect()
}

fn same_bits(a: &[Vec<f32>], b: &[Vec<f32>]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()))
}

/// `process_sanitized` (the input rule applied while the kernels read the input) is bit
/// for bit `engine::sanitize_input` on every buffer followed by `process`, on every kernel,
/// for 1 to 13 channels (every group width and the transposed tiles), odd block cuts and a
/// cascade with no sections.
#[test]
fn sanitizing_while_reading_equals_a_pass_before() {
    let sections = sections_of(Butterworth::highpass(30.0, 7) | Elliptic::lowpass(9000.0, 6, 0.5, 70.0));
    // A pass-through section (y = v exactly): its output is the sanitised input itself.
    let identity = [Sos { b: [1.0, 0.0, 0.0], a: [1.0, 0.0, 0.0] }];
    let frames = 1500;
    let mut checked = 0;
    for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
        if !isa.is_supported() {
            println!("SKIPPED {}: this CPU lacks it", isa.name());
            continue;
        }
        for channels in 1..=13 {
            for secs in [&sections[..], &sections[..1], &identity[..], &[]] {
                let input = salted(channels, frames, 100 + channels as u64);
                let cuts = [37usize, 256, 3, 700];
                let mut fused = SosCascade::with_isa(secs, channels, isa);
                let got = ferrofx_testkit::engine::in_cuts(&input, &cuts, |s, n| fused.process_sanitized(s, n));
                let mut plain = SosCascade::with_isa(secs, channels, isa);
                let want = ferrofx_testkit::engine::in_cuts(&input, &cuts, |s, n| {
                    for b in s.iter_mut() {
                        ferrofx::engine::sanitize_input(&mut b[..n]);
                    }
                    plain.process(s, n)
                });
                assert!(same_bits(&got, &want), "{}: {channels} channels, {} sections", isa.name(), secs.len());
                if secs.len() <= 1 && secs.first() != Some(&sections[0]) {
                    let mut rule = input.clone();
                    rule.iter_mut().flatten().for_each(|v| *v = ferrofx::dsp::sanitize_sample(*v));
                    assert!(same_bits(&got, &rule), "{}: {channels} channels pass-through", isa.name());
                }
                checked += 1;
            }
        }
    }
    println!("{checked} cascades compared bit for bit");
}

/// The engine's output on salted input is bit for bit its output on the same input
/// sanitised beforehand, whether its first stage is a cascade (which sanitises while it
/// reads, also in time segments: offline, one to seven channels, the last chain) or a
/// FIR.
#[test]
fn the_engine_sanitises_its_input_once_whatever_its_first_stage() {
    use ferrofx::chain::Fir;
    use ferrofx::engine::{Engine, EngineOptions};
    let chains = [
        Butterworth::highpass(30.0, 7) | Elliptic::lowpass(9000.0, 6, 0.5, 70.0),
        Chain::from(Fir::lowpass(31, 4000.0)) | Butterworth::lowpass(8000.0, 2),
        Butterworth::bandpass(300.0, 3000.0, 4) | Fir::lowpass(15, 6000.0),
        // Short warm-ups: offline, one to seven channels run this in time segments.
        Butterworth::lowpass(6000.0, 4) | Butterworth::highpass(3000.0, 2),
    ];
    for (ci, chain) in chains.iter().enumerate() {
        let designed = chain.design(48_000.0).unwrap();
        for channels in [1, 2, 3, 8, 12] {
            for offline in [false, true] {
                let frames = 40_000;
                let options = if offline { EngineOptions::offline(channels) } else { EngineOptions::default() };
                let input = salted(channels, frames, 7 + channels as u64);
                let mut clean = input.clone();
                clean.iter_mut().for_each(|b| ferrofx::engine::sanitize_input(b));
                let mut a = Engine::with_options(&designed, channels, frames, options);
                let mut b = Engine::with_options(&designed, channels, frames, options);
                let got = ferrofx_testkit::engine::in_cuts(&input, &[frames, 333], |s, _| a.process(s));
                let want = ferrofx_testkit::engine::in_cuts(&clean, &[frames, 333], |s, _| b.process(s));
                assert!(same_bits(&got, &want), "chain {ci}, {channels} channels, offline {offline}");
            }
        }
    }
}
