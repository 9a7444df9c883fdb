#!/usr/bin/env python3
"""SciPy float64 ground truth for FerroFX's tests, generated (deterministically) in place.

    python scripts/scipy_reference.py vectors OUT_DIR
        A reference set in the format of the project's shared reference vectors
        (index.json, cases/<id>.json, the noise inputs, expected/<id>.f32): every IIR
        family and response at low, middle and high orders (some below 1e-3*fs), every
        cookbook biquad, designed FIRs of every window. tests/reference.rs runs it.

    python scripts/scipy_reference.py stress OUT_DIR --count N [--seed S]
        N seeded random cases over the whole chain-format contract (every family and
        response, orders 1-24, cutoffs 5e-5*fs..0.45*fs, band widths 0.1-6 octaves,
        fs 8-384 kHz, cookbook biquads with Q 0.1-40 and +-24 dB, FIRs up to 65,536
        taps): cases.jsonl (one chain per line) and expected/<n>.f32, the float64 output
        for input.f32. Designs SciPy itself makes unstable or non-finite, or runs
        unreliably (its float64 output over 1e-6 of the peak from the same sections
        run in extended precision), are written with a "skip" reason. tests/stress.rs runs them on the CPU and the GPU.

Outputs are float32 little-endian, planar [channel][sample]. Same numpy/SciPy versions
give the same bytes; the tests compare against whatever the installed SciPy computes.
"""

import argparse
import json
import os
import sys

import numpy as np
import scipy
import scipy.signal as ss

RATES = [8000, 16000, 22050, 44100, 48000, 88200, 96000, 176400, 192000, 384000]
FAMILIES = ["butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel"]
RESPONSES = ["lowpass", "highpass", "bandpass", "bandstop"]
BIQUADS = ["lowpass", "highpass", "bandpass", "bandpass_skirt", "notch", "allpass", "peaking", "low_shelf", "high_shelf"]
WINDOWS = ["rectangular", "hann", "hamming", "blackman", "kaiser"]


def rbj(kind, f0, q, gain_db, fs):
    """Audio EQ Cookbook rows [b0, b1, b2, a0, a1, a2] / a0, as the chain format defines."""
    a_ = 10 ** (gain_db / 40)
    w0 = 2 * np.pi * f0 / fs
    al, c, s = np.sin(w0) / (2 * q), np.cos(w0), np.sin(w0)
    sa = 2 * np.sqrt(a_) * al
    b, a = {
        "lowpass": ([(1 - c) / 2, 1 - c, (1 - c) / 2], [1 + al, -2 * c, 1 - al]),
        "highpass": ([(1 + c) / 2, -(1 + c), (1 + c) / 2], [1 + al, -2 * c, 1 - al]),
        "bandpass": ([al, 0, -al], [1 + al, -2 * c, 1 - al]),
        "bandpass_skirt": ([s / 2, 0, -s / 2], [1 + al, -2 * c, 1 - al]),
        "notch": ([1, -2 * c, 1], [1 + al, -2 * c, 1 - al]),
        "allpass": ([1 - al, -2 * c, 1 + al], [1 + al, -2 * c, 1 - al]),
        "peaking": ([1 + al * a_, -2 * c, 1 - al * a_], [1 + al / a_, -2 * c, 1 - al / a_]),
        "low_shelf": (
            [a_ * ((a_ + 1) - (a_ - 1) * c + sa), 2 * a_ * ((a_ - 1) - (a_ + 1) * c), a_ * ((a_ + 1) - (a_ - 1) * c - sa)],
            [(a_ + 1) + (a_ - 1) * c + sa, -2 * ((a_ - 1) + (a_ + 1) * c), (a_ + 1) + (a_ - 1) * c - sa],
        ),
        "high_shelf": (
            [a_ * ((a_ + 1) + (a_ - 1) * c + sa), -2 * a_ * ((a_ - 1) + (a_ + 1) * c), a_ * ((a_ + 1) + (a_ - 1) * c - sa)],
            [(a_ + 1) - (a_ - 1) * c + sa, 2 * ((a_ - 1) - (a_ + 1) * c), (a_ + 1) - (a_ - 1) * c - sa],
        ),
    }[kind]
    return np.array([list(b) + list(a)]) / a[0]


def iir_sos(family, response, order, cutoff, fs, ripple_db=None, attenuation_db=None):
    if family == "butterworth":
        return ss.butter(order, cutoff, response, fs=fs, output="sos")
    if family == "chebyshev1":
        return ss.cheby1(order, ripple_db, cutoff, response, fs=fs, output="sos")
    if family == "chebyshev2":
        return ss.cheby2(order, attenuation_db, cutoff, response, fs=fs, output="sos")
    if family == "elliptic":
        return ss.ellip(order, ripple_db, attenuation_db, cutoff, response, fs=fs, output="sos")
    return ss.bessel(order, cutoff, response, fs=fs, norm="phase", output="sos")


def firwin(taps, response, cutoff, window, fs, beta=None):
    w = ("kaiser", beta) if window == "kaiser" else ("boxcar" if window == "rectangular" else window)
    return ss.firwin(taps, cutoff, window=w, pass_zero=response, fs=fs)


def noise(seed, channels, n):
    x = np.random.default_rng(seed).standard_normal((channels, n))
    return (x / np.abs(x).max(axis=1, keepdims=True)).astype(np.float32)


def write_f32(path, planar):
    np.asarray(planar, dtype="<f4").tofile(path)


def stable(sos):
    """Poles strictly inside the unit circle and every coefficient finite."""
    if not np.all(np.isfinite(sos)):
        return False
    for row in sos:
        if np.any(np.abs(np.roots(row[3:])) >= 1.0):
            return False
    return True


# ----------------------------------------------------------------------------- vectors

def vectors(out):
    os.makedirs(os.path.join(out, "cases"), exist_ok=True)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    rng = np.random.default_rng(20261125)
    inputs = {4096: noise(20261101, 2, 4096), 16384: noise(20261102, 2, 16384)}
    for n, x in inputs.items():
        write_f32(os.path.join(out, f"input_2x{n}.f32"), x)
    cases = []

    def add(spec, tags, design_call, sos=None, taps=None):
        fs = spec["fs"]
        n = 16384 if "lowfreq" in tags else 4096
        x = inputs[n].astype(np.float64)
        freqs = np.geomspace(2.0, 0.499 * fs, 64)
        if sos is not None:
            y = ss.sosfilt(sos, x)
            _, h = ss.sosfreqz(sos, worN=freqs, fs=fs)
        else:
            y = ss.lfilter(taps, [1.0], x)
            _, h = ss.freqz(taps, [1.0], worN=freqs, fs=fs)
        if not (np.all(np.isfinite(y)) and np.abs(y).max() > 0):
            return
        cid = f"{len(cases):03d}_{spec.get('family', spec['kind'])}_{spec.get('btype', spec.get('shape', spec.get('ftype')))}_fs{fs}"
        write_f32(os.path.join(out, "expected", cid + ".f32"), y)
        case = {
            "id": cid,
            "spec": spec,
            "tags": tags,
            "design_call": design_call,
            "input": {"file": f"input_2x{n}.f32", "channels": 2, "samples": n, "dtype": "float32-le", "layout": "planar [channel][sample]"},
            "expected": {"file": f"expected/{cid}.f32", "channels": 2, "samples": n, "peak_abs": float(np.abs(y).max()),
                         "computed_by": "sosfilt" if sos is not None else "lfilter", "initial_state": "zero"},
            "freqs_hz": freqs.tolist(),
            "mag": np.abs(h).tolist(),
        }
        if sos is not None:
            case["sos"] = np.asarray(sos).tolist()
            case["sections"] = len(sos)
        else:
            case["taps"] = np.asarray(taps).tolist()
        with open(os.path.join(out, "cases", cid + ".json"), "w") as f:
            json.dump(case, f)
        cases.append({"id": cid, "kind": spec["kind"], "tags": tags, "samples": n})

    for family in FAMILIES:
        for response in RESPONSES:
            for order_range in [(1, 4), (4, 9), (9, 13)]:
                fs = int(rng.choice([44100, 48000, 96000]))
                order = int(rng.integers(*order_range))
                band = response in ("bandpass", "bandstop")
                low = rng.uniform() < 0.3
                lo_hz = (2e-4 if low else 2e-3) * fs
                f1 = float(np.exp(rng.uniform(np.log(lo_hz), np.log((0.15 if band else 0.45) * fs))))
                cutoff = [round(f1, 2), round(min(f1 * 2 ** rng.uniform(0.3, 3), 0.45 * fs), 2)] if band else round(f1, 2)
                spec = {"kind": "iir", "family": family, "btype": response, "order": order, "cutoff_hz": cutoff, "fs": fs}
                rp = rs = None
                if family in ("chebyshev1", "elliptic"):
                    spec["ripple_db"] = rp = round(float(rng.uniform(0.1, 2)), 2)
                if family in ("chebyshev2", "elliptic"):
                    spec["attenuation_db"] = rs = round(float(rng.uniform(30, 80)), 1)
                sos = iir_sos(family, response, order, cutoff, fs, rp, rs)
                first = cutoff[0] if band else cutoff
                tags = ["lowfreq"] if first < 1e-3 * fs else []
                add(spec, tags, f"{family}({order}, {cutoff}, {response}, fs={fs})", sos=sos)
    shapes = {"lowpass": "lowpass", "highpass": "highpass", "bandpass": "bandpass_peak", "bandpass_skirt": "bandpass_skirt",
              "notch": "notch", "allpass": "allpass", "peaking": "peaking", "low_shelf": "lowshelf", "high_shelf": "highshelf"}
    for kind, shape in shapes.items():
        for _ in range(2):
            fs = int(rng.choice([44100, 48000, 96000]))
            f0 = round(float(np.exp(rng.uniform(np.log(20), np.log(0.4 * fs)))), 2)
            q = round(float(np.exp(rng.uniform(np.log(0.3), np.log(10)))), 3)
            g = round(float(rng.uniform(-15, 15)), 1) if kind in ("peaking", "low_shelf", "high_shelf") else 0.0
            spec = {"kind": "rbj", "shape": shape, "f0_hz": f0, "fs": fs, "q": q, "gain_db": g}
            add(spec, ["lowfreq"] if f0 < 1e-3 * fs else [], f"RBJ {shape}", sos=rbj(kind, f0, q, g, fs))
    for response in RESPONSES:
        for window in WINDOWS:
            fs = int(rng.choice([44100, 48000, 96000]))
            taps = int(rng.choice([31, 101, 255, 1025]))
            band = response in ("bandpass", "bandstop")
            f1 = float(np.exp(rng.uniform(np.log(fs / taps * 2), np.log(0.2 * fs))))
            cutoff = [round(f1, 1), round(min(f1 * 2 ** rng.uniform(0.5, 3), 0.45 * fs), 1)] if band else round(f1, 1)
            beta = round(float(rng.uniform(2, 12)), 2) if window == "kaiser" else None
            spec = {"kind": "fir", "ftype": response, "numtaps": taps, "cutoff_hz": cutoff, "window": window, "fs": fs}
            if beta is not None:
                spec["kaiser_beta"] = beta
            add(spec, [], f"firwin({taps}, {cutoff}, {window})", taps=firwin(taps, response, cutoff, window, fs, beta))
    index = {"generator": "scripts/scipy_reference.py vectors", "numpy": np.__version__, "scipy": scipy.__version__,
             "channels": 2, "count": len(cases), "cases": cases}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"wrote {len(cases)} reference cases to {out}")


# ------------------------------------------------------------------------------ stress

def log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def stress_case(rng, fs):
    """A random stage over the whole contract and its SciPy form: ('sos', rows) or ('fir', taps)."""
    t = rng.choice(FAMILIES + ["linkwitz_riley", "biquad", "biquad", "fir"])
    nyq = fs / 2
    if t in FAMILIES:
        response = str(rng.choice(RESPONSES))
        order = int(rng.integers(1, 25))
        if response in ("bandpass", "bandstop"):
            width_oct = float(rng.uniform(0.1, 6))
            f1 = log_uniform(rng, 5e-5 * fs, 0.45 * fs / 2 ** width_oct) if 5e-5 * fs < 0.45 * fs / 2 ** width_oct else 5e-5 * fs
            f2 = min(f1 * 2 ** width_oct, 0.45 * fs)
            cutoff = [float(f"{f1:.6g}"), float(f"{f2:.6g}")]
        else:
            cutoff = float(f"{log_uniform(rng, 5e-5 * fs, 0.45 * fs):.6g}")
        stage = {"type": str(t), "response": response, "order": order, "cutoff_hz": cutoff}
        rp = rs = None
        if t in ("chebyshev1", "elliptic"):
            stage["ripple_db"] = rp = float(f"{log_uniform(rng, 0.01, 3):.4g}")
        if t in ("chebyshev2", "elliptic"):
            stage["attenuation_db"] = rs = float(f"{rng.uniform(20, 120):.4g}")
        return stage, ("sos", iir_sos(str(t), response, order, cutoff, fs, rp, rs))
    if t == "linkwitz_riley":
        response = str(rng.choice(["lowpass", "highpass"]))
        order = int(rng.integers(1, 13)) * 2
        cutoff = float(f"{log_uniform(rng, 5e-5 * fs, 0.45 * fs):.6g}")
        half = ss.butter(order // 2, cutoff, response, fs=fs, output="sos")
        return {"type": "linkwitz_riley", "response": response, "order": order, "cutoff_hz": cutoff}, ("sos", np.vstack([half, half]))
    if t == "biquad":
        kind = str(rng.choice(BIQUADS))
        f0 = float(f"{log_uniform(rng, 5e-5 * fs, 0.45 * fs):.6g}")
        q = float(f"{log_uniform(rng, 0.1, 40):.4g}")
        stage = {"type": "biquad", "kind": kind, "freq_hz": f0, "q": q}
        g = 0.0
        if kind in ("peaking", "low_shelf", "high_shelf"):
            stage["gain_db"] = g = float(f"{rng.uniform(-24, 24):.4g}")
        return stage, ("sos", rbj(kind, f0, q, g, fs))
    response = str(rng.choice(RESPONSES))
    taps = int(np.exp(rng.uniform(0, np.log(65536))))
    if response in ("highpass", "bandstop") and taps % 2 == 0:
        taps = taps + 1 if taps < 65536 else taps - 1
    window = str(rng.choice(WINDOWS))
    lo = max(5e-5 * fs, min(fs / taps, 0.1 * fs))
    if response in ("bandpass", "bandstop"):
        width_oct = float(rng.uniform(0.1, 6))
        f1 = log_uniform(rng, lo, max(lo * 1.01, 0.45 * fs / 2 ** width_oct))
        cutoff = [float(f"{f1:.6g}"), float(f"{min(f1 * 2 ** width_oct, 0.45 * fs):.6g}")]
        if cutoff[0] >= cutoff[1]:
            cutoff = [float(f"{0.1 * fs:.6g}"), float(f"{0.2 * fs:.6g}")]
    else:
        cutoff = float(f"{log_uniform(rng, lo, 0.45 * fs):.6g}")
    stage = {"type": "fir", "response": response, "taps": taps, "cutoff_hz": cutoff, "window": window}
    beta = None
    if window == "kaiser":
        stage["beta"] = beta = float(f"{rng.uniform(0, 14):.4g}")
    return stage, ("fir", firwin(taps, response, cutoff, window, fs, beta))


def stress(out, count, seed, frames):
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    x = noise(seed, 2, frames)
    write_f32(os.path.join(out, "input.f32"), x)
    x64 = x.astype(np.float64)
    rng = np.random.default_rng(seed)
    skipped = 0
    with open(os.path.join(out, "cases.jsonl"), "w") as f:
        for n in range(count):
            fs = int(rng.choice(RATES))
            stage, (kind, coef) = stress_case(rng, fs)
            line = {"n": n, "fs": fs, "chain": {"format": "ferrofx-chain", "version": 1, "stages": [stage]}}
            with np.errstate(all="ignore"):
                if kind == "sos" and not stable(coef):
                    line["skip"] = "SciPy's own design is unstable or not finite"
                else:
                    y = ss.sosfilt(coef, x64) if kind == "sos" else ss.lfilter(coef, [1.0], x64)
                    ld = x64.astype(np.longdouble)
                    y_ld = ss.sosfilt(np.asarray(coef, np.longdouble), ld) if kind == "sos" else ss.lfilter(np.asarray(coef, np.longdouble), [1.0], ld)
                    drift = float(np.abs(y - y_ld).max() / max(float(np.abs(y_ld).max()), 1e-300))
                    if not np.all(np.isfinite(y)):
                        line["skip"] = "SciPy's own output is not finite"
                    elif not drift <= 1e-6:
                        # The design is so ill-conditioned that float64 itself cannot run
                        # it: SciPy's result is no reference (the same sections in
                        # extended precision give another answer).
                        line["skip"] = f"SciPy's float64 result is numerically unreliable ({drift:.1e} of the peak from extended precision)"
                    elif np.abs(y).max() == 0:
                        line["skip"] = "SciPy's output is silent"
                    else:
                        write_f32(os.path.join(out, "expected", f"{n}.f32"), y)
            skipped += "skip" in line
            f.write(json.dumps(line) + "\n")
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"count": count, "seed": seed, "frames": frames, "channels": 2, "scipy": scipy.__version__}, f)
    print(f"wrote {count} stress cases ({skipped} marked skip) to {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    v = sub.add_parser("vectors")
    v.add_argument("out")
    s = sub.add_parser("stress")
    s.add_argument("out")
    s.add_argument("--count", type=int, default=300)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--frames", type=int, default=8192)
    a = p.parse_args()
    if a.mode == "vectors":
        vectors(a.out)
    else:
        stress(a.out, a.count, a.seed, a.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
