//! The GPU's arithmetic, modelled on the CPU (`ferrofx::gpu::realize`), against every
//! SciPy reference case: the delta state-space form in `f32`, sequential and scanned.
//! Where the model misses the tolerance, the GPU path's own estimate must say so (it
//! then runs the cascade in float64 where the device has it, or declines it and the CPU
//! runs it): exact, or a clear refusal.

use ferrofx_testkit::engine::{chain_of, rel_error};
use ferrofx_testkit::reference::load_cases;
use ferrofx::chain::DesignedStage;
use ferrofx::gpu::realize::{chunking, error_estimate, f32_error_estimate, model_cascade, model_section, GpuPrecision, Realization, GPU_ERROR_BUDGET};
use ferrofx::dsp::sos::SosCoefs;

#[test]
fn model_meets_reference_tolerances_sequential_and_scanned() {
    let mut worst: f64 = 0.0;
    let mut failures = Vec::new();
    let mut declined = Vec::new();
    for case in load_cases() {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        let estimate = designed
            .stages
            .iter()
            .filter_map(|s| if let DesignedStage::Sos(v) = s { Some(v) } else { None })
            .map(|v| f32_error_estimate(&v.iter().map(SosCoefs::from).collect::<Vec<_>>(), 4096, 512))
            .fold(0.0f64, f64::max);
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
        let gpu_declines = !(estimate <= GPU_ERROR_BUDGET);
        if gpu_declines {
            declined.push(format!("{} (estimate {estimate:.1e})", case.id));
        }
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
            if gpu_declines {
                continue;
            }
            worst = worst.max(e);
            if e.is_nan() || e > 1e-4 {
                failures.push(format!("{} frames {frames}: {e:.3e} but the estimate {estimate:.1e} lets the GPU run it", case.id));
            }
        }
    }
    println!("model worst {worst:.3e} where the GPU runs; declined: {declined:?}");
    // Declining is for the numerically hard cases, not a way out of the ordinary ones.
    assert!(declined.len() * 10 <= load_cases().len(), "the GPU declines too many reference cases: {declined:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The float64 form (a device with double precision): every reference case the float32
/// form declines runs, within the tolerance, and its own estimate lets it. None is
/// declined on such a device.
#[test]
fn float64_form_runs_every_reference_case_float32_declines() {
    let mut ran = Vec::new();
    let mut failures = Vec::new();
    for case in load_cases() {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        let cascades = ferrofx_testkit::engine::sos_cascades(&designed);
        let f32_estimate = cascades.iter().map(|c| f32_error_estimate(c, 4096, 512)).fold(0.0f64, f64::max);
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
        if f32_estimate <= GPU_ERROR_BUDGET {
            continue;
        }
        let estimate = cascades.iter().map(|c| error_estimate(c, 4096, 512, GpuPrecision::F64)).fold(0.0f64, f64::max);
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
        if !(estimate <= GPU_ERROR_BUDGET) {
            failures.push(format!("{}: declined in float64 too (estimate {estimate:.1e})", case.id));
            continue;
        }
        for &frames in &[64usize, 4096, 16384] {
            let mut y = case.input.clone();
            for sections in &cascades {
                let reals: Vec<Realization> = sections.iter().map(Realization::new).collect();
                for ch in y.iter_mut() {
                    let mut states = vec![[0.0f64; 2]; reals.len()];
                    for block in ch.chunks_mut(frames) {
                        let (_, chunk_len) = chunking(block.len(), 1024);
                        model_cascade(&reals, GpuPrecision::F64, block, &mut states, chunk_len);
                    }
                }
            }
            let e = rel_error(&y, &case.expected);
            if e.is_nan() || e > 1e-4 {
                failures.push(format!("{} frames {frames}: {e:.3e} in float64 (estimate {estimate:.1e})", case.id));
            }
            if frames == 4096 {
                ran.push(format!("{} (float32 {f32_estimate:.1e}, float64 {estimate:.1e}, error {e:.1e})", case.id));
            }
        }
    }
    println!("float64 runs what float32 declines: {ran:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The fused cascade scan (CUDA's throughput kernels) against every SciPy reference case:
/// where its estimate lets a cascade run fused, the model of the kernels (groups of 2 to
/// 8 sections, chunks of 128 and of 32 samples, one block and blocks of a tile and a
/// half with the state carried) meets the tolerance; the cascades it declines keep the
/// per-section kernels. Few of the cascades float32 runs are declined.
#[test]
fn fused_model_meets_reference_tolerances_where_its_estimate_lets_it_run() {
    use ferrofx::gpu::fused::{fuse_cascade, fused_error_estimate, model_fused, FUSED_CHUNK_FRAMES, FUSED_TILE};
    let mut failures = Vec::new();
    let (mut ran, mut declined) = (0usize, Vec::new());
    let mut worst: f64 = 0.0;
    for case in load_cases() {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        let cascades = ferrofx_testkit::engine::sos_cascades(&designed);
        if cascades.is_empty() || designed.stages.len() != cascades.len() {
            continue;
        }
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
        if cascades.iter().any(|c| !(f32_error_estimate(c, 4096, 64) <= GPU_ERROR_BUDGET)) {
            continue; // float64 or the CPU: not the fused kernels' business
        }
        for (group_max, chunk_len) in [(8, FUSED_CHUNK_FRAMES), (2, 32)] {
            let estimate = cascades
                .iter()
                .map(|c| fused_error_estimate(&c.iter().map(Realization::new).collect::<Vec<_>>(), group_max, chunk_len))
                .fold(0.0f64, f64::max);
            #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
            if !(estimate <= GPU_ERROR_BUDGET) {
                declined.push(format!("{} (groups of {group_max}: {estimate:.1e})", case.id));
                continue;
            }
            ran += 1;
            for block in [usize::MAX, FUSED_TILE * chunk_len * 3 / 2] {
                let mut y = case.input.clone();
                for c in &cascades {
                    let r: Vec<Realization> = c.iter().map(Realization::new).collect();
                    for group in fuse_cascade(&r, group_max, chunk_len) {
                        for ch in y.iter_mut() {
                            let mut states = vec![[0.0f32; 2]; group.sections.len()];
                            let len = block.min(ch.len()).max(1);
                            for part in ch.chunks_mut(len) {
                                model_fused(&group, part, &mut states, chunk_len);
                            }
                        }
                    }
                }
                let e = rel_error(&y, &case.expected);
                worst = worst.max(e);
                if e.is_nan() || e > 1e-4 {
                    failures.push(format!("{} groups of {group_max}, block {block}: {e:.3e} but the estimate {estimate:.1e} lets it run fused", case.id));
                }
            }
        }
    }
    println!("fused model worst {worst:.3e} over {ran} runs; declined: {declined:?}");
    assert!(ran > 0);
    assert!(declined.len() * 10 <= ran, "the fused form declines too many cascades float32 runs: {declined:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The float64 fused scan (`kernels/sos_fused.cu`'s double kernels: the PyTorch
/// operator's rows on CUDA, opt-in) modelled on the cascades of every SciPy reference case,
/// float32's declines included: where its float64 estimate lets a cascade run fused, the
/// model (groups of 8 and of 3, chunks of 128 and of 32) over the case's input and over a
/// noise probe of two tiles and a half is within 1e-10 of the peak of SciPy's float64
/// `sosfilt` (`ferrofx::signal`, SciPy's bits) and within the budget of the sequential
/// float64 delta form; the estimate declines no more than a twentieth of the cascades.
#[test]
fn float64_fused_model_stays_within_rounding_of_scipy_float64() {
    use ferrofx::gpu::fused::{fuse_cascade_as, fused_error_estimate_as, model_fused, FUSED64_ERROR_BUDGET, FUSED_CHUNK_FRAMES, FUSED_TILE};
    let (mut ran, mut declined, mut failures) = (0usize, Vec::new(), Vec::new());
    let (mut worst_scipy, mut worst_seq): (f64, f64) = (0.0, 0.0);
    let probe: Vec<f64> = ferrofx_testkit::noise_channels(1, FUSED_TILE * FUSED_CHUNK_FRAMES * 5 / 2 + 77, 91, 1.0)[0].iter().map(|&v| f64::from(v)).collect();
    for case in load_cases() {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        for stage in &designed.stages {
            let DesignedStage::Sos(sos) = stage else { continue };
            let rows: Vec<[f64; 6]> = sos.iter().map(|s| [s.b[0] / s.a[0], s.b[1] / s.a[0], s.b[2] / s.a[0], 1.0, s.a[1] / s.a[0], s.a[2] / s.a[0]]).collect();
            let reals: Vec<Realization> = sos.iter().map(|s| Realization::new(&SosCoefs::from(s))).collect();
            for (group_max, chunk_len) in [(8, FUSED_CHUNK_FRAMES), (3, 32)] {
                let estimate = fused_error_estimate_as::<f64>(&reals, group_max, chunk_len);
                #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN estimate declines too
                if !(estimate <= FUSED64_ERROR_BUDGET) {
                    declined.push(format!("{} (groups of {group_max}: {estimate:.1e})", case.id));
                    continue;
                }
                ran += 1;
                let inputs: Vec<Vec<f64>> = case.input.iter().map(|c| c.iter().map(|&v| f64::from(v)).collect()).chain([probe.clone()]).collect();
                for x in inputs {
                    let mut scipy = x.clone();
                    let mut zi = vec![0.0; 2 * rows.len()];
                    ferrofx::signal::sosfilt_rows(&rows, &mut [&mut scipy[..]], &mut zi).unwrap();
                    let mut seq = x.clone();
                    let n = seq.len();
                    for r in &reals {
                        model_section(&r.to_gpu_as::<f64>(), &r.scan_table_as::<f64>(n), &mut seq, &mut [0.0; 2], n);
                    }
                    let mut y = x;
                    for group in fuse_cascade_as::<f64>(&reals, group_max, chunk_len) {
                        model_fused(&group, &mut y, &mut vec![[0.0; 2]; group.sections.len()], chunk_len);
                    }
                    let peak = scipy.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
                    let off = |a: &[f64], b: &[f64]| a.iter().zip(b).fold(0.0f64, |m, (p, q)| if (p - q).is_nan() { f64::INFINITY } else { m.max((p - q).abs()) }) / peak;
                    let (e_scipy, e_seq) = (off(&y, &scipy), off(&y, &seq));
                    worst_scipy = worst_scipy.max(e_scipy);
                    worst_seq = worst_seq.max(e_seq);
                    if !(e_scipy <= 1e-10 && e_seq <= 10.0 * FUSED64_ERROR_BUDGET) {
                        failures.push(format!("{} groups of {group_max}, {} frames: {e_scipy:.2e} from SciPy, {e_seq:.2e} from the sequential form (estimate {estimate:.1e})", case.id, y.len()));
                    }
                }
            }
        }
    }
    println!("float64 fused model: {ran} runs, worst {worst_scipy:.2e} from SciPy float64, {worst_seq:.2e} from the sequential float64 form; declined {}: {declined:?}", declined.len());
    assert!(ran > 0);
    assert!(declined.len() * 20 <= ran + declined.len(), "the float64 fused estimate declines too many cascades: {declined:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// SciPy's `sosfilt` initial states (`zi`, transposed direct form II) through the float64
/// delta form the GPU paths run (`CudaSos64::process_raw_from`'s conversion): each
/// section's `zi` mapped in (`state_to_gpu_as::<f64>`), the rows run by the float64 model
/// (sequential and scanned), the end states mapped back (`state_from_gpu`): the output
/// and `zf` within 1e-10 of the peak of SciPy's float64 `sosfilt` from that `zi` (the
/// float64 device path's documented bound; a wrong mapping is off by the states' own
/// size), over the reference cases' cascades and random states.
#[test]
fn scipy_initial_states_map_through_the_float64_delta_form() {
    use ferrofx_testkit::Rng;
    let mut rng = Rng::new(2929);
    let mut worst: f64 = 0.0;
    for case in load_cases().into_iter().take(60) {
        let designed = chain_of(case.given_stage()).design(case.fs).unwrap();
        for stage in &designed.stages {
            let DesignedStage::Sos(sos) = stage else { continue };
            let rows: Vec<[f64; 6]> = sos.iter().map(|s| [s.b[0] / s.a[0], s.b[1] / s.a[0], s.b[2] / s.a[0], 1.0, s.a[1] / s.a[0], s.a[2] / s.a[0]]).collect();
            let reals: Vec<Realization> = sos.iter().map(|s| Realization::new(&SosCoefs::from(s))).collect();
            let x: Vec<f64> = case.input[0].iter().map(|&v| f64::from(v)).collect();
            let zi: Vec<f64> = (0..2 * rows.len()).map(|_| rng.unit() * 2.0 - 1.0).collect();
            let mut scipy = x.clone();
            let mut zf = zi.clone();
            ferrofx::signal::sosfilt_rows(&rows, &mut [&mut scipy[..]], &mut zf).unwrap();
            for chunk_len in [x.len(), 64] {
                let mut y = x.clone();
                let mut end = Vec::new();
                for (i, r) in reals.iter().enumerate() {
                    let mut s = r.state_to_gpu_as::<f64>([zi[2 * i], zi[2 * i + 1]]);
                    model_section(&r.to_gpu_as::<f64>(), &r.scan_table_as::<f64>(chunk_len), &mut y, &mut s, chunk_len);
                    end.extend(r.state_from_gpu(s));
                }
                let peak = scipy.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let e_y = y.iter().zip(&scipy).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / peak;
                let zpeak = zf.iter().fold(peak, |m, v| m.max(v.abs()));
                let e_z = end.iter().zip(&zf).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / zpeak;
                worst = worst.max(e_y).max(e_z);
                assert!(e_y <= 1e-10 && e_z <= 1e-10, "{}: chunks of {chunk_len}: output {e_y:.2e}, zf {e_z:.2e} from SciPy's", case.id);
            }
        }
    }
    println!("zi through the float64 delta form: worst {worst:.2e} of the peak");
}
