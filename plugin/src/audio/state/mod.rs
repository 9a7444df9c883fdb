//! The audio-thread state and its per-block work: the equaliser, the chain stages (the
//! audio side of the chain slot: engine and offload), the GPU path's stream and the dry
//! delay, the bypass crossfade and the latency last reported. The only owner of that
//! state; the `Plugin` impl in `lib.rs` calls in here.
//!
//! Realtime rules: `process`, `reset_filters` and `wanted_gpu_latency` never allocate,
//! lock, log or panic; everything they use is allocated in `activate`.
//!
//! Latency: the latency the host is told is at every moment the latency of the audio
//! produced. A phase-mode change switches inside processing where the plugin format
//! lets the latency change while active (VST3, the standalone app): the new band stage
//! is prepared beside the running one and the latency reported at the block where the
//! output cross-fades to it (`phase_switch.rs`). CLAP allows a latency change only during
//! `activate`, so there (and for the GPU path, on every format) the plugin asks the host
//! to restart it and keeps producing audio at the latency it reported until then, unless
//! a latency reserve is set: then the latency is fixed for the activation and the phase
//! mode switches within it inside processing, on every format (`LatencyPolicy::Fixed`).
//!
//! Code map: this file holds the state, its set-up (`activate`, `reset`, `deactivate`)
//! and the host block's frame (`process`: sub-blocks, what the editor is told);
//! `latency.rs` the latency policy and what a block tells the host about latency;
//! `block.rs` one sub-block's signal path (input, bands, phase switch, chain stages,
//! output stage, meters).

mod block;
mod latency;

pub use latency::{LatencyNews, LatencyPolicy};

use std::sync::atomic::Ordering;

use nice_plug::prelude::*;

use crate::audio::autogain::AutoGain;
use crate::audio::chain::AudioSide;
use crate::audio::delay::DelayLine;
use crate::audio::dynamics::Dynamics;
use crate::audio::linear::LinearAudio;
use crate::audio::phase_switch::{stage_band, PhaseSwitch, MAX_LINEAR_LATENCY};
use crate::audio::routing::RoutedEqualiser;
use crate::audio::solo::Solo;
use crate::audio::taps::AudioTaps;
use crate::control::chain::{AudioConfig, ChainSlot};
use crate::control::params::FerroParams;
use crate::shared::bands::{Band, BANDS};
use crate::shared::settings::{DynamicSettings, Weighting};
use crate::shared::telemetry::Telemetry;
use ferrofx::run::realtime::{Policy, RealtimeOffload};

/// Bypass crossfade time.
pub const BYPASS_FADE_MS: f32 = 10.0;

/// The audio-thread state (fields set up in `activate`).
pub struct AudioState {
    eq: Option<RoutedEqualiser>,
    /// The band settings as last read from the parameters (rebuilt when
    /// `FerroParams::bands_changed` says so), and the phase mode they were set for
    /// (`None`: read them again, e.g. after activation).
    band_cache: [Band; BANDS],
    dyn_cache: [DynamicSettings; BANDS],
    band_cache_linear: Option<bool>,
    /// Whether any cached band is dynamic and on.
    any_dynamic_band: bool,
    /// The editor was last told of dynamic gain changes (zeros are due when they stop).
    dynamic_published: bool,
    /// The chain stages' builder (off the audio thread: `activate`, `deactivate`) and
    /// the audio end of its hand-over.
    chain: ChainSlot,
    side: AudioSide,
    config: Option<AudioConfig>,
    /// Dry copy for the bypass crossfade: one buffer per channel of `max_block_frames`.
    dry: Vec<Vec<f32>>,
    /// 1.0 = fully processed, 0.0 = fully bypassed.
    wet_mix: f32,
    wet_step: f32,
    /// The GPU path's stream (re-blocking, routing), when it is on.
    realtime: Option<RealtimeOffload>,
    /// The dry signal's delay (bypass, delta, solo), as long as the latency.
    dry_delay: Option<DelayLine>,
    /// Whether a GPU adapter was found (`None`: never looked, the CPU backend so far).
    pub gpu_found: Option<bool>,
    /// Latency last reported to the host: the latency of the audio produced.
    reported_latency: u32,
    /// The GPU path's share of it (fixed per activation).
    gpu_latency: u32,
    /// How latency changes reach the host on this plugin format.
    latency_policy: LatencyPolicy,
    /// The latency a restart was last asked for (so it is asked once).
    restart_asked: Option<u32>,
    /// A phase-mode change under way (`LatencyPolicy::InProcess` only).
    switch: Option<PhaseSwitch>,
    /// The analyser's rings and the processing-time ring (editor telemetry).
    taps: AudioTaps,
    /// Band solo (its input is the dry copy).
    solo: Option<Solo>,
    /// Loudness-keeping output gain.
    autogain: Option<AutoGain>,
    /// Dynamic EQ detectors (see `dynamics.rs`).
    dynamics: Option<Dynamics>,
    /// Linear phase: the bands' FIR (see `linear.rs`).
    linear: Option<LinearAudio>,
    /// Delta listen: 1.0 = the difference only, 0.0 = the normal output (cross-faded
    /// like bypass).
    delta_mix: f32,
}

impl AudioState {
    /// The audio state of a plugin whose chain stages `chain` builds (it takes the
    /// slot's audio end: one state per slot). Allocates nothing much; `activate` does.
    pub fn new(chain: ChainSlot, taps: AudioTaps) -> AudioState {
        let side = AudioSide::new(chain.take_audio_end().expect("a chain slot has one audio end, taken once"));
        AudioState {
            eq: None,
            band_cache: [Band::default(); BANDS],
            dyn_cache: [DynamicSettings::default(); BANDS],
            band_cache_linear: None,
            any_dynamic_band: false,
            dynamic_published: false,
            chain,
            side,
            config: None,
            dry: Vec::new(),
            wet_mix: 1.0,
            wet_step: 1.0,
            realtime: None,
            dry_delay: None,
            gpu_found: None,
            reported_latency: 0,
            gpu_latency: 0,
            latency_policy: LatencyPolicy::Restart,
            restart_asked: None,
            switch: None,
            taps,
            solo: None,
            autogain: None,
            dynamics: None,
            linear: None,
            delta_mix: 0.0,
        }
    }

    /// Builds everything the audio thread will use for `config` (allocates; `activate`
    /// only): the equaliser at the current bands, the chain stages, the GPU path's stream
    /// when `gpu_policy` is given, the dry delay, the phase switch (`policy` in process),
    /// the bypass state. Returns the latency to tell the host: `gpu_latency` plus the
    /// linear-phase FIR's.
    pub fn activate(
        &mut self,
        params: &FerroParams,
        config: AudioConfig,
        gpu_policy: Option<Policy>,
        linear: Option<LinearAudio>,
        gpu_latency: u32,
        policy: LatencyPolicy,
    ) -> u32 {
        let mode_latency = linear.as_ref().map_or(0, |l| l.latency() as u32);
        let latency = gpu_latency + if let LatencyPolicy::Fixed(l) = policy { l.max(mode_latency) } else { mode_latency };
        let (fs, channels, max_block) = (config.sample_rate_hz, config.channels, config.max_block_frames);
        // A re-activation with the same configuration keeps the equaliser's memory (hosts
        // restart plugins often; fresh allocations each time only churn the heap).
        let mut eq = match self.eq.take() {
            Some(mut eq) if eq.allocated_for(f64::from(fs), channels, max_block) => {
                eq.reset();
                eq
            }
            _ => RoutedEqualiser::new(f64::from(fs), channels, max_block),
        };
        let replaced = linear.as_ref().is_some_and(|l| l.replaces_bands());
        for (i, band) in params.bands().iter().enumerate() {
            eq.set_band(i, stage_band(band, replaced, channels == 2));
        }
        eq.snap();
        self.eq = Some(eq);
        let fixed = match policy {
            LatencyPolicy::Fixed(l) => Some(l.max(mode_latency) as usize),
            _ => None,
        };
        self.switch = match (policy, self.switch.take()) {
            (LatencyPolicy::Restart, _) => None,
            (_, Some(sw)) if sw.allocated_for(f64::from(fs), channels, max_block, fixed) => Some(sw),
            (_, _) => Some(PhaseSwitch::new(f64::from(fs), channels, max_block, fixed)),
        };
        if let Some(sw) = self.switch.as_mut() {
            sw.start_running(mode_latency as usize);
        }
        self.band_cache_linear = None;
        let mut autogain = AutoGain::new(f64::from(fs), channels == 2);
        let weighting = params.auto_gain.value().weighting();
        autogain.update_all(&params.bands(), weighting.unwrap_or(Weighting::Pink));
        autogain.snap(weighting.is_some());
        self.autogain = Some(autogain);
        self.dynamics = Some(Dynamics::new(f64::from(fs), channels));
        self.delta_mix = if params.delta.value() { 1.0 } else { 0.0 };
        self.side.clear();
        self.chain.unconfigure();
        self.side.current = Some(self.chain.configure(config));
        self.config = Some(config);
        self.dry = vec![vec![0.0; max_block]; channels];
        self.solo = Some(Solo::new(channels, fs));
        self.realtime = gpu_policy.map(|p| RealtimeOffload::new(channels, max_block, f64::from(fs), p));
        // The dry signal (bypass, delta, solo) is delayed like the processed one, also
        // after a phase switch changes the latency.
        let most = match policy {
            LatencyPolicy::InProcess => gpu_latency as usize + MAX_LINEAR_LATENCY,
            LatencyPolicy::Restart | LatencyPolicy::Fixed(_) => latency as usize,
        };
        self.dry_delay = (most > 0).then(|| {
            let mut d = DelayLine::new(channels, most);
            d.set_len(latency as usize);
            d
        });
        self.linear = linear;
        self.wet_step = 1.0 / (BYPASS_FADE_MS * 1e-3 * fs).max(1.0);
        self.wet_mix = if params.bypass.value() { 0.0 } else { 1.0 };
        self.reported_latency = latency;
        self.gpu_latency = gpu_latency;
        self.latency_policy = policy;
        self.restart_asked = None;
        latency
    }

    /// The chain slot whose stages this state runs.
    pub fn chain(&self) -> &ChainSlot {
        &self.chain
    }

    /// Whether a phase mode's FIR (linear, or analog's correction) runs now.
    fn linear_running(&self) -> bool {
        self.linear.as_ref().is_some_and(|l| l.mode().is_some())
    }

    /// Whether the running FIR carries bands in the equaliser's place (linear phase).
    pub(crate) fn fir_replaces_bands(&self) -> bool {
        self.linear.as_ref().is_some_and(|l| l.replaces_bands())
    }

    /// The host's reset: the equaliser snaps to the current bands, filters are cleared.
    pub fn reset(&mut self, params: &FerroParams) {
        self.band_cache_linear = None;
        if let (Some(sw), Some(l)) = (self.switch.as_mut(), self.linear.as_mut()) {
            sw.abort(l);
        }
        let (linear, stereo) = (self.fir_replaces_bands(), self.config.is_some_and(|c| c.channels == 2));
        if let Some(eq) = self.eq.as_mut() {
            for (i, band) in params.bands().iter().enumerate() {
                eq.set_band(i, stage_band(band, linear, stereo));
            }
            eq.snap();
        }
        if let Some(l) = self.linear.as_mut() {
            l.reset();
        }
        if let Some(ag) = self.autogain.as_mut() {
            let weighting = params.auto_gain.value().weighting();
            ag.update_all(&params.bands(), weighting.unwrap_or(Weighting::Pink));
            ag.snap(weighting.is_some());
        }
        self.reset_filters();
        self.wet_mix = if params.bypass.value() { 0.0 } else { 1.0 };
        self.delta_mix = if params.delta.value() { 1.0 } else { 0.0 };
    }

    /// Off the audio thread: logs what the GPU path did while active and hands the chain
    /// stages back to the slot.
    pub fn deactivate(&mut self) {
        if let Some(rt) = self.realtime.as_ref() {
            let st = rt.stats();
            let lost = self.side.offload().is_some_and(|o| o.worker_lost());
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
        self.side.clear();
        self.chain.unconfigure();
        self.config = None;
    }

    /// One host block in place, in pieces of at most the configured largest block.
    /// Returns what the host must hear about latency ([`LatencyNews`]: the caller tells
    /// it). No allocation, lock, log or panic.
    ///
    /// Also feeds the editor: output meters and clip flag, the analyser's rings while
    /// `telemetry.spectrum` is wanted, and how long this call took (`Instant::now`, a
    /// vDSO clock read on Linux, not a system call) while the editor drains those figures.
    pub fn process(
        &mut self,
        params: &FerroParams,
        telemetry: &Telemetry,
        buffers: &mut [&mut [f32]],
        sidechain: Option<&mut [&mut [f32]]>,
        frames: usize,
    ) -> LatencyNews {
        let Some(config) = self.config else { return LatencyNews::default() };
        // A full ring (editor closed or slow) would drop the figure: then the clock is not
        // read at all (two reads are a fifth of an idle 64-frame block's cost).
        let started = (!self.taps.process_times.is_full()).then(std::time::Instant::now);
        let changed = self.process_inner(params, telemetry, config, buffers, sidechain, frames);
        if let Some(started) = started {
            let ns = started.elapsed().as_nanos().min(u128::from(u32::MAX)) as u64;
            let _ = self.taps.process_times.push((ns << 32) | frames.min(u32::MAX as usize) as u64);
        }
        changed
    }

    fn process_inner(
        &mut self,
        params: &FerroParams,
        telemetry: &Telemetry,
        config: AudioConfig,
        buffers: &mut [&mut [f32]],
        mut sidechain: Option<&mut [&mut [f32]]>,
        frames: usize,
    ) -> LatencyNews {
        if self.side.poll(config) {
            if let Some(rt) = self.realtime.as_mut() {
                rt.clear_measurements();
            }
        }
        // GPU and Auto share the latency: switching between them takes effect at once.
        if let (Some(rt), Some(policy)) = (self.realtime.as_mut(), params.backend.value().policy()) {
            rt.set_policy(policy);
        }
        let stereo = config.channels == 2;
        // The band settings are rebuilt only when a band parameter changed (or the
        // equaliser was rebuilt, or the phase mode moved the bands to the FIR).
        // Read first, swapped only when set: the swap is a locked exchange (~20 cycles),
        // a twentieth of an idle 64-frame block, for a flag that is nearly always clear.
        let bands_moved = params.bands_changed.load(Ordering::Acquire) && params.bands_changed.swap(false, Ordering::AcqRel);
        if bands_moved || self.band_cache_linear.is_none() {
            self.band_cache = params.bands();
            self.dyn_cache = params.dynamics();
            self.any_dynamic_band = self.band_cache.iter().any(|b| b.dynamic && b.enabled);
        }
        let news = self.follow_latency(params, config);
        if news.report.is_some() {
            telemetry.latency_samples.store(self.reported_latency, Ordering::Relaxed);
        }
        telemetry.restart_pending.store(self.restart_asked.is_some(), Ordering::Relaxed);
        let linear = self.fir_replaces_bands();
        if bands_moved || self.band_cache_linear != Some(linear) {
            if let Some(eq) = self.eq.as_mut() {
                for (i, band) in self.band_cache.iter().enumerate() {
                    eq.set_band(i, stage_band(band, linear, stereo));
                }
            }
            self.band_cache_linear = Some(linear);
        }
        // A phase switch's incoming equaliser follows the bands too, as its mode runs them.
        if let Some(sw) = self.switch.as_mut().filter(|sw| bands_moved && sw.busy()) {
            let to_linear = sw.target().flatten().is_some_and(crate::control::linear::FirMode::replaces_bands);
            for (i, band) in self.band_cache.iter().enumerate() {
                sw.eq.set_band(i, stage_band(band, to_linear, stereo));
            }
        }
        if let (Some(ag), Some(w)) = (self.autogain.as_mut(), params.auto_gain.value().weighting()) {
            ag.update(&self.band_cache, w);
        }
        let bypass = params.bypass.value();
        let analyse = telemetry.spectrum.is_wanted();
        let mut start = 0;
        while start < frames {
            let n = (frames - start).min(config.max_block_frames);
            let side = sidechain.as_deref_mut();
            self.process_block(params, telemetry, buffers, side, start, n, bypass, analyse);
            start += n;
        }
        news
    }

    /// What the editor shows, after a block of `frames` (atomics only).
    pub fn publish(&mut self, telemetry: &Telemetry, frames: usize) {
        if self.config.is_none() {
            return;
        }
        telemetry.last_block_frames.store(frames as u32, Ordering::Relaxed);
        if let Some(eq) = self.eq.as_ref() {
            telemetry.eq_sections.store(eq.section_count() as u32, Ordering::Relaxed);
        }
        if let Some(ag) = self.autogain.as_ref() {
            telemetry.auto_gain_db_bits.store((ag.current_db() as f32).to_bits(), Ordering::Relaxed);
        }
        if let Some(rt) = self.realtime.as_ref() {
            telemetry.gpu.publish(rt, self.side.offload().map(|o| &*o));
        }
    }

    fn reset_filters(&mut self) {
        if let Some(d) = self.dynamics.as_mut() {
            d.reset();
        }
        if let Some(solo) = self.solo.as_mut() {
            solo.reset();
        }
        if let Some(eq) = self.eq.as_mut() {
            eq.reset();
        }
        if let Some(engine) = self.side.engine() {
            engine.reset();
        }
        if let Some(rt) = self.realtime.as_mut() {
            rt.reset(self.side.offload());
        }
        if let Some(d) = self.dry_delay.as_mut() {
            d.clear();
        }
        if let Some(sw) = self.switch.as_mut() {
            sw.clear();
        }
    }
}
