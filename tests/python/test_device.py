"""Device arrays in `Chain.process` and `Stream.process`: CUDA tensors and CuPy arrays
filtered where they live (`__cuda_array_interface__`, no host copy).

On a machine without CUDA (this project's CI) the checks of what is refused before any
device is touched run (dtype, shape, layout, a missing `out=`), and a device call gives a
clear error naming the device and what is missing, never a crash. With PyTorch or CuPy on
a CUDA machine (scripts/gpu-check.sh on the lent GPU machine) the results are checked
against SciPy's float64 `sosfilt`, and a stream split into blocks against one call, bit
for bit. Runs under pytest, or as `python3 tests/python/test_device.py` where pytest is
missing (the GPU machine)."""

import numpy as np
import scipy.signal as ss

import ferrofx

try:
    import pytest

    raises = pytest.raises
except ImportError:  # the GPU machine may have no pytest
    import contextlib
    import re

    pytest = None

    @contextlib.contextmanager
    def raises(kind, match=None):
        try:
            yield
        except kind as e:
            assert match is None or re.search(match, str(e)), f"{e!r} does not match {match!r}"
        else:
            raise AssertionError(f"{kind} not raised")


CHAIN = ferrofx.Butterworth.highpass(30, 4) | ferrofx.Elliptic.lowpass(9000, 6, ripple_db=0.1, attenuation_db=70) | ferrofx.Biquad.peaking(1000, 1.4, -6)
FS = 48_000.0


class FakeDeviceArray:
    """A producer of `__cuda_array_interface__` whose address is no device memory."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x7F0000001000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3, "stream": 1}


def _cuda_present():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def _torch_cuda_or_skip():
    """PyTorch where it has a CUDA device; else None, after skipping the test under pytest
    (run as a script, the caller returns)."""
    if not _cuda_present():
        if pytest:
            pytest.skip("no CUDA device with PyTorch here")
        return None
    import torch

    return torch


def test_float64_device_arrays_take_a_float64_out_and_float64_strides():
    # The output must match the input's dtype; strides are read in float64's 8 bytes.
    with raises(ValueError, match="out must be a float64 device array"):
        CHAIN.process(FakeDeviceArray((2, 100), "<f8"), FS, out=FakeDeviceArray((2, 100)))
    with raises(ValueError, match="out must be a float32 device array"):
        CHAIN.process(FakeDeviceArray((2, 100)), FS, out=FakeDeviceArray((2, 100), "<f8"))
    with raises(ValueError, match="C-contiguous"):
        CHAIN.process(FakeDeviceArray((2, 100), "<f8", strides=(400, 4)), FS)
    # Contiguous float64 strides pass the checks and reach the device call.
    with raises(RuntimeError, match=r"cuda:0: (CUDA unavailable|.*not device memory)"):
        CHAIN.process(FakeDeviceArray((2, 100), "<f8", strides=(800, 8)), FS, out=FakeDeviceArray((2, 100), "<f8"))


def test_other_dtypes_shapes_and_layouts_are_refused():
    with raises(ValueError, match="must be float32 or float64"):
        CHAIN.process(FakeDeviceArray((2, 100), "<i2"), FS)
    with raises(ValueError, match="shaped"):
        CHAIN.process(FakeDeviceArray((1, 2, 3, 100)), FS)
    for bad in [(3, 100), (100,), (2, 2, 100)]:
        with raises(ValueError, match=r"2-channel stream is shaped"):
            CHAIN.stream(FS, 2).process(FakeDeviceArray(bad))
    with raises(ValueError, match="C-contiguous"):
        CHAIN.process(FakeDeviceArray((2, 100), strides=(4, 8)), FS)


def test_a_producer_ferrofx_cannot_allocate_for_needs_out():
    with raises(ValueError, match="pass out="):
        CHAIN.process(FakeDeviceArray((2, 100)), FS)
    with raises(ValueError, match="out must be"):
        CHAIN.process(FakeDeviceArray((2, 100)), FS, out=FakeDeviceArray((2, 99)))


def test_dlpack_only_device_arrays_are_read_through_torch_or_cupy():
    class DlpackOnly:
        def __init__(self, device):
            self.device = device

        def __dlpack_device__(self):
            return self.device

    # Not CUDA (here ROCm, DLPack device type 10): refused by name.
    with raises(ValueError, match="DLPack device type 2"):
        CHAIN.process(DlpackOnly((10, 0)), FS)
    # CUDA, read through PyTorch or CuPy; without either, the error says so.
    readers = []
    for name in ("torch", "cupy"):
        try:
            __import__(name)
            readers.append(name)
        except ImportError:
            pass
    if not readers:
        with raises(ValueError, match="neither is installed"):
            CHAIN.process(DlpackOnly((2, 0)), FS)


def test_a_device_call_without_a_device_is_a_clear_error():
    # Without a driver: "CUDA unavailable: ..."; with one, the fake address is refused.
    with raises(RuntimeError, match=r"cuda:0: (CUDA unavailable|.*not device memory)"):
        CHAIN.process(FakeDeviceArray((2, 100)), FS, out=FakeDeviceArray((2, 100)))
    # The PyTorch operator's device entry points likewise (fake addresses).
    from ferrofx import _ferrofx

    with raises(RuntimeError, match=r"cuda:0: (CUDA unavailable|.*not device memory)"):
        _ferrofx.adjoint_step_device64((1.0, 0.5, 0.25), 4096, 8192, 12288, 16384, 20480, 2, 12, 0, 0)
    with raises(RuntimeError, match=r"cuda:0: (CUDA unavailable|.*not device memory)"):
        _ferrofx.sosfilt_device64(np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.1]]), 4096, 2, 10, 0, 0)
    with raises(RuntimeError, match=r"cuda:0: (CUDA unavailable|.*not device memory)"):
        _ferrofx.sosfilt_taps_device64(np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.1]]), 4096, 1 << 20, 2, 10, 12, 0, 0)
    with raises(ValueError, match="null device address"):
        _ferrofx.sosfilt_taps_device64(np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.1]]), 0, 4096, 2, 10, 12, 0, 0)
    assert _ferrofx.adjoint_max_blocks() >= 1
    # and the host path goes on working
    x = np.random.default_rng(1).standard_normal((2, 1000)).astype(np.float32)
    y = CHAIN.process(x, FS)
    assert y.shape == x.shape


def _reference(x64):
    y = x64
    for d in CHAIN.design(FS):
        y = ss.sosfilt(d["sos"], y, axis=-1)
    return y


def test_torch_cuda_tensors_in_and_out():
    torch = _torch_cuda_or_skip()
    if torch is None:
        return

    rng = np.random.default_rng(2)
    for shape in [(48_000,), (2, 100_000), (3, 2, 30_000)]:
        x64 = rng.standard_normal(shape)
        x = torch.from_numpy(x64.astype(np.float32)).cuda()
        y = CHAIN.process(x, FS)
        assert y.device == x.device and y.dtype == torch.float32 and tuple(y.shape) == shape
        ref = _reference(x64)
        err = np.abs(y.cpu().numpy() - ref).max() / np.abs(ref).max()
        print(f"torch {shape}: {err:.2e} of the peak from SciPy's float64")
        assert err <= 1e-4, err
    # in place, into `out` = x
    x = torch.from_numpy(rng.standard_normal((2, 5000)).astype(np.float32)).cuda()
    want = CHAIN.process(x, FS)
    CHAIN.process(x, FS, out=x)
    assert torch.equal(x, want)


def test_float64_cuda_tensors_in_and_out():
    torch = _torch_cuda_or_skip()
    if torch is None:
        return

    rng = np.random.default_rng(6)
    # IIR only: float64 on the device, within 1e-10 of SciPy's peak, a cascade float32
    # declines (the shared reference case 023) included.
    hard = ferrofx.Chebyshev1.bandstop(715.08, 2461.27, 12, ripple_db=1.12)
    for chain in (CHAIN, hard):
        for shape in [(48_000,), (2, 100_000), (3, 2, 30_000)]:
            x64 = rng.standard_normal(shape)
            x = torch.from_numpy(x64).cuda()
            y = chain.process(x, FS)
            assert y.device == x.device and y.dtype == torch.float64 and tuple(y.shape) == shape
            ref = x64
            for d in chain.design(FS):
                ref = ss.sosfilt(d["sos"], ref, axis=-1)
            err = np.abs(y.cpu().numpy() - ref).max() / np.abs(ref).max()
            print(f"torch float64 {shape}: {err:.2e} of the peak from SciPy's float64")
            assert err <= 1e-10, err
            assert torch.equal(x, torch.from_numpy(x64).cuda()), "the input was left alone"
    # in place
    x = torch.from_numpy(rng.standard_normal((2, 5000))).cuda()
    want = hard.process(x, FS)
    hard.process(x, FS, out=x)
    assert torch.equal(x, want)
    # With a FIR stage: the float32 path, widened (the same bits as a float32 tensor's).
    mixed = CHAIN | ferrofx.Fir.lowpass(31, 8000)
    x = torch.from_numpy(rng.standard_normal((2, 40_000))).cuda()
    y = mixed.process(x, FS)
    assert y.dtype == torch.float64 and torch.equal(y, mixed.process(x.float(), FS).double())


def test_a_device_stream_split_into_blocks_equals_one_call_bit_for_bit():
    torch = _torch_cuda_or_skip()
    if torch is None:
        return

    x = torch.from_numpy(np.random.default_rng(3).standard_normal((2, 200_000)).astype(np.float32)).cuda()
    one = CHAIN.stream(FS, 2).process(x)
    s = CHAIN.stream(FS, 2)
    cuts = [0, 1, 4096, 70_000, 70_001, 150_000, 200_000]
    parts = [s.process(x[:, a:b].contiguous()) for a, b in zip(cuts, cuts[1:])]
    assert torch.equal(torch.cat(parts, dim=1), one)
    with raises(ValueError, match="lives on cuda"):
        s.process(x[:, :100].cpu().numpy())
    # A (batch, channels, samples) block's rows are the stream's channels; a one-channel
    # stream takes (samples,).
    b = CHAIN.stream(FS, 2)
    assert torch.equal(b.process(x.reshape(2, 1, -1)[:, :, :70_000].contiguous()).reshape(2, -1), one[:, :70_000])
    mono = CHAIN.stream(FS, 1)
    assert torch.equal(mono.process(x[0, :70_000].contiguous()), one[0, :70_000])
    # Another unit: blocks of it (no work repeated) and other splits equal one call too.
    whole = CHAIN.stream(FS, 2, unit_frames=4096).process(x)
    for cut in (4096, 1000):
        s = CHAIN.stream(FS, 2, unit_frames=4096)
        parts = [s.process(x[:, a:a + cut].contiguous()) for a in range(0, x.shape[1], cut)]
        assert torch.equal(torch.cat(parts, dim=1), whole), cut
    assert (whole - one).abs().max() <= 1e-4 * one.abs().max()


def test_half_precision_cuda_tensors_compute_in_float32():
    # float16 and bfloat16 CUDA tensors (which __cuda_array_interface__ shows alike, as
    # "<f2"): widened to float32 on the device, filtered, rounded back, as on the host.
    torch = _torch_cuda_or_skip()
    if torch is None:
        return

    x = torch.from_numpy(np.random.default_rng(5).standard_normal((2, 30_000)).astype(np.float32)).cuda()
    for dtype in (torch.float16, torch.bfloat16):
        h = x.to(dtype)
        want = CHAIN.process(h.float(), FS)
        y = CHAIN.process(h, FS)
        assert y.dtype == dtype and y.is_cuda and torch.equal(y, want.to(dtype))
        out = torch.empty_like(h)
        assert CHAIN.process(h, FS, out=out) is out and torch.equal(out, y)
        s = CHAIN.stream(FS, 2)
        parts = [s.process(h[:, a:a + 10_000].contiguous()) for a in range(0, 30_000, 10_000)]
        assert torch.cat(parts, dim=1).dtype == dtype
        assert torch.equal(torch.cat(parts, dim=1), CHAIN.stream(FS, 2).process(h.float()).to(dtype))


def test_cupy_arrays_in_and_out():
    try:
        import cupy
    except ImportError:
        if pytest:
            pytest.skip("CuPy is not installed")
        return
    if not _cuda_present():
        return
    x64 = np.random.default_rng(4).standard_normal((2, 50_000))
    y = CHAIN.process(cupy.asarray(x64.astype(np.float32)), FS)
    assert isinstance(y, cupy.ndarray)
    ref = _reference(x64)
    assert np.abs(cupy.asnumpy(y) - ref).max() / np.abs(ref).max() <= 1e-4


def test_jax_arrays_in_and_out():
    # JAX on the GPU: read through DLPack or its __cuda_array_interface__, the result a
    # JAX array again (its namespace's from_dlpack).
    if not _cuda_present():
        if pytest:
            pytest.skip("no CUDA device with PyTorch here")
        return
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        if pytest:
            pytest.skip("JAX is not installed")
        return
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        return
    x64 = np.random.default_rng(7).standard_normal((2, 50_000))
    x = jax.device_put(jnp.asarray(x64.astype(np.float32)), gpus[0])
    y = CHAIN.process(x, FS)
    assert isinstance(y, jax.Array), type(y)
    ref = _reference(x64)
    err = np.abs(np.asarray(y, dtype=np.float64) - ref).max() / np.abs(ref).max()
    print(f"jax {x.shape}: {err:.2e} of the peak from SciPy's float64")
    assert err <= 1e-4, err


if __name__ == "__main__":
    for name, f in list(globals().items()):
        if name.startswith("test_") and callable(f):
            f()
            print(f"{name}: ok")


def test_a_device_streams_unit_is_the_callers_choice():
    # Chain.stream's unit_frames reaches the resident chain (here the core's entry point
    # is recorded in place of opening a device); bad values are refused by name.
    calls = []

    class Recorder:
        def __init__(self, core):
            self.core = core

        def __getattr__(self, name):
            return getattr(self.core, name)

        def device_stream(self, fs, rows, unit, ordinal):
            calls.append((fs, rows, unit, ordinal))
            raise RuntimeError("recorded")

    for given, want in [(None, 1 << 16), (4096, 4096), (np.int64(1), 1)]:
        s = CHAIN.stream(FS, 2, unit_frames=given)
        s._chain = ferrofx.Chain.__new__(ferrofx.Chain)
        s._chain._core = Recorder(CHAIN._core)
        with raises(RuntimeError, match="recorded"):
            s.process(FakeDeviceArray((2, 100)))
        assert calls[-1] == (FS, 2, want, 0)
    for bad in [0, -5, 2.5, "64", True]:
        with raises(ValueError, match="unit_frames must be a positive whole number"):
            CHAIN.stream(FS, 2, unit_frames=bad)
