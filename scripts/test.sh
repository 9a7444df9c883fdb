#!/usr/bin/env bash
# Runs every FerroFX test: the plugin bundles (debug), the Rust unit and integration
# tests (the 77 shared SciPy reference cases print a summary; the CLAP host tests load
# the bundle), the README's main job (`cargo xtask render` in release), a benchmark
# smoke run, the standalone app with its editor under Xvfb, and in Python the SciPy
# cross-check and the VST3 host test (pedalboard).
# Expects scripts/install-deps.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="${FERROFX_VENV:-$HOME/.cache/ferrofx/venv}"
export FERROFX_REFERENCE_DIR="${FERROFX_REFERENCE_DIR:-$PWD/../shared/reference}"
if [ ! -f "$FERROFX_REFERENCE_DIR/index.json" ]; then
    echo "error: shared reference vectors not found at $FERROFX_REFERENCE_DIR (set FERROFX_REFERENCE_DIR)" >&2
    exit 1
fi

# The wgpu backend's tests run on a real adapter (lavapipe where there is no GPU) and
# must not skip; lavapipe wants a private runtime folder.
export FERROFX_REQUIRE_GPU=1
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$(mktemp -d)"
    chmod 700 "$XDG_RUNTIME_DIR"
fi

echo "== plugin bundles, debug build (nice-plug's allocation checks on): cargo xtask bundle ferrofx"
cargo xtask bundle ferrofx
# The host tests (clack-host for CLAP, pedalboard for VST3) load these and must not skip.
export FERROFX_BUNDLE_DIR="$CARGO_TARGET_DIR/bundled" FERROFX_REQUIRE_BUNDLES=1

echo "== cargo test (workspace; includes the CLAP host tests)"
cargo test --workspace -- --skip every_reference_case_meets_the_tolerances
echo "== SciPy reference cases (CPU engine, then the wgpu backend)"
cargo test --workspace --test reference -- --nocapture
# --workspace: the same feature set as the test build above, so nothing recompiles.
cargo test --workspace --test gpu_wgpu every_reference_case -- --nocapture

echo "== README main job (release): cargo xtask render"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cargo xtask render --chain examples/chains/demo.json --output "$tmp/demo.wav" examples/audio/demo.wav

echo "== benchmark smoke run (no timing assertions): cargo xtask bench --quick"
cargo xtask bench --quick

echo "== standalone app and editor under a virtual display"
bash scripts/editor-check.sh "$tmp/editor.png"

echo "== SciPy cross-check and the VST3 host test (Python)"
FERROFX_XTASK="$CARGO_TARGET_DIR/debug/xtask" "$VENV/bin/python" -m pytest -q tests/python
