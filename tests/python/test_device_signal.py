"""SciPy's filtering functions on device arrays (`ferrofx.signal` given a CUDA tensor, a
CuPy array or another CUDA array: `ferrofx/_on_device.py`).

Without a GPU (this project's CI) the device functions' glue runs on the host: the same
code with NumPy's operations (and PyTorch's on CPU tensors where PyTorch is installed)
and a host `run` that filters the rows with SciPy's own arithmetic, against
`scipy.signal` over seeded shapes, axes, dtypes, initial states, padding types and
lengths; SciPy's errors and the refusals (orders above 2 in `lfilter`/`filtfilt`, complex
data, Gustafsson's method) by message. With CUDA (the device check) the real functions
run on CUDA tensors and CuPy arrays against SciPy's float64 result (within 1e-10 of its
peak) and come back as the same kind on the same device."""

import numpy as np
import pytest
import scipy.signal as ss

import ferrofx
from ferrofx import _ferrofx, _on_device


def host_run(sos, y, zi):
    """The device `run` on the host: SciPy's arithmetic (`sosfilt64`), in place."""
    assert y.dtype == np.float64 and y.ndim == 2 and y.flags.c_contiguous
    z = None if zi is None else np.array(zi, dtype=np.float64).reshape(y.shape[0], sos.shape[0], 2)
    out, zf = _ferrofx.sosfilt64(np.ascontiguousarray(sos, dtype=np.float64), y, z)
    y[...] = out
    return None if zi is None else np.asarray(zf).reshape(-1)


def torch_run(sos, y, zi):
    return host_run(sos, y.numpy(), zi)


def frameworks():
    out = [(_on_device.NumpyOps(), np.asarray, host_run, np.asarray)]
    try:
        import torch

        out.append((_on_device.TorchOps(), torch.from_numpy, torch_run, lambda t: t.numpy()))
    except ImportError:
        pass
    return out


def close(got, want, tol=1e-12):
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-300)
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale if want.size else 0.0
    assert err <= tol, err


def random_sos(rng, n):
    z, p, k = ss.butter(n, rng.uniform(0.05, 0.8), output="zpk") if rng.uniform() < 0.5 else ss.cheby1(n, 1, rng.uniform(0.05, 0.8), output="zpk")
    return ss.zpk2sos(z, p, k)


def test_sosfilt_glue_equals_scipy_over_shapes_axes_dtypes_and_states():
    rng = np.random.default_rng(7)
    for ops, wrap, run, unwrap in frameworks():
        for case in range(40):
            ndim = int(rng.integers(1, 4))
            shape = tuple(int(n) for n in rng.integers(1, 6, ndim))
            axis = int(rng.integers(-ndim, ndim))
            shape = list(shape)
            shape[axis] = int(rng.integers(0, 300)) if case % 7 else 0
            shape = tuple(shape)
            xdtype = [np.float64, np.float32, np.int16][case % 3]
            sos = random_sos(rng, int(rng.integers(1, 7)))
            if case % 5 == 0:
                sos = sos.astype(np.float32)
            x = (rng.standard_normal(shape) * 100).astype(xdtype)
            with_zi = case % 2 == 0
            zshape = list(shape)
            zshape[axis] = 2
            zi = rng.standard_normal([sos.shape[0]] + zshape) if with_zi else None
            if x.size == 0:
                # SciPy raises on an empty signal (NumPy cannot reshape it into rows); the
                # device functions give the empty result and zf = zi.
                dtype = np.result_type(sos, x, *([zi] if with_zi else []))
                want = np.empty(shape, dtype)
                want = (want, zi.astype(dtype)) if with_zi else want
            else:
                want = ss.sosfilt(sos, x, axis=axis, zi=zi)
            got = _on_device.sosfilt(ops, run, np.asarray(sos), wrap(x), axis, wrap(zi) if with_zi else None)
            what = f"{ops.name} case {case}: shape {shape} axis {axis} {np.dtype(xdtype)} sos {sos.dtype} zi {with_zi}"
            tol = 1e-6 if np.result_type(sos, x) == np.float32 else 1e-12
            if with_zi:
                close(unwrap(got[0]), want[0], tol)
                close(unwrap(got[1]), want[1], tol)
            else:
                close(unwrap(got), want, tol)
            assert unwrap(wrap(x)).dtype == xdtype, what  # the input untouched


def test_lfilter_glue_equals_scipy_for_orders_up_to_two():
    rng = np.random.default_rng(8)
    for ops, wrap, run, unwrap in frameworks():
        for case in range(30):
            k = case % 3
            b = rng.standard_normal(k + 1 - (case % 2 if k else 0))
            a = np.concatenate([[rng.uniform(0.5, 2)], rng.uniform(-0.3, 0.3, k)])
            shape = (3, int(rng.integers(1, 200)), 2)
            axis = int(rng.integers(-3, 3))
            x = rng.standard_normal(shape)
            zshape = list(shape)
            zshape[axis] = k
            if case % 4 == 1 and k:
                # Size-1 dimensions broadcast, as SciPy allows.
                zshape = [1 if (d != axis % 3) else zshape[d] for d in range(3)]
            zi = rng.standard_normal(zshape) if case % 2 == 0 or case % 4 == 1 else None
            want = ss.lfilter(b, a, x, axis=axis, zi=zi)
            got = _on_device.lfilter(ops, run, b, a, wrap(x), axis, wrap(zi) if zi is not None else None)
            if zi is None:
                close(unwrap(got), want)
            else:
                close(unwrap(got[0]), want[0])
                close(unwrap(got[1]), want[1])


@pytest.mark.parametrize("padtype", ["odd", "even", "constant", None])
def test_zero_phase_glue_equals_scipy(padtype):
    rng = np.random.default_rng(9)
    for ops, wrap, run, unwrap in frameworks():
        for case in range(12):
            sos = random_sos(rng, int(rng.integers(1, 6)))
            shape = [2, 3, 4][: int(rng.integers(1, 4))]
            axis = int(rng.integers(-len(shape), len(shape)))
            shape[axis] = int(rng.integers(40, 400))
            x = rng.standard_normal(shape).astype(np.float32 if case % 3 == 0 else np.float64)
            padlen = None if case % 2 else int(rng.integers(0, 30))
            want = ss.sosfiltfilt(sos, x, axis=axis, padtype=padtype, padlen=padlen)
            n_sections = sos.shape[0]
            ntaps = 2 * n_sections + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
            edge = ferrofx.signal._pad_edge(padtype, padlen, shape[axis], ntaps)
            got = _on_device.zero_phase(ops, run, sos, ss.sosfilt_zi(sos), wrap(x), axis, edge, padtype,
                                        np.result_type(sos, x))
            close(unwrap(got), want)
            # filtfilt through one section (orders 1 and 2; SciPy's filtfilt refuses a
            # one-coefficient a).
            k = 1 + case % 2
            b = rng.standard_normal(k + 1)
            a = np.concatenate([[1.0], rng.uniform(-0.3, 0.3, k)])
            want = ss.filtfilt(b, a, x, axis=axis, padtype=padtype, padlen=padlen)
            zi = np.zeros((1, 2))
            zi[0, :k] = ss.lfilter_zi(b, a)
            edge = ferrofx.signal._pad_edge(padtype, padlen, shape[axis], max(len(a), len(b)))
            got = _on_device.zero_phase(ops, run, _on_device._section_of(b, a), zi, wrap(x), axis, edge, padtype,
                                        np.result_type(b, a, x))
            close(unwrap(got), want)


def test_scipy_errors_and_the_device_refusals_by_message():
    ops, run = _on_device.NumpyOps(), host_run
    sos = ss.butter(4, 0.2, output="sos")
    x = np.zeros((2, 50))
    with pytest.raises(ValueError, match=r"Invalid zi shape\. With axis=1, an input with shape \(2, 50\), and an sos array with 2 sections, zi must have shape \(2, 2, 2\), got \(2, 2\)\."):
        _on_device.sosfilt(ops, run, sos, x, -1, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="x must be at least 1-D"):
        _on_device.sosfilt(ops, run, sos, np.float64(1.0), -1, None)
    with pytest.raises(NotImplementedError, match="order 3 is not filtered on the GPU.*tf2sos"):
        _on_device.lfilter(ops, run, np.ones(4), np.array([1.0, 0.1, 0.1, 0.1]), x, -1, None)
    with pytest.raises(NotImplementedError, match="complex"):
        _on_device.sosfilt(ops, run, sos, x + 1j, -1, None)
    # SciPy's result-type rule: integer sections and data give an integer type, refused.
    with pytest.raises(NotImplementedError, match="input type 'int64' not supported"):
        _on_device.sosfilt(ops, run, np.array([[1, 0, 0, 1, 0, 0]]), np.zeros((2, 5), np.int64), -1, None)
    with pytest.raises(NotImplementedError, match="Parameter's dtypes produced result type 'int64', which is not supported!"):
        _on_device.lfilter(ops, run, np.array([1, 1]), np.array([1]), np.zeros(5, np.int64), -1, None)
    with pytest.raises(ValueError, match="Unexpected shape for zi: expected \\(2, 1\\), found \\(2, 3\\)"):
        _on_device.lfilter(ops, run, np.ones(2), np.ones(1), x, -1, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="The length of the input vector x must be greater than padlen, which is 60"):
        ferrofx.signal._pad_edge("odd", 60, 50, 9)
    with pytest.raises(ValueError, match="Unknown value 'bad' given to padtype"):
        ferrofx.signal._pad_edge("bad", None, 50, 9)


def test_a_cuda_array_interface_without_a_framework_or_device_is_a_clear_error():
    class Fake:
        __cuda_array_interface__ = {"shape": (2, 100), "typestr": "<f4", "data": (0x7F0000001000, False), "version": 3}

    try:
        import torch  # noqa: F401

        have = True
    except ImportError:
        have = False
    try:
        import cupy  # noqa: F401

        have = True
    except ImportError:
        pass
    sos = ss.butter(2, 0.2, output="sos")
    with pytest.raises(ValueError) as e:
        ferrofx.signal.sosfilt(sos, Fake())
    if not have:
        assert "is filtered through PyTorch or CuPy, and neither is installed" in str(e.value)
    else:
        assert "a CUDA array (__cuda_array_interface__) could not be read through" in str(e.value)


def _cuda():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


cuda = pytest.mark.skipif(not _cuda(), reason="no CUDA device (the device check runs these)")


@cuda
def test_the_functions_on_cuda_tensors_match_scipy_and_stay_on_the_device():
    import torch

    rng = np.random.default_rng(10)
    sos = ss.ellip(6, 0.5, 60, 0.1, output="sos")
    b, a = ss.butter(2, 0.1)
    for shape, axis in [((100_000,), -1), ((3, 40_000), 1), ((40_000, 3), 0), ((2, 2, 30_000), -1)]:
        x = rng.standard_normal(shape)
        for dtype in (torch.float64, torch.float32):
            xt = torch.from_numpy(x).to("cuda", dtype)
            xs = xt.double().cpu().numpy()
            zshape = list(shape)
            zshape[axis] = 2
            zi = rng.standard_normal([sos.shape[0]] + zshape)
            for name, got, want in [
                ("sosfilt", ferrofx.signal.sosfilt(sos, xt, axis=axis), ss.sosfilt(sos, xs, axis=axis)),
                ("sosfilt zi", ferrofx.sosfilt(sos, xt, axis=axis, zi=torch.from_numpy(zi).cuda()), ss.sosfilt(sos, xs, axis=axis, zi=zi)),
                ("sosfiltfilt", ferrofx.sosfiltfilt(sos, xt, axis=axis), ss.sosfiltfilt(sos, xs, axis=axis)),
                ("lfilter", ferrofx.lfilter(b, a, xt, axis=axis), ss.lfilter(b, a, xs, axis=axis)),
                ("filtfilt", ferrofx.filtfilt(b, a, xt, axis=axis), ss.filtfilt(b, a, xs, axis=axis)),
            ]:
                outs = got if isinstance(got, tuple) else (got,)
                wants = want if isinstance(want, tuple) else (want,)
                for o, w in zip(outs, wants):
                    assert o.device.type == "cuda" and o.dtype == torch.float64, (name, o.device, o.dtype)
                    err = float(np.max(np.abs(o.cpu().numpy() - w)) / np.max(np.abs(w)))
                    print(f"cuda {name} {shape} axis {axis} from {dtype}: {err:.2e} of the peak from SciPy")
                    assert err <= 1e-10, (name, shape, axis, err)
    with pytest.raises(NotImplementedError, match="tf2sos"):
        ferrofx.lfilter(*ss.butter(4, 0.1), torch.zeros(10, device="cuda"))


@pytest.mark.skipif(not _cuda(), reason="no CUDA device (the device check runs these)")
def test_the_functions_on_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(11)
    sos = ss.butter(8, 0.05, output="sos")
    x = rng.standard_normal((4, 50_000))
    y = ferrofx.signal.sosfilt(sos, cupy.asarray(x))
    assert isinstance(y, cupy.ndarray)
    want = ss.sosfilt(sos, x)
    assert float(np.max(np.abs(cupy.asnumpy(y) - want)) / np.max(np.abs(want))) <= 1e-10
    y = ferrofx.signal.sosfiltfilt(sos, cupy.asarray(x), axis=-1)
    want = ss.sosfiltfilt(sos, x)
    assert float(np.max(np.abs(cupy.asnumpy(y) - want)) / np.max(np.abs(want))) <= 1e-10
