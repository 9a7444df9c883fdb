"""`ferrofx.signal` against `scipy.signal`, function by function, in one run.

    python benchmarks/scipy_dropin.py [--seconds 60] [--repeats 3] [--json FILE]

The workload of issue 46: float64 noise at 48 kHz, 8 channels x `--seconds` (and one
channel, and the 8 channels as float32, the case the issue quotes), through 15 second-order sections (an elliptic low-pass's first 15) for `sosfilt`
and `sosfiltfilt`, and a 4th-order Butterworth `(b, a)` for `lfilter` and `filtfilt`.
Each function runs on one core (this process pinned to one CPU, so FerroFX's row blocks
run one after another) and on every core; SciPy is single-threaded either way. Figures
are the best of `--repeats` runs after a warm-up; the ratio is SciPy's time over
FerroFX's; the last column is the largest difference from SciPy's result over its peak
(0 where the bits are SciPy's: `sosfilt`, `lfilter`; the zero-phase functions add NumPy
steps of their own). The CPU is named in the header: compare figures from one run only.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import scipy.signal as ss

import ferrofx.signal as fs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import cpu_name  # noqa: E402


def best(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rate = 48_000
    rng = np.random.default_rng(46)
    x8 = rng.standard_normal((8, int(rate * args.seconds)))
    sos = ss.ellip(30, 0.5, 80, 1000, fs=rate, output="sos")[:15]
    b, a = ss.butter(4, 1000, fs=rate)
    cases = [
        ("sosfilt", lambda m, x, **k: m.sosfilt(sos, x, **k)),
        ("sosfiltfilt", lambda m, x, **k: m.sosfiltfilt(sos, x, **k)),
        ("lfilter", lambda m, x, **k: m.lfilter(b, a, x, **k)),
        ("filtfilt", lambda m, x, **k: m.filtfilt(b, a, x, **k)),
    ]
    everything = os.sched_getaffinity(0)
    one = {min(everything)}
    print(f"CPU: {cpu_name()}, {len(everything)} cores; {args.seconds:g} s at 48 kHz; best of {args.repeats}")
    print(f"{'function':<12} {'input':>8} {'channels':>8} {'SciPy ms':>9} {'1 core ms':>10} {'x':>6} {'all ms':>8} {'x':>6} {'error/peak':>11}")
    rows = []
    for name, call in cases:
        for x in (x8, x8[:1].copy(), x8.astype(np.float32)):
            want = call(ss, x)
            got = call(fs, x)
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            t_scipy = best(lambda: call(ss, x), args.repeats)
            os.sched_setaffinity(0, one)
            try:
                t_one = best(lambda: call(fs, x), args.repeats)
            finally:
                os.sched_setaffinity(0, everything)
            t_all = best(lambda: call(fs, x), args.repeats)
            row = dict(function=name, input=str(x.dtype), channels=x.shape[0], scipy_ms=t_scipy * 1e3, one_core_ms=t_one * 1e3,
                       all_cores_ms=t_all * 1e3, error_over_peak=err, cores=len(everything),
                       cpu=cpu_name(), seconds=args.seconds)
            rows.append(row)
            print(f"{name:<12} {str(x.dtype):>8} {x.shape[0]:>8} {t_scipy * 1e3:>9.1f} {t_one * 1e3:>10.1f} {t_scipy / t_one:>6.2f} "
                  f"{t_all * 1e3:>8.1f} {t_scipy / t_all:>6.2f} {err:>11.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
