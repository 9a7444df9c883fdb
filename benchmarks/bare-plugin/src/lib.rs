//! A bare nice-plug plugin: stereo (or mono, or 8 channels) in and out, one smoothed gain
//! parameter applied per sample. `cargo xtask bench --plugin` times it beside FerroFX in
//! the same host, so the share of a block's cost that any plugin on this framework pays
//! (the wrapper's event and buffer handling, one smoother) is measured, not assumed.

use nice_plug::prelude::*;
use std::num::NonZeroU32;
use std::sync::Arc;

pub struct Bare {
    params: Arc<BareParams>,
}

#[derive(Params)]
pub struct BareParams {
    /// Output gain, smoothed (what a plugin does at the least).
    #[id = "gain"]
    pub gain: FloatParam,
}

impl Default for Bare {
    fn default() -> Self {
        let gain = FloatParam::new(
            "Gain",
            util::db_to_gain(0.0),
            FloatRange::Skewed { min: util::db_to_gain(-30.0), max: util::db_to_gain(30.0), factor: FloatRange::gain_skew_factor(-30.0, 30.0) },
        )
        .with_smoother(SmoothingStyle::Logarithmic(50.0))
        .with_unit(" dB");
        Bare { params: Arc::new(BareParams { gain }) }
    }
}

const fn layout(channels: u32) -> AudioIOLayout {
    AudioIOLayout {
        main_input_channels: NonZeroU32::new(channels),
        main_output_channels: NonZeroU32::new(channels),
        aux_input_ports: &[],
        aux_output_ports: &[],
        names: PortNames::const_default(),
    }
}

impl Plugin for Bare {
    const NAME: &'static str = "FerroFX Bare";
    const VENDOR: &'static str = "FerroFX";
    const URL: &'static str = "https://example.invalid/ferrofx";
    const EMAIL: &'static str = "ferrofx@example.invalid";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    /// The same channel layouts as FerroFX's first three (stereo, mono, quad), plus 8.
    const AUDIO_IO_LAYOUTS: &'static [AudioIOLayout] = &[layout(2), layout(1), layout(4), layout(6), layout(8)];
    type Editor = ();
    type SysExMessage = ();
    type BackgroundTask = ();

    fn params(&self) -> Arc<dyn Params> {
        self.params.clone()
    }

    fn process(&mut self, buffer: &mut Buffer, _aux: &mut AuxiliaryBuffers, _context: &mut impl ProcessContext<Self>) -> ProcessStatus {
        for mut frame in buffer.iter_samples() {
            let g = self.params.gain.smoothed.next();
            for s in frame.iter_mut() {
                *s *= g;
            }
        }
        ProcessStatus::Normal
    }
}

impl ClapPlugin for Bare {
    const CLAP_ID: &'static str = "org.ferrofx.bare";
    const CLAP_DESCRIPTION: Option<&'static str> = Some("A bare plugin: the framework's floor, for benchmarks");
    const CLAP_MANUAL_URL: Option<&'static str> = None;
    const CLAP_SUPPORT_URL: Option<&'static str> = None;
    const CLAP_FEATURES: &'static [ClapFeature] = &[ClapFeature::AudioEffect, ClapFeature::Utility];
}

impl Vst3Plugin for Bare {
    const VST3_CLASS_ID: [u8; 16] = *b"FerroFXBareGain1";
    const VST3_SUBCATEGORIES: &'static [Vst3SubCategory] = &[Vst3SubCategory::Fx, Vst3SubCategory::Tools];
}

nice_export_clap!(Bare);
nice_export_vst3!(Bare);
