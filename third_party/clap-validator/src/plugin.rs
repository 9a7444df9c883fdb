//! Contains functions for loading and interacting with CLAP plugins.

pub mod ext;
pub mod index;
pub mod instance;
pub mod library;
pub mod preset_discovery;
pub mod process;
pub mod util;
