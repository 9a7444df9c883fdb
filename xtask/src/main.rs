//! Project tasks: `cargo xtask render` (offline rendering through a chain file).
//! Contract: `../shared/spec/command-line.md`.

mod audio;
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
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Render(args) => render::run(args),
    }
}
