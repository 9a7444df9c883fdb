//! FerroFX plugin crate (CLAP, VST3, standalone, egui editor).
//!
//! Not built yet: the plugin is its own issue. This crate exists so the workspace
//! layout is fixed from the start and the dependency direction (plugin -> core)
//! is checked by the compiler.

pub use ferrofx;
