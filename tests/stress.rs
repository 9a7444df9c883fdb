//! The stress suite: seeded random designs over the whole chain-format contract (made,
//! with SciPy's float64 output, by `scripts/scipy_reference.py stress DIR`), each run
//! through the CPU engine at block sizes 1, 7 and 4096 (and whole, in offline time
//! segments where the warm-up fits) and through the wgpu backend at
//! 64 and 65536, against SciPy within the reference tolerance (1e-4 of the output peak).
//! A path may also decline a design with an error ("exact, or a clear refusal"); a
//! wrong result is the only failure. Refusals are counted and must stay rare.
//!
//! `FERROFX_STRESS_DIR` names the generated folder; without it the test prints why it
//! did not run, unless `FERROFX_REQUIRE_STRESS=1` (set by `scripts/test.sh`). The long
//! run (10,000 cases) is described in `docs/testing.md`.

use ferrofx_testkit::reference::read_f32;
use ferrofx_testkit::engine::{rel_error, run_engine};
use ferrofx::engine::EngineOptions;
use ferrofx::Chain;
use serde_json::Value;
use std::path::PathBuf;

const TIME_TOLERANCE: f64 = 1e-4;
const CPU_BLOCKS: [usize; 3] = [1, 7, 4096];
#[cfg(feature = "wgpu")]
const GPU_BLOCKS: [usize; 2] = [64, 65536];

fn planar(flat: Vec<f32>) -> Vec<Vec<f32>> {
    let n = flat.len() / 2;
    vec![flat[..n].to_vec(), flat[n..].to_vec()]
}

/// Short description of a case for messages: its stage and sample rate.
fn describe(line: &Value) -> String {
    format!("#{} fs={} {}", line["n"], line["fs"], line["chain"]["stages"][0])
}

#[cfg(feature = "wgpu")]
fn gpu() -> Option<&'static ferrofx::gpu::wgpu::WgpuContext> {
    use ferrofx::gpu::wgpu::WgpuContext;
    static CTX: std::sync::OnceLock<Option<WgpuContext>> = std::sync::OnceLock::new();
    CTX.get_or_init(|| match WgpuContext::new() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            assert!(std::env::var_os("FERROFX_REQUIRE_GPU").is_none(), "FERROFX_REQUIRE_GPU is set but: {e}");
            println!("stress: no GPU adapter ({e}); the wgpu half is not run");
            None
        }
    })
    .as_ref()
}

#[test]
fn random_designs_over_the_whole_contract_match_scipy_or_are_refused() {
    let Some(dir) = std::env::var_os("FERROFX_STRESS_DIR").map(PathBuf::from) else {
        assert!(std::env::var_os("FERROFX_REQUIRE_STRESS").is_none(), "FERROFX_REQUIRE_STRESS is set but FERROFX_STRESS_DIR is not");
        println!("stress: not run (FERROFX_STRESS_DIR unset; scripts/test.sh generates the cases)");
        return;
    };
    let input = planar(read_f32(&dir.join("input.f32")));
    let text = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (mut failures, mut refused_cpu, mut declined_gpu, mut skipped, mut ran) = (Vec::new(), Vec::new(), 0usize, 0usize, 0usize);
    let mut declines: Vec<String> = Vec::new();
    let (mut worst_cpu, mut worst_gpu) = (0.0f64, 0.0f64);
    let mut skipped_refused = 0usize;
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let fs = line["fs"].as_f64().unwrap();
        let chain = Chain::from_json(&line["chain"].to_string()).unwrap_or_else(|e| panic!("{}: {e}", describe(&line)));
        if line.get("skip").is_some() {
            // No reference to compare with; the designer's own check should refuse the
            // ones float64 cannot run. Counted, not judged.
            skipped += 1;
            if chain.design(fs).is_err() {
                skipped_refused += 1;
            }
            continue;
        }
        let designed = match chain.design(fs) {
            Ok(d) => d,
            Err(e) => {
                refused_cpu.push(format!("{}: {e}", describe(&line)));
                continue;
            }
        };
        ran += 1;
        let expected = planar(read_f32(&dir.join(format!("expected/{}.f32", line["n"]))));
        // The offline engine too: the whole input as one block, in time segments where the
        // design's warm-up fits.
        let offline = EngineOptions { time_segments: 8, ..EngineOptions::default() };
        let runs = CPU_BLOCKS.iter().map(|&b| (b, EngineOptions::default())).chain([(input[0].len(), offline)]);
        for (block, options) in runs {
            let y = run_engine(&designed, &input, block, options);
            let e = rel_error(&y, &expected);
            worst_cpu = worst_cpu.max(e);
            #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN error fails too
            if !(e <= TIME_TOLERANCE) {
                failures.push(format!("cpu block {block}, time segments {}: error {e:.3e}: {}", options.time_segments, describe(&line)));
            }
        }
        #[cfg(feature = "wgpu")]
        if let Some(ctx) = gpu() {
            use ferrofx::gpu::wgpu::WgpuStream;
            for block in GPU_BLOCKS {
                let mut stream = match WgpuStream::new(ctx, &designed, 2, block) {
                    Ok(s) => s,
                    Err(e) => {
                        declined_gpu += 1;
                        declines.push(format!("block {block}: {e}: {}", describe(&line)));
                        continue;
                    }
                };
                let mut y = input.clone();
                let mut slices: Vec<&mut [f32]> = y.iter_mut().map(|c| &mut c[..]).collect();
                if let Err(e) = stream.process(&mut slices) {
                    declined_gpu += 1;
                    declines.push(format!("block {block}, processing: {e}: {}", describe(&line)));
                    continue;
                }
                let e = rel_error(&y, &expected);
                worst_gpu = worst_gpu.max(e);
                #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN error fails too
                if !(e <= TIME_TOLERANCE) {
                    failures.push(format!("wgpu block {block}: error {e:.3e}: {}", describe(&line)));
                }
            }
        }
    }
    let total = ran + refused_cpu.len() + skipped;
    println!(
        "stress: {total} cases: {ran} run, {} refused by the designer, {skipped} skipped (SciPy's own result unstable or unreliable; {skipped_refused} of them refused by the designer too); {declined_gpu} GPU runs declined; worst error cpu {worst_cpu:.2e}, wgpu {worst_gpu:.2e}; {} failures",
        refused_cpu.len(),
        failures.len()
    );
    for r in refused_cpu.iter().take(10) {
        println!("  refused: {r}");
    }
    for d in declines.iter().take(10) {
        println!("  declined by wgpu: {d}");
    }
    // Every decline says why, by name (a precision decline names the precision).
    for d in &declines {
        assert!(d.contains("declined by the GPU path: in float") || d.contains("not supported on the GPU path"), "a decline without its reason: {d}");
    }
    // A device with float64 runs in float64 what float32 would miss: nothing declined.
    #[cfg(feature = "wgpu")]
    if let Some(ctx) = gpu().filter(|c| c.has_float64()) {
        assert!(declines.is_empty(), "{} declined on {}, which has float64:\n{}", declines.len(), ctx.report(), declines.join("\n"));
    }
    assert!(failures.is_empty(), "{} wrong results:\n{}", failures.len(), failures.join("\n"));
    assert!(refused_cpu.len() * 50 <= total, "more than 2% of designs SciPy makes were refused:\n{}", refused_cpu.join("\n"));
}
