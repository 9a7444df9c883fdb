//! FerroFX's timing programs, kept apart from the product and its tests: each probe in
//! `examples/` times one thing and prints its figures (run by hand, on a quiet machine:
//! `cargo run --release -p ferrofx-probes --example NAME -- ARGS`); `benches/` holds the
//! criterion benchmarks of the kernels and of the plugin's equaliser (`cargo bench -p
//! ferrofx-probes`). The command-line benchmarks users run are `cargo xtask bench`
//! (`docs/perf.md`). Nothing here is a library: this file only names the crate.
