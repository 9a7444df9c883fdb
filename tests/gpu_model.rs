//! The GPU's arithmetic, modelled on the CPU (`ferrofx::gpu::realize`), against every
//! SciPy reference case: the delta state-space form in `f32`, sequential and scanned.

mod common;

use common::{chain_of, load_cases, rel_error};
use ferrofx::chain::DesignedStage;
use ferrofx::gpu::realize::{chunking, model_section, Realization};
use ferrofx::sos::SosCoefs;

#[test]
fn model_meets_reference_tolerances_sequential_and_scanned() {
    let mut worst: f64 = 0.0;
    let mut failures = Vec::new();
    for case in load_cases() {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        for &frames in &[64usize, 4096, 16384] {
            let mut y = case.input.clone();
            let mut steps = 0;
            for stage in &designed.stages {
                let DesignedStage::Sos(sections) = stage else { continue };
                steps += 1;
                for s in sections {
                    let r = Realization::new(&SosCoefs::from(s));
                    let sec = r.to_gpu();
                    for ch in y.iter_mut() {
                        let mut state = [0.0f32; 2];
                        for block in ch.chunks_mut(frames) {
                            let (_, chunk_len) = chunking(block.len(), 1024);
                            model_section(&sec, &r.scan_table(chunk_len), block, &mut state, chunk_len);
                        }
                    }
                }
            }
            if steps == 0 {
                continue;
            }
            let e = rel_error(&y, &case.expected);
            worst = worst.max(e);
            if e.is_nan() || e > 1e-4 {
                failures.push(format!("{} frames {frames}: {e:.3e}", case.id));
            }
        }
    }
    println!("model worst {worst:.3e}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
