#!/usr/bin/env bash
# Prepares what a GPU machine lent by the `device` tool needs to test and measure the GPU
# backends (it cannot reach any registry, so nothing is built there): the GPU backends'
# test binaries (shared cases, CUDA, wgpu), the plugin's GPU-path retune test (the test profile: the wgpu tests count allocations, which only debug
# builds can) and a release xtask, stripped, plus the generated SciPy reference set, in
# .gpu-carry/ (ignored by git through .git/info/exclude). Prints the
# total size (the tool carries at most 64 MiB) and the command to run there.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ferrofx/target}"
out=.gpu-carry
grep -qxF "/$out/" .git/info/exclude 2>/dev/null || echo "/$out/" >> .git/info/exclude
rm -rf "$out" && mkdir -p "$out"
# One build, the test binaries' paths from cargo's JSON messages.
cargo test --no-run --message-format=json -p ferrofx -p ferrofx_plugin --test gpu_backends --test gpu_cuda --test gpu_cuda_resident --test gpu_cuda_float64 --test gpu_resident --test gpu_wgpu --test gpu_float64 --test gpu_retune \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["test"]:
        print(m["target"]["name"], m["executable"])' \
    | while read -r name exe; do cp "$exe" "$out/$name"; done
cargo build --release -p xtask
cp "$CARGO_TARGET_DIR/release/xtask" "$out/xtask"
# The Python package as a wheel (device arrays through CUDA; the machine has PyTorch and
# CuPy but reaches no registry).
"$HOME/.cache/ferrofx/venv/bin/maturin" build --release --quiet -m python/Cargo.toml -o "$out/wheels"
# pytest and its dependencies (the machine may have none), for tests/python/test_torch.py.
"$HOME/.cache/ferrofx/venv/bin/pip" download -q --only-binary=:all: -d "$out/pywheels" pytest
strip "$out"/gpu_* "$out"/xtask 2>/dev/null || true
ref="$CARGO_TARGET_DIR/ferrofx-generated/reference"
[ -f "$ref/index.json" ] || ~/.cache/ferrofx/venv/bin/python scripts/scipy_reference.py vectors "$ref"
cp -r "$ref" "$out/reference"
# Loose, the binaries pass the carry's 64 MiB; packed with gzip (on every image) they
# take about 38 MB. gpu-check.sh unpacks them.
tar czf pack.tar.gz -C "$out" . && rm -rf "$out" && mkdir -p "$out" && mv pack.tar.gz "$out/"
du -sh "$out"
cat <<'RUN'
On the device (run tool, carry [".gpu-carry", ".gl"]), one call each:
  bash scripts/gpu-check.sh goals      # first (timeout_s 360): one figure per goal, each option beside its default
  bash scripts/gpu-check.sh throughput # the options not yet timed, at length (timeout_s 540)
  bash scripts/gpu-check.sh resident   # next: data on the device, Python, peers
  bash scripts/gpu-check.sh all        # everything (a longer call; the results come back packed)
(wgpu on the NVIDIA GPU needs the Vulkan loader there, from .gl: see the device tool's README.)
RUN
