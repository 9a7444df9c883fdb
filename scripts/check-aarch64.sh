#!/usr/bin/env bash
# Cross-builds the core crate for aarch64 Linux and runs its tests under qemu user-mode
# emulation, on an x86-64 Debian 12 machine. rustup's toolchain here has no aarch64
# standard library (and none can be downloaded), so this uses Debian's own Rust 1.96
# (`rustc-web`, bookworm-security) with its aarch64 standard library installed through
# multiarch, the aarch64 cross linker and qemu-user. The plugin crate is not built (its
# windowing dependencies would need the aarch64 X11/GL development libraries).
# Usage: scripts/check-aarch64.sh [extra cargo arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! dpkg -s libstd-rust-web-dev:arm64 rustc-web gcc-aarch64-linux-gnu qemu-user >/dev/null 2>&1; then
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
        rustc-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
fi

export RUSTC=/usr/bin/rustc
export CARGO_TARGET_DIR="${FERROFX_AARCH64_TARGET_DIR:-${CARGO_TARGET_DIR:-$PWD/target}-aarch64}"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
# The SciPy reference set: generated here (deterministic) unless one is named.
if [ -z "${FERROFX_REFERENCE_DIR:-}" ]; then
    export FERROFX_REFERENCE_DIR="$CARGO_TARGET_DIR/ferrofx-generated/reference"
    "${FERROFX_VENV:-$HOME/.cache/ferrofx/venv}/bin/python" scripts/scipy_reference.py vectors "$FERROFX_REFERENCE_DIR"
fi

# Warnings are errors: every x86-only item must be compiled out cleanly. Static glibc:
# in this VM, qemu-user (7.2 and 10.0 alike) hangs in `pthread_create` of dynamically
# linked aarch64 programs (C ones too) and runs statically linked ones; the test harness
# spawns a thread per test.
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings -C target-feature=+crt-static"
"$RUSTC" --version
# Unit and integration tests (doctests need a cross rustdoc setup and are left to the
# native runs). Three tests need a worker thread to keep pace with wall-clock deadlines
# (to reach its job 300, or to return most blocks on time), which emulation (10-50x
# slower) cannot promise; under qemu their output-equality assertions passed and only
# the pace checks failed. They run natively in CI. Two more tests' pace checks (the worker
# returning a quarter of the blocks, or 50 before the first retune) are switched off here
# by FERROFX_PACE_UNCHECKED; their output-equality checks still run.
export FERROFX_PACE_UNCHECKED=1
cargo test -p ferrofx --target aarch64-unknown-linux-gnu --lib --tests "$@" -- \
    --skip on_time_jobs_give_the_cpu_stream_one_block_late \
    --skip a_worker_that_dies_midway_leaves_a_cpu_only_stream \
    --skip aligned_host_blocks_reach_the_worker
