#!/usr/bin/env bash
# Runs every FerroFX test from a plain clone: the plugin bundles (debug), SciPy reference
# vectors and seeded stress cases generated here (scripts/scipy_reference.py), the Rust
# unit and integration tests (reference cases, the stress suite, the fuzzers, the CLAP
# host tests that load the bundle), clap-validator on the bundle, the README's main job (`cargo xtask render` in
# release), a benchmark smoke run, the standalone app with its editor under Xvfb, and in
# Python the package's tests, the SciPy cross-check and the VST3 host test (pedalboard),
# and a 10-minute soak.
# Another reference set (the project's shared vectors, say) is run too, as an extra check,
# when FERROFX_SHARED_REFERENCE names its folder; nothing here needs it.
# Ends with one line: "tests: N passed, N failed".
# Expects scripts/install-deps.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="${FERROFX_VENV:-$HOME/.cache/ferrofx/venv}"
PY="$VENV/bin/python"
log="$(mktemp)"
tmp="$(mktemp -d)"

# One closing line over every runner's counts (cargo test, pytest), also on failure.
summary() {
    local status=$?
    local passed failed
    passed=$(grep -aoE '(test result: (ok|FAILED)\. [0-9]+ passed|[0-9]+ passed)' "$log" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
    failed=$(grep -aoE '([0-9]+ failed)' "$log" | awk '{s+=$1} END {print s+0}')
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    echo "tests: $passed passed, $failed failed"
    rm -rf "$tmp" "$log"
    exit "$status"
}
trap summary EXIT
step() { echo "== $*"; }
# Runs a command, its output shown and kept for the summary.
run() { "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

# The wgpu backend's tests run on a real adapter (lavapipe where there is no GPU) and
# must not skip; lavapipe wants a private runtime folder.
export FERROFX_REQUIRE_GPU=1
# The check that the committed PTX is what the kernel sources compile to must not skip,
# nor the one that it assembles for the GPUs it targets (ptxas from scripts/install-deps.sh).
export FERROFX_REQUIRE_CLANG=1 FERROFX_REQUIRE_PTXAS=1
export FERROFX_PTXAS="${FERROFX_PTXAS:-$("$PY" -c 'import glob, sys; print((glob.glob(sys.prefix + "/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas") + ["ptxas"])[0])')}"
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$tmp/runtime"
    mkdir -p "$XDG_RUNTIME_DIR"
    chmod 700 "$XDG_RUNTIME_DIR"
fi

step "SciPy ground truth, generated: reference vectors and 300 seeded stress cases"
generated="$CARGO_TARGET_DIR/ferrofx-generated"
run "$PY" scripts/scipy_reference.py vectors "$generated/reference"
run "$PY" scripts/scipy_reference.py stress "$generated/stress" --count "${FERROFX_STRESS_CASES:-300}" --seed "${FERROFX_STRESS_SEED:-1}"
export FERROFX_REFERENCE_DIR="$generated/reference" FERROFX_STRESS_DIR="$generated/stress" FERROFX_REQUIRE_STRESS=1
shared="${FERROFX_SHARED_REFERENCE:-}"

step "plugin bundles, debug build (nice-plug's allocation checks on): cargo xtask bundle ferrofx"
cargo xtask bundle ferrofx
# The host tests (clack-host for CLAP, pedalboard for VST3) load these and must not skip.
export FERROFX_BUNDLE_DIR="$CARGO_TARGET_DIR/bundled" FERROFX_REQUIRE_BUNDLES=1

step "clap-validator 0.4.1 (vendored: third_party/clap-validator) on the debug CLAP bundle"
run bash scripts/clap-validator.sh "$FERROFX_BUNDLE_DIR/FerroFX.clap"

step "cargo test (workspace: unit and integration tests, stress suite, fuzzers, CLAP host tests)"
# The CLAP editor test (plugin/tests/clap_gui.rs) leaves its screenshots at scale 1 and 2 here.
export FERROFX_SCREENSHOT_DIR="$CARGO_TARGET_DIR/editor-check"
run cargo test --workspace -- --skip every_reference_case_meets_the_tolerances
step "SciPy reference cases, generated set (CPU engine, then every GPU backend that opens: wgpu on lavapipe here)"
run cargo test --workspace --test reference -- --nocapture
# --workspace: the same feature set as the test build above, so nothing recompiles.
run cargo test --workspace --test gpu_backends every_reference_case -- --nocapture
step "a GPU without float64 (FERROFX_WGPU_FLOAT64=0): the cascades float32 would miss declined, by name, and the plugin building on the CPU instead of retuning"
FERROFX_WGPU_FLOAT64=0 run cargo test --workspace --test gpu_retune --test stress
if [ -n "$shared" ] && [ -f "$shared/index.json" ]; then
    step "SciPy reference cases, the shared set at $shared (extra check)"
    FERROFX_REFERENCE_DIR="$shared" run cargo test --workspace --test reference --test gpu_model -- --nocapture
    FERROFX_REFERENCE_DIR="$shared" run cargo test --workspace --test gpu_backends every_reference_case -- --nocapture
else
    echo "note: no extra reference set named (FERROFX_SHARED_REFERENCE); the generated set stands alone"
fi

step "README main job (release): cargo xtask render"
run cargo xtask render --chain examples/chains/demo.json --output "$tmp/demo.wav" examples/audio/demo.wav

step "soak, 16 minutes of audio through the CLAP host (docs/testing.md has the 8-hour run)"
# The debug bundle built above aborts on any allocation inside process(). Ten minutes are
# mostly warm-up for memory (lavapipe's pipelines and caches grow over the first 20-40
# sessions), so the memory bound here is loose; the long run holds it to 1 MB.
NICE_LOG="$tmp/soak-plugin.log" run cargo xtask soak --minutes 16 --max-rss-growth-mb 16

step "benchmark smoke run (no timing assertions): cargo xtask bench --quick"
run cargo xtask bench --quick

step "standalone app and editor under a virtual display"
mkdir -p "$CARGO_TARGET_DIR/editor-check"
run bash scripts/editor-check.sh "$CARGO_TARGET_DIR/editor-check/editor.png"
echo "editor screenshot: $CARGO_TARGET_DIR/editor-check/editor.png"

step "the Python package (pip install ./python, release build), then the Python tests: the package against SciPy, the SciPy cross-check, the VST3 host test"
# (maturin runs from the virtual environment's bin folder.)
PATH="$VENV/bin:$PATH" run "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation ./python
FERROFX_REQUIRE_PYTHON_PACKAGE=1 FERROFX_XTASK="$CARGO_TARGET_DIR/debug/xtask" run "$PY" -m pytest -q -rs tests/python
