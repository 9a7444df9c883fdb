//! The PTX the library embeds (kernels/ptx/) is what the kernel sources give: rebuilt
//! here with scripts/build-ptx.sh (clang's CUDA device-only mode) and compared byte for
//! byte, so the sources and the shipped kernels cannot drift apart. Without clang it
//! prints why and passes, unless FERROFX_REQUIRE_CLANG=1 (set by scripts/test.sh).

use std::path::Path;
use std::process::Command;

#[test]
fn committed_ptx_equals_a_fresh_build_of_the_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    if Command::new(&clang).arg("--version").output().is_err() {
        let msg = format!("{clang} not found: cannot rebuild the PTX (scripts/install-deps.sh installs clang)");
        if std::env::var("FERROFX_REQUIRE_CLANG").as_deref() == Ok("1") {
            panic!("{msg}");
        }
        println!("SKIPPED: {msg}");
        return;
    }
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
