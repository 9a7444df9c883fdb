//! Project tasks: `cargo xtask render` (offline rendering through a chain file) and
//! `cargo xtask design` (the coefficients a chain designs to).
//! Contract: `../shared/spec/command-line.md`.

mod audio;
mod bench;
mod design;
mod render;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "FerroFX project tasks")]
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

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Render(args) => render::run(args),
        Command::Design(args) => design::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
