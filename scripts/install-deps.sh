#!/usr/bin/env bash
# Installs what FerroFX needs on a fresh Debian 12 machine (run as root): system
# packages (apt-get) and the Python test tools (numpy, SciPy, pytest) in a virtual
# environment outside the clone. The Rust toolchain (rustup, cargo >= 1.87) must
# already be there: this machine class ships it and nothing else may be downloaded.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found; install Rust 1.87 or newer (rustup) first" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: apt-get update, then the system packages (a few minutes on a fresh machine)"
    apt-get update -qq
    # pkg-config/gcc: -sys crates; flac: the FLAC decoding tests encode their inputs;
    # strace: the test that the renderer flushes its output before and after the rename;
    # python3-venv: the test tools' virtual environment; libasound2-dev and
    # libjack-jackd2-dev: the plugin's standalone app (ALSA/JACK); xvfb, xdotool and
    # imagemagick: the editor check under a virtual display; libgl1-mesa-dri: its OpenGL.
    # mesa-vulkan-drivers + libvulkan1: lavapipe, the Vulkan adapter the wgpu tests run on.
    # clang: compiles the CUDA kernels to PTX (the check that kernels/ptx is up to date).
    # liblilv-dev: the LV2 host of the plugin benchmark (benchmarks/lv2-host); the LSP
    # equaliser it compares with is optional (apt-get install lsp-plugins-lv2).
    apt-get install -y -qq --no-install-recommends pkg-config gcc clang flac strace python3 python3-venv python3-pip \
        libasound2-dev libjack-jackd2-dev libx11-xcb-dev libxcursor-dev libgl1-mesa-dev libgl1-mesa-dri \
        mesa-vulkan-drivers libvulkan1 liblilv-dev \
        xvfb xdotool imagemagick 2>&1 | { grep --line-buffered -E '^(Setting up|E:)' || true; }
    # (pipefail: a failing apt-get still fails this script; only its chatter is filtered.)
    echo "install-deps: system packages ready"
else
    echo "note: not root or no apt-get; skipping system packages" >&2
fi

VENV="${FERROFX_VENV:-$HOME/.cache/ferrofx/venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
# pedalboard: the VST3 host the plugin's tests load the bundle into. maturin: builds the
# Python package (python/) that the tests install. ray[data]: the corpus example's engine.
# nvidia-cuda-nvcc-cu12 (22 MB): NVIDIA's PTX assembler, ptxas, alone (no driver, no GPU
# needed), which checks that the embedded kernels assemble for the GPUs they target.
echo "install-deps: Python tools (numpy, scipy, pytest, pedalboard, matplotlib, maturin, ray[data], ptxas) into $VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --progress-bar on numpy scipy pytest pedalboard matplotlib "maturin>=1.7,<2" "ray[data]" "nvidia-cuda-nvcc-cu12==12.4.131"
echo "dependencies ready (Python tools in $VENV)"
