"""FerroFX for Python: filter chains (IIR designs, cookbook biquads, FIRs) exact to SciPy.

    import numpy as np, ferrofx
    chain = ferrofx.Butterworth.highpass(30, 4) | ferrofx.Biquad.peaking(1000, 1.4, -6)
    y = chain.process(x, fs=48_000)           # x: (channels, samples) or (batch, channels, samples)
    sos = chain.design(48_000)[0]["sos"]      # the SOS rows SciPy's sosfilt takes
    y64 = ferrofx.sosfilt(sos, x64)           # drop-in for scipy.signal.sosfilt, float64
    from ferrofx.signal import sosfiltfilt    # SciPy's filtering functions by name (see below)

Arrays are numpy float32/float64 (or torch CPU tensors, converted without a copy where
the layout allows) and come back in the type they went in. For float32 data
`Chain.process` and `Stream` run FerroFX's engine (float32 input and output, float64
state; within 1e-4 of SciPy's float64 result, typically far closer); float64 data given
to `Chain.process` is filtered in float64 with SciPy's arithmetic. Chain errors raise
ValueError with the chain-format contract's message (stage index and field).

`ferrofx.signal` holds SciPy's filtering functions with SciPy's signatures and semantics
(`sosfilt`, `sosfilt_zi`, `sosfiltfilt`, `lfilter`, `lfilter_zi`, `filtfilt`; SciPy's own
test classes run against them), also here at the top level: a script switches from
`scipy.signal` by its import line.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence

import numpy as np

from . import _ferrofx
from . import signal

__all__ = [
    "Chain", "Stream", "Stage", "signal",
    "sosfilt", "sosfilt_zi", "sosfiltfilt", "lfilter", "lfilter_zi", "filtfilt",
    "Butterworth", "Chebyshev1", "Chebyshev2", "Elliptic", "Bessel", "LinkwitzRiley",
    "Biquad", "Fir", "Gain", "Sos",
]


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _to_numpy(x: Any) -> tuple[np.ndarray, Any]:
    """The array as numpy, and how to give the result back (None: numpy)."""
    if _is_torch(x):
        import torch  # only when a tensor was given

        if x.device.type != "cpu":
            raise ValueError(f"ferrofx processes CPU tensors; this one is on {x.device} (use .cpu())")
        return x.detach().numpy(), (torch, x.dtype)
    return np.asarray(x), None


def _back(y: np.ndarray, how: Any) -> Any:
    if how is None:
        return y
    torch, dtype = how
    return torch.from_numpy(y).to(dtype)


class Chain:
    """A filter chain: the chain-format contract's stages, validated."""

    def __init__(self, core: "_ferrofx.Chain"):
        self._core = core

    @staticmethod
    def from_json(text_or_path: str | os.PathLike) -> "Chain":
        """A chain from chain-file text, or from the path of a chain file."""
        text = os.fspath(text_or_path)
        if not text.lstrip().startswith("{"):
            with open(text, encoding="utf-8") as f:
                text = f.read()
        return Chain(_ferrofx.Chain.from_json(text))

    @staticmethod
    def from_stages(stages: Iterable[dict | "Stage"]) -> "Chain":
        """A chain from stage dicts in the chain format (or Stage objects)."""
        plain = [s.spec if isinstance(s, Stage) else dict(s) for s in stages]
        return Chain.from_json(json.dumps({"format": "ferrofx-chain", "version": _version(plain), "stages": plain}))

    def to_json(self) -> str:
        return self._core.to_json()

    def __len__(self) -> int:
        return len(self._core)

    def __repr__(self) -> str:
        return repr(self._core)

    def __or__(self, other: "Chain | Stage") -> "Chain":
        mine = json.loads(self.to_json())["stages"]
        theirs = json.loads(other.to_json())["stages"] if isinstance(other, Chain) else [other.spec]
        return Chain.from_stages(mine + theirs)

    def design(self, fs: float) -> list[dict]:
        """The processors at `fs`: `{"type": "sos", "sos": (n, 6)}` or `{"type": "fir", "taps": (n,)}`."""
        return self._core.design(float(fs))

    def response(self, freqs_hz: Sequence[float] | np.ndarray, fs: float) -> np.ndarray:
        """The complex response at `freqs_hz`."""
        return self._core.response(np.ascontiguousarray(freqs_hz, dtype=np.float64), float(fs))

    def process(self, x: Any, fs: float, threads: int | None = None) -> Any:
        """Filters `x` shaped `(channels, samples)` or `(batch, channels, samples)` from
        zero state (each batch item separately, spread over `threads`, default all cores).
        float32 data runs the engine; float64 data is filtered in float64 with SciPy's
        arithmetic (`sosfilt`/`lfilter` on the designed processors). Returns the same type,
        dtype and shape.

        Speed: for a chain of IIR stages only, batch items with fewer than eight channels
        run side by side in the SIMD lanes (eight mono items at once), and long items run
        in time segments (see docs/perf-history.md); every item's output is the same bits as when
        filtered alone, whatever the batch."""
        arr, how = _to_numpy(x)
        if arr.ndim not in (2, 3):
            raise ValueError(f"x must be shaped (channels, samples) or (batch, channels, samples), got {arr.shape}")
        if arr.dtype not in (np.float32, np.float64):
            raise ValueError(f"x must be float32 or float64, got {arr.dtype}")
        if arr.dtype == np.float64:
            # float64 data stays float64: the designed processors through the float64
            # drop-ins (SciPy's arithmetic), rows over the cores.
            y = arr.reshape(-1, arr.shape[-1])
            for d in self.design(fs):
                if d["type"] == "sos":
                    rows = np.asarray(d["sos"], dtype=np.float64)
                    rows = rows / rows[:, 3:4]  # a0 = 1, as sosfilt takes them
                    y = _ferrofx.sosfilt64(np.ascontiguousarray(rows), np.ascontiguousarray(y))[0]
                else:
                    y = _ferrofx.fir64(d["taps"], np.ascontiguousarray(y))
            return _back(np.asarray(y).reshape(arr.shape), how)
        batch = arr if arr.ndim == 3 else arr[None]
        y = self._core.process(np.ascontiguousarray(batch, dtype=np.float32), float(fs), int(threads or os.cpu_count() or 1))
        y = y if arr.ndim == 3 else y[0]
        return _back(y, how)

    def stream(self, fs: float, channels: int) -> "Stream":
        """A stateful stream of blocks through this chain."""
        return Stream(self._core.stream(float(fs), int(channels)))


class Stream:
    """Block-by-block filtering with state (create with `Chain.stream`)."""

    def __init__(self, core: "_ferrofx.Stream"):
        self._core = core

    @property
    def channels(self) -> int:
        return self._core.channels

    def process(self, block: Any) -> Any:
        """Filters the next block, shaped `(channels, samples)`; returns the same type."""
        arr, how = _to_numpy(block)
        if arr.ndim != 2:
            raise ValueError(f"a block is shaped (channels, samples), got {arr.shape}")
        y = self._core.process(np.ascontiguousarray(arr, dtype=np.float32))
        return _back(y.astype(arr.dtype if arr.dtype in (np.float32, np.float64) else np.float32, copy=False), how)

    def reset(self) -> None:
        """Clears the filter state."""
        self._core.reset()


def _torch_wrapped(f):
    """`f` (one of `signal`'s functions) taking and giving back torch CPU tensors too."""
    import functools

    @functools.wraps(f)
    def call(*args, **kwargs):
        how = None
        conv = []
        for v in args:
            if _is_torch(v):
                v, how = _to_numpy(v)
            conv.append(v)
        for k, v in list(kwargs.items()):
            if _is_torch(v):
                kwargs[k], how = _to_numpy(v)
        out = f(*conv, **kwargs)
        if how is None:
            return out
        if isinstance(out, tuple):
            return tuple(_back(np.ascontiguousarray(o), how) for o in out)
        return _back(np.ascontiguousarray(out), how)

    return call


sosfilt = _torch_wrapped(signal.sosfilt)
sosfilt_zi = signal.sosfilt_zi
sosfiltfilt = _torch_wrapped(signal.sosfiltfilt)
lfilter = _torch_wrapped(signal.lfilter)
lfilter_zi = signal.lfilter_zi
filtfilt = _torch_wrapped(signal.filtfilt)


class Stage:
    """One stage of the chain format; `|` joins stages into a Chain."""

    def __init__(self, spec: dict):
        self.spec = spec

    def __or__(self, other: "Stage | Chain") -> Chain:
        return Chain.from_stages([self]) | other

    def to_json(self) -> str:
        return json.dumps({"format": "ferrofx-chain", "version": _version([self.spec]), "stages": [self.spec]})

    def chain(self) -> Chain:
        return Chain.from_stages([self])

    def __repr__(self) -> str:
        return f"ferrofx.Stage({self.spec!r})"

    # A stage runs like a one-stage chain.
    def design(self, fs: float) -> list[dict]:
        return self.chain().design(fs)

    def process(self, x: Any, fs: float, threads: int | None = None) -> Any:
        return self.chain().process(x, fs, threads)


def _iir(kind: str, response: str, order: int, cutoff_hz: Any, **extra: Any) -> Stage:
    spec = {"type": kind, "response": response, "order": order, "cutoff_hz": cutoff_hz}
    # `matched=False` is the default design: left out, so the file stays version 1.
    spec.update({k: v for k, v in extra.items() if v is not None and not (k == "matched" and v is False)})
    return Stage(spec)


class _Family:
    kind = ""

    @classmethod
    def lowpass(cls, cutoff_hz: float, order: int, **extra: Any) -> Stage:
        return _iir(cls.kind, "lowpass", order, cutoff_hz, **extra)

    @classmethod
    def highpass(cls, cutoff_hz: float, order: int, **extra: Any) -> Stage:
        return _iir(cls.kind, "highpass", order, cutoff_hz, **extra)

    @classmethod
    def bandpass(cls, low_hz: float, high_hz: float, order: int, **extra: Any) -> Stage:
        return _iir(cls.kind, "bandpass", order, [low_hz, high_hz], **extra)

    @classmethod
    def bandstop(cls, low_hz: float, high_hz: float, order: int, **extra: Any) -> Stage:
        return _iir(cls.kind, "bandstop", order, [low_hz, high_hz], **extra)


class Butterworth(_Family):
    """`lowpass`/`highpass` take `matched=True`: the analog-matched cut (chain format
    version 2), whose magnitude follows the analog Butterworth up to Nyquist."""
    kind = "butterworth"


class Bessel(_Family):
    kind = "bessel"


class Chebyshev1(_Family):
    """Pass `ripple_db=`."""
    kind = "chebyshev1"


class Chebyshev2(_Family):
    """Pass `attenuation_db=`."""
    kind = "chebyshev2"


class Elliptic(_Family):
    """Pass `ripple_db=` and `attenuation_db=`."""
    kind = "elliptic"


class LinkwitzRiley:
    """`matched=True`: the analog-matched cut (chain format version 2)."""

    @staticmethod
    def lowpass(cutoff_hz: float, order: int, matched: bool = False) -> Stage:
        return _iir("linkwitz_riley", "lowpass", order, cutoff_hz, matched=matched)

    @staticmethod
    def highpass(cutoff_hz: float, order: int, matched: bool = False) -> Stage:
        return _iir("linkwitz_riley", "highpass", order, cutoff_hz, matched=matched)


def _version(specs: list) -> int:
    """The oldest chain-format version that says these stages (2 for matched stages)."""
    return 2 if any(s.get("matched") for s in specs) else 1


class Biquad:
    """Audio EQ Cookbook biquads. `matched=True`: the analog-matched design of the same
    shape (two sections following the analog prototype's magnitude up to Nyquist; chain
    format version 2)."""

    @staticmethod
    def _make(kind: str, freq_hz: float, q: float, gain_db: float | None = None, matched: bool = False) -> Stage:
        spec = {"type": "biquad", "kind": kind, "freq_hz": freq_hz, "q": q}
        if gain_db is not None:
            spec["gain_db"] = gain_db
        if matched:
            spec["matched"] = True
        return Stage(spec)

    @staticmethod
    def lowpass(freq_hz: float, q: float, matched: bool = False) -> Stage:
        return Biquad._make("lowpass", freq_hz, q, matched=matched)

    @staticmethod
    def highpass(freq_hz: float, q: float, matched: bool = False) -> Stage:
        return Biquad._make("highpass", freq_hz, q, matched=matched)

    @staticmethod
    def bandpass(freq_hz: float, q: float, matched: bool = False) -> Stage:
        return Biquad._make("bandpass", freq_hz, q, matched=matched)

    @staticmethod
    def notch(freq_hz: float, q: float, matched: bool = False) -> Stage:
        return Biquad._make("notch", freq_hz, q, matched=matched)

    @staticmethod
    def allpass(freq_hz: float, q: float, matched: bool = False) -> Stage:
        return Biquad._make("allpass", freq_hz, q, matched=matched)

    @staticmethod
    def peaking(freq_hz: float, q: float, gain_db: float, matched: bool = False) -> Stage:
        return Biquad._make("peaking", freq_hz, q, gain_db, matched=matched)

    @staticmethod
    def low_shelf(freq_hz: float, q: float, gain_db: float, matched: bool = False) -> Stage:
        return Biquad._make("low_shelf", freq_hz, q, gain_db, matched=matched)

    @staticmethod
    def high_shelf(freq_hz: float, q: float, gain_db: float, matched: bool = False) -> Stage:
        return Biquad._make("high_shelf", freq_hz, q, gain_db, matched=matched)


class Fir:
    @staticmethod
    def lowpass(taps: int, cutoff_hz: float, window: str = "hamming") -> Stage:
        return Stage({"type": "fir", "response": "lowpass", "taps": taps, "cutoff_hz": cutoff_hz, "window": window})

    @staticmethod
    def highpass(taps: int, cutoff_hz: float, window: str = "hamming") -> Stage:
        return Stage({"type": "fir", "response": "highpass", "taps": taps, "cutoff_hz": cutoff_hz, "window": window})

    @staticmethod
    def coefficients(taps: Sequence[float]) -> Stage:
        return Stage({"type": "fir", "coefficients": [float(t) for t in taps]})


def Gain(gain_db: float) -> Stage:  # noqa: N802 (a stage constructor, like the classes)
    return Stage({"type": "gain", "gain_db": gain_db})


def Sos(sections: Any) -> Stage:  # noqa: N802
    """Given SOS rows `[b0, b1, b2, a0, a1, a2]`."""
    return Stage({"type": "sos", "sections": np.asarray(sections, dtype=np.float64).tolist()})
