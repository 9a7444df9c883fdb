"""SciPy's linear filtering functions with SciPy's signatures and semantics.

`sosfilt`, `sosfilt_zi`, `sosfiltfilt`, `lfilter`, `lfilter_zi` and `filtfilt` take the
arguments `scipy.signal`'s do and give SciPy's results (SciPy's own test classes for
them run against these: tests/python/test_scipy_suite.py), so a script switches by its
import line:

    from ferrofx.signal import sosfilt, sosfiltfilt, lfilter, filtfilt

The filtering runs in FerroFX's Rust extension in float64 with SciPy's operations in
SciPy's order, so `sosfilt` and `lfilter` give SciPy's bits (and the zero-phase functions
SciPy's result to rounding in NumPy's parts); the speed comes from rows side by side in
the SIMD lanes, several sections of a cascade in flight at once, and blocks of rows over
the cores. These functions handle shapes, axes, initial conditions, padding, dtypes and
errors the way SciPy does. Differences, on purpose and named: float32 data is filtered in
float64 and rounded once at the end (SciPy computes in float32); long double
(`np.longdouble`) data is filtered in float64; complex data is filtered as its real and
imaginary parts (exact for real coefficients; complex coefficients are refused); object
arrays are refused (NotImplementedError).

Device arrays (CUDA tensors, CuPy arrays, other CUDA arrays) are filtered on their device
and come back there as their kind (`_on_device`: float64 on the GPU, within 1e-10 of
SciPy's float64 result's peak rather than SciPy's bits; orders above 2 in `lfilter` /
`filtfilt`, complex data and `method="gust"` refused there by name).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _ferrofx
from . import _on_device

__all__ = ["sosfilt", "sosfilt_zi", "sosfiltfilt", "lfilter", "lfilter_zi", "filtfilt", "sosfilt_backward"]

# Above this many taps a FIR from zero state runs by FFT (float64 rounding either way).
_FIR_FFT_MIN_TAPS = 129


def _as_real_pair(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """float64 rows of the real part, and of the imaginary part for complex data (views
    where they can be: the extension copies any strides into its output as it filters)."""
    if np.iscomplexobj(arr):
        return np.asarray(arr.real, dtype=np.float64), np.asarray(arr.imag, dtype=np.float64)
    return np.asarray(arr, dtype=np.float64), None


def _real_coefficients(c: np.ndarray, name: str) -> np.ndarray:
    if np.iscomplexobj(c):
        if np.any(c.imag != 0):
            raise NotImplementedError(f"ferrofx filters with real coefficients only; {name} has a non-zero imaginary part")
        c = c.real
    return np.asarray(c, dtype=np.float64)


def _check_dtype(dtype: np.dtype, message: str) -> None:
    if dtype.char not in "fdgFDG":
        if dtype.char == "O":
            raise NotImplementedError("ferrofx does not filter object arrays (SciPy's Python-level path for them is not reproduced)")
        raise NotImplementedError(message)


def _validate_x(x: Any) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    return x


def _validate_sos(sos: Any) -> tuple[np.ndarray, int]:
    sos = np.atleast_2d(sos)
    if sos.ndim != 2:
        raise ValueError("sos array must be 2D")
    n_sections, m = sos.shape
    if m != 6:
        raise ValueError("sos array must be shape (n_sections, 6)")
    if not (sos[:, 3] == 1).all():
        raise ValueError("sos[:, 3] should be all ones")
    return sos, n_sections


def _rows(x: np.ndarray, axis: int) -> tuple[np.ndarray, tuple]:
    """`x` with `axis` last, as 2-D rows, and the moved shape."""
    moved = np.moveaxis(x, axis, -1)
    # The row count spelled out: -1 cannot be inferred where the frames axis is empty.
    return moved.reshape(int(np.prod(moved.shape[:-1], dtype=np.int64)), moved.shape[-1]), moved.shape


def _device_input(x: Any) -> Any:
    """`(ops, array, back)` for a device array (`_on_device.device_framework_array`), None
    for host data."""
    return _on_device.device_framework_array(x)


def _host(c: Any) -> Any:
    """Coefficients or states given as device arrays, read to the host (a few numbers)."""
    dev = _on_device.device_framework_array(c) if c is not None else None
    return dev[0].to_host(dev[1]) if dev is not None else c


def _given_back(back: Any, out: Any) -> Any:
    """A device result in the caller's kind (a DLPack producer's own where it takes DLPack
    back)."""
    if back is None:
        return out
    return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)


def sosfilt(sos: Any, x: Any, axis: int = -1, zi: Any = None) -> Any:
    """`scipy.signal.sosfilt`: filters `x` along `axis` with second-order sections `sos`
    (rows `[b0, b1, b2, 1, a1, a2]`). With `zi` (shape `(n_sections, ..., 2, ...)`, the 2
    at `axis`), returns `(y, zf)`.

    A device array (CUDA tensor, CuPy array, another CUDA array) is filtered on its device
    and comes back as its kind there (`_on_device`: float64 on the GPU, within 1e-10 of
    SciPy's result's peak, not SciPy's bits)."""
    dev = _device_input(x)
    if dev is not None:
        ops, arr, back = dev
        sos, _ = _validate_sos(_host(sos))
        return _given_back(back, _on_device.sosfilt(ops, _on_device.device_run(ops), sos, arr, axis, zi))
    x = _validate_x(x)
    sos, n_sections = _validate_sos(sos)
    x_zi_shape = list(x.shape)
    x_zi_shape[axis] = 2
    x_zi_shape = tuple([n_sections] + x_zi_shape)
    inputs = [sos, x] + ([np.asarray(zi)] if zi is not None else [])
    dtype = np.result_type(*inputs)
    _check_dtype(dtype, f"input type '{dtype}' not supported")
    if zi is not None:
        zi = np.array(zi, dtype)
        if zi.shape != x_zi_shape:
            raise ValueError(
                f"Invalid zi shape. With axis={axis!r}, an input with shape {x.shape!r}, and an sos array "
                f"with {n_sections} sections, zi must have shape {x_zi_shape!r}, got {zi.shape!r}."
            )
    axis = axis % x.ndim
    coefficients = np.ascontiguousarray(_real_coefficients(sos, "sos"))
    rows, moved = _rows(x, axis)
    if zi is not None:
        zmoved = np.moveaxis(zi, [0, axis + 1], [-2, -1])
        zrows = zmoved.reshape(-1, n_sections, 2)
    re, im = _as_real_pair(rows)
    zre, zim = _as_real_pair(zrows) if zi is not None else (None, None)
    if im is not None and zi is not None and zim is None:
        zim = np.zeros_like(zre)
    parts = [_ferrofx.sosfilt64(coefficients, re, zre)]
    if im is not None:
        parts.append(_ferrofx.sosfilt64(coefficients, im, zim if zi is not None else None))
    y = parts[0][0] if len(parts) == 1 else parts[0][0] + 1j * parts[1][0]
    y = np.moveaxis(y.reshape(moved), -1, axis).astype(dtype, copy=False)
    if zi is None:
        return y
    zf = parts[0][1] if len(parts) == 1 else parts[0][1] + 1j * parts[1][1]
    zf = zf.reshape(zmoved.shape)
    zf = np.moveaxis(zf, [-2, -1], [0, axis + 1]).astype(dtype, copy=False)
    return y, zf


def sosfilt_backward(sos: Any, x: Any, grad_y: Any, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """The gradients through `y = sosfilt(sos, x, axis=axis)` from zero state (not a SciPy
    function: what a differentiable layer needs). Given `grad_y` = dL/dy (`y`'s shape),
    returns `(grad_x, grad_sos)`: dL/dx (`x`'s shape) and dL/dsos (`sos`'s shape, summed over
    every filtered row). Float64 arithmetic; the results take `np.result_type(sos, x,
    grad_y)` (float32 in, float32 out).

    The adjoint of each section runs its all-pole part backwards in time; dL/dx is the
    cascade run backwards in time on `grad_y`. The `a0` column's gradient is that of the
    difference equation `a0 y[n] + a1 y[n-1] + a2 y[n-2] = b0 x[n] + b1 x[n-1] + b2 x[n-2]`
    (moving `a0` scales the section by `1 / a0`)."""
    x = _validate_x(x)
    sos, n_sections = _validate_sos(sos)
    grad_y = np.asarray(grad_y)
    if grad_y.shape != x.shape:
        raise ValueError(f"grad_y must have the shape of y, {x.shape!r}, got {grad_y.shape!r}")
    dtype = np.result_type(sos, x, grad_y)
    _check_dtype(dtype, f"input type '{dtype}' not supported")
    if np.iscomplexobj(sos) or np.iscomplexobj(x) or np.iscomplexobj(grad_y):
        raise NotImplementedError("sosfilt_backward takes real data and coefficients")
    axis = axis % x.ndim
    rows, moved = _rows(x, axis)
    grows, _ = _rows(grad_y, axis)
    gx, gs = _ferrofx.sosfilt_backward64(
        np.ascontiguousarray(sos, dtype=np.float64),
        np.asarray(rows, dtype=np.float64),
        np.asarray(grows, dtype=np.float64),
    )
    gx = np.moveaxis(gx.reshape(moved), -1, axis).astype(dtype, copy=False)
    return gx, gs.astype(dtype, copy=False)


def lfilter_zi(b: Any, a: Any) -> np.ndarray:
    """`scipy.signal.lfilter_zi`: the initial state of `lfilter` for the steady state of
    a step response."""
    b = np.atleast_1d(b)
    if b.ndim != 1:
        raise ValueError("Numerator b must be 1-D.")
    a = np.atleast_1d(a)
    if a.ndim != 1:
        raise ValueError("Denominator a must be 1-D.")
    if b.dtype.kind in "bui":
        b = b.astype(np.float64)
    if a.dtype.kind in "bui":
        a = a.astype(np.float64)
    while len(a) > 1 and a[0] == 0.0:
        a = a[1:]
    if a.size < 1:
        raise ValueError("There must be at least one nonzero `a` coefficient.")
    if a[0] != 1.0:
        # Normalise the coefficients so a[0] == 1.
        b = b / a[0]
        a = a / a[0]
    n = max(len(a), len(b))
    if n < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2.")
    dtype = np.result_type(a, b)
    a = np.concatenate([a, np.zeros(n - len(a), dtype=a.dtype)])
    b = np.concatenate([b, np.zeros(n - len(b), dtype=b.dtype)])
    # The state-space matrix of the transposed direct form (first column -a[1:], the
    # superdiagonal ones): zi solves (I - A) zi = b[1:] - a[1:] b[0].
    state = np.zeros((n - 1, n - 1), dtype=dtype)
    state[:, 0] = -a[1:]
    state[np.arange(n - 2), np.arange(1, n - 1)] = 1.0
    i_minus_a = np.eye(n - 1, dtype=dtype) - state
    rhs = b[1:] - a[1:] * b[0]
    return np.linalg.solve(i_minus_a, rhs).astype(dtype, copy=False)


def sosfilt_zi(sos: Any) -> np.ndarray:
    """`scipy.signal.sosfilt_zi`: the initial states of `sosfilt` for the steady state of
    a step response, shape `(n_sections, 2)`."""
    sos = np.asarray(sos)
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError("sos must be shape (n_sections, 6)")
    if sos.dtype.kind in "bui":
        sos = sos.astype(np.float64)
    zi = np.empty((sos.shape[0], 2), dtype=sos.dtype)
    scale = 1.0
    for s in range(sos.shape[0]):
        b, a = sos[s, :3], sos[s, 3:]
        zi[s] = scale * lfilter_zi(b, a)
        # The section's gain at DC carries the step into the next one.
        scale *= b.sum() / a.sum()
    return zi


def lfilter(b: Any, a: Any, x: Any, axis: int = -1, zi: Any = None) -> Any:
    """`scipy.signal.lfilter`: filters `x` along `axis` with the transfer function `b/a`
    (feedback included). With `zi` (the shape of `x` with `max(len(a), len(b)) - 1` at
    `axis`; other dimensions may be 1), returns `(y, zf)`. A device array is filtered on
    its device where the order is at most 2 (one section; higher orders are refused by
    name there: `scipy.signal.tf2sos` and `sosfilt` run them)."""
    b = np.atleast_1d(_host(b))
    a = np.atleast_1d(_host(a))
    if b.ndim != 1 or b.size == 0:
        raise ValueError(f"Parameter b is not a non-empty 1d array, since b.shape={b.shape}!")
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"Parameter a is not a non-empty 1d array, since a.shape={a.shape}!")
    dev = _device_input(x)
    if dev is not None:
        ops, arr, back = dev
        return _given_back(back, _on_device.lfilter(ops, _on_device.device_run(ops), b, a, arr, axis, zi))
    x = _validate_x(x)
    inputs = [b, a, x] + ([np.asarray(zi)] if zi is not None else [])
    dtype = np.result_type(*inputs)
    _check_dtype(dtype, f"Parameter's dtypes produced result type '{dtype}', which is not supported!")
    axis = axis % x.ndim
    k = max(len(a), len(b)) - 1
    if zi is not None:
        zi = np.asarray(zi)
        if zi.ndim != x.ndim:
            raise ValueError("object of too small depth for desired array")
        expected = list(x.shape)
        expected[axis] = k
        for d in range(x.ndim):
            fits = zi.shape[d] == expected[d] or (d != axis and zi.shape[d] == 1)
            if not fits:
                raise ValueError(f"Unexpected shape for zi: expected {tuple(expected)}, found {zi.shape}.")
        zi = np.broadcast_to(zi, expected)
    bc = _real_coefficients(b, "b")
    ac = _real_coefficients(a, "a")
    if len(ac) > 1 and ac[0] == 0.0:
        # SciPy's message, word for word (its C filter refuses this case).
        raise ValueError("BUG: filter coefficient a[0] == 0 not supported yet")
    n = k + 1
    bc = np.concatenate([bc, np.zeros(n - len(bc))])
    ac = np.concatenate([ac, np.zeros(n - len(ac))])
    with np.errstate(divide="ignore", invalid="ignore"):
        bn, an = bc / ac[0], ac / ac[0]
    rows, moved = _rows(x, axis)
    if zi is not None:
        zmoved = np.moveaxis(zi, axis, -1)
        zrows = zmoved.reshape(rows.shape[0], k)
    re, im = _as_real_pair(rows)
    zre, zim = _as_real_pair(zrows) if zi is not None else (None, None)
    if im is not None and zi is not None and zim is None:
        zim = np.zeros_like(zre)
    fir = not np.any(an[1:]) and np.isfinite(an[0])
    fft = zi is None and fir and k + 1 >= _FIR_FFT_MIN_TAPS and bool(np.all(np.isfinite(bn)))
    parts = []
    for part, z in ((re, zre), (im, zim)):
        if part is None:
            continue
        if fft:
            parts.append((np.asarray(_ferrofx.fir64(np.ascontiguousarray(bn), part)), None))
        else:
            parts.append(_ferrofx.lfilter64(np.ascontiguousarray(bn), np.ascontiguousarray(an), part, z))
    y = parts[0][0] if len(parts) == 1 else parts[0][0] + 1j * parts[1][0]
    y = np.moveaxis(np.asarray(y).reshape(moved), -1, axis).astype(dtype, copy=False)
    if zi is None:
        return y
    zf = parts[0][1] if len(parts) == 1 else parts[0][1] + 1j * parts[1][1]
    zf = np.moveaxis(np.asarray(zf).reshape(zmoved.shape), -1, axis).astype(dtype, copy=False)
    return y, zf


def _axis_slice(a: np.ndarray, start=None, stop=None, step=None, axis=-1) -> np.ndarray:
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, stop, step)
    return a[tuple(index)]


def _extend(x: np.ndarray, n: int, axis: int, kind: str) -> np.ndarray:
    """`x` extended by `n` samples at each end along `axis`: odd (point-symmetric about
    the end samples), even (mirrored) or constant."""
    if n < 1:
        return x
    if n > x.shape[axis] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is {x.shape[axis] - 1}.")
    left = _axis_slice(x, start=n, stop=0, step=-1, axis=axis)
    right = _axis_slice(x, start=-2, stop=-(n + 2), step=-1, axis=axis)
    first = _axis_slice(x, start=0, stop=1, axis=axis)
    last = _axis_slice(x, start=-1, axis=axis)
    if kind == "odd":
        left, right = 2 * first - left, 2 * last - right
    elif kind == "constant":
        left = np.repeat(first, n, axis=axis)
        right = np.repeat(last, n, axis=axis)
    return np.concatenate((left, x, right), axis=axis)


def _pad_edge(padtype, padlen, length: int, ntaps: int) -> int:
    """The padding each end (SciPy's rules and messages) for a signal of `length`."""
    if padtype not in ["even", "odd", "constant", None]:
        raise ValueError(f"Unknown value '{padtype}' given to padtype. padtype must be 'even', 'odd', 'constant', or None.")
    if padtype is None:
        padlen = 0
    edge = ntaps * 3 if padlen is None else padlen
    if length <= edge:
        raise ValueError(f"The length of the input vector x must be greater than padlen, which is {edge}.")
    return edge


def _validate_pad(padtype, padlen, x: np.ndarray, axis: int, ntaps: int) -> tuple[int, np.ndarray]:
    edge = _pad_edge(padtype, padlen, x.shape[axis], ntaps)
    ext = _extend(x, edge, axis, padtype) if padtype is not None and edge > 0 else x
    return edge, ext


def filtfilt(b: Any, a: Any, x: Any, axis: int = -1, padtype: str | None = "odd", padlen: int | None = None,
             method: str = "pad", irlen: int | None = None) -> Any:
    """`scipy.signal.filtfilt`: `b/a` forward, then backward (zero phase), the ends padded
    (`method="pad"`) or the initial conditions chosen by Gustafsson's method
    (`method="gust"`)."""
    b = np.atleast_1d(_host(b))
    a = np.atleast_1d(_host(a))
    if method not in ["pad", "gust"]:
        raise ValueError("method must be 'pad' or 'gust'.")
    dev = _device_input(x)
    if dev is not None:
        ops, arr, back = dev
        if method == "gust":
            raise NotImplementedError("filtfilt on a device array: Gustafsson's method is not run on the device "
                                      "(use method='pad', or pass a host array)")
        k = _on_device._order_at_most_2(b, a, "filtfilt")
        shape = ops.shape(arr)
        if len(shape) == 0:
            raise ValueError("x must be at least 1-D")
        edge = _pad_edge(padtype, padlen, shape[axis], max(len(a), len(b)))
        dtype = np.result_type(b, a, np.empty(0, ops.dtype(arr)))
        _on_device.check_dtype(dtype, f"Parameter's dtypes produced result type '{dtype}', which is not supported!")
        zi = np.zeros((1, 2))
        zi[0, :k] = lfilter_zi(b, a)
        sos = _on_device._section_of(b, a)
        return _given_back(back, _on_device.zero_phase(ops, _on_device.device_run(ops), sos, zi, arr, axis, edge, padtype, dtype))
    x = np.asarray(x)
    if method == "gust":
        return _filtfilt_gust(b, a, x, axis=axis, irlen=irlen)
    edge, ext = _validate_pad(padtype, padlen, x, axis, ntaps=max(len(a), len(b)))
    zi = lfilter_zi(b, a)
    shape = [1] * x.ndim
    shape[axis] = zi.size
    zi = np.reshape(zi, shape)
    x0 = _axis_slice(ext, stop=1, axis=axis)
    y, _ = lfilter(b, a, ext, axis=axis, zi=zi * x0)
    y0 = _axis_slice(y, start=-1, axis=axis)
    y, _ = lfilter(b, a, np.flip(y, axis=axis), axis=axis, zi=zi * y0)
    y = np.flip(y, axis=axis)
    if edge > 0:
        y = _axis_slice(y, start=edge, stop=-edge, axis=axis)
    return y


def _filtfilt_gust(b: np.ndarray, a: np.ndarray, x: np.ndarray, axis: int = -1, irlen: int | None = None) -> np.ndarray:
    """Forward-backward filtering with the initial conditions of Gustafsson (1996): the
    forward filter's state `z1` and the backward filter's `z2` that make filtering
    forward-then-backward equal backward-then-forward, in least squares. With `O` the
    response to each unit initial state (over the first `m` samples, `m = irlen` when
    given), `S` that response reversed and filtered forward and `R` time reversal, the
    two orders differ by `(R S - O) z1 + (R O - S) z2` plus what they differ by from zero
    state."""
    order = max(len(b), len(a)) - 1
    if order == 0:
        # A pure gain, applied twice.
        return (b[0] / a[0]) ** 2 * x
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    m = n if irlen is None or n <= 2 * irlen else irlen
    obs = np.zeros((m, order))
    unit = np.zeros(order)
    unit[0] = 1.0
    obs[:, 0] = lfilter(b, a, np.zeros(m), zi=unit)[0]
    for k in range(1, order):
        obs[k:, k] = obs[:-k, 0]
    obs_r = obs[::-1]
    s = lfilter(b, a, obs_r, axis=0)
    s_r = s[::-1]
    if m == n:
        mat = np.hstack((s_r - obs, obs_r - s))
    else:
        mat = np.zeros((2 * m, 2 * order))
        mat[:m, :order] = s_r - obs
        mat[m:, order:] = obs_r - s
    y_f = lfilter(b, a, x)
    y_fb = lfilter(b, a, y_f[..., ::-1])[..., ::-1]
    y_b = lfilter(b, a, x[..., ::-1])[..., ::-1]
    y_bf = lfilter(b, a, y_b)
    delta = y_bf - y_fb
    if m != n:
        delta = np.concatenate((delta[..., :m], delta[..., -m:]), axis=-1)
    flat = delta.reshape(int(np.prod(delta.shape[:-1], dtype=np.int64)), delta.shape[-1]).T
    ic = np.linalg.lstsq(mat, flat, rcond=None)[0].T.reshape(delta.shape[:-1] + (2 * order,))
    # The result is the zero-state forward-backward output plus what the initial
    # conditions add, `R S z1 + R O z2`; with a truncated response (`m < n`) only over
    # the first and last `m` samples, as SciPy computes it.
    if m == n:
        w = np.hstack((s_r, obs_r))
    else:
        w = np.zeros((2 * m, 2 * order))
        w[:m, :order] = s_r
        w[m:, order:] = obs_r
    added = ic.dot(w.T)
    y = y_fb
    if m == n:
        y = y + added
    else:
        y = y.copy()
        y[..., :m] += added[..., :m]
        y[..., -m:] += added[..., -m:]
    return np.moveaxis(y, -1, axis)


def sosfiltfilt(sos: Any, x: Any, axis: int = -1, padtype: str | None = "odd", padlen: int | None = None) -> Any:
    """`scipy.signal.sosfiltfilt`: the sections forward, then backward (zero phase), the
    ends padded as `filtfilt` pads them. A device array is filtered on its device."""
    sos, n_sections = _validate_sos(_host(sos))
    dev = _device_input(x)
    if dev is not None:
        ops, arr, back = dev
        shape = ops.shape(arr)
        if len(shape) == 0:
            raise ValueError("x must be at least 1-D")
        ntaps = 2 * n_sections + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
        edge = _pad_edge(padtype, padlen, shape[axis], ntaps)
        dtype = np.result_type(sos, np.empty(0, ops.dtype(arr)))
        _on_device.check_dtype(dtype, f"input type '{dtype}' not supported")
        zi = np.asarray(sosfilt_zi(sos), dtype=np.float64)
        return _given_back(back, _on_device.zero_phase(ops, _on_device.device_run(ops), np.asarray(sos, dtype=np.float64), zi, arr,
                                                       axis, edge, padtype, dtype))
    x = _validate_x(x)
    ntaps = 2 * n_sections + 1
    ntaps -= min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    edge, ext = _validate_pad(padtype, padlen, x, axis, ntaps=ntaps)
    zi = sosfilt_zi(sos)
    shape = [1] * x.ndim
    shape[axis] = 2
    zi = np.reshape(zi, [n_sections] + shape)
    x0 = _axis_slice(ext, stop=1, axis=axis)
    y, _ = sosfilt(sos, ext, axis=axis, zi=zi * x0)
    y0 = _axis_slice(y, start=-1, axis=axis)
    y, _ = sosfilt(sos, np.flip(y, axis=axis), axis=axis, zi=zi * y0)
    y = np.flip(y, axis=axis)
    if edge > 0:
        y = _axis_slice(y, start=edge, stop=-edge, axis=axis)
    return y
