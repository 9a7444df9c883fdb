//! `cargo xtask design`: print the coefficients a chain designs to at a sample rate
//! (fused cascades as SciPy `sos` rows, FIR taps), for inspection and for the SciPy
//! cross-check (`tests/python`). `--batch` reads JSON lines `{"fs": F, "chain": {...}}`
//! from stdin and answers one line each: `{"stages": [...]}` or `{"error": "..."}`.

use anyhow::{bail, Context, Result};
use clap::Args;
use ferrofx::{Chain, DesignedStage};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DesignArgs {
    /// The chain file.
    #[arg(long, required_unless_present = "batch")]
    chain: Option<PathBuf>,
    /// Sample rate in Hz.
    #[arg(long, required_unless_present = "batch")]
    fs: Option<f64>,
    /// Read `{"fs": F, "chain": {...}}` lines from stdin instead.
    #[arg(long, conflicts_with_all = ["chain", "fs"])]
    batch: bool,
}

fn designed_json(chain: &Chain, fs: f64) -> Value {
    match chain.design(fs) {
        Ok(d) => json!({
            "fs": fs,
            "stages": d.stages.iter().map(|s| match s {
                DesignedStage::Sos(sections) => json!({"sos": sections.iter().map(|s| s.to_row()).collect::<Vec<_>>()}),
                DesignedStage::Fir(taps) => json!({"fir": taps}),
            }).collect::<Vec<_>>(),
        }),
        Err(e) => json!({"error": e.to_string()}),
    }
}

pub fn run(args: DesignArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: DesignArgs) -> Result<ExitCode> {
    if args.batch {
        let stdin = std::io::stdin();
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for (i, line) in stdin.lock().lines().enumerate() {
            let line = line.context("reading stdin")?;
            if line.trim().is_empty() {
                continue;
            }
            let request: Value = serde_json::from_str(&line).with_context(|| format!("stdin line {}", i + 1))?;
            let fs = request["fs"].as_f64().with_context(|| format!("stdin line {}: no fs", i + 1))?;
            let answer = match Chain::from_json(&request["chain"].to_string()) {
                Ok(chain) => designed_json(&chain, fs),
                Err(e) => json!({"error": e.to_string()}),
            };
            writeln!(out, "{answer}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(path), Some(fs)) = (args.chain, args.fs) else { bail!("--chain and --fs are required") };
    let chain = Chain::from_file(&path).with_context(|| format!("chain {}", path.display()))?;
    let value = designed_json(&chain, fs);
    if let Some(e) = value.get("error") {
        bail!("chain {}: {}", path.display(), e.as_str().unwrap_or_default());
    }
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(ExitCode::SUCCESS)
}
