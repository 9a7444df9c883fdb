//! The benchmark workloads: their chains and their input, shared by `bench.rs` (the
//! engine and the GPU from host memory) and `bench_resident.rs` (data on the device).

use clap::ValueEnum;
use ferrofx::chain::{Biquad, Butterworth, Chain, Chebyshev1, Fir};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    #[value(name = "api_chain")]
    ApiChain,
    #[value(name = "iir_chain")]
    IirChain,
    #[value(name = "fir_chain")]
    FirChain,
    #[value(name = "long_fir")]
    LongFir,
    #[value(name = "realtime_block")]
    RealtimeBlock,
}

impl Workload {
    pub const ALL: [Workload; 5] =
        [Workload::ApiChain, Workload::IirChain, Workload::FirChain, Workload::LongFir, Workload::RealtimeBlock];
    pub fn name(self) -> &'static str {
        match self {
            Workload::ApiChain => "api_chain",
            Workload::IirChain => "iir_chain",
            Workload::FirChain => "fir_chain",
            Workload::LongFir => "long_fir",
            Workload::RealtimeBlock => "realtime_block",
        }
    }
}

/// `api_chain`: TorchFX 0.8's defaults: 3 x Chebyshev I highpass (order 4, 0.1 dB) then
/// 3 x Butterworth lowpass (order 5): 6 + 9 = 15 sections.
pub fn api_chain() -> Chain {
    Chebyshev1::highpass(20.0, 4, 0.1)
        | Chebyshev1::highpass(60.0, 4, 0.1)
        | Chebyshev1::highpass(65.0, 4, 0.1)
        | Butterworth::lowpass(5000.0, 5)
        | Butterworth::lowpass(4900.0, 5)
        | Butterworth::lowpass(4850.0, 5)
}

/// `iir_chain`: four order-2 designs, 4 sections.
pub fn iir_chain() -> Chain {
    Butterworth::highpass(1000.0, 2)
        | Butterworth::lowpass(5000.0, 2)
        | Chebyshev1::highpass(1500.0, 2, 0.1)
        | Chebyshev1::lowpass(1800.0, 2, 0.1)
}

/// `fir_chain`: five Hamming lowpass FIRs of 101..=105 taps.
pub fn fir_chain() -> Chain {
    Fir::lowpass(101, 1000.0)
        | Fir::lowpass(102, 5000.0)
        | Fir::lowpass(103, 1500.0)
        | Fir::lowpass(104, 1800.0)
        | Fir::lowpass(105, 1850.0)
}

/// `long_fir`: one given FIR of 262,144 taps, a 6 s reverb-like decaying noise.
pub fn long_fir() -> Chain {
    let taps = 262_144;
    let mut rng = Rng(0x5EED);
    let decay = -6.9 / taps as f64; // -60 dB over the length
    Chain::from(Fir::coefficients((0..taps).map(|i| rng.uniform() * (decay * i as f64).exp() * 0.05).collect()))
}

/// `realtime_block`: 24 bands as the plugin would run them (one section each).
pub fn realtime_chain() -> Chain {
    let mut chain = Chain::from(Biquad::highpass(25.0, std::f64::consts::FRAC_1_SQRT_2));
    chain.push(Biquad::low_shelf(90.0, std::f64::consts::FRAC_1_SQRT_2, 2.0));
    for i in 0..20 {
        let f = 60.0 * (15_000.0f64 / 60.0).powf(i as f64 / 19.0);
        chain.push(Biquad::peaking(f, 1.2, if i % 2 == 0 { -3.0 } else { 2.5 }));
    }
    chain.push(Biquad::high_shelf(9000.0, std::f64::consts::FRAC_1_SQRT_2, -2.0));
    chain.push(Biquad::lowpass(19_000.0, std::f64::consts::FRAC_1_SQRT_2));
    chain
}

/// xorshift64*: deterministic white noise.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

pub fn noise(channels: usize, frames: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed | 1);
    (0..channels).map(|_| (0..frames).map(|_| rng.uniform() as f32).collect()).collect()
}

