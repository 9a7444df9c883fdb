//! The bundled `FerroFX.vst3` driven through its auxiliary (sidechain) input by a minimal
//! VST3 host (`ferrofx_testkit::vst3`) on the `vst3` crate's bindings, the ones the plugin itself is
//! built with. The suite's other VST3 host, pedalboard, passes one input bus only
//! (spotify/pedalboard#254), so the sidechain is tested here: the host asks for two
//! stereo inputs and a stereo output (`setBusArrangements`), activates the auxiliary
//! bus, sets parameters through the edit controller (by title, plain values converted by
//! the plugin's own `plainParamToNormalized`) and processes 32-bit blocks with both
//! input buses.
//!
//! Builds nothing itself: run `cargo xtask bundle ferrofx` first (scripts/test.sh does).
//! Without the bundle the test prints why and passes, unless `FERROFX_REQUIRE_BUNDLES=1`.

use ferrofx_testkit::plugin::{tail_level_db, tone};
use vst3::Steinberg::kResultOk;
use vst3::Steinberg::Vst::IAudioProcessorTrait;
use ferrofx_testkit::clap::bundle_or_skip;
use ferrofx_testkit::vst3::{Vst3Plugin, STEREO};

/// Sets the shared dynamic band (`ferrofx_testkit::plugin::dynamic_band`): plain values
/// through the plugin's own conversion.
fn set_dynamic_band(p: &Vst3Plugin, sidechain: f64) {
    use ferrofx_testkit::plugin::Setting;
    for (name, v) in ferrofx_testkit::plugin::dynamic_band(sidechain) {
        match v {
            Setting::Index(x) => p.set_plain(&name, x),
            Setting::Hz(x) | Setting::Db(x) | Setting::Q(x) | Setting::Dynamics(x) => p.set_plain(&name, f64::from(x)),
        }
    }
}

/// The sidechain drives the detector through VST3: with the "Stereo with sidechain" bus
/// arrangement and the auxiliary bus active, a dynamic band listening to its sidechain
/// takes a quiet main signal down by its range when the sidechain is loud and leaves a
/// loud main signal alone when the sidechain is silent; listening to its own input, the
/// loud main signal goes down whatever the sidechain does.
#[test]
fn vst3_sidechain_input_drives_the_dynamic_band() {
    let Some(path) = bundle_or_skip("FerroFX.vst3") else { return };
    let fs = 48_000.0;
    // (main level, sidechain level, band listens to the sidechain, expected change)
    for (main_db, side_db, listens, want_db) in ferrofx_testkit::plugin::SIDECHAIN_CASES {
        let plugin = Vst3Plugin::load(&path);
        assert!(plugin.choose_sidechain_layout(), "the plugin refused stereo + stereo sidechain in, stereo out");
        set_dynamic_band(&plugin, listens);
        let main = tone(main_db, fs);
        let side = [tone(side_db, fs), tone(side_db, fs)];
        let out = plugin.run(fs, 256, &[main.clone(), main], Some(&side));
        let got_db = tail_level_db(&out[0]) - main_db;
        println!("VST3: main {main_db} dB, sidechain {side_db} dB, listening to the sidechain {listens}: band gain {got_db:+.2} dB");
        assert!((got_db - want_db).abs() <= 0.5, "band gain {got_db:.2} dB, expected {want_db} dB");
    }
}

/// The plain stereo arrangement still works in this host (no sidechain bus), and a band
/// set to its sidechain with none connected listens to its own input (the dynamic band
/// takes a loud sine down).
#[test]
fn vst3_without_a_sidechain_bus_the_band_listens_to_its_input() {
    let Some(path) = bundle_or_skip("FerroFX.vst3") else { return };
    let fs = 48_000.0;
    let plugin = Vst3Plugin::load(&path);
    let mut inputs = [STEREO];
    let mut outputs = [STEREO];
    // SAFETY: arrays of the lengths passed, alive for the call.
    assert_eq!(unsafe { plugin.processor.setBusArrangements(inputs.as_mut_ptr(), 1, outputs.as_mut_ptr(), 1) }, kResultOk);
    set_dynamic_band(&plugin, 1.0);
    let main = tone(-10.0, fs);
    let out = plugin.run(fs, 256, &[main.clone(), main], None);
    let got_db = tail_level_db(&out[0]) + 10.0;
    println!("VST3, no sidechain bus, band set to its sidechain: band gain {got_db:+.2} dB");
    assert!((got_db + 12.0).abs() <= 0.5, "band gain {got_db:.2} dB, expected -12 dB");
}
