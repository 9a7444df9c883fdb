//! A small CLAP host on `clack-host` for driving the bundled plugin outside its own test
//! file (the soak): load a bundle, read its parameters, save and load state, and play a
//! session (activate, process blocks on an audio thread while the main thread serves
//! the plugin's callbacks and runs actions, deactivate).
//!
//! The host checks the CLAP rules for the plugin's calls into it, as clap-validator
//! (which CI also runs itself, `scripts/clap-validator.sh`) does: main-thread callbacks on the main thread, `latency.changed` only while the
//! plugin is being activated, a full parameter rescan only while it is deactivated.
//! What breaks them is kept in [`Shared::violations`] ([`Shared::assert_rules`]); the
//! host code marks activation with [`Shared::activating`] and [`Shared::set_active`].

use clack_extensions::audio_ports_config::PluginAudioPortsConfig;
use clack_extensions::gui::{GuiSize, HostGui, HostGuiImpl, PluginGui};
use clack_extensions::latency::{HostLatency, HostLatencyImpl, PluginLatency};
use clack_extensions::params::{
    HostParams, HostParamsImplMainThread, HostParamsImplShared, ParamClearFlags, ParamInfoBuffer, ParamRescanFlags,
    PluginParams,
};
use clack_extensions::state::PluginState;
use clack_host::events::event_types::ParamValueEvent;
use clack_host::prelude::*;
use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::Instant;

pub use clack_host::events::event_types::ParamValueEvent as ParamEvent;
pub use clack_host::events::Event;
pub use clack_host::prelude::{ClapId, Pckn, PluginEntry};

pub struct Shared {
    pub params: OnceLock<Option<PluginParams>>,
    pub state: OnceLock<Option<PluginState>>,
    pub latency: OnceLock<Option<PluginLatency>>,
    /// The plugin's audio-ports-config extension (choosing a layout, e.g. with a sidechain).
    pub ports_config: OnceLock<Option<PluginAudioPortsConfig>>,
    /// The plugin's GUI extension.
    pub gui: OnceLock<Option<PluginGui>>,
    /// The last size the plugin's editor asked for (`gui.request_resize`), for the host
    /// code to grant with `gui.set_size` (this host opens no window by itself).
    pub resize_requested: Mutex<Option<(u32, u32)>>,
    pub restart_requested: AtomicBool,
    pub callback_requested: AtomicBool,
    pub latency_changed: AtomicBool,
    /// The thread that created the instance: the host's main thread.
    pub main_thread: ThreadId,
    /// The host is inside the plugin's `activate` (set around the call by the host code).
    pub activating: AtomicBool,
    /// The plugin is active (between `activate` and `deactivate`).
    pub active: AtomicBool,
    /// The CLAP rules the plugin's calls into the host broke, in order.
    pub violations: Mutex<Vec<String>>,
}

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            params: OnceLock::new(),
            state: OnceLock::new(),
            latency: OnceLock::new(),
            ports_config: OnceLock::new(),
            gui: OnceLock::new(),
            resize_requested: Mutex::new(None),
            restart_requested: AtomicBool::new(false),
            callback_requested: AtomicBool::new(false),
            latency_changed: AtomicBool::new(false),
            main_thread: std::thread::current().id(),
            activating: AtomicBool::new(false),
            active: AtomicBool::new(false),
            violations: Mutex::new(Vec::new()),
        }
    }
}

impl Shared {
    fn violation(&self, what: String) {
        self.violations.lock().unwrap_or_else(|e| e.into_inner()).push(what);
    }

    /// Records a violation when a main-thread callback comes from another thread.
    fn on_main_thread(&self, call: &str) {
        if std::thread::current().id() != self.main_thread {
            self.violation(format!("{call} called from {:?}, not the main thread", std::thread::current().name()));
        }
    }

    /// Marks the host's `activate` call (true before, false after).
    pub fn activating(&self, yes: bool) {
        self.activating.store(yes, Ordering::SeqCst);
    }

    /// Marks the plugin active (after a successful `activate`) or not (after `deactivate`).
    pub fn set_active(&self, yes: bool) {
        self.active.store(yes, Ordering::SeqCst);
    }

    /// Panics with every rule broken so far.
    pub fn assert_rules(&self) {
        let v = self.violations.lock().unwrap_or_else(|e| e.into_inner());
        assert!(v.is_empty(), "the plugin broke CLAP rules in its calls to the host: {v:#?}");
    }
}

impl<'a> SharedHandler<'a> for Shared {
    fn initializing(&self, instance: InitializingPluginHandle<'a>) {
        let _ = self.params.set(instance.get_extension());
        let _ = self.state.set(instance.get_extension());
        let _ = self.latency.set(instance.get_extension());
        let _ = self.ports_config.set(instance.get_extension());
        let _ = self.gui.set(instance.get_extension());
    }
    fn request_restart(&self) {
        self.restart_requested.store(true, Ordering::SeqCst);
    }
    fn request_process(&self) {}
    fn request_callback(&self) {
        self.callback_requested.store(true, Ordering::SeqCst);
    }
}

impl HostParamsImplShared for Shared {
    fn request_flush(&self) {}
}

/// Requests are accepted; a resize is kept in [`Shared::resize_requested`] for the host
/// code (a test with a window) to grant.
impl HostGuiImpl for Shared {
    fn resize_hints_changed(&self) {}
    fn request_resize(&self, new_size: GuiSize) -> Result<(), HostError> {
        *self.resize_requested.lock().unwrap_or_else(|e| e.into_inner()) = Some((new_size.width, new_size.height));
        Ok(())
    }
    fn request_show(&self) -> Result<(), HostError> {
        Ok(())
    }
    fn request_hide(&self) -> Result<(), HostError> {
        Ok(())
    }
    fn closed(&self, _was_destroyed: bool) {}
}

pub struct MainThread<'a> {
    pub shared: &'a Shared,
}

impl<'a> MainThreadHandler<'a> for MainThread<'a> {}

impl HostParamsImplMainThread for MainThread<'_> {
    fn rescan(&self, flags: ParamRescanFlags) {
        self.shared.on_main_thread("params.rescan");
        // CLAP: "CLAP_PARAM_RESCAN_ALL ... only if the plugin is deactivated".
        if flags.contains(ParamRescanFlags::ALL) && self.shared.active.load(Ordering::SeqCst) {
            self.shared.violation("params.rescan(ALL) while the plugin is active".into());
        }
    }
    fn clear(&self, _param_id: ClapId, _flags: ParamClearFlags) {
        self.shared.on_main_thread("params.clear");
    }
}

impl HostLatencyImpl for MainThread<'_> {
    fn changed(&self) {
        self.shared.on_main_thread("latency.changed");
        // CLAP: "The latency is only allowed to change during plugin->activate."
        if !self.shared.activating.load(Ordering::SeqCst) {
            self.shared.violation("latency.changed outside clap_plugin::activate".into());
        }
        self.shared.latency_changed.store(true, Ordering::SeqCst);
    }
}

pub struct Host;

impl HostHandlers for Host {
    type Shared<'a> = Shared;
    type MainThread<'a> = MainThread<'a>;
    type AudioProcessor<'a> = ();

    fn declare_extensions(builder: &mut HostExtensions<Self>, _shared: &Self::Shared<'_>) {
        builder.register::<HostParams>().register::<HostLatency>().register::<HostGui>();
    }
}

/// Where the plugin bundles are looked for: `$FERROFX_BUNDLE_DIR`,
/// `$CARGO_TARGET_DIR/bundled`, then the workspace's `target/bundled`.
pub fn bundle_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(d) = std::env::var("FERROFX_BUNDLE_DIR") {
        dirs.push(d.into());
    }
    if let Ok(d) = std::env::var("CARGO_TARGET_DIR") {
        dirs.push(std::path::PathBuf::from(d).join("bundled"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bundled"));
    dirs
}

/// The bundle `file` (e.g. `FerroFX.clap`) in the first of [`bundle_dirs`] that has it;
/// the error names the folders searched.
pub fn find_bundle(file: &str) -> Result<std::path::PathBuf, String> {
    let dirs = bundle_dirs();
    dirs.iter()
        .map(|d| d.join(file))
        .find(|p| p.exists())
        .ok_or_else(|| format!("{file} not found in {dirs:?}; run `cargo xtask bundle ferrofx` first"))
}

/// [`find_bundle`] for a host test: without the bundle, prints why and gives `None` (the
/// test passes), unless `FERROFX_REQUIRE_BUNDLES=1` (scripts/test.sh sets it), when it
/// panics with the reason instead.
pub fn bundle_or_skip(file: &str) -> Option<std::path::PathBuf> {
    match find_bundle(file) {
        Ok(p) => Some(p),
        Err(msg) => {
            if std::env::var("FERROFX_REQUIRE_BUNDLES").as_deref() == Ok("1") {
                panic!("{msg}");
            }
            println!("SKIPPED: {msg}");
            None
        }
    }
}

/// Loads a `.clap` bundle's entry.
pub fn load_entry(path: &Path) -> Result<PluginEntry, String> {
    // SAFETY: loading a shared library runs its initialisers; the callers load FerroFX's
    // own bundle, built from this workspace.
    unsafe { PluginEntry::load(path) }.map_err(|e| format!("{}: {e:?}", path.display()))
}

/// One parameter: CLAP id, name and range.
#[derive(Clone, Debug)]
pub struct Param {
    pub id: ClapId,
    pub name: String,
    pub min: f64,
    pub max: f64,
}

/// A plugin instance and its parameters.
pub struct Plugin {
    pub instance: PluginInstance<Host>,
    pub params: Vec<Param>,
    /// How often the main thread serves the plugin's callbacks during a session
    /// (default 2 ms; a benchmark playing faster than real time wants it more often, so
    /// the plugin's queue of main-thread tasks never fills).
    pub main_poll: std::time::Duration,
}

/// What one block's `process` call saw.
pub struct BlockReport {
    pub seconds: f64,
}

impl Plugin {
    pub fn new(entry: &PluginEntry, plugin_id: &str) -> Result<Plugin, String> {
        let host = HostInfo::new("ferrofx-testkit", "FerroFX", "https://example.invalid", "1.0").map_err(|e| format!("{e:?}"))?;
        let id = CString::new(plugin_id).map_err(|e| e.to_string())?;
        let mut instance = PluginInstance::<Host>::new(|_| Shared::default(), |shared| MainThread { shared }, entry, &id, &host)
            .map_err(|e| format!("instantiating {plugin_id}: {e:?}"))?;
        let ext = instance.access_shared_handler(|s| *s.params.get().unwrap_or(&None)).ok_or("no params extension")?;
        let handle = instance.plugin_handle();
        let mut buf = ParamInfoBuffer::new();
        let mut params = Vec::new();
        for i in 0..ext.count(&handle) {
            if let Some(info) = ext.get_info(&handle, i, &mut buf) {
                params.push(Param {
                    id: info.id,
                    name: String::from_utf8_lossy(info.name).into_owned(),
                    min: info.min_value,
                    max: info.max_value,
                });
            }
        }
        Ok(Plugin { instance, params, main_poll: std::time::Duration::from_millis(2) })
    }

    /// Chooses audio-ports-config layout `index` (before activation).
    pub fn select_layout(&mut self, index: u32) -> Result<(), String> {
        let ext = self.instance.access_shared_handler(|s| *s.ports_config.get().unwrap_or(&None)).ok_or("no audio-ports-config extension")?;
        let handle = self.instance.plugin_handle();
        ext.select(&handle, ClapId::new(index)).map_err(|e| format!("layout {index} refused: {e:?}"))
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    pub fn save(&mut self) -> Result<Vec<u8>, String> {
        let ext = self.instance.access_shared_handler(|s| *s.state.get().unwrap_or(&None)).ok_or("no state extension")?;
        let mut out = Vec::new();
        ext.save(&self.instance.plugin_handle(), &mut out).map_err(|e| format!("{e:?}"))?;
        Ok(out)
    }

    pub fn load(&mut self, state: &[u8]) -> bool {
        let ok = load_state(&mut self.instance, state);
        self.pump();
        ok
    }

    /// The editor's size as reported to a host ([`editor_size`]).
    pub fn editor_size(&mut self) -> Option<(u32, u32)> {
        editor_size(&mut self.instance)
    }

    pub fn latency(&mut self) -> u32 {
        match self.instance.access_shared_handler(|s| *s.latency.get().unwrap_or(&None)) {
            Some(ext) => ext.get(&self.instance.plugin_handle()),
            None => 0,
        }
    }

    /// Takes (and clears) the plugin's request for a restart.
    pub fn take_restart_request(&mut self) -> bool {
        self.instance.access_shared_handler(|s| s.restart_requested.swap(false, Ordering::SeqCst))
    }

    /// Runs the plugin's main-thread callbacks if it asked for them.
    pub fn pump(&mut self) {
        if self.instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
            self.instance.call_on_main_thread_callback();
        }
    }

    /// One session: activates at `fs` with blocks up to `max_block` frames and calls
    /// `block(frame, in, out, events) -> Option<frames>` on the audio thread before each
    /// `process` to fill the input and events of the next block (`None` ends the
    /// session); `after(frame, out, frames, report)` sees each block's output. On the main
    /// thread, meanwhile, it serves the plugin's callbacks and calls `main(instance)`
    /// every few milliseconds. Deactivates at the end.
    #[allow(clippy::type_complexity)]
    pub fn session(
        &mut self,
        fs: f64,
        channels: usize,
        max_block: usize,
        mut block: impl FnMut(u64, &mut [Vec<f32>], &mut Vec<ParamValueEvent>) -> Option<usize> + Send,
        mut after: impl FnMut(u64, &[Vec<f32>], usize, BlockReport) + Send,
        mut main: impl FnMut(&mut PluginInstance<Host>),
    ) -> Result<(), String> {
        let config = PluginAudioConfiguration { sample_rate: fs, min_frames_count: 1, max_frames_count: max_block as u32 };
        let processor = activate(&mut self.instance, config).map_err(|e| format!("activation at {fs} Hz: {e}"))?;
        let self_poll = self.main_poll;
        let instance = &mut self.instance;
        let stopped = std::thread::scope(|s| {
            let audio = s.spawn(move || -> Result<_, String> {
                let mut p = processor.start_processing().map_err(|e| format!("{e:?}"))?;
                let mut inputs = AudioPorts::with_capacity(channels, 1);
                let mut outputs = AudioPorts::with_capacity(channels, 1);
                let mut in_buf = vec![vec![0.0f32; max_block]; channels];
                let mut out_buf = vec![vec![0.0f32; max_block]; channels];
                let mut evs: Vec<ParamValueEvent> = Vec::with_capacity(4096);
                let mut frame = 0u64;
                loop {
                    evs.clear();
                    let Some(len) = block(frame, &mut in_buf, &mut evs) else { break };
                    let len = len.clamp(1, max_block);
                    let input_events = InputEvents::from_buffer(&evs);
                    let in_audio = inputs.with_input_buffers([AudioPortBuffer {
                        latency: 0,
                        channels: AudioPortBufferType::f32_input_only(in_buf.iter_mut().map(|b| InputChannel::variable(&mut b[..len]))),
                    }]);
                    let mut out_audio = outputs.with_output_buffers([AudioPortBuffer {
                        latency: 0,
                        channels: AudioPortBufferType::f32_output_only(out_buf.iter_mut().map(|b| &mut b[..len])),
                    }]);
                    let t0 = Instant::now();
                    p.process(&in_audio, &mut out_audio, &input_events, &mut OutputEvents::void(), None, None)
                        .map_err(|e| format!("process: {e:?}"))?;
                    let seconds = t0.elapsed().as_secs_f64();
                    after(frame, &out_buf, len, BlockReport { seconds });
                    frame += len as u64;
                }
                Ok(p.stop_processing())
            });
            while !audio.is_finished() {
                if instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
                    instance.call_on_main_thread_callback();
                }
                main(instance);
                std::thread::sleep(self_poll);
            }
            audio.join().map_err(|_| "the audio thread panicked".to_string())?
        })?;
        deactivate(&mut self.instance, stopped);
        self.pump();
        self.instance.access_shared_handler(|s| s.assert_rules());
        Ok(())
    }
}

/// Activates the plugin as a host does, marking the call for the rule checks.
pub fn activate(instance: &mut PluginInstance<Host>, config: PluginAudioConfiguration) -> Result<StoppedPluginAudioProcessor<Host>, String> {
    instance.access_shared_handler(|s| s.activating(true));
    let processor = instance.activate(|_, _| (), config).map_err(|e| format!("{e:?}"));
    instance.access_shared_handler(|s| {
        s.activating(false);
        s.set_active(processor.is_ok());
    });
    processor
}

/// Deactivates the plugin, marking it inactive for the rule checks.
pub fn deactivate(instance: &mut PluginInstance<Host>, stopped: StoppedPluginAudioProcessor<Host>) {
    instance.deactivate(stopped);
    instance.access_shared_handler(|s| s.set_active(false));
}

/// The editor's size as the plugin reports it to a host about to open its GUI (the
/// size a host makes the window), without opening anything. `None` without a GUI
/// extension.
pub fn editor_size(instance: &mut PluginInstance<Host>) -> Option<(u32, u32)> {
    let gui = instance.access_shared_handler(|s| *s.gui.get().unwrap_or(&None))?;
    gui.get_size(&instance.plugin_handle()).map(|s| (s.width, s.height))
}

/// Loads a state into a running instance (on the main thread, also while it plays).
pub fn load_state(instance: &mut PluginInstance<Host>, state: &[u8]) -> bool {
    let Some(ext) = instance.access_shared_handler(|s| *s.state.get().unwrap_or(&None)) else { return false };
    ext.load(&instance.plugin_handle(), &mut &state[..]).is_ok()
}

/// The plugin's state as JSON (nice-plug's: an 8-byte length, then JSON).
pub fn state_json(saved: &[u8]) -> Option<serde_json::Value> {
    let (len, json) = saved.split_at_checked(8)?;
    (u64::from_le_bytes(len.try_into().ok()?) as usize == json.len()).then_some(())?;
    serde_json::from_slice(json).ok()
}

/// JSON back into the plugin's state bytes.
pub fn state_bytes(state: &serde_json::Value) -> Vec<u8> {
    let json = serde_json::to_vec(state).unwrap_or_default();
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out
}

#[cfg(test)]
mod tests {
    use super::{MainThread, Shared};
    use clack_extensions::latency::HostLatencyImpl;

    /// The rule checks themselves: `latency.changed` is fine inside `activate` on the main
    /// thread, and recorded as a violation outside it or from another thread.
    #[test]
    fn latency_changed_is_checked_for_activation_and_thread() {
        let shared = Shared::default();
        let main = MainThread { shared: &shared };
        shared.activating(true);
        main.changed();
        shared.activating(false);
        assert!(shared.violations.lock().unwrap().is_empty(), "inside activate on the main thread: allowed");
        main.changed();
        assert_eq!(shared.violations.lock().unwrap().len(), 1, "outside activate: a violation");
        std::thread::scope(|s| {
            s.spawn(|| {
                shared.activating(true);
                MainThread { shared: &shared }.changed();
                shared.activating(false);
            });
        });
        let v = shared.violations.lock().unwrap();
        assert_eq!(v.len(), 2, "from another thread: a violation: {v:?}");
        assert!(v[1].contains("not the main thread"));
        drop(v);
        assert!(std::panic::catch_unwind(|| shared.assert_rules()).is_err(), "assert_rules fails on violations");
    }
}
