//! Signals and settings the tests share: noise, a setting of several bands and the
//! output gain with the same thing as a core chain, events, lead-ins, state bytes.

use ferrofx_testkit::engine::engine_output;
use clack_host::prelude::*;
use ferrofx::chain::{Biquad, Butterworth, Chain, Fir, LinkwitzRiley};
use ferrofx::Stage;
use ferrofx_plugin::control::params::ranges;

use super::host::Plugin;

pub(crate) fn noise(frames: usize, seed: u64, amplitude: f32) -> Vec<f32> {
    ferrofx_testkit::noise_amp(frames, seed, amplitude)
}

pub(crate) fn stereo_noise(frames: usize, seed: u64) -> Vec<Vec<f32>> {
    vec![noise(frames, seed, 0.5), noise(frames, seed + 1, 0.5)]
}

/// Settings as (parameter name, plain value); converted to CLAP values by `events`.
#[derive(Clone, Copy)]
pub(crate) enum Plain {
    Freq(f32),
    GainDb(f32),
    Q(f32),
    OutDb(f32),
    /// Enum index, bool (0/1) or int offset from the minimum.
    Discrete(f64),
    /// A value already normalised to 0..1 through its range.
    Normalized(f32),
}

pub(crate) fn clap_value(p: Plain) -> f64 {
    match p {
        Plain::Freq(v) => ranges::freq_hz().normalize(v) as f64,
        Plain::GainDb(v) => ranges::gain_db().normalize(v) as f64,
        Plain::Q(v) => ranges::q().normalize(v) as f64,
        Plain::OutDb(v) => ranges::output_gain_db().normalize(v) as f64,
        Plain::Discrete(v) => v,
        Plain::Normalized(v) => v as f64,
    }
}

/// Shape indices in the parameter's order.
pub(crate) const PEAK: f64 = 0.0;

pub(crate) const HIGH_SHELF: f64 = 2.0;

pub(crate) const LOW_CUT: f64 = 3.0;

pub(crate) const HIGH_CUT: f64 = 4.0;

pub(crate) const NOTCH: f64 = 5.0;

pub(crate) const TILT: f64 = 8.0;

/// A setting of several bands and the output gain, and the same thing as a core chain.
pub(crate) fn settings() -> (Vec<(String, Plain)>, Chain) {
    let on = |n: usize| (format!("Band {n} On"), Plain::Discrete(1.0));
    let s = |n: usize, what: &str, v: Plain| (format!("Band {n} {what}"), v);
    let params = vec![
        on(1),
        s(1, "Shape", Plain::Discrete(LOW_CUT)),
        s(1, "Frequency", Plain::Freq(80.0)),
        s(1, "Slope", Plain::Discrete(4.0 - 1.0)), // 4 poles: 24 dB/oct
        on(5),
        s(5, "Shape", Plain::Discrete(PEAK)),
        s(5, "Frequency", Plain::Freq(1000.0)),
        s(5, "Gain", Plain::GainDb(6.0)),
        s(5, "Q", Plain::Q(1.4)),
        on(9),
        s(9, "Shape", Plain::Discrete(HIGH_SHELF)),
        s(9, "Frequency", Plain::Freq(8000.0)),
        s(9, "Gain", Plain::GainDb(-4.0)),
        s(9, "Q", Plain::Q(0.7)),
        on(12),
        s(12, "Shape", Plain::Discrete(NOTCH)),
        s(12, "Frequency", Plain::Freq(3000.0)),
        s(12, "Q", Plain::Q(4.0)),
        on(15),
        s(15, "Shape", Plain::Discrete(TILT)),
        s(15, "Frequency", Plain::Freq(600.0)),
        s(15, "Gain", Plain::GainDb(3.0)),
        s(15, "Q", Plain::Q(0.7)),
        on(24),
        s(24, "Shape", Plain::Discrete(HIGH_CUT)),
        s(24, "Frequency", Plain::Freq(15000.0)),
        s(24, "Slope", Plain::Discrete(8.0 - 1.0)), // 48 dB/oct
        s(24, "Linkwitz-Riley", Plain::Discrete(1.0)),
        ("Output Gain".to_string(), Plain::OutDb(-3.0)),
    ];
    // The plugin stores values as f32: build the expected chain from the same f32s.
    let f = |v: f32| v as f64;
    let chain = Butterworth::highpass(f(80.0), 4)
        | Biquad::peaking(f(1000.0), f(1.4), f(6.0))
        | Biquad::high_shelf(f(8000.0), f(0.7), f(-4.0))
        | Biquad::notch(f(3000.0), f(4.0))
        | Biquad::low_shelf(f(600.0), f(0.7), -f(3.0) / 2.0)
        | Biquad::high_shelf(f(600.0), f(0.7), f(3.0) / 2.0)
        | LinkwitzRiley::lowpass(f(15000.0), 8)
        | Stage::gain(-3.0);
    (params, chain)
}

/// The bands of [`settings`] as the plugin's band settings.
pub(crate) fn settings_bands() -> [ferrofx_plugin::shared::bands::Band; ferrofx_plugin::shared::bands::BANDS] {
    use ferrofx_plugin::shared::bands::{Band, Shape, Slope};
    let mut b = [Band::default(); ferrofx_plugin::shared::bands::BANDS];
    let f = |v: f32| v as f64;
    let on = |shape, freq_hz: f32, gain_db: f32, q: f32| Band { enabled: true, shape, freq_hz: f(freq_hz), gain_db: f(gain_db), q: f(q), ..Band::default() };
    b[0] = Band { slope: Slope { db_per_oct: 24, linkwitz_riley: false }, ..on(Shape::LowCut, 80.0, 0.0, std::f32::consts::FRAC_1_SQRT_2) };
    b[4] = on(Shape::Peak, 1000.0, 6.0, 1.4);
    b[8] = on(Shape::HighShelf, 8000.0, -4.0, 0.7);
    b[11] = on(Shape::Notch, 3000.0, 0.0, 4.0);
    b[14] = on(Shape::TiltShelf, 600.0, 3.0, 0.7);
    b[23] = Band { slope: Slope { db_per_oct: 48, linkwitz_riley: true }, ..on(Shape::HighCut, 15000.0, 0.0, std::f32::consts::FRAC_1_SQRT_2) };
    b
}

/// Parameter events for `settings`. The expected outputs of these tests are cookbook
/// chains, so the analog-matched switch (on by default) goes off first unless a test sets
/// it itself.
pub(crate) fn events(plugin: &Plugin, at: usize, settings: &[(String, Plain)]) -> Vec<(usize, ClapId, f64)> {
    let switch = "Analog-Matched Bands";
    let off = (!settings.iter().any(|(n, _)| n == switch)).then(|| (at, plugin.id(switch).0, 0.0));
    off.into_iter().chain(settings.iter().map(|(name, v)| (at, plugin.id(name).0, clap_value(*v)))).collect()
}

/// Quiet lead-in long enough for smoothing (15 ms time constant, settled to 1e-9) and the
/// 512-sample glides of switched bands to finish: the filters see only zeros until then.
pub(crate) fn settle_frames(fs: f64) -> usize {
    (0.5 * fs) as usize
}

pub(crate) fn with_lead_in(fs: f64, signal: &[Vec<f32>]) -> Vec<Vec<f32>> {
    signal
        .iter()
        .map(|c| {
            let mut v = vec![0.0; settle_frames(fs)];
            v.extend_from_slice(c);
            v
        })
        .collect()
}

/// nice-plug's CLAP state: a little-endian u64 length, then the JSON.
pub(crate) fn state_json(saved: &[u8]) -> serde_json::Value {
    let (len, json) = saved.split_at(8);
    assert_eq!(u64::from_le_bytes(len.try_into().unwrap()) as usize, json.len(), "length prefix");
    serde_json::from_slice(json).expect("the state is JSON after its length")
}

pub(crate) fn state_bytes(state: &serde_json::Value) -> Vec<u8> {
    let json = serde_json::to_vec(state).unwrap();
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out
}

// ---------------------------------------------------------------- tests

/// The bands of [`settings`] through their linear-phase FIR of `n` taps at the output
/// gain (-3 dB): what the plugin plays in that phase mode, its latency included.
pub(crate) fn linear_output(fs: f64, n: usize, input: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let g = 10f64.powf(-3.0 / 20.0);
    let taps: Vec<f64> = ferrofx_plugin::control::linear::design(&settings_bands(), fs, n, true).iter().map(|t| t * g).collect();
    engine_output(&Chain::from(Fir::coefficients(taps)), fs, input, 4096)
}

pub(crate) fn assert_valid_output(out: &[Vec<f32>], peak: f32, what: &str) {
    let bound = peak * 10f32.powf((24.0 * 24.0 + 24.0) / 20.0);
    for (c, y) in out.iter().enumerate() {
        for (i, &v) in y.iter().enumerate() {
            assert!(v.is_finite(), "{what}: channel {c} frame {i} is {v}");
            assert!(v == 0.0 || v.abs() >= f32::MIN_POSITIVE, "{what}: channel {c} frame {i} is subnormal ({v:e})");
            assert!(v.abs() <= bound, "{what}: channel {c} frame {i} is {v:e}, past any gain the parameters allow");
        }
    }
}
