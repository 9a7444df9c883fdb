//! The bundled `FerroFX.clap`'s editor, opened by a real CLAP host (`clack-host`) in an X11
//! window on a virtual display (Xvfb) and driven with real pointer input (xdotool): the
//! host must receive every edit as a parameter gesture, begin / values / end, from the
//! plugin's `process` output events while it plays. Run at the system scale 1 and then
//! at 2 (`Xft.dpi: 192`, how X11 desktops ask for HiDPI): the same gesture in logical
//! pixels must set the same values, and the editor must fill the doubled window.
//!
//! Builds nothing itself: run `cargo xtask bundle ferrofx` first (scripts/test.sh does).
//! Needs `Xvfb` and `xdotool` (scripts/install-deps.sh installs both). Without the bundle
//! or those tools it prints why and passes, unless `FERROFX_REQUIRE_BUNDLES=1` (set by
//! scripts/test.sh, so CI fails instead).

use std::ffi::CString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clack_extensions::gui::{GuiApiType, GuiConfiguration, GuiSize, Window as ClapWindow};
use clack_extensions::params::ParamInfoBuffer;
use clack_host::events::event_types::{ParamGestureBeginEvent, ParamGestureEndEvent, ParamValueEvent};
use clack_host::prelude::*;
use ferrofx_plugin::control::params::ranges;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, CreateWindowAux, ImageFormat, PropMode, WindowClass};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

const PLUGIN_ID: &str = "org.ferrofx.equaliser";
/// The editor's default size in logical pixels.
const EDITOR_W: u32 = 1000;
const EDITOR_H: u32 = 720;

// ---------------------------------------------------------------- the host

// testkit's: it checks the CLAP rules for the plugin's calls into it, and grants nothing
// by itself: the editor's resize requests are kept for the test's main loop to grant
// (`gui.set_size`), as a host does.
use ferrofx_testkit::clap::{Host, MainThread, Shared};

// ---------------------------------------------------------------- what is needed

fn required() -> bool {
    std::env::var("FERROFX_REQUIRE_BUNDLES").as_deref() == Ok("1")
}

fn skip(msg: &str) {
    if required() {
        panic!("{msg}");
    }
    println!("SKIPPED: {msg}");
}

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// A virtual X display, for the rest of this test process. It is stopped only after the
/// process has exited: the plugin's window library keeps an Xlib connection open, and
/// Xlib ends the whole process when its server goes away under it.
struct Xvfb {
    display: String,
}

impl Xvfb {
    fn start(width: u32, height: u32) -> Xvfb {
        // A display number no other X server holds.
        let n = (90..200)
            .find(|n| !std::path::Path::new(&format!("/tmp/.X{n}-lock")).exists() && !std::path::Path::new(&format!("/tmp/.X11-unix/X{n}")).exists())
            .expect("a free X display number");
        let display = format!(":{n}");
        // -noreset: the server would otherwise restart when its last client leaves. The
        // shell waits for this process to end, then stops the server (SIGTERM, so that
        // it removes its lock file and socket).
        let script = format!(
            "Xvfb {display} -screen 0 {width}x{height}x24 -nolisten tcp -noreset >/dev/null 2>&1 & x=$!; \
             while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; kill $x",
            pid = std::process::id()
        );
        // Not waited for: the shell outlives this process on purpose (it stops the server).
        #[allow(clippy::zombie_processes)]
        Command::new("sh").arg("-c").arg(script).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("Xvfb starts");
        let t0 = Instant::now();
        while RustConnection::connect(Some(&display)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(20), "Xvfb {display} did not accept connections within 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        Xvfb { display }
    }
}

fn xdotool(display: &str, args: &[String]) {
    let status = Command::new("xdotool").env("DISPLAY", display).args(args).status().expect("xdotool runs");
    assert!(status.success(), "xdotool {args:?} failed");
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

// ---------------------------------------------------------------- one session

/// One parameter event the plugin sent to the host.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Out {
    Begin(u32),
    Value(u32, f64),
    End(u32),
}

struct Session {
    events: Vec<Out>,
    /// Parameter name -> (CLAP id, value at the end).
    values: Vec<(String, u32, f64)>,
    /// Distinct colours in the window's bottom-right quarter, once drawn.
    corner_colours: usize,
    /// At scale 1: the editor's size after a session with the window at [`RESIZED`] was
    /// loaded while it was open.
    resized: Option<(u32, u32)>,
}

/// The window size in the session loaded at scale 1, in logical pixels.
const RESIZED: (u32, u32) = (1100, 780);

impl Session {
    fn id(&self, name: &str) -> u32 {
        self.values.iter().find(|v| v.0 == name).unwrap_or_else(|| panic!("no parameter {name:?}")).1
    }
    fn value(&self, name: &str) -> f64 {
        self.values.iter().find(|v| v.0 == name).unwrap_or_else(|| panic!("no parameter {name:?}")).2
    }
    /// The gestures and values one parameter received, in order: 'b', 's' (one per
    /// value) and 'e'.
    fn kinds(&self, name: &str) -> Vec<char> {
        let id = self.id(name);
        self.events
            .iter()
            .filter_map(|e| match *e {
                Out::Begin(i) if i == id => Some('b'),
                Out::Value(i, _) if i == id => Some('s'),
                Out::End(i) if i == id => Some('e'),
                _ => None,
            })
            .collect()
    }
    /// The values one parameter received, in order.
    fn values_of(&self, name: &str) -> Vec<f64> {
        let id = self.id(name);
        self.events.iter().filter_map(|e| if let Out::Value(i, v) = *e { (i == id).then_some(v) } else { None }).collect()
    }
}

/// Counts the distinct colours of a window region (the image as the X server holds it).
fn colours(conn: &RustConnection, window: u32, x: i16, y: i16, w: u16, h: u16) -> usize {
    let Ok(reply) = conn.get_image(ImageFormat::Z_PIXMAP, window, x, y, w, h, !0).map(|c| c.reply()) else { return 0 };
    let Ok(image) = reply else { return 0 };
    let mut seen: Vec<u32> = image.data.chunks_exact(4).map(|p| u32::from_le_bytes([p[0], p[1], p[2], 0])).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Opens the editor at system scale `scale` in a parent window on `x`, plays silence
/// while `gesture(scale)` drives the pointer, and returns what the host received.
fn session(entry: &PluginEntry, x: &Xvfb, scale: u32, gesture: impl FnOnce(&Session, &Mutex<Vec<Out>>)) -> Session {
    let conn = RustConnection::connect(Some(&x.display)).expect("X connection").0;
    let screen = conn.setup().roots[0].clone();
    // How an X11 desktop states its scale: the Xft.dpi resource on the root window, read
    // by the plugin's window library (baseview) when it opens a window.
    let resources = format!("Xft.dpi:\t{}\n", 96 * scale);
    conn.change_property8(PropMode::REPLACE, screen.root, AtomEnum::RESOURCE_MANAGER, AtomEnum::STRING, resources.as_bytes())
        .expect("set resources");
    let parent = conn.generate_id().expect("window id");
    let (w, h) = ((EDITOR_W * scale) as u16, (EDITOR_H * scale) as u16);
    conn.create_window(
        screen.root_depth,
        parent,
        screen.root,
        0,
        0,
        w,
        h,
        0,
        WindowClass::INPUT_OUTPUT,
        screen.root_visual,
        &CreateWindowAux::new().background_pixel(screen.black_pixel),
    )
    .expect("create the parent window");
    conn.map_window(parent).expect("map");
    conn.flush().expect("flush");

    let host = HostInfo::new("ferrofx-gui-test", "FerroFX", "https://example.invalid", "1.0").unwrap();
    let id = CString::new(PLUGIN_ID).unwrap();
    let mut instance =
        PluginInstance::<Host>::new(|_| Shared::default(), |shared| MainThread { shared }, entry, &id, &host).expect("the plugin instantiates");
    let params = instance.access_shared_handler(|s| *s.params.get().unwrap()).expect("params extension");
    let gui = instance.access_shared_handler(|s| *s.gui.get().unwrap()).expect("gui extension");
    let mut names = Vec::new();
    {
        let handle = instance.plugin_handle();
        let mut buf = ParamInfoBuffer::new();
        for i in 0..params.count(&handle) {
            let info = params.get_info(&handle, i, &mut buf).expect("param info");
            names.push((String::from_utf8_lossy(info.name).into_owned(), info.id));
        }
        let config = GuiConfiguration { api_type: GuiApiType::X11, is_floating: false };
        assert!(gui.is_api_supported(&handle, config), "the plugin embeds in X11 windows");
        gui.create(&handle, config).expect("the editor is created");
        // SAFETY: `parent` is a live window on this display until after `destroy` below.
        unsafe { gui.set_parent(&handle, ClapWindow::from_x11_handle(parent.into())) }.expect("the editor embeds");
        gui.show(&handle).expect("the editor shows");
        let size = gui.get_size(&handle).expect("the editor has a size");
        assert_eq!((size.width, size.height), (EDITOR_W, EDITOR_H), "get_size reports the logical size");
    }

    let config = PluginAudioConfiguration { sample_rate: 48_000.0, min_frames_count: 1, max_frames_count: 256 };
    let processor = ferrofx_testkit::clap::activate(&mut instance, config).expect("the plugin activates");
    let stop = AtomicBool::new(false);
    let events = Arc::new(Mutex::new(Vec::<Out>::new()));
    let mut corner_colours = 0;
    let mut resized = None;
    let stopped = std::thread::scope(|scope| {
        let (stop, audio_events) = (&stop, events.clone());
        let audio = scope.spawn(move || {
            let mut p = processor.start_processing().expect("processing starts");
            let mut inputs = AudioPorts::with_capacity(2, 1);
            let mut outputs = AudioPorts::with_capacity(2, 1);
            let mut in_buf = vec![vec![0.0f32; 256]; 2];
            let mut out_buf = vec![vec![0.0f32; 256]; 2];
            // Preallocated: the debug bundle aborts on an allocation inside `process`.
            let mut out_events = EventBuffer::with_capacity(4096);
            while !stop.load(Ordering::SeqCst) {
                let in_audio = inputs.with_input_buffers([AudioPortBuffer {
                    latency: 0,
                    channels: AudioPortBufferType::f32_input_only(in_buf.iter_mut().map(|b| InputChannel::variable(&mut b[..]))),
                }]);
                let mut out_audio = outputs.with_output_buffers([AudioPortBuffer {
                    latency: 0,
                    channels: AudioPortBufferType::f32_output_only(out_buf.iter_mut().map(|b| &mut b[..])),
                }]);
                out_events.clear();
                p.process(&in_audio, &mut out_audio, &InputEvents::empty(), &mut OutputEvents::from_buffer(&mut out_events), None, None)
                    .expect("process succeeds");
                let mut seen = audio_events.lock().unwrap();
                for e in out_events.iter() {
                    if let Some(b) = e.as_event::<ParamGestureBeginEvent>() {
                        seen.push(Out::Begin(b.param_id().unwrap().get()));
                    } else if let Some(v) = e.as_event::<ParamValueEvent>() {
                        seen.push(Out::Value(v.param_id().unwrap().get(), v.value()));
                    } else if let Some(g) = e.as_event::<ParamGestureEndEvent>() {
                        seen.push(Out::End(g.param_id().unwrap().get()));
                    }
                }
                drop(seen);
                // About real time: 256 frames at 48 kHz.
                std::thread::sleep(Duration::from_millis(5));
            }
            p.stop_processing()
        });
        // The editor is drawn once its window holds more than a few colours (within a
        // minute: the first frame compiles shaders on a software renderer).
        let t0 = Instant::now();
        while colours(&conn, parent, 0, 0, w, h) < 50 {
            assert!(t0.elapsed() < Duration::from_secs(60), "the editor did not draw within a minute");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_millis(500));
        corner_colours = colours(&conn, parent, (w / 2) as i16, (h / 2) as i16, w / 2, h / 2);
        // A picture to look at, when asked for (scripts/test.sh does).
        if let Some(dir) = std::env::var_os("FERROFX_SCREENSHOT_DIR") {
            let file = PathBuf::from(dir).join(format!("clap-editor-scale-{scale}.png"));
            let _ = std::fs::create_dir_all(file.parent().unwrap());
            let ok = Command::new("import").env("DISPLAY", &x.display).args(["-window", &parent.to_string()]).arg(&file).status();
            println!("screenshot at scale {scale}: {} ({ok:?})", file.display());
        }
        let probe = Session { events: Vec::new(), values: names.iter().map(|(n, i)| (n.clone(), i.get(), 0.0)).collect(), corner_colours, resized: None };
        gesture(&probe, &events);
        if scale == 1 {
            // The same session with another window size, loaded while the editor is open:
            // the editor asks its window for that size, and the host sees it.
            let state = instance.access_shared_handler(|s| *s.state.get().unwrap()).expect("state extension");
            let mut saved = Vec::new();
            state.save(&instance.plugin_handle(), &mut saved).expect("the state saves");
            let mut json = ferrofx_testkit::clap::state_json(&saved).expect("the state is JSON after its length");
            json["fields"]["editor-size"] =
                serde_json::Value::String(serde_json::json!({"width": RESIZED.0 as f64, "height": RESIZED.1 as f64}).to_string());
            assert!(ferrofx_testkit::clap::load_state(&mut instance, &ferrofx_testkit::clap::state_bytes(&json)), "the state loads");
            let gui = instance.access_shared_handler(|s| *s.gui.get().unwrap()).expect("gui extension");
            let t0 = Instant::now();
            loop {
                if instance.access_shared_handler(|s| s.callback_requested.swap(false, Ordering::SeqCst)) {
                    instance.call_on_main_thread_callback();
                }
                if let Some((w, h)) = instance.access_shared_handler(|s| s.resize_requested.lock().unwrap().take()) {
                    // A host grants the request by resizing its window to it.
                    let _ = gui.set_size(&instance.plugin_handle(), GuiSize { width: w, height: h });
                }
                let now = gui.get_size(&instance.plugin_handle()).map(|g| (g.width, g.height));
                if now == Some(RESIZED) || t0.elapsed() > Duration::from_secs(20) {
                    resized = now;
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // The last changes leave with the next blocks.
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        audio.join().expect("the audio thread does not panic")
    });
    ferrofx_testkit::clap::deactivate(&mut instance, stopped);
    // The plugin's calls into the host kept the CLAP rules (thread and state of each).
    instance.access_shared_handler(|s| s.assert_rules());
    let handle = instance.plugin_handle();
    let values = names.iter().map(|(n, i)| (n.clone(), i.get(), params.get_value(&handle, *i).expect("a value"))).collect();
    gui.hide(&handle).expect("the editor hides");
    gui.destroy(&handle);
    conn.destroy_window(parent).expect("destroy");
    conn.flush().expect("flush");
    let events = events.lock().unwrap().clone();
    Session { events, values, corner_colours, resized }
}

/// Waits until `name` has received `ends` gesture ends (the editor draws and sends at its
/// own pace).
fn wait_for_ends(events: &Mutex<Vec<Out>>, id: u32, ends: usize) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if events.lock().unwrap().iter().filter(|e| **e == Out::End(id)).count() >= ends {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

// ---------------------------------------------------------------- the test

/// The test's name, as libtest would print it.
const TEST_NAME: &str = "editor_gestures_reach_the_host_as_begin_value_end_at_scale_1_and_2";

/// This binary has its own `main` (`harness = false` in plugin/Cargo.toml): it prints
/// libtest's lines and then leaves with `_exit`, skipping the C library's exit handlers.
/// The software OpenGL driver (Mesa's llvmpipe) keeps threads that the plugin's editor
/// started, and tearing the driver down under them crashed the process now and then
/// (SIGSEGV after the test had passed). Arguments (filters, `--skip`) are ignored.
fn main() {
    use std::io::Write;
    println!("\nrunning 1 test");
    let t0 = Instant::now();
    let outcome = std::panic::catch_unwind(editor_gestures_reach_the_host_as_begin_value_end_at_scale_1_and_2);
    let seconds = t0.elapsed().as_secs_f64();
    let code = match outcome {
        Ok(()) => {
            println!("test {TEST_NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in {seconds:.2}s\n");
            0
        }
        Err(_) => {
            println!("test {TEST_NAME} ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in {seconds:.2}s\n");
            101
        }
    };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: ends the process at once; every output was flushed above and nothing else
    // of this process needs its exit handlers (the X server stops on its own after it).
    unsafe { libc::_exit(code) }
}

fn editor_gestures_reach_the_host_as_begin_value_end_at_scale_1_and_2() {
    let path = match ferrofx_testkit::clap::find_bundle("FerroFX.clap") {
        Ok(p) => p,
        Err(msg) => return skip(&msg),
    };
    for tool in ["Xvfb", "xdotool"] {
        if !have(tool) {
            return skip(&format!("{tool} is not installed (scripts/install-deps.sh installs it)"));
        }
    }
    let x = Xvfb::start(2 * EDITOR_W + 100, 2 * EDITOR_H + 100);
    // The plugin's window library opens its own connection to $DISPLAY. This test is the
    // only one in its binary, so nothing else reads the variable meanwhile.
    std::env::set_var("DISPLAY", &x.display);
    if std::env::var_os("NICE_LOG").is_none() {
        std::env::set_var("NICE_LOG", std::env::temp_dir().join("ferrofx-clap-gui-test.log"));
    }
    // SAFETY: loading a shared library runs its initialisers; this is our own plugin,
    // built from this workspace.
    let entry = unsafe { PluginEntry::load(&path) }.expect("the bundle loads as a CLAP entry");
    // Never unloaded: the plugin's window and worker threads may still be finishing when
    // the test ends, and unloading the library under them crashed the process at exit.
    let entry: &'static PluginEntry = Box::leak(Box::new(entry));

    // A point on the response view, in logical pixels (above 0 dB, mid-band), and a drag
    // from there to the right and up.
    let (px, py) = (550i32, 220i32);
    let (dx, dy) = (100i32, -30i32);
    let mut results = Vec::new();
    for scale in [1, 2] {
        let session = session(entry, &x, scale as u32, |probe, events| {
            let freq = probe.id("Band 1 Frequency");
            let d = &x.display;
            let (x0, y0) = (px * scale, py * scale);
            xdotool(d, &[s("mousemove"), s(x0), s(y0)]);
            std::thread::sleep(Duration::from_millis(200));
            xdotool(d, &[s("click"), s("--repeat"), s(2), s("--delay"), s(60), s(1)]);
            // The band's gestures arrive before its node is dragged.
            assert!(wait_for_ends(events, freq, 1), "scale {scale}: no frequency gesture from the double-click within 20 s");
            std::thread::sleep(Duration::from_millis(300));
            xdotool(d, &[s("mousedown"), s(1)]);
            for k in 1..=10 {
                std::thread::sleep(Duration::from_millis(40));
                xdotool(d, &[s("mousemove"), s(x0 + dx * scale * k / 10), s(y0 + dy * scale * k / 10)]);
            }
            std::thread::sleep(Duration::from_millis(100));
            xdotool(d, &[s("mouseup"), s(1)]);
            assert!(wait_for_ends(events, freq, 2), "scale {scale}: no frequency gesture from the drag within 20 s");
        });
        results.push(session);
    }

    for (scale, r) in [1, 2].iter().zip(&results) {
        // The double-click: one gesture per parameter it set.
        for name in ["Band 1 On", "Band 1 Shape", "Band 1 Gain"] {
            let k = r.kinds(name);
            assert!(k.len() >= 3 && k[..3] == ['b', 's', 'e'], "scale {scale}, {name}: {k:?}");
        }
        // Frequency: the double-click's gesture, then the drag's: begin, several
        // values, end.
        let k = r.kinds("Band 1 Frequency");
        assert_eq!(&k[..3], &['b', 's', 'e'], "scale {scale}: the double-click's frequency gesture: {k:?}");
        let drag = &k[3..];
        assert!(drag.len() >= 4 && drag[0] == 'b' && drag[drag.len() - 1] == 'e', "scale {scale}: the drag's gesture: {k:?}");
        assert!(drag[1..drag.len() - 1].iter().all(|&c| c == 's'), "scale {scale}: only values inside the gesture: {k:?}");
        // Every gesture that began ended: nothing left open in the host.
        for (name, id, _) in &r.values {
            let begins = r.events.iter().filter(|e| **e == Out::Begin(*id)).count();
            let ends = r.events.iter().filter(|e| **e == Out::End(*id)).count();
            assert_eq!(begins, ends, "scale {scale}, {name}: every gesture ends");
        }
        // The host's values are the last ones sent, and the drag moved up in both.
        for name in ["Band 1 Frequency", "Band 1 Gain"] {
            let sent = r.values_of(name);
            // (The plugin keeps the value as a float32 on its parameter's step grid.)
            let (last, held) = (*sent.last().unwrap(), r.value(name));
            assert!((last - held).abs() < 1e-4, "scale {scale}, {name}: the host holds the last value sent: {last} vs {held}");
            assert!(sent.last().unwrap() > &sent[0], "scale {scale}, {name}: the drag raised it: {sent:?}");
        }
        assert_eq!(r.value("Band 1 On"), 1.0, "scale {scale}: the band is on");
        assert!(r.corner_colours > 20, "scale {scale}: the editor fills its window ({} colours in the far quarter)", r.corner_colours);
    }
    assert_eq!(results[0].resized, Some(RESIZED), "a loaded session's window size is applied to the open editor");

    // The same gesture in logical pixels sets the same band at both scales (to a
    // physical pixel: half a logical one at scale 2).
    let hz = |r: &Session, i: usize| f64::from(ranges::freq_hz().unnormalize(r.values_of("Band 1 Frequency")[i] as f32));
    let db = |r: &Session, i: usize| f64::from(ranges::gain_db().unnormalize(r.values_of("Band 1 Gain")[i] as f32));
    let (a, b) = (&results[0], &results[1]);
    let last = |r: &Session, name: &str| r.values_of(name).len() - 1;
    for (what, ia, ib) in [("added", 0, 0), ("dragged", last(a, "Band 1 Frequency"), last(b, "Band 1 Frequency"))] {
        let (fa, fb) = (hz(a, ia), hz(b, ib));
        assert!((fa / fb).log2().abs() < 0.01, "{what}: {fa} Hz at scale 1, {fb} Hz at scale 2");
    }
    for (what, ia, ib) in [("added", 0, 0), ("dragged", last(a, "Band 1 Gain"), last(b, "Band 1 Gain"))] {
        let (ga, gb) = (db(a, ia), db(b, ib));
        assert!((ga - gb).abs() < 0.15, "{what}: {ga} dB at scale 1, {gb} dB at scale 2");
    }
    // A plausible place: a bell above 0 dB somewhere in the middle decades.
    let (f0, g0) = (hz(a, 0), db(a, 0));
    assert!((200.0..5000.0).contains(&f0) && g0 > 1.0, "the band was added at {f0} Hz, {g0} dB");
}
