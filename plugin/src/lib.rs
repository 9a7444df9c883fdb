//! FerroFX as a CLAP/VST3 plugin and a standalone app: a 24-band equaliser fused into one
//! SOS cascade, followed by chain-file stages (anything the chain format can say: elliptic
//! designs, given FIRs up to a million taps), an output gain and a crossfaded bypass.
//!
//! Layout: `params.rs` (parameters and their ranges), `bands.rs` (the equaliser DSP),
//! `chain_slot.rs` (chain stages built off the audio thread and handed over lock-free),
//! `preset.rs` (chain-file import/export), `editor.rs` (egui), this file (the plugin and
//! its `process`).
//!
//! Realtime rules for `process`: no allocation (checked by nice-plug's
//! `assert_process_allocs` in debug builds), no lock, no logging, no panic. Everything
//! that allocates happens in `activate` or on the thread that installs a chain.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use nice_plug::plugin::ParamValue;
use nice_plug::prelude::*;

pub mod bands;
pub mod chain_slot;
pub mod editor;
pub mod gpu;
pub mod params;
pub mod preset;
pub mod svf;

pub use ferrofx;

use bands::{Equaliser, BANDS};
use chain_slot::{AudioConfig, AudioSide};
use ferrofx::run::realtime::RealtimeOffload;
use params::FerroParams;

/// Bypass crossfade time.
pub const BYPASS_FADE_MS: f32 = 10.0;

/// What the audio thread reports to the editor (atomics, written once per block).
#[derive(Default)]
pub struct Telemetry {
    /// Sample rate in Hz (f32 bits).
    pub sample_rate_bits: AtomicU32,
    pub channels: AtomicU32,
    pub max_block_frames: AtomicU32,
    /// Latency reported to the host.
    pub latency_samples: AtomicU32,
    /// Last block size seen.
    pub last_block_frames: AtomicU32,
    /// Sections the equaliser runs.
    pub eq_sections: AtomicU32,
    /// The GPU path's route and figures.
    pub gpu: gpu::GpuTelemetry,
}

/// A fixed delay of `len` frames on every channel (the dry signal's, so the bypass
/// crossfade lines up with the latency of the GPU path). Allocated once.
struct DelayLine {
    lines: Vec<Vec<f32>>,
    pos: usize,
}

impl DelayLine {
    fn new(channels: usize, len: usize) -> DelayLine {
        DelayLine { lines: vec![vec![0.0; len.max(1)]; channels], pos: 0 }
    }

    /// Delays `frames` frames of each channel in place. No allocation.
    fn process(&mut self, bufs: &mut [Vec<f32>], frames: usize) {
        let len = self.lines.first().map_or(1, |l| l.len());
        for (line, b) in self.lines.iter_mut().zip(bufs.iter_mut()) {
            let mut pos = self.pos;
            for v in b[..frames].iter_mut() {
                std::mem::swap(v, &mut line[pos]);
                pos = if pos + 1 == len { 0 } else { pos + 1 };
            }
        }
        self.pos = (self.pos + frames) % len;
    }

    fn clear(&mut self) {
        for l in self.lines.iter_mut() {
            l.fill(0.0);
        }
    }
}

/// The plugin.
pub struct FerroFx {
    params: Arc<FerroParams>,
    telemetry: Arc<Telemetry>,
    eq: Option<Equaliser>,
    audio_side: AudioSide,
    config: Option<AudioConfig>,
    /// Dry copy for the bypass crossfade: one buffer per channel of `max_block_frames`.
    dry: Vec<Vec<f32>>,
    /// 1.0 = fully processed, 0.0 = fully bypassed.
    wet_mix: f32,
    wet_step: f32,
    /// The GPU path's stream (re-blocking, routing), when it is on.
    realtime: Option<RealtimeOffload>,
    /// The dry signal's delay on the GPU path.
    dry_delay: Option<DelayLine>,
    /// Whether a GPU adapter was found (`None`: never looked, the CPU backend so far).
    gpu_found: Option<bool>,
    /// Latency last reported to the host.
    reported_latency: u32,
}

impl Default for FerroFx {
    fn default() -> FerroFx {
        let params = Arc::new(FerroParams::default());
        let audio_side = params.chain.take_audio_side().expect("a new parameter set has its audio side");
        FerroFx {
            params,
            telemetry: Arc::new(Telemetry::default()),
            eq: None,
            audio_side,
            config: None,
            dry: Vec::new(),
            wet_mix: 1.0,
            wet_step: 1.0,
            realtime: None,
            dry_delay: None,
            gpu_found: None,
            reported_latency: 0,
        }
    }
}

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

impl FerroFx {
    fn reset_filters(&mut self) {
        if let Some(eq) = self.eq.as_mut() {
            eq.reset();
        }
        if let Some(engine) = self.audio_side.engine() {
            engine.reset();
        }
        if let Some(rt) = self.realtime.as_mut() {
            rt.reset(self.audio_side.offload());
        }
        if let Some(d) = self.dry_delay.as_mut() {
            d.clear();
        }
    }

    /// The latency the current settings ask for: the host's largest block when the GPU
    /// path should run (a GPU or Auto backend, host blocks of at least the GPU minimum,
    /// chain stages to offload, and no failed search for an adapter), else 0.
    fn wanted_latency(&self, max_block: usize, has_stages: bool) -> u32 {
        let wants = gpu::policy(self.params.backend.value()).is_some()
            && max_block >= self.params.gpu_min_block.value().max(1) as usize
            && has_stages
            && self.gpu_found != Some(false);
        if wants {
            max_block as u32
        } else {
            0
        }
    }

    /// Filters one sub-block (≤ `max_block_frames`) in place.
    fn process_block(&mut self, buffers: &mut [&mut [f32]], start: usize, frames: usize, bypass: bool) {
        let channels = buffers.len().min(self.dry.len());
        for b in buffers.iter_mut() {
            ferrofx::engine::sanitize_input(&mut b[start..start + frames]);
        }
        let target = if bypass { 0.0 } else { 1.0 };
        let fading = self.wet_mix != target;
        // The filters keep running while bypassed (their output unused), so un-bypassing
        // crossfades to a settled filter instead of one starting from silence.
        let bypassed = bypass && !fading;
        // On the GPU path the dry signal runs through a delay of the path's latency,
        // which must see every block.
        if fading || bypassed || self.dry_delay.is_some() {
            for (d, b) in self.dry.iter_mut().zip(buffers.iter()) {
                d[..frames].copy_from_slice(&b[start..start + frames]);
            }
            if let Some(delay) = self.dry_delay.as_mut() {
                delay.process(&mut self.dry, frames);
            }
        }
        // Sub-slices without allocating: at most 64 channels (the widest layout is 8).
        const MAX: usize = 64;
        let mut refs: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
        let used = buffers.len().min(MAX);
        for (r, b) in refs.iter_mut().zip(buffers.iter_mut()) {
            *r = &mut b[start..start + frames];
        }
        let refs = &mut refs[..used];
        if let Some(eq) = self.eq.as_mut() {
            eq.process(refs);
        }
        // On the GPU path the stream delays (and, with an offload, filters) the signal; a
        // chain the offload does not take runs on the CPU engine after the delay, so the
        // stream always holds unfiltered input and a chain change never filters a block
        // twice.
        if let Some(rt) = self.realtime.as_mut() {
            rt.process(self.audio_side.offload(), refs);
        }
        if let Some(engine) = self.audio_side.engine() {
            engine.process(refs);
        }
        // Output gain (smoothed per sample), then the bypass crossfade.
        let mut non_finite = false;
        for i in 0..frames {
            let gain = util::db_to_gain(self.params.output_gain_db.smoothed.next());
            let wet = self.wet_mix;
            for (c, r) in refs.iter_mut().enumerate() {
                let y = r[i] * gain;
                non_finite |= !y.is_finite();
                let out = if fading && c < channels { wet * y + (1.0 - wet) * self.dry[c][i] } else { y };
                // No subnormal leaves the plugin (hosts and validators count them as
                // faults; a decaying tail can produce them after the output gain).
                r[i] = if out.abs() < f32::MIN_POSITIVE { 0.0 } else { out };
            }
            if fading {
                self.wet_mix = if target > self.wet_mix {
                    (self.wet_mix + self.wet_step).min(1.0)
                } else {
                    (self.wet_mix - self.wet_step).max(0.0)
                };
            }
        }
        if non_finite {
            // Cannot happen with finite input and stable filters; if it does, the block
            // is silenced and the state cleared so the next block recovers.
            for r in refs.iter_mut() {
                r.fill(0.0);
            }
            self.reset_filters();
        }
        if bypassed {
            for (r, d) in refs.iter_mut().zip(&self.dry) {
                r.copy_from_slice(&d[..frames]);
            }
        }
    }
}

impl Plugin for FerroFx {
    const NAME: &'static str = "FerroFX";
    const VENDOR: &'static str = "FerroFX";
    const URL: &'static str = "https://example.invalid/ferrofx";
    const EMAIL: &'static str = "ferrofx@example.invalid";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Stereo first (the default), then mono, quad, 5.1 and 7.1-sized layouts.
    const AUDIO_IO_LAYOUTS: &'static [AudioIOLayout] =
        &[io_layout(2), io_layout(1), io_layout(4), io_layout(6), io_layout(8)];

    type Editor = nice_plug_egui::EguiEditor<editor::EditorApp>;
    type SysExMessage = ();
    type BackgroundTask = ();

    fn params(&self) -> Arc<dyn Params> {
        self.params.clone()
    }

    fn editor(&mut self, _async_executor: AsyncExecutor<Self>) -> Option<Self::Editor> {
        editor::create(self.params.clone(), self.telemetry.clone())
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
        // samples late) or the CPU path (no latency); see `gpu.rs`.
        let has_stages = self.params.chain.chain().stages.iter().any(|s| s.enabled);
        let policy = gpu::policy(self.params.backend.value());
        let min_block = self.params.gpu_min_block.value().max(1) as usize;
        if policy.is_some() && max_block >= min_block && has_stages {
            if let Err(why) = gpu::context() {
                nice_warn!("GPU backend chosen, running on the CPU: {why}");
                self.params.chain.set_gpu_status(format!("CPU: {why}"));
                self.gpu_found = Some(false);
            } else {
                self.gpu_found = Some(true);
            }
        }
        let latency = self.wanted_latency(max_block, has_stages);
        let offload = latency > 0;
        if !offload {
            let text = match policy {
                None => String::from("CPU backend"),
                Some(_) if max_block < min_block => {
                    format!("CPU: host blocks of at most {max_block} frames are below the GPU minimum of {min_block}")
                }
                Some(_) if !has_stages => String::from("CPU: no chain stages to offload (the bands always run on the CPU)"),
                Some(_) => self.params.chain.gpu_status(),
            };
            self.params.chain.set_gpu_status(text);
        }
        let config = AudioConfig { sample_rate_hz: fs, channels, max_block_frames: max_block, offload };
        let mut eq = Equaliser::new(fs as f64, channels, max_block);
        for (i, band) in self.params.bands().iter().enumerate() {
            eq.set_band(i, *band);
        }
        eq.snap();
        self.eq = Some(eq);
        self.params.chain.unconfigure(&mut self.audio_side);
        self.audio_side.current = Some(self.params.chain.configure(config));
        self.config = Some(config);
        self.dry = vec![vec![0.0; max_block]; channels];
        self.realtime = policy.filter(|_| offload).map(|p| RealtimeOffload::new(channels, max_block, fs as f64, p));
        self.dry_delay = offload.then(|| DelayLine::new(channels, max_block));
        self.wet_step = 1.0 / (BYPASS_FADE_MS * 1e-3 * fs).max(1.0);
        self.wet_mix = if self.params.bypass.value() { 0.0 } else { 1.0 };
        context.set_latency_samples(latency);
        self.reported_latency = latency;
        let t = &self.telemetry;
        t.sample_rate_bits.store(fs.to_bits(), Ordering::Relaxed);
        t.channels.store(channels as u32, Ordering::Relaxed);
        t.max_block_frames.store(max_block as u32, Ordering::Relaxed);
        t.latency_samples.store(latency, Ordering::Relaxed);
        t.gpu.block_frames.store(latency, Ordering::Relaxed);
        true
    }

    fn reset(&mut self) {
        if let Some(eq) = self.eq.as_mut() {
            for (i, band) in self.params.bands().iter().enumerate() {
                eq.set_band(i, *band);
            }
            eq.snap();
        }
        self.reset_filters();
        self.wet_mix = if self.params.bypass.value() { 0.0 } else { 1.0 };
    }

    fn deactivate(&mut self) {
        if let Some(rt) = self.realtime.as_ref() {
            // Off the audio thread: what the GPU path did while active.
            let st = rt.stats();
            let lost = self.audio_side.offload().is_some_and(|o| o.worker_lost());
            nice_log!(
                "GPU path ({:?}, blocks of {}): {} blocks, {} on the GPU worker, {} on the CPU, {} late{}; last decision {:?}",
                rt.policy(),
                rt.block(),
                st.blocks,
                st.on_worker,
                st.on_cpu,
                st.late,
                if lost { ", worker lost" } else { "" },
                rt.decision()
            );
        }
        self.params.chain.unconfigure(&mut self.audio_side);
        self.config = None;
    }

    fn process(
        &mut self,
        buffer: &mut Buffer,
        _aux: &mut AuxiliaryBuffers,
        context: &mut impl ProcessContext<Self>,
    ) -> ProcessStatus {
        let Some(config) = self.config else { return ProcessStatus::Normal };
        if self.audio_side.poll(config) {
            if let Some(rt) = self.realtime.as_mut() {
                rt.clear_measurements();
            }
        }
        // A backend, minimum block or chain change that moves the GPU path on or off
        // changes the latency: the host is asked to restart the plugin (`activate` then
        // builds the other path); until then the current path keeps running.
        // GPU and Auto share the latency: switching between them takes effect at once.
        if let (Some(rt), Some(policy)) = (self.realtime.as_mut(), gpu::policy(self.params.backend.value())) {
            rt.set_policy(policy);
        }
        let wanted = self.wanted_latency(config.max_block_frames, self.audio_side.has_stages());
        if wanted != self.reported_latency {
            context.set_latency_samples(wanted);
            self.reported_latency = wanted;
        }
        if let Some(eq) = self.eq.as_mut() {
            for i in 0..BANDS {
                eq.set_band(i, self.params.bands[i].band());
            }
        }
        let bypass = self.params.bypass.value();
        let frames = buffer.samples();
        let buffers = buffer.as_slice();
        let mut start = 0;
        while start < frames {
            let n = (frames - start).min(config.max_block_frames);
            self.process_block(buffers, start, n, bypass);
            start += n;
        }
        let t = &self.telemetry;
        t.last_block_frames.store(frames as u32, Ordering::Relaxed);
        if let Some(eq) = self.eq.as_ref() {
            t.eq_sections.store(eq.sections().len() as u32, Ordering::Relaxed);
        }
        if let Some(rt) = self.realtime.as_ref() {
            t.gpu.publish(rt, self.audio_side.offload().map(|o| &*o));
        }
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
