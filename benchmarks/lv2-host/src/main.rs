//! LSP's Parametric Equalizer x32 (Debian's `lsp-plugins-lv2`) timed the way
//! `cargo xtask bench --plugin` times FerroFX's CLAP: one fresh instance per case, seeded
//! noise in [-0.5, 0.5), half a second of warm-up, then `--seconds` of audio in blocks of
//! `--block` frames, each `run()` call timed; the same bells (40 Hz to 16 kHz evenly in log
//! frequency, +3/-3 dB alternating, Q 1; bilinear "RLC (BT)" bells, IIR mode, FFT analysis
//! off), static or with all 24 gains moved every block. Stereo runs the x32 Stereo
//! plugin, mono the x32 Mono one; other channel counts have no LSP equivalent.
//!
//! Prints one JSON object per case (the xtask reads them), or one line saying why nothing
//! can run (the plugin is not installed).
//!
//! Usage: ferrofx_lv2_bench [--seconds S] [--channels N]... [--block N]... [--bands N]...
//!        [--static-only]

use ferrofx_testkit::bench::{bell, block_stats_us};
use livi::{EmptyPortConnections, FeaturesBuilder, PortType, World};
use std::collections::HashMap;
use std::time::Instant;

const FS: f64 = 48_000.0;
const WARM_UP_S: f64 = 0.5;
const STEREO_URI: &str = "http://lsp-plug.in/plugins/lv2/para_equalizer_x32_stereo";
const MONO_URI: &str = "http://lsp-plug.in/plugins/lv2/para_equalizer_x32_mono";
const BANDS: usize = 24;

struct Args {
    seconds: f64,
    channels: Vec<usize>,
    blocks: Vec<usize>,
    bands: Vec<usize>,
    static_only: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args { seconds: 10.0, channels: vec![], blocks: vec![], bands: vec![], static_only: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--static-only" {
            a.static_only = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--seconds" => a.seconds = number(&value)?,
            "--channels" => a.channels.push(number(&value)? as usize),
            "--block" => a.blocks.push(number(&value)? as usize),
            "--bands" => a.bands.push(number(&value)? as usize),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.channels.is_empty() {
        a.channels = vec![1, 2];
    }
    if a.blocks.is_empty() {
        a.blocks = vec![32, 64, 128, 512, 1024];
    }
    if a.bands.is_empty() {
        a.bands = vec![0, 1, 8, 24];
    }
    Ok(a)
}

fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let world = World::new();
    // The same noise as the xtask's FerroFX runs.
    let noise = ferrofx_testkit::noise_amp((2.0 * FS) as usize, 1, 0.5);
    for &channels in &args.channels {
        let uri = match channels {
            1 => MONO_URI,
            2 => STEREO_URI,
            _ => continue,
        };
        let Some(plugin) = world.plugin_by_uri(uri) else {
            println!("{}", serde_json::json!({"skipped": format!("{uri} is not installed (Debian: apt install lsp-plugins-lv2)")}));
            return;
        };
        let ports: HashMap<String, livi::PortIndex> =
            plugin.ports().filter(|p| p.port_type == PortType::ControlInput).map(|p| (p.symbol.clone(), p.index)).collect();
        let counts = *plugin.port_counts();
        for &block in &args.blocks {
            let features = match world.try_build_features(FeaturesBuilder { min_block_length: 1, max_block_length: block }) {
                Ok(f) => f,
                Err(e) => {
                    println!("{}", serde_json::json!({"skipped": format!("LV2 features for blocks of {block}: {e:?}")}));
                    return;
                }
            };
            for &bands in &args.bands {
                for automated in [false, true].into_iter().take(if args.static_only { 1 } else { 2 }) {
                    // SAFETY: LSP's plugin, instantiated at the rate and block bounds its
                    // features give; run below with buffers of that block.
                    let mut instance = match unsafe { plugin.instantiate(features.clone(), FS) } {
                        Ok(i) => i,
                        Err(e) => {
                            println!("{}", serde_json::json!({"skipped": format!("instantiating {uri}: {e:?}")}));
                            return;
                        }
                    };
                    let set = |instance: &mut livi::Instance, symbol: &str, v: f64| {
                        if let Some(&i) = ports.get(symbol) {
                            instance.set_control_input(i, v as f32);
                        }
                    };
                    set(&mut instance, "enabled", 1.0);
                    set(&mut instance, "mode", 0.0); // IIR
                    set(&mut instance, "fft", 0.0); // analysis off (FerroFX's runs only with its editor open)
                    for i in 0..32 {
                        let on = i < bands && i < BANDS;
                        set(&mut instance, &format!("ft_{i}"), if on { 1.0 } else { 0.0 }); // Bell / Off
                        set(&mut instance, &format!("fm_{i}"), 0.0); // RLC (BT): bilinear
                        set(&mut instance, &format!("s_{i}"), 0.0);
                        let (f, g) = bell(i.min(BANDS - 1), bands);
                        set(&mut instance, &format!("f_{i}"), f);
                        set(&mut instance, &format!("g_{i}"), 10f64.powf(g / 20.0));
                        set(&mut instance, &format!("q_{i}"), 1.0);
                    }
                    let mut inputs = vec![vec![0.0f32; block]; channels];
                    let mut outputs = vec![vec![0.0f32; block]; channels];
                    let atoms_in: Vec<livi::event::LV2AtomSequence> =
                        (0..counts.atom_sequence_inputs).map(|_| livi::event::LV2AtomSequence::new(&features, 4096)).collect();
                    let mut atoms_out: Vec<livi::event::LV2AtomSequence> =
                        (0..counts.atom_sequence_outputs).map(|_| livi::event::LV2AtomSequence::new(&features, 4096)).collect();
                    let warm = (WARM_UP_S * FS) as usize;
                    let total = warm + (args.seconds * FS) as usize;
                    let mut times = Vec::with_capacity(total / block + 1);
                    let mut at = 0usize;
                    let mut k = 0u64;
                    while at < total {
                        for (c, ch) in inputs.iter_mut().enumerate() {
                            let offset = (at + 7919 * c) % (noise.len() - block);
                            ch.copy_from_slice(&noise[offset..offset + block]);
                        }
                        if automated {
                            k += 1;
                            for i in 0..BANDS {
                                // The same motion as the xtask's: +-10 % of the range around its middle.
                                let phase = k as f64 * 0.01 + i as f64;
                                let g_db = 0.1 * 48.0 * phase.sin();
                                set(&mut instance, &format!("g_{i}"), 10f64.powf(g_db / 20.0));
                            }
                        }
                        for a in atoms_out.iter_mut() {
                            a.clear();
                        }
                        let connections = EmptyPortConnections::new()
                            .with_audio_inputs(inputs.iter().map(|c| c.as_slice()))
                            .with_audio_outputs(outputs.iter_mut().map(|c| c.as_mut_slice()))
                            .with_atom_sequence_inputs(atoms_in.iter())
                            .with_atom_sequence_outputs(atoms_out.iter_mut());
                        let t0 = Instant::now();
                        // SAFETY: every port is connected to a buffer of `block` frames (audio) or
                        // an atom sequence sized for the features, alive across the call.
                        if let Err(e) = unsafe { instance.run(block, connections) } {
                            println!("{}", serde_json::json!({"skipped": format!("running {uri}: {e:?}")}));
                            return;
                        }
                        let dt = t0.elapsed().as_secs_f64();
                        if at >= warm {
                            times.push(dt);
                        }
                        at += block;
                    }
                    let (min, median, p999) = block_stats_us(times);
                    println!(
                        "{}",
                        serde_json::json!({
                            "plugin": "LSP Parametric Equalizer x32", "channels": channels, "block": block, "bands": bands,
                            "automated": automated, "min_us": min, "median_us": median, "p999_us": p999,
                        })
                    );
                }
            }
        }
    }
}
