//! `cargo xtask bench --resident`: the offline workloads with their data already on the
//! device (the device-resident path, `Backend::time_resident`), beside a device-to-device
//! copy of the same bytes and the CPU engine on one core and on all cores, in one run.
//! Each row: the filter call's median (waited for), the copy's, their ratio (the goal: at
//! most 3x), the CPU's times and the GPU's speed-up over all cores, and the GPU output's
//! largest difference from the CPU engine's, relative to the peak.

use anyhow::Result;
use ferrofx::run::backend::{median_s, Backend, CpuBackend};
use serde_json::json;
use std::time::Instant;

use crate::workloads::{api_chain, fir_chain, iir_chain, long_fir, noise, Workload};

const FS: f64 = 44_100.0;
/// Frames per unit of the resident grid (the offline streams' block).
const UNIT_FRAMES: usize = 65_536;

/// One row of the resident table.
struct Row {
    workload: &'static str,
    backend: String,
    channels: usize,
    frames: usize,
    filter_s: f64,
    copy_s: f64,
    cpu_one_s: f64,
    cpu_all_s: f64,
    threads: usize,
    error: f64,
}

/// The cells: (workload, chain, channels, seconds).
fn cells(workloads: &[Workload], quick: bool) -> Vec<(&'static str, ferrofx::Chain, usize, f64)> {
    let s = |full: f64| if quick { (full / 60.0).clamp(0.2, 1.0) } else { full };
    let mut out = Vec::new();
    for w in workloads {
        match w {
            Workload::ApiChain => out.push(("api_chain", api_chain(), 8, s(60.0))),
            Workload::IirChain => {
                out.push(("iir_chain", iir_chain(), 1, s(60.0)));
                out.push(("iir_chain", iir_chain(), 8, s(60.0)));
            }
            Workload::FirChain => out.push(("fir_chain", fir_chain(), 8, s(60.0))),
            Workload::LongFir => out.push(("long_fir", long_fir(), 2, s(60.0))),
            Workload::RealtimeBlock => {}
        }
    }
    out
}

/// The CPU engine over `rows` independent rows on `threads` threads: the median time and
/// the output of the first run.
fn time_cpu(designed: &ferrofx::DesignedChain, input: &[f32], rows: usize, frames: usize, threads: usize, runs: usize) -> (f64, Vec<f32>) {
    let cpu = CpuBackend { threads };
    let mut times = Vec::new();
    let mut first = Vec::new();
    for run in 0..=runs {
        let mut data = input.to_vec();
        let t0 = Instant::now();
        // Rows as items of one channel each: independent, spread over the threads.
        cpu.filter_batch(designed, &mut data, rows, 1, frames);
        let dt = t0.elapsed().as_secs_f64();
        if run == 0 {
            first = data;
        } else {
            times.push(dt);
        }
    }
    (median_s(times), first)
}

/// Runs the resident cells of `workloads` on every backend of `gpus` and prints a row each.
pub fn run(gpus: &[&dyn Backend], workloads: &[Workload], quick: bool, runs: usize, json_out: bool, tuning: &str) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !json_out {
        println!(
            "device-resident: one call per cell on data already on the device (units of {UNIT_FRAMES} frames), waited for; copy = a device-to-device copy of the same bytes; CPU engine on 1 and {threads} threads ({}, {})",
            std::env::consts::ARCH,
            ferrofx::simd_level()
        );
        if !tuning.is_empty() {
            println!("GPU switches: {tuning}");
        }
    }
    for (workload, chain, channels, seconds) in cells(workloads, quick) {
        let designed = chain.design(FS)?;
        let frames = (seconds * FS) as usize;
        let input: Vec<f32> = noise(channels, frames, 42).concat();
        let (cpu_one_s, reference) = time_cpu(&designed, &input, channels, frames, 1, runs);
        let (cpu_all_s, _) = time_cpu(&designed, &input, channels, frames, threads, runs);
        let peak = reference.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-30);
        for gpu in gpus {
            match gpu.time_resident(&designed, &input, channels, frames, UNIT_FRAMES, runs) {
                Ok(t) => {
                    let error = t.output.iter().zip(&reference).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max) / peak;
                    print(
                        &Row { workload, backend: gpu.name().to_string(), channels, frames, filter_s: t.filter_s, copy_s: t.copy_s, cpu_one_s, cpu_all_s, threads, error: f64::from(error) },
                        json_out,
                        tuning,
                    );
                }
                Err(e) => eprintln!("skipped {workload} ({channels} ch) on {}: {e}", gpu.name()),
            }
        }
    }
    Ok(())
}

/// One row; `tuning`: the GPU switches that differ from the defaults (a field when set).
fn print(r: &Row, json_out: bool, tuning: &str) {
    if json_out {
        let mut v = json!({
            "workload": r.workload, "backend": r.backend, "resident": true, "channels": r.channels, "frames": r.frames,
            "filter_s": r.filter_s, "copy_s": r.copy_s, "copy_ratio": r.filter_s / r.copy_s,
            "cpu_one_core_s": r.cpu_one_s, "cpu_all_cores_s": r.cpu_all_s, "cpu_threads": r.threads,
            "speedup_vs_all_cores": r.cpu_all_s / r.filter_s, "max_error_of_peak": r.error,
        });
        if !tuning.is_empty() {
            v["tuning"] = json!(tuning);
        }
        println!("{v}");
        return;
    }
    println!(
        "{:<10} {:<5} {:>2} ch {:>9} frames  filter {:>9.3} ms  copy {:>8.3} ms  ({:>6.1}x the copy)  CPU 1 core {:>9.2} ms, {} threads {:>9.2} ms ({:>6.1}x)  error {:.1e} of the peak",
        r.workload,
        r.backend,
        r.channels,
        r.frames,
        r.filter_s * 1e3,
        r.copy_s * 1e3,
        r.filter_s / r.copy_s,
        r.cpu_one_s * 1e3,
        r.threads,
        r.cpu_all_s * 1e3,
        r.cpu_all_s / r.filter_s,
        r.error
    );
}
