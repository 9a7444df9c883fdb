//! A host may unload the plugin (`dlclose`) and end the thread that used it afterwards,
//! as a plugin scanner does. The first call into the plugin on a thread registers a
//! thread-exit destructor inside the plugin's library (Rust's standard library does, for
//! `std::thread::current()`), so the library must stay mapped after the host closes it:
//! it is linked with `-z nodelete` (plugin/build.rs). Without that this test's thread
//! jumps into unmapped code when it ends and the test process dies (SIGSEGV).
//!
//! Its own test binary, so no other test holds the library open meanwhile.
//! Builds nothing itself: run `cargo xtask bundle ferrofx` first (scripts/test.sh does).

use std::ffi::CString;
use std::path::Path;
use ferrofx_testkit::clap::bundle_or_skip;
use ferrofx_testkit::vst3::Vst3Plugin;

/// Whether the shared library at `path` is still mapped in this process.
fn resident(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    // SAFETY: RTLD_NOLOAD opens nothing new: it hands back a handle only when the library
    // is already loaded (running no initialisers), and that handle is closed at once.
    unsafe {
        let handle = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
        true
    }
}

/// Two host threads each load the VST3 bundle and create an instance; the first closes
/// its instance and library and ends, then the second does. The second thread's close is
/// the last one, and that thread then ends having called into the plugin: it must end
/// cleanly, and the library must still be mapped afterwards. (The first thread is needed:
/// the thread that creates the first instance also starts nice-plug's worker, which ties
/// the library to it until it ends, and so would hide the fault. This is the order in which
/// two tests of one process crashed before the flag.)
#[test]
fn host_threads_that_unload_the_vst3_plugin_end_cleanly() {
    use std::sync::mpsc::channel;
    let Some(path) = bundle_or_skip("FerroFX.vst3") else { return };
    let so = path.join("Contents/x86_64-linux/FerroFX.so");
    assert!(!resident(&so), "{} is loaded before the test loads it", so.display());
    // Each thread: load and create, report, wait for its turn, close and end.
    let host = |path: std::path::PathBuf| {
        let (ready_tx, ready_rx) = channel::<()>();
        let (go_tx, go_rx) = channel::<()>();
        let thread = std::thread::spawn(move || {
            let plugin = Vst3Plugin::load(&path);
            assert!(!plugin.params.is_empty(), "the plugin reported no parameters");
            ready_tx.send(()).expect("ready");
            go_rx.recv().expect("go");
            // Terminates the component, releases it, then closes the library.
            drop(plugin);
        });
        ready_rx.recv().expect("the host thread loaded the plugin");
        (thread, go_tx)
    };
    let (first, first_go) = host(path.clone());
    let (second, second_go) = host(path);
    first_go.send(()).expect("go");
    first.join().expect("the first host thread");
    second_go.send(()).expect("go");
    second.join().expect("the second host thread");
    assert!(resident(&so), "{} was unmapped when the host closed it: it is not linked with -z nodelete", so.display());
}

/// The CLAP bundle's binary carries the same flag: closed by its only holder, it stays
/// mapped.
#[test]
fn the_clap_binary_stays_mapped_after_its_last_close() {
    let Some(path) = bundle_or_skip("FerroFX.clap") else { return };
    assert!(!resident(&path), "{} is loaded before the test loads it", path.display());
    // SAFETY: loading a shared library runs its initialisers; this is FerroFX's own
    // bundle, built from this workspace. Nothing is called in it.
    let lib = unsafe { libloading::Library::new(&path) }.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    drop(lib);
    assert!(resident(&path), "{} was unmapped at its last close: it is not linked with -z nodelete", path.display());
}
