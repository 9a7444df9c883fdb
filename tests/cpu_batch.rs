//! The CPU backend's batch filtering (what the Python package's `Chain.process` runs):
//! every item of a batch comes out as it does filtered alone, bit for bit, whatever the
//! batch size, grouping or thread count, for cascades (items side by side as SIMD lanes)
//! and for chains with FIRs (one item at a time).

use ferrofx::chain::{Biquad, Butterworth, Elliptic, Fir};
use ferrofx::run::backend::CpuBackend;
use ferrofx::DesignedChain;

fn batch(designed: &DesignedChain, items: usize, channels: usize, frames: usize, threads: usize, seed: u64) -> Vec<f32> {
    let mut data: Vec<f32> = ferrofx_testkit::noise_channels(items * channels, frames, seed, 0.8).concat();
    CpuBackend { threads }.filter_batch(designed, &mut data, items, channels, frames);
    data
}

#[test]
fn every_item_of_a_batch_equals_the_item_filtered_alone_bit_for_bit() {
    let chains = [
        ("cascades", (Butterworth::highpass(40.0, 4) | Biquad::peaking(1000.0, 1.4, 6.0) | Elliptic::lowpass(9000.0, 5, 0.5, 60.0)).design(48_000.0).unwrap()),
        ("with a FIR", (Butterworth::highpass(40.0, 2) | Fir::lowpass(257, 8000.0)).design(48_000.0).unwrap()),
    ];
    for (what, designed) in &chains {
        for (items, channels, frames, threads) in [(1usize, 1usize, 5000usize, 1usize), (9, 1, 3000, 2), (13, 2, 2048, 3), (5, 3, 700, 8), (20, 1, 1, 2)] {
            let all = batch(designed, items, channels, frames, threads, 7);
            let per_item = channels * frames;
            for i in 0..items {
                // The same item alone: its rows are the batch input's rows for item i.
                let input: Vec<f32> = ferrofx_testkit::noise_channels(items * channels, frames, 7, 0.8).concat()[i * per_item..(i + 1) * per_item].to_vec();
                let mut alone = input.clone();
                CpuBackend { threads: 1 }.filter_batch(designed, &mut alone, 1, channels, frames);
                assert!(alone != input || frames == 1, "{what}: the chain changes the signal");
                assert_eq!(&all[i * per_item..(i + 1) * per_item], &alone[..], "{what}: item {i} of {items} ({channels} ch, {frames} frames, {threads} threads)");
            }
        }
    }
}
