//! Project tasks: `cargo xtask render` (offline rendering through a chain file),
//! `cargo xtask design` (the coefficients a chain designs to), `cargo xtask bench`, and
//! `cargo xtask bundle ferrofx [--release]` (the CLAP/VST3 bundles and the standalone
//! binary, through nice-plug-xtask).
//! Contract: `../shared/spec/command-line.md`.

mod audio;
mod bench;
mod design;
mod render;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "FerroFX project tasks",
    after_help = "Also: `cargo xtask bundle ferrofx [--release]` builds the CLAP/VST3 bundles and the standalone app into target/bundled/ (nice-plug-xtask)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render audio files through a chain file (float32 WAV out, same length and rate).
    Render(render::RenderArgs),
    /// Print the coefficients a chain designs to at a sample rate (JSON).
    Design(design::DesignArgs),
    /// Time the engine on the contract's workloads.
    Bench(bench::BenchArgs),
}

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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("bundle" | "bundle-universal" | "known-packages")) {
        return bundle(args);
    }
    match Cli::parse().command {
        Command::Render(args) => render::run(args),
        Command::Design(args) => design::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
