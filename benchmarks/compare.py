#!/usr/bin/env python3
"""FerroFX against SciPy, an optional TorchFX and the hand-written C reference, on the
workloads of `cargo xtask bench`, measured in one run on this machine.

    python benchmarks/compare.py [--quick] [--runs N] [--rounds R] [--out DIR] [--anchor FILE.c] [--anchor-cflags FLAGS]

Results go to target/compare/ (or --out DIR); `--out benchmarks/results` replaces the
committed figures that docs/perf.md quotes, so do that only for a run the page is
updated from.

The shared development VM's speed drifts by up to 2x within minutes, so the whole
comparison runs R times (default 3) and each engine keeps its fastest round per cell:
a slow phase that falls on one engine's turn then does not decide a ratio.

Needs numpy and scipy; matplotlib for the plot (scripts/install-deps.sh installs it
into the project's virtual environment; without it the plot is skipped with a note); gcc for the C reference; TorchFX
(`pip install torchfx "torch==2.11.0"`, ~5 GB with torch's CUDA libraries) is used when
importable and working, skipped otherwise (torchfx 0.8.0's compiled extension fails on
torch 2.15 with "CUDA extension not compiled" even for CPU tensors: a torch ABI change;
torch 2.11.0 works). TorchFX runs single-threaded (`torch.set_num_threads(1)`) like
FerroFX's figures, on float32 tensors, its IIR stages fused (`FusedSOSCascade`).
The C column is a C anchor named by `--anchor FILE.c` (or `FERROFX_C_ANCHOR`; the
project's CPU anchor is a float32 TDF-II cascade with this command line: `bench`, `verify`)
when one is given, else the repository's own `benchmarks/sos_tdf2_ref.c`. With an anchor,
every IIR cell is timed the way the anchor times itself: FerroFX (`cargo xtask
bench --cpu-time --block-frames 65536`, one cell per process: the engine's whole-signal
path) and the anchor run back to back, in alternating order from round to round, each
pinned to the same core (the last one this process may use) and timed in process CPU
time; the anchor's float32 error against SciPy float64 is measured with its `verify` mode.

Prints a markdown table of ns per sample per channel (per section for IIR, per FIR for
fir_chain) and the ratios the CPU-speed issue sets goals on; writes OUT/perf.json and
OUT/perf_iir.png (ns/sample/section against channels, per engine).
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.signal as ss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FS = 44100


def xtask(*args):
    out = subprocess.run(["cargo", "xtask", *args], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cargo xtask {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def chain_file(stages):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"format": "ferrofx-chain", "version": 1, "stages": stages}, f)
    f.close()
    return f.name


def design(stages):
    d = json.loads(xtask("design", "--chain", chain_file(stages), "--fs", str(FS)))
    return d["stages"]


API = [{"type": "chebyshev1", "response": "highpass", "order": 4, "cutoff_hz": f, "ripple_db": 0.1} for f in (20, 60, 65)] + [
    {"type": "butterworth", "response": "lowpass", "order": 5, "cutoff_hz": f} for f in (5000, 4900, 4850)
]
IIR = [
    {"type": "butterworth", "response": "highpass", "order": 2, "cutoff_hz": 1000},
    {"type": "butterworth", "response": "lowpass", "order": 2, "cutoff_hz": 5000},
    {"type": "chebyshev1", "response": "highpass", "order": 2, "cutoff_hz": 1500, "ripple_db": 0.1},
    {"type": "chebyshev1", "response": "lowpass", "order": 2, "cutoff_hz": 1800, "ripple_db": 0.1},
]
FIR_TAPS = [ss.firwin(n, f, window="hamming", fs=FS) for n, f in zip(range(101, 106), (1000, 5000, 1500, 1800, 1850))]


def timed(fn, runs):
    fn()  # warm-up
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def noise(ch, frames):
    return np.random.default_rng(1).uniform(-1, 1, (ch, frames)).astype(np.float32)


# The anchor filters a whole signal at once; FerroFX's whole-signal path feeds the engine
# long blocks (`render --block-size 65536`; the Python package up to 262,144 frames,
# measured as fast per sample).
ANCHOR_BLOCK_FRAMES = 65536


def pinned_cpu():
    """The core both sides of an anchor comparison are pinned to: the last one allowed."""
    return str(max(os.sched_getaffinity(0)))


def xtask_binary():
    """The release xtask, built once, so that a pinned timing runs no cargo around it."""
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "xtask"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "xtask")


def build_anchor(src, cflags):
    """Builds the anchor with gcc and `cflags` (its README's build: `-O3 -march=native`)."""
    exe = os.path.join(tempfile.gettempdir(), "ferrofx_c_anchor")
    subprocess.run(["gcc", *cflags.split(), "-o", exe, src, "-lm"], check=True)
    return exe


def anchor_time(exe, sos_path, ch, seconds, reps):
    """The anchor's median seconds for `ch` channels x `seconds` (its own CPU-time clock)."""
    out = subprocess.run(["taskset", "-c", pinned_cpu(), exe, "bench", sos_path, str(ch), repr(seconds), str(FS), str(reps)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["median_s"]


def ferrofx_cpu_time(xtask_exe, workload, ch, seconds, runs):
    """FerroFX's median seconds for one cell, pinned and in process CPU time."""
    out = subprocess.run(["taskset", "-c", pinned_cpu(), xtask_exe, "bench", "--workload", workload, "--channels", str(ch),
                          "--duration-s", repr(seconds), "--cpu-time", "--runs", str(runs), "--json",
                          "--block-frames", str(ANCHOR_BLOCK_FRAMES)],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    assert len(rows) == 1, out.stdout
    return rows[0]["median_s"]


def anchor_error(exe, sos, ch):
    """The anchor's max |error| / peak against SciPy float64 on one second of noise."""
    x = noise(ch, FS)
    d = tempfile.mkdtemp()
    sos_path, xin, yout = (os.path.join(d, n) for n in ("a.sos", "in.f32", "out.f32"))
    np.savetxt(sos_path, np.asarray(sos))
    x.tofile(xin)
    subprocess.run([exe, "verify", sos_path, str(ch), str(FS), xin, yout], check=True, capture_output=True)
    y = np.fromfile(yout, dtype=np.float32).reshape(ch, FS)
    want = ss.sosfilt(sos, x.astype(np.float64), axis=1)
    return float(np.max(np.abs(y - want)) / np.max(np.abs(want)))


def c_reference(sos, ch, frames, runs):
    exe = os.path.join(tempfile.gettempdir(), "ferrofx_sos_tdf2_ref")
    if not os.path.exists(exe):
        if not shutil.which("gcc"):
            return None
        subprocess.run(["gcc", "-O3", "-march=native", "-o", exe, os.path.join(ROOT, "benchmarks/sos_tdf2_ref.c"), "-lm"], check=True)
    path = os.path.join(tempfile.gettempdir(), "ferrofx_ref.sos")
    np.savetxt(path, np.asarray(sos))
    out = subprocess.run([exe, path, str(ch), str(frames), str(runs)], capture_output=True, text=True, check=True)
    median, _, err = out.stdout.split()
    return float(median), float(err)


def torchfx_available():
    """True when TorchFX imports and filters a CPU tensor; prints why not otherwise."""
    try:
        import torch
        from torchfx.filter import HiButterworth
        from torchfx.filter.fused import FusedSOSCascade

        torch.set_num_threads(1)
        FusedSOSCascade(HiButterworth(1000, order=2, fs=FS))(torch.zeros(1, 64))
        return True
    except Exception as e:  # noqa: BLE001 - any failure means "not measured"
        print(f"TorchFX not measured: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return False


def torchfx_iir(stages):
    """The workload's IIR stages as TorchFX filters (its own designs), fused."""
    from torchfx.filter import HiButterworth, HiChebyshev1, LoButterworth, LoChebyshev1
    from torchfx.filter.fused import FusedSOSCascade

    kinds = {("butterworth", "highpass"): HiButterworth, ("butterworth", "lowpass"): LoButterworth,
             ("chebyshev1", "highpass"): HiChebyshev1, ("chebyshev1", "lowpass"): LoChebyshev1}
    filters = []
    for s in stages:
        kw = {"ripple": s["ripple_db"]} if "ripple_db" in s else {}
        filters.append(kinds[(s["type"], s["response"])](s["cutoff_hz"], order=s["order"], fs=FS, **kw))
    return FusedSOSCascade(*filters)


def torchfx_time_iir(stages, x, runs, want):
    """Median seconds of one fused TorchFX pass over `x` and its error against `want`."""
    import torch

    casc = torchfx_iir(stages)
    xt = torch.from_numpy(x)

    def run():
        casc.reset_state()
        return casc(xt)

    t = timed(run, runs)
    y = run().numpy()
    return t, float(np.max(np.abs(y - want)) / np.max(np.abs(want)))


def torchfx_time_fir(x, runs):
    import torch
    from torchfx.filter import DesignableFIR

    firs = [DesignableFIR(f, n, fs=FS) for n, f in zip(range(101, 106), (1000, 5000, 1500, 1800, 1850))]
    xt = torch.from_numpy(x)

    def run():
        y = xt
        for f in firs:
            y = f(y)
        return y

    return timed(run, runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="short durations (seconds, not minutes)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per cell and engine in a round (their median)")
    ap.add_argument("--rounds", type=int, default=3, help="passes over all engines; each engine's fastest round is kept")
    ap.add_argument("--out", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "compare"),
                    help="folder for perf.json and perf_iir.png (default: target/compare; benchmarks/results/ holds the committed figures)")
    ap.add_argument("--anchor", default=os.environ.get("FERROFX_C_ANCHOR"),
                    help="a C anchor's source to time beside FerroFX (default: $FERROFX_C_ANCHOR; none: benchmarks/sos_tdf2_ref.c is the C column)")
    ap.add_argument("--anchor-cflags", default="-O3 -march=native",
                    help="gcc flags for the anchor (default: its README's build, '-O3 -march=native'); e.g. add "
                         "-mno-avx512f where gcc's AVX-512 code for it is slower than its AVX2 code (gcc 12 on AMD Zen 5)")
    args = ap.parse_args()
    args.anchor_exe = None
    if args.anchor:
        if not os.path.exists(args.anchor):
            sys.exit(f"--anchor {args.anchor}: no such file")
        if not (shutil.which("gcc") and shutil.which("taskset")):
            sys.exit("--anchor needs gcc and taskset")
        args.anchor_exe = build_anchor(args.anchor, args.anchor_cflags)
        args.xtask_exe = xtask_binary()
        print(f"C column: the anchor {args.anchor} (gcc {args.anchor_cflags}), both sides pinned to CPU {pinned_cpu()}, "
              "process CPU time", file=sys.stderr)
    else:
        print("C column: benchmarks/sos_tdf2_ref.c (no --anchor given)", file=sys.stderr)
    scale = 0.05 if args.quick else 1.0
    api_sos = np.vstack([s["sos"] for s in design(API)])
    iir_sos = np.vstack([s["sos"] for s in design(IIR)])
    have_torchfx = torchfx_available()
    rounds = []
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", file=sys.stderr)
        rounds.append(measure_round(args, api_sos, iir_sos, have_torchfx, r))
    rows = combine(rounds)
    ours = rounds[0][1]
    os.makedirs(args.out, exist_ok=True)
    meta = {"machine": platform.processor() or platform.machine(), "cpu": cpu_name(), "simd": simd_level(ours),
            "date": time.strftime("%Y-%m-%d"), "quick": args.quick, "torchfx": have_torchfx, "rounds": args.rounds,
            "c_reference": f"{args.anchor} (gcc {args.anchor_cflags}; pinned, process CPU time, interleaved with FerroFX in "
                           "65,536-frame blocks)" if args.anchor_exe
            else "benchmarks/sos_tdf2_ref.c (wall time)", "anchor": bool(args.anchor_exe)}
    with open(os.path.join(args.out, "perf.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print_table(rows, meta)
    plot(rows, os.path.join(args.out, "perf_iir.png"), meta)


def measure_round(args, api_sos, iir_sos, have_torchfx, round_index):
    """One pass over every workload: FerroFX (`cargo xtask bench --json`), then each
    other engine on the same cells. Returns (rows, FerroFX's raw lines). With a C
    anchor, each IIR cell's FerroFX figure is re-timed beside the anchor's (see the
    module's summary), in the order this round's index gives."""
    print("running cargo xtask bench ...", file=sys.stderr)
    bench_args = ["bench", "--json"] + (["--quick"] if args.quick else [])
    ours = [json.loads(l) for l in xtask(*bench_args).splitlines() if l.startswith("{")]
    rows = []
    for m in ours:
        w, ch, frames = m["workload"], m["channels"], m["frames"]
        if w == "realtime_block":
            rows.append({"workload": w, "channels": ch, "block": m["block"], "median_us": m["median_s"] * 1e6,
                         "p999_us": m["p999_s"] * 1e6, "p999_budget_share": m["p999_budget_share"],
                         "machine_median_us": m["machine_median_s"] * 1e6, "machine_p999_us": m["machine_p999_s"] * 1e6})
            continue
        x = noise(ch, frames)
        row = {"workload": w, "channels": ch, "seconds": round(frames / FS, 3), "ferrofx": m["ns_per_sample"]}
        if w in ("api_chain", "iir_chain"):
            sos = api_sos if w == "api_chain" else iir_sos
            per = len(sos)
            row["sections"] = per
            row["ferrofx"] /= per
            row["scipy"] = timed(lambda: ss.sosfilt(sos, x, axis=1), args.runs) * 1e9 / (frames * ch * per)
            if have_torchfx:
                want = ss.sosfilt(sos, x.astype(np.float64), axis=1)
                t, err = torchfx_time_iir(API if w == "api_chain" else IIR, x, args.runs, want)
                row["torchfx"] = t * 1e9 / (frames * ch * per)
                row["torchfx_error"] = err
            if args.anchor_exe:
                sos_path = os.path.join(tempfile.gettempdir(), f"ferrofx_anchor_{w}.sos")
                np.savetxt(sos_path, np.asarray(sos))
                seconds = frames / FS
                sides = [("ferrofx", lambda: ferrofx_cpu_time(args.xtask_exe, w, ch, seconds, args.runs)),
                         ("c_f32_tdf2", lambda: anchor_time(args.anchor_exe, sos_path, ch, seconds, max(args.runs, 3)))]
                for key, run in sides if round_index % 2 == 0 else sides[::-1]:
                    row[key] = run() * 1e9 / (frames * ch * per)
                row["c_f32_tdf2_error"] = anchor_error(args.anchor_exe, sos, ch)
                ref = None
            else:
                ref = c_reference(sos, ch, frames, max(args.runs, 3))
            if ref:
                row["c_f32_tdf2"] = ref[0] * 1e9 / (frames * ch * per)
                row["c_f32_tdf2_error"] = ref[1]
        elif w == "fir_chain":
            row["ferrofx"] /= len(FIR_TAPS)
            def oa():
                y = x
                for t in FIR_TAPS:
                    y = ss.oaconvolve(y, t[None, :], axes=1)[:, :frames]
                return y
            row["scipy"] = timed(oa, args.runs) * 1e9 / (frames * ch * len(FIR_TAPS))
            if have_torchfx:
                row["torchfx"] = torchfx_time_fir(x, args.runs) * 1e9 / (frames * ch * len(FIR_TAPS))
        elif w == "long_fir":
            row["realtime_x"] = 1e9 / (row["ferrofx"] * ch) / FS
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    return rows, ours


ENGINES = ("ferrofx", "scipy", "torchfx", "c_f32_tdf2")


def combine(rounds):
    """Every engine's fastest round per cell (the round least disturbed by the shared
    machine; each engine gets the same treatment), errors at their worst; for
    `realtime_block`, the whole row of the round with the lowest p99.9."""
    out = []
    for i, row in enumerate(rounds[0][0]):
        same = [rs[i] for rs, _ in rounds]
        if row["workload"] == "realtime_block":
            out.append(min(same, key=lambda r: r["p999_us"]))
            continue
        best = dict(row)
        for k in ENGINES:
            if all(k in r for r in same):
                best[k] = min(r[k] for r in same)
        for k in ("torchfx_error", "c_f32_tdf2_error"):
            if all(k in r for r in same):
                best[k] = max(r[k] for r in same)
        if row["workload"] == "long_fir":
            best["realtime_x"] = 1e9 / (best["ferrofx"] * row["channels"]) / FS
        best["rounds"] = len(same)
        out.append(best)
    return out


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def simd_level(_):
    out = subprocess.run(["cargo", "xtask", "bench", "--quick", "--workload", "iir_chain"], cwd=ROOT, capture_output=True, text=True)
    first = out.stdout.splitlines()[0] if out.stdout else ""
    return first[first.find("(") + 1 : first.find(")")] if "(" in first else "?"


def print_table(rows, meta):
    print(f"\nMeasured {meta['date']} on {meta['cpu']} ({meta['simd']}), one run of {meta['rounds']} rounds "
          f"(each engine's fastest round per cell), single thread. C column: {meta['c_reference']}.\n")
    print("| workload | ch | s | FerroFX | SciPy | TorchFX | C f32 TDF-II | x SciPy | x TorchFX | x C |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def cell(v, fmt):
        return format(v, fmt) if v is not None else "–"

    for r in rows:
        if r["workload"] in ("api_chain", "iir_chain", "fir_chain"):
            f, sp, tf, c = r["ferrofx"], r.get("scipy"), r.get("torchfx"), r.get("c_f32_tdf2")
            print(f"| {r['workload']} | {r['channels']} | {r['seconds']} | {f:.3f} | {cell(sp, '.3f')} | {cell(tf, '.3f')} | "
                  f"{cell(c, '.3f')} | {cell(sp and sp / f, '.1f')} | {cell(tf and tf / f, '.1f')} | {cell(c and c / f, '.2f')} |")
    anchored = [r for r in rows if r["workload"] in ("api_chain", "iir_chain") and r.get("c_f32_tdf2")]
    if anchored and meta["anchor"]:
        for label, chans, goal in (("1-2 channels", (1, 2), 3.0), ("8-12 channels", (8, 12), 2.0)):
            ratios = [r["c_f32_tdf2"] / r["ferrofx"] for r in anchored if r["channels"] in chans]
            if ratios:
                print(f"\nAgainst the C anchor, {label}: {min(ratios):.2f}-{max(ratios):.2f}x (goal {goal:g}x: "
                      f"{'met' if min(ratios) >= goal else 'not met'}); the anchor's float32 error against SciPy float64 "
                      f"up to {max(r.get('c_f32_tdf2_error', 0) for r in anchored if r['channels'] in chans):.1e} of the peak")
    errs = [(r["workload"], r["channels"], r["torchfx_error"]) for r in rows if "torchfx_error" in r]
    if errs:
        worst = {}
        for w, _, e in errs:
            worst[w] = max(worst.get(w, 0.0), e)
        print("\nTorchFX's worst error against SciPy float64 (max |error| / peak): "
              + ", ".join(f"{w} {e:.1e}" for w, e in worst.items()))
    for r in rows:
        if r["workload"] == "long_fir":
            print(f"\nlong_fir: {r['ferrofx']:.1f} ns/sample, {r['realtime_x']:.0f}x real time (2 ch, one core)")
    print("\n| realtime_block | median us | p99.9 us | p99.9 share of budget | plain arithmetic of the same median: median us | its p99.9 us |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r["workload"] == "realtime_block":
            print(f"| {r['block']} | {r['median_us']:.2f} | {r['p999_us']:.2f} | {100 * r['p999_budget_share']:.3f} % | "
                  f"{r['machine_median_us']:.2f} | {r['machine_p999_us']:.2f} |")


def plot(rows, path, meta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    iir = [r for r in rows if r["workload"] == "iir_chain"]
    longest = max(r["seconds"] for r in iir)
    iir = sorted([r for r in iir if r["seconds"] == longest], key=lambda r: r["channels"])
    ch = [r["channels"] for r in iir]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for key, label in (("ferrofx", "FerroFX (f64 TDF-II)"), ("c_f32_tdf2", "C f32 TDF-II, -O3 -march=native"), ("scipy", "SciPy sosfilt"), ("torchfx", "TorchFX CPU (fused)")):
        if all(key in r for r in iir):
            ax.plot(ch, [r[key] for r in iir], marker="o", label=label)
    ax.set_xlabel("channels")
    ax.set_ylabel("ns per sample per channel per section")
    ax.set_yscale("log")
    ax.set_xticks(ch)
    ax.set_title(f"iir_chain, 4 sections, {longest:g} s at 44.1 kHz\n{meta['cpu']} ({meta['simd']}), {meta['date']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
