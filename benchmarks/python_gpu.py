#!/usr/bin/env python3
"""The GPU peers in one run, on one card, on the same data: FerroFX's device path
(`Chain.process` on a CUDA tensor), TorchFX's fused cascade, `torchaudio.functional.lfilter`
(one call per section) and CuPy's `cupyx.scipy.signal.sosfilt`, each with its error
against SciPy's float64 `sosfilt` (relative to the output's peak) beside its time.

    python benchmarks/python_gpu.py [--seconds 60] [--runs 5] [--device cuda|cpu] [--build-cuda-ext]

Also FerroFX's PyTorch layer (`ferrofx.torch.Filter`) on `api_chain`: eager, compiled
(`torch.compile(fullgraph=True)`) and forward + backward, for the goals "the compiled
module no slower than eager" (the compiled line's `compiled_over_eager`: the two alternated
in one loop) and "backward at most 3x the forward".

Cases (one JSON line per engine and case, the median of `runs` synchronised passes after
a warm-up, the data already on the device):
- `api_chain`: TorchFX's headline workload, 15 sections (3 Chebyshev I high-passes, 3
  Butterworth low-passes), 8 channels x `--seconds` at 44.1 kHz, float32;
- `batch`: 1,024 clips x 10 s stereo at 48 kHz through 8 sections (`--batch-clips` to
  change the count), reported as hours of audio per second (FerroFX and CuPy only: the
  others take minutes there).
Engines that are not installed, or that fail, print a line with the reason and are
skipped. `--device cpu` runs what has a CPU path (FerroFX on NumPy arrays, torchaudio on
CPU tensors) as a check of this script on a machine without a GPU. The issue's goals
(FerroFX 20x TorchFX and 5x CuPy on `api_chain`, within 1e-5 of the peak; 300 hours of
audio per second on `batch`) are judged from these lines.
"""

import argparse
import json
import sys
import time

import numpy as np
import scipy.signal as ss

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from compare import API, FS  # noqa: E402

BATCH_FS = 48_000
BATCH_STAGES = [{"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": 30},
                {"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1.4, "gain_db": -6},
                {"type": "biquad", "kind": "peaking", "freq_hz": 3000, "q": 2.0, "gain_db": 4},
                {"type": "butterworth", "response": "lowpass", "order": 8, "cutoff_hz": 16000}]


def emit(**fields):
    print(json.dumps(fields), flush=True)


def design_sos(stages, fs):
    """The stages' SOS rows as FerroFX designs them (SciPy's designs, a0 = 1)."""
    import ferrofx

    rows = [np.asarray(d["sos"], dtype=np.float64) for d in ferrofx.Chain.from_stages(stages).design(fs) if d["type"] == "sos"]
    sos = np.vstack(rows)
    return sos / sos[:, 3:4]


def timed(fn, runs, sync):
    fn()
    sync()
    ts = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def paired(fn, other, runs, sync):
    """`fn` and `other` alternated `runs` times after a call of each: (median seconds of
    `fn`, its last output, median seconds of `other`)."""
    fn()
    other()
    sync()
    ts, us = [], []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        sync()
        t1 = time.perf_counter()
        other()
        sync()
        ts.append(t1 - t0)
        us.append(time.perf_counter() - t1)
    return float(np.median(ts)), out, float(np.median(us))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch-clips", type=int, default=1024)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--build-cuda-ext", action="store_true", help="compile TorchFX's CUDA extension first (see torchfx_gpu.py)")
    args = ap.parse_args()
    if args.build_cuda_ext:
        from torchfx_gpu import build_cuda_ext

        build_cuda_ext()

    try:
        import torch
    except ImportError:
        torch = None
    cuda = args.device == "cuda"
    if cuda and (torch is None or not torch.cuda.is_available()):
        sys.exit("--device cuda needs PyTorch with a CUDA device (use --device cpu to check the script)")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    device_name = torch.cuda.get_device_name(0) if cuda else "cpu"

    cases = []
    frames = int(args.seconds * FS)
    x = np.random.default_rng(1).uniform(-1, 1, (8, frames)).astype(np.float32)
    cases.append(("api_chain", API, FS, x, ("ferrofx", "ferrofx_torch", "ferrofx_torch_compiled", "ferrofx_torch_backward", "ferrofx_torch_backward_input", "torchfx", "torchaudio", "cupy")))
    clips = args.batch_clips if cuda else min(args.batch_clips, 8)
    xb = np.random.default_rng(2).uniform(-1, 1, (clips, 2, 10 * BATCH_FS)).astype(np.float32)
    cases.append(("batch", BATCH_STAGES, BATCH_FS, xb, ("ferrofx", "cupy")))

    for case, stages, fs, data, engines in cases:
        sos = design_sos(stages, fs)
        want = ss.sosfilt(sos, data.astype(np.float64), axis=-1)
        peak = float(np.max(np.abs(want)))
        # Hours of audio: clips x duration for a batch (a stereo clip counts once), tracks
        # (channels) x duration otherwise.
        hours = data.shape[0] * data.shape[-1] / fs / 3600.0
        base = {"case": case, "device": device_name, "shape": list(data.shape), "sections": int(sos.shape[0])}
        for engine in engines:
            try:
                median_s, y, *extra = run_engine(engine, stages, sos, fs, data, args.runs, cuda, torch, sync)
            except Exception as e:  # a missing or failing peer is reported, not fatal
                emit(engine=engine, skipped=f"{type(e).__name__}: {e}", **base)
                continue
            err = float(np.max(np.abs(np.asarray(y, dtype=np.float64) - want)) / peak)
            emit(engine=engine, median_s=median_s, error_vs_scipy_f64=err, hours_per_s=hours / median_s, **(extra[0] if extra else {}), **base)


def run_engine(engine, stages, sos, fs, data, runs, cuda, torch, sync):
    """(median seconds, output as NumPy) of one engine on `data` already on the device."""
    if engine == "ferrofx":
        import ferrofx

        chain = ferrofx.Chain.from_stages(stages)
        if cuda:
            xd = torch.from_numpy(data).cuda()
            t, y = timed(lambda: chain.process(xd, fs), runs, sync)
            return t, y.cpu().numpy()
        return timed(lambda: chain.process(data, fs), runs, sync)
    if engine.startswith("ferrofx_torch"):
        # The PyTorch layer (ferrofx.torch: the cascade in float64 on the device, float32
        # in and out): eager, compiled (torch.compile, fullgraph), and forward + backward
        # (dL/dx and dL/dsos of sum(y); `_input`: dL/dx alone, fixed coefficients);
        # "backward at most 3x the forward" is (backward line - eager line) / eager line.
        if torch is None:
            raise ImportError("PyTorch is not installed")
        import ferrofx
        from ferrofx.torch import Filter

        dev = "cuda" if cuda else "cpu"
        backward = engine.startswith("ferrofx_torch_backward")
        layer = Filter.from_chain(ferrofx.Chain.from_stages(stages), fs, learnable=engine == "ferrofx_torch_backward").to(dev)
        run = torch.compile(layer, fullgraph=True) if engine == "ferrofx_torch_compiled" else layer
        xd = torch.from_numpy(data).to(dev).requires_grad_(backward)

        def once():
            if not backward:
                with torch.no_grad():
                    return run(xd)
            layer.zero_grad()
            xd.grad = None
            y = run(xd)
            y.sum().backward()
            return y

        if engine == "ferrofx_torch_compiled":
            # Compiled against eager, the calls alternated: on a machine with few cores the
            # compiler's worker processes may still be busy just after compiling, which
            # timing one after the other would charge to the compiled module.
            def eager():
                with torch.no_grad():
                    return layer(xd)

            t, y, t_eager = paired(once, eager, runs, sync)
            return t, y.detach().cpu().numpy(), {"eager_paired_median_s": t_eager, "compiled_over_eager": t / t_eager}
        t, y = timed(once, runs, sync)
        return t, y.detach().cpu().numpy()
    if engine == "torchfx":
        if torch is None:
            raise ImportError("PyTorch is not installed")
        from compare import torchfx_iir

        casc = torchfx_iir(stages).to("cuda" if cuda else "cpu")
        xd = torch.from_numpy(data).to("cuda" if cuda else "cpu")

        def once():
            casc.reset_state()
            return casc(xd)

        t, y = timed(once, runs, sync)
        return t, y.detach().cpu().numpy()
    if engine == "torchaudio":
        import torchaudio.functional as taf

        dev = "cuda" if cuda else "cpu"
        xd = torch.from_numpy(data).to(dev)
        rows = [(torch.tensor(r[:3], dtype=torch.float32, device=dev), torch.tensor(r[3:], dtype=torch.float32, device=dev)) for r in sos]

        def once():
            y = xd
            for b, a in rows:
                y = taf.lfilter(y, a, b, clamp=False)
            return y

        t, y = timed(once, runs, sync)
        return t, y.cpu().numpy()
    if engine == "cupy":
        if not cuda:
            raise RuntimeError("CuPy runs on a CUDA device only")
        import cupy
        from cupyx.scipy.signal import sosfilt

        xd = cupy.asarray(data)
        sd = cupy.asarray(sos.astype(np.float32))
        t, y = timed(lambda: sosfilt(sd, xd, axis=-1), runs, cupy.cuda.get_current_stream().synchronize)
        return t, cupy.asnumpy(y)
    raise ValueError(engine)


if __name__ == "__main__":
    main()
