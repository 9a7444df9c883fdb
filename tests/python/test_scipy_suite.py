"""SciPy's filtering functions as FerroFX gives them (`ferrofx.signal`), held to SciPy.

1. SciPy's own test classes for these functions (`scipy/signal/tests/test_signaltools.py`:
   TestSOSFilt, TestSOSFiltFilt, TestFiltFilt, TestLinearFilter* for float32, float64,
   long double and complex data, TestLFilterZI), run by pytest with FerroFX's functions
   in their place (scipy_suite_plugin.py). The count is printed; none is excluded. The
   two tests SciPy itself skips there ("gust only implemented for TF systems") stay
   skipped.
2. Seeded random cases against SciPy itself: outputs, final states and dtypes, every
   axis, with and without initial conditions, Gustafsson's method, padding kinds; and
   every malformed input raises SciPy's kind of error.
"""

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.signal as ss

if os.environ.get("FERROFX_REQUIRE_PYTHON_PACKAGE") == "1":
    import ferrofx
else:
    ferrofx = pytest.importorskip("ferrofx", reason="pip install ./python first")

HERE = pathlib.Path(__file__).resolve().parent
CLASSES = ["TestSOSFilt", "TestSOSFiltFilt", "TestFiltFilt", "TestLinearFilter", "TestLFilterZI"]


def test_scipys_own_test_classes_pass_with_ferrofx_functions_in_place():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "scipy_suite_plugin", "-p", "no:cacheprovider",
           "--pyargs", "scipy.signal.tests.test_signaltools", "-k", " or ".join(CLASSES)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    tail = "\n".join(r.stdout.strip().splitlines()[-8:])
    print(f"SciPy {ss.__name__} suite with ferrofx.signal in place:\n{tail}")
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|error)", r.stdout)}
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0, r.stdout[-4000:]
    assert counts.get("passed", 0) >= 280, f"fewer of SciPy's tests ran than expected: {counts}"
    skips = re.findall(r"SKIPPED \[\d+\] .*: (.*)", r.stdout)
    assert all(s == "gust only implemented for TF systems" for s in skips), skips
    assert r.returncode == 0


def rng_cases(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(1, 5)) for _ in range(ndim - 1))
        axis = int(rng.integers(-ndim, ndim))
        n = int(rng.integers(30, 400))
        full = list(shape)
        full.insert(axis % ndim, n)
        x = rng.standard_normal(full)
        order = int(rng.integers(1, 9))
        kind = rng.choice(["lowpass", "highpass", "bandpass"])
        wn = sorted(rng.uniform(0.05, 0.9, size=2)) if kind == "bandpass" else float(rng.uniform(0.05, 0.9))
        sos = ss.butter(order, wn, btype=kind, output="sos")
        b, a = ss.butter(min(order, 4), wn, btype=kind)
        yield rng, x, axis, sos, b, a


@pytest.mark.parametrize("seed", [1, 2])
def test_random_cases_equal_scipy(seed):
    worst = 0.0
    for rng, x, axis, sos, b, a in rng_cases(seed):
        peak = np.max(np.abs(x)) or 1.0
        # sosfilt, zero state and given state: SciPy's arithmetic, so the same bits.
        np.testing.assert_array_equal(ferrofx.signal.sosfilt(sos, x, axis=axis), ss.sosfilt(sos, x, axis=axis))
        zi_shape = list(x.shape)
        zi_shape[axis] = 2
        zi = rng.standard_normal([sos.shape[0]] + zi_shape)
        got, zf = ferrofx.signal.sosfilt(sos, x, axis=axis, zi=zi)
        want, wzf = ss.sosfilt(sos, x, axis=axis, zi=zi)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(zf, wzf)
        # lfilter with feedback, zero and given state.
        np.testing.assert_array_equal(ferrofx.signal.lfilter(b, a, x, axis=axis), ss.lfilter(b, a, x, axis=axis))
        k = max(len(a), len(b)) - 1
        zshape = list(x.shape)
        zshape[axis] = k
        zl = rng.standard_normal(zshape)
        got, zf = ferrofx.signal.lfilter(b, a, x, axis=axis, zi=zl)
        want, wzf = ss.lfilter(b, a, x, axis=axis, zi=zl)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(zf, wzf)
        # Zero phase: every padding kind, and Gustafsson's method.
        for padtype in ["odd", "even", "constant", None]:
            for f, g, args in [(ferrofx.signal.sosfiltfilt, ss.sosfiltfilt, (sos,)), (ferrofx.signal.filtfilt, ss.filtfilt, (b, a))]:
                if x.shape[axis] <= 3 * (2 * sos.shape[0] + 1):
                    continue
                d = np.max(np.abs(f(*args, x, axis=axis, padtype=padtype) - g(*args, x, axis=axis, padtype=padtype))) / peak
                worst = max(worst, d)
                assert d <= 1e-10, (padtype, f.__name__, d)
        d = np.max(np.abs(ferrofx.signal.filtfilt(b, a, x, axis=axis, method="gust") - ss.filtfilt(b, a, x, axis=axis, method="gust"))) / peak
        worst = max(worst, d)
        assert d <= 1e-10, ("gust", d)
        irlen = int(rng.integers(5, 40))
        d = np.max(np.abs(ferrofx.signal.filtfilt(b, a, x, axis=axis, method="gust", irlen=irlen) - ss.filtfilt(b, a, x, axis=axis, method="gust", irlen=irlen))) / peak
        assert d <= 1e-10, ("gust irlen", d)
        np.testing.assert_allclose(ferrofx.signal.sosfilt_zi(sos), ss.sosfilt_zi(sos), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ferrofx.signal.lfilter_zi(b, a), ss.lfilter_zi(b, a), rtol=1e-10, atol=1e-12)
    print(f"seed {seed}: zero-phase filters within {worst:.1e} of SciPy's peak")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.complex64, np.complex128, np.longdouble])
def test_result_dtypes_follow_scipy(dtype):
    x = (np.arange(40) % 7 - 3).astype(dtype)
    sos = ss.butter(4, 0.2, output="sos")
    b, a = ss.butter(2, 0.3)
    for f, g, args in [(ferrofx.signal.sosfilt, ss.sosfilt, (sos,)), (ferrofx.signal.lfilter, ss.lfilter, (b, a)),
                       (ferrofx.signal.lfilter, ss.lfilter, (b.astype(np.float32), a.astype(np.float32)))]:
        got, want = f(*args, x), g(*args, x)
        assert got.dtype == want.dtype, (f.__name__, dtype, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5 if np.finfo(want.dtype).eps > 1e-10 else 1e-12, atol=1e-6)


BAD = [
    ("sosfilt", ([[1, 0, 0, 2, 0, 0]], [1.0, 2.0]), {}),
    ("sosfilt", ([[1, 0, 0, 1, 0]], [1.0, 2.0]), {}),
    ("sosfilt", ([[1.0, 0, 0, 1, 0, 0]], 5.0), {}),
    ("sosfilt", ([[1, 0, 0, 1, 0, 0]], np.arange(3)), {}),
    ("sosfilt", ([[1.0, 0, 0, 1, 0, 0]], np.ones((3, 4))), {"zi": np.zeros((1, 3, 3))}),
    ("lfilter", ([[1.0]], [1.0], [1.0, 2.0]), {}),
    ("lfilter", ([1.0], [], [1.0, 2.0]), {}),
    ("lfilter", ([1.0], [1.0], 5.0), {}),
    ("lfilter", ([1, 2], [1, 3], np.arange(4)), {}),
    ("lfilter", ([1.0], [0.0, 1.0], np.ones(4)), {}),
    ("lfilter", ([1.0, 1.0], [1.0], np.arange(6.0)), {"zi": [0.0, 1.0]}),
    ("lfilter", ([1.0, 1.0], [1.0], np.ones((4, 3))), {"axis": 0, "zi": [[0.0, 1.0]]}),
    ("filtfilt", ([1.0, 1.0], [1.0], np.arange(10.0)), {"padtype": "bad"}),
    ("filtfilt", ([1.0, 1.0], [1.0], np.arange(10.0)), {"method": "bad"}),
    ("filtfilt", ([1.0, 1.0], [1.0], np.arange(5.0)), {}),
    ("sosfiltfilt", ([[1.0, 0, 0, 1, 0, 0]], np.arange(3.0)), {}),
    ("lfilter_zi", ([1.0], [0.0]), {}),
    ("lfilter_zi", ([[1.0]], [1.0]), {}),
    ("sosfilt_zi", ([1.0, 0, 0, 1, 0, 0],), {}),
]


@pytest.mark.parametrize("name,args,kwargs", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_malformed_input_raises_scipys_kind_of_error(name, args, kwargs):
    with pytest.raises(Exception) as want:
        getattr(ss, name)(*args, **kwargs)
    with pytest.raises(Exception) as got:
        getattr(ferrofx.signal, name)(*args, **kwargs)
    assert type(got.value) is type(want.value), f"{name}: {type(got.value).__name__}({got.value}) where SciPy raises {type(want.value).__name__}({want.value})"


def test_hard_designs_and_many_rows_are_scipys_bits():
    """Designs that stress float64 (high orders, cutoffs far below Nyquist, narrow bands:
    there two correct float64 orders of operation differ by up to 1e-6 of the peak) on
    many rows, through every row grouping and section chunking of the kernels: SciPy's
    bits, and the zero-phase functions within 1e-10 of SciPy's peak."""
    rng = np.random.default_rng(5)
    designs = [
        ss.ellip(16, 0.5, 90, 0.004, output="sos"),
        ss.cheby1(12, 1, [0.01, 0.012], btype="bandpass", output="sos"),
        ss.butter(24, 0.002, output="sos"),
        ss.bessel(8, [0.0003, 0.03], btype="bandstop", output="sos"),
        ss.cheby2(10, 80, 0.98, btype="highpass", output="sos"),
    ]
    for sos in designs:
        for rows in [1, 2, 3, 5, 8, 9, 17, 33]:
            x = rng.standard_normal((rows, 6_000))
            zi = rng.standard_normal((sos.shape[0], rows, 2))
            np.testing.assert_array_equal(ferrofx.signal.sosfilt(sos, x), ss.sosfilt(sos, x))
            for got, want in zip(ferrofx.signal.sosfilt(sos, x, zi=zi), ss.sosfilt(sos, x, zi=zi)):
                np.testing.assert_array_equal(got, want)
            want = ss.sosfiltfilt(sos, x)
            assert np.max(np.abs(ferrofx.signal.sosfiltfilt(sos, x) - want)) <= 1e-10 * np.max(np.abs(want))
    for order in [1, 2, 4, 6, 8, 10, 13]:
        b, a = ss.butter(order, 0.05 + 0.05 * order)
        for rows in [1, 3, 4, 7, 8, 16, 33]:
            x = rng.standard_normal((rows, 3_000))
            zi = rng.standard_normal((rows, order))
            np.testing.assert_array_equal(ferrofx.signal.lfilter(b, a, x), ss.lfilter(b, a, x))
            for got, want in zip(ferrofx.signal.lfilter(b, a, x, zi=zi), ss.lfilter(b, a, x, zi=zi)):
                np.testing.assert_array_equal(got, want)


def test_non_finite_values_propagate_as_in_scipy():
    sos = ss.butter(4, 0.1, output="sos")
    b, a = ss.butter(3, 0.2)
    x = np.random.default_rng(3).standard_normal((6, 500))
    x[1, 100] = np.nan
    x[4, 300] = np.inf
    zi = np.zeros((sos.shape[0], 6, 2))
    for got, want in [(ferrofx.signal.sosfilt(sos, x, zi=zi), ss.sosfilt(sos, x, zi=zi)),
                      (ferrofx.signal.lfilter(b, a, x, zi=np.zeros((6, 3))), ss.lfilter(b, a, x, zi=np.zeros((6, 3))))]:
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
