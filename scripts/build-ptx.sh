#!/usr/bin/env bash
# Compiles the CUDA kernels (kernels/*.cu) to PTX for sm_70 and sm_80 with clang's CUDA
# device-only mode (no CUDA toolkit needed; Debian's `clang`), into kernels/ptx/ (the
# files the library embeds) or into the folder given as $1 (the test that the committed
# PTX is what the sources give, crates/kernel-host/tests/ptx.rs).
# -ffp-contract=off: only the kernels' explicit fmaf calls fuse, so the device rounds
# exactly as the host-compiled tests and the CPU model do.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-kernels/ptx}"
clang="${CLANG:-clang}"
# The PTX ISA each target's code is written in (the warp shuffles need it named; the
# PTX files' .version lines are these either way).
for target in "sm_70 ptx60" "sm_80 ptx70"; do
    arch="${target% *}"
    isa="${target#* }"
    mkdir -p "$out/$arch"
    for src in kernels/*.cu; do
        name="$(basename "$src" .cu)"
        "$clang" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch="$arch" \
            -Xclang -target-feature -Xclang "+$isa" -O3 -ffp-contract=off -S "$src" -o "$out/$arch/$name.ptx"
    done
done
echo "PTX written to $out"
