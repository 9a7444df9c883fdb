//! Links the plugin's shared library (the CLAP and VST3 bundles' binary) with
//! `-z nodelete`: once loaded it stays mapped until the process ends, whatever the host
//! `dlclose`s.
//!
//! Why: the first call into the plugin on a host thread (nice-plug asks for
//! `std::thread::current()`) makes the plugin's copy of Rust's standard library register
//! a pthread key destructor for that thread. A host that unloads the plugin and later ends
//! such a thread (a scanner thread, a test harness thread) would otherwise jump into
//! unmapped code and crash (rust-lang/rust#91979). Keeping the library resident is the
//! remedy glibc allows; the cost is that an unloaded plugin's code stays in memory.
//! Only the cdylib gets the flag; the rlib the standalone app and the tests link is untouched.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    // ELF targets (Linux, the BSDs); macOS and Windows loaders have no such flag.
    if family == "unix" && os != "macos" && os != "ios" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
