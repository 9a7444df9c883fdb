//! Project tasks: `cargo xtask render` (offline rendering through a chain file),
//! `cargo xtask design` (the coefficients a chain designs to), `cargo xtask bench`, and
//! `cargo xtask bundle ferrofx [--release]` (the CLAP/VST3 bundles and the standalone
//! binary, through nice-plug-xtask).
//! What each command takes and promises: `docs/command-line.md`.

mod audio;
mod bench;
mod bench_plugin;
mod bench_resident;
mod design;
mod encode;
mod header;
mod output;
mod render;
mod soak;
mod workloads;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "FerroFX project tasks",
    after_help = "Also: `cargo xtask bundle ferrofx [--release]` builds the CLAP/VST3 bundles and the standalone app into target/bundled/ (nice-plug-xtask)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render audio files through a chain file (WAV or FLAC out, same length, rate and layout).
    Render(render::RenderArgs),
    /// Print the coefficients a chain designs to at a sample rate (JSON).
    Design(design::DesignArgs),
    /// Time the engine on the contract's workloads.
    Bench(bench::BenchArgs),
    /// Play the plugin bundle through a CLAP host for hours of audio under random
    /// automation, chain swaps, backend switches and garbage input; report memory growth,
    /// non-finite output and block times.
    Soak(soak::SoakArgs),
}

const BUNDLE_HELP: &str = "Build the plugin bundles (CLAP, VST3) and the standalone app into target/bundled/

Usage: cargo xtask bundle ferrofx [--release] [cargo build options]

  ferrofx     the plugin package (the only one in this workspace)
  --release   an optimised build (about 15 minutes from scratch on two cores; the debug
              build, about 7, checks that process() never allocates)

Writes FerroFX.clap, FerroFX.vst3 and the standalone binary FerroFX (nice-plug-xtask).";

/// The name users bundle by (`cargo xtask bundle ferrofx`) and the package that holds
/// the plugin (the core crate owns the name `ferrofx`).
const BUNDLE_ALIAS: (&str, &str) = ("ferrofx", "ferrofx_plugin");

/// `bundle`, `bundle-universal` and `known-packages` go to nice-plug-xtask, with the
/// product name mapped to the plugin package.
fn bundle(args: Vec<String>) -> ExitCode {
    let args = args
        .into_iter()
        .map(|a| if a == BUNDLE_ALIAS.0 { BUNDLE_ALIAS.1.to_string() } else { a })
        .collect::<Vec<_>>();
    match nice_plug_xtask::main_with_args("cargo xtask", args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The Vulkan loader (lavapipe) prints `error: XDG_RUNTIME_DIR is invalid or not set`
/// while an adapter is probed when that variable names no usable folder (CI, cron,
/// services), though the probe works. A render that succeeded must not print "error:",
/// so give it a private folder of its own before any thread starts.
#[cfg(unix)]
fn give_the_gpu_probe_a_runtime_dir() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let usable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o077 == 0)
    };
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| usable(std::path::Path::new(&d))) {
        return;
    }
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("ferrofx-runtime-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let owned = std::fs::metadata(&dir).is_ok_and(|m| m.uid() == uid);
    if owned && usable(&dir) {
        // Set before any other thread exists (the first thing `main` does).
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}

#[cfg(not(unix))]
fn give_the_gpu_probe_a_runtime_dir() {}

fn main() -> ExitCode {
    give_the_gpu_probe_a_runtime_dir();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("bundle" | "bundle-universal" | "known-packages")) {
        // nice-plug-xtask passes `--help` on to cargo build; answer it here instead.
        if args.iter().skip(1).any(|a| a == "--help" || a == "-h") {
            println!("{BUNDLE_HELP}");
            return ExitCode::SUCCESS;
        }
        return bundle(args);
    }
    match Cli::parse().command {
        Command::Render(args) => render::run(args),
        Command::Design(args) => design::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Soak(args) => soak::run(args),
    }
}
