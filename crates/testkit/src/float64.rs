//! The float64 GPU path's test material, shared by every backend's float64 tests
//! (`tests/gpu_float64.rs` on wgpu, `tests/gpu_cuda_float64.rs` on CUDA): chains whose
//! float32 form the GPU declines, which cascades of a design run in float64, and the CPU
//! model of a GPU run (each cascade in its precision).

use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, DesignedStage, Elliptic, Fir};
use ferrofx::dsp::sos::SosCoefs;
use ferrofx::gpu::design::{GpuDesign, StageForm};
use ferrofx::gpu::realize::{chunking, model_cascade, GpuPrecision, Realization};
use ferrofx::gpu::GpuError;
use ferrofx::DesignedChain;

/// Chains with a cascade the float32 form declines: poles crowded at z = 1 (low corners
/// at high rates, a narrow Chebyshev band-stop), each beside stages float32 runs.
pub fn hard_chains() -> Vec<(&'static str, Chain, f64)> {
    vec![
        ("chebyshev I band-stop 715-2461 Hz order 12 at 48 kHz", Chebyshev1::bandstop(715.08, 2461.27, 12, 1.12).into(), 48_000.0),
        ("chebyshev I lowpass 1 kHz order 16 + FIR + peaking at 48 kHz", Chebyshev1::lowpass(1000.0, 16, 1.0) | Fir::lowpass(31, 20_000.0) | Biquad::peaking(3000.0, 1.0, 4.0), 48_000.0),
        ("butterworth highpass 20 Hz + chebyshev I band-stop order 12 at 96 kHz", Butterworth::highpass(20.0, 4) | Elliptic::lowpass(20_000.0, 6, 0.1, 60.0) | Chebyshev1::bandstop(1430.0, 4922.0, 12, 1.12), 96_000.0),
    ]
}

/// Which cascades of `designed` run in float64 on a backend named `backend` with blocks
/// of `block` frames (asserting that at least one does, and that without float64 the
/// same design is declined with the reason).
pub fn float64_stages(designed: &DesignedChain, block: usize, sequential_max: usize, backend: &str) -> Vec<bool> {
    let without = GpuDesign::new(designed, 2, block, sequential_max, backend, false).err().expect("float32 declines one of these cascades");
    let text = without.to_string();
    assert!(matches!(without, GpuError::Precision { float_bits: 32, .. }), "{text}");
    assert!(text.contains("in float32") && text.contains("no float64 form"), "{text}");
    let d = GpuDesign::new(designed, 2, block, sequential_max, backend, true).unwrap_or_else(|e| panic!("float64: {e}"));
    let wide: Vec<bool> = d.stages.iter().map(|s| matches!(s, StageForm::Sos { precision: GpuPrecision::F64, .. })).collect();
    assert!(wide.iter().any(|&w| w), "a stage runs in float64");
    wide
}

/// The CPU model of a GPU run of `input` in blocks of `block` from zero state: each
/// cascade in its precision (`wide`: float64 ones through `run_cascade::<f64>`), scanned
/// as blocks above `sequential_max` frames are, FIR stages by the CPU engine's own FIR
/// (exact for short ones within float32).
pub fn model(designed: &DesignedChain, fs: f64, wide: &[bool], input: &[Vec<f32>], block: usize, sequential_max: usize) -> Vec<Vec<f32>> {
    let mut out = input.to_vec();
    for (stage, &is_wide) in designed.stages.iter().zip(wide) {
        match stage {
            DesignedStage::Sos(sections) => {
                let reals: Vec<Realization> = sections.iter().map(|s| Realization::new(&SosCoefs::from(s))).collect();
                let precision = if is_wide { GpuPrecision::F64 } else { GpuPrecision::F32 };
                for ch in out.iter_mut() {
                    let mut states = vec![[0.0f64; 2]; reals.len()];
                    for x in ch.chunks_mut(block) {
                        let (_, chunk_len) = chunking(x.len(), sequential_max);
                        model_cascade(&reals, precision, x, &mut states, chunk_len);
                    }
                }
            }
            DesignedStage::Fir(taps) => {
                for ch in out.iter_mut() {
                    *ch = crate::engine::fir_output(taps, fs, ch);
                }
            }
        }
    }
    out
}

/// Two jobs over `input` (its channels, two halves of `frames` frames each), the state
/// handed out to the host between them: `job(planar block, state)` runs one job on a chain
/// built for it (so nothing is left on the device). Asserts (naming `name`) that the
/// joined output is within the reference tolerance (1e-4 of the peak) of the CPU engine's,
/// and the end state (the engine's TDF-II form) within 1e-4 of its peak of the engine's
/// after the same input.
pub fn assert_two_jobs_through_the_host(name: &str, designed: &DesignedChain, input: &[Vec<f32>], frames: usize, job: impl FnMut(&mut [f32], &mut ferrofx::engine::ChainState)) {
    let (e, off) = two_jobs_through_the_host(designed, input, frames, job);
    println!("{name}: two jobs, state through the host: {e:.2e} from the CPU engine");
    assert!(e <= 1e-4, "{name}: {e:.3e}");
    println!("{name}: end state {off:.2e} of its peak from the CPU engine's");
    assert!(off <= 1e-4, "{name}: end state {off:.3e} of its peak from the CPU engine's");
}

/// [`assert_two_jobs_through_the_host`]'s measures: the joined output's error from the CPU
/// engine's (relative to the peak) and the end state's (relative to its peak).
fn two_jobs_through_the_host(designed: &DesignedChain, input: &[Vec<f32>], frames: usize, mut job: impl FnMut(&mut [f32], &mut ferrofx::engine::ChainState)) -> (f64, f64) {
    let channels = input.len();
    let mut engine = ferrofx::engine::Engine::new(designed, channels, 2 * frames);
    let mut state = engine.new_state().expect("a state of the engine's shape");
    let mut joined = vec![Vec::with_capacity(2 * frames); channels];
    for half in 0..2 {
        let mut block: Vec<f32> = input.iter().flat_map(|c| c[half * frames..(half + 1) * frames].to_vec()).collect();
        job(&mut block, &mut state);
        for (c, out) in joined.iter_mut().enumerate() {
            out.extend_from_slice(&block[c * frames..(c + 1) * frames]);
        }
    }
    let output_error = crate::engine::rel_error(&joined, &crate::engine::run_engine(designed, input, 2 * frames, ferrofx::engine::EngineOptions::default()));
    let mut cpu_state = engine.new_state().expect("a state of the engine's shape");
    let mut y = input.to_vec();
    let mut slices: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..2 * frames]).collect();
    engine.process(&mut slices);
    engine.save_state(&mut cpu_state).expect("the engine's state saves");
    let peak = cpu_state.sos.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-12);
    let worst = state.sos.iter().flatten().zip(cpu_state.sos.iter().flatten()).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    (output_error, worst / peak)
}
