//! The test rig: a host context that applies parameter changes and records gestures, the
//! editor in an egui_kittest harness, and an audio state on the same parameters.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use egui::{Event, Modifiers, PointerButton, Pos2};
use egui_kittest::Harness;
use ferrofx_plugin::editor::EditorApp;
use ferrofx_plugin::control::params::{FerroParams, ShapeChoice};
use ferrofx_plugin::control::chain::ChainSlot;
use ferrofx_plugin::shared::telemetry::Telemetry;
use nice_plug::context::gui::{GuiContext, GuiContextInner};
use nice_plug::context::PluginApi;
use nice_plug::params::internals::ParamPtr;
use nice_plug::plugin::PluginState;
use nice_plug::prelude::*;
use egui_kittest::kittest::Queryable;
use ferrofx::Chain;
use ferrofx_plugin::audio::state::{AudioState, LatencyPolicy};
use ferrofx_plugin::audio::taps::connect;
use ferrofx_plugin::control::chain::AudioConfig;
use ferrofx_plugin::shared::spectrum::HOP;

/// What the host saw: (kind, parameter name, normalised value) with kind `b`egin,
/// `s`et or `e`nd.
#[derive(Default)]
pub(crate) struct Host {
    pub(crate) log: Mutex<Vec<(char, String, f32)>>,
}

impl Host {
    pub(crate) fn take(&self) -> Vec<(char, String, f32)> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl GuiContextInner for Host {
    fn plugin_api(&self) -> PluginApi {
        PluginApi::Clap
    }
    unsafe fn raw_begin_set_parameter(&self, param: ParamPtr) {
        // SAFETY: the parameters outlive the test's editor (both held by the test).
        let name = unsafe { param.name() }.to_string();
        self.log.lock().unwrap().push(('b', name, 0.0));
    }
    unsafe fn raw_set_parameter_normalized(&self, param: ParamPtr, normalized: f32) {
        // SAFETY: as above; the host applies the value as a wrapper would.
        let name = unsafe {
            param._internal_set_normalized_value(normalized);
            param.name()
        }
        .to_string();
        self.log.lock().unwrap().push(('s', name, normalized));
    }
    unsafe fn raw_end_set_parameter(&self, param: ParamPtr) {
        // SAFETY: as above.
        let name = unsafe { param.name() }.to_string();
        self.log.lock().unwrap().push(('e', name, 0.0));
    }
    fn get_state(&self) -> PluginState {
        PluginState { version: String::new(), params: Default::default(), fields: Default::default() }
    }
    fn set_state(&self, _state: PluginState) {}
    fn request_restart(&self) {}
}

pub(crate) struct Rig {
    pub(crate) harness: Harness<'static, EditorApp>,
    pub(crate) params: Arc<FerroParams>,
    pub(crate) chain: ChainSlot,
    pub(crate) host: Arc<Host>,
    pub(crate) gui: GuiContext,
}

impl Rig {
    pub(crate) fn axes(&self) -> ferrofx_plugin::editor::axes::Axes {
        self.harness.state().axes().expect("the view was drawn")
    }
    /// Lets half a second pass, so that clicks before are not counted with the next ones.
    pub(crate) fn pause(&mut self) {
        self.harness.run_steps(30);
    }
    pub(crate) fn click(&mut self, pos: Pos2, button: PointerButton, modifiers: Modifiers) {
        self.pause();
        self.harness.hover_at(pos);
        for pressed in [true, false] {
            self.harness.event(Event::PointerButton { pos, button, pressed, modifiers });
        }
        self.harness.run();
    }
    pub(crate) fn double_click(&mut self, pos: Pos2) {
        self.pause();
        self.harness.hover_at(pos);
        for pressed in [true, false, true, false] {
            self.harness.event(Event::PointerButton { pos, button: PointerButton::Primary, pressed, modifiers: Modifiers::NONE });
        }
        self.harness.run();
    }
    pub(crate) fn drag(&mut self, from: Pos2, to: Pos2, modifiers: Modifiers) {
        self.harness.hover_at(from);
        self.harness.event(Event::PointerButton { pos: from, button: PointerButton::Primary, pressed: true, modifiers });
        for k in 1..=10 {
            self.harness.event_modifiers(Event::PointerMoved(from + (to - from) * (k as f32 / 10.0)), modifiers);
        }
        self.harness.event(Event::PointerButton { pos: to, button: PointerButton::Primary, pressed: false, modifiers });
        self.harness.run();
    }
    /// A Peak band at `freq_hz`/`gain_db` in band slot `i`, set as a host would.
    pub(crate) fn peak(&mut self, i: usize, freq_hz: f32, gain_db: f32) {
        let setter = self.gui.param_setter();
        let bp = &self.params.bands[i];
        setter.set_parameter(&bp.enabled, true);
        setter.set_parameter(&bp.shape, ShapeChoice::Peak);
        setter.set_parameter(&bp.freq_hz, freq_hz);
        setter.set_parameter(&bp.gain_db, gain_db);
        self.harness.run();
        self.host.take();
    }
}

impl Rig {
    /// Opens the "Add stage" menu and picks `item`.
    pub(crate) fn add_stage(&mut self, item: &str) {
        self.pause();
        self.open_drawer(ferrofx_plugin::editor::Tab::Stages);
        self.harness.get_by_label("Add stage").click();
        self.harness.run();
        self.harness.get_by_label(item).click();
        self.harness.run();
        self.pause();
    }
    /// Opens the drawer on `tab` (as its tab's click does).
    pub(crate) fn open_drawer(&mut self, tab: ferrofx_plugin::editor::Tab) {
        self.harness.state_mut().tab = tab;
        self.harness.state_mut().drawer = true;
        self.harness.run();
    }
    pub(crate) fn chain(&self) -> Chain {
        self.params.chain.chain()
    }
}

pub(crate) fn rig() -> Rig {
    rig_with(Arc::new(FerroParams::default()), Arc::new(Telemetry::default()))
}

pub(crate) fn rig_with(params: Arc<FerroParams>, telemetry: Arc<Telemetry>) -> Rig {
    rig_rendered(params, telemetry, false)
}

/// With `wgpu`, the harness can render the editor to an image. The harness checks after
/// every frame that each input widget has an accessible name (a screen reader's, and the
/// tests' way of finding it).
pub(crate) fn rig_rendered(params: Arc<FerroParams>, telemetry: Arc<Telemetry>, wgpu: bool) -> Rig {
    rig_built(params, None, telemetry, wgpu, true)
}

/// A rig whose harness does not check accessible names after each frame: for tests that
/// open the file dialog (egui_file's path and file-name fields have no names; it is a
/// third-party widget). Such a test calls `check_accessibility` itself once it is closed.
pub(crate) fn rig_with_file_dialog() -> Rig {
    rig_built(Arc::new(FerroParams::default()), None, Arc::new(Telemetry::default()), false, false)
}

/// An editor rig; `chain` is the chain slot of an audio state on the same parameters
/// (one slot builds a chain file), else the editor gets a slot of its own.
pub(crate) fn rig_built(params: Arc<FerroParams>, chain: Option<ChainSlot>, telemetry: Arc<Telemetry>, wgpu: bool, a11y_check: bool) -> Rig {
    let size = if wgpu { [1000.0, 720.0] } else { [920.0, 1000.0] };
    rig_sized(params, chain, telemetry, wgpu, a11y_check, size)
}

/// [`rig_built`] in a window of `size` points.
pub(crate) fn rig_sized(params: Arc<FerroParams>, chain: Option<ChainSlot>, telemetry: Arc<Telemetry>, wgpu: bool, a11y_check: bool, size: [f32; 2]) -> Rig {
    telemetry.sample_rate_bits.store(48_000f32.to_bits(), Ordering::Relaxed);
    telemetry.channels.store(2, Ordering::Relaxed);
    telemetry.max_block_frames.store(512, Ordering::Relaxed);
    let host = Arc::new(Host::default());
    let gui = GuiContext::new(host.clone());
    let chain = chain.unwrap_or_else(|| ChainSlot::new(&params.chain));
    let app_chain = chain.clone();
    let mut app = EditorApp::new(params.clone(), chain, telemetry);
    app.attach(gui.clone());
    let mut builder = Harness::builder();
    if wgpu {
        builder = builder.wgpu();
    }
    let mut harness = builder
        .with_size(size)
        .with_step_dt(1.0 / 60.0)
        .with_accessibility_check(a11y_check)
        .build_ui_state(|ui, app: &mut EditorApp| app.show(ui), app);
    harness.run();
    Rig { harness, params, chain: app_chain, host, gui }
}

pub(crate) fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

/// The plugin's audio-thread state at 48 kHz stereo, and an editor on the same
/// parameters and telemetry.
pub(crate) fn audio_rig() -> (Rig, AudioState, Arc<Telemetry>) {
    let params = Arc::new(FerroParams::default());
    let (telemetry, taps) = connect();
    let telemetry = Arc::new(telemetry);
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    let config = AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false };
    audio.activate(&params, config, None, None, 0, LatencyPolicy::Restart);
    (rig_built(params, Some(audio.chain().clone()), telemetry.clone(), false, true), audio, telemetry)
}

/// `seconds` of a sine at `freq_hz` through the plugin, the editor drawing between
/// windows as it would.
pub(crate) fn play_sine(r: &mut Rig, audio: &mut AudioState, telemetry: &Telemetry, freq_hz: f64, amplitude: f32, seconds: f64) {
    let frames = (48_000.0 * seconds) as usize;
    let mut n = 0;
    while n < frames {
        let mut l: Vec<f32> = (n..n + 512).map(|i| amplitude * (2.0 * std::f64::consts::PI * freq_hz * i as f64 / 48_000.0).sin() as f32).collect();
        let mut rr = l.clone();
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(&r.params, telemetry, &mut bufs, None, 512);
        n += 512;
        if n % HOP < 512 {
            r.harness.run();
        }
    }
}

/// Another plugin's audio side at 48 kHz stereo, no editor: the reference the solo and
/// bypass tests compare with.
pub(crate) fn plain_audio() -> (Arc<FerroParams>, AudioState, Telemetry) {
    let params = Arc::new(FerroParams::default());
    let (telemetry, taps) = connect();
    let mut audio = AudioState::new(ChainSlot::new(&params.chain), taps);
    audio.activate(&params, AudioConfig { sample_rate_hz: 48_000.0, channels: 2, max_block_frames: 512, offload: false }, None, None, 0, LatencyPolicy::Restart);
    (params, audio, telemetry)
}

/// `x` on both channels through `audio` in blocks of 512; the left channel's output.
pub(crate) fn run_left(audio: &mut AudioState, params: &FerroParams, telemetry: &Telemetry, x: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for block in x.chunks(512) {
        let (mut l, mut rr) = (block.to_vec(), block.to_vec());
        let mut bufs: [&mut [f32]; 2] = [&mut l, &mut rr];
        audio.process(params, telemetry, &mut bufs, None, block.len());
        out.extend_from_slice(&l);
    }
    out
}

pub(crate) fn band_values(p: &FerroParams) -> Vec<f32> {
    p.bands
        .iter()
        .flat_map(|b| [b.enabled.unmodulated_normalized_value(), b.shape.unmodulated_normalized_value(), b.freq_hz.unmodulated_normalized_value(), b.gain_db.unmodulated_normalized_value(), b.q.unmodulated_normalized_value()])
        .chain([p.output_gain_db.unmodulated_normalized_value()])
        .collect()
}
