//! FerroFX plugin crate (CLAP, VST3, standalone, egui editor).
//!
//! Not built yet: the plugin is its own issue. What exists is the DSP the plugin's
//! parameters will drive, free of any plugin framework: [`bands`], a 24-band equaliser
//! with allocation-free re-design from smoothed parameters and crossfaded layout
//! changes. The dependency direction (plugin -> core) is fixed from the start.

pub mod bands;

pub use ferrofx;
