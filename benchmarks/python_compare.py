"""FerroFX from Python against SciPy (and TorchFX where installed), in one run.

    python benchmarks/python_compare.py [--quick] [--json]

The workloads of docs/command-line.md (`api_chain`, `iir_chain`, `fir_chain`,
`long_fir`) at 44.1 kHz on seeded noise, each timed as the median of a few runs after a
warm-up, all in this process on this machine:
- `ferrofx.Chain.process`: the engine (float32 I/O, float64 state), all cores over the
  channels' items only when batched (here one item: one core per call);
- `ferrofx.sosfilt` / `ferrofx.lfilter`: float64 drop-ins (FIR: direct convolution, so
  `long_fir` is skipped for it);
- `scipy.signal.sosfilt` / `lfilter` in float64 (`long_fir`: `scipy.signal.oaconvolve`,
  SciPy's fastest exact equivalent, since lfilter would take hours);
- TorchFX, when it imports and runs (benchmarks/compare.py's setup: its own designs,
  fused, one thread; `long_fir` has no TorchFX equivalent there).
Ratios are SciPy's time over FerroFX's. The CPU is named in the header; compare only
figures from one run.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import scipy.signal as ss

import ferrofx

FS = 44_100
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the CPU name and TorchFX's setup, as benchmarks/compare.py has them)
from compare import cpu_name  # noqa: E402


def api_chain():
    c1 = lambda f: ferrofx.Chebyshev1.highpass(f, 4, ripple_db=0.1)  # noqa: E731
    return (c1(20.0) | c1(60.0) | c1(65.0) | ferrofx.Butterworth.lowpass(5000.0, 5)
            | ferrofx.Butterworth.lowpass(4900.0, 5) | ferrofx.Butterworth.lowpass(4850.0, 5))


def iir_chain():
    return (ferrofx.Butterworth.highpass(1000.0, 2) | ferrofx.Butterworth.lowpass(5000.0, 2)
            | ferrofx.Chebyshev1.highpass(1500.0, 2, ripple_db=0.1) | ferrofx.Chebyshev1.lowpass(1800.0, 2, ripple_db=0.1))


def fir_chain():
    return (ferrofx.Fir.lowpass(101, 1000.0) | ferrofx.Fir.lowpass(102, 5000.0) | ferrofx.Fir.lowpass(103, 1500.0)
            | ferrofx.Fir.lowpass(104, 1800.0) | ferrofx.Fir.lowpass(105, 1850.0))


def long_fir():
    rng = np.random.default_rng(0x5EED)
    n = 262_144
    taps = rng.uniform(-1, 1, n) * np.exp(-6.9 / n * np.arange(n)) * 0.05
    return ferrofx.Fir.coefficients(taps).chain()


def timed(f, runs):
    f()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="short signals (a smoke run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    scale = 0.05 if args.quick else 1.0
    runs = 3 if args.quick else 5
    have_torchfx = compare.torchfx_available()
    cases = [("api_chain", api_chain(), 8, 120.0), ("iir_chain", iir_chain(), 2, 60.0), ("iir_chain", iir_chain(), 8, 60.0),
             ("fir_chain", fir_chain(), 2, 60.0), ("long_fir", long_fir(), 2, 60.0 if not args.quick else 10.0)]
    if not args.json:
        print(f"FerroFX {ferrofx.__name__} on {cpu_name()}, {os.cpu_count()} cores, SIMD {ferrofx._ferrofx.SIMD}; "
              f"numpy {np.__version__}, scipy {__import__('scipy').__version__}; TorchFX: {'yes' if have_torchfx else 'not installed'}")
        print(f"{'workload':<10} {'ch':>3} {'seconds':>8}  {'ferrofx engine':>14} {'ferrofx f64':>12} {'scipy f64':>10} {'torchfx':>10} {'scipy/engine':>12} {'scipy/f64':>10} {'torchfx/engine':>14}")
    rng = np.random.default_rng(1)
    for name, chain, channels, seconds in cases:
        seconds = seconds * scale if name != "long_fir" or not args.quick else seconds
        frames = int(FS * seconds)
        x32 = rng.standard_normal((channels, frames)).astype(np.float32)
        x64 = x32.astype(np.float64)
        designed = chain.design(FS)
        t_engine = timed(lambda: chain.process(x32, FS, threads=1), runs)
        if name == "long_fir":
            taps = designed[0]["taps"]
            t_f64 = None
            t_scipy = timed(lambda: ss.oaconvolve(x64, taps[None, :], axes=-1)[:, :frames], max(1, runs - 2))
        else:
            def f64():
                y = x64
                for d in designed:
                    y = ferrofx.sosfilt(d["sos"], y) if d["type"] == "sos" else ferrofx.lfilter(d["taps"], [1.0], y)
                return y

            def scipy_run():
                y = x64
                for d in designed:
                    y = ss.sosfilt(d["sos"], y, axis=-1) if d["type"] == "sos" else ss.lfilter(d["taps"], [1.0], y, axis=-1)
                return y
            t_f64 = timed(f64, runs)
            t_scipy = timed(scipy_run, runs)
        t_torchfx = None
        if have_torchfx and name in ("api_chain", "iir_chain"):
            want = chain.process(x32, FS)
            t_torchfx, _ = compare.torchfx_time_iir(json.loads(chain.to_json())["stages"], x32, runs, want.astype(np.float64))
        elif have_torchfx and name == "fir_chain":
            t_torchfx = compare.torchfx_time_fir(x32, runs)
        row = {"workload": name, "channels": channels, "seconds": round(seconds, 2), "cpu": cpu_name(),
               "ferrofx_engine_s": t_engine, "ferrofx_f64_s": t_f64, "scipy_f64_s": t_scipy, "torchfx_s": t_torchfx,
               "scipy_over_engine": t_scipy / t_engine, "scipy_over_f64": (t_scipy / t_f64) if t_f64 else None}
        if args.json:
            print(json.dumps(row))
        else:
            f64s = f"{t_f64 * 1e3:10.1f} ms" if t_f64 else f"{'-':>13}"
            r64 = f"{t_scipy / t_f64:9.2f}x" if t_f64 else f"{'-':>10}"
            tfx = f"{t_torchfx * 1e3:7.1f} ms" if t_torchfx else f"{'-':>10}"
            rtfx = f"{t_torchfx / t_engine:13.2f}x" if t_torchfx else f"{'-':>14}"
            print(f"{name:<10} {channels:>3} {seconds:>8.1f}  {t_engine * 1e3:11.1f} ms {f64s} {t_scipy * 1e3:7.1f} ms {tfx} {t_scipy / t_engine:11.2f}x {r64} {rtfx}")


if __name__ == "__main__":
    main()
