//! FerroFX as a CLAP/VST3 plugin and a standalone app: a 24-band equaliser fused into one
//! SOS cascade, followed by chain-file stages (anything the chain format can say: elliptic
//! designs, given FIRs up to a million taps), an output gain and a crossfaded bypass.
//!
//! Layout, by thread (`docs/architecture.md` has the map and each module's rule):
//! - this file: the nice-plug `Plugin` impl, which wires the two sides together;
//! - `audio/`: what runs on the audio thread (`audio::state::AudioState` owns it all);
//!   nothing there allocates, locks or blocks while processing;
//! - `control/`: what runs off it (parameters, the chain file and its builder, the
//!   linear-phase designer, the GPU choice, presets, impulse responses);
//! - `shared/`: below both (band settings and designs, telemetry, constants);
//! - `editor/`: the egui editor, one widget per file.
//!
//! Imports run one way: `editor`, `audio` -> `control` -> `shared`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use nice_plug::plugin::ParamValue;
use nice_plug::prelude::*;

pub mod audio;
pub mod control;
pub mod editor;
pub mod shared;

pub use ferrofx;

use audio::state::{AudioState, LatencyPolicy};
use control::chain::{AudioConfig, ChainSlot};
use control::linear;
use control::params::FerroParams;
use shared::bands;
use shared::telemetry::Telemetry;
use shared::MAX_CHANNELS;

/// The plugin: its parameters, the chain stages' builder, what it tells the editor, and
/// the audio-thread state (owned by [`AudioState`]).
pub struct FerroFx {
    params: Arc<FerroParams>,
    chain: ChainSlot,
    telemetry: Arc<Telemetry>,
    audio: AudioState,
    /// The linear-phase designer thread while linear phase is on, or may be switched on
    /// while playing (see `control/linear.rs`).
    designer: Option<linear::Designer>,
}

impl Default for FerroFx {
    fn default() -> FerroFx {
        let params = Arc::new(FerroParams::default());
        let chain = ChainSlot::new(&params.chain);
        let (telemetry, taps) = audio::taps::connect();
        let audio = AudioState::new(chain.clone(), taps);
        FerroFx { params, chain, telemetry: Arc::new(telemetry), audio, designer: None }
    }
}

/// Stereo in and out with a stereo sidechain input for the dynamic bands' detectors.
const SIDECHAIN_LAYOUT: AudioIOLayout = AudioIOLayout {
    main_input_channels: NonZeroU32::new(2),
    main_output_channels: NonZeroU32::new(2),
    aux_input_ports: &[new_nonzero_u32(2)],
    names: PortNames { layout: Some("Stereo with sidechain"), main_input: None, main_output: None, aux_inputs: &["Sidechain"], aux_outputs: &[] },
    ..AudioIOLayout::const_default()
};

/// A layout of `channels` in and out on the main ports.
const fn io_layout(channels: u32) -> AudioIOLayout {
    AudioIOLayout {
        main_input_channels: NonZeroU32::new(channels),
        main_output_channels: NonZeroU32::new(channels),
        names: PortNames::const_default(),
        ..AudioIOLayout::const_default()
    }
}

/// Version triple of a `x.y.z` string (missing parts are 0; junk is `None`).
fn version_triple(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.trim().split('.').map(|p| p.parse::<u64>());
    let major = parts.next()?.ok()?;
    let minor = parts.next().unwrap_or(Ok(0)).ok()?;
    let patch = parts.next().unwrap_or(Ok(0)).ok()?;
    Some((major, minor, patch))
}

/// Whether a saved state must not be applied: written by a newer version, or with an
/// unreadable version.
pub fn state_is_unusable(state_version: &str) -> Option<String> {
    let ours = version_triple(FerroFx::VERSION).expect("our own version parses");
    match version_triple(state_version) {
        None => Some(format!("unreadable state version {state_version:?}")),
        Some(v) if v > ours => Some(format!("state from newer version {state_version} (this is {})", FerroFx::VERSION)),
        Some(_) => None,
    }
}

impl Plugin for FerroFx {
    const NAME: &'static str = "FerroFX";
    const VENDOR: &'static str = "FerroFX";
    const URL: &'static str = "https://example.invalid/ferrofx";
    const EMAIL: &'static str = "ferrofx@example.invalid";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Stereo first (the default), then mono, quad, 5.1 and 7.1-sized layouts.
    // The stereo layout with a sidechain comes last: hosts that do not choose take the
    // first, and nice-plug 0.4.2's CLAP wrapper must not see a host pass fewer input ports
    // than the chosen layout declares.
    const AUDIO_IO_LAYOUTS: &'static [AudioIOLayout] =
        &[io_layout(2), io_layout(1), io_layout(4), io_layout(6), io_layout(MAX_CHANNELS as u32), SIDECHAIN_LAYOUT];

    type Editor = nice_plug_egui::EguiEditor<editor::EditorApp>;
    type SysExMessage = ();
    type BackgroundTask = ();

    fn params(&self) -> Arc<dyn Params> {
        self.params.clone()
    }

    fn editor(&mut self, _async_executor: AsyncExecutor<Self>) -> Option<Self::Editor> {
        editor::create(self.params.clone(), self.chain.clone(), self.telemetry.clone())
    }

    fn filter_state(state: &mut PluginState) {
        if let Some(why) = state_is_unusable(&state.version) {
            nice_warn!("saved state not loaded, defaults used instead: {why}");
            // Replace the state by the defaults (parameters and the empty chain).
            let defaults = FerroParams::default();
            state.params = defaults
                .param_map()
                .into_iter()
                .map(|(id, ptr, _)| {
                    // SAFETY: `ptr` points into `defaults`, which is alive for this whole
                    // closure and not mutated.
                    let value = unsafe {
                        match ptr {
                            ParamPtr::FloatParam(p) => ParamValue::F32((*p).default_plain_value()),
                            ParamPtr::IntParam(p) => ParamValue::I32((*p).default_plain_value()),
                            ParamPtr::BoolParam(p) => ParamValue::Bool((*p).default_plain_value()),
                            ParamPtr::EnumParam(p) => ParamValue::I32((*p).default_plain_value()),
                        }
                    };
                    (id, value)
                })
                .collect();
            state.fields = defaults.serialize_fields();
            return;
        }
        // Sessions saved before the analog-matched switch existed ran cookbook bands:
        // they keep doing so (new instances start with it on).
        if !state.params.contains_key("matched") {
            state.params.insert("matched".to_string(), ParamValue::Bool(false));
        }
    }

    fn activate(
        &mut self,
        audio_io_layout: &AudioIOLayout,
        buffer_config: &BufferConfig,
        context: &mut impl ActivateContext<Self>,
    ) -> bool {
        let channels = audio_io_layout.main_output_channels.map(|c| c.get() as usize).unwrap_or(0);
        let fs = buffer_config.sample_rate;
        let max_block = buffer_config.max_buffer_size.max(1) as usize;
        // A plugin runs at whatever rate the host gives it: bands above what the rate can
        // carry are clamped below Nyquist (the editor says so), and chain stages that
        // cannot be designed there are not run (the chain status says why). Only a rate
        // that is no number at all is refused.
        if !(fs.is_finite() && fs > 0.0) {
            nice_error!("sample rate {fs} Hz is not a positive number");
            return false;
        }
        if f64::from(fs) * bands::NYQUIST_SHARE < bands::ranges::freq_hz().1 {
            nice_warn!("at {fs} Hz, band frequencies above {} Hz are clamped to it", f64::from(fs) * bands::NYQUIST_SHARE);
        }
        // The GPU path (chain stages re-blocked to the host's largest block, that many
        // samples late) or the CPU path (no latency); see `control/gpu.rs`.
        let has_stages = self.params.chain.chain().stages.iter().any(|s| s.enabled);
        let policy = self.params.backend.value().policy();
        let min_block = self.params.gpu_min_block.value().max(1) as usize;
        if policy.is_some() && max_block >= min_block && has_stages {
            let found = control::gpu::backend();
            if let Err(why) = &found {
                nice_warn!("GPU backend chosen, running on the CPU: {why}");
                self.chain.set_gpu_status(format!("CPU: {why}"));
            }
            self.audio.gpu_found = Some(found.is_ok());
        }
        let gpu_latency = self.audio.wanted_gpu_latency(&self.params, max_block, has_stages);
        let offload = gpu_latency > 0;
        // CLAP lets the latency change only here; VST3 and the standalone app take a
        // change between blocks, so there the phase mode switches while playing.
        // A latency reserve fixes the latency for the activation on every format, and the
        // mode switches within it.
        let reserve = self.params.latency_reserve.value().latency_samples() as u32;
        let latency_policy = match context.plugin_api() {
            _ if reserve > 0 => LatencyPolicy::Fixed(reserve),
            PluginApi::Clap => LatencyPolicy::Restart,
            PluginApi::Vst3 | PluginApi::Standalone => LatencyPolicy::InProcess,
        };
        // Linear phase: the first FIR designed here, the designer thread follows the phase
        // mode and the bands (also in natural phase where the mode can switch in process).
        self.designer = None;
        let linear = (self.params.phase.value().fir_mode().is_some() || latency_policy != LatencyPolicy::Restart).then(|| {
            let setup = linear::Setup { fs: f64::from(fs), channels, max_block };
            let (designer, end) = linear::Designer::start(self.params.clone(), setup);
            self.designer = Some(designer);
            audio::linear::LinearAudio::new(end, setup)
        });
        if !offload {
            let text = match policy {
                None => String::from("CPU backend"),
                Some(_) if max_block < min_block => {
                    format!("CPU: host blocks of at most {max_block} frames are below the GPU minimum of {min_block}")
                }
                Some(_) if !has_stages => String::from("CPU: no chain stages to offload (the bands always run on the CPU)"),
                Some(_) => self.chain.gpu_status(),
            };
            self.chain.set_gpu_status(text);
        }
        let config = AudioConfig { sample_rate_hz: fs, channels, max_block_frames: max_block, offload };
        let latency = self.audio.activate(&self.params, config, policy.filter(|_| offload), linear, gpu_latency, latency_policy);
        context.set_latency_samples(latency);
        let t = &self.telemetry;
        t.sample_rate_bits.store(fs.to_bits(), Ordering::Relaxed);
        t.channels.store(channels as u32, Ordering::Relaxed);
        t.max_block_frames.store(max_block as u32, Ordering::Relaxed);
        t.latency_samples.store(latency, Ordering::Relaxed);
        t.gpu.block_frames.store(gpu_latency, Ordering::Relaxed);
        true
    }

    fn reset(&mut self) {
        self.audio.reset(&self.params);
    }

    fn deactivate(&mut self) {
        self.audio.deactivate();
        self.designer = None;
    }

    fn process(
        &mut self,
        buffer: &mut Buffer,
        aux: &mut AuxiliaryBuffers,
        context: &mut impl ProcessContext<Self>,
    ) -> ProcessStatus {
        let frames = buffer.samples();
        // The sidechain, where the chosen layout has one and the host connected it.
        let sidechain = aux.inputs.first_mut().map(|b| b.as_slice()).filter(|s| s.iter().all(|c| c.len() >= frames));
        let news = self.audio.process(&self.params, &self.telemetry, buffer.as_slice(), sidechain, frames);
        // The audio of this block on has a new latency (a phase switch in process). The
        // standalone app has no latency to report (nice-plug's backends take none).
        if let (Some(latency), false) = (news.report, context.plugin_api() == PluginApi::Standalone) {
            context.set_latency_samples(latency);
        }
        // A change this activation cannot make (the GPU path on or off; on CLAP any
        // latency change): `activate` builds it after the host's restart, and until then
        // the audio keeps the latency reported.
        if news.restart {
            context.request_restart();
        }
        self.audio.publish(&self.telemetry, frames);
        ProcessStatus::Normal
    }
}

impl ClapPlugin for FerroFx {
    const CLAP_ID: &'static str = "org.ferrofx.equaliser";
    const CLAP_DESCRIPTION: Option<&'static str> = Some("24-band equaliser and filter chains on the FerroFX engine");
    const CLAP_MANUAL_URL: Option<&'static str> = None;
    const CLAP_SUPPORT_URL: Option<&'static str> = None;
    const CLAP_FEATURES: &'static [ClapFeature] =
        &[ClapFeature::AudioEffect, ClapFeature::Equalizer, ClapFeature::Filter, ClapFeature::Stereo, ClapFeature::Mono];
}

impl Vst3Plugin for FerroFx {
    const VST3_CLASS_ID: [u8; 16] = *b"FerroFXEqualiser";
    const VST3_SUBCATEGORIES: &'static [Vst3SubCategory] = &[Vst3SubCategory::Fx, Vst3SubCategory::Eq];
}

nice_export_clap!(FerroFx);
nice_export_vst3!(FerroFx);

#[cfg(test)]
mod tests {
    use super::{FerroFx, MAX_CHANNELS};
    use nice_plug::prelude::Plugin;

    /// The audio thread lists at most `MAX_CHANNELS` channel slices per block: no layout
    /// may have more, on any port.
    #[test]
    fn no_layout_has_more_channels_than_the_audio_thread_lists() {
        for layout in FerroFx::AUDIO_IO_LAYOUTS {
            let ports = [layout.main_input_channels, layout.main_output_channels].into_iter().chain(layout.aux_input_ports.iter().map(|&p| Some(p)));
            for channels in ports.flatten() {
                assert!(channels.get() as usize <= MAX_CHANNELS, "a layout port has {channels} channels");
            }
        }
    }
}
