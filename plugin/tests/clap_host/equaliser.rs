//! The bands through CLAP against the core engine: rates, block sizes, routing, the
//! analog-matched designs, extreme rates.

use ferrofx_testkit::engine::{engine_output, max_abs_diff};
use ferrofx::chain::{Biquad, Butterworth, Chain};

use super::host::*;
use super::settings::*;

#[test]
fn matches_the_core_engine_at_every_rate_and_block_size() {
    let Some(entry) = entry() else { return };
    let (settings, chain) = settings();
    let mut worst = 0.0f32;
    for fs in [44_100.0, 48_000.0, 96_000.0] {
        for block in [1usize, 64, 1000, 4096] {
            let mut plugin = Plugin::new(entry);
            let signal = stereo_noise((0.25 * fs) as usize, block as u64);
            let input = with_lead_in(fs, &signal);
            let evs = events(&plugin, 0, &settings);
            let (out, _) = plugin.run(fs, block, &input, &evs, |_, _, _| {});
            let lead = settle_frames(fs);
            let expected = engine_output(&chain, fs, &signal, 4096);
            for (c, (o, e)) in out.iter().zip(&expected).enumerate() {
                assert!(o[..lead].iter().all(|&v| v == 0.0), "silence in, silence out (fs {fs}, block {block})");
                let err = max_abs_diff(&o[lead..], e);
                assert!(err <= 2e-5, "fs {fs} block {block} channel {c}: max error {err:e} against the core engine");
                worst = worst.max(err);
            }
        }
    }
    println!("worst difference from the core engine over 3 rates x 4 block sizes: {worst:e}");
}

/// Bands routed to the left channel and to the mid signal, set through CLAP parameter
/// events: the right channel is the stereo bands' output alone, and the whole equals
/// per-channel core engines around a float64 M/S encode and decode.
#[test]
fn routed_bands_act_on_their_channels() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (mut settings, chain) = settings();
    // Band 5 (+6 dB bell at 1 kHz) to the left, band 9 (-4 dB high shelf) to the mid.
    settings.push(("Band 5 Channels".to_string(), Plain::Discrete(1.0)));
    settings.push(("Band 9 Channels".to_string(), Plain::Discrete(3.0)));
    let stages = &chain.stages;
    let pick = |keep: &dyn Fn(usize) -> bool| Chain { stages: stages.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, s)| s.clone()).collect() };
    let both = pick(&|i| i != 1 && i != 2);
    let (bell, shelf) = (pick(&|i| i == 1), pick(&|i| i == 2));
    let signal = stereo_noise((0.5 * fs) as usize, 91);
    let mut plugin = Plugin::new(entry);
    let evs = events(&plugin, 0, &settings);
    let (out, _) = plugin.run(fs, 512, &with_lead_in(fs, &signal), &evs, |_, _, _| {});
    let lead = settle_frames(fs);
    let common = engine_output(&both, fs, &signal, 4096);
    let left = engine_output(&bell, fs, &common[..1], 4096).remove(0);
    let right = &common[1];
    let mid: Vec<f32> = left.iter().zip(right).map(|(a, b)| ((f64::from(*a) + f64::from(*b)) / 2.0) as f32).collect();
    let side: Vec<f32> = left.iter().zip(right).map(|(a, b)| ((f64::from(*a) - f64::from(*b)) / 2.0) as f32).collect();
    let mid = engine_output(&shelf, fs, &[mid], 4096).remove(0);
    let want_l: Vec<f32> = mid.iter().zip(&side).map(|(m, s)| m + s).collect();
    let want_r: Vec<f32> = mid.iter().zip(&side).map(|(m, s)| m - s).collect();
    let (el, er) = (max_abs_diff(&out[0][lead..], &want_l), max_abs_diff(&out[1][lead..], &want_r));
    println!("left and mid bands through CLAP vs per-channel core engines: {el:e}, {er:e}");
    assert!(el <= 3e-5 && er <= 3e-5, "routed bands: left {el:e}, right {er:e}");
}

/// Analog-matched bands (the default) through CLAP: the bells, shelves, tilt and notch
/// equal the core chain's matched biquads and the cuts its matched cuts (format version 2).
#[test]
fn analog_matched_bands_equal_the_core_matched_chain() {
    let Some(entry) = entry() else { return };
    let (mut settings, chain) = settings();
    settings.push(("Analog-Matched Bands".to_string(), Plain::Discrete(1.0)));
    let matched = Chain { stages: chain.stages.iter().map(|s| s.clone().matched()).collect() };
    // The file says so: version 2, and it reads back as written.
    let text = matched.to_json();
    assert!(text.contains("\"version\": 2") && text.contains("\"matched\": true"));
    assert_eq!(Chain::from_json(&text).unwrap(), matched);
    for fs in [44_100.0, 96_000.0] {
        let signal = stereo_noise((0.25 * fs) as usize, 94);
        let mut plugin = Plugin::new(entry);
        let evs = events(&plugin, 0, &settings);
        let (out, _) = plugin.run(fs, 512, &with_lead_in(fs, &signal), &evs, |_, _, _| {});
        let lead = settle_frames(fs);
        let want = engine_output(&matched, fs, &signal, 4096);
        let cookbook = engine_output(&chain, fs, &signal, 4096);
        for c in 0..2 {
            let err = max_abs_diff(&out[c][lead..], &want[c]);
            let differs = max_abs_diff(&want[c], &cookbook[c]);
            println!("fs {fs} channel {c}: matched plugin vs core matched chain {err:e} (matched vs cookbook {differs:e})");
            assert!(err <= 2e-5, "fs {fs} channel {c}: {err:e}");
            assert!(differs > 1e-3, "the matched chain should differ from the cookbook one");
        }
    }
}

/// The lowest and highest rates (8 and 384 kHz) with irregular block sizes from 1 to the
/// 16384 maximum, against the core engine.
#[test]
fn extreme_rates_and_irregular_block_sizes() {
    let Some(entry) = entry() else { return };
    let s = |n: usize, what: &str, v: Plain| (format!("Band {n} {what}"), v);
    let settings = vec![
        s(1, "On", Plain::Discrete(1.0)),
        s(1, "Shape", Plain::Discrete(LOW_CUT)),
        s(1, "Frequency", Plain::Freq(80.0)),
        s(1, "Slope", Plain::Discrete(3.0)),
        s(7, "On", Plain::Discrete(1.0)),
        s(7, "Shape", Plain::Discrete(PEAK)),
        s(7, "Frequency", Plain::Freq(1000.0)),
        s(7, "Gain", Plain::GainDb(6.0)),
        s(7, "Q", Plain::Q(1.4)),
        s(9, "On", Plain::Discrete(1.0)),
        s(9, "Shape", Plain::Discrete(HIGH_SHELF)),
        s(9, "Frequency", Plain::Freq(3000.0)),
        s(9, "Gain", Plain::GainDb(-4.0)),
        s(9, "Q", Plain::Q(0.7)),
    ];
    let chain = Butterworth::highpass(80.0, 4) | Biquad::peaking(1000.0, 1.4, 6.0) | Biquad::high_shelf(3000.0, 0.7, -4.0);
    let blocks = [1usize, 7, 333, 16384, 2, 1000, 4096, 64];
    for fs in [8_000.0, 384_000.0] {
        let mut plugin = Plugin::new(entry);
        let signal = stereo_noise((0.5 * fs) as usize, 17);
        let input = with_lead_in(fs, &signal);
        let evs = events(&plugin, 0, &settings);
        let (out, _) = plugin.run_with(fs, &blocks, &input, &evs, |_, _, _| {}, None);
        let expected = engine_output(&chain, fs, &signal, 4096);
        for (o, e) in out.iter().zip(&expected) {
            let err = max_abs_diff(&o[settle_frames(fs)..], e);
            println!("fs {fs}: max difference from the core engine {err:e}");
            assert!(err <= 2e-5, "fs {fs}: max error {err:e}");
        }
    }
}

#[test]
fn activates_and_processes_at_any_sample_rate_from_1_hz_to_1_5_mhz() {
    let Some(entry) = entry() else { return };
    let (settings, _) = settings();
    // Steinberg's validator tries 1,234,567.8 Hz; hosts may offer anything.
    for fs in [1.0, 7.0, 100.0, 999.0, 8_000.0, 768_001.0, 1_234_567.8, 1_500_000.0] {
        let mut plugin = Plugin::new(entry);
        let evs = events(&plugin, 0, &settings);
        let input = stereo_noise(3_000, 5);
        // `run` asserts that activation succeeds.
        let (out, _) = plugin.run_with(fs, &[1, 64, 512], &input, &evs, |_, _, _| {}, None);
        assert_valid_output(&out, 0.5, &format!("fs {fs}"));
        assert!(out[0].iter().any(|v| *v != 0.0), "fs {fs}: the plugin still passes signal");
    }
}
