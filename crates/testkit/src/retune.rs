//! New coefficients on a GPU backend, shared by the CUDA and wgpu tests: a chain whose
//! designs share one shape, job-by-job processing, and an offload stream retuned at
//! given blocks against the CPU engine retuned at the same blocks.

use ferrofx::chain::{Biquad, Butterworth, Chebyshev1, Fir};
use ferrofx::engine::{ChainState, Engine};
use ferrofx::run::offload::{Executor, Offload, OffloadStats, OFFLOAD_ENGINE_OPTIONS};
use ferrofx::DesignedChain;

/// The same shape for every `k` (a direct FIR and one long enough for the FFT path among
/// the cascades), other coefficients.
pub fn retunable_chain(fs: f64, k: usize) -> DesignedChain {
    let f = [1.0, 1.7, 0.6][k % 3];
    (Butterworth::highpass(20.0 * f, 4)
        | Fir::lowpass(255, 12_000.0 / f)
        | Chebyshev1::lowpass(9000.0 / f, 6, 0.5)
        | Fir::lowpass(1501, 6_000.0 * f)
        | Biquad::peaking(1000.0 * f, 2.0, 6.0 - 5.0 * f))
    .design(fs)
    .unwrap()
}

/// `blocks` (frame counts) of `input` from frame `start`, job by job through `process`
/// (planar data, frames, state); the outputs concatenated per channel.
pub fn jobs(mut process: impl FnMut(&mut [f32], usize, &mut ChainState), input: &[Vec<f32>], start: usize, blocks: &[usize], state: &mut ChainState) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new(); input.len()];
    let mut at = start;
    for &len in blocks {
        let mut data: Vec<f32> = input.iter().flat_map(|c| c[at..at + len].iter().copied()).collect();
        process(&mut data, len, state);
        for (c, o) in out.iter_mut().enumerate() {
            o.extend_from_slice(&data[c * len..(c + 1) * len]);
        }
        at += len;
    }
    out
}

/// What [`retuned_offload`] saw.
pub struct Retuned {
    pub out: Vec<Vec<f32>>,
    /// The CPU engine retuned at the same blocks, one block late.
    pub want: Vec<Vec<f32>>,
    /// `(block, design)` of each retune taken.
    pub taken: Vec<(usize, usize)>,
    pub stats: OffloadStats,
    pub worker_lost: bool,
}

/// A stereo stream of `frames` frames (blocks of `block`, paced at 0.5 ms) through an
/// offload of `designs[0]` on `exec`, retuned to `designs[d]` before block `at` for each
/// `(at, d)` of `wanted` (a refusal is tried again at the next block). `wait`: before
/// each block, wait (up to 2 s) for the job in flight to come back, so a slow device
/// (lavapipe) still runs the jobs; otherwise late jobs fall back to the CPU.
pub fn retuned_offload<E: Executor>(designs: &[DesignedChain], exec: E, block: usize, frames: usize, wanted: &[(usize, usize)], wait: bool) -> Retuned {
    let mut off = Offload::new(&designs[0], 2, block, exec).unwrap();
    let input = crate::noise_channels(2, frames, 9, 1.0);
    let mut out = input.clone();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut pending: Option<Box<DesignedChain>> = None;
    for (k, start) in (0..frames).step_by(block).enumerate() {
        if let Some(&(at, d)) = wanted.get(taken.len()) {
            if k >= at {
                let chain = pending.take().unwrap_or_else(|| Box::new(designs[d].clone()));
                match off.retune(chain) {
                    Ok(_) => taken.push((k, d)),
                    Err(e) => pending = Some(e.into_chain()),
                }
            }
        }
        let waited = std::time::Instant::now();
        while wait && off.job_in_flight() && !off.poll_ready() && waited.elapsed().as_secs() < 2 {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        let (l, r) = out.split_at_mut(1);
        off.process(&mut [&mut l[0][start..start + block], &mut r[0][start..start + block]]).unwrap();
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    let mut cpu = Engine::with_options(&designs[0], 2, block, OFFLOAD_ENGINE_OPTIONS);
    let mut y = input;
    for (k, start) in (0..frames).step_by(block).enumerate() {
        for &(_, d) in taken.iter().filter(|(t, _)| *t == k) {
            cpu.update(&designs[d]).unwrap();
        }
        let (l, r) = y.split_at_mut(1);
        cpu.process(&mut [&mut l[0][start..start + block], &mut r[0][start..start + block]]);
    }
    Retuned { out, want: crate::engine::one_block_late(y, block), taken, stats: off.stats(), worker_lost: off.worker_lost() }
}

/// Asserts `got` equals `want` bit for bit, channel by channel (`what` names the case).
pub fn assert_bits_equal(got: &[Vec<f32>], want: &[Vec<f32>], what: &str) {
    for (c, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}, channel {c}: length");
        let differ = g.iter().zip(w).position(|(x, y)| x.to_bits() != y.to_bits());
        assert_eq!(differ, None, "{what}, channel {c}: differs");
    }
}

/// Stereo `input` through the offload's CPU engine for `a`, its coefficients updated to
/// `b` at frame `at`: what a chain given new coefficients at that frame must match.
pub fn cpu_updated_at(a: &DesignedChain, b: &DesignedChain, mut input: Vec<Vec<f32>>, at: usize) -> Vec<Vec<f32>> {
    let mut cpu = Engine::with_options(a, 2, 4096, OFFLOAD_ENGINE_OPTIONS);
    let (h0, h1) = input.split_at_mut(1);
    cpu.process(&mut [&mut h0[0][..at], &mut h1[0][..at]]);
    cpu.update(b).unwrap();
    cpu.process(&mut [&mut h0[0][at..], &mut h1[0][at..]]);
    input
}
