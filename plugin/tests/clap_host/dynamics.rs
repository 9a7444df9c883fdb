//! Dynamic bands and their sidechain, delta listen, auto gain.

use ferrofx_testkit::engine::max_abs_diff;
use ferrofx_testkit::plugin::{tail_level_db, tone};
use ferrofx_plugin::control::params::ranges;

use super::host::*;
use super::settings::*;

/// The shared dynamic band (`ferrofx_testkit::plugin::dynamic_band`) as CLAP settings.
fn dynamic_band(sidechain: f64) -> Vec<(String, Plain)> {
    use ferrofx_testkit::plugin::Setting;
    ferrofx_testkit::plugin::dynamic_band(sidechain)
        .into_iter()
        .map(|(name, v)| {
            let plain = match v {
                Setting::Index(i) => Plain::Discrete(i),
                Setting::Hz(f) => Plain::Freq(f),
                Setting::Db(g) => Plain::GainDb(g),
                Setting::Q(q) => Plain::Q(q),
                Setting::Dynamics(v) => {
                    let range = match name.rsplit(' ').next() {
                        Some("Threshold") => ranges::threshold_db(),
                        Some("Ratio") => ranges::ratio(),
                        Some("Range") => ranges::range_db(),
                        Some("Attack") => ranges::attack_ms(),
                        Some("Release") => ranges::release_ms(),
                        other => panic!("no dynamics range for {other:?}"),
                    };
                    Plain::Normalized(range.normalize(v))
                }
            };
            (name, plain)
        })
        .collect()
}

/// Dynamic EQ through CLAP: a band at 1 kHz set dynamic (threshold -30 dB, ratio 4,
/// range 12 dB) leaves a quiet sine alone and takes a loud one down by what its static
/// curve says, within 0.5 dB.
#[test]
fn dynamic_band_follows_its_static_curve_in_the_host() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let settings = dynamic_band(0.0);
    for (level_db, want_db) in [(-45.0, 0.0), (-26.0, -3.0), (-10.0, -12.0)] {
        let sine = tone(level_db, fs);
        let mut plugin = Plugin::new(entry);
        let evs = events(&plugin, 0, &settings);
        let (out, _) = plugin.run(fs, 256, &[sine.clone(), sine], &evs, |_, _, _| {});
        let got_db = tail_level_db(&out[0]) - level_db;
        println!("sine at {level_db} dB: band gain {got_db:+.2} dB (curve {want_db:+.2} dB)");
        assert!((got_db - want_db).abs() <= 0.5, "at {level_db} dB the band gives {got_db:.2} dB, the curve {want_db} dB");
    }
}

/// The sidechain drives the detector: with the "Stereo with sidechain" layout chosen
/// through audio-ports-config, a dynamic band set to its sidechain takes a quiet main
/// signal down when the sidechain is loud, and leaves a loud main signal alone when the
/// sidechain is silent.
#[test]
fn sidechain_input_drives_the_dynamic_band() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;

    // (main level, sidechain level, band listens to the sidechain, expected change)
    for (main_db, side_db, listens, want_db) in ferrofx_testkit::plugin::SIDECHAIN_CASES {
        let mut plugin = Plugin::new(entry);
        plugin.select_layout(5);
        plugin.sidechain = Some(vec![tone(side_db, fs), tone(side_db, fs)]);
        let evs = events(&plugin, 0, &dynamic_band(listens));
        let main = tone(main_db, fs);
        let (out, _) = plugin.run(fs, 256, &[main.clone(), main], &evs, |_, _, _| {});
        let got_db = tail_level_db(&out[0]) - main_db;
        println!("main {main_db} dB, sidechain {side_db} dB, listening to the sidechain {listens}: band gain {got_db:+.2} dB");
        assert!((got_db - want_db).abs() <= 0.5, "band gain {got_db:.2} dB, expected {want_db} dB");
    }
}

/// Delta listen through CLAP: the output is what the bands and chain changed (processed
/// minus input, at the output gain), and silence bit for bit when nothing acts.
#[test]
fn delta_listen_outputs_the_difference() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, _) = settings();
    let signal = stereo_noise((0.5 * fs) as usize, 92);
    let input = with_lead_in(fs, &signal);
    let lead = settle_frames(fs);
    let run = |extra: &[(String, Plain)], with_bands: bool| {
        let mut plugin = Plugin::new(entry);
        let mut all: Vec<(String, Plain)> = if with_bands { settings.clone() } else { vec![("Output Gain".to_string(), Plain::OutDb(-3.0))] };
        all.extend_from_slice(extra);
        let evs = events(&plugin, 0, &all);
        plugin.run(fs, 256, &input, &evs, |_, _, _| {}).0
    };
    let delta = [("Delta Listen".to_string(), Plain::Discrete(1.0))];
    let normal = run(&[], true);
    let diff = run(&delta, true);
    let g = 10f32.powf(-3.0 / 20.0);
    for c in 0..2 {
        let want: Vec<f32> = normal[c][lead..].iter().zip(&signal[c]).map(|(y, x)| y - g * x).collect();
        let err = max_abs_diff(&diff[c][lead..], &want);
        assert!(err <= 1e-5, "channel {c}: delta vs processed minus input: {err:e}");
    }
    let silent = run(&delta, false);
    assert!(silent.iter().all(|c| c[lead..].iter().all(|&v| v == 0.0)), "delta with no band acting must be silence");
}

/// Auto-gain through CLAP: once settled, the output is the plain output scaled by the
/// compensation the bands ask for (the loudness promise itself is tested on the DSP in
/// tests/autogain.rs).
#[test]
fn auto_gain_scales_the_output_by_the_bands_compensation() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, _) = settings();
    let signal = stereo_noise((0.5 * fs) as usize, 93);
    let input = with_lead_in(fs, &signal);
    let lead = settle_frames(fs);
    let run = |choice: f64| {
        let mut plugin = Plugin::new(entry);
        let mut all = settings.clone();
        // And a broad +9 dB bell, so that there is something to compensate.
        all.push(("Band 7 On".to_string(), Plain::Discrete(1.0)));
        all.push(("Band 7 Frequency".to_string(), Plain::Freq(3000.0)));
        all.push(("Band 7 Gain".to_string(), Plain::GainDb(9.0)));
        all.push(("Band 7 Q".to_string(), Plain::Q(0.5)));
        all.push(("Auto Gain".to_string(), Plain::Discrete(choice)));
        let evs = events(&plugin, 0, &all);
        let out = plugin.run(fs, 256, &input, &evs, |_, _, _| {}).0;
        let mut bands = settings_bands();
        bands[6] = ferrofx_plugin::shared::bands::Band { enabled: true, freq_hz: 3000.0, gain_db: 9.0, q: f64::from(0.5f32), ..Default::default() };
        (out, bands)
    };
    let (plain, _) = run(0.0);
    for (choice, weighting) in [(1.0, ferrofx_plugin::shared::settings::Weighting::Pink), (2.0, ferrofx_plugin::shared::settings::Weighting::KWeighted)] {
        let (out, bands) = run(choice);
        let mut ag = ferrofx_plugin::audio::autogain::AutoGain::new(fs, true);
        ag.update_all(&bands, weighting);
        let g = 10f64.powf(ag.target_db() / 20.0) as f32;
        assert!(ag.target_db().abs() > 0.5, "the settings should ask for some compensation");
        for c in 0..2 {
            let want: Vec<f32> = plain[c][lead..].iter().map(|y| y * g).collect();
            let err = max_abs_diff(&out[c][lead..], &want);
            assert!(err <= 2e-5, "{weighting:?} channel {c}: {err:e} off the plain output times {:+.2} dB", ag.target_db());
        }
    }
}
