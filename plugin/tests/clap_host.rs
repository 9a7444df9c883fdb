//! The bundled `FerroFX.clap`, loaded and driven by a real CLAP host (`clack-host`).
//!
//! Builds nothing itself: run `cargo xtask bundle ferrofx` first (scripts/test.sh does).
//! The bundle is looked up in `$FERROFX_BUNDLE_DIR`, `$CARGO_TARGET_DIR/bundled` and
//! `target/bundled`. Without it the tests print why and pass, unless
//! `FERROFX_REQUIRE_BUNDLES=1` (set by scripts/test.sh, so CI fails instead).
//!
//! Expected output comes from the core engine (`ferrofx::Engine`) running the chain the
//! parameters describe, written with the core's own API.

mod common;

use common::{tail_level_db, tone};
use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use clack_extensions::params::ParamInfoBuffer;
use clack_host::events::event_types::ParamValueEvent;
use clack_host::prelude::*;
use ferrofx::chain::{Biquad, Butterworth, Chain, Elliptic, Fir, LinkwitzRiley};
use ferrofx::{Engine, Stage};
use ferrofx_plugin::control::params::ranges;

const PLUGIN_ID: &str = "org.ferrofx.equaliser";

// ---------------------------------------------------------------- the host

// The host's handlers (params, state, latency; restart and callback requests) are the
// testkit's: one CLAP host for these tests and the soak. It checks the CLAP rules for
// every call the plugin makes into it (threads, `latency.changed` only inside
// `activate`, as clap-validator does); each test's instance asserts them when dropped.
use ferrofx_testkit::clap::{Host as TestHost, MainThread, Shared};

fn bundle() -> Option<PathBuf> {
    ferrofx_testkit::clap::bundle_or_skip("FerroFX.clap")
}

fn entry() -> Option<&'static PluginEntry> {
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
type MainAction = Box<dyn FnMut(&mut PluginInstance<TestHost>)>;

struct Plugin {
    instance: PluginInstance<TestHost>,
    /// Parameter name -> (CLAP id, min, max).
    params: HashMap<String, (ClapId, f64, f64)>,
    /// A second input port's signal (planar), passed with the main input when set (the
    /// plugin must have been given a layout with that port).
    sidechain: Option<Vec<Vec<f32>>>,
}

impl Plugin {
    fn new(entry: &PluginEntry) -> Plugin {
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
    fn select_layout(&mut self, index: u32) {
        let ext = self.instance.access_shared_handler(|s| *s.ports_config.get().unwrap()).expect("audio-ports-config extension");
        let handle = self.instance.plugin_handle();
        ext.select(&handle, ClapId::new(index)).expect("the layout is accepted");
    }

    fn id(&self, name: &str) -> (ClapId, f64, f64) {
        *self.params.get(name).unwrap_or_else(|| panic!("no parameter named {name:?}"))
    }

    fn latency(&mut self) -> u32 {
        let ext = self.instance.access_shared_handler(|s| *s.latency.get().unwrap()).expect("latency extension");
        ext.get(&self.instance.plugin_handle())
    }

    fn save(&mut self) -> Vec<u8> {
        let ext = self.instance.access_shared_handler(|s| *s.state.get().unwrap()).expect("state extension");
        let mut out = Vec::new();
        ext.save(&self.instance.plugin_handle(), &mut out).expect("state saves");
        out
    }

    fn load(&mut self, state: &[u8]) -> bool {
        let ext = self.instance.access_shared_handler(|s| *s.state.get().unwrap()).expect("state extension");
        let ok = ext.load(&self.instance.plugin_handle(), &mut &state[..]).is_ok();
        self.pump();
        ok
    }

    /// Runs the plugin's main-thread callbacks if it asked for them.
    fn pump(&mut self) {
        if self.instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
            self.instance.call_on_main_thread_callback();
        }
    }

    /// Activates at `fs` with blocks of `block` frames, processes `input` (planar) with
    /// parameter events `(frame, id, value)` and deactivates. `hook` runs before each
    /// block on the audio thread and may add events for that block.
    fn run(
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
    fn run_with(
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
    fn take_restart_request(&mut self) -> bool {
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

fn noise(frames: usize, seed: u64, amplitude: f32) -> Vec<f32> {
    ferrofx_testkit::noise_amp(frames, seed, amplitude)
}

fn stereo_noise(frames: usize, seed: u64) -> Vec<Vec<f32>> {
    vec![noise(frames, seed, 0.5), noise(frames, seed + 1, 0.5)]
}

/// Settings as (parameter name, plain value); converted to CLAP values by `events`.
#[derive(Clone, Copy)]
enum Plain {
    Freq(f32),
    GainDb(f32),
    Q(f32),
    OutDb(f32),
    /// Enum index, bool (0/1) or int offset from the minimum.
    Discrete(f64),
    /// A value already normalised to 0..1 through its range.
    Normalized(f32),
}

fn clap_value(p: Plain) -> f64 {
    match p {
        Plain::Freq(v) => ranges::freq_hz().normalize(v) as f64,
        Plain::GainDb(v) => ranges::gain_db().normalize(v) as f64,
        Plain::Q(v) => ranges::q().normalize(v) as f64,
        Plain::OutDb(v) => ranges::output_gain_db().normalize(v) as f64,
        Plain::Discrete(v) => v,
        Plain::Normalized(v) => v as f64,
    }
}

/// Shape indices in the parameter's order.
const PEAK: f64 = 0.0;
const HIGH_SHELF: f64 = 2.0;
const LOW_CUT: f64 = 3.0;
const HIGH_CUT: f64 = 4.0;
const NOTCH: f64 = 5.0;
const TILT: f64 = 8.0;

/// A setting of several bands and the output gain, and the same thing as a core chain.
fn settings() -> (Vec<(String, Plain)>, Chain) {
    let on = |n: usize| (format!("Band {n} On"), Plain::Discrete(1.0));
    let s = |n: usize, what: &str, v: Plain| (format!("Band {n} {what}"), v);
    let params = vec![
        on(1),
        s(1, "Shape", Plain::Discrete(LOW_CUT)),
        s(1, "Frequency", Plain::Freq(80.0)),
        s(1, "Slope", Plain::Discrete(4.0 - 1.0)), // 4 poles: 24 dB/oct
        on(5),
        s(5, "Shape", Plain::Discrete(PEAK)),
        s(5, "Frequency", Plain::Freq(1000.0)),
        s(5, "Gain", Plain::GainDb(6.0)),
        s(5, "Q", Plain::Q(1.4)),
        on(9),
        s(9, "Shape", Plain::Discrete(HIGH_SHELF)),
        s(9, "Frequency", Plain::Freq(8000.0)),
        s(9, "Gain", Plain::GainDb(-4.0)),
        s(9, "Q", Plain::Q(0.7)),
        on(12),
        s(12, "Shape", Plain::Discrete(NOTCH)),
        s(12, "Frequency", Plain::Freq(3000.0)),
        s(12, "Q", Plain::Q(4.0)),
        on(15),
        s(15, "Shape", Plain::Discrete(TILT)),
        s(15, "Frequency", Plain::Freq(600.0)),
        s(15, "Gain", Plain::GainDb(3.0)),
        s(15, "Q", Plain::Q(0.7)),
        on(24),
        s(24, "Shape", Plain::Discrete(HIGH_CUT)),
        s(24, "Frequency", Plain::Freq(15000.0)),
        s(24, "Slope", Plain::Discrete(8.0 - 1.0)), // 48 dB/oct
        s(24, "Linkwitz-Riley", Plain::Discrete(1.0)),
        ("Output Gain".to_string(), Plain::OutDb(-3.0)),
    ];
    // The plugin stores values as f32: build the expected chain from the same f32s.
    let f = |v: f32| v as f64;
    let chain = Butterworth::highpass(f(80.0), 4)
        | Biquad::peaking(f(1000.0), f(1.4), f(6.0))
        | Biquad::high_shelf(f(8000.0), f(0.7), f(-4.0))
        | Biquad::notch(f(3000.0), f(4.0))
        | Biquad::low_shelf(f(600.0), f(0.7), -f(3.0) / 2.0)
        | Biquad::high_shelf(f(600.0), f(0.7), f(3.0) / 2.0)
        | LinkwitzRiley::lowpass(f(15000.0), 8)
        | Stage::gain(-3.0);
    (params, chain)
}

/// The bands of [`settings`] as the plugin's band settings.
fn settings_bands() -> [ferrofx_plugin::shared::bands::Band; ferrofx_plugin::shared::bands::BANDS] {
    use ferrofx_plugin::shared::bands::{Band, Shape, Slope};
    let mut b = [Band::default(); ferrofx_plugin::shared::bands::BANDS];
    let f = |v: f32| v as f64;
    let on = |shape, freq_hz: f32, gain_db: f32, q: f32| Band { enabled: true, shape, freq_hz: f(freq_hz), gain_db: f(gain_db), q: f(q), ..Band::default() };
    b[0] = Band { slope: Slope { db_per_oct: 24, linkwitz_riley: false }, ..on(Shape::LowCut, 80.0, 0.0, std::f32::consts::FRAC_1_SQRT_2) };
    b[4] = on(Shape::Peak, 1000.0, 6.0, 1.4);
    b[8] = on(Shape::HighShelf, 8000.0, -4.0, 0.7);
    b[11] = on(Shape::Notch, 3000.0, 0.0, 4.0);
    b[14] = on(Shape::TiltShelf, 600.0, 3.0, 0.7);
    b[23] = Band { slope: Slope { db_per_oct: 48, linkwitz_riley: true }, ..on(Shape::HighCut, 15000.0, 0.0, std::f32::consts::FRAC_1_SQRT_2) };
    b
}

/// Parameter events for `settings`. The expected outputs of these tests are cookbook
/// chains, so the analog-matched switch (on by default) goes off first unless a test sets
/// it itself.
fn events(plugin: &Plugin, at: usize, settings: &[(String, Plain)]) -> Vec<(usize, ClapId, f64)> {
    let switch = "Analog-Matched Bands";
    let off = (!settings.iter().any(|(n, _)| n == switch)).then(|| (at, plugin.id(switch).0, 0.0));
    off.into_iter().chain(settings.iter().map(|(name, v)| (at, plugin.id(name).0, clap_value(*v)))).collect()
}

fn engine_output(chain: &Chain, fs: f64, input: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let designed = chain.design(fs).expect("the expected chain designs");
    let mut engine = Engine::new(&designed, input.len(), 4096);
    let mut out = input.to_vec();
    let mut refs: Vec<&mut [f32]> = out.iter_mut().map(|c| c.as_mut_slice()).collect();
    engine.process(&mut refs);
    out
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Quiet lead-in long enough for smoothing (15 ms time constant, settled to 1e-9) and the
/// 512-sample glides of switched bands to finish: the filters see only zeros until then.
fn settle_frames(fs: f64) -> usize {
    (0.5 * fs) as usize
}

fn with_lead_in(fs: f64, signal: &[Vec<f32>]) -> Vec<Vec<f32>> {
    signal
        .iter()
        .map(|c| {
            let mut v = vec![0.0; settle_frames(fs)];
            v.extend_from_slice(c);
            v
        })
        .collect()
}

/// nice-plug's CLAP state: a little-endian u64 length, then the JSON.
fn state_json(saved: &[u8]) -> serde_json::Value {
    let (len, json) = saved.split_at(8);
    assert_eq!(u64::from_le_bytes(len.try_into().unwrap()) as usize, json.len(), "length prefix");
    serde_json::from_slice(json).expect("the state is JSON after its length")
}

fn state_bytes(state: &serde_json::Value) -> Vec<u8> {
    let json = serde_json::to_vec(state).unwrap();
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&json);
    out
}

// ---------------------------------------------------------------- tests

#[test]
fn matches_the_core_engine_at_every_rate_and_block_size() {
    let Some(entry) = entry() else { return };
    let (settings, chain) = settings();
    let mut worst = 0.0f32;
    for fs in [44_100.0, 48_000.0, 96_000.0] {
        for block in [1usize, 64, 1000, 4096] {
            let mut plugin = Plugin::new(entry);
            let signal = stereo_noise((0.25 * fs) as usize, block as u64);
            let input = with_lead_in(fs, &signal);
            let evs = events(&plugin, 0, &settings);
            let (out, _) = plugin.run(fs, block, &input, &evs, |_, _, _| {});
            let lead = settle_frames(fs);
            let expected = engine_output(&chain, fs, &signal);
            for (c, (o, e)) in out.iter().zip(&expected).enumerate() {
                assert!(o[..lead].iter().all(|&v| v == 0.0), "silence in, silence out (fs {fs}, block {block})");
                let err = max_abs_diff(&o[lead..], e);
                assert!(err <= 2e-5, "fs {fs} block {block} channel {c}: max error {err:e} against the core engine");
                worst = worst.max(err);
            }
        }
    }
    println!("worst difference from the core engine over 3 rates x 4 block sizes: {worst:e}");
}

/// Bands routed to the left channel and to the mid signal, set through CLAP parameter
/// events: the right channel is the stereo bands' output alone, and the whole equals
/// per-channel core engines around a float64 M/S encode and decode.
#[test]
fn routed_bands_act_on_their_channels() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (mut settings, chain) = settings();
    // Band 5 (+6 dB bell at 1 kHz) to the left, band 9 (-4 dB high shelf) to the mid.
    settings.push(("Band 5 Channels".to_string(), Plain::Discrete(1.0)));
    settings.push(("Band 9 Channels".to_string(), Plain::Discrete(3.0)));
    let stages = &chain.stages;
    let pick = |keep: &dyn Fn(usize) -> bool| Chain { stages: stages.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, s)| s.clone()).collect() };
    let both = pick(&|i| i != 1 && i != 2);
    let (bell, shelf) = (pick(&|i| i == 1), pick(&|i| i == 2));
    let signal = stereo_noise((0.5 * fs) as usize, 91);
    let mut plugin = Plugin::new(entry);
    let evs = events(&plugin, 0, &settings);
    let (out, _) = plugin.run(fs, 512, &with_lead_in(fs, &signal), &evs, |_, _, _| {});
    let lead = settle_frames(fs);
    let common = engine_output(&both, fs, &signal);
    let left = engine_output(&bell, fs, &common[..1]).remove(0);
    let right = &common[1];
    let mid: Vec<f32> = left.iter().zip(right).map(|(a, b)| ((f64::from(*a) + f64::from(*b)) / 2.0) as f32).collect();
    let side: Vec<f32> = left.iter().zip(right).map(|(a, b)| ((f64::from(*a) - f64::from(*b)) / 2.0) as f32).collect();
    let mid = engine_output(&shelf, fs, &[mid]).remove(0);
    let want_l: Vec<f32> = mid.iter().zip(&side).map(|(m, s)| m + s).collect();
    let want_r: Vec<f32> = mid.iter().zip(&side).map(|(m, s)| m - s).collect();
    let (el, er) = (max_abs_diff(&out[0][lead..], &want_l), max_abs_diff(&out[1][lead..], &want_r));
    println!("left and mid bands through CLAP vs per-channel core engines: {el:e}, {er:e}");
    assert!(el <= 3e-5 && er <= 3e-5, "routed bands: left {el:e}, right {er:e}");
}

/// Analog-matched bands (the default) through CLAP: the bells, shelves, tilt and notch
/// equal the core chain's matched biquads and the cuts its matched cuts (format version 2).
#[test]
fn analog_matched_bands_equal_the_core_matched_chain() {
    let Some(entry) = entry() else { return };
    let (mut settings, chain) = settings();
    settings.push(("Analog-Matched Bands".to_string(), Plain::Discrete(1.0)));
    let matched = Chain { stages: chain.stages.iter().map(|s| s.clone().matched()).collect() };
    // The file says so: version 2, and it reads back as written.
    let text = matched.to_json();
    assert!(text.contains("\"version\": 2") && text.contains("\"matched\": true"));
    assert_eq!(Chain::from_json(&text).unwrap(), matched);
    for fs in [44_100.0, 96_000.0] {
        let signal = stereo_noise((0.25 * fs) as usize, 94);
        let mut plugin = Plugin::new(entry);
        let evs = events(&plugin, 0, &settings);
        let (out, _) = plugin.run(fs, 512, &with_lead_in(fs, &signal), &evs, |_, _, _| {});
        let lead = settle_frames(fs);
        let want = engine_output(&matched, fs, &signal);
        let cookbook = engine_output(&chain, fs, &signal);
        for c in 0..2 {
            let err = max_abs_diff(&out[c][lead..], &want[c]);
            let differs = max_abs_diff(&want[c], &cookbook[c]);
            println!("fs {fs} channel {c}: matched plugin vs core matched chain {err:e} (matched vs cookbook {differs:e})");
            assert!(err <= 2e-5, "fs {fs} channel {c}: {err:e}");
            assert!(differs > 1e-3, "the matched chain should differ from the cookbook one");
        }
    }
}

/// Linear phase (4,096 taps) through CLAP, chosen before activation: the reported
/// latency is 2,048 samples, the impulse response is the bands' linear-phase FIR at the
/// output gain, symmetric about the reported latency.
#[test]
fn linear_phase_reports_its_latency_and_its_impulse_is_symmetric_about_it() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (mut settings, _) = settings();
    settings.push(("Phase".to_string(), Plain::Discrete(1.0)));
    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let state = a.save();
    let mut b = Plugin::new(entry);
    assert!(b.load(&state));
    let t0 = 1000;
    let frames = t0 + 4096 + 512;
    let mut input = vec![vec![0.0f32; frames]; 2];
    input[0][t0] = 1.0;
    input[1][t0] = 1.0;
    let (out, _) = b.run(fs, 256, &input, &[], |_, _, _| {});
    let latency = b.latency() as usize;
    assert_eq!(latency, 2048, "half the FIR length");
    let taps = ferrofx_plugin::control::linear::design(&settings_bands(), fs, 4096, true);
    let g = 10f64.powf(-3.0 / 20.0);
    for (c, y) in out.iter().enumerate().take(2) {
        assert!(y[..t0].iter().all(|&v| v == 0.0), "nothing before the impulse");
        let err = (0..4096).map(|k| (f64::from(y[t0 + k]) - g * taps[k]).abs()).fold(0.0, f64::max);
        assert!(err <= 1e-6, "channel {c}: impulse response vs the designed FIR: {err:e}");
        let centre = t0 + latency;
        let asym = (1..2048).map(|j| (y[centre + j] - y[centre - j]).abs()).fold(0.0f32, f32::max);
        assert!(asym <= 1e-6, "channel {c}: not symmetric about the reported latency: {asym:e}");
        let peak = (t0..frames).max_by(|&i, &j| y[i].abs().total_cmp(&y[j].abs())).unwrap();
        assert_eq!(peak, centre, "channel {c}: the peak sits at the reported latency");
    }
}

/// The bands of [`settings`] through their linear-phase FIR of `n` taps at the output
/// gain (-3 dB): what the plugin plays in that phase mode, its latency included.
fn linear_output(fs: f64, n: usize, input: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let g = 10f64.powf(-3.0 / 20.0);
    let taps: Vec<f64> = ferrofx_plugin::control::linear::design(&settings_bands(), fs, n, true).iter().map(|t| t * g).collect();
    engine_output(&Chain::from(Fir::coefficients(taps)), fs, input)
}

/// The phase mode changed while playing, by an automation event and by loading a saved
/// state: CLAP lets the latency change only inside `activate`, so the plugin asks the
/// host for a restart and keeps producing audio at the latency it reported (0, natural
/// phase) until the host restarts it. After the restart it reports the FIR's latency and
/// its output is the linear-phase FIR's, delayed by exactly that. The test host checks
/// every call the plugin makes into it against the CLAP rules (no `latency.changed`
/// outside `activate`).
#[test]
fn a_phase_change_while_playing_keeps_audio_and_latency_together_until_the_restart() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let signal = stereo_noise(fs as usize, 53);
    let input = with_lead_in(fs, &signal);
    let lead = settle_frames(fs);
    let natural = engine_output(&chain, fs, &signal);
    let linear = linear_output(fs, 4096, &input);
    // A saved state with linear phase, to load while playing.
    let mut saver = Plugin::new(entry);
    let mut evs = events(&saver, 0, &settings);
    evs.push((0, saver.id("Phase").0, 1.0));
    saver.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let linear_state = saver.save();

    for how in ["automation", "state load"] {
        let mut p = Plugin::new(entry);
        let mut evs = events(&p, 0, &settings);
        let at = lead + 10_000;
        let mut action: Option<(usize, MainAction)> = None;
        if how == "automation" {
            evs.push((at, p.id("Phase").0, 1.0));
        } else {
            let state = linear_state.clone();
            action = Some((at, Box::new(move |instance: &mut PluginInstance<TestHost>| assert!(ferrofx_testkit::clap::load_state(instance, &state)))));
        }
        let (out, _) = p.run_with(fs, &[512], &input, &evs, |_, _, _| {}, action);
        assert_eq!(p.latency(), 0, "{how}: the latency stays the audio's until the restart");
        assert!(p.take_restart_request(), "{how}: the plugin asks the host for a restart");
        for c in 0..2 {
            let err = max_abs_diff(&out[c][lead..], &natural[c]);
            assert!(err <= 2e-5, "{how}: until the restart the audio stays natural phase, without latency: {err:e}");
        }
        // The host restarts the plugin (the next run activates it again).
        let (out, _) = p.run(fs, 512, &input, &[], |_, _, _| {});
        let latency = p.latency() as usize;
        assert_eq!(latency, 2048, "{how}: after the restart, half the FIR");
        for c in 0..2 {
            let err = max_abs_diff(&out[c], &linear[c]);
            println!("{how}: after the restart, channel {c}: max error against the FIR delayed by {latency}: {err:e}");
            assert!(err <= 2e-5, "{how}: after the restart the output is the linear-phase FIR's: {err:e}");
        }
        // nice-plug tells the host of a latency set in `activate` through one more
        // restart, in which it calls `latency.changed` (inside `activate`, as the rules
        // checked by the host's drop want).
        if p.take_restart_request() {
            p.run(fs, 512, &[vec![0.0; 512], vec![0.0; 512]], &[], |_, _, _| {});
            assert_eq!(p.latency(), 2048);
        }
    }
}

/// The shared dynamic band (`common::dynamic_band`) as CLAP settings.
fn dynamic_band(sidechain: f64) -> Vec<(String, Plain)> {
    use common::Setting;
    common::dynamic_band(sidechain)
        .into_iter()
        .map(|(name, v)| {
            let plain = match v {
                Setting::Index(i) => Plain::Discrete(i),
                Setting::Hz(f) => Plain::Freq(f),
                Setting::Db(g) => Plain::GainDb(g),
                Setting::Q(q) => Plain::Q(q),
                Setting::Normalized(n) => Plain::Normalized(n),
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
    for (main_db, side_db, listens, want_db) in common::SIDECHAIN_CASES {
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

/// The lowest and highest rates (8 and 384 kHz) with irregular block sizes from 1 to the
/// 16384 maximum, against the core engine.
#[test]
fn extreme_rates_and_irregular_block_sizes() {
    let Some(entry) = entry() else { return };
    let s = |n: usize, what: &str, v: Plain| (format!("Band {n} {what}"), v);
    let settings = vec![
        s(1, "On", Plain::Discrete(1.0)),
        s(1, "Shape", Plain::Discrete(LOW_CUT)),
        s(1, "Frequency", Plain::Freq(80.0)),
        s(1, "Slope", Plain::Discrete(3.0)),
        s(7, "On", Plain::Discrete(1.0)),
        s(7, "Shape", Plain::Discrete(PEAK)),
        s(7, "Frequency", Plain::Freq(1000.0)),
        s(7, "Gain", Plain::GainDb(6.0)),
        s(7, "Q", Plain::Q(1.4)),
        s(9, "On", Plain::Discrete(1.0)),
        s(9, "Shape", Plain::Discrete(HIGH_SHELF)),
        s(9, "Frequency", Plain::Freq(3000.0)),
        s(9, "Gain", Plain::GainDb(-4.0)),
        s(9, "Q", Plain::Q(0.7)),
    ];
    let chain = Butterworth::highpass(80.0, 4) | Biquad::peaking(1000.0, 1.4, 6.0) | Biquad::high_shelf(3000.0, 0.7, -4.0);
    let blocks = [1usize, 7, 333, 16384, 2, 1000, 4096, 64];
    for fs in [8_000.0, 384_000.0] {
        let mut plugin = Plugin::new(entry);
        let signal = stereo_noise((0.5 * fs) as usize, 17);
        let input = with_lead_in(fs, &signal);
        let evs = events(&plugin, 0, &settings);
        let (out, _) = plugin.run_with(fs, &blocks, &input, &evs, |_, _, _| {}, None);
        let expected = engine_output(&chain, fs, &signal);
        for (o, e) in out.iter().zip(&expected) {
            let err = max_abs_diff(&o[settle_frames(fs)..], e);
            println!("fs {fs}: max difference from the core engine {err:e}");
            assert!(err <= 2e-5, "fs {fs}: max error {err:e}");
        }
    }
}

/// A chain with a long FIR arrives while the plugin plays (the host loads a state on
/// the main thread): it is built there and handed to the audio thread lock-free, the
/// old engine goes back to be dropped off the audio thread (the debug bundle aborts on
/// any allocation or free inside `process`), and the output becomes bands + chain.
#[test]
fn chain_loaded_while_playing_is_handed_over() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let taps: Vec<f64> = noise(8192, 19, 0.02).iter().map(|&v| v as f64).collect();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Fir::coefficients(taps);

    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    let state = state_bytes(&state);

    let signal = stereo_noise(2 * fs as usize, 23);
    let mut b = Plugin::new(entry);
    let evs = events(&b, 0, &settings);
    let load: MainAction = Box::new(move |instance| {
        let ext = instance.access_shared_handler(|s| *s.state.get().unwrap()).unwrap();
        ext.load(&instance.plugin_handle(), &mut &state[..]).expect("state loads while playing");
    });
    let (out, _) = b.run_with(fs, &[256], &signal, &evs, |_, _, _| {}, Some(((0.5 * fs) as usize, load)));

    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap();
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);
    let expected = engine_output(&full, fs, &signal);
    let tail = (1.5 * fs) as usize;
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[tail..], &e[tail..]);
        assert!(err <= 2e-5, "after the hand-over: max error {err:e}");
        let before = max_abs_diff(&o[..(0.4 * fs) as usize], &e[..(0.4 * fs) as usize]);
        assert!(before > 1e-3, "before the load the chain stages were not running");
    }
}

/// The saved state holds the parameters and the chain file; loaded into a new instance
/// it gives the same output, chain stages (an elliptic and a given FIR) included.
#[test]
fn state_round_trip_with_chain_stages() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Fir::coefficients(noise(257, 9, 0.05).iter().map(|&v| v as f64).collect());
    let mut a = Plugin::new(entry);
    // Set the parameters by processing their events, then put the chain into the state.
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    assert!(a.load(&state_bytes(&state)), "the edited state loads");
    let saved = a.save();

    let mut b = Plugin::new(entry);
    assert!(b.load(&saved), "the saved state loads into a new instance");
    assert_eq!(b.save(), saved, "the state survives a save/load cycle unchanged");

    let signal = stereo_noise(24_000, 5);
    let (out_a, _) = a.run(fs, 512, &signal, &[], |_, _, _| {});
    let (out_b, _) = b.run(fs, 512, &signal, &[], |_, _, _| {});
    assert_eq!(out_a, out_b, "identical output after reload");

    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap(); // the output gain comes after the chain stages
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);
    let expected = engine_output(&full, fs, &signal);
    for (o, e) in out_b.iter().zip(&expected) {
        let err = max_abs_diff(o, e);
        assert!(err <= 2e-5, "bands + chain stages: max error {err:e}");
    }
}

/// A session saved before the analog-matched switch existed (no `matched` in its
/// parameters) loads with the switch off: its bands sound as they did (cookbook), while a
/// new instance starts with it on.
#[test]
fn sessions_from_before_the_matched_switch_keep_cookbook_bands() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (mut settings, chain) = settings();
    settings.push(("Analog-Matched Bands".to_string(), Plain::Discrete(1.0)));
    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    assert_eq!(state["params"]["matched"], serde_json::json!({"bool": true}), "saved with the switch on");
    state["params"].as_object_mut().unwrap().remove("matched");
    let mut b = Plugin::new(entry);
    assert!(b.load(&state_bytes(&state)));
    let signal = stereo_noise(24_000, 6);
    let (out, _) = b.run(fs, 512, &with_lead_in(fs, &signal), &[], |_, _, _| {});
    let expected = engine_output(&chain, fs, &signal);
    let lead = settle_frames(fs);
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[lead..], e);
        assert!(err <= 2e-5, "an old session must keep its cookbook bands: {err:e}");
    }
    assert_eq!(state_json(&b.save())["params"]["matched"], serde_json::json!({"bool": false}));
}

#[test]
fn corrupt_or_newer_state_loads_defaults_without_crashing() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let signal = stereo_noise(4096, 3);
    let (settings, _) = settings();

    // Not JSON at all: the load fails, the instance keeps working with its settings.
    let mut p = Plugin::new(entry);
    assert!(!p.load(b"\x00\x01 this is not a plugin state"), "garbage is refused");
    let (out, _) = p.run(fs, 256, &signal, &[], |_, _, _| {});
    assert_eq!(out, signal, "defaults: every band off, 0 dB: the output is the input");

    // A newer version: parameters and chain fall back to the defaults.
    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["version"] = serde_json::Value::String("99.0.0".into());
    let mut b = Plugin::new(entry);
    b.load(&state_bytes(&state));
    let (out, _) = b.run(fs, 256, &signal, &[], |_, _, _| {});
    assert_eq!(out, signal, "a newer state is not applied");

    // A corrupt chain file inside an otherwise good state: the bands load, the chain is empty.
    let (settings, chain) = self::settings();
    let mut c = Plugin::new(entry);
    let evs = events(&c, 0, &settings);
    c.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&c.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string("{\"format\": \"ferrofx-chain\", \"version\": 7, \"stages\": []}").unwrap());
    let mut d = Plugin::new(entry);
    assert!(d.load(&state_bytes(&state)));
    let (out, _) = d.run(fs, 256, &signal, &[], |_, _, _| {});
    let expected = engine_output(&chain, fs, &signal);
    for (o, e) in out.iter().zip(&expected) {
        assert!(max_abs_diff(o, e) <= 2e-5, "bands kept, corrupt chain dropped");
    }
}

/// The reported latency equals the real delay: the impulse response lines up with the
/// core engine's at lag 0 and at no other lag.
#[test]
fn reported_latency_is_the_real_delay() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, chain) = settings();
    let mut plugin = Plugin::new(entry);
    let lead = settle_frames(fs);
    let mut impulse = vec![0.0f32; lead + 4096];
    impulse[lead] = 1.0;
    let input = vec![impulse.clone(), impulse];
    let evs = events(&plugin, 0, &settings);
    let (out, _) = plugin.run(fs, 128, &input, &evs, |_, _, _| {});
    let latency = plugin.latency() as usize;
    let mut unit = vec![0.0f32; 4096];
    unit[0] = 1.0;
    let h = engine_output(&chain, fs, &[unit])[0].clone();
    let y = &out[0][lead..];
    let lag_error = |lag: usize| -> f32 {
        (0..2048).map(|n| (y[n + lag] - h[n]).abs()).fold(0.0, f32::max)
    };
    let best = (0..64).min_by(|&a, &b| lag_error(a).total_cmp(&lag_error(b))).unwrap();
    println!("reported latency {latency}, best-matching lag {best} (error {:e})", lag_error(best));
    assert_eq!(best, latency, "the output is the engine's impulse response delayed by the reported latency");
    assert!(lag_error(best) <= 1e-5);
    assert!(y[0].abs() > 1e-3, "a zero-latency filter answers at the impulse itself");
}

/// Backend index of the parameter's enum (Auto, CPU, GPU).
const BACKEND_AUTO: f64 = 0.0;
const BACKEND_GPU: f64 = 2.0;

/// The GPU path in a real host: with the GPU (or Auto) backend, chain stages and host
/// blocks of at least the GPU minimum, the plugin reports one host block of latency,
/// and its output is the core engine's (bands + chain stages) delayed by exactly that,
/// with aligned and with irregular host blocks (those re-block; blocks that are due
/// before the GPU could answer run on the CPU). Bypassed, it passes the input through
/// delayed by the same latency. The debug bundle aborts on any allocation in `process`.
#[test]
fn gpu_backend_reports_its_block_of_latency_and_matches_the_engine() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let max_block = 2048;
    let (settings, chain) = settings();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0)
        | Fir::coefficients(noise(257, 9, 0.05).iter().map(|&v| v as f64).collect());
    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap();
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);
    let signal = stereo_noise(fs as usize, 31);
    let input = with_lead_in(fs, &signal);
    let lead = settle_frames(fs);
    let expected = engine_output(&full, fs, &signal);
    // The host paces the blocks (a real host calls at the audio clock): aligned blocks
    // leave the worker a whole host period. Lavapipe's "GPU" is this machine's CPU, shared
    // with the other host tests running in parallel, so the aligned case is paced far
    // slower than real time (a job takes ~6 ms here alone, 40 ms+ under that load).
    let log = std::env::var("NICE_LOG").map(PathBuf::from).ok();
    for (backend, blocks, pace_ms) in [
        (BACKEND_GPU, vec![max_block], 150),
        (BACKEND_GPU, vec![max_block, 1000, 48, 512, 1], 2),
        (BACKEND_AUTO, vec![max_block], 20),
    ] {
        let log_start = log.as_ref().and_then(|l| std::fs::metadata(l).ok()).map_or(0, |m| m.len() as usize);
        // Parameters (the backend included) set by a first run, the chain put into the
        // state, loaded into the instance that plays: the GPU path is chosen at activation.
        let mut a = Plugin::new(entry);
        let mut evs = events(&a, 0, &settings);
        evs.push((0, a.id("Backend").0, backend));
        a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
        let mut state = state_json(&a.save());
        state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
        let mut b = Plugin::new(entry);
        assert!(b.load(&state_bytes(&state)));
        let pace = std::time::Duration::from_millis(pace_ms);
        // Under Auto, the backend is switched to GPU half-way: same latency, so no
        // restart; the new policy applies at once. (The first activation with a new
        // latency always asks for one: nice-plug tells the host of a latency through a
        // restart; so a short first run, then the flag is cleared.)
        if backend == BACKEND_AUTO {
            b.run(fs, max_block, &[vec![0.0; max_block], vec![0.0; max_block]], &[], |_, _, _| {});
            b.instance.access_shared_handler(|s| s.restart_requested.store(false, Ordering::SeqCst));
        }
        let switch: Vec<(usize, ClapId, f64)> =
            if backend == BACKEND_AUTO { vec![(input[0].len() / 2, b.id("Backend").0, BACKEND_GPU)] } else { vec![] };
        let (out, _) = b.run_with(fs, &blocks, &input, &switch, |_, _, _| std::thread::sleep(pace), None);
        let latency = b.latency() as usize;
        if latency == 0 {
            let msg = "the plugin found no GPU adapter and stayed on the CPU path";
            if std::env::var("FERROFX_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{msg} (FERROFX_REQUIRE_GPU=1)");
            }
            println!("SKIPPED: {msg}");
            return;
        }
        assert_eq!(latency, max_block, "one host block (the largest) of latency");
        let mut worst = 0.0f32;
        for (o, e) in out.iter().zip(&expected) {
            assert!(o[..lead + latency].iter().all(|&v| v.abs() < 1e-30), "silence before the delayed signal");
            let err = max_abs_diff(&o[lead + latency..], &e[..e.len() - latency]);
            worst = worst.max(err);
        }
        // What the plugin says it did (logged at deactivation, off the audio thread).
        let said = log
            .as_ref()
            .and_then(|l| std::fs::read(l).ok())
            .map(|b| String::from_utf8_lossy(&b[log_start.min(b.len())..]).into_owned())
            .unwrap_or_default();
        let line = said.lines().rev().find(|l| l.contains("GPU path (")).unwrap_or("").to_string();
        println!("backend {backend}, host blocks {blocks:?}: latency {latency}, max error vs the engine {worst:e}\n  {line}");
        assert!(worst <= 2e-5, "the output is the engine's delayed by the reported latency: error {worst:e}");
        if backend == BACKEND_AUTO {
            assert!(line.contains("GPU path (Gpu,"), "the switch to GPU applies without a restart: {line:?}");
            let restart = b.instance.access_shared_handler(|s| s.restart_requested.load(Ordering::SeqCst));
            assert!(!restart, "Auto and GPU share the latency: no restart needed");
        }
        if backend == BACKEND_GPU && blocks.len() == 1 {
            let on_gpu: u64 = line
                .split(", ")
                .find_map(|p| p.strip_suffix(" on the GPU worker").and_then(|n| n.trim().parse().ok()))
                .unwrap_or(0);
            assert!(on_gpu > 0, "aligned, paced blocks should come back from the GPU worker: {line:?}");
        }
    }

    // A chain the GPU path does not take (a FIR longer than its 16,384 taps) runs on the
    // CPU engine, delayed to the same latency: the output is still the engine's, delayed.
    let long_fir = Chain::from(Fir::coefficients(noise(20_000, 3, 0.01).iter().map(|&v| v as f64).collect()));
    let mut long_full = chain.clone();
    let gain = long_full.stages.pop().unwrap();
    long_full.stages.extend(long_fir.stages.clone());
    long_full.stages.push(gain);
    let mut a = Plugin::new(entry);
    let mut evs = events(&a, 0, &settings);
    evs.push((0, a.id("Backend").0, BACKEND_GPU));
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&long_fir.to_json()).unwrap());
    let mut b = Plugin::new(entry);
    assert!(b.load(&state_bytes(&state)));
    let (out, _) = b.run_with(fs, &[max_block, 700], &input, &[], |_, _, _| {}, None);
    let latency = b.latency() as usize;
    assert_eq!(latency, max_block);
    let expected = engine_output(&long_full, fs, &signal);
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[lead + latency..], &e[..e.len() - latency]);
        assert!(err <= 2e-5, "a 20,000-tap FIR on the GPU path's CPU engine, delayed: {err:e}");
    }

    // Bypassed on the GPU path: the input, delayed by the reported latency, bit for bit.
    let mut a = Plugin::new(entry);
    let mut evs = events(&a, 0, &settings);
    evs.push((0, a.id("Backend").0, BACKEND_GPU));
    evs.push((0, a.id("Bypass").0, 1.0));
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    let mut b = Plugin::new(entry);
    assert!(b.load(&state_bytes(&state)));
    let (out, _) = b.run_with(fs, &[max_block, 300], &signal, &[], |_, _, _| {}, None);
    let latency = b.latency() as usize;
    assert_eq!(latency, max_block);
    for (o, x) in out.iter().zip(&signal) {
        assert_eq!(&o[latency..], &x[..x.len() - latency], "bypassed: the input delayed by the latency");
    }
}

/// Switching to the GPU backend while playing: the plugin asks the host to restart it
/// (the latency changes) and keeps the zero-latency CPU path, and reports that latency,
/// until then; after the restart it reports one host block of latency.
#[test]
fn switching_to_the_gpu_backend_while_playing_requests_a_restart() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let block = 2048;
    let (settings, chain) = settings();
    let extra = Elliptic::lowpass(12_000.0, 5, 0.5, 60.0) | Biquad::peaking(500.0, 1.0, 2.0);
    let mut full = chain.clone();
    let gain = full.stages.pop().unwrap();
    full.stages.extend(extra.stages.clone());
    full.stages.push(gain);

    let mut a = Plugin::new(entry);
    let evs = events(&a, 0, &settings);
    a.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &evs, |_, _, _| {});
    let mut state = state_json(&a.save());
    state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&extra.to_json()).unwrap());
    let mut b = Plugin::new(entry);
    assert!(b.load(&state_bytes(&state)));
    let signal = stereo_noise(fs as usize, 41);
    let input = with_lead_in(fs, &signal);
    let lead = settle_frames(fs);
    let switch = vec![(lead + 10_000, b.id("Backend").0, BACKEND_GPU)];
    let (out, _) = b.run(fs, block, &input, &switch, |_, _, _| {});
    assert_eq!(b.latency(), 0, "the latency stays the audio's until the restart");
    assert!(b.take_restart_request(), "a latency change needs a restart; the plugin must ask for one");
    let expected = engine_output(&full, fs, &signal);
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[lead..], e);
        assert!(err <= 2e-5, "until the restart the CPU path keeps running, without latency: {err:e}");
    }
    // The host restarts the plugin: now the GPU path, with its latency reported.
    let (out, _) = b.run(fs, block, &input, &[], |_, _, _| std::thread::sleep(std::time::Duration::from_millis(2)));
    let latency = b.latency() as usize;
    if latency == 0 {
        assert!(std::env::var("FERROFX_REQUIRE_GPU").as_deref() != Ok("1"), "no GPU adapter (FERROFX_REQUIRE_GPU=1)");
        println!("SKIPPED: no GPU adapter; the plugin stayed on the CPU path");
        return;
    }
    assert_eq!(latency, block);
    for (o, e) in out.iter().zip(&expected) {
        let err = max_abs_diff(&o[lead + latency..], &e[..e.len() - latency]);
        assert!(err <= 2e-5, "after the restart: the engine's output delayed by {latency}: {err:e}");
    }
}

/// The automation of the torture test: every parameter follows its own sweep, and jumps
/// to a random value (held 100 ms) about twice a second. A pure function of time, so the
/// settings at any instant can be replayed without modulation.
struct Automation {
    /// (name, id, min, max) in a fixed order.
    params: Vec<(String, ClapId, f64, f64)>,
    /// Per parameter: (start time in s, value) of each jump.
    jumps: Vec<Vec<(f64, f64)>>,
}

const JUMP_HOLD_S: f64 = 0.1;

impl Automation {
    fn new(plugin: &Plugin, seconds: f64) -> Automation {
        Self::of(plugin, seconds, |_| true)
    }

    /// Automation of the parameters whose names pass `keep`.
    fn of(plugin: &Plugin, seconds: f64, keep: impl Fn(&str) -> bool) -> Automation {
        let mut params: Vec<(String, ClapId, f64, f64)> =
            plugin.params.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.0, v.1, v.2)).collect();
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rng = ferrofx_testkit::Rng::new(0x1234_5678_9abc_def0);
        let mut next = move || rng.unit();
        let jumps = params
            .iter()
            .map(|_| {
                let mut t = 0.0;
                let mut v = Vec::new();
                loop {
                    t += 0.1 + 0.8 * next(); // about two jumps a second
                    if t >= seconds {
                        break v;
                    }
                    v.push((t, next()));
                }
            })
            .collect();
        Automation { params, jumps }
    }

    fn discrete(name: &str) -> bool {
        ["On", "Shape", "Slope", "Linkwitz-Riley"].iter().any(|s| name.ends_with(s))
            || matches!(name, "Backend" | "GPU Min Block" | "Bypass")
    }

    /// CLAP value of parameter `i` at time `t`.
    fn value(&self, i: usize, t: f64) -> f64 {
        let (name, _, min, max) = &self.params[i];
        let jumped = self.jumps[i].iter().rev().find(|(start, _)| *start <= t && t < start + JUMP_HOLD_S);
        let unit = match jumped {
            Some((_, v)) => *v,
            None => {
                let rate = 0.1 + 0.37 * (i % 13) as f64; // 0.1 .. 4.5 Hz sweeps
                0.5 + 0.5 * (2.0 * std::f64::consts::PI * rate * t + i as f64).sin()
            }
        };
        let v = min + (max - min) * unit;
        if Self::discrete(name) {
            // Bypass spends a third of the time on; other switches are swept over all steps.
            if name == "Bypass" {
                return if unit > 0.67 { 1.0 } else { 0.0 };
            }
            v.round()
        } else {
            v
        }
    }

    fn events_at(&self, t: f64, evs: &mut Vec<ParamValueEvent>) {
        for (i, p) in self.params.iter().enumerate() {
            evs.push(ParamValueEvent::new(0, p.1, Pckn::match_all(), self.value(i, t)));
        }
    }

    fn snapshot(&self, t: f64) -> Vec<(usize, ClapId, f64)> {
        (0..self.params.len()).map(|i| (0, self.params[i].1, self.value(i, t))).collect()
    }
}

/// Low-passed noise (one pole at 1 kHz): its own sample-to-sample steps are small, so a
/// click stands out, unlike in white noise.
fn dark_noise(frames: usize, seed: u64, fs: f64) -> Vec<f32> {
    let a = (-2.0 * std::f64::consts::PI * 1000.0 / fs).exp();
    let mut y = 0.0f64;
    noise(frames, seed, 1.0)
        .into_iter()
        .map(|x| {
            y = a * y + (1.0 - a) * x as f64 * 4.0;
            y as f32
        })
        .collect()
}

/// Click measure: in each 10 ms, the largest sample-to-sample step relative to the RMS of
/// the steps over the 20 ms around it (never below `floor`, so inaudible residues in
/// near-silence don't count); the worst over the signal. A click is one step far larger
/// than the steps the signal around it takes. The measure ignores gain and spectrum, so
/// outputs at different settings compare, and a short burst of bright sound that the
/// automation opens (a cut stepping to a shallower slope under +24 dB boosts) is not
/// taken for a click, as it was when steps were compared with the signal's RMS.
fn click_measure(y: &[f32], floor: f64) -> (f64, usize) {
    let w = 480;
    let margin = 240;
    let mut worst = (0.0, 0);
    let mut k = 1200;
    while k + w + margin + 1 < y.len() {
        let steps: Vec<f64> = y[k - margin..k + w + margin].windows(2).map(|p| (p[1] - p[0]).abs() as f64).collect();
        let step = steps[margin..margin + w].iter().fold(0.0f64, |m, v| m.max(*v));
        let rms = (steps.iter().map(|v| v * v).sum::<f64>() / steps.len() as f64).sqrt();
        let r = step / rms.max(floor);
        if r > worst.0 {
            worst = (r, k);
        }
        k += w;
    }
    worst
}

/// RMS of the sample-to-sample steps of `x`.
fn step_rms(x: &[f32]) -> f64 {
    (x.windows(2).map(|p| ((p[1] - p[0]) as f64).powi(2)).sum::<f64>() / x.len().max(2) as f64).sqrt()
}

/// Largest step relative to a clean sine's step at the local amplitude (max over the
/// neighbouring periods), amplitude floored at `floor`.
fn sine_click_measure(y: &[f32], f0: f64, fs: f64, floor: f64) -> (f64, usize) {
    let period = (fs / f0) as usize;
    let ideal = 2.0 * (std::f64::consts::PI * f0 / fs).sin();
    let amp: Vec<f64> = y.chunks(period).map(|c| c.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64).collect();
    let mut worst = (0.0, 0);
    for n in period..y.len() - period {
        let a = amp[n / period].max(amp[n / period - 1]).max(amp[(n / period + 1).min(amp.len() - 1)]).max(floor);
        let r = (y[n] - y[n - 1]).abs() as f64 / (a * ideal);
        if r > worst.0 {
            worst = (r, n);
        }
    }
    worst
}

/// Every parameter swept and randomly jumped (about 340 jumps a second over the 170
/// parameters), 10 s of noise at 1- and 64-sample blocks: the output is finite, never
/// runs away, and is free of clicks: its click measure stays within 3x the worst click
/// measure of the unmodulated output, i.e. the same input through the plugin frozen at
/// the settings the automation visits (100 instants, each settled for 0.75 s first).
/// The measure separates: on the equaliser alone under a like torture
/// (`plugin/examples/torture_probe.rs`), band switches made at once measure 7x the
/// unmodulated output, switches made as coefficient glides between unrelated designs
/// 4.7x, and the cross-fades the equaliser uses 1.4x.
#[test]
fn automation_torture_is_finite_bounded_and_click_free() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let seconds = 10.0;
    let frames = (seconds * fs) as usize;
    let input = vec![dark_noise(frames, 71, fs), dark_noise(frames, 72, fs)];
    // -60 dB re the input's own steps.
    let floor = 1e-3 * step_rms(&input[0]);
    let automation = Automation::new(&Plugin::new(entry), seconds);

    // The unmodulated output at the settings the automation visits.
    let mut frozen_worst: f64 = 0.0;
    let instants = 100;
    for j in 1..=instants {
        // 1 s from the defaults: the smoothing (15 ms) has settled long before the last
        // 0.25 s, which is what is measured.
        let n = (j * frames / (instants + 1)).max(fs as usize);
        let from = n - fs as usize;
        let segment: Vec<Vec<f32>> = input.iter().map(|c| c[from..n].to_vec()).collect();
        let mut frozen = Plugin::new(entry);
        let (out, _) = frozen.run(fs, 64, &segment, &automation.snapshot(n as f64 / fs), |_, _, _| {});
        frozen_worst = frozen_worst.max(click_measure(&out[0][(0.75 * fs) as usize..], floor).0);
    }

    for block in [64usize, 1] {
        let mut plugin = Plugin::new(entry);
        let (out, _) = plugin.run(fs, block, &input, &[], |start, _, evs| {
            automation.events_at(start as f64 / fs, evs);
        });
        for y in &out {
            assert!(y.iter().all(|v| v.is_finite()), "block {block}: non-finite output");
            let peak = y.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            // Frozen settings of this torture reach +180 dB (24 resonant boosts stacked);
            // a filter gone unstable grows without bound and passes this in milliseconds.
            assert!(peak < 1e12, "block {block}: output peak {peak:e}: runaway");
        }
        let (measure, at) = click_measure(&out[0], floor);
        println!(
            "block {block}: click measure {measure:.2} (at {:.3} s); unmodulated at the visited settings: up to {frozen_worst:.2}",
            at as f64 / fs
        );
        assert!(
            measure <= 3.0 * frozen_worst,
            "block {block}: click measure {measure:.2}, more than 3x the unmodulated output's {frozen_worst:.2}"
        );
    }
}

/// Cuts swept and jumped (frequency over 20 Hz..20 kHz, slope 6..96 dB/oct, Butterworth /
/// Linkwitz-Riley) on a 200 Hz sine, where a click stands out most: the largest step
/// relative to a clean sine's at the local amplitude (1.0 for unmodulated output; floored
/// at -40 dB re the input). Cuts are not resonant, so nothing but a click can make fast
/// steps here. Frequency sweeps alone measure 1.1-1.5 in the state-variable form (40-70
/// with coefficients swapped under a transposed-form state); with slope and type
/// switches cross-faded over 10 ms the whole automation measures about 3 (coefficient
/// glides between designs of different orders reached about 8).
#[test]
fn cut_automation_on_a_sine_is_click_free() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let seconds = 10.0;
    let frames = (seconds * fs) as usize;
    let f0 = 200.0;
    let sine: Vec<f32> = (0..frames).map(|n| (0.25 * (2.0 * std::f64::consts::PI * f0 * n as f64 / fs).sin()) as f32).collect();
    let probe = Plugin::new(entry);
    let cut = |n: &str| ["Band 1 ", "Band 24 "].iter().any(|b| n.starts_with(b)) && ["Frequency", "Slope", "Linkwitz-Riley"].iter().any(|w| n.ends_with(w));
    let automation = Automation::of(&probe, seconds, cut);
    assert_eq!(automation.params.len(), 6);
    let on = [("Band 1 On".to_string(), Plain::Discrete(1.0)), ("Band 24 On".to_string(), Plain::Discrete(1.0))];
    for block in [64usize, 1] {
        let mut plugin = Plugin::new(entry);
        let start_events = events(&plugin, 0, &on);
        let (out, _) = plugin.run(fs, block, &[sine.clone(), sine.clone()], &start_events, |start, _, evs| {
            automation.events_at(start as f64 / fs, evs);
        });
        let (measure, at) = sine_click_measure(&out[0], f0, fs, 1e-2 * 0.25);
        println!("block {block}: sine click measure {measure:.2} at {:.3} s (clean sine: 1.0)", at as f64 / fs);
        assert!(measure <= 10.0, "block {block}: a step {measure:.2}x a clean sine's: a click");
    }
}

#[test]
fn non_finite_and_subnormal_input() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let (settings, _) = settings();
    let frames = 48_000;

    // NaN and infinities in the middle: the output is finite everywhere and, once the
    // bad samples are past and the filters have forgotten them, matches a clean run.
    let mut dirty = stereo_noise(frames, 11);
    for (i, v) in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -f32::MAX].iter().enumerate() {
        dirty[0][10_000 + 100 * i] = *v;
        dirty[1][10_000 + 100 * i + 7] = *v;
    }
    let mut plugin = Plugin::new(entry);
    let evs = events(&plugin, 0, &settings);
    let (out, _) = plugin.run(fs, 256, &dirty, &evs, |_, _, _| {});
    for y in &out {
        assert!(y.iter().all(|v| v.is_finite()), "non-finite input never gives non-finite output");
    }
    let tail_start = 40_000;
    assert!(out[0][tail_start..].iter().any(|v| v.abs() > 1e-3), "the plugin is still filtering after the bad samples");

    // Subnormal input costs no more than normal input (best of several runs each).
    let subnormal: Vec<Vec<f32>> = (0..2).map(|c| noise(frames, 20 + c, 1.0).iter().map(|v| v * 1e-39).collect()).collect();
    let normal = stereo_noise(frames, 30);
    let time = |input: &[Vec<f32>]| -> f64 {
        (0..5)
            .map(|_| {
                let mut p = Plugin::new(entry);
                let evs = events(&p, 0, &settings);
                let (_, t) = p.run(fs, 256, input, &evs, |_, _, _| {});
                t.iter().sum::<f64>()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let t_sub = time(&subnormal);
    let t_norm = time(&normal);
    println!("processing time: subnormal input {:.2} ms, normal {:.2} ms ({:.2}x)", t_sub * 1e3, t_norm * 1e3, t_sub / t_norm);
    assert!(t_sub <= 2.0 * t_norm, "subnormal input took {:.2}x as long as normal input", t_sub / t_norm);
}

/// With every band off and no chain, the output stage sanitises the input in the same
/// pass as the output gain (`output.rs`): at 0 dB the output is the input with NaN,
/// infinities and subnormals replaced by zero, bit for bit, at block sizes that leave
/// samples past the pass's 16-sample lanes; at +6 dB it is the input scaled, and the block
/// whose largest sample overflows is silenced while the blocks after it are not.
#[test]
fn idle_plugin_outputs_the_sanitised_input() {
    let Some(entry) = entry() else { return };
    let fs = 48_000.0;
    let frames = 9_600;
    let mut x = stereo_noise(frames, 41);
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-39, -1e-40, 0.0, -0.0];
    for (i, v) in specials.iter().enumerate() {
        x[0][1_000 + 37 * i] = *v;
        x[1][1_003 + 41 * i] = *v;
    }
    for block in [64usize, 100, 333] {
        let mut plugin = Plugin::new(entry);
        let (out, _) = plugin.run(fs, block, &x, &[], |_, _, _| {});
        for (c, (y, x)) in out.iter().zip(&x).enumerate() {
            for (i, (&y, &x)) in y.iter().zip(x).enumerate() {
                let want = if x.is_finite() && x.abs() >= f32::MIN_POSITIVE { x } else { 0.0 };
                assert_eq!(y.to_bits(), want.to_bits(), "block {block}, channel {c}, frame {i}: {y:e} for input {x:e}");
            }
        }
    }
    // +6 dB, set before the first block (its 20 ms glide is over by frame 2,400).
    let huge_at = 6_000;
    x[0][huge_at] = f32::MAX;
    let block = 100;
    let mut plugin = Plugin::new(entry);
    let evs = events(&plugin, 0, &[("Output Gain".to_string(), Plain::OutDb(6.0))]);
    let (out, _) = plugin.run(fs, block, &x, &evs, |_, _, _| {});
    let gain = 10f32.powf(6.0 / 20.0);
    let silenced = (huge_at / block) * block..(huge_at / block + 1) * block;
    for (c, (y, x)) in out.iter().zip(&x).enumerate() {
        for i in 2_400..frames {
            if silenced.contains(&i) {
                assert_eq!(y[i], 0.0, "channel {c}, frame {i}: the overflowing block is silenced");
            } else {
                assert!((y[i] - x[i] * gain).abs() <= 1e-3 * x[i].abs(), "channel {c}, frame {i}: {} for {} at +6 dB", y[i], x[i]);
            }
        }
    }
}

/// Output checks a validator makes: every sample finite, none subnormal, and within the
/// largest gain the parameters can ask for (24 bands of +24 dB and +24 dB output gain
/// on a signal of peak `peak`).
#[track_caller]
fn assert_valid_output(out: &[Vec<f32>], peak: f32, what: &str) {
    let bound = peak * 10f32.powf((24.0 * 24.0 + 24.0) / 20.0);
    for (c, y) in out.iter().enumerate() {
        for (i, &v) in y.iter().enumerate() {
            assert!(v.is_finite(), "{what}: channel {c} frame {i} is {v}");
            assert!(v == 0.0 || v.abs() >= f32::MIN_POSITIVE, "{what}: channel {c} frame {i} is subnormal ({v:e})");
            assert!(v.abs() <= bound, "{what}: channel {c} frame {i} is {v:e}, past any gain the parameters allow");
        }
    }
}

#[test]
fn activates_and_processes_at_any_sample_rate_from_1_hz_to_1_5_mhz() {
    let Some(entry) = entry() else { return };
    let (settings, _) = settings();
    // Steinberg's validator tries 1,234,567.8 Hz; hosts may offer anything.
    for fs in [1.0, 7.0, 100.0, 999.0, 8_000.0, 768_001.0, 1_234_567.8, 1_500_000.0] {
        let mut plugin = Plugin::new(entry);
        let evs = events(&plugin, 0, &settings);
        let input = stereo_noise(3_000, 5);
        // `run` asserts that activation succeeds.
        let (out, _) = plugin.run_with(fs, &[1, 64, 512], &input, &evs, |_, _, _| {}, None);
        assert_valid_output(&out, 0.5, &format!("fs {fs}"));
        assert!(out[0].iter().any(|v| *v != 0.0), "fs {fs}: the plugin still passes signal");
    }
}

#[test]
fn random_values_for_every_parameter_keep_the_output_finite_normal_and_bounded() {
    // clap-validator's param-fuzz-basic, built in: random values for every parameter,
    // set at block starts and mid-block, on noise and on a decaying tail.
    let Some(entry) = entry() else { return };
    let mut rng = ferrofx_testkit::Rng::new(0x1234_5678_9ABC_DEF1);
    let mut next = move || rng.unit();
    for round in 0..6 {
        let fs = [44_100.0, 48_000.0, 96_000.0][round % 3];
        let mut plugin = Plugin::new(entry);
        if round % 2 == 1 {
            // Chain stages whose tail decays slowly through the range where float32 turns
            // subnormal once the input stops.
            plugin.run(fs, 64, &[vec![0.0; 64], vec![0.0; 64]], &[], |_, _, _| {});
            let mut state = state_json(&plugin.save());
            let tail = Butterworth::lowpass(200.0, 2) | ferrofx::Stage::gain(-60.0);
            state["fields"]["chain"] = serde_json::Value::String(serde_json::to_string(&tail.to_json()).unwrap());
            assert!(plugin.load(&state_bytes(&state)), "the chain loads");
        }
        let params: Vec<(ClapId, f64, f64)> = plugin.params.values().copied().collect();
        let frames = 48_000;
        let mut evs = Vec::new();
        for at in [0, 4_000, 8_000, 8_123, 12_000] {
            for &(id, min, max) in &params {
                evs.push((at, id, min + next() * (max - min)));
            }
        }
        evs.sort_by_key(|e| e.0);
        // Noise, then silence: the tail decays through the range where subnormals appear.
        let mut input = stereo_noise(frames, 40 + round as u64);
        for ch in input.iter_mut() {
            ch[frames / 3..].fill(0.0);
        }
        let (out, _) = plugin.run_with(fs, &[1, 256, 4096, 7], &input, &evs, |_, _, _| {}, None);
        assert_valid_output(&out, 0.5, &format!("round {round}"));
    }
}
