"""SciPy's filtering functions on device arrays: `ferrofx.signal`'s `sosfilt`, `lfilter`,
`sosfiltfilt` and `filtfilt` given a CUDA tensor, a CuPy array or another CUDA array
(`__cuda_array_interface__`, DLPack) filter it where it lives and give back the same kind
on the same device, on the caller's current stream.

How: the array framework's own operations (PyTorch's or CuPy's) move the filtered axis
last into a new contiguous float64 array on the device (the caller's data is never
written), the cascade runs there in float64 in place (`_ferrofx.sosfilt_device64`: the
GPU paths' delta form in double precision, within 1e-10 of SciPy's float64 result's peak
on the steepest designs tested; not SciPy's bits), and the framework moves the axis back
and casts to SciPy's result type. Padding, flipping and slicing for the zero-phase
functions are framework operations on the device too. Only coefficients, initial
states (`zi`, `zf`) and each row's two edge samples of the zero-phase functions pass
through host memory (a few numbers per row; reading `zf` waits for the device).

What SciPy does that the device does not, refused by name: complex data, transfer
functions of order above 2 in `lfilter` / `filtfilt` (their direct form is not what the
device kernels run: `scipy.signal.tf2sos` and `sosfilt` do it), Gustafsson's method in
`filtfilt`.

The functions here take an `ops` object (the framework: `TorchOps`, `CupyOps`, or
`NumpyOps`, which the tests use to run this glue on the host) and a `run` function that
filters a contiguous float64 `(rows, frames)` array in place; on a GPU that is
`device_run`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _from_dlpack(x: Any) -> Any:
    """A DLPack CUDA array as a torch tensor (else a CuPy array) on the same memory."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        return torch.from_dlpack(x)
    try:
        import cupy
    except ImportError:
        raise ValueError("a DLPack CUDA array is read through PyTorch or CuPy, and neither is installed: "
                         "install one, or pass an array offering __cuda_array_interface__") from None
    return cupy.from_dlpack(x)


def _namespace_from_dlpack(x: Any) -> Any:
    """The producer's `from_dlpack` (its array API namespace's), to give a result back
    as its kind; None where it names none."""
    ns = getattr(x, "__array_namespace__", None)
    if ns is None:
        return None
    try:
        return getattr(ns(), "from_dlpack", None)
    except Exception:  # a namespace that cannot be had: the result stays torch/CuPy
        return None


def _torch_on_cuda(x: Any) -> bool:
    """For a torch tensor: True on a CUDA device, False on the CPU; another device is
    refused by name."""
    if x.device.type == "cpu":
        return False
    if x.device.type != "cuda":
        raise ValueError(f"ferrofx filters tensors on the CPU or on CUDA devices; this one is on {x.device}")
    return True


def _dlpack_on_cuda(x: Any) -> bool:
    """For an array without `__cuda_array_interface__`: True where its DLPack device is
    CUDA, False for host data (or no DLPack at all); another device is refused by name."""
    dl = getattr(x, "__dlpack_device__", None)
    if dl is None or int(dl()[0]) in (1, 3):  # kDLCPU, kDLCUDAHost: host data
        return False
    if int(dl()[0]) != 2:  # kDLCUDA
        raise ValueError(f"a DLPack array on device {tuple(dl())}: ferrofx filters CUDA arrays (DLPack device type 2) and host arrays")
    return True


class NumpyOps:
    """The operations the device functions use, on NumPy arrays (the tests run the device
    glue on the host with these and a host `run`)."""

    name = "numpy"

    def dtype(self, a: Any) -> np.dtype:
        return a.dtype

    def shape(self, a: Any) -> tuple:
        return tuple(a.shape)

    def work64(self, a: Any, axis: int) -> Any:
        """A new contiguous float64 array with `axis` last (the caller's stays untouched)."""
        return np.array(np.moveaxis(a, axis, -1), dtype=np.float64, order="C", copy=True)

    def restore(self, y: Any, axis: int, dtype: np.dtype) -> Any:
        return np.moveaxis(y, -1, axis).astype(dtype, copy=False)

    def native_last(self, a: Any, axis: int) -> Any:
        """`axis` last, contiguous, in the array's own type (possibly the caller's memory:
        only read)."""
        return np.ascontiguousarray(np.moveaxis(a, axis, -1))

    def as64(self, a: Any) -> Any:
        """A new contiguous float64 copy."""
        return np.array(a, dtype=np.float64, order="C", copy=True)

    def to_host(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def from_host(self, h: np.ndarray, like: Any) -> Any:
        return np.asarray(h)

    def flip_last(self, a: Any) -> Any:
        return np.ascontiguousarray(a[..., ::-1])

    def cat_last(self, parts: list) -> Any:
        return np.ascontiguousarray(np.concatenate(parts, axis=-1))

    def repeat_last(self, a: Any, n: int) -> Any:
        return np.repeat(a, n, axis=-1)

    def contiguous(self, a: Any) -> Any:
        return np.ascontiguousarray(a)


class TorchOps(NumpyOps):
    """PyTorch's operations (CUDA tensors; CPU tensors in the tests)."""

    name = "torch"
    _DTYPES = None

    def __init__(self) -> None:
        import torch

        self.torch = torch
        if TorchOps._DTYPES is None:
            TorchOps._DTYPES = {getattr(torch, n): np.dtype(n) for n in (
                "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                "complex64", "complex128")}

    def dtype(self, a: Any) -> np.dtype:
        try:
            return TorchOps._DTYPES[a.dtype]
        except KeyError:
            raise ValueError(f"a {a.dtype} tensor has no NumPy dtype for SciPy's result type; convert it to float32 or float64") from None

    def work64(self, a: Any, axis: int) -> Any:
        return a.detach().movedim(axis, -1).to(dtype=self.torch.float64, memory_format=self.torch.contiguous_format, copy=True)

    def restore(self, y: Any, axis: int, dtype: np.dtype) -> Any:
        return y.movedim(-1, axis).to(getattr(self.torch, dtype.name))

    def native_last(self, a: Any, axis: int) -> Any:
        return a.detach().movedim(axis, -1).contiguous()

    def as64(self, a: Any) -> Any:
        return a.to(dtype=self.torch.float64, memory_format=self.torch.contiguous_format, copy=True)

    def to_host(self, a: Any) -> np.ndarray:
        return a.detach().cpu().numpy() if _is_torch(a) else np.asarray(a)

    def from_host(self, h: np.ndarray, like: Any) -> Any:
        return self.torch.as_tensor(np.ascontiguousarray(h), device=like.device)

    def flip_last(self, a: Any) -> Any:
        return a.flip(-1).contiguous()

    def cat_last(self, parts: list) -> Any:
        return self.torch.cat(parts, dim=-1).contiguous()

    def repeat_last(self, a: Any, n: int) -> Any:
        return a.repeat_interleave(n, dim=-1)

    def contiguous(self, a: Any) -> Any:
        return a.contiguous()

    def ptr(self, a: Any) -> int:
        return a.data_ptr()

    def ordinal(self, a: Any) -> int:
        return a.device.index or 0

    def stream(self, a: Any) -> int:
        return self.torch.cuda.current_stream(a.device).cuda_stream


class CupyOps(NumpyOps):
    """CuPy's operations."""

    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy

    def work64(self, a: Any, axis: int) -> Any:
        with self.cupy.cuda.Device(a.device.id):
            return self.cupy.array(self.cupy.moveaxis(a, axis, -1), dtype=self.cupy.float64, order="C", copy=True)

    def restore(self, y: Any, axis: int, dtype: np.dtype) -> Any:
        return self.cupy.moveaxis(y, -1, axis).astype(dtype, copy=False)

    def native_last(self, a: Any, axis: int) -> Any:
        with self.cupy.cuda.Device(a.device.id):
            return self.cupy.ascontiguousarray(self.cupy.moveaxis(a, axis, -1))

    def as64(self, a: Any) -> Any:
        with self.cupy.cuda.Device(a.device.id):
            return self.cupy.array(a, dtype=self.cupy.float64, order="C", copy=True)

    def to_host(self, a: Any) -> np.ndarray:
        return self.cupy.asnumpy(a) if type(a).__module__.split(".")[0] == "cupy" else np.asarray(a)

    def from_host(self, h: np.ndarray, like: Any) -> Any:
        with self.cupy.cuda.Device(like.device.id):
            return self.cupy.asarray(h)

    def flip_last(self, a: Any) -> Any:
        return self.cupy.ascontiguousarray(a[..., ::-1])

    def cat_last(self, parts: list) -> Any:
        return self.cupy.ascontiguousarray(self.cupy.concatenate(parts, axis=-1))

    def repeat_last(self, a: Any, n: int) -> Any:
        return self.cupy.repeat(a, n, axis=-1)

    def contiguous(self, a: Any) -> Any:
        return self.cupy.ascontiguousarray(a)

    def ptr(self, a: Any) -> int:
        return int(a.data.ptr)

    def ordinal(self, a: Any) -> int:
        return int(a.device.id)

    def stream(self, a: Any) -> int:
        with self.cupy.cuda.Device(a.device.id):
            return int(self.cupy.cuda.get_current_stream().ptr)


def device_framework_array(x: Any) -> "Optional[tuple[NumpyOps, Any, Any]]":
    """`x` as `(ops, array, back)` where it is a CUDA array: a torch CUDA tensor or a CuPy
    array as it is, another CUDA array (`__cuda_array_interface__` or DLPack only) read
    through PyTorch (else CuPy) on the same memory, `back` its producer's `from_dlpack`
    for the result (None: the result stays a tensor or CuPy array). None for host data."""
    if _is_torch(x):
        return (TorchOps(), x, None) if _torch_on_cuda(x) else None
    if type(x).__module__.split(".")[0] == "cupy" and hasattr(x, "__cuda_array_interface__"):
        return CupyOps(), x, None
    if hasattr(x, "__cuda_array_interface__"):
        back = _namespace_from_dlpack(x)
        for name in ("torch", "cupy"):
            try:
                module = __import__(name)
            except ImportError:
                continue
            try:
                if name == "torch":
                    return TorchOps(), module.as_tensor(x, device="cuda"), back
                return CupyOps(), module.asarray(x), back
            except Exception as e:  # no driver, no device, memory of no device
                raise ValueError(f"a CUDA array (__cuda_array_interface__) could not be read through {name}: {e}") from e
        raise ValueError("a CUDA array (__cuda_array_interface__) is filtered through PyTorch or CuPy, and neither is installed")
    if not _dlpack_on_cuda(x):
        return None
    a = _from_dlpack(x)
    return (TorchOps() if _is_torch(a) else CupyOps()), a, _namespace_from_dlpack(x)


# run(sos_rows, y, zi_flat) filters the contiguous float64 (rows, frames) array y in place
# through the normalised sections `sos_rows` ((n, 6) float64), from zi_flat (rows x n x 2
# values in SciPy's form; None: zero state), and returns zf in that form (None without zi).
Run = Callable[[np.ndarray, Any, "Optional[np.ndarray]"], "Optional[np.ndarray]"]


def device_run(ops: NumpyOps) -> Run:
    """The GPU's `run` for arrays of `ops`' framework: `_ferrofx.sosfilt_device64` on the
    array's device and the caller's current stream."""
    from . import _ferrofx

    def run(sos_rows: np.ndarray, y: Any, zi: "Optional[np.ndarray]") -> "Optional[np.ndarray]":
        rows, frames = int(y.shape[0]), int(y.shape[1])
        return _ferrofx.sosfilt_device64(np.ascontiguousarray(sos_rows, dtype=np.float64), ops.ptr(y), rows, frames,
                                         ops.ordinal(y), ops.stream(y), zi)

    return run


def _no_complex(dtype: np.dtype) -> None:
    if dtype.kind == "c":
        raise NotImplementedError("complex data on a device array is not filtered on the device "
                                  "(pass a host array, or filter the real and imaginary parts)")


def check_dtype(dtype: np.dtype, message: str) -> None:
    """SciPy's result types, as its functions check them (float32 and float64 here: a device
    has no long double; complex refused by name)."""
    _no_complex(dtype)
    if dtype.char not in "fd":
        raise NotImplementedError(message)


def _as_rows(ops: NumpyOps, x: Any, axis: int) -> "tuple[Any, tuple]":
    """`x` as a new contiguous float64 `(rows, frames)` array, `axis` last, and the moved
    shape."""
    y = ops.work64(x, axis)
    moved = ops.shape(y)
    return y.reshape(int(np.prod(moved[:-1], dtype=np.int64)), moved[-1]), moved


def _run_rows(run: Run, sos: np.ndarray, y: Any, zi: "Optional[np.ndarray]") -> "Optional[np.ndarray]":
    """`run`, except on no samples (an empty array has no device address): `zf` is `zi`."""
    if y.shape[0] == 0 or y.shape[1] == 0:
        return zi
    return run(sos, y, zi)


def _zi_rows(zi: np.ndarray, axis: int, n_sections: int) -> np.ndarray:
    """`sosfilt`'s `zi` (`(n_sections, ..., 2, ...)`, the 2 at `axis + 1`) as flat rows of
    `n_sections x 2` values in the moved rows' order."""
    return np.ascontiguousarray(np.moveaxis(zi, [0, axis + 1], [-2, -1]), dtype=np.float64).reshape(-1)


def sosfilt(ops: NumpyOps, run: Run, sos: np.ndarray, x: Any, axis: int, zi: Any) -> Any:
    """`scipy.signal.sosfilt` on a device array (`sos` validated by the caller, on the host)."""
    shape = ops.shape(x)
    if len(shape) == 0:
        raise ValueError("x must be at least 1-D")
    n_sections = sos.shape[0]
    x_zi_shape = list(shape)
    x_zi_shape[axis] = 2
    x_zi_shape = tuple([n_sections] + x_zi_shape)
    zi_host = ops.to_host(zi) if zi is not None else None
    dtype = np.result_type(*([sos.dtype, ops.dtype(x)] + ([np.asarray(zi_host).dtype] if zi is not None else [])))
    check_dtype(dtype, f"input type '{dtype}' not supported")
    axis = axis % len(shape)
    if zi is not None:
        zi_host = np.asarray(zi_host)
        if zi_host.shape != x_zi_shape:
            raise ValueError(
                f"Invalid zi shape. With axis={axis!r}, an input with shape {shape!r}, and an sos array "
                f"with {n_sections} sections, zi must have shape {x_zi_shape!r}, got {zi_host.shape!r}."
            )
        _no_complex(zi_host.dtype)
    y, moved = _as_rows(ops, x, axis)
    zf = _run_rows(run, np.asarray(sos, dtype=np.float64), y, _zi_rows(zi_host, axis, n_sections) if zi is not None else None)
    out = ops.restore(y.reshape(moved), axis, dtype)
    if zi is None:
        return out
    zmoved = tuple(moved[:-1]) + (n_sections, 2)
    zf = np.moveaxis(np.asarray(zf).reshape(zmoved), [-2, -1], [0, axis + 1]).astype(dtype, copy=False)
    return out, ops.from_host(zf, out)


def _section_of(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    """`b / a` of order at most 2 as one normalised section `[b0, b1, b2, 1, a1, a2]`."""
    bb = np.zeros(3)
    aa = np.zeros(3)
    bb[:len(b)] = b
    aa[:len(a)] = a
    return np.concatenate([bb / aa[0], aa / aa[0]])[None, :]


def _order_at_most_2(b: np.ndarray, a: np.ndarray, what: str) -> int:
    k = max(len(a), len(b)) - 1
    if np.iscomplexobj(b) or np.iscomplexobj(a):
        raise NotImplementedError(f"{what} on a device array: complex coefficients are not filtered on the device")
    if k > 2:
        raise NotImplementedError(
            f"{what} on a device array: a transfer function of order {k} is not filtered on the GPU (the device "
            "runs second-order sections, not a direct form of higher order, whose rounding differs); convert it with "
            "scipy.signal.tf2sos and use sosfilt / sosfiltfilt, or pass a host array")
    if len(a) > 1 and a[0] == 0.0:
        raise ValueError("BUG: filter coefficient a[0] == 0 not supported yet")
    return k


def lfilter(ops: NumpyOps, run: Run, b: np.ndarray, a: np.ndarray, x: Any, axis: int, zi: Any) -> Any:
    """`scipy.signal.lfilter` on a device array, for transfer functions of order up to 2
    (one section); higher orders are refused by name."""
    shape = ops.shape(x)
    if len(shape) == 0:
        raise ValueError("x must be at least 1-D")
    zi_host = np.asarray(ops.to_host(zi)) if zi is not None else None
    dtype = np.result_type(*([b, a, np.empty(0, ops.dtype(x))] + ([zi_host] if zi is not None else [])))
    check_dtype(dtype, f"Parameter's dtypes produced result type '{dtype}', which is not supported!")
    k = _order_at_most_2(b, a, "lfilter")
    axis = axis % len(shape)
    if zi is not None:
        if zi_host.ndim != len(shape):
            raise ValueError("object of too small depth for desired array")
        expected = list(shape)
        expected[axis] = k
        for d in range(len(shape)):
            if not (zi_host.shape[d] == expected[d] or (d != axis and zi_host.shape[d] == 1)):
                raise ValueError(f"Unexpected shape for zi: expected {tuple(expected)}, found {zi_host.shape}.")
        zi_host = np.broadcast_to(zi_host, expected)
    if k == 0:
        # A gain: no state.
        y = ops.work64(x, axis) * float(b[0] / a[0])
        out = ops.restore(y, axis, dtype)
        return out if zi is None else (out, ops.from_host(np.asarray(zi_host, dtype=dtype).copy(), out))
    y, moved = _as_rows(ops, x, axis)
    rows = y.shape[0]
    zflat = None
    if zi is not None:
        z = np.ascontiguousarray(np.moveaxis(zi_host, axis, -1), dtype=np.float64).reshape(rows, k)
        zflat = np.zeros((rows, 1, 2))
        zflat[:, 0, :k] = z
        zflat = zflat.reshape(-1)
    zf = _run_rows(run, _section_of(b, a), y, zflat)
    out = ops.restore(y.reshape(moved), axis, dtype)
    if zi is None:
        return out
    zf = np.asarray(zf).reshape(rows, 2)[:, :k]
    zf = np.moveaxis(zf.reshape(tuple(moved[:-1]) + (k,)), -1, axis).astype(dtype, copy=False)
    return out, ops.from_host(zf, out)


def _extend_rows(ops: NumpyOps, y: Any, n: int, kind: "Optional[str]") -> Any:
    """`signal._extend` along the last axis of `(rows, frames)` rows, by the framework."""
    if kind is None or n < 1:
        return y
    left = ops.flip_last(y[:, 1:n + 1])
    right = ops.flip_last(y[:, -(n + 1):-1])
    first, last = y[:, 0:1], y[:, -1:]
    if kind == "odd":
        left, right = 2 * first - left, 2 * last - right
    elif kind == "constant":
        left, right = ops.repeat_last(first, n), ops.repeat_last(last, n)
    return ops.cat_last([left, y, right])


def zero_phase(ops: NumpyOps, run: Run, sos: np.ndarray, zi_unit: np.ndarray, x: Any, axis: int, edge: int,
               padtype: "Optional[str]", dtype: np.dtype) -> Any:
    """`sosfiltfilt` / `filtfilt`'s padding method on a device array: `sos` (normalised
    sections) forward from `zi_unit` (`(n, 2)`) times each row's first padded sample,
    backward from it times the forward output's last, the padding cut off (`edge`
    samples each end, checked by the caller; the padding computed in the input's type, as
    SciPy's)."""
    shape = ops.shape(x)
    axis = axis % len(shape)
    # Padded in the input's own type, as SciPy pads, then float64.
    native = ops.native_last(x, axis)
    moved = ops.shape(native)
    rows = native.reshape(int(np.prod(moved[:-1], dtype=np.int64)), moved[-1])
    ext = ops.as64(_extend_rows(ops, rows, edge, padtype if edge > 0 else None))
    x0 = np.asarray(ops.to_host(ext[:, 0]), dtype=np.float64)
    _run_rows(run, sos, ext, (x0[:, None, None] * zi_unit[None]).reshape(-1))
    y0 = np.asarray(ops.to_host(ext[:, -1]), dtype=np.float64)
    back = ops.flip_last(ext)
    _run_rows(run, sos, back, (y0[:, None, None] * zi_unit[None]).reshape(-1))
    y = ops.flip_last(back)
    if edge > 0:
        y = ops.contiguous(y[:, edge:-edge])
    return ops.restore(y.reshape(tuple(moved[:-1]) + (ops.shape(y)[-1],)), axis, dtype)
