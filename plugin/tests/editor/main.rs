//! The editor driven as a user would (egui_kittest feeding pointer, wheel and key events
//! to the editor's own app object), with a host context that applies parameter changes
//! and records the gestures. Expected values come from the view's coordinate mapping
//! (a log frequency axis and a linear dB axis), not from the editor's own arithmetic.
//!
//! One file per subject: `rig.rs` (the harness and host), `nodes.rs`, `stages.rs`,
//! `audio.rs` (with an audio state), `layout.rs` (the curve first: the view's share, the
//! drawer, the floating band controls, every control reachable), `meters.rs` (loudness and the dynamic bands' gain
//! as audio plays), `presets.rs`.

mod audio;
mod every_setting;
mod layout;
mod meters;
mod nodes;
mod presets;
mod rig;
mod stages;
