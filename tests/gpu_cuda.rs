//! The CUDA backend. Without an NVIDIA driver (CI), only the clean refusal is checked:
//! opening says `CUDA unavailable: ...`, nothing panics, and the router's list still
//! opens the other backends; the GPU tests print why they skip. With a driver and a
//! device (the lent GPU machine; `FERROFX_REQUIRE_CUDA=1` makes skipping a failure) they
//! run: graph replay and plain launches, with either SOS kernel, each within the
//! tolerance of the CPU engine; the pipelined stream (overlapped on two streams, and
//! staged on one) equal to job-by-job processing bit for bit; new coefficients without a
//! new capture; and the router's decisions on the device's real round trips. The cases
//! every GPU backend runs (every reference case against SciPy, long FIRs, the offload
//! worker's jobs and retunes) are in `gpu_backends.rs`.
//! The kernels' arithmetic itself is tested without a GPU in crates/kernel-host.

use ferrofx_testkit::retune::{assert_bits_equal, cpu_updated_at, jobs, retunable_chain};
use ferrofx_testkit::engine::{chain_of, one_block_late, rel_error};
use ferrofx::chain::{Biquad, Butterworth, Chebyshev1, Fir};
use ferrofx::engine::Engine;
use ferrofx::gpu::cuda::{context::driver_present, CudaBackend, CudaChain, CudaError};
use ferrofx::run::backend::Backend;
use ferrofx::run::offload::{Offload, OFFLOAD_ENGINE_OPTIONS};
use ferrofx::run::realtime::{Policy, RealtimeOffload};
use ferrofx::run::router::{Reason, Route, RouterConfig};
use ferrofx::DesignedChain;
use std::sync::OnceLock;

const TIME_TOLERANCE: f64 = 1e-4;

fn backend() -> Option<&'static CudaBackend> {
    static B: OnceLock<Option<CudaBackend>> = OnceLock::new();
    B.get_or_init(|| match CudaBackend::open() {
        Ok(b) => {
            println!("cuda device: {}", b.describe());
            Some(b)
        }
        Err(e) => {
            assert!(std::env::var("FERROFX_REQUIRE_CUDA").as_deref() != Ok("1"), "FERROFX_REQUIRE_CUDA is set but: {e}");
            println!("SKIPPED (no CUDA device): {e}");
            None
        }
    })
    .as_ref()
}

#[test]
fn without_a_driver_opening_is_a_clean_error_and_the_list_goes_on() {
    if driver_present() {
        println!("an NVIDIA driver is present: the refusal without one is not checked here");
        return;
    }
    let e = CudaBackend::open().err().expect("no driver, no backend");
    assert!(matches!(e, CudaError::Unavailable(_)), "{e:?}");
    assert_eq!(e.to_string(), "CUDA unavailable: the NVIDIA driver library (libcuda.so) was not found");
    // Through the router's list, by name: the run layer's error carries the reason.
    let e = ferrofx::backends::open_gpu("cuda").err().expect("unavailable");
    assert!(e.to_string().contains("backend cuda is not available: CUDA unavailable"), "{e}");
    assert!(ferrofx::backends::GPU_BACKENDS.iter().any(|b| b.name == "cuda"), "cuda is in the router's list");
    // The first GPU that opens is still found (or every reason is given), without a panic.
    match ferrofx::backends::open_first_gpu() {
        Ok(b) => assert_ne!(b.name(), "cuda"),
        Err(e) => assert!(e.to_string().contains("cuda: CUDA unavailable"), "{e}"),
    }
}

fn mixed_chain(fs: f64) -> DesignedChain {
    ferrofx_testkit::engine::mixed_chain(fs, 255)
}

#[test]
fn graphs_equal_plain_launches_and_both_kernels_equal_the_cpu() {
    let Some(b) = backend() else { return };
    let designed = mixed_chain(48_000.0);
    let input = ferrofx_testkit::noise_channels(3, 40_000, 5, 0.8);
    let mut cpu = Engine::with_options(&designed, 3, 4096, OFFLOAD_ENGINE_OPTIONS);
    let mut want = input.clone();
    let mut s: Vec<&mut [f32]> = want.iter_mut().map(|c| &mut c[..]).collect();
    cpu.process(&mut s);
    for (graphs, sequential_max) in [(true, usize::MAX), (true, 64), (false, usize::MAX), (false, 64)] {
        let mut chain = CudaChain::new(b.device(), &designed, 3, 4096).unwrap();
        chain.set_graphs(graphs);
        chain.set_sequential_max(sequential_max);
        let mut state = chain.new_state();
        let mut out = Vec::new();
        for start in (0..40_000).step_by(4096) {
            let len = 4096.min(40_000 - start);
            let mut block: Vec<f32> = input.iter().flat_map(|c| c[start..start + len].iter().copied()).collect();
            chain.process(&mut block, len, &mut state).unwrap();
            out.push(block);
        }
        println!("graphs {graphs}, sequential up to {sequential_max}: {:?}", chain.graph_status());
        let got: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                let mut v = Vec::new();
                for (k, block) in out.iter().enumerate() {
                    let len = 4096.min(40_000 - k * 4096);
                    v.extend_from_slice(&block[c * len..(c + 1) * len]);
                }
                v
            })
            .collect();
        let e = rel_error(&got, &want);
        assert!(e <= TIME_TOLERANCE, "graphs {graphs}, sequential up to {sequential_max}: {e:.3e}");
    }
}

#[test]
fn the_pipelined_stream_equals_jobs_one_by_one_bit_for_bit() {
    let Some(b) = backend() else { return };
    // Cascades, a direct FIR and one on the FFT path: every kind of state stays on the
    // device through the overlapped stream.
    let designed = retunable_chain(48_000.0, 2);
    // Small blocks, and large ones whose host copies go over several threads.
    for (channels, block) in [(2usize, 16_384usize), (8, 65_536)] {
        let frames = 5 * block + 777; // a short last block: graphs of two lengths
        let input = ferrofx_testkit::noise_channels(channels, frames, 23, 0.8);
        let mut one = CudaChain::new(b.device(), &designed, channels, block).unwrap();
        let mut state_one = one.new_state();
        let mut want = vec![Vec::new(); channels];
        for start in (0..frames).step_by(block) {
            let len = block.min(frames - start);
            let mut data: Vec<f32> = input.iter().flat_map(|c| c[start..start + len].iter().copied()).collect();
            one.process(&mut data, len, &mut state_one).unwrap();
            for (c, w) in want.iter_mut().enumerate() {
                w.extend_from_slice(&data[c * len..(c + 1) * len]);
            }
        }
        for overlap in [true, false] {
            let what = format!("{channels} ch, blocks of {block}, overlap {overlap}");
            let mut piped = CudaChain::new(b.device(), &designed, channels, block).unwrap();
            piped.set_overlap(overlap);
            let mut state_piped = piped.new_state();
            let mut got = input.clone();
            for _ in 0..2 {
                // Twice over the same signal from the same state: the graphs are replayed.
                got.clone_from(&input);
                state_piped = piped.new_state();
                let mut slices: Vec<&mut [f32]> = got.iter_mut().map(|c| &mut c[..]).collect();
                piped.process_slices(&mut slices, &mut state_piped).unwrap();
            }
            println!("pipelined, {what}: graphs {:?}, {:?} captured", piped.graph_status(), piped.graph_counts());
            assert!(piped.graph_status().0, "{what}: graphs {:?}", piped.graph_status());
            assert_bits_equal(&got, &want, &format!("{what}: the pipelined stream"));
            assert_eq!(state_piped.sos, state_one.sos, "{what}");
            assert_eq!(state_piped.fir, state_one.fir, "{what}");
        }
        // Block by block through the backend's stream (how `render` drives it: two
        // blocks in flight, submitted and collected), then again after a reset.
        let mut stream = ferrofx::run::stream::BlockStream::new(b.prepare(&designed, channels, block).unwrap(), block);
        for round in 0..2 {
            let mut got: Vec<Vec<f32>> = vec![Vec::new(); channels];
            let mut keep = |(buf, n): (Vec<Vec<f32>>, usize)| {
                for (g, c) in got.iter_mut().zip(&buf) {
                    g.extend_from_slice(&c[..n]);
                }
            };
            for start in (0..frames).step_by(block) {
                let len = block.min(frames - start);
                let blk: Vec<Vec<f32>> = input.iter().map(|c| c[start..start + len].to_vec()).collect();
                if let Some(done) = stream.push((blk, len)).unwrap() {
                    keep(done);
                }
            }
            while let Some(done) = stream.drain().unwrap() {
                keep(done);
            }
            assert_bits_equal(&got, &want, &format!("{channels} ch, blocks of {block}, block stream round {round}"));
            stream.reset();
        }
        println!("block stream, {channels} ch, blocks of {block}: equal to jobs one by one");
    }
}

/// A realtime stream under `Policy::Auto` over a CUDA offload, host blocks of `block`
/// frames paced at real time (48 kHz): the router's decision after `blocks` blocks, the
/// counters, and the output's error against the CPU stream one block late.
fn auto_stream(
    b: &CudaBackend,
    designed: &DesignedChain,
    channels: usize,
    block: usize,
    blocks: usize,
) -> (ferrofx::run::router::Decision, ferrofx::run::realtime::RealtimeStats, f64) {
    let exec = CudaChain::new(b.device(), designed, channels, block).unwrap();
    let mut off = Offload::new(designed, channels, block, exec).unwrap();
    let mut stream = RealtimeOffload::new(channels, block, 48_000.0, Policy::Auto);
    let frames = blocks * block;
    let input = ferrofx_testkit::noise_channels(channels, frames, 21, 0.8);
    let mut out = input.clone();
    let period = std::time::Duration::from_secs_f64(block as f64 / 48_000.0);
    let t0 = std::time::Instant::now();
    for k in 0..blocks {
        let mut bufs: Vec<&mut [f32]> = out.iter_mut().map(|c| &mut c[k * block..(k + 1) * block]).collect();
        stream.process(Some(&mut off), &mut bufs);
        // Real-time pacing: the next call when the next block is due.
        let due = period * (k as u32 + 1);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    (stream.decision(), stream.stats(), rel_error(&out, &cpu_one_block_late(designed, input, block)))
}

/// `input` through the offload's CPU engine, delayed by one block of `block` frames (the
/// offload's latency): what an offloaded stream must equal.
fn cpu_one_block_late(designed: &DesignedChain, mut input: Vec<Vec<f32>>, block: usize) -> Vec<Vec<f32>> {
    let mut cpu = Engine::with_options(designed, input.len(), block, OFFLOAD_ENGINE_OPTIONS);
    let mut s: Vec<&mut [f32]> = input.iter_mut().map(|c| &mut c[..]).collect();
    cpu.process(&mut s);
    one_block_late(input, block)
}

/// The decision is the one its own figures call for (the router's rules, restated).
fn assert_coherent(d: &ferrofx::run::router::Decision, what: &str) {
    let c = RouterConfig::default();
    assert!(d.cpu_median_s.is_finite() && d.gpu_median_s.is_finite(), "{what}: both paths measured: {d:?}");
    let gpu_wins = d.gpu_median_s * c.margin <= d.cpu_median_s && d.gpu_tail_s <= c.deadline_share * d.deadline_s;
    match (d.route, d.reason) {
        (Route::Gpu, Reason::GpuFaster) => assert!(gpu_wins, "{what}: {d:?}"),
        (Route::Cpu, Reason::GpuNotFastEnough) => assert!(d.gpu_median_s * c.margin > d.cpu_median_s, "{what}: {d:?}"),
        (Route::Cpu, Reason::GpuTailTooLong) => assert!(d.gpu_tail_s > c.deadline_share * d.deadline_s, "{what}: {d:?}"),
        (_, Reason::Holding) => {}
        _ => panic!("{what}: an unexpected decision {d:?}"),
    }
}

#[test]
fn the_router_decides_on_the_devices_real_round_trips() {
    let Some(b) = backend() else { return };
    // One biquad, stereo, 64 frames: the CPU takes a fraction of a microsecond, a GPU
    // round trip (upload, launch, download, synchronise) several microseconds at least,
    // so the router must keep the CPU, and say why.
    let small = chain_of(Biquad::peaking(1000.0, 1.0, 3.0)).design(48_000.0).unwrap();
    let (d, st, e) = auto_stream(b, &small, 2, 64, 1500);
    println!("1 section, 2 ch, 64 frames: {st:?}\n  {d:?} ({})", d.reason);
    assert!(e <= TIME_TOLERANCE, "small chain: {e:.3e}");
    assert_coherent(&d, "small chain");
    assert_eq!((d.route, d.reason), (Route::Cpu, Reason::GpuNotFastEnough), "{d:?}");
    assert!(st.on_cpu > st.blocks / 2, "{st:?}");
    // A heavy chain (FIR, IIR and bells) on 8 channels in blocks of 4,096: whichever path
    // wins on this machine, the decision follows the measured figures and the stream is
    // exact.
    let heavy = (Butterworth::highpass(20.0, 8)
        | Fir::lowpass(511, 12_000.0)
        | Chebyshev1::lowpass(9000.0, 12, 0.5)
        | Biquad::peaking(1000.0, 2.0, 6.0)
        | Biquad::peaking(3000.0, 2.0, -4.0))
    .design(48_000.0)
    .unwrap();
    let (d, st, e) = auto_stream(b, &heavy, 8, 4096, 60);
    println!("heavy chain, 8 ch, 4096 frames: {st:?}\n  {d:?} ({})", d.reason);
    assert!(e <= TIME_TOLERANCE, "heavy chain: {e:.3e}");
    assert_coherent(&d, "heavy chain");
    assert!(st.on_worker > 0 && st.on_cpu > 0, "both paths ran: {st:?}");
}

#[test]
fn new_coefficients_replay_the_same_graphs_and_equal_a_fresh_chain() {
    let Some(b) = backend() else { return };
    let (a, bb) = (retunable_chain(48_000.0, 0), retunable_chain(48_000.0, 1));
    let blocks = [4096usize, 4096, 1000, 32];
    let total: usize = 2 * blocks.iter().sum::<usize>();
    let input = ferrofx_testkit::noise_channels(2, total, 31, 0.8);
    let mut chain = CudaChain::new(b.device(), &a, 2, 4096).unwrap();
    let mut state = chain.new_state();
    let first = jobs(|d, n, s| chain.process(d, n, s).unwrap(), &input, 0, &blocks, &mut state);
    let (captured, _) = chain.graph_counts();
    assert!(chain.graph_status().0 && captured >= 3, "graphs {:?}, {captured} captured", chain.graph_status());
    let handed = state.clone();
    chain.set_coefficients(&bb).unwrap();
    let second = jobs(|d, n, s| chain.process(d, n, s).unwrap(), &input, total / 2, &blocks, &mut state);
    assert_eq!(chain.graph_counts(), (captured, 1), "new coefficients must not capture a graph again");
    // A chain built for the new design from the same state: the same bits.
    let mut fresh = CudaChain::new(b.device(), &bb, 2, 4096).unwrap();
    let mut fresh_state = handed;
    let want = jobs(|d, n, s| fresh.process(d, n, s).unwrap(), &input, total / 2, &blocks, &mut fresh_state);
    assert_bits_equal(&second, &want, "the updated chain against a fresh one");
    assert_eq!(state.sos, fresh_state.sos);
    assert_eq!(state.fir, fresh_state.fir);
    // And the whole stream is the CPU engine's, updated at the same frame.
    let got: Vec<Vec<f32>> = (0..2).map(|c| [first[c].clone(), second[c].clone()].concat()).collect();
    let e = rel_error(&got, &cpu_updated_at(&a, &bb, input, total / 2));
    println!("retuned CUDA chain against the CPU engine: {e:.2e}; {captured} graphs, none captured again");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
    // Another shape is refused and the chain keeps its coefficients.
    let other = (Butterworth::highpass(20.0, 2) | Fir::lowpass(255, 12_000.0)).design(48_000.0).unwrap();
    let err = chain.set_coefficients(&other).unwrap_err().to_string();
    assert!(err.contains("same shape"), "{err}");
    assert_eq!(chain.graph_counts(), (captured, 1));
}


/// The fused cascade scan (opt-in, `CudaChain::set_fused`): an IIR chain's cascade on a
/// block of three tiles and a part equals the fused kernels' CPU model bit for bit, with
/// graphs and with plain launches, in groups of 2, 3 and 8; the mixed chain (two
/// cascades around a FIR) over consecutive blocks, its state carried, meets the CPU
/// engine's tolerance; short blocks keep the per-section kernels.
#[test]
fn the_fused_scan_equals_its_model_bit_for_bit_and_the_cpu_within_the_tolerance() {
    use ferrofx::gpu::cuda::chain::FUSED_MIN_FRAMES;
    use ferrofx::gpu::fused::{fuse_cascade, model_fused, FUSED_CHUNK_FRAMES, FUSED_TILE};
    let Some(b) = backend() else { return };
    let designed = (Butterworth::highpass(20.0, 4) | Chebyshev1::lowpass(9000.0, 6, 0.5) | Biquad::peaking(1000.0, 2.0, 6.0)).design(48_000.0).unwrap();
    let forms = ferrofx_testkit::engine::gpu_forms(&designed);
    let frames = 3 * FUSED_TILE * FUSED_CHUNK_FRAMES + 1001;
    let input = ferrofx_testkit::noise_channels(3, frames, 9, 0.8);
    for group_max in [2usize, 3, 8] {
        let mut want = input.clone();
        for group in fuse_cascade(&forms, group_max, FUSED_CHUNK_FRAMES) {
            for ch in want.iter_mut() {
                let mut states = vec![[0.0f32; 2]; group.sections.len()];
                model_fused(&group, ch, &mut states, FUSED_CHUNK_FRAMES);
            }
        }
        for graphs in [true, false] {
            let mut chain = CudaChain::new(b.device(), &designed, 3, frames).unwrap();
            chain.set_graphs(graphs);
            chain.set_fused(group_max).unwrap();
            assert_eq!(chain.fused_status(), (group_max, vec![true]));
            let mut state = chain.new_state();
            let mut data: Vec<f32> = input.iter().flatten().copied().collect();
            chain.process(&mut data, frames, &mut state).unwrap();
            for (ch, w) in want.iter().enumerate() {
                let got = &data[ch * frames..(ch + 1) * frames];
                if let Some(n) = (0..frames).find(|&n| got[n].to_bits() != w[n].to_bits()) {
                    panic!("groups of {group_max}, graphs {graphs}: channel {ch} differs first at {n}: {} against {}", got[n], w[n]);
                }
            }
        }
    }
    // The mixed chain over blocks (long ones fused, a short one not), against the CPU.
    let designed = mixed_chain(48_000.0);
    let blocks = [FUSED_MIN_FRAMES * 2 + 5, 1000, FUSED_MIN_FRAMES + 1];
    let total: usize = blocks.iter().sum();
    let input = ferrofx_testkit::noise_channels(2, total, 11, 0.8);
    let mut cpu = Engine::with_options(&designed, 2, 4096, OFFLOAD_ENGINE_OPTIONS);
    let mut want = input.clone();
    let mut s: Vec<&mut [f32]> = want.iter_mut().map(|c| &mut c[..]).collect();
    cpu.process(&mut s);
    let mut chain = CudaChain::new(b.device(), &designed, 2, blocks[0]).unwrap();
    chain.set_fused(8).unwrap();
    assert_eq!(chain.fused_status(), (8, vec![true, true]));
    let mut state = chain.new_state();
    let got = ferrofx_testkit::engine::through_blocks(&input, &blocks, |data, n| chain.process(data, n, &mut state).unwrap());
    let e = rel_error(&got, &want);
    println!("fused mixed chain over blocks {blocks:?}: {e:.2e} of the peak from the CPU");
    assert!(e <= TIME_TOLERANCE, "{e:.3e}");
}

/// Host-to-host with the caller's buffers registered (opt-in): a call over more than
/// `REGISTER_MIN_BYTES` equals the staged overlapped stream bit for bit, output and end
/// state, and the driver took the registration; with the channels in buffers of their
/// own and as rows of one allocation (a NumPy array's layout: rows share pages); the
/// buffers are usable afterwards (a second call on the same memory registers it again).
#[test]
fn registered_buffers_equal_the_staged_stream_bit_for_bit() {
    use ferrofx::gpu::cuda::chain::REGISTER_MIN_BYTES;
    let Some(b) = backend() else { return };
    let designed = mixed_chain(48_000.0);
    let frames = REGISTER_MIN_BYTES / 4 / 2 + 12_345;
    let input = ferrofx_testkit::noise_channels(2, frames, 31, 0.8);
    let run = |register: bool, calls: usize, one_allocation: bool| {
        let mut chain = CudaChain::new(b.device(), &designed, 2, 65_536).unwrap();
        chain.set_register_host(register);
        let mut state = chain.new_state();
        let mut rows = input.clone();
        let mut flat: Vec<f32> = input.concat();
        for _ in 0..calls {
            let mut s: Vec<&mut [f32]> = if one_allocation { flat.chunks_mut(frames).collect() } else { rows.iter_mut().map(|c| &mut c[..]).collect() };
            chain.process_slices(&mut s, &mut state).unwrap();
        }
        if one_allocation {
            rows = flat.chunks(frames).map(<[f32]>::to_vec).collect();
        }
        let note = chain.register_status().1.to_string();
        (rows, state, note)
    };
    for (calls, one_allocation) in [(1, false), (2, false), (1, true)] {
        let what = format!("{calls} call(s), {}", if one_allocation { "one allocation" } else { "a buffer per channel" });
        let (staged, staged_state, _) = run(false, calls, one_allocation);
        let (registered, registered_state, note) = run(true, calls, one_allocation);
        assert!(note.is_empty(), "{what}: the driver refused the registration: {note}");
        for (ch, (a, s)) in registered.iter().zip(&staged).enumerate() {
            if let Some(n) = (0..frames).find(|&n| a[n].to_bits() != s[n].to_bits()) {
                panic!("{what}: channel {ch} differs first at {n}: {} against {}", a[n], s[n]);
            }
        }
        assert_eq!(registered_state.sos, staged_state.sos, "{what}: the SOS end state");
        assert_eq!(registered_state.fir, staged_state.fir, "{what}: the FIR history");
    }
}

/// The tuning reaches the chains: a device opened with the fused scan and registration
/// on builds chains that run their cascades fused and register long calls' buffers.
#[test]
fn a_device_tuned_for_the_fused_scan_builds_fused_chains() {
    use ferrofx::gpu::cuda::{CudaDevice, CudaTuning};
    if backend().is_none() {
        return;
    }
    let dev = CudaDevice::open_tuned(0, CudaTuning { fused_sections: 6, register_host: true, ..CudaTuning::default() }).unwrap();
    let designed = (Butterworth::highpass(25.0, 4) | Chebyshev1::lowpass(9000.0, 6, 0.5)).design(48_000.0).unwrap();
    let chain = CudaChain::new(&dev, &designed, 2, 65_536).unwrap();
    assert_eq!(chain.fused_status(), (6, vec![true]));
    assert!(chain.register_status().0);
    let plain = CudaChain::new(backend().unwrap().device(), &designed, 2, 65_536).unwrap();
    assert_eq!(plain.fused_status(), (0, vec![false]));
    assert!(!plain.register_status().0);
}

/// The warp pipeline (opt-in, `CudaChain::set_pipeline`): 24 one-section stages (the
/// realtime benchmark's bands) and the mixed chain (cascades around a FIR: two runs)
/// over blocks of 1 to 4,096 frames, state carried, equal the sequential kernel with the
/// same limit bit for bit (output and end state), with graphs and with plain launches;
/// the stream meets the CPU engine's tolerance; new coefficients keep the plan's bits.
#[test]
fn the_warp_pipeline_equals_the_sequential_kernel_bit_for_bit() {
    let Some(b) = backend() else { return };
    let blocks = [32usize, 64, 1, 100, 1024, 4096, 31, 3000, 512];
    let total: usize = blocks.iter().sum();
    for (name, designed, launches) in [("24 bands", ferrofx_testkit::engine::bands_chain(48_000.0, 24), 1usize), ("mixed chain", mixed_chain(48_000.0), 2)] {
        let input = ferrofx_testkit::noise_channels(2, total, 17, 0.8);
        let mut cpu = Engine::with_options(&designed, 2, 4096, OFFLOAD_ENGINE_OPTIONS);
        let mut want = input.clone();
        let mut s: Vec<&mut [f32]> = want.iter_mut().map(|c| &mut c[..]).collect();
        cpu.process(&mut s);
        for graphs in [true, false] {
            let run = |pipe: bool| {
                let mut chain = CudaChain::new(b.device(), &designed, 2, 4096).unwrap();
                chain.set_graphs(graphs);
                if pipe {
                    chain.set_pipeline(4096).unwrap();
                    assert_eq!(chain.pipeline_status(), (4096, launches), "{name}");
                } else {
                    chain.set_sequential_max(4096);
                }
                let mut state = chain.new_state();
                let got = ferrofx_testkit::engine::through_blocks(&input, &blocks, |data, n| chain.process(data, n, &mut state).unwrap());
                (got, state)
            };
            let (piped, piped_state) = run(true);
            let (sequential, sequential_state) = run(false);
            for (ch, (a, s)) in piped.iter().zip(&sequential).enumerate() {
                if let Some(n) = (0..total).find(|&n| a[n].to_bits() != s[n].to_bits()) {
                    panic!("{name}, graphs {graphs}: channel {ch} differs first at {n}: {} against {}", a[n], s[n]);
                }
            }
            assert_eq!(piped_state.sos, sequential_state.sos, "{name}, graphs {graphs}: the end state");
            let e = rel_error(&piped, &want);
            println!("warp pipeline, {name}, graphs {graphs}: {e:.2e} of the peak from the CPU");
            assert!(e <= TIME_TOLERANCE, "{name}: {e:.3e}");
        }
    }
}

/// The tuning reaches the chains: a device opened with the pipeline on plans it for
/// every chain it builds (a resident chain's calls: `gpu_cuda_resident.rs`).
#[test]
fn a_device_tuned_for_the_pipeline_builds_piped_chains() {
    use ferrofx::gpu::cuda::{CudaDevice, CudaTuning};
    if backend().is_none() {
        return;
    }
    let dev = CudaDevice::open_tuned(0, CudaTuning { pipeline_max_frames: 2048, ..CudaTuning::default() }).unwrap();
    let designed = mixed_chain(48_000.0);
    let chain = CudaChain::new(&dev, &designed, 2, 4096).unwrap();
    assert_eq!(chain.pipeline_status(), (2048, 2));
    let plain = CudaChain::new(backend().unwrap().device(), &designed, 2, 4096).unwrap();
    assert_eq!(plain.pipeline_status(), (0, 0));
}

/// Staging memory (`CudaTuning::staging_write_combined`): chains on a device with
/// write-combined slots (as before 2026-11-28) and with cached ones (the default) give
/// the same bits, jobs and overlapped streams alike; only the speed may differ.
#[test]
fn write_combined_and_cached_staging_give_the_same_bits() {
    use ferrofx::gpu::cuda::{CudaDevice, CudaTuning};
    let Some(b) = backend() else { return };
    let wc = CudaDevice::open_tuned(0, CudaTuning { staging_write_combined: true, ..CudaTuning::default() }).unwrap();
    let designed = mixed_chain(48_000.0);
    let input = ferrofx_testkit::noise_channels(2, 200_000, 41, 0.8);
    let run = |dev: &std::sync::Arc<CudaDevice>| {
        let mut chain = CudaChain::new(dev, &designed, 2, 65_536).unwrap();
        let mut state = chain.new_state();
        let mut rows = input.clone();
        let mut s: Vec<&mut [f32]> = rows.iter_mut().map(|c| &mut c[..]).collect();
        chain.process_slices(&mut s, &mut state).unwrap();
        let mut block: Vec<f32> = input.iter().flat_map(|c| c[..4096].iter().copied()).collect();
        chain.process(&mut block, 4096, &mut state).unwrap();
        (rows, block, state.sos)
    };
    assert!(run(&wc) == run(b.device()), "write-combined staging changed the output");
}
