#!/usr/bin/env python3
"""How many sections could run in float32 with a guaranteed error: a worst-case bound for
float32 transposed direct form II, per section, on the benchmark chains, the plugin
benchmark's 24 bells and (optionally) a reference set.

    python benchmarks/f32_bound.py [--reference DIR] [--budget 1e-5]

FerroFX runs every section in float64 (src/dsp/sos/mod.rs says why). A float32 section
would double the lanes per vector; the CPU-speed issue allows it only "where an error
bound computed at build time allows". This script computes that bound, so the decision
rests on numbers.

The bound, relative to the input's peak (the output's error is at most B * max|x| for
every input), is the sum of two parts per section k:
- coefficients: the float32 rounding of section k's coefficients changes the whole
  cascade's impulse response from h to h_k; its effect is at most ||h_k - h||_1.
- arithmetic: the roundings per sample (p1 = b1 v + s2, p2 = b2 v, y = b0 v + s1,
  s1' = p1 - a1 y, s2' = p2 - a2 y, each at most u = 2^-24 of its value; without fused
  multiply-adds also the products b1 v, b0 v, a1 y and a2 y, counted too, so the bound
  holds either way) enter the section's recursion: each reaches the cascade output through 1 / A_k(z) and
  every later section, impulse response g_k. Each value is at most the l1 norm of its
  impulse response from the input times max|x|, so the part is
  u * ||g_k||_1 * (sum of those nine l1 norms).
The measured column runs the case through SciPy's float32 `sosfilt` (the same form,
float32 coefficients and state) on white noise (or the case's own input) and gives
max|y32 - y64| / max|y64|, the tolerance's measure: the bound is a guarantee, the
measured error what one signal happened to get.

Needs numpy and scipy (the project's virtual environment has both).
"""

import argparse
import json
import os
import sys

import numpy as np
import scipy.signal as ss

U = 2.0**-24
FS = 44100

# The IIR workloads of benchmarks/compare.py and `cargo xtask bench` (44.1 kHz).
IIR_CHAIN = [("butter", "highpass", 2, 1000), ("butter", "lowpass", 2, 5000), ("cheby1", "highpass", 2, 1500), ("cheby1", "lowpass", 2, 1800)]
API_CHAIN = [("cheby1", "highpass", 4, f) for f in (20, 60, 65)] + [("butter", "lowpass", 5, f) for f in (5000, 4900, 4850)]


def design(stages, fs=FS):
    parts = []
    for kind, response, order, cutoff in stages:
        if kind == "butter":
            parts.append(ss.butter(order, cutoff, response, fs=fs, output="sos"))
        else:
            parts.append(ss.cheby1(order, 0.1, cutoff, response, fs=fs, output="sos"))
    return np.vstack(parts)


def peaking(f0, gain_db, q, fs):
    """The cookbook peaking biquad (Bristow-Johnson)."""
    a = 10 ** (gain_db / 40)
    w = 2 * np.pi * f0 / fs
    alpha = np.sin(w) / (2 * q)
    c = np.cos(w)
    return np.array([1 + alpha * a, -2 * c, 1 - alpha * a, 1 + alpha / a, -2 * c, 1 - alpha / a])


def bells():
    """The plugin benchmark's 24 bells: 40 Hz to 16 kHz evenly in log frequency, +3/-3 dB
    alternating, Q 1, 48 kHz (testkit::bench)."""
    freqs = np.geomspace(40, 16000, 24)
    return np.array([peaking(f, 3.0 if i % 2 == 0 else -3.0, 1.0, 48000) for i, f in enumerate(freqs)])


def response_length(sos, start=1 << 14, cap=1 << 21):
    """Impulse response length (a power of two) after which its tail is below 1e-13 of its
    l1 norm; None when `cap` samples are not enough (the bound is then not computed)."""
    n = start
    while n <= cap:
        x = np.zeros(n)
        x[0] = 1.0
        h = np.abs(ss.sosfilt(sos, x))
        if h[-n // 8:].sum() <= 1e-13 * max(h.sum(), 1e-300):
            return n
        n *= 4
    return None


def per_section_bound(sos):
    """[(coefficient part, arithmetic part)] per section, relative to the input peak; None
    when the impulse responses do not decay within the cap."""
    sos = np.asarray(sos, float)
    sos = sos / sos[:, 3:4]
    n = response_length(sos)
    if n is None:
        return None
    k_count = len(sos)
    x = np.zeros(n)
    x[0] = 1.0
    h = ss.sosfilt(sos, x)
    v = x
    parts = []
    for k in range(k_count):
        b0, b1, b2, _, a1, a2 = sos[k]
        y = ss.lfilter([b0, b1, b2], [1.0, a1, a2], v)
        s2 = b2 * v - a2 * y
        p1 = b1 * v + np.concatenate([[0.0], s2[:-1]])
        s1 = p1 - a1 * y
        p2 = b2 * v
        # The five results, then the four products a kernel without FMA rounds as well.
        values = sum(np.abs(q).sum() for q in (y, p1, s1, p2, s2, b1 * v, b0 * v, a1 * y, a2 * y))
        g = ss.lfilter([1.0], [1.0, a1, a2], x)
        if k + 1 < k_count:
            g = ss.sosfilt(sos[k + 1:], g)
        rounded = sos.copy()
        rounded[k] = rounded[k].astype(np.float32).astype(float)
        coef = np.abs(ss.sosfilt(rounded, x) - h).sum()
        parts.append((coef, U * np.abs(g).sum() * values))
        v = y
    return parts


def measured_f32(sos, x):
    """max|y32 - y64| / max|y64| over all channels of `x` (channels x samples)."""
    sos = np.asarray(sos, float)
    sos = sos / sos[:, 3:4]
    ref = ss.sosfilt(sos, x.astype(float), axis=-1)
    y32 = ss.sosfilt(sos.astype(np.float32), x.astype(np.float32), axis=-1)
    return float(np.abs(y32 - ref).max() / max(np.abs(ref).max(), 1e-300))


def summarize(name, sos, x, budget):
    parts = per_section_bound(sos)
    err = measured_f32(sos, x)
    if parts is None:
        return {"name": name, "sections": len(sos), "bound": float("inf"), "float32_sections": 0, "measured": err}
    per = [c + a for c, a in parts]
    # Sections whose parts add up within the budget, smallest first: the most a
    # mixed-precision cascade could put in float32 under this budget.
    spent, chosen = 0.0, 0
    for b in sorted(per):
        if spent + b > budget:
            break
        spent += b
        chosen += 1
    return {"name": name, "sections": len(sos), "bound": float(sum(per)), "float32_sections": chosen, "measured": err, "per_section": per}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", help="a reference set (index.json, cases/): every iir/rbj case too")
    ap.add_argument("--budget", type=float, default=1e-5, help="error budget relative to the input peak (default 1e-5, the tolerance's aim)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    noise = rng.uniform(-1, 1, (2, 1 << 17)).astype(np.float32)
    rows = [
        summarize("iir_chain (4 sections)", design(IIR_CHAIN), noise, args.budget),
        summarize("api_chain (15 sections)", design(API_CHAIN), noise, args.budget),
        summarize("24 bells, 40 Hz-16 kHz", bells(), noise, args.budget),
    ]
    if args.reference:
        index = json.load(open(os.path.join(args.reference, "index.json")))
        for case in index["cases"]:
            if case["kind"] not in ("iir", "rbj"):
                continue
            spec = json.load(open(os.path.join(args.reference, "cases", case["id"] + ".json")))
            inp = spec["input"]
            x = np.fromfile(os.path.join(args.reference, inp["file"]), dtype="<f4").reshape(inp["channels"], inp["samples"])
            rows.append(summarize(case["id"], np.asarray(spec["sos"]), x, args.budget))
    print(f"Budget {args.budget:g} of the input peak; u = 2^-24.\n")
    print("| cascade | sections | worst-case bound, all float32 | float32 sections within the budget | measured float32 error (of the output peak) |")
    print("|---|---|---|---|---|")
    for r in rows[:3]:
        print(f"| {r['name']} | {r['sections']} | {r['bound']:.1e} | {r['float32_sections']} | {r['measured']:.1e} |")
    ref = rows[3:]
    if ref:
        total = sum(r["sections"] for r in ref)
        whole = sum(1 for r in ref if r["bound"] <= args.budget)
        f32 = sum(r["float32_sections"] for r in ref)
        missed = sum(1 for r in ref if r["measured"] > 1e-4)
        print(f"| reference set, {len(ref)} IIR/cookbook cases | {total} | whole case within the budget: {whole} | {f32} of {total} | above 1e-4 all float32: {missed} cases |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
