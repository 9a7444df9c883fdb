//! The host side of these tests: the bundle, an instance with its parameters by name, and
//! a run (activate, process blocks on an audio thread while the main thread serves the
//! plugin, deactivate). The CLAP rules of every call into the host are checked on drop.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;
use clack_extensions::params::ParamInfoBuffer;
use clack_host::events::event_types::ParamValueEvent;
use clack_host::prelude::*;

pub(crate) const PLUGIN_ID: &str = "org.ferrofx.equaliser";

// ---------------------------------------------------------------- the host

// The host's handlers (params, state, latency; restart and callback requests) are the
// testkit's: one CLAP host for these tests and the soak. It checks the CLAP rules for
// every call the plugin makes into it (threads, `latency.changed` only inside
// `activate`, as clap-validator does); each test's instance asserts them when dropped.
pub(crate) use ferrofx_testkit::clap::{Host as TestHost, MainThread, Shared};

pub(crate) fn bundle() -> Option<PathBuf> {
    ferrofx_testkit::clap::bundle_or_skip("FerroFX.clap")
}

pub(crate) fn entry() -> Option<&'static PluginEntry> {
    static ENTRY: OnceLock<Option<PluginEntry>> = OnceLock::new();
    ENTRY
        .get_or_init(|| {
            let path = bundle()?;
            // nice-plug logs to the file named here (its debug assertions are noisy under
            // the automation torture); set before the plugin initialises its logger.
            if std::env::var_os("NICE_LOG").is_none() {
                std::env::set_var("NICE_LOG", std::env::temp_dir().join("ferrofx-clap-test.log"));
            }
            // SAFETY: loading a shared library runs its initialisers; this is our own
            // plugin, built from this workspace.
            Some(unsafe { PluginEntry::load(&path) }.expect("the bundle loads as a CLAP entry"))
        })
        .as_ref()
}

/// Something the host does on the main thread while the plugin plays.
pub(crate) type MainAction = Box<dyn FnMut(&mut PluginInstance<TestHost>)>;

pub(crate) struct Plugin {
    pub(crate) instance: PluginInstance<TestHost>,
    /// Parameter name -> (CLAP id, min, max).
    pub(crate) params: HashMap<String, (ClapId, f64, f64)>,
    /// A second input port's signal (planar), passed with the main input when set (the
    /// plugin must have been given a layout with that port).
    pub(crate) sidechain: Option<Vec<Vec<f32>>>,
}

impl Plugin {
    pub(crate) fn new(entry: &PluginEntry) -> Plugin {
        let host = HostInfo::new("ferrofx-test", "FerroFX", "https://example.invalid", "1.0").unwrap();
        let id = CString::new(PLUGIN_ID).unwrap();
        let mut instance =
            PluginInstance::<TestHost>::new(|_| Shared::default(), |shared| MainThread { shared }, entry, &id, &host)
                .expect("the plugin instantiates");
        let ext = instance.access_shared_handler(|s| *s.params.get().unwrap()).expect("params extension");
        let handle = instance.plugin_handle();
        let mut params = HashMap::new();
        let mut buf = ParamInfoBuffer::new();
        for i in 0..ext.count(&handle) {
            let info = ext.get_info(&handle, i, &mut buf).expect("param info");
            let name = String::from_utf8_lossy(info.name).into_owned();
            params.insert(name, (info.id, info.min_value, info.max_value));
        }
        Plugin { instance, params, sidechain: None }
    }

    /// Chooses audio-ports configuration `index` (the plugin's layout list) before
    /// activation.
    pub(crate) fn select_layout(&mut self, index: u32) {
        let ext = self.instance.access_shared_handler(|s| *s.ports_config.get().unwrap()).expect("audio-ports-config extension");
        let handle = self.instance.plugin_handle();
        ext.select(&handle, ClapId::new(index)).expect("the layout is accepted");
    }

    pub(crate) fn id(&self, name: &str) -> (ClapId, f64, f64) {
        *self.params.get(name).unwrap_or_else(|| panic!("no parameter named {name:?}"))
    }

    /// The value the plugin reports for parameter `id` (plain, as CLAP has it).
    pub(crate) fn value(&mut self, id: ClapId) -> f64 {
        let ext = self.instance.access_shared_handler(|s| *s.params.get().unwrap()).expect("params extension");
        ext.get_value(&self.instance.plugin_handle(), id).expect("a value")
    }

    pub(crate) fn latency(&mut self) -> u32 {
        let ext = self.instance.access_shared_handler(|s| *s.latency.get().unwrap()).expect("latency extension");
        ext.get(&self.instance.plugin_handle())
    }

    pub(crate) fn save(&mut self) -> Vec<u8> {
        let ext = self.instance.access_shared_handler(|s| *s.state.get().unwrap()).expect("state extension");
        let mut out = Vec::new();
        ext.save(&self.instance.plugin_handle(), &mut out).expect("state saves");
        out
    }

    pub(crate) fn load(&mut self, state: &[u8]) -> bool {
        let ext = self.instance.access_shared_handler(|s| *s.state.get().unwrap()).expect("state extension");
        let ok = ext.load(&self.instance.plugin_handle(), &mut &state[..]).is_ok();
        self.pump();
        ok
    }

    /// Runs the plugin's main-thread callbacks if it asked for them.
    pub(crate) fn pump(&mut self) {
        if self.instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
            self.instance.call_on_main_thread_callback();
        }
    }

    /// Activates at `fs` with blocks of `block` frames, processes `input` (planar) with
    /// parameter events `(frame, id, value)` and deactivates. `hook` runs before each
    /// block on the audio thread and may add events for that block.
    pub(crate) fn run(
        &mut self,
        fs: f64,
        block: usize,
        input: &[Vec<f32>],
        events: &[(usize, ClapId, f64)],
        hook: impl FnMut(usize, usize, &mut Vec<ParamValueEvent>) + Send,
    ) -> (Vec<Vec<f32>>, Vec<f64>) {
        self.run_with(fs, &[block], input, events, hook, None)
    }

    /// [`Plugin::run`] with block sizes cycling through `blocks` (the largest is the
    /// maximum announced at activation) and an optional action on the main thread once
    /// the audio thread has processed `main_action.0` frames.
    pub(crate) fn run_with(
        &mut self,
        fs: f64,
        blocks: &[usize],
        input: &[Vec<f32>],
        events: &[(usize, ClapId, f64)],
        mut hook: impl FnMut(usize, usize, &mut Vec<ParamValueEvent>) + Send,
        mut main_action: Option<(usize, MainAction)>,
    ) -> (Vec<Vec<f32>>, Vec<f64>) {
        let channels = input.len();
        let frames = input[0].len();
        let block = *blocks.iter().max().unwrap();
        let progress = std::sync::atomic::AtomicUsize::new(0);
        let progress = &progress;
        // The audio thread waits between blocks (never inside `process`) for the main
        // thread's action once it is due, so the action lands mid-stream however fast
        // the processing runs.
        let action_done = AtomicBool::new(main_action.is_none());
        let action_done = &action_done;
        let action_at = main_action.as_ref().map(|(at, _)| *at).unwrap_or(usize::MAX);
        let sidechain = self.sidechain.clone();
        let config = PluginAudioConfiguration { sample_rate: fs, min_frames_count: 1, max_frames_count: block as u32 };
        let processor = ferrofx_testkit::clap::activate(&mut self.instance, config).expect("the plugin activates");
        let instance = &mut self.instance;
        let (stopped, output, block_seconds) = std::thread::scope(|s| {
            let audio = s.spawn(move || {
                let mut p = processor.start_processing().expect("processing starts");
                let mut inputs = AudioPorts::with_capacity(2 * channels, 2);
                let mut outputs = AudioPorts::with_capacity(channels, 1);
                let mut in_buf = vec![vec![0.0f32; block]; channels];
                let mut side_buf = vec![vec![0.0f32; block]; sidechain.as_ref().map_or(0, |s| s.len())];
                let mut out_buf = vec![vec![0.0f32; block]; channels];
                let mut output: Vec<Vec<f32>> = vec![Vec::with_capacity(frames); channels];
                let mut block_seconds = Vec::with_capacity(frames / block + 1);
                let mut evs: Vec<ParamValueEvent> = Vec::with_capacity(1024);
                let mut next_event = 0;
                let mut start = 0;
                let mut which = 0;
                while start < frames {
                    let len = blocks[which % blocks.len()].min(frames - start);
                    which += 1;
                    for (b, x) in in_buf.iter_mut().zip(input) {
                        b[..len].copy_from_slice(&x[start..start + len]);
                    }
                    evs.clear();
                    while next_event < events.len() && events[next_event].0 < start + len {
                        let (at, id, value) = events[next_event];
                        evs.push(ParamValueEvent::new((at.max(start) - start) as u32, id, Pckn::match_all(), value));
                        next_event += 1;
                    }
                    hook(start, len, &mut evs);
                    let input_events = InputEvents::from_buffer(&evs);
                    if let Some(sc) = sidechain.as_ref() {
                        for (b, x) in side_buf.iter_mut().zip(sc) {
                            b[..len].copy_from_slice(&x[start..start + len]);
                        }
                    }
                    let ports = if side_buf.is_empty() { 1 } else { 2 };
                    let mut main: Vec<InputChannel<'_, f32>> = in_buf.iter_mut().map(|b| InputChannel::variable(&mut b[..len])).collect();
                    let mut side: Vec<InputChannel<'_, f32>> = side_buf.iter_mut().map(|b| InputChannel::variable(&mut b[..len])).collect();
                    let port_list = [
                        AudioPortBuffer { latency: 0, channels: AudioPortBufferType::f32_input_only(main.drain(..)) },
                        AudioPortBuffer { latency: 0, channels: AudioPortBufferType::f32_input_only(side.drain(..)) },
                    ];
                    let in_audio = inputs.with_input_buffers(port_list.into_iter().take(ports));
                    let mut out_audio = outputs.with_output_buffers([AudioPortBuffer {
                        latency: 0,
                        channels: AudioPortBufferType::f32_output_only(out_buf.iter_mut().map(|b| &mut b[..len])),
                    }]);
                    let t0 = Instant::now();
                    p.process(&in_audio, &mut out_audio, &input_events, &mut OutputEvents::void(), None, None)
                        .expect("process succeeds");
                    block_seconds.push(t0.elapsed().as_secs_f64());
                    for (o, b) in output.iter_mut().zip(&out_buf) {
                        o.extend_from_slice(&b[..len]);
                    }
                    start += len;
                    progress.store(start, Ordering::SeqCst);
                    while start >= action_at && !action_done.load(Ordering::SeqCst) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                (p.stop_processing(), output, block_seconds)
            });
            // Like a real host, serve the plugin's main-thread callbacks while it plays.
            while !audio.is_finished() {
                if instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
                    instance.call_on_main_thread_callback();
                }
                if let Some((at, action)) = main_action.as_mut() {
                    if progress.load(Ordering::SeqCst) >= *at {
                        action(instance);
                        main_action = None;
                        action_done.store(true, Ordering::SeqCst);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let result = audio.join().expect("the audio thread does not panic");
            // What the plugin queued in its last blocks is served while it is still active,
            // as by a host that serves its main thread all along (a fast run can end
            // between two of this loop's turns).
            if instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
                instance.call_on_main_thread_callback();
            }
            result
        });
        ferrofx_testkit::clap::deactivate(&mut self.instance, stopped);
        self.pump();
        (output, block_seconds)
    }

    /// Restarts the plugin if it asked for it, as a host does between two runs: `true`
    /// when it had asked. (Each run here activates anew, so the next run is the restart.)
    pub(crate) fn take_restart_request(&mut self) -> bool {
        self.instance.access_shared_handler(|s| s.restart_requested.swap(false, Ordering::SeqCst))
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.instance.access_shared_handler(|s| s.assert_rules());
        }
    }
}

// ---------------------------------------------------------------- signals and settings
