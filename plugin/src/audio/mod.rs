//! The audio thread's rooms. **Nothing under `audio/` allocates, frees, locks, logs or
//! blocks while processing**: memory moves only in the constructors (`new`) and in
//! `AudioState::activate`, `deactivate` and `reset`'s callers, which the host calls off
//! the audio thread; `process` and everything it calls work in what was allocated there
//! (nice-plug's debug bundles abort on any allocation inside `process`).
//!
//! - `state/`: [`state::AudioState`], the one owner of the audio-thread state and its
//!   per-block work (the latency it reports, the bypass, the output stage);
//! - the bands: `equaliser/` (the 24 bands fused into one cascade), `svf/` (their
//!   modulation-safe form), `routing.rs` (per-band channels), `dynamics.rs` (dynamic
//!   EQ detectors), `autogain.rs`, `solo.rs`;
//! - the hand-overs' audio ends: `chain.rs` (chain stages), `linear.rs` (the linear-phase
//!   FIR), `phase_switch.rs` (a phase-mode change inside processing), `taps.rs`,
//!   `spectrum.rs` and `loudness.rs` (telemetry, the analyser, the loudness meters);
//! - `output.rs` (a block's output stage in one pass), `delay.rs` (delay lines).
//!
//! Imports `shared` and `control` (the parameters' values, the hand-over messages);
//! nothing in `control` or `shared` imports from here.

pub mod autogain;
pub mod chain;
pub mod delay;
pub mod dynamics;
pub mod equaliser;
pub mod linear;
pub mod loudness;
pub mod output;
pub mod phase_switch;
pub mod routing;
pub mod solo;
pub mod spectrum;
pub mod state;
pub mod svf;
pub mod taps;
