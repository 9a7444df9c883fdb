//! Realtime guarantees of `Engine`: no allocation in `process`/`update`/`reset`,
//! coefficient replacement keeps state, non-finite input never poisons the engine,
//! subnormals are flushed.

use assert_no_alloc::{assert_no_alloc, violation_count, AllocDisabler};
use ferrofx::chain::{Biquad, Butterworth, Chain, Elliptic, Fir};
use ferrofx::engine::{Engine, EngineOptions};
use ferrofx::fir::FirMode;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

/// Deterministic white noise in [-1, 1).
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A chain with every processor kind: cascade, direct FIR, partitioned FIR, cascade.
fn busy_chain(peak_db: f64) -> Chain {
    Butterworth::highpass(30.0, 4)
        | Biquad::peaking(1000.0, 1.4, peak_db)
        | Fir::lowpass(31, 8000.0)
        | Fir::coefficients((0..3000).map(|i| (-(i as f64) / 400.0).exp() * ((i * 7919 % 13) as f64 - 6.0) / 60.0).collect())
        | Elliptic::lowpass(15000.0, 5, 0.5, 60.0)
}

#[test]
fn the_harness_detects_allocations() {
    // Proves the checks below can fail: an allocation inside is counted.
    let before = violation_count();
    assert_no_alloc(|| {
        let v = vec![1u8; 100];
        std::hint::black_box(v);
    });
    assert!(violation_count() > before);
}

#[test]
fn process_update_and_reset_do_not_allocate() {
    let fs = 48_000.0;
    let designed_a = busy_chain(-6.0).design(fs).unwrap();
    let designed_b = busy_chain(4.0).design(fs).unwrap();
    let channels = 6;
    let max_block = 512;
    let mut engine = Engine::new(&designed_a, channels, max_block);
    assert!(engine.processors().len() >= 3);
    let mut bufs: Vec<Vec<f32>> = (0..channels).map(|c| noise(c as u64, max_block)).collect();
    // Irregular block sizes, including 1 and the maximum; a block longer than the maximum.
    let sizes = [1usize, 7, 64, 512, 333, 2, 128, 511, 1000];
    let before = violation_count();
    for round in 0..200 {
        let n = sizes[round % sizes.len()].min(max_block);
        // The slice list is built outside the checked closure: only the engine is under test.
        let mut slices_storage: Vec<&mut [f32]> = bufs.iter_mut().map(|b| &mut b[..n]).collect();
        let slices = &mut slices_storage;
        assert_no_alloc(|| {
            engine.process(slices);
            if round % 10 == 3 {
                engine.update(if round % 20 == 3 { &designed_b } else { &designed_a }).unwrap();
            }
            if round == 150 {
                engine.reset();
            }
        });
        for b in slices_storage.iter_mut() {
            for v in b.iter_mut() {
                // Keep the signal alive and bounded.
                *v = (*v * 0.5 + 0.25).clamp(-1.0, 1.0);
            }
        }
    }
    assert_eq!(violation_count(), before, "the engine allocated on the audio path");
}

#[test]
fn update_keeps_state_and_equals_a_fresh_run_when_unchanged() {
    // Replacing coefficients with the same design must not disturb the stream at all.
    let fs = 44_100.0;
    let designed = busy_chain(-6.0).design(fs).unwrap();
    let input = noise(9, 8192);
    let mut reference = input.clone();
    Engine::new(&designed, 1, 8192).process(&mut [&mut reference[..]]);
    let mut engine = Engine::new(&designed, 1, 256);
    let mut out = input.clone();
    for (i, chunk) in out.chunks_mut(256).enumerate() {
        if i % 3 == 1 {
            engine.update(&designed).unwrap();
        }
        engine.process(&mut [chunk]);
    }
    assert_eq!(out, reference);
}

#[test]
fn update_rejects_a_different_shape_and_changes_nothing() {
    let fs = 48_000.0;
    let a = (Butterworth::lowpass(1000.0, 4) | Fir::lowpass(31, 5000.0)).design(fs).unwrap();
    let b = (Butterworth::lowpass(1000.0, 6) | Fir::lowpass(31, 5000.0)).design(fs).unwrap();
    let c = (Butterworth::lowpass(1000.0, 4) | Fir::lowpass(33, 5000.0)).design(fs).unwrap();
    let d = Chain::from(Butterworth::lowpass(1000.0, 4)).design(fs).unwrap();
    let mut engine = Engine::new(&a, 1, 64);
    assert!(engine.update(&b).unwrap_err().to_string().contains("stage 0"));
    assert!(engine.update(&c).unwrap_err().to_string().contains("31 taps"));
    assert!(engine.update(&d).unwrap_err().to_string().contains("2 stages"));
    // Still runs design `a` exactly.
    let input = noise(3, 512);
    let mut x = input.clone();
    engine.process(&mut [&mut x[..]]);
    let mut y = input.clone();
    Engine::new(&a, 1, 64).process(&mut [&mut y[..]]);
    assert_eq!(x, y);
}

#[test]
fn reset_returns_to_the_initial_state() {
    let designed = busy_chain(-6.0).design(48_000.0).unwrap();
    let input = noise(4, 4096);
    let mut engine = Engine::new(&designed, 1, 4096);
    let mut first = input.clone();
    engine.process(&mut [&mut first[..]]);
    let mut scratch = noise(5, 1234);
    engine.process(&mut [&mut scratch[..]]);
    engine.reset();
    let mut second = input.clone();
    engine.process(&mut [&mut second[..]]);
    assert_eq!(first, second);
}

#[test]
fn nan_and_infinity_count_as_silence() {
    // The documented policy: a NaN or infinite input sample is replaced by 0.0, so the
    // output equals, sample for sample, the output for the input with those samples zeroed.
    for fir_mode in [FirMode::Direct, FirMode::Partitioned { partition: 64 }] {
        let designed = busy_chain(-6.0).design(48_000.0).unwrap();
        let options = EngineOptions { fir_mode };
        let mut engine = Engine::with_options(&designed, 2, 256, options);
        let mut expected_engine = Engine::with_options(&designed, 2, 256, options);
        for block in 0..40u64 {
            let clean = noise(block, 256);
            let (mut l, mut r) = (clean.clone(), clean.clone());
            let (mut el, mut er) = (clean.clone(), clean.clone());
            if block < 4 {
                let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN][block as usize];
                for i in (block as usize..256).step_by(17) {
                    l[i] = bad;
                    el[i] = 0.0;
                }
                r[100] = bad;
                er[100] = 0.0;
            }
            engine.process(&mut [&mut l[..], &mut r[..]]);
            expected_engine.process(&mut [&mut el[..], &mut er[..]]);
            assert!(l.iter().chain(&r).all(|v| v.is_finite()), "{fir_mode:?}: block {block} not finite");
            assert_eq!((l, r), (el, er), "{fir_mode:?}: block {block}");
        }
    }
}

#[test]
fn huge_finite_input_recovers_to_finite_output() {
    // f32::MAX overflows float32 outputs (inf inside the chain); once the bad samples have
    // passed, the cascade resets non-finite state, the FIR forgets, and output is finite.
    for fir_mode in [FirMode::Direct, FirMode::Partitioned { partition: 64 }] {
        let designed = busy_chain(-6.0).design(48_000.0).unwrap();
        let mut engine = Engine::with_options(&designed, 2, 256, EngineOptions { fir_mode });
        let mut l = noise(1, 256);
        let mut r = noise(2, 256);
        l[10] = f32::MAX;
        r[20] = -f32::MAX;
        r[21] = f32::MAX;
        engine.process(&mut [&mut l[..], &mut r[..]]);
        let mut finite_blocks = 0;
        for block in 0..400 {
            let x = noise(100 + block, 256);
            let (mut l, mut r) = (x.clone(), x.clone());
            engine.process(&mut [&mut l[..], &mut r[..]]);
            if l.iter().chain(&r).all(|v| v.is_finite()) {
                finite_blocks += 1;
            } else {
                assert_eq!(finite_blocks, 0, "{fir_mode:?}: output became non-finite again at block {block}");
            }
        }
        // Finite from some point on, and for most of the 102,400 samples.
        assert!(finite_blocks > 300, "{fir_mode:?}: only {finite_blocks} finite blocks");
    }
}

#[test]
fn subnormal_input_is_flushed_and_state_decays_to_exact_zero() {
    let designed = (Butterworth::lowpass(20.0, 8) | Biquad::peaking(100.0, 4.0, 12.0)).design(48_000.0).unwrap();
    let mut engine = Engine::new(&designed, 1, 512);
    // A burst, then a long tail of subnormal input (1e-40 is subnormal in f32).
    let mut burst = noise(1, 512);
    engine.process(&mut [&mut burst[..]]);
    let mut last = vec![0.0f32; 512];
    for _ in 0..4000 {
        last = vec![1e-40f32; 512];
        engine.process(&mut [&mut last[..]]);
    }
    // Subnormal input counts as silence and the state has been flushed to exact zero.
    assert!(last.iter().all(|&v| v == 0.0), "output did not settle to zero: {:?}", &last[..4]);
}

#[test]
fn audio_thread_redesign_and_section_count_changes_do_not_allocate() {
    use ferrofx::design::{butterworth_into, rbj, BiquadKind, Response, Sos};
    use ferrofx::sos::{Isa, SosCascade};
    let fs = 48_000.0;
    let mut cascade = SosCascade::with_capacity(9, 2, Isa::detect());
    let mut sections = [Sos::IDENTITY; 9];
    let (mut l, mut r) = (noise(1, 64), noise(2, 64));
    let before = violation_count();
    for step in 0..400usize {
        let order = 1 + step % 16; // a cut sweeping 6..96 dB/oct
        let cutoff = 40.0 * 1.01f64.powi(step as i32);
        assert_no_alloc(|| {
            let n = butterworth_into(Response::Highpass, order, cutoff, fs, &mut sections[..8]);
            sections[n] = rbj::biquad(BiquadKind::Peaking, 1000.0 + step as f64, 1.2, -3.0, fs);
            cascade.set_sections(&sections[..=n]).unwrap();
            cascade.process(&mut [&mut l[..], &mut r[..]], 64);
        });
        // Finite, though not click-free: a section count change moves states between
        // sections of different shape (the plugin crossfades such changes).
        assert!(l.iter().chain(&r).all(|v| v.is_finite()), "step {step} order {order}");
        // Fresh noise each block (the test is about allocation, not re-filtering).
        l.copy_from_slice(&noise(step as u64 + 10, 64));
        r.copy_from_slice(&noise(step as u64 + 11, 64));
    }
    assert_eq!(violation_count(), before, "re-design or a section-count change allocated");
    assert!(cascade.set_sections(&[Sos::IDENTITY; 10]).is_err());
}

#[test]
fn changing_the_section_count_keeps_the_state_of_the_sections_that_stay() {
    use ferrofx::design::{rbj, BiquadKind};
    use ferrofx::sos::{Isa, SosCascade};
    let fs = 48_000.0;
    let a = rbj::biquad(BiquadKind::Lowpass, 500.0, 0.7, 0.0, fs);
    let b = rbj::biquad(BiquadKind::Peaking, 2000.0, 1.0, 6.0, fs);
    let c = rbj::biquad(BiquadKind::Highpass, 50.0, 0.7, 0.0, fs);
    let x = noise(3, 2048);
    for channels in [1usize, 3] {
        // Cascade that grows from [a] to [a, b, c] mid-stream ...
        let mut grow = SosCascade::with_capacity(3, channels, Isa::detect());
        grow.set_sections(&[a]).unwrap();
        let mut y: Vec<Vec<f32>> = (0..channels).map(|_| x.clone()).collect();
        {
            let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..1000]).collect();
            grow.process(&mut s, 1000);
        }
        grow.set_sections(&[a, b, c]).unwrap();
        {
            let mut s: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[1000..]).collect();
            grow.process(&mut s, 1048);
        }
        // ... equals section `a` over the whole stream followed by [b, c] started at 1000.
        let mut want = x.clone();
        SosCascade::new(&[a], 1).process(&mut [&mut want[..]], 2048);
        let mut tail = want[1000..].to_vec();
        SosCascade::new(&[b, c], 1).process(&mut [&mut tail[..]], 1048);
        want[1000..].copy_from_slice(&tail);
        for ch in &y {
            let err = ch.iter().zip(&want).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
            assert!(err < 1e-6, "{channels} ch: {err}");
        }
        // And shrinking back keeps `a`'s state: [a] after [a, b, c] continues `a` exactly.
        grow.set_sections(&[a]).unwrap();
        let mut more = x[..100].to_vec();
        let mut sl: Vec<Vec<f32>> = (0..channels).map(|_| more.clone()).collect();
        let mut s: Vec<&mut [f32]> = sl.iter_mut().map(|c| &mut c[..]).collect();
        grow.process(&mut s, 100);
        let mut cont = x.clone();
        cont.extend_from_slice(&x[..100]);
        SosCascade::new(&[a], 1).process(&mut [&mut cont[..]], 2148);
        more.copy_from_slice(&cont[2048..]);
        for ch in &sl {
            let err = ch.iter().zip(&more).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
            assert!(err < 1e-6, "{channels} ch after shrinking: {err}");
        }
    }
}
