//! FerroFX's timing programs, kept apart from the product and its tests: each probe in
//! `examples/` times one thing and prints its figures (run by hand, on a quiet machine:
//! `cargo run --release -p ferrofx-probes --example NAME -- ARGS`); `benches/` holds the
//! criterion benchmarks of the kernels and of the plugin's equaliser (`cargo bench -p
//! ferrofx-probes`). The command-line benchmarks users run are `cargo xtask bench`
//! (`docs/perf.md`). This file holds the few helpers several probes share.

/// The shortest of `runs` timings of `f`, in seconds.
pub fn best_of(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The CPU's model name (Linux's `/proc/cpuinfo`) and the SOS kernels' instruction set, for
/// the line every speed figure is printed beside.
pub fn cpu_line() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string()));
    format!("cpu: {} ({})", cpu.as_deref().unwrap_or("unknown"), ferrofx::dsp::sos::simd_level())
}
