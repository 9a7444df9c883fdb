//! Chain-file fuzzing in process: thousands of mutants of a seed corpus covering every
//! stage type (values on and past each limit, wrong types, dropped and added fields,
//! repeated stages, duplicate keys, damaged text), each parsed, designed at a random
//! sample rate and run through the engine. None may panic; every refusal must say what
//! and where. `FERROFX_FUZZ_CASES` sets the count (CI: 4,000; see docs/testing.md for
//! the long run), `FERROFX_FUZZ_SEED` the seed.

use ferrofx::chain::{Chain, ChainError};
use ferrofx::Engine;
use ferrofx_testkit::{mutate::chain_mutant, noise, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn mutated_chain_files_never_panic_and_every_refusal_names_its_place() {
    let cases = env_u64("FERROFX_FUZZ_CASES", 4_000);
    let seed = env_u64("FERROFX_FUZZ_SEED", 0x5EED);
    let (mut refused_parse, mut refused_design, mut ran) = (0u64, 0u64, 0u64);
    let mut panics = Vec::new();
    let mut slowest = (std::time::Duration::ZERO, 0u64);
    for n in 0..cases {
        let started = std::time::Instant::now();
        let text = chain_mutant(seed, n);
        let mut r = Rng::new(seed.wrapping_add(n));
        let fs = *r.pick(&[8_000.0, 22_050.0, 44_100.0, 48_000.0, 96_000.0, 384_000.0]);
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<Option<bool>, ChainError> {
            let chain = Chain::from_json(&text)?;
            let stages = chain.stages.len();
            let designed = match chain.design(fs) {
                Ok(d) => d,
                Err(e) => {
                    // A stage error names a stage of this chain and a non-empty reason.
                    if let Some(i) = e.stage_index() {
                        assert!(i < stages, "stage {i} of {stages}: {e}");
                    }
                    assert!(e.to_string().len() > 10, "{e}");
                    return Ok(Some(false));
                }
            };
            // Keep the engine's work small: long chains run a short block.
            let mut engine = Engine::new(&designed, 2, 64);
            let (mut a, mut b) = (noise(64, n), noise(64, n + 1));
            engine.process(&mut [&mut a[..], &mut b[..]]);
            Ok(Some(true))
        }));
        if started.elapsed() > slowest.0 {
            slowest = (started.elapsed(), n);
        }
        match result {
            Err(_) => panics.push(text),
            Ok(Err(e)) => {
                let msg = e.to_string();
                assert!(!msg.is_empty());
                if let ChainError::Syntax { line, .. } | ChainError::DuplicateKey { line, .. } = e {
                    assert!(line >= 1, "{msg}");
                }
                refused_parse += 1;
            }
            Ok(Ok(Some(false))) => refused_design += 1,
            Ok(Ok(_)) => ran += 1,
        }
    }
    println!("chain fuzz (seed {seed:#x}): {cases} mutants: {refused_parse} refused when read, {refused_design} refused when designed, {ran} designed and run, {} panics; slowest: mutant {} in {:?}", panics.len(), slowest.1, slowest.0);
    assert!(panics.is_empty(), "{} mutants panicked; the first: {}", panics.len(), panics[0]);
    // A hang, in effect: no mutant may take long (the worst seen is well under a second).
    assert!(slowest.0.as_secs() < 10, "mutant {} took {:?}: `cargo run -p ferrofx-testkit --example dump_mutant {seed} {}` prints it", slowest.1, slowest.0, slowest.1);
    // The corpus must exercise both sides, or the fuzzer tests nothing.
    assert!(ran > cases / 10 && refused_parse + refused_design > cases / 10, "unbalanced corpus: {ran} ran");
}
