//! The warp pipeline (`kernels/sos_pipe.cu`), compiled for the host and run lane by lane
//! in lockstep, against the sequential kernel it stands in for (`ferrofx_sos_channels`,
//! stage by stage) bit for bit: output and end states, over seeded random chains
//! of every IIR family and cookbook bells, runs of 1 to 70 sections (one launch, or
//! several of up to 32 lanes), blocks of 1 to 4,100 frames (around the 32-sample batches
//! and the lanes' lag), several channels, random start states, two blocks in a row;
//! the launches planned by the core's `gpu::pipe::PipePlan`, as the backend plans them.

use ferrofx::dsp::sos::SosCoefs;
use ferrofx::gpu::design::StageForm;
use ferrofx::gpu::pipe::PipePlan;
use ferrofx::gpu::realize::{GpuPrecision, Realization};
use ferrofx_kernel_host::{sos_channels, sos_pipe, PipeParams, SosParams};
use ferrofx_testkit::{noise_amp, Rng};

mod common;
use common::{design_sos, random_iir, words};

/// A seeded random stage: a cascade of any family, or a cookbook bell (one section).
fn random_stage(rng: &mut Rng) -> Vec<SosCoefs> {
    if rng.below(2) == 0 {
        design_sos(&random_iir(rng))
    } else {
        let f = 20.0 * 1000f64.powf(rng.unit());
        let q = 0.2 + 8.0 * rng.unit();
        let g = -24.0 + 48.0 * rng.unit();
        design_sos(&format!(r#"{{"type": "biquad", "kind": "peaking", "freq_hz": {f:.2}, "q": {q:.3}, "gain_db": {g:.2}}}"#))
    }
}

#[test]
fn the_pipeline_equals_the_sequential_kernel_bit_for_bit() {
    let mut rng = Rng::new(4343);
    let mut launches = 0;
    for seed in 0..80u64 {
        // Short chains mostly (the realtime plugin's), sometimes past one warp's lanes.
        let target = if rng.below(4) == 0 { 33 + rng.below(38) } else { 1 + rng.below(32) };
        let mut stages: Vec<Vec<SosCoefs>> = Vec::new();
        while stages.iter().map(Vec::len).sum::<usize>() < target {
            stages.push(random_stage(&mut rng));
        }
        let frames = [1, 2, 5, 31, 32, 33, 63, 64, 65, 100, 256, 1000, 1024, 2049, 4100][rng.below(15)];
        let channels = 1 + rng.below(3);
        let stride = frames + 5;
        let mut sections = Vec::new();
        let mut forms = Vec::new();
        for stage in &stages {
            forms.push(StageForm::Sos { first: sections.len(), count: stage.len(), precision: GpuPrecision::F32 });
            sections.extend(stage.iter().map(|s| words(&Realization::new(s).to_gpu())));
        }
        let total = sections.len();
        let plan = PipePlan::new(&forms, channels);
        assert_eq!(plan.groups.len(), 1, "seed {seed}: one run of float32 cascades");
        assert_eq!(plan.groups[0].runs.len(), total.div_ceil(32), "seed {seed}: launches of up to 32 lanes");
        let table = plan.words();
        let mut states: Vec<[f32; 2]> = (0..channels * total).map(|_| [rng.unit() as f32 - 0.5, rng.unit() as f32 - 0.5]).collect();
        let mut reference_states = states.clone();
        for block in 0..2u64 {
            let mut work = vec![0.0f32; channels * stride];
            for ch in 0..channels {
                work[ch * stride..ch * stride + frames].copy_from_slice(&noise_amp(frames, seed * 97 + block * 7 + ch as u64, 0.9));
            }
            // The stride's padding must come back untouched.
            for ch in 0..channels {
                work[ch * stride + frames..(ch + 1) * stride].fill(7.0);
            }
            let mut reference = work.clone();
            let (mut first, mut state_base) = (0, 0);
            for stage in &stages {
                let p = SosParams { frames: frames as u32, chunk_len: frames as u32, chunks: 1, stride: stride as u32, first: first as u32, count: stage.len() as u32, state_base: state_base as u32, channels: channels as u32 };
                sos_channels(p, &mut reference, &sections, &mut reference_states);
                first += stage.len();
                state_base += channels * stage.len();
            }
            for run in &plan.groups[0].runs {
                let p = PipeParams { frames: frames as u32, stride: stride as u32, channels: channels as u32, lanes: run.lanes as u32, lane_base: run.lane_base as u32, pad: [0; 3] };
                sos_pipe(p, &mut work, &sections, &table, &mut states);
                launches += 1;
            }
            let what = format!("seed {seed}, block {block}: {} stages, {total} sections, {channels} x {frames} frames", stages.len());
            let differ = work.iter().zip(&reference).position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ, None, "{what}: the pipeline's output differs from the sequential kernel's");
            let differ = states.iter().zip(&reference_states).position(|(a, b)| a[0].to_bits() != b[0].to_bits() || a[1].to_bits() != b[1].to_bits());
            assert_eq!(differ, None, "{what}: the pipeline's end states differ");
            assert!(work.iter().all(|v| v.is_finite()), "{what}: non-finite output");
        }
    }
    assert!(launches >= 160);
}

#[test]
fn lanes_chain_in_order_and_the_comparison_sees_a_wrong_order() {
    // Two sections as two one-lane launches equal the sequential kernel (a lane's state
    // and section come from its table entry); the same two in one launch with the
    // table's order swapped differ from it bit for bit (the comparison can fail).
    let stages = [design_sos(r#"{"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1, "gain_db": 12}"#), design_sos(r#"{"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": 500}"#)];
    let sections: Vec<_> = stages.iter().flatten().map(|s| words(&Realization::new(s).to_gpu())).collect();
    let frames = 300;
    let input = noise_amp(frames, 5, 0.9);
    let mut reference = input.clone();
    let mut st = vec![[0.0f32; 2]; 2];
    for (i, _) in stages.iter().enumerate() {
        let p = SosParams { frames: frames as u32, chunk_len: frames as u32, chunks: 1, stride: frames as u32, first: i as u32, count: 1, state_base: i as u32, channels: 1 };
        sos_channels(p, &mut reference, &sections, &mut st);
    }
    let table = vec![[0, 0, 1, 0], [1, 1, 1, 0]];
    let mut two = input.clone();
    let mut st2 = vec![[0.0f32; 2]; 2];
    for base in 0..2 {
        sos_pipe(PipeParams { frames: frames as u32, stride: frames as u32, channels: 1, lanes: 1, lane_base: base, pad: [0; 3] }, &mut two, &sections, &table, &mut st2);
    }
    assert_eq!(two, reference);
    let swapped = vec![[1, 1, 1, 0], [0, 0, 1, 0]];
    let mut other = input.clone();
    let mut st3 = vec![[0.0f32; 2]; 2];
    sos_pipe(PipeParams { frames: frames as u32, stride: frames as u32, channels: 1, lanes: 2, lane_base: 0, pad: [0; 3] }, &mut other, &sections, &swapped, &mut st3);
    assert_ne!(other.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), reference.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}
