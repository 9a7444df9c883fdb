"""The Python package (`pip install ./python`) against SciPy.

* Every reference case (the set named by FERROFX_REFERENCE_DIR: the generated one in CI;
  also the shared set when FERROFX_SHARED_REFERENCE names it)
  through `ferrofx.sosfilt`/`ferrofx.lfilter` on the case's own coefficients (SciPy's
  float64 semantics: equal to SciPy's result to float64 rounding) and through
  `Chain.process` on the chain file (within the reference tolerance, 1e-4 of the peak).
* 150 seeded random designs of every family at random rates, the same two ways.
* Batched equals per item (bit for bit), float64 and float32 and any axis, `Stream` over
  random block sizes equals one call (to float32 rounding), bad chains raise ValueError with the contract's message, and
  10,000 calls do not grow memory.

Skipped when the package is not installed, unless FERROFX_REQUIRE_PYTHON_PACKAGE=1 (set by
scripts/test.sh, which installs it).
"""

import gc
import json
import os
import resource
import tracemalloc

import numpy as np
import pytest
import scipy.signal as ss

if os.environ.get("FERROFX_REQUIRE_PYTHON_PACKAGE") == "1":
    import ferrofx
else:
    ferrofx = pytest.importorskip("ferrofx", reason="pip install ./python first")

from test_scipy_crosscheck import RATES, random_stage  # noqa: E402  (the same random designs)

TOL = 1e-4


def rel(y, ref):
    return float(np.max(np.abs(np.asarray(y, dtype=np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def scipy_apply(kind_coefs, x64):
    kind, coefs = kind_coefs
    if kind == "sos":
        return ss.sosfilt(coefs, x64, axis=-1)
    return ss.lfilter(coefs, [1.0], x64, axis=-1)


def reference_sets():
    """The generated set (FERROFX_REFERENCE_DIR) and, when named, the shared one
    (FERROFX_SHARED_REFERENCE): (folder, case ids) for each that exists."""
    sets = []
    for var in ("FERROFX_REFERENCE_DIR", "FERROFX_SHARED_REFERENCE"):
        d = os.environ.get(var)
        if d and os.path.exists(os.path.join(d, "index.json")):
            index = json.load(open(os.path.join(d, "index.json")))
            sets.append((d, [c["id"] for c in index["cases"]]))
    return sets


REF_SETS = reference_sets()


def given_stage(case):
    if case.get("sos") is not None:
        return {"type": "sos", "sections": case["sos"]}
    return {"type": "fir", "coefficients": case["taps"]}


@pytest.mark.skipif(not REF_SETS, reason="no reference set (FERROFX_REFERENCE_DIR)")
@pytest.mark.parametrize("ref_set", range(len(REF_SETS)) or [0])
def test_every_reference_case(ref_set):
    REF_DIR, REF_IDS = REF_SETS[ref_set]
    worst_engine = 0.0
    for cid in REF_IDS:
        case = json.load(open(os.path.join(REF_DIR, "cases", cid + ".json")))
        inp, exp = case["input"], case["expected"]
        x = np.fromfile(os.path.join(REF_DIR, inp["file"]), dtype="<f4").reshape(inp["channels"], inp["samples"])
        want = np.fromfile(os.path.join(REF_DIR, exp["file"]), dtype="<f4").reshape(exp["channels"], exp["samples"]).astype(np.float64)
        x64 = x.astype(np.float64)
        if case.get("sos") is not None:
            sos = np.asarray(case["sos"], dtype=np.float64)
            y64 = ferrofx.sosfilt(sos, x64)
            assert np.allclose(y64, ss.sosfilt(sos, x64), rtol=0, atol=1e-12 * np.max(np.abs(want))), cid
        else:
            taps = np.asarray(case["taps"], dtype=np.float64)
            y64 = ferrofx.lfilter(taps, [1.0], x64)
            assert np.allclose(y64, ss.lfilter(taps, [1.0], x64), rtol=0, atol=1e-12 * np.max(np.abs(want))), cid
        # The expected output is SciPy's float64 result rounded to float32.
        assert rel(y64, want) <= 1e-6, cid
        y = ferrofx.Chain.from_stages([given_stage(case)]).process(x, case["spec"]["fs"])
        e = rel(y, want)
        worst_engine = max(worst_engine, e)
        assert e <= TOL, f"{cid}: {e:.3e}"
    print(f"{len(REF_IDS)} reference cases; engine worst {worst_engine:.2e}")


def test_random_designs_match_scipy():
    rng = np.random.default_rng(2026)
    worst = 0.0
    for i in range(150):
        fs = float(RATES[rng.integers(len(RATES))])
        st, kind_coefs = random_stage(rng, fs)
        x = rng.standard_normal((2, 4096)).astype(np.float32)
        want = scipy_apply(kind_coefs, x.astype(np.float64))
        chain = ferrofx.Chain.from_stages([st])
        e = rel(chain.process(x, fs), want)
        worst = max(worst, e)
        assert e <= TOL, f"{i}: {st}: {e:.3e}"
        # The designed coefficients through the float64 drop-ins: SciPy's result.
        d = chain.design(fs)
        assert len(d) == 1
        if d[0]["type"] == "sos":
            y = ferrofx.sosfilt(d[0]["sos"], x.astype(np.float64))
            ref = ss.sosfilt(d[0]["sos"], x.astype(np.float64))
        else:
            y = ferrofx.lfilter(d[0]["taps"], [1.0], x.astype(np.float64))
            ref = ss.lfilter(d[0]["taps"], [1.0], x.astype(np.float64))
        assert rel(y, ref) <= 1e-12, f"{i}: {st}"
    print(f"random designs: engine worst {worst:.2e}")


def _log_uniform_cutoff(rng, response, lowest_hz, nyq, min_ratio):
    """A cutoff drawn log-uniformly from `lowest_hz` to just below Nyquist: a number, or a
    band `[low, high]` for band responses (None where its edges came closer than
    `min_ratio`)."""
    edge = lambda: float(np.exp(rng.uniform(np.log(lowest_hz), np.log(nyq * 0.999))))  # noqa: E731
    if response not in ("bandpass", "bandstop"):
        return edge()
    lo, hi = sorted([edge(), edge()])
    return [lo, hi] if hi / lo >= min_ratio else None


def test_steep_designs_at_any_cutoff_match_scipy_over_long_signals_or_are_refused():
    # The format's whole range: every IIR family and response, orders 1-24, cutoffs
    # log-uniform from 1 Hz to Nyquist, 8-384 kHz, on 20,000 samples (ill-conditioned
    # designs drift only once their slow modes build up: a 4,096-sample test passed six
    # that were 1e-4 to 0.25 of the peak off). Each design equals SciPy's float64 result
    # within the tolerance, or is refused as one float64 cannot run, which is right only
    # where SciPy's own float64 output drifts from extended precision.
    rng = np.random.default_rng(2611)
    fams = ["butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel", "linkwitz_riley"]
    refused = 0
    for i in range(250):
        fam = fams[rng.integers(len(fams))]
        fs = float(RATES[rng.integers(len(RATES))])
        nyq = fs / 2
        resp = ["lowpass", "highpass", "bandpass", "bandstop"][rng.integers(2 if fam == "linkwitz_riley" else 4)]
        order = int(rng.choice([2, 4, 6, 8, 12, 16, 20, 24])) if fam == "linkwitz_riley" else int(rng.integers(1, 25))
        cut = _log_uniform_cutoff(rng, resp, 1.0, nyq, 1.01)
        if cut is None:
            continue
        st = {"type": fam, "response": resp, "order": order, "cutoff_hz": cut}
        kw = dict(btype=resp, fs=fs, output="sos")
        if fam == "butterworth":
            sos = ss.butter(order, cut, **kw)
        elif fam == "chebyshev1":
            st["ripple_db"] = float(rng.uniform(0.01, 3))
            sos = ss.cheby1(order, st["ripple_db"], cut, **kw)
        elif fam == "chebyshev2":
            st["attenuation_db"] = float(rng.uniform(20, 120))
            sos = ss.cheby2(order, st["attenuation_db"], cut, **kw)
        elif fam == "elliptic":
            st["ripple_db"] = float(rng.uniform(0.01, 3))
            st["attenuation_db"] = float(rng.uniform(st["ripple_db"] + 20, 120))
            sos = ss.ellip(order, st["ripple_db"], st["attenuation_db"], cut, **kw)
        elif fam == "bessel":
            sos = ss.bessel(order, cut, norm="phase", **kw)
        else:
            half = ss.butter(order // 2, cut, **kw)
            sos = np.vstack([half, half])
        x = rng.standard_normal((2, 20_000)).astype(np.float32)
        try:
            y = ferrofx.Chain.from_stages([st]).process(x, fs)
        except ValueError as e:
            assert "too ill-conditioned to run in float64" in str(e), f"{i}: {st} at {fs}: {e}"
            probe = np.random.default_rng(5).standard_normal(65_536)
            y64 = ss.sosfilt(sos, probe)
            yld = ss.sosfilt(sos.astype(np.longdouble), probe.astype(np.longdouble))
            drift = float(np.abs(y64 - yld).max() / np.abs(yld).max())
            assert drift > 1e-6, f"{i}: {st} at {fs} refused, but SciPy's float64 drifts only {drift:.1e}"
            refused += 1
            continue
        want = ss.sosfilt(sos, x.astype(np.float64), axis=-1)
        assert rel(y, want) <= TOL, f"{i}: {st} at {fs}: {rel(y, want):.2e} of the peak"
    assert refused < 40, f"{refused} of 250 refused"
    print(f"steep designs over long signals: {refused} refused as float64 cannot run them")


def test_fir_and_cookbook_designs_across_their_ranges_match_scipy_over_long_signals():
    # Designed FIRs (1-65,536 taps, every window, Kaiser beta up to 700, edges from 0.5 Hz
    # to Nyquist) and cookbook biquads of every kind (Q 0.1-40, 1 Hz to Nyquist, +-24 dB)
    # through the float32 engine on 30,000 samples: SciPy's float64 result (`firwin` +
    # `lfilter`, the designed sections + `sosfilt`) within the tolerance.
    rng = np.random.default_rng(2612)
    windows = {"rectangular": "boxcar", "hann": "hann", "hamming": "hamming", "blackman": "blackman", "kaiser": None}
    for i in range(60):
        fs = float(RATES[rng.integers(len(RATES))])
        nyq = fs / 2
        resp = ["lowpass", "highpass", "bandpass", "bandstop"][rng.integers(4)]
        taps = int(np.exp(rng.uniform(0, np.log(65_536))))
        if resp in ("highpass", "bandstop") and taps % 2 == 0:
            taps = min(taps + 1, 65_535)
        cut = _log_uniform_cutoff(rng, resp, 0.5, nyq, 1.001)
        if cut is None:
            continue
        name = list(windows)[rng.integers(len(windows))]
        st = {"type": "fir", "response": resp, "taps": taps, "cutoff_hz": cut, "window": name}
        window = windows[name]
        if name == "kaiser":
            st["beta"] = float(rng.uniform(0, 700 if rng.random() < 0.2 else 20))
            window = ("kaiser", st["beta"])
        with np.errstate(all="ignore"):
            h = ss.firwin(taps, cut, window=window, pass_zero=resp, fs=fs)
        x = rng.standard_normal((2, 30_000)).astype(np.float32)
        if not np.isfinite(h).all():
            # SciPy divides by a zero passband response (a 2-tap Hann window is zero at
            # both taps): refused by name instead.
            with pytest.raises(ValueError, match="cannot be scaled"):
                ferrofx.Chain.from_stages([st]).process(x, fs)
            continue
        y = ferrofx.Chain.from_stages([st]).process(x, fs)
        want = ss.lfilter(h, [1.0], x.astype(np.float64), axis=-1)
        assert rel(y, want) <= TOL, f"{i}: {st} at {fs}: {rel(y, want):.2e}"
    kinds = ["lowpass", "highpass", "bandpass", "notch", "allpass", "peaking", "low_shelf", "high_shelf"]
    for i in range(200):
        fs = float(RATES[rng.integers(len(RATES))])
        kind = kinds[rng.integers(len(kinds))]
        st = {"type": "biquad", "kind": kind, "freq_hz": float(np.exp(rng.uniform(0.0, np.log(fs / 2 * 0.999)))),
              "q": float(np.exp(rng.uniform(np.log(0.1), np.log(40))))}
        if kind in ("peaking", "low_shelf", "high_shelf"):
            st["gain_db"] = float(rng.uniform(-24, 24))
        c = ferrofx.Chain.from_stages([st])
        x = rng.standard_normal((1, 30_000)).astype(np.float32)
        want = ss.sosfilt(np.vstack([d["sos"] for d in c.design(fs)]), x.astype(np.float64), axis=-1)
        assert rel(c.process(x, fs), want) <= TOL, f"{i}: {st} at {fs}"


def test_random_chains_and_their_streams_match_scipy_within_the_tolerance_or_float32s_floor():
    # Random chains of 1-4 stages of every type at random rates, on 1-3 channels, through
    # Chain.process and through a Stream fed random blocks, against SciPy's float64 pipeline
    # of the designed processors: within 1e-4 of the output's peak, or, where the chain's
    # output is far below its input (stopbands that cancel: some outputs here are 1e-20 of
    # the input), within float32's floor of 1e-6 of the input's peak (the float32 samples
    # between stages cannot resolve less; the errors seen are 1e-8 of the input's peak).
    rng = np.random.default_rng(2613)
    for i in range(40):
        fs = float(RATES[rng.integers(len(RATES))])
        stages = [random_stage(rng, fs)[0] for _ in range(int(rng.integers(1, 5)))]
        chain_ = ferrofx.Chain.from_stages(stages)
        channels = int(rng.integers(1, 4))
        x = rng.standard_normal((channels, int(rng.integers(1, 30_000)))).astype(np.float32)
        try:
            whole = chain_.process(x, fs)
        except ValueError as e:
            assert "too ill-conditioned" in str(e), f"{i}: {stages}: {e}"
            continue
        want = x.astype(np.float64)
        for d in chain_.design(fs):
            want = ss.sosfilt(d["sos"], want, axis=-1) if d["type"] == "sos" else ss.lfilter(d["taps"], [1.0], want, axis=-1)
        allowed = max(TOL * np.abs(want).max(), 1e-6 * np.abs(x).max())
        assert np.abs(whole - want).max() <= allowed, f"{i}: {stages} at {fs}"
        s, parts, at = chain_.stream(fs, channels), [], 0
        while at < x.shape[1]:
            n = int(rng.integers(1, 5_000))
            parts.append(s.process(x[:, at:at + n]))
            at += n
        assert np.abs(np.concatenate(parts, axis=1) - want).max() <= allowed, f"{i}: {stages} at {fs}, streamed"


def chain():
    return (ferrofx.Butterworth.highpass(30, 4) | ferrofx.Biquad.peaking(1000, 1.4, -6)
            | ferrofx.Fir.lowpass(63, 12_000) | ferrofx.Elliptic.lowpass(15_000, 6, ripple_db=0.5, attenuation_db=60))


def test_every_stage_type_of_the_format_has_a_constructor():
    # The core's one list of stage types: a type added there fails here until the
    # package constructs it (and the stage designs and runs).
    made = {
        "butterworth": ferrofx.Butterworth.highpass(80, 4),
        "chebyshev1": ferrofx.Chebyshev1.lowpass(8000, 5, ripple_db=0.5),
        "chebyshev2": ferrofx.Chebyshev2.bandpass(300, 3000, 4, attenuation_db=50),
        "elliptic": ferrofx.Elliptic.bandstop(45, 55, 3, ripple_db=0.5, attenuation_db=60),
        "bessel": ferrofx.Bessel.lowpass(5000, 6),
        "linkwitz_riley": ferrofx.LinkwitzRiley.lowpass(2000, 4),
        "biquad": ferrofx.Biquad.peaking(3000, 1.0, 3),
        "fir": ferrofx.Fir.lowpass(101, 16000),
        "sos": ferrofx.Sos([[1, 0, 0, 1, -0.5, 0]]),
        "gain": ferrofx.Gain(-1),
    }
    from ferrofx import _ferrofx
    assert sorted(made) == sorted(_ferrofx.STAGE_TYPES)
    x = np.random.default_rng(3).standard_normal((1, 4800)).astype(np.float32)
    for t, stage in made.items():
        assert stage.spec["type"] == t
        y = stage.process(x, fs=48_000)
        assert y.shape == x.shape and np.all(np.isfinite(y)), t


def test_pipe_stages_equal_the_chain_file():
    text = json.dumps({"format": "ferrofx-chain", "version": 1, "stages": [
        {"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": 30},
        {"type": "biquad", "kind": "peaking", "freq_hz": 1000, "q": 1.4, "gain_db": -6},
        {"type": "fir", "response": "lowpass", "taps": 63, "cutoff_hz": 12000, "window": "hamming"},
        {"type": "elliptic", "response": "lowpass", "order": 6, "cutoff_hz": 15000, "ripple_db": 0.5, "attenuation_db": 60},
    ]})
    a, b = chain(), ferrofx.Chain.from_json(text)
    assert json.loads(a.to_json()) == json.loads(b.to_json())
    x = np.random.default_rng(1).standard_normal((2, 3000)).astype(np.float32)
    assert np.array_equal(a.process(x, 48_000), b.process(x, 48_000))
    # The response is the product of the designed stages' responses.
    f = np.array([50.0, 1000.0, 10_000.0])
    h = np.ones(3, dtype=complex)
    for d in a.design(48_000):
        if d["type"] == "sos":
            h *= ss.sosfreqz(d["sos"], worN=f, fs=48_000)[1]
        else:
            h *= ss.freqz(d["taps"], [1.0], worN=f, fs=48_000)[1]
    assert np.allclose(a.response(f, 48_000), h, rtol=1e-9, atol=1e-12)


def test_batches_of_cascades_run_items_side_by_side_each_as_if_alone():
    # Mono and 3-channel items of a cascade-only chain go through the engine in groups that
    # fill SIMD lanes; long items also in time segments. Each item's output is the same
    # bits as the item filtered alone, and within the tolerance of SciPy's float64.
    c = ferrofx.Butterworth.highpass(200, 4) | ferrofx.Biquad.peaking(3000, 1.0, 4.0) | ferrofx.Chebyshev1.lowpass(9000, 5, ripple_db=0.5)
    rng = np.random.default_rng(11)
    for items, channels, frames in ((11, 1, 3000), (9, 1, 150_000), (5, 3, 90_000)):
        batch = rng.uniform(-1, 1, (items, channels, frames)).astype(np.float32)
        together = c.process(batch, 48_000, threads=2)
        want = batch.astype(np.float64)
        for d in c.design(48_000):
            want = ss.sosfilt(d["sos"], want, axis=-1)
        for i in range(items):
            assert np.array_equal(together[i], c.process(batch[i], 48_000)), f"{items}x{channels}x{frames}: item {i}"
            assert rel(together[i], want[i]) <= 1e-6, f"{items}x{channels}x{frames}: item {i} against SciPy"


def test_batches_dtypes_and_axes():
    c = chain()
    rng = np.random.default_rng(3)
    batch = rng.standard_normal((5, 2, 7000)).astype(np.float32)
    together = c.process(batch, 48_000, threads=3)
    assert together.shape == batch.shape and together.dtype == np.float32
    for i in range(5):
        assert np.array_equal(together[i], c.process(batch[i], 48_000)), f"item {i}"
    # float64 data is filtered in float64: SciPy's pipeline over the designed processors.
    x64 = batch[:2].astype(np.float64)
    y64 = c.process(x64, 48_000)
    want = x64
    for d in c.design(48_000):
        want = ss.sosfilt(d["sos"], want, axis=-1) if d["type"] == "sos" else ss.lfilter(d["taps"], [1.0], want, axis=-1)
    assert y64.dtype == np.float64 and y64.shape == x64.shape and rel(y64, want) <= 1e-12
    assert rel(y64, together[:2].astype(np.float64)) <= TOL  # and the engine agrees
    # sosfilt along another axis equals SciPy's.
    sos = ss.butter(6, 1000, fs=48_000, output="sos")
    x = rng.standard_normal((3, 500, 2))
    for axis in (0, 1, 2, -1):
        assert np.allclose(ferrofx.sosfilt(sos, x, axis=axis), ss.sosfilt(sos, x, axis=axis), rtol=0, atol=1e-12)


def test_stream_over_random_blocks_equals_one_call():
    c = chain()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 50_000)).astype(np.float32)
    whole = c.process(x, 48_000)
    s = c.stream(48_000, 2)
    for _ in range(2):
        out, pos = [], 0
        while pos < x.shape[1]:
            n = int(rng.integers(1, 9000))
            out.append(s.process(x[:, pos:pos + n]))
            pos += n
        # Equal to float32 rounding: the engine may pick another FIR path (direct or
        # FFT-partitioned) for another largest block.
        assert rel(np.concatenate(out, axis=1), whole) <= 1e-6
        s.reset()


def test_one_channel_and_batch_shapes_equal_the_channel_rows():
    # (samples,) is one channel, for Chain.process (float32 and float64) and a one-channel
    # Stream; a Stream's blocks may come as (batch, channels, samples) whose rows, in
    # order, are its channels: each equal to the same rows given as (channels, samples).
    c = chain()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 9_000)).astype(np.float32)
    for dtype in (np.float32, np.float64):
        mono = x[0, 0].astype(dtype)
        y = c.process(mono, 48_000)
        assert y.shape == mono.shape and y.dtype == dtype
        assert np.array_equal(y, c.process(mono[None], 48_000)[0])
    one, rows = c.stream(48_000, 1), c.stream(48_000, 1)
    batched, flat = c.stream(48_000, 6), c.stream(48_000, 6)
    for pos, n in [(0, 1), (1, 4_000), (4_001, 4_999)]:
        block = x[..., pos:pos + n]
        got = one.process(block[0, 0])
        assert got.shape == (n,) and np.array_equal(got, rows.process(block[0, :1])[0])
        got = batched.process(block)
        assert got.shape == block.shape and np.array_equal(got, flat.process(block.reshape(6, n)).reshape(block.shape))


def test_empty_arrays_give_empty_results():
    # No items, channels or samples: an empty array of the input's shape and dtype (the
    # device path's answer too), after the chain's own checks; SciPy's functions over an
    # empty frames axis likewise (SciPy's own sosfilt fails reshaping such arrays; where
    # SciPy gives a result, it is this).
    c = chain()
    for shape in [(0,), (0, 100), (2, 0), (0, 2, 100), (3, 0, 100), (3, 2, 0)]:
        for dtype in (np.float32, np.float64):
            y = c.process(np.zeros(shape, dtype), 48_000)
            assert y.shape == shape and y.dtype == dtype, (shape, dtype)
    with pytest.raises(ValueError, match="above Nyquist"):
        ferrofx.Butterworth.lowpass(30_000, 4).process(np.zeros((0, 10), np.float32), 48_000)
    sos = ss.butter(4, 0.2, output="sos")
    b, a = ss.butter(3, 0.3)
    for shape in [(0,), (2, 0), (0, 0), (3, 0, 5)]:
        x = np.zeros(shape)
        assert ferrofx.sosfilt(sos, x).shape == shape
        y, zf = ferrofx.sosfilt(sos, x, zi=np.zeros((sos.shape[0],) + shape[:-1] + (2,)))
        assert y.shape == shape and zf.shape == (sos.shape[0],) + shape[:-1] + (2,)
        assert ferrofx.lfilter(b, a, x).shape == shape
        assert ferrofx.lfilter(np.ones(31) / 31, [1.0], x).shape == shape
    assert np.array_equal(ferrofx.filtfilt(b, a, np.zeros(0), method="gust"), ss.filtfilt(b, a, np.zeros(0), method="gust"))
    assert ferrofx.filtfilt(b, a, np.zeros((2, 0)), method="gust").shape == (2, 0)


def test_bad_input_raises_with_the_contracts_message():
    with pytest.raises(ValueError, match=r"stage 0 \(butterworth\): cutoff_hz 30000 is above Nyquist"):
        ferrofx.Butterworth.lowpass(30_000, 4).process(np.zeros((1, 10), np.float32), 48_000)
    with pytest.raises(ValueError, match="order"):
        ferrofx.Chain.from_stages([{"type": "butterworth", "response": "lowpass", "cutoff_hz": 100}])
    with pytest.raises(ValueError, match=r"a\[0\] == 0 not supported"):
        ferrofx.lfilter([1.0], [0.0, 1.0], np.zeros(10))
    with pytest.raises(ValueError, match=r"\(n_sections, 6\)"):
        ferrofx.sosfilt(np.ones((2, 5)), np.zeros(10))
    with pytest.raises(ValueError, match="shaped"):
        chain().process(np.zeros((1, 1, 1, 10), np.float32), 48_000)
    for bad in [(3, 10), (10,), (2, 2, 10), (1, 1, 2, 10)]:
        with pytest.raises(ValueError, match=r"2-channel stream is shaped \(channels, samples\)"):
            chain().stream(48_000, 2).process(np.zeros(bad, np.float32))


def test_no_memory_growth_over_10000_calls():
    c = chain()
    x = np.random.default_rng(5).standard_normal((2, 256)).astype(np.float32)
    sos = ss.butter(4, 100, fs=48_000, output="sos")
    for _ in range(500):  # warm-up: allocator pools, caches
        c.process(x, 48_000)
        ferrofx.sosfilt(sos, x)
    gc.collect()
    tracemalloc.start()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    snap0 = tracemalloc.take_snapshot()
    for _ in range(10_000):
        c.process(x, 48_000)
        ferrofx.sosfilt(sos, x)
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap0, "filename"))
    tracemalloc.stop()
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    print(f"10,000 calls: Python heap {grown} bytes, peak RSS +{rss_kb} kB")
    assert grown < 100_000, grown
    assert rss_kb < 20_000, rss_kb


def test_torch_tensors_come_back_as_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed (PyPI's wheel brings ~2 GB of CUDA libraries; CI does without)")
    c = chain()
    x = np.random.default_rng(6).standard_normal((2, 2, 3000)).astype(np.float32)
    y = c.process(torch.from_numpy(x), 48_000)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    assert np.array_equal(y.numpy(), c.process(x, 48_000))
    sos = ss.butter(4, 200, fs=48_000, output="sos")
    assert np.array_equal(ferrofx.sosfilt(sos, torch.from_numpy(x[0].astype(np.float64))).numpy(), ferrofx.sosfilt(sos, x[0].astype(np.float64)))
    # SciPy's result type, as for NumPy arrays and device arrays: float32 data through
    # float64 sections gives float64; zi/zf alike.
    y, zf = ferrofx.sosfilt(sos, torch.from_numpy(x[0]), zi=torch.zeros((sos.shape[0], 2, 2), dtype=torch.float32))
    want, want_zf = ss.sosfilt(sos, x[0], zi=np.zeros((sos.shape[0], 2, 2), np.float32))
    assert y.dtype == torch.float64 and zf.dtype == torch.float64 and want.dtype == np.float64
    assert np.array_equal(y.numpy(), want) and np.array_equal(zf.numpy(), want_zf)
    y = ferrofx.lfilter(np.array([0.5, 0.5], np.float32), np.array([1.0], np.float32), torch.from_numpy(x[0]))
    assert y.dtype == torch.float32 and np.array_equal(y.numpy(), ss.lfilter(np.array([0.5, 0.5], np.float32), np.array([1.0], np.float32), x[0]))


def test_lfilter_direct_and_fft_paths_equal_scipy():
    rng = np.random.default_rng(8)
    for taps_n, frames in [(1, 100), (3, 2), (127, 1000), (128, 5), (129, 3000), (700, 200), (5000, 40_000)]:
        b = rng.standard_normal(taps_n) * np.exp(-np.arange(taps_n) / max(taps_n / 4, 1))
        x = rng.standard_normal((3, frames))
        want = ss.lfilter(b, [1.0], x, axis=-1)
        got = ferrofx.lfilter(b, [2.0], x) * 2.0  # a0 divides b
        assert rel(got, want) <= 1e-12, f"{taps_n} taps, {frames} frames: {rel(got, want):.2e}"


def test_matched_cuts_follow_the_analog_butterworth_and_linkwitz_riley():
    fs = 44_100.0
    f = np.geomspace(20.0, 0.45 * fs, 600)
    for order in (1, 2, 3, 4, 6, 8, 12, 16):
        for fc in (40.0, 3000.0, 12_000.0, 19_000.0):
            stage = ferrofx.Butterworth.lowpass(fc, order, matched=True)
            assert json.loads(stage.to_json())["version"] == 2
            want = 1 / np.sqrt(1 + (f / fc) ** (2 * order))
            got = np.abs(stage.chain().response(f, fs))
            keep = want > 1e-3
            err = np.max(np.abs(20 * np.log10(got[keep] / want[keep])))
            assert err < 0.1, f"Butterworth order {order} at {fc} Hz: {err:.3f} dB"
            # The bilinear design cramps toward Nyquist where the cutoff is high.
            if fc == 19_000.0:
                plain = np.abs(ferrofx.Butterworth.lowpass(fc, order).chain().response(f, fs))
                assert np.max(np.abs(20 * np.log10(plain[keep] / want[keep]))) > 1.0
            if order % 2 == 0:
                hp = ferrofx.LinkwitzRiley.highpass(fc, order, matched=True)
                want = 1 / (1 + (fc / f) ** order)
                got = np.abs(hp.chain().response(f, fs))
                keep = want > 1e-3
                err = np.max(np.abs(20 * np.log10(got[keep] / want[keep])))
                assert err < 0.1, f"Linkwitz-Riley order {order} at {fc} Hz: {err:.3f} dB"
    # matched=False is the plain design, written as version 1.
    assert json.loads(ferrofx.Butterworth.highpass(80.0, 4, matched=False).to_json())["version"] == 1
    with pytest.raises(ValueError, match="matched"):
        ferrofx.Chain.from_json(json.dumps({
            "format": "ferrofx-chain", "version": 2,
            "stages": [{"type": "butterworth", "response": "bandpass", "order": 2, "cutoff_hz": [100, 200], "matched": True}],
        })).design(fs)


def test_matched_biquads_follow_the_analog_prototype_and_process_like_scipy():
    fs = 48_000.0
    stage = ferrofx.Biquad.peaking(15_000.0, 1.0, 12.0, matched=True)
    assert json.loads(stage.to_json())["version"] == 2
    chain = stage | ferrofx.Biquad.high_shelf(9000.0, 0.7, -4.0, matched=True)
    f = np.geomspace(20.0, 0.45 * fs, 400)
    s = 1j * f
    a1, a2 = 10 ** (12 / 40), 10 ** (-4 / 40)
    w1, w2 = s / 15_000.0, s / 9000.0
    bell = (w1**2 + w1 * a1 / 1.0 + 1) / (w1**2 + w1 / (a1 * 1.0) + 1)
    shelf = a2 * (a2 * w2**2 + np.sqrt(a2) / 0.7 * w2 + 1) / (w2**2 + np.sqrt(a2) / 0.7 * w2 + a2)
    err = np.max(np.abs(20 * np.log10(np.abs(chain.response(f, fs)) / np.abs(bell * shelf))))
    print(f"matched bell and shelf vs the analog prototypes up to 0.9 Nyquist: {err:.3f} dB")
    assert err < 0.1
    # Processing equals SciPy's sosfilt of the designed sections.
    sos = np.concatenate([np.asarray(d["sos"]) for d in chain.design(fs)])
    x = np.random.default_rng(2).standard_normal((1, 20_000))
    y = chain.process(x, fs)
    assert np.max(np.abs(y - ss.sosfilt(sos, x, axis=-1))) < 1e-9 * np.max(np.abs(y))
