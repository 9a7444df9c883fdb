//! The PTX the library embeds (kernels/ptx/) is what the kernel sources give: rebuilt
//! here with scripts/build-ptx.sh (clang's CUDA device-only mode) and compared byte for
//! byte, so the sources and the shipped kernels cannot drift apart. Without clang it
//! prints why and passes, unless FERROFX_REQUIRE_CLANG=1 (set by scripts/test.sh).
//!
//! And what a driver does with it at run time, short of running it: every kernel the
//! library loads by name is an entry of the file it loads it from, and every file
//! assembles with NVIDIA's `ptxas` for the GPUs it is for (the driver JIT-compiles the
//! same text when a device opens; a file it rejected would take the whole CUDA backend
//! down). `ptxas` comes from `FERROFX_PTXAS` (scripts/install-deps.sh installs PyPI's
//! `nvidia-cuda-nvcc-cu12`, which holds it, and scripts/test.sh points there); without
//! it that test prints why and passes, unless FERROFX_REQUIRE_PTXAS=1.

use std::path::Path;
use std::process::Command;

/// The tool named by the environment variable `var` (else `default`) where it runs
/// (`--version` succeeds); else `None` after printing why the test is skipped, or a panic
/// where `require` is set to 1 (scripts/test.sh sets it: no skip in CI).
fn tool_or_skip(var: &str, default: &str, require: &str, what_for: &str) -> Option<String> {
    let tool = std::env::var(var).unwrap_or_else(|_| default.to_string());
    if Command::new(&tool).arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some(tool);
    }
    let msg = format!("{tool} not found: {what_for}");
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{msg}");
    }
    println!("SKIPPED: {msg}");
    None
}

#[test]
fn committed_ptx_equals_a_fresh_build_of_the_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(_) = tool_or_skip("CLANG", "clang", "FERROFX_REQUIRE_CLANG", "cannot rebuild the PTX (scripts/install-deps.sh installs clang)") else { return };
    let out = std::env::temp_dir().join(format!("ferrofx-ptx-{}", std::process::id()));
    let status = Command::new("bash").arg(root.join("scripts/build-ptx.sh")).arg(&out).status().expect("bash runs");
    assert!(status.success(), "scripts/build-ptx.sh failed");
    let mut compared = 0;
    for arch in ["sm_70", "sm_80"] {
        for entry in std::fs::read_dir(root.join("kernels")).unwrap() {
            let src = entry.unwrap().path();
            if src.extension().and_then(|e| e.to_str()) != Some("cu") {
                continue;
            }
            let name = format!("{}.ptx", src.file_stem().unwrap().to_str().unwrap());
            let fresh = std::fs::read(out.join(arch).join(&name)).unwrap();
            let committed = std::fs::read(root.join("kernels/ptx").join(arch).join(&name))
                .unwrap_or_else(|e| panic!("kernels/ptx/{arch}/{name}: {e} (run scripts/build-ptx.sh and commit the result)"));
            assert!(fresh == committed, "kernels/ptx/{arch}/{name} is not what {} compiles to: run scripts/build-ptx.sh and commit the result", src.display());
            compared += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(compared >= 4, "{compared} PTX files compared");
}

/// The `(file, kernel)` pairs `src/gpu/cuda/context.rs` loads (`load("file", "name")`).
fn loaded_kernels(root: &Path) -> Vec<(String, String)> {
    let ctx = std::fs::read_to_string(root.join("src/gpu/cuda/context.rs")).unwrap();
    let mut pairs = Vec::new();
    for (at, _) in ctx.match_indices("load(\"") {
        let args: Vec<&str> = ctx[at + 5..].splitn(5, '"').collect();
        // [ "", file, ", ", name, rest ]
        assert_eq!(args[2].trim(), ",", "context.rs: a load( call not of the form load(\"file\", \"name\")");
        pairs.push((args[1].to_string(), args[3].to_string()));
    }
    pairs
}

#[test]
fn every_kernel_the_library_loads_is_an_entry_of_its_ptx() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let pairs = loaded_kernels(&root);
    assert!(pairs.len() >= 20, "only {} kernels found in context.rs", pairs.len());
    for (file, name) in &pairs {
        for arch in ["sm_70", "sm_80"] {
            let ptx = std::fs::read_to_string(root.join("kernels/ptx").join(arch).join(format!("{file}.ptx"))).unwrap();
            assert!(ptx.contains(&format!(".entry {name}(")), "kernels/ptx/{arch}/{file}.ptx has no entry {name} (context.rs loads it)");
        }
    }
}

#[test]
fn committed_ptx_assembles_for_the_gpus_it_targets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(ptxas) = tool_or_skip("FERROFX_PTXAS", "ptxas", "FERROFX_REQUIRE_PTXAS", "cannot assemble the PTX (scripts/install-deps.sh installs it; FERROFX_PTXAS names it)") else { return };
    let out = std::env::temp_dir().join(format!("ferrofx-cubin-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    // The sm_70 files run on Volta and Turing, the sm_80 ones on Ampere, Ada and Hopper
    // (the H100 and H200 of the device checks are sm_90).
    let mut assembled = 0;
    for (dir, targets) in [("sm_70", &["sm_70", "sm_75"][..]), ("sm_80", &["sm_80", "sm_89", "sm_90"][..])] {
        let mut files: Vec<_> = std::fs::read_dir(root.join("kernels/ptx").join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for ptx in files {
            for target in targets {
                let cubin = out.join(format!("{target}.cubin"));
                let run = Command::new(&ptxas).arg(format!("-arch={target}")).arg("-v").arg(&ptx).arg("-o").arg(&cubin).output().expect("ptxas runs");
                let log = String::from_utf8_lossy(&run.stderr);
                assert!(run.status.success(), "ptxas -arch={target} {}: {log}", ptx.display());
                // The resources of each kernel, for the log: registers, stack, shared memory.
                if *target == "sm_90" {
                    let mut entry = String::new();
                    for line in log.lines() {
                        if let Some(at) = line.find("Compiling entry function '") {
                            entry = line[at + 26..].split('\'').next().unwrap_or("").to_string();
                        } else if line.contains("Used") {
                            println!("sm_90 {entry}: {}", line.split("info    :").last().unwrap_or(line).trim());
                        }
                    }
                }
                assembled += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(assembled >= 20, "{assembled} assemblies");
}
