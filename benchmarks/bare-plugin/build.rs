//! Links the bare plugin's shared library with `-z nodelete`, as FerroFX's own is
//! (plugin/build.rs says why: a host that unloads it must not crash when a thread that
//! called into it ends), so the benchmark compares like with like.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if std::env::var("CARGO_CFG_TARGET_FAMILY").as_deref() == Ok("unix") && os != "macos" && os != "ios" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
