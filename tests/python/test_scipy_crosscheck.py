"""FerroFX against SciPy on many random designs and chains (beyond the 77 shared cases).

* ~2,000 random single-stage designs of every family, response, order 1..24, sample
  rates 8 kHz..384 kHz and cutoffs from 1e-4*fs to 0.45*fs: the complex response of
  what `cargo xtask design` returns equals SciPy's (the reference tolerance, 1e-3
  relative to max(|H|, 1e-3 max|H|), applied to the complex value, so phase counts).
* 30 random multi-stage chains rendered by `cargo xtask render` at random block sizes:
  equal to SciPy's float64 sosfilt/lfilter pipeline within 1e-4 of the output peak.

The xtask binary comes from $FERROFX_XTASK (the test script builds it), else `cargo run`.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import scipy.signal as ss

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from scipy_reference import rbj  # noqa: E402  (the cookbook formulas, one copy)
RATES = [8000, 22050, 44100, 48000, 96000, 192000, 384000]


def xtask(args, stdin=None):
    exe = os.environ.get("FERROFX_XTASK")
    cmd = [exe] + args if exe else ["cargo", "run", "-q", "-p", "xtask", "--"] + args
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=ROOT)


def random_stage(rng, fs, allow_fir=True):
    """A random valid stage and its SciPy equivalent: ('sos', rows) or ('fir', taps)."""
    nyq = fs / 2
    kinds = ["butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel", "linkwitz_riley", "biquad"]
    if allow_fir:
        kinds.append("fir")
    t = kinds[rng.integers(len(kinds))]
    lo_f = max(1e-4 * fs, 1.0)

    def freq(lo=lo_f, hi=0.45 * fs):
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))

    if t in ("butterworth", "chebyshev1", "chebyshev2", "elliptic", "bessel"):
        resp = ["lowpass", "highpass", "bandpass", "bandstop"][rng.integers(4)]
        order = int(rng.integers(1, 13)) if rng.uniform() < 0.85 else int(rng.integers(13, 25))
        if resp in ("bandpass", "bandstop"):
            order = min(order, 12)
            f1 = freq(hi=0.3 * fs)
            f2 = freq(lo=f1 * 1.2, hi=0.45 * fs) if f1 * 1.2 < 0.45 * fs else 0.45 * fs
            cut = [round(f1, 3), round(f2, 3)]
        else:
            cut = round(freq(), 3)
        st = {"type": t, "response": resp, "order": order, "cutoff_hz": cut}
        if t == "butterworth":
            sos = ss.butter(order, cut, resp, fs=fs, output="sos")
        elif t == "chebyshev1":
            st["ripple_db"] = rp = round(float(rng.uniform(0.05, 3)), 3)
            sos = ss.cheby1(order, rp, cut, resp, fs=fs, output="sos")
        elif t == "chebyshev2":
            st["attenuation_db"] = rs = round(float(rng.uniform(20, 100)), 2)
            sos = ss.cheby2(order, rs, cut, resp, fs=fs, output="sos")
        elif t == "elliptic":
            st["ripple_db"] = rp = round(float(rng.uniform(0.05, 3)), 3)
            st["attenuation_db"] = rs = round(float(rng.uniform(30, 100)), 2)
            sos = ss.ellip(order, rp, rs, cut, resp, fs=fs, output="sos")
        else:
            sos = ss.bessel(order, cut, resp, fs=fs, norm="phase", output="sos")
        return st, ("sos", sos)
    if t == "linkwitz_riley":
        resp = ["lowpass", "highpass"][rng.integers(2)]
        order = int(rng.integers(1, 13)) * 2
        cut = round(freq(), 3)
        half = ss.butter(order // 2, cut, resp, fs=fs, output="sos")
        return {"type": t, "response": resp, "order": order, "cutoff_hz": cut}, ("sos", np.vstack([half, half]))
    if t == "biquad":
        kind = ["lowpass", "highpass", "bandpass", "bandpass_skirt", "notch", "allpass", "peaking", "low_shelf", "high_shelf"][rng.integers(9)]
        f0 = round(freq(), 3)
        q = round(float(np.exp(rng.uniform(np.log(0.1), np.log(20)))), 4)
        st = {"type": t, "kind": kind, "freq_hz": f0, "q": q}
        g = 0.0
        if kind in ("peaking", "low_shelf", "high_shelf"):
            st["gain_db"] = g = round(float(rng.uniform(-24, 24)), 2)
        return st, ("sos", rbj(kind, f0, q, g, fs))
    resp = ["lowpass", "highpass", "bandpass", "bandstop"][rng.integers(4)]
    taps = int(rng.integers(1, 400)) * 2 + 1
    window = ["rectangular", "hann", "hamming", "blackman", "kaiser"][rng.integers(5)]
    if resp in ("bandpass", "bandstop"):
        f1 = freq(lo=max(lo_f, fs / taps), hi=0.3 * fs)
        cut = [round(f1, 3), round(min(f1 * float(rng.uniform(1.3, 4)), 0.45 * fs), 3)]
    else:
        cut = round(freq(lo=max(lo_f, fs / taps)), 3)
    st = {"type": "fir", "response": resp, "taps": taps, "cutoff_hz": cut, "window": window}
    w = "boxcar" if window == "rectangular" else window
    if window == "kaiser":
        st["beta"] = beta = round(float(rng.uniform(0, 14)), 3)
        w = ("kaiser", beta)
    return st, ("fir", ss.firwin(taps, cut, window=w, pass_zero=resp, fs=fs))


def chain_of(stages):
    return {"format": "ferrofx-chain", "version": 1, "stages": stages}


def response(kind, coefs, freqs, fs):
    if kind == "sos":
        return ss.sosfreqz(coefs, worN=freqs, fs=fs)[1]
    return ss.freqz(coefs, [1.0], worN=freqs, fs=fs)[1]


def test_random_designs_match_scipy():
    rng = np.random.default_rng(20261122)
    requests, refs = [], []
    for _ in range(2000):
        fs = RATES[rng.integers(len(RATES))]
        st, ref = random_stage(rng, fs)
        requests.append(json.dumps({"fs": fs, "chain": chain_of([st])}))
        refs.append((fs, st, ref))
    out = xtask(["design", "--batch"], stdin="\n".join(requests))
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == len(refs)
    failures, worst = [], {}
    refused = 0
    for (fs, st, (kind, coefs)), ans in zip(refs, answers):
        if "too ill-conditioned to run in float64" in ans.get("error", ""):
            # A refusal is right only where float64 cannot run the design: SciPy's own
            # sosfilt then drifts from the same sections in extended precision (on a
            # signal as long as the designer's probe: slow designs drift late).
            x = np.random.default_rng(5).standard_normal(65536)
            y = ss.sosfilt(coefs, x)
            y_ld = ss.sosfilt(np.asarray(coefs, np.longdouble), x.astype(np.longdouble))
            drift = float(np.abs(y - y_ld).max() / np.abs(y_ld).max())
            if not drift > 1e-6:
                failures.append(f"{st} fs={fs}: refused as ill-conditioned, but SciPy's float64 drifts only {drift:.1e}")
            refused += 1
            continue
        assert "error" not in ans, f"{st} at fs={fs}: {ans.get('error')}"
        freqs = np.geomspace(max(2.0, fs * 1e-5), 0.499 * fs, 128)
        h_ref = response(kind, coefs, freqs, fs)
        h = np.ones_like(h_ref)
        for stage in ans["stages"]:
            (k, c), = stage.items()
            h = h * response(k, np.array(c), freqs, fs)
        peak = np.abs(h_ref).max()
        err = float(np.max(np.abs(h - h_ref) / np.maximum(np.abs(h_ref), 1e-3 * peak)))
        key = st["type"]
        worst[key] = max(worst.get(key, 0.0), err)
        if not err <= 1e-3:
            failures.append(f"{st} fs={fs}: complex response error {err:.2e}")
    print("worst complex-response error per type:", {k: f"{v:.1e}" for k, v in sorted(worst.items())},
          f"; {refused} refused as ill-conditioned in float64")
    assert refused * 50 <= len(refs), f"{refused} of {len(refs)} designs refused"
    assert not failures, f"{len(failures)} of {len(refs)} designs differ from SciPy:\n" + "\n".join(failures[:30])


def write_wav_f32(path, x, fs):
    """float32 WAV by hand (the stdlib wave module writes integer PCM only)."""
    data = np.ascontiguousarray(x.T, dtype="<f4").tobytes()
    ch = x.shape[0]
    hdr = b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    hdr += (3).to_bytes(2, "little") + ch.to_bytes(2, "little") + fs.to_bytes(4, "little")
    hdr += (fs * 4 * ch).to_bytes(4, "little") + (4 * ch).to_bytes(2, "little") + (32).to_bytes(2, "little")
    hdr += b"data" + len(data).to_bytes(4, "little")
    with open(path, "wb") as f:
        f.write(hdr + data)


def read_wav_f32(path):
    raw = open(path, "rb").read()
    ch = int.from_bytes(raw[22:24], "little")
    idx = raw.index(b"data")
    n = int.from_bytes(raw[idx + 4 : idx + 8], "little")
    return np.frombuffer(raw[idx + 8 : idx + 8 + n], dtype="<f4").reshape(-1, ch).T


@pytest.mark.parametrize("seed", range(30))
def test_random_chains_render_like_scipy(seed):
    rng = np.random.default_rng(1000 + seed)
    fs = [44100, 48000, 96000][rng.integers(3)]
    channels = int(rng.integers(1, 4))
    x = rng.standard_normal((channels, 6000)).astype(np.float32)
    x /= np.abs(x).max()
    # Draw until the chain passes something: a chain whose output is rounding noise
    # (disjoint passbands, 1e-15 of the input) has no meaningful relative error.
    while True:
        stages = []
        for _ in range(int(rng.integers(1, 5))):
            st, _ = random_stage(rng, fs)
            if "order" in st and st["type"] != "linkwitz_riley":
                st["order"] = min(st["order"], 10)
            stages.append(st)
        y_ref = x.astype(np.float64)
        for kind, coefs in (scipy_side(st, fs) for st in stages):
            y_ref = ss.sosfilt(coefs, y_ref, axis=1) if kind == "sos" else ss.lfilter(coefs, [1.0], y_ref, axis=1)
        if np.abs(y_ref).max(axis=1).min() > 1e-3:
            break
    with tempfile.TemporaryDirectory() as d:
        chain_path, in_path, out_path = (os.path.join(d, n) for n in ("c.json", "in.wav", "out.wav"))
        with open(chain_path, "w") as f:
            json.dump(chain_of(stages), f)
        write_wav_f32(in_path, x, fs)
        block = int(rng.choice([1, 7, 64, 333, 4096]))
        out = xtask(["render", "--chain", chain_path, "--block-size", str(block), "--output", out_path, in_path])
        assert out.returncode == 0, out.stderr
        y = read_wav_f32(out_path)
    assert y.shape == x.shape
    err = (np.abs(y - y_ref).max(axis=1) / np.abs(y_ref).max(axis=1)).max()
    assert err <= 1e-4, f"{stages} block={block}: error {err:.2e}"


def scipy_side(st, fs):
    """SciPy's coefficients for one chain-format stage."""
    t = st["type"]
    if t == "linkwitz_riley":
        half = ss.butter(st["order"] // 2, st["cutoff_hz"], st["response"], fs=fs, output="sos")
        return "sos", np.vstack([half, half])
    if t == "biquad":
        return "sos", rbj(st["kind"], st["freq_hz"], st["q"], st.get("gain_db", 0.0), fs)
    if t == "fir":
        w = "boxcar" if st["window"] == "rectangular" else st["window"]
        if w == "kaiser":
            w = ("kaiser", st["beta"])
        return "fir", ss.firwin(st["taps"], st["cutoff_hz"], window=w, pass_zero=st["response"], fs=fs)
    args = dict(fs=fs, output="sos")
    n, c, r = st["order"], st["cutoff_hz"], st["response"]
    if t == "butterworth":
        return "sos", ss.butter(n, c, r, **args)
    if t == "chebyshev1":
        return "sos", ss.cheby1(n, st["ripple_db"], c, r, **args)
    if t == "chebyshev2":
        return "sos", ss.cheby2(n, st["attenuation_db"], c, r, **args)
    if t == "elliptic":
        return "sos", ss.ellip(n, st["ripple_db"], st["attenuation_db"], c, r, **args)
    return "sos", ss.bessel(n, c, r, norm="phase", **args)
