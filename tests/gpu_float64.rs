//! The float64 form on a real adapter (lavapipe in CI has `SHADER_F64`): the cascades whose
//! float32 form would miss the tolerance run in float64 on the device instead of being
//! declined, match the CPU engine and the CPU model of the float64 shader, carry their
//! state through jobs and coefficient changes, and the resident path runs them too. On a
//! device without double precision (or with `FERROFX_WGPU_FLOAT64=0`) they are declined
//! with the reason.
//!
//! Without an adapter these tests print why and return, unless `FERROFX_REQUIRE_GPU=1`.
#![cfg(feature = "wgpu")]

use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1};
use ferrofx::engine::EngineOptions;
use ferrofx::gpu::wgpu::{sequential_max_for, WgpuChain, WgpuContext, WgpuResident, WgpuStream};
use ferrofx::DesignedChain;
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx_testkit::float64::{hard_chains, model};

const TIME_TOLERANCE: f64 = 1e-4;

/// The adapter, if it runs float64 (else the test says so and returns; with
/// `FERROFX_REQUIRE_GPU=1` a missing adapter fails in `wgpu_context`).
fn context() -> Option<&'static WgpuContext> {
    let ctx = ferrofx_testkit::gpu::wgpu_context()?;
    if !ctx.has_float64() {
        println!("skipped: {} has no float64 shaders (or FERROFX_WGPU_FLOAT64=0)", ctx.report());
        return None;
    }
    Some(ctx)
}

fn design(chain: &Chain, fs: f64) -> DesignedChain {
    chain.design(fs).unwrap_or_else(|e| panic!("{e}"))
}

fn float64_stages(ctx: &WgpuContext, designed: &DesignedChain, block: usize) -> Vec<bool> {
    ferrofx_testkit::float64::float64_stages(designed, block, sequential_max_for(ctx.report()), "wgpu")
}

#[test]
fn cascades_float32_declines_run_in_float64_and_match_the_cpu() {
    let Some(ctx) = context() else { return };
    let seq = sequential_max_for(ctx.report());
    for (name, chain, fs) in hard_chains() {
        let designed = design(&chain, fs);
        let input = ferrofx_testkit::noise_channels(2, 150_000, 17, 1.0);
        let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
        for block in [64usize, 2048, 65_536] {
            let wide = float64_stages(ctx, &designed, block);
            let mut stream = WgpuStream::new(ctx, &designed, 2, block).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The sequential path forced only on blocks up to 2,048 frames: lavapipe stops
            // a shader loop after 65,535 iterations (17 sections x 4,096 frames would pass
            // it; see WgpuChain::new).
            for sequential in [false, true].into_iter().filter(|&s| !s || block <= 2048) {
                if sequential {
                    stream.chain_mut().set_sequential_max(usize::MAX);
                }
                stream.reset();
                let mut y = input.clone();
                let mut slices: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
                stream.process(&mut slices).unwrap();
                let e = rel_error(&y, &cpu);
                let m = model(&designed, fs, &wide, &input, block, if sequential { usize::MAX } else { seq });
                let em = rel_error(&y, &m);
                println!("{name}: block {block}, sequential {sequential}: {e:.2e} from the CPU engine, {em:.2e} from the model");
                assert!(e <= TIME_TOLERANCE, "{name}, block {block}, sequential {sequential}: {e:.3e} from the CPU engine");
                // The model's arithmetic, but the adapter may fuse or not: within a few
                // float32 roundings of the output.
                assert!(em <= 1e-6, "{name}, block {block}, sequential {sequential}: {em:.3e} from the float64 model");
            }
        }
    }
}

/// A job's state goes out of the float64 stages and back in (the offload's jobs carry it):
/// two jobs with the state handed over equal one job, and the state equals the CPU
/// engine's after the same input.
#[test]
fn float64_state_goes_out_and_back_in_between_jobs() {
    let Some(ctx) = context() else { return };
    let (name, chain, fs) = hard_chains().swap_remove(1);
    let designed = design(&chain, fs);
    let frames = 8192;
    float64_stages(ctx, &designed, frames);
    let input = ferrofx_testkit::noise_channels(2, 2 * frames, 5, 1.0);
    ferrofx_testkit::float64::assert_two_jobs_through_the_host(name, &designed, &input, frames, |block, state| {
        WgpuChain::new(ctx, &designed, 2, frames).unwrap().process(block, frames, state).unwrap();
    });
}

/// Device-resident buffers: a float64 cascade there too, a stream of calls bit for bit one
/// call, and within the tolerance of the CPU.
#[test]
fn the_resident_path_runs_float64_cascades() {
    let Some(ctx) = context() else { return };
    let (name, chain, fs) = hard_chains().swap_remove(2);
    let designed = design(&chain, fs);
    let (rows, frames, unit) = (3usize, 40_000usize, 4096usize);
    float64_stages(ctx, &designed, unit);
    let input = ferrofx_testkit::noise_channels(rows, frames, 23, 1.0);
    let mut resident = WgpuResident::new(ctx, &designed, rows, unit).unwrap_or_else(|e| panic!("{name}: {e}"));
    let one = ferrofx_testkit::gpu::resident_run(ctx, &mut resident, &input, &[], false);
    let cpu = run_engine(&designed, &input, 4096, EngineOptions::default());
    let e = rel_error(&one, &cpu);
    println!("{name}: resident, one call: {e:.2e} from the CPU engine");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
    resident.reset();
    let split = ferrofx_testkit::gpu::resident_run(ctx, &mut resident, &input, &[1, 777, 4096, 9000, 30_001], true);
    for (a, b) in one.iter().flatten().zip(split.iter().flatten()) {
        assert_eq!(a.to_bits(), b.to_bits(), "a stream of calls differs from one call");
    }
}

/// New coefficients of the same shape in place, float64 stages included: equal to a chain
/// built fresh with them, also when a cascade moves between float32 and float64.
#[test]
fn new_coefficients_rewrite_the_float64_buffers() {
    let Some(ctx) = context() else { return };
    let frames = 20_000;
    let fs = 48_000.0;
    let designed = |cut: f64| design(&(Chebyshev1::lowpass(cut, 16, 1.0) | Biquad::peaking(2000.0, 1.0, 3.0)), fs);
    let (a, b) = (designed(1000.0), designed(1100.0));
    for d in [&a, &b] {
        float64_stages(ctx, d, frames);
    }
    let input: Vec<f32> = ferrofx_testkit::noise_channels(2, frames, 9, 1.0).concat();
    let run = |chain: &mut WgpuChain| {
        let mut x = input.clone();
        let mut st = chain.new_state();
        chain.process(&mut x, frames, &mut st).unwrap();
        x
    };
    let mut retuned = WgpuChain::new(ctx, &a, 2, frames).unwrap();
    retuned.set_coefficients(&b).unwrap();
    let fresh = run(&mut WgpuChain::new(ctx, &b, 2, frames).unwrap());
    let got = run(&mut retuned);
    assert!(got.iter().zip(&fresh).all(|(x, y)| x.to_bits() == y.to_bits()), "retuned differs from fresh");
    // A Butterworth low-pass of the same order runs in float32: the same shape, the
    // cascade moves to float32 in place and equals a chain built with it; the next job
    // must bring its state (the device's is in the other precision's slots).
    let f32_only = design(&(Butterworth::lowpass(1000.0, 16) | Biquad::peaking(2000.0, 1.0, 3.0)), fs);
    retuned.set_coefficients(&f32_only).unwrap();
    let mut x = input.clone();
    let e = retuned.submit(0, &x, frames, None, false).unwrap_err().to_string();
    assert!(e.contains("must carry the state"), "{e}");
    let fresh32 = run(&mut WgpuChain::new(ctx, &f32_only, 2, frames).unwrap());
    assert!(run(&mut retuned).iter().zip(&fresh32).all(|(x, y)| x.to_bits() == y.to_bits()), "retuned to float32 differs from fresh");
    // And back to float64, in place.
    retuned.set_coefficients(&b).unwrap();
    let mut st = retuned.new_state();
    retuned.process(&mut x, frames, &mut st).unwrap();
    assert!(x.iter().zip(&fresh).all(|(x, y)| x.to_bits() == y.to_bits()), "back to float64 differs from fresh");
}

/// On a software adapter a chain whose shader loops would pass lavapipe's loop limit is
/// refused with the reason, not run wrong; the same chain in shorter blocks runs.
#[test]
fn lavapipes_loop_limit_refuses_instead_of_running_wrong() {
    let Some(ctx) = ferrofx_testkit::gpu::wgpu_context() else { return };
    if !ctx.report().is_cpu() {
        println!("skipped: {} is not a software adapter", ctx.report());
        return;
    }
    // 24 sections: the scan's chunks of 2^22 / 256 = 16,384 frames -> 393,216 iterations.
    let designed = design(&(Butterworth::lowpass(1000.0, 24) | Butterworth::highpass(20.0, 24)), 48_000.0);
    let e = WgpuChain::new(ctx, &designed, 1, 1 << 22).err().expect("refused").to_string();
    assert!(e.contains("lavapipe stops loops after 65535") && e.contains("cascade 0 (24 sections)"), "{e}");
    assert!(WgpuChain::new(ctx, &designed, 1, 65_536).is_ok());
}
