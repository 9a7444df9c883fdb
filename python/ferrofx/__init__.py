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

Device arrays (torch CUDA tensors, CuPy arrays; float32 or float64) given to
`Chain.process` and `Stream.process` are filtered on their CUDA device with no host copy
and come back as the same kind, dtype and device (float64 ones within the tolerance, not
float64-exact: see `Chain.process`). The SciPy functions below take device arrays too,
filtering in float64 on the device (`ferrofx._on_device`).

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
from ._on_device import _dlpack_on_cuda, _from_dlpack, _is_torch, _namespace_from_dlpack, _torch_on_cuda

__all__ = [
    "Chain", "Stream", "Stage", "signal",
    "sosfilt", "sosfilt_zi", "sosfiltfilt", "lfilter", "lfilter_zi", "filtfilt",
    "Butterworth", "Chebyshev1", "Chebyshev2", "Elliptic", "Bessel", "LinkwitzRiley",
    "Biquad", "Fir", "Gain", "Sos",
]


def _to_numpy(x: Any) -> tuple[np.ndarray, Any]:
    """The array as numpy, and how to give the result back (None: numpy)."""
    if _is_torch(x):
        import torch  # only when a tensor was given

        if x.device.type != "cpu":
            raise ValueError(f"ferrofx processes CPU tensors; this one is on {x.device} (use .cpu())")
        if x.dtype in (torch.float16, torch.bfloat16):
            # Half-precision tensors are widened to float32 (exactly; NumPy has no
            # bfloat16) and the result comes back in their dtype.
            return x.detach().float().numpy(), (torch, x.dtype)
        return x.detach().numpy(), (torch, x.dtype)
    return np.asarray(x), None


# Frames per unit of a device stream's grid (see `DeviceStream` in python/src/device.rs):
# calls on the device run in whole units where they can; a call that ends inside one
# filters the unit so far again (from the unit's start) on each call until the unit is
# whole. Device memory per resident chain: about four times rows x unit floats.
_DEVICE_UNIT_FRAMES = 1 << 16


class _DeviceArray:
    """A CUDA array seen through `__cuda_array_interface__`: its address, rows and frames
    (all axes but the last are rows), the CUDA device and the caller's current stream."""

    def __init__(self, x: Any, cai: dict, kind: str, ordinal: int, stream: int):
        self.x, self.kind, self.ordinal, self.stream = x, kind, ordinal, stream
        # How a new result goes back to the caller's kind (None: as it is).
        self.back: Any = None
        shape = tuple(int(n) for n in cai["shape"])
        typestr = cai["typestr"]
        if typestr not in ("<f4", "=f4", "|f4", "<f8", "=f8", "|f8"):
            raise ValueError(f"device arrays must be float32 or float64, got typestr {typestr!r}")
        # float64 arrays run the device's float32 path (float64 inside the cascades that
        # need it), converted on the device both ways: within the reference tolerance of
        # SciPy's float64 result, not float64-exact.
        self.float64 = typestr[1:] == "f8"
        itemsize = 8 if self.float64 else 4
        if not 1 <= len(shape) <= 3:
            raise ValueError(f"a device array is shaped (frames,), (channels, frames) or (batch, channels, frames), got {shape}")
        strides = cai.get("strides")
        if strides is not None:
            want, step = [], itemsize
            for n in reversed(shape):
                want.append(step)
                step *= n
            want = tuple(reversed(want))
            if any(n > 1 and st != w for n, st, w in zip(shape, strides, want)):
                raise ValueError(f"the device array must be C-contiguous (strides {tuple(strides)} for shape {shape}): "
                                 "use .contiguous() / cupy.ascontiguousarray")
        if cai.get("mask") is not None:
            raise ValueError("masked device arrays are not filtered")
        self.shape, self.ptr, self.readonly = shape, int(cai["data"][0]), bool(cai["data"][1])
        self.frames = shape[-1]
        self.rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1


def _device_array(x: Any) -> "_DeviceArray | None":
    """`x` as a CUDA array (a torch CUDA tensor, a CuPy array, anything offering
    `__cuda_array_interface__`), or None for host data."""
    if _is_torch(x):
        if not _torch_on_cuda(x):
            return None
        import torch

        t = x.detach()
        return _DeviceArray(t, t.__cuda_array_interface__, "torch", t.device.index or 0,
                            torch.cuda.current_stream(t.device).cuda_stream)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        if not _dlpack_on_cuda(x):
            return None
        # A DLPack-only CUDA array (JAX, ...): read through PyTorch or CuPy, sharing its
        # memory; the result goes back as the producer's kind where it names its array
        # namespace (`__array_namespace__().from_dlpack`).
        d = _device_array(_from_dlpack(x))
        d.back = _namespace_from_dlpack(x)
        return d
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return _DeviceArray(x, cai, "cupy", int(x.device.id), int(cupy.cuda.get_current_stream().ptr))
    # Another producer: its interface's stream (version 3), else the legacy default stream.
    stream = cai.get("stream")
    d = _DeviceArray(x, cai, "other", 0, int(stream) if isinstance(stream, int) and stream > 2 else 0)
    d.back = _namespace_from_dlpack(x)
    return d


def _half_cuda_tensor(x: Any) -> Any:
    """`x` where it is a float16 or bfloat16 torch CUDA tensor (which `__cuda_array_interface__`
    shows alike, as "<f2"), else None."""
    if _is_torch(x) and _torch_on_cuda(x):
        import torch

        if x.dtype in (torch.float16, torch.bfloat16):
            return x
    return None


def _given_back(d: _DeviceArray, y: Any) -> Any:
    """A new result `y` in the caller's kind (a DLPack producer's own, where it takes
    DLPack back)."""
    return d.back(y) if d.back is not None else y


def _device_output(d: _DeviceArray, out: Any) -> _DeviceArray:
    """Where a device call writes: `out` (the same shape and dtype, on the same device), or
    a new array of the input's kind."""
    dtype_name = "float64" if d.float64 else "float32"

    def torch_empty(device: Any) -> Any:
        import torch

        return torch.empty(d.shape, dtype=getattr(torch, dtype_name), device=device)

    def cupy_empty() -> Any:
        import cupy

        with cupy.cuda.Device(d.ordinal):
            return cupy.empty(d.shape, dtype=getattr(cupy, dtype_name))

    if out is None:
        if d.kind == "torch":
            out = torch_empty(d.x.device)
        elif d.kind == "cupy":
            out = cupy_empty()
        elif d.back is not None:
            # A producer that takes DLPack back: the output allocated by PyTorch or CuPy.
            try:
                out = torch_empty(f"cuda:{d.ordinal}")
            except ImportError:
                out = cupy_empty()
        else:
            raise ValueError(f"{type(d.x).__name__} is a device array ferrofx cannot allocate: pass out= "
                             "(a device array of the same shape), or give a torch tensor or CuPy array")
    o = _device_array(out)
    if o is None or o.shape != d.shape or o.ordinal != d.ordinal or o.float64 != d.float64:
        raise ValueError(f"out must be a {dtype_name} device array shaped {d.shape} on cuda:{d.ordinal}")
    if o.readonly:
        raise ValueError("out is read-only")
    return o


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

    def process(self, x: Any, fs: float, threads: int | None = None, out: Any = None) -> Any:
        """Filters `x` shaped `(samples,)` (one channel), `(channels, samples)` or
        `(batch, channels, samples)` from zero state (each batch item separately, spread
        over `threads`, default all cores).

        Device arrays (a torch CUDA tensor, a CuPy array, another `__cuda_array_interface__`
        or CUDA DLPack producer such as JAX, read through PyTorch or CuPy; float32 or
        float64, C-contiguous, the same shapes) are filtered on their device, on
        the caller's current stream, with no host copy, into a new array of the same kind
        (a producer that names its array namespace gets its own kind back through
        `from_dlpack`), dtype and device (or
        into `out`, which may be `x` itself); the call returns before the device is done,
        as the frameworks' own calls do. float32 arrays are computed with float32 samples
        (float64 inside the cascades whose float32 form would miss the tolerance). float64
        torch tensors and CuPy arrays through a chain of IIR stages only run in float64 on
        the device (within 1e-10 of SciPy's float64 result's peak); through a chain with a
        FIR stage (or from another producer) they take the float32 path, converted on the
        device both ways: within the reference tolerance, not float64-exact (a CPU
        float64 array is).
        Where no CUDA driver or device is, or a cascade would miss the tolerance even in
        float64, the error says so.
        float32 data runs the engine; float64 data is filtered in float64 with SciPy's
        arithmetic (`sosfilt`/`lfilter` on the designed processors). Returns the same type,
        dtype and shape.

        Speed: for a chain of IIR stages only, batch items with fewer than eight channels
        run side by side in the SIMD lanes (eight mono items at once), and long items run
        in time segments (see docs/perf-history.md); every item's output is the same bits as when
        filtered alone, whatever the batch."""
        half = _half_cuda_tensor(x)
        if half is not None:
            # float16 / bfloat16 CUDA tensors, as on the host: computed in float32 (widened
            # and rounded back on the device).
            if out is not None and (not _is_torch(out) or tuple(out.shape) != tuple(x.shape) or out.device != x.device):
                raise ValueError(f"out must be a tensor shaped {tuple(x.shape)} on {x.device}")
            y = self.process(x.float(), fs, threads)
            return y.to(x.dtype) if out is None else out.copy_(y)
        d = _device_array(x)
        if d is not None:
            return self._process_device(d, fs, out)
        if out is not None:
            raise ValueError("out= is for device arrays; host arrays come back as a new array")
        arr, how = _to_numpy(x)
        if arr.ndim not in (1, 2, 3):
            raise ValueError(f"x must be shaped (samples,), (channels, samples) or (batch, channels, samples), got {arr.shape}")
        if arr.dtype not in (np.float32, np.float64):
            raise ValueError(f"x must be float32 or float64, got {arr.dtype}")
        if arr.size == 0:
            # Nothing to filter (no items, channels or samples): an empty result, as on a
            # device, after the chain's own checks at this rate.
            self.design(fs)
            return _back(np.zeros(arr.shape, arr.dtype), how)
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
        batch = arr.reshape((1,) * (3 - arr.ndim) + arr.shape)
        y = self._core.process(np.ascontiguousarray(batch, dtype=np.float32), float(fs), int(threads or os.cpu_count() or 1))
        return _back(y.reshape(arr.shape), how)

    def _device_stream(self, fs: float, rows: int, ordinal: int, frames: int):
        """A resident chain for (fs, rows, device), kept for the next call of that shape."""
        unit = max(1, min(frames, _DEVICE_UNIT_FRAMES))
        cache = self.__dict__.setdefault("_device_streams", {})
        key = (float(fs), rows, ordinal, unit)
        ds = cache.get(key)
        if ds is None:
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            ds = cache[key] = self._core.device_stream(float(fs), rows, unit, ordinal)
        return ds

    def _process_device(self, d: _DeviceArray, fs: float, out: Any) -> Any:
        o = _device_output(d, out)
        if d.frames == 0 or d.rows == 0:
            return out if out is not None else _given_back(d, o.x)
        designed = self.design(fs)
        if d.float64 and d.kind in ("torch", "cupy") and all(p["type"] == "sos" for p in designed):
            # An IIR-only chain on float64 data runs in float64 on the device: its
            # cascades as one (`sosfilt_device64`, in place on the output, which starts
            # as a copy of the input), within 1e-10 of SciPy's float64 result's peak.
            if o.ptr != d.ptr:
                o.x[...] = d.x
            rows = np.vstack([np.asarray(p["sos"], dtype=np.float64) for p in designed])
            _ferrofx.sosfilt_device64(rows, o.ptr, d.rows, d.frames, d.ordinal, d.stream)
            return out if out is not None else _given_back(d, o.x)
        ds = self._device_stream(fs, d.rows, d.ordinal, d.frames)
        ds.reset()
        ds.process_ptr(d.ptr, o.ptr, d.frames, d.stream, d.float64)
        return out if out is not None else _given_back(d, o.x)

    def stream(self, fs: float, channels: int, unit_frames: int | None = None) -> "Stream":
        """A stateful stream of blocks through this chain (host arrays, or device arrays:
        the state then lives on that device; see `Stream.process`).

        `unit_frames` (device blocks only; default 65,536): the stream's grid on the
        device. Every split of a signal into blocks gives the same bits as one block for a
        given unit; a block that ends inside a unit makes the next ones filter that unit
        again from its start until it is whole, so blocks much shorter than the unit cost
        up to unit / (2 x block) times their own work. Streaming fixed blocks, pass their
        length (or a multiple of it): then no work is repeated."""
        if unit_frames is not None and (isinstance(unit_frames, bool) or not isinstance(unit_frames, (int, np.integer)) or unit_frames < 1):
            raise ValueError(f"unit_frames must be a positive whole number of frames, got {unit_frames!r}")
        unit = _DEVICE_UNIT_FRAMES if unit_frames is None else int(unit_frames)
        return Stream(self._core.stream(float(fs), int(channels)), self, float(fs), unit)


class Stream:
    """Block-by-block filtering with state (create with `Chain.stream`)."""

    def __init__(self, core: "_ferrofx.Stream", chain: "Chain | None" = None, fs: float | None = None, unit_frames: int = _DEVICE_UNIT_FRAMES):
        self._core = core
        self._chain, self._fs = chain, fs
        self._unit = unit_frames
        # Where the state lives once blocks came: "cpu", or a device stream (CUDA).
        self._where: Any = None

    @property
    def channels(self) -> int:
        return self._core.channels

    def process(self, block: Any) -> Any:
        """Filters the next block, shaped `(channels, samples)` (also `(samples,)` for a
        one-channel stream, and `(batch, channels, samples)` where batch x channels is the
        stream's channels: its rows in order); returns the same type and shape.

        Device blocks (torch CUDA tensors, CuPy arrays, float32 or float64) are filtered on their
        device, the state kept there between blocks: any split of a signal into blocks
        gives the same bits as one block (blocks shorter than the stream's unit repeat
        work: see `Chain.stream`'s `unit_frames`). A stream stays where its first block was until
        `reset`."""
        if _half_cuda_tensor(block) is not None:
            return self.process(block.float()).to(block.dtype)
        d = _device_array(block)
        if d is not None:
            return self._process_device(d)
        if self._where not in (None, "cpu"):
            raise ValueError(f"this stream's state lives on cuda:{self._where.device}; give it blocks there, or reset() it")
        self._where = "cpu"
        arr, how = _to_numpy(block)
        self._check_shape(arr.shape)
        y = self._core.process(np.ascontiguousarray(arr.reshape(self.channels, arr.shape[-1]), dtype=np.float32))
        return _back(y.reshape(arr.shape).astype(arr.dtype if arr.dtype in (np.float32, np.float64) else np.float32, copy=False), how)

    def _check_shape(self, shape: "tuple[int, ...]") -> None:
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        if not 1 <= len(shape) <= 3 or rows != self.channels:
            raise ValueError(
                f"a block of this {self.channels}-channel stream is shaped (channels, samples) with {self.channels} channels "
                f"(or (samples,) for one channel, (batch, channels, samples) with batch x channels = {self.channels}), got {tuple(shape)}"
            )

    def _process_device(self, d: _DeviceArray) -> Any:
        self._check_shape(d.shape)
        if self._chain is None:
            raise ValueError("this stream was not made by Chain.stream, so it cannot move to a device")
        if self._where == "cpu":
            raise ValueError("this stream's state lives on the CPU; give it host blocks, or reset() it")
        if self._where is None:
            self._where = self._chain._core.device_stream(self._fs, self.channels, self._unit, d.ordinal)
        elif self._where.device != d.ordinal:
            raise ValueError(f"this stream's state lives on cuda:{self._where.device}, the block on cuda:{d.ordinal}")
        o = _device_output(d, None)
        if d.frames:
            self._where.process_ptr(d.ptr, o.ptr, d.frames, d.stream, d.float64)
        return _given_back(d, o.x)

    def reset(self) -> None:
        """Clears the filter state (and lets the stream move between host and device)."""
        self._core.reset()
        if self._where not in (None, "cpu"):
            self._where.reset()
        self._where = None


def _torch_wrapped(f):
    """`f` (one of `signal`'s functions) taking and giving back torch CPU tensors too, of
    SciPy's result type as NumPy arrays and device arrays get (a float32 tensor through
    float64 sections gives float64; float16 and bfloat16 tensors are read as float32).
    CUDA tensors go to `f` as they are: it filters them on their device."""
    import functools

    @functools.wraps(f)
    def call(*args, **kwargs):
        if any(_is_torch(v) and v.device.type != "cpu" for v in list(args) + list(kwargs.values())):
            return f(*args, **kwargs)
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
        torch = how[0]
        if isinstance(out, tuple):
            return tuple(torch.from_numpy(np.ascontiguousarray(o)) for o in out)
        return torch.from_numpy(np.ascontiguousarray(out))

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
