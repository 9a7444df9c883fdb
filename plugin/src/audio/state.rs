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

use std::sync::atomic::Ordering;

use nice_plug::prelude::*;

use crate::audio::autogain::AutoGain;
use crate::audio::chain::AudioSide;
use crate::audio::delay::DelayLine;
use crate::audio::dynamics::Dynamics;
use crate::audio::linear::LinearAudio;
use crate::audio::output::{self, Measured, Stage};
use crate::audio::phase_switch::{stage_band, PhaseSwitch, MAX_LINEAR_LATENCY};
use crate::audio::routing::RoutedEqualiser;
use crate::audio::solo::Solo;
use crate::audio::taps::AudioTaps;
use crate::control::chain::{AudioConfig, ChainSlot};
use crate::control::params::{AutoGainChoice, FerroParams};
use crate::shared::bands::{Band, BANDS};
use crate::shared::settings::{DynamicSettings, Weighting};
use crate::shared::telemetry::Telemetry;
use ferrofx::run::realtime::{Policy, RealtimeOffload};

/// Bypass crossfade time.
pub const BYPASS_FADE_MS: f32 = 10.0;

/// How a latency change may reach the host while the plugin is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyPolicy {
    /// The latency may change between blocks (VST3's `restartComponent(kLatencyChanged)`,
    /// the standalone app): the phase mode switches inside processing.
    InProcess,
    /// Only during `activate` (CLAP): a change asks the host for a restart.
    Restart,
    /// One latency for the whole activation (a latency reserve, on any format): the
    /// phase mode switches inside processing within it, every mode delayed to it; a
    /// mode that needs more asks the host for a restart.
    Fixed(u32),
}

/// What a block asks of the host about latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyNews {
    /// The latency of the audio from this block on, where it changed.
    pub report: Option<u32>,
    /// The settings want a latency this activation cannot switch to: ask for a restart
    /// (once per wanted value).
    pub restart: bool,
}

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
        let linear_running = linear.as_ref().is_some_and(|l| l.taps().is_some());
        for (i, band) in params.bands().iter().enumerate() {
            eq.set_band(i, stage_band(band, linear_running, channels == 2));
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

    /// Whether a linear-phase FIR runs now.
    fn linear_running(&self) -> bool {
        self.linear.as_ref().is_some_and(|l| l.taps().is_some())
    }

    /// The host's reset: the equaliser snaps to the current bands, filters are cleared.
    pub fn reset(&mut self, params: &FerroParams) {
        self.band_cache_linear = None;
        if let (Some(sw), Some(l)) = (self.switch.as_mut(), self.linear.as_mut()) {
            sw.abort(l);
        }
        let (linear, stereo) = (self.linear_running(), self.config.is_some_and(|c| c.channels == 2));
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
        let linear = self.linear_running();
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
            let to_linear = sw.target().flatten().is_some();
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

    /// Follows the latency the settings ask for (once per host block, before its audio):
    /// drives a phase switch (`LatencyPolicy::InProcess`; the new latency is reported at
    /// the block its cross-fade starts), and asks for a restart, once, for a change this
    /// activation cannot make (the GPU path; any change under `LatencyPolicy::Restart`).
    fn follow_latency(&mut self, params: &FerroParams, config: AudioConfig) -> LatencyNews {
        let mut news = LatencyNews::default();
        let wanted_taps = params.phase.value().taps();
        let stereo = config.channels == 2;
        let gpu = self.gpu_latency;
        match (self.switch.as_mut(), self.linear.as_mut()) {
            (Some(sw), Some(linear)) => {
                // A mode beyond a latency reserve is not switched to (it waits for a
                // restart, below): the running mode stays.
                let target = if sw.reachable(wanted_taps) { wanted_taps } else { linear.taps() };
                sw.follow(target, linear.taps(), &self.band_cache, stereo, linear);
                let fir = linear.poll(sw.wanted_fir());
                sw.offer(fir, linear);
                let fixed = sw.fixed().is_some();
                if let (Some(linear_latency), false) = (sw.begin_fade(linear.latency()), fixed) {
                    let total = gpu + linear_latency as u32;
                    if let Some(d) = self.dry_delay.as_mut() {
                        d.set_len(total as usize);
                    }
                    self.reported_latency = total;
                    news.report = Some(total);
                }
            }
            (None, Some(linear)) => {
                // (Only redesigns of the running length are taken.)
                let _ = linear.poll(None);
            }
            _ => {}
        }
        let wanted_gpu = self.wanted_gpu_latency(params, config.max_block_frames, self.side.has_stages());
        // What the phase mode adds that this activation cannot switch to by itself.
        let wanted_mode = wanted_taps.map_or(0, |t| (t / 2) as u32);
        let reserve_now = params.latency_reserve.value().latency_samples() as u32;
        let reserve_then = if let LatencyPolicy::Fixed(l) = self.latency_policy { l } else { 0 };
        let phase_part = match self.latency_policy {
            // A new latency reserve takes effect at the next activation.
            _ if reserve_now != reserve_then => reserve_now.max(wanted_mode),
            LatencyPolicy::InProcess => self.reported_latency - gpu,
            LatencyPolicy::Restart => wanted_mode,
            // Within the reserve the latency stays; beyond it the mode's is wanted.
            LatencyPolicy::Fixed(_) => (self.reported_latency - gpu).max(wanted_mode),
        };
        let wanted = wanted_gpu + phase_part;
        if wanted == self.reported_latency {
            self.restart_asked = None;
        } else if self.restart_asked != Some(wanted) {
            self.restart_asked = Some(wanted);
            news.restart = true;
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
}

impl AudioState {
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

    /// The GPU path's latency the current settings ask for: the host's largest block
    /// when the GPU path should run (a GPU or Auto backend, host blocks of at least the
    /// GPU minimum, chain stages to offload, and no failed search for an adapter), else 0.
    pub fn wanted_gpu_latency(&self, params: &FerroParams, max_block: usize, has_stages: bool) -> u32 {
        let wants = params.backend.value().policy().is_some()
            && max_block >= params.gpu_min_block.value().max(1) as usize
            && has_stages
            && self.gpu_found != Some(false);
        if wants {
            max_block as u32
        } else {
            0
        }
    }

    /// Filters one sub-block (≤ `max_block_frames`) in place.
    #[allow(clippy::too_many_arguments)]
    fn process_block(
        &mut self,
        params: &FerroParams,
        telemetry: &Telemetry,
        buffers: &mut [&mut [f32]],
        sidechain: Option<&mut [&mut [f32]]>,
        start: usize,
        frames: usize,
        bypass: bool,
        analyse: bool,
    ) {
        let channels = buffers.len().min(self.dry.len());
        let target = if bypass { 0.0 } else { 1.0 };
        let fading = self.wet_mix != target;
        // The filters keep running while bypassed (their output unused), so un-bypassing
        // crossfades to a settled filter instead of one starting from silence.
        let bypassed = bypass && !fading;
        // A soloed band listens to the dry signal (delayed like the output on the GPU path).
        let solo_band = params.solo.get();
        let soloing = self.solo.as_ref().is_some_and(|s| s.active(solo_band));
        let delta_target = if params.delta.value() { 1.0 } else { 0.0 };
        let delta = self.delta_mix != 0.0 || delta_target != 0.0;
        // The output gain and auto-gain, settled or not (no stage below changes them).
        let auto_on = params.auto_gain.value() != AutoGainChoice::Off;
        // A settled output gain is converted once per block, not per sample.
        let out_smoother = &params.output_gain_db.smoothed;
        let settled_gain = (!out_smoother.is_smoothing()).then(|| util::db_to_gain(out_smoother.next()));
        let auto_settled = self.autogain.as_ref().map_or(Some(0.0), |a| a.settled_db(auto_on));
        // The usual block (no fade, no delta, gains settled): one pass per channel
        // (`output.rs`). Otherwise the general loop below, per sample.
        let fast = match (settled_gain, auto_settled) {
            (Some(g), Some(auto_db)) if !fading && !delta => Some(if auto_db == 0.0 { g } else { g * util::db_to_gain(auto_db as f32) }),
            _ => None,
        };
        // After that pass only bypass and solo change the signal: without them the pass
        // measures the output for the meters too.
        let metered = fast.is_some() && !bypassed && !soloing;
        let dynamic = self.dynamics.as_ref().is_some_and(|d| self.any_dynamic_band || d.any_change());
        // Nothing reads the signal before that pass (every band idle, no chain, no FIR, no
        // GPU path, no dry copy, no analyser): then it sanitises the input as well, else
        // the input is sanitised here.
        let switching = self.switch.as_ref().is_some_and(|sw| sw.running());
        let delaying = switching || self.dry_delay.as_ref().is_some_and(|d| !d.is_empty());
        // The loudness meters read the input too (while the editor shows them).
        let metering = telemetry.loudness.is_wanted();
        let untouched = metered
            && !analyse
            && !metering
            && !dynamic
            && !delaying
            && !self.linear_running()
            && !switching
            && self.realtime.is_none()
            && self.side.engine().is_none()
            && self.eq.as_mut().is_none_or(|eq| eq.idle());
        if !untouched {
            for b in buffers.iter_mut() {
                ferrofx::engine::sanitize_input(&mut b[start..start + frames]);
            }
        }
        // With latency the dry signal runs through a delay as long, which must see every
        // block (also while a phase switch prepares a longer one).
        if fading || bypassed || soloing || delta || delaying {
            for (d, b) in self.dry.iter_mut().zip(buffers.iter()) {
                d[..frames].copy_from_slice(&b[start..start + frames]);
            }
            if let Some(delay) = self.dry_delay.as_mut() {
                delay.process(&mut self.dry, frames);
            }
        }
        // Sub-slices without allocating, as many as the widest layout has channels (a list
        // of 64 cost a kilobyte of stores per block).
        const MAX: usize = crate::shared::MAX_CHANNELS;
        let mut refs: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
        let used = buffers.len().min(MAX);
        for (r, b) in refs.iter_mut().zip(buffers.iter_mut()) {
            *r = &mut b[start..start + frames];
        }
        let refs = &mut refs[..used];
        if analyse {
            self.taps.spectrum.pre(refs, frames);
        }
        let fs_hz = self.config.map_or(0.0, |c| c.sample_rate_hz);
        if metering {
            self.taps.loudness.pre(&telemetry.loudness, refs, frames, fs_hz);
        }
        // A phase switch's new band stage sees the same input (while one runs; `switch`
        // is only that switch, `pad` the switch state either way, for the latency reserve).
        let mut pad = self.switch.as_mut();
        let running = pad.as_ref().is_some_and(|sw| sw.running());
        let mut switch = pad.as_deref_mut().filter(|_| running);
        if let Some(sw) = switch.as_mut() {
            sw.capture(refs, frames);
        }
        // (An idle equaliser, `untouched` found, has nothing to do.)
        if let Some(eq) = self.eq.as_mut().filter(|_| !untouched) {
            match self.dynamics.as_mut() {
                Some(dynamics) if dynamic => {
                    // Dynamic bands: the detectors see each piece of input before the
                    // equaliser does, and the gain changes reach it every re-design
                    // interval.
                    let mut done = 0;
                    while done < frames {
                        let n = (frames - done).min(crate::audio::equaliser::REDESIGN_INTERVAL);
                        let mut piece: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
                        for (p, r) in piece.iter_mut().zip(refs.iter_mut()) {
                            *p = &mut r[done..done + n];
                        }
                        let piece = &mut piece[..used];
                        // The sidechain's matching piece, where there is one.
                        let mut side: [&[f32]; MAX] = [&[][..]; MAX];
                        let sides = sidechain.as_deref().map_or(0, |sc| {
                            for (s, c) in side.iter_mut().zip(sc.iter()) {
                                *s = &c[start + done..start + done + n];
                            }
                            sc.len().min(MAX)
                        });
                        dynamics.process(piece, (sides > 0).then(|| &side[..sides]), &self.band_cache, &self.dyn_cache);
                        for i in 0..BANDS {
                            eq.set_dynamic_gain(i, dynamics.delta_db(i));
                        }
                        eq.process(piece);
                        if let Some(sw) = switch.as_mut() {
                            let (next_eq, mut next) = sw.stage(done + n);
                            for i in 0..BANDS {
                                next_eq.set_dynamic_gain(i, dynamics.delta_db(i));
                            }
                            let mut piece: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
                            // (`next` lists MAX slices, empty past the channels.)
                            for (p, r) in piece.iter_mut().zip(next.iter_mut().take(used)) {
                                *p = &mut r[done..done + n];
                            }
                            next_eq.process(&mut piece[..used]);
                        }
                        done += n;
                    }
                    // Each band's gain change now, for the editor's curve.
                    for (i, bits) in telemetry.dynamic_gain_db_bits.iter().enumerate() {
                        bits.store((dynamics.delta_db(i) as f32).to_bits(), Ordering::Relaxed);
                    }
                    self.dynamic_published = true;
                }
                _ => {
                    if std::mem::take(&mut self.dynamic_published) {
                        for bits in &telemetry.dynamic_gain_db_bits {
                            bits.store(0, Ordering::Relaxed);
                        }
                    }
                    eq.process(refs);
                    if let Some(sw) = switch.as_mut() {
                        let (next_eq, mut next) = sw.stage(frames);
                        next_eq.process(&mut next[..used]);
                    }
                }
            }
        }
        if let Some(linear) = self.linear.as_mut() {
            linear.process(refs);
        }
        // With a latency reserve the running stage's output is delayed to the fixed
        // latency, before a switch's cross-fade joins it.
        let finished = pad.and_then(|sw| {
            sw.pad_running(refs, frames);
            if running {
                sw.finish_block(refs, frames)
            } else {
                None
            }
        });
        if let Some(finished) = finished {
            // The new band stage is the running one from here on.
            if let (Some(sw), Some(eq), Some(linear)) = (self.switch.as_mut(), self.eq.as_mut(), self.linear.as_mut()) {
                std::mem::swap(eq, &mut sw.eq);
                linear.install(finished.fir);
            }
            self.band_cache_linear = Some(self.linear_running());
        }
        // On the GPU path the stream delays (and, with an offload, filters) the signal; a
        // chain the offload does not take runs on the CPU engine after the delay, so the
        // stream always holds unfiltered input and a chain change never filters a block
        // twice.
        if let Some(rt) = self.realtime.as_mut() {
            rt.process(self.side.offload(), refs);
        }
        if let Some(engine) = self.side.engine() {
            engine.process(refs);
        }
        // Output gain and auto-gain (smoothed per sample), the delta listen mix, then the
        // bypass crossfade.
        let mut non_finite = false;
        let delta_step = self.wet_step;
        let mut measured = [Measured::default(); MAX];
        if let Some(gain) = fast {
            let stage = Stage { sanitize: untouched, gain };
            for (r, m) in refs.iter_mut().zip(measured.iter_mut()) {
                *m = output::apply_and_measure(r, stage);
                non_finite |= m.non_finite;
            }
        }
        if fast.is_none() {
            for i in 0..frames {
                let out_gain = settled_gain.unwrap_or_else(|| util::db_to_gain(out_smoother.next()));
                let auto_db = self.autogain.as_mut().map_or(0.0, |a| a.next_db(auto_on));
                let gain = if auto_db == 0.0 { out_gain } else { out_gain * util::db_to_gain(auto_db as f32) };
                let wet = self.wet_mix;
                let dm = self.delta_mix;
                for (c, r) in refs.iter_mut().enumerate() {
                    let mut y = r[i] * gain;
                    if delta && c < channels {
                        // What the bands and chain changed, at the output gain (auto-gain
                        // is not part of it).
                        let d = (r[i] - self.dry[c][i]) * out_gain;
                        y = if dm == 1.0 { d } else { dm * d + (1.0 - dm) * y };
                    }
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
                if dm != delta_target {
                    self.delta_mix = if delta_target > dm { (dm + delta_step).min(1.0) } else { (dm - delta_step).max(0.0) };
                }
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
        if let (true, Some(solo)) = (soloing, self.solo.as_mut()) {
            // Follows the band asked for, or (fading out) the one last listened to.
            let band = params.bands[solo.follows(solo_band).unwrap_or(0).min(BANDS - 1)].band();
            solo.process(solo_band, band.freq_hz, band.q, f64::from(fs_hz), &self.dry, refs, frames);
        }
        // (A silenced block is measured again: the pass measured what it silenced.)
        let clipped = refs.iter().zip(&telemetry.meters).zip(&measured).fold(false, |c, ((r, meter), m)| {
            let peak = if metered && !non_finite { meter.record(m.peak, m.sum_squares, r.len()) } else { output::meter(meter, r) };
            peak >= 1.0 || c
        });
        if clipped {
            telemetry.clipped.store(true, Ordering::Relaxed);
        }
        if analyse {
            self.taps.spectrum.post(refs, frames, fs_hz);
        }
        self.taps.loudness.post(refs, frames, fs_hz);
    }
}
