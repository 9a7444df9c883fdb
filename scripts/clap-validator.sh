#!/usr/bin/env bash
# clap-validator 0.4.1 (vendored in third_party/clap-validator, see VENDORED.md there) on
# a CLAP bundle: builds it (release, its own lock file), runs every test it has, prints
# its report without colour codes and exits non-zero if any test failed.
#   bash scripts/clap-validator.sh [BUNDLE]   (default: $CARGO_TARGET_DIR/bundled/FerroFX.clap)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bundle="${1:-$CARGO_TARGET_DIR/bundled/FerroFX.clap}"
if [ ! -e "$bundle" ]; then
    echo "clap-validator: no bundle at $bundle (build it with: cargo xtask bundle ferrofx)" >&2
    exit 2
fi
cargo build --release --locked --manifest-path third_party/clap-validator/Cargo.toml
validator="$CARGO_TARGET_DIR/release/clap-validator"
# Each test runs in its own process (the validator's default), so a crash is one failed
# test, not the end of the run. Its closing line reads "N tests run, N passed, N failed,
# N warnings, N skipped".
set +e
"$validator" validate "$bundle" | sed 's/\x1b\[[0-9;]*m//g'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "clap-validator: $bundle failed (exit $status)" >&2
fi
exit "$status"
