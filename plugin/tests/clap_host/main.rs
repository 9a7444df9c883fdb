//! The bundled `FerroFX.clap`, loaded and driven by a real CLAP host (`clack-host`).
//!
//! Builds nothing itself: run `cargo xtask bundle ferrofx` first (scripts/test.sh does).
//! The bundle is looked up in `$FERROFX_BUNDLE_DIR`, `$CARGO_TARGET_DIR/bundled` and
//! `target/bundled`. Without it the tests print why and pass, unless
//! `FERROFX_REQUIRE_BUNDLES=1` (set by scripts/test.sh, so CI fails instead).
//!
//! Expected output comes from the core engine (`ferrofx::Engine`) running the chain the
//! parameters describe, written with the core's own API.
//!
//! One file per subject: `host.rs` (the host), `settings.rs` (what the tests share),
//! `equaliser.rs`, `latency.rs`, `state.rs`, `dynamics.rs`, `automation.rs`.

mod automation;
mod dynamics;
mod equaliser;
mod host;
mod latency;
mod settings;
mod state;
