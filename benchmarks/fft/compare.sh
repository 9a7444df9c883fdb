#!/usr/bin/env bash
# rustfft (what the partitioned FIR uses) against FFTW 3 (single precision, planned with
# FFTW_MEASURE and FFTW_PATIENT) at the complex sizes the FIR levels transform: 2B for
# partitions B = 128, 1024, 8192, 65536 (channel pairs), and powers of two between.
# Both pinned to the same core, three rounds in alternating order; prints JSON lines.
# Needs libfftw3-dev (apt install libfftw3-dev); FFTW is GPL, measured here, not linked.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes="${FFT_SIZES:-256 512 1024 2048 4096 8192 16384 32768 65536 131072}"
cpu="$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')"
if ! [ -e /usr/include/fftw3.h ]; then
    echo "fft compare: FFTW is not installed (apt install libfftw3-dev); nothing to compare" >&2
    exit 0
fi
exe="${TMPDIR:-/tmp}/ferrofx_fftw_bench"
gcc -O2 -o "$exe" benchmarks/fft/fftw_bench.c -lfftw3f -lm
cargo build --quiet --release -p ferrofx-probes --example fft_probe
probe="${CARGO_TARGET_DIR:-target}/release/examples/fft_probe"
for round in 1 2 3; do
    if [ $((round % 2)) = 1 ]; then order="rust measure patient"; else order="patient measure rust"; fi
    for side in $order; do
        case $side in
            rust) taskset -c "$cpu" "$probe" $sizes ;;
            *) taskset -c "$cpu" "$exe" "$side" $sizes ;;
        esac | sed "s/^{/{\"round\":$round,/"
    done
done
