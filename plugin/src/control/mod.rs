//! The control side: everything that runs off the audio thread and decides what the
//! audio thread runs. The parameters (`params`), the chain stages built and handed over
//! (`chain`), the linear-phase designer thread (`linear`), the GPU backend and offloads
//! (`gpu`), presets and impulse-response files (`preset`, `ir`). Code here may allocate,
//! lock and log; it reaches the audio thread only through the parameters' atomics and
//! lock-free rings whose audio ends live in `audio/`. Imports `shared`, never `audio`.

pub mod chain;
pub mod chain_file;
pub mod editor_size;
pub mod instance_state;
pub mod gpu;
pub mod ir;
pub mod linear;
pub mod params;
pub mod preset;
