#!/usr/bin/env python3
"""TorchFX on a CUDA GPU, on the TorchFX headline workload (`api_chain`: 15 sections,
8 channels x 60 s at 44.1 kHz, float32), for a side-by-side figure with
`cargo xtask bench --backend cuda --workload api_chain --duration-s 60` on the same GPU.

    python benchmarks/torchfx_gpu.py [--seconds 60] [--runs 5]

Prints one JSON line per case: TorchFX's fused cascade (`FusedSOSCascade`, as in
`benchmarks/compare.py`) with the signal already on the GPU ("resident") and with the
host-to-device and device-to-host copies counted ("round_trip", FerroFX's bench times
that way: host memory in, host memory out); the median of `runs` timed passes after a
warm-up, each synchronised; and its error against SciPy's float64 `sosfilt` of SciPy's
own design, relative to the output's peak (FerroFX's reference tolerance is 1e-4).
Needs torch with CUDA, torchfx (0.8.0 measured), numpy and scipy. torchfx 0.8.0's wheel
ships its native extension built without CUDA ("CUDA extension not compiled; move
tensors to CPU"); `--build-cuda-ext` compiles the extension from the CUDA and C++ sources
the wheel includes (`torchfx/_csrc`, with `-DWITH_CUDA`, through
`torch.utils.cpp_extension.load`: needs nvcc) and uses it in place of the shipped one.
"""

import argparse
import importlib.metadata
import json
import sys
import time

import numpy as np
import scipy.signal as ss

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from compare import API, FS, torchfx_iir  # noqa: E402


def scipy_sos(stages):
    parts = []
    for s in stages:
        btype = "highpass" if s["response"] == "highpass" else "lowpass"
        if s["type"] == "butterworth":
            parts.append(ss.butter(s["order"], s["cutoff_hz"], btype, fs=FS, output="sos"))
        else:
            parts.append(ss.cheby1(s["order"], s["ripple_db"], s["cutoff_hz"], btype, fs=FS, output="sos"))
    return np.vstack(parts)


def build_cuda_ext():
    """TorchFX's own extension sources, compiled with CUDA, registered as its module."""
    import glob
    import importlib.util
    import os
    import time as _t

    from torch.utils.cpp_extension import load

    spec = importlib.util.find_spec("torchfx")
    csrc = os.path.join(os.path.dirname(spec.origin), "_csrc")
    sources = [os.path.join(csrc, "binding.cpp")] + sorted(glob.glob(os.path.join(csrc, "cpu", "*.cpp"))) + sorted(
        glob.glob(os.path.join(csrc, "cuda", "*.cu"))
    )
    t0 = _t.perf_counter()
    ext = load(
        name="torchfx_ext",
        sources=sources,
        extra_include_paths=[os.path.join(csrc, "include")],
        extra_cflags=["-O3", "-DWITH_CUDA"],
        extra_cuda_cflags=["-O3", "-DWITH_CUDA"],
        verbose=False,
    )
    sys.modules["torchfx.torchfx_ext"] = ext
    print(f"built TorchFX's CUDA extension in {_t.perf_counter() - t0:.0f} s", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", default="cuda", help="torch device (cpu: a check of this script without a GPU)")
    ap.add_argument("--build-cuda-ext", action="store_true", help="compile TorchFX's extension with its CUDA kernels first")
    args = ap.parse_args()
    import torch

    if args.build_cuda_ext:
        build_cuda_ext()

    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    frames = int(args.seconds * FS)
    x = np.random.default_rng(1).uniform(-1, 1, (args.channels, frames)).astype(np.float32)
    want = ss.sosfilt(scipy_sos(API), x.astype(np.float64), axis=-1)
    casc = torchfx_iir(API).to(dev)
    xh = torch.from_numpy(x)
    xd = xh.to(dev)

    def resident():
        casc.reset_state()
        y = casc(xd)
        sync()
        return y

    def round_trip():
        casc.reset_state()
        y = casc(xh.to(dev)).cpu()
        sync()
        return y

    version = importlib.metadata.version("torchfx")
    for name, fn in (("resident", resident), ("round_trip", round_trip)):
        fn()
        ts = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            y = fn()
            ts.append(time.perf_counter() - t0)
        y = y.detach().cpu().numpy().astype(np.float64)
        err = float(np.max(np.abs(y - want)) / np.max(np.abs(want)))
        print(json.dumps({
            "engine": "torchfx", "version": version,
            "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "case": name, "workload": "api_chain", "channels": args.channels,
            "frames": frames, "median_s": float(np.median(ts)), "min_s": float(min(ts)), "error_vs_scipy_f64": err,
        }), flush=True)


if __name__ == "__main__":
    main()
