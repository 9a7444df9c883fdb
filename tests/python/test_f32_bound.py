"""The float32 error bound of benchmarks/f32_bound.py (the reason docs/perf-history.md gives for
keeping every section in float64) is a bound: on seeded random designs, no input of a
few kinds (noise, a cosine at the cascade's loudest frequency (a constant when that is 0 Hz), a square wave at a low
frequency) drives the float32 cascade's error past it. Also checks its arithmetic part
against the analytic case it can be worked out for by hand."""

import importlib.util
import os

import numpy as np
import scipy.signal as ss

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("f32_bound", os.path.join(ROOT, "benchmarks", "f32_bound.py"))
f32_bound = importlib.util.module_from_spec(spec)
spec.loader.exec_module(f32_bound)


def error_of_input_peak(sos, x):
    sos = np.asarray(sos, float)
    sos = sos / sos[:, 3:4]
    ref = ss.sosfilt(sos, x.astype(float))
    y32 = ss.sosfilt(sos.astype(np.float32), x.astype(np.float32))
    return float(np.abs(y32 - ref).max() / np.abs(x).max())


def random_design(rng, fs):
    kind = rng.choice(["butter", "cheby1", "cheby2", "ellip"])
    order = int(rng.integers(1, 7))
    response = rng.choice(["lowpass", "highpass"])
    cutoff = float(np.exp(rng.uniform(np.log(20.0), np.log(0.45 * fs))))
    if kind == "butter":
        return ss.butter(order, cutoff, response, fs=fs, output="sos")
    if kind == "cheby1":
        return ss.cheby1(order, 0.5, cutoff, response, fs=fs, output="sos")
    if kind == "cheby2":
        return ss.cheby2(order, 60.0, cutoff, response, fs=fs, output="sos")
    return ss.ellip(order, 0.5, 60.0, cutoff, response, fs=fs, output="sos")


def test_no_input_exceeds_the_bound_on_random_designs():
    rng = np.random.default_rng(7)
    fs = 48000.0
    n = 1 << 15
    t = np.arange(n) / fs
    checked = 0
    for _ in range(40):
        sos = random_design(rng, fs)
        parts = f32_bound.per_section_bound(sos)
        if parts is None:
            continue
        bound = sum(c + a for c, a in parts)
        w, h = ss.sosfreqz(sos, worN=4096, fs=fs)
        loudest = float(w[np.argmax(np.abs(h))])
        inputs = [
            rng.uniform(-1, 1, n),
            np.cos(2 * np.pi * loudest * t),
            np.sign(np.sin(2 * np.pi * 31.0 * t)),
        ]
        for x in inputs:
            err = error_of_input_peak(sos, x.astype(np.float32))
            assert err <= bound, f"{sos.tolist()}: error {err:.3e} of the input peak, bound {bound:.3e}"
        checked += 1
    assert checked >= 30, f"only {checked} designs had a bound"


def test_a_pure_gain_section_has_only_its_coefficient_and_rounding_parts():
    # y = g x: the rounding of y and of the product g x (without FMA), each at most u |g x|
    # (p1 = p2 = s1 = s2 = 0 and the other products vanish), carried to
    # the output with gain 1, and the coefficient part |fl32(g) - g|.
    g = 0.1
    parts = f32_bound.per_section_bound(np.array([[g, 0.0, 0.0, 1.0, 0.0, 0.0]]))
    (coef, arith), = parts
    assert abs(coef - abs(float(np.float32(g)) - g)) <= 1e-18
    assert abs(arith - 2 * f32_bound.U * g) <= 1e-18
