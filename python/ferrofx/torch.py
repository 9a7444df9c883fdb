"""FerroFX as PyTorch layers: a chain (or an `sos` array) as an `nn.Module`, differentiable
with respect to its input and its coefficients, kept whole by `torch.compile`.

    import torch, ferrofx
    from ferrofx.torch import Filter
    chain = ferrofx.Butterworth.highpass(30, 4) | ferrofx.Biquad.peaking(1000, 1.4, -6)
    layer = Filter.from_chain(chain, fs=48_000)          # or Filter.from_sos(sos, learnable=True)
    y = layer(wave)                                      # (frames,), (channels, frames), (batch, channels, frames)

- Cascades run as the custom operator `ferrofx::sosfilt` (`torch.library`, with a fake
  kernel, so `torch.compile(..., fullgraph=True)` keeps it in its graph): SciPy's float64
  arithmetic (`ferrofx.signal.sosfilt`, SciPy's bits), the result in the input's dtype.
  Its gradient, `ferrofx::sosfilt_backward`, is the adjoint (`ferrofx.signal.sosfilt_backward`):
  with respect to the input and to the coefficients, from zero state.
- FIR stages run as PyTorch's own `conv1d` (causal, the output as long as the input), so
  autograd and the compiler handle them natively.
- **CUDA tensors** stay on their device: the cascade runs in float64 on the GPU on the
  caller's current stream (`_ferrofx.sosfilt_device64`, the delta form of the GPU paths
  in double precision: within 1e-10 of SciPy's float64 result's peak on the steepest
  designs tested, 1e-12 and closer on ordinary ones; not SciPy's bits; with
  `FERROFX_CUDA_FUSED=8`, rows of 16,384 frames and more run spread over many thread
  blocks, the fused scan in float64, opt-in until a GPU has timed it),
  the result in the input's dtype; the gradients are the same adjoint, its recursions run
  as GPU filters and the rest of each section's step as one kernel (`_adjoint`,
  `_device_step`), over as many rows at a time as half the device's free memory holds
  (each row's signals, `sections + 3` float64 copies; `FERROFX_TORCH_BACKWARD_BYTES` sets
  the budget). The
  coefficients may live on the CPU or the GPU (they are read to the host each call: a few
  dozen numbers). A cascade whose float64 form would miss the tolerance is refused with
  the reason. Other devices raise `NotImplementedError`.
"""

# No `from __future__ import annotations`: torch.library reads the operators' schemas
# from their annotations, which must be real types.
from typing import Any, Optional, Tuple

import numpy as np
import torch

from . import signal as _signal

__all__ = ["Filter", "sosfilt"]


def _host_only(*tensors: torch.Tensor) -> None:
    for t in tensors:
        if t.device.type not in ("cpu", "cuda"):
            raise NotImplementedError(
                f"ferrofx.torch's layers take CPU and CUDA tensors only; got a tensor on {t.device}: "
                "move it with .cpu() or .cuda()"
            )


def _numpy64(t: torch.Tensor) -> np.ndarray:
    # Widened in torch first: NumPy has no bfloat16.
    return t.detach().cpu().to(torch.float64).numpy()


def _real_floating(t: torch.Tensor, name: str) -> None:
    """Refuses, by name, a tensor the layer would filter wrongly: complex ones (the
    coefficients are real and the arithmetic is real: an imaginary part would be dropped)
    and integer or boolean ones (a filtered signal rounded to integers)."""
    if t.is_complex() or not t.is_floating_point():
        raise ValueError(
            f"ferrofx.torch filters real floating-point tensors (float16, bfloat16, float32, float64); {name} is {t.dtype}"
            + (" (filter its real and imaginary parts separately)" if t.is_complex() else "")
        )


def _on_cuda(x: torch.Tensor) -> bool:
    return x.device.type == "cuda"


def _device_filter_(y: torch.Tensor, rows: np.ndarray) -> None:
    """`rows` (normalised sections) over the last axis of the contiguous float64 CUDA
    tensor `y`, in place, each row from zero state, in float64 on its device, on the
    current stream."""
    from . import _ferrofx

    if y.numel():
        frames = y.shape[-1]
        stream = torch.cuda.current_stream(y.device).cuda_stream
        _ferrofx.sosfilt_device64(np.ascontiguousarray(rows, dtype=np.float64), y.data_ptr(), y.numel() // frames,
                                  frames, y.device.index or 0, stream)


def _device_filter(x: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
    """The same into a new float64 tensor (`x` unchanged)."""
    y = x.detach().to(torch.float64, copy=True).contiguous()
    _device_filter_(y, rows)
    return y


def _host_filter(x: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
    """`rows` over the last axis of CPU tensor `x` into a new float64 tensor (SciPy's
    arithmetic, `ferrofx.signal.sosfilt`)."""
    return torch.from_numpy(np.ascontiguousarray(_signal.sosfilt(rows, _numpy64(x), axis=-1)))


def _torch_step(lam: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, b: "tuple[float, float, float]", out: torch.Tensor) -> torch.Tensor:
    """One section's backward step after its all-pole part, in torch operations, over
    contiguous float64 rows in `_adjoint`'s layout (`lam` and `out` reversed with two
    leading zeros per row, `xs` and `ys` forward with two samples after the frames): the
    next gradient into `out` (not `lam`), and the six sums `[db0, db1, db2, da0, da1,
    da2]` returned. `kernels/adjoint_math.h` is the same step in one pass (CUDA), reading
    `xs` and `ys` backwards where this makes reversed copies of them."""
    xs, ys = (_reversed_rows(v) for v in (xs, ys))
    lam, xs, ys, nxt = lam.reshape(-1), xs.reshape(-1), ys.reshape(-1), out.view(-1)
    total = lam.numel()
    # sum_t lambda[t+k] x[t]: lambda[t+k] sits k places before x[t] in the reversed row; a
    # product that would cross into the row before meets the padding's zeros.
    sums = [torch.dot(lam[:total - k], xs[k:]) for k in range(3)] + [-torch.dot(lam[:total - k], ys[k:]) for k in range(3)]
    # dL/dx[t] = b0 lambda[t] + b1 lambda[t+1] + b2 lambda[t+2]: reversed, the sample itself
    # and the one and two places before; each row's padding zeroed again (the shifts carry
    # the row before's last samples into it).
    torch.mul(lam, b[0], out=nxt)
    nxt[1:].add_(lam[:-1], alpha=b[1])
    nxt[2:].add_(lam[:-2], alpha=b[2])
    out[..., :2] = 0
    return torch.stack(sums)


def _reversed_rows(v: torch.Tensor) -> torch.Tensor:
    """Forward rows `[v0, ..., v(n-1), ?, ?]` as a new tensor in reversed time with two
    leading zeros, `[0, 0, v(n-1), ..., v0]`."""
    r = v.flip(-1).contiguous()
    r[..., :2] = 0
    return r


def _device_step(lam: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, b: "tuple[float, float, float]", out: torch.Tensor) -> torch.Tensor:
    """`_torch_step` on CUDA tensors in one kernel (`_ferrofx.adjoint_step_device64`) on
    the current stream: the blocks' sums added here, on the device."""
    from . import _ferrofx

    partial = torch.empty((_ferrofx.adjoint_max_blocks(), 6), dtype=torch.float64, device=lam.device)
    stream = torch.cuda.current_stream(lam.device).cuda_stream
    row_len = lam.shape[-1]
    blocks = _ferrofx.adjoint_step_device64(b, lam.data_ptr(), xs.data_ptr(), ys.data_ptr(), out.data_ptr(), partial.data_ptr(),
                                            lam.numel() // row_len, row_len, lam.device.index or 0, stream)
    return partial[:blocks].sum(0)


def _filter_taps(filt_: Any) -> Any:
    """Forward signals (see `_adjoint`) from `filt_` (a filter in place): each section's
    input copied, then filtered."""

    def taps(signals: torch.Tensor, rows: np.ndarray, n: int) -> None:
        for s in range(rows.shape[0]):
            signals[s + 1].copy_(signals[s])
            filt_(signals[s + 1], rows[s:s + 1])

    return taps


def _device_taps(signals: torch.Tensor, rows: np.ndarray, n: int) -> None:
    """Forward signals (see `_adjoint`) on a CUDA tensor in one launch
    (`_ferrofx.sosfilt_taps_device64`: every section's output kept, out of place), on the
    current stream; the samples after each row's frames are left as they are."""
    from . import _ferrofx

    if n == 0 or signals.numel() == 0:
        return
    count = signals[0].numel() // (n + 2)
    stream = torch.cuda.current_stream(signals.device).cuda_stream
    _ferrofx.sosfilt_taps_device64(np.ascontiguousarray(rows, dtype=np.float64), signals.data_ptr(), signals[1].data_ptr(), count, n, n + 2,
                                   signals.device.index or 0, stream)


def _adjoint(x: torch.Tensor, rows: np.ndarray, grad_y: torch.Tensor, filt_: Any, step: Any = _torch_step, taps: Any = None) -> "tuple[torch.Tensor, torch.Tensor]":
    """dL/dx and dL/drows of `y = sosfilt(rows, x)` (normalised rows, zero state) given
    dL/dy, with torch operations on the tensors' device, `filt_(t, rows)` (a filter in
    place on a contiguous float64 tensor) for the recursions, `taps(signals, rows, n)` for
    the forward signals (`_device_taps` on CUDA; default: `filt_` section by section) and
    `step` for the rest of each section's step (`_torch_step`, or `_device_step` on CUDA):
    the arithmetic of `src/signal/adjoint.rs` (see there), section by section from the last.

    Laid out so each section's backward step is one filter in place and one step over
    memory (what a GPU's time is made of): the adjoint runs in reversed time (`lambda`,
    which runs backwards, is then an ordinary causal filter of the reversed gradient),
    every row padded with two samples (zeros at the start of the reversed gradients, so
    that the shifted products of all rows at once are plain dot products of the flattened
    tensors and the next gradient is three shifted multiply-adds). The forward signals
    stay in forward time, as one launch writes them all (`signals[s]`, section s's input;
    the last, the cascade's output), and the step reads them backwards."""
    n = x.shape[-1]
    sections = rows.shape[0]
    if taps is None:
        taps = _filter_taps(filt_)
    signals = torch.empty((sections + 1,) + tuple(x.shape[:-1]) + (n + 2,), dtype=torch.float64, device=x.device)
    signals[0, ..., :n] = x
    signals[0, ..., n:] = 0
    taps(signals, rows, n)
    # Reversed time: row [0, 0, g[n-1], ..., g[0]]; a sample at time t sits at n + 1 - t.
    g = torch.nn.functional.pad(grad_y.to(torch.float64), (0, 2)).flip(-1).contiguous()
    spare = torch.empty_like(g)
    grads = torch.zeros((sections, 6), dtype=torch.float64, device=x.device)
    for s in reversed(range(sections)):
        b0, b1, b2, _, a1, a2 = (float(v) for v in rows[s])
        # lambda[t] = g[t] - a1 lambda[t+1] - a2 lambda[t+2]: reversed, a causal all-pole
        # filter, run in place (the two leading zeros stay zero from zero state).
        filt_(g, np.array([[1.0, 0.0, 0.0, 1.0, a1, a2]]))
        grads[s] = step(g, signals[s], signals[s + 1], (b0, b1, b2), spare)
        g, spare = spare, g
    return g.flip(-1)[..., :n], grads


def _adjoint_rows(x: torch.Tensor, rows: np.ndarray, grad_y: torch.Tensor, filt_: Any, step: Any = _torch_step,
                  max_bytes: Optional[int] = None, taps: Any = None) -> "tuple[torch.Tensor, torch.Tensor]":
    """`_adjoint` over groups of rows (the rows of a batch are independent), each group's
    working set (its `sections + 3` float64 signals, two samples longer than the rows)
    within `max_bytes` (a group of one row at least; `None`: all rows at once). The input
    gradient is each row's own arithmetic whatever the grouping; the coefficients' sums
    are added group by group (a different rounding order, within 1e-12 of one group)."""
    n = x.shape[-1]
    if max_bytes is None or x.numel() == 0:
        return _adjoint(x, rows, grad_y, filt_, step, taps)
    flat_x, flat_g = x.reshape(-1, n), grad_y.reshape(-1, n)
    count = flat_x.shape[0]
    per_row = (rows.shape[0] + 3) * (n + 2) * 8
    group = max(1, int(max_bytes) // per_row)
    if group >= count:
        return _adjoint(x, rows, grad_y, filt_, step, taps)
    gxs = []
    gs = torch.zeros((rows.shape[0], 6), dtype=torch.float64, device=x.device)
    for start in range(0, count, group):
        gx, g = _adjoint(flat_x[start:start + group], rows, flat_g[start:start + group], filt_, step, taps)
        gxs.append(gx)
        gs += g
    return torch.cat(gxs).reshape(x.shape), gs


def _backward_budget(device: torch.device) -> int:
    """Bytes the coefficient gradient's signals may take on a CUDA device: half of what is
    free there (the driver's free memory and what PyTorch holds cached but unused), or
    `FERROFX_TORCH_BACKWARD_BYTES` where set."""
    import os

    given = os.environ.get("FERROFX_TORCH_BACKWARD_BYTES")
    if given:
        try:
            value = int(given)
        except ValueError:
            raise ValueError(f"FERROFX_TORCH_BACKWARD_BYTES must be a whole number of bytes, got {given!r}") from None
        if value <= 0:
            raise ValueError(f"FERROFX_TORCH_BACKWARD_BYTES must be positive, got {value}")
        return value
    free, _ = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return (free + cached) // 2


def _sections(sos: torch.Tensor) -> "tuple[np.ndarray, np.ndarray]":
    """The rows divided by their `a0` (the same filter), and the `a0` column. The layer
    takes any nonzero `a0`, so the coefficients can move freely under an optimiser; each
    row means the difference equation `a0 y[n] + a1 y[n-1] + a2 y[n-2] = b0 x[n] + ...`."""
    rows = _numpy64(sos)
    a0 = rows[:, 3:4]
    if not np.all(np.isfinite(a0)) or np.any(a0 == 0):
        raise ValueError("sos[:, 3] (a0) must be finite and nonzero")
    return rows / a0, a0


@torch.library.custom_op("ferrofx::sosfilt", mutates_args=())
def _sosfilt_op(x: torch.Tensor, sos: torch.Tensor) -> torch.Tensor:
    _host_only(x, sos)
    rows, _ = _sections(sos)
    if _on_cuda(x):
        return _device_filter(x, rows).to(x.dtype)
    y = _signal.sosfilt(rows, _numpy64(x), axis=-1)
    return torch.from_numpy(np.ascontiguousarray(y)).to(x.dtype)


@_sosfilt_op.register_fake
def _(x: torch.Tensor, sos: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("ferrofx::sosfilt_backward", mutates_args=())
def _sosfilt_backward_op(x: torch.Tensor, sos: torch.Tensor, grad_y: torch.Tensor, need_sos: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _host_only(x, sos, grad_y)
    rows, a0 = _sections(sos)
    if not need_sos:
        # dL/dx alone: the cascade's adjoint is the cascade run backwards in time, one
        # filter call (its sections commute); dL/dsos is not asked for (zeros).
        if _on_cuda(x):
            g = grad_y.detach().flip(-1).to(torch.float64).contiguous()
            _device_filter_(g, rows)
            gx = g.flip(-1)
        else:
            gx = _host_filter(grad_y.detach().flip(-1), rows).flip(-1)
        return gx.to(device=x.device, dtype=x.dtype), torch.zeros_like(sos)
    if _on_cuda(x):
        # In groups of rows whose signals fit the device's free memory (a batch of 1,024
        # stereo 10 s clips through 8 sections is 87 GB of them at once).
        gx, gs = _adjoint_rows(x.detach(), rows, grad_y.detach(), _device_filter_, _device_step, _backward_budget(x.device), _device_taps)
        gs = gs / torch.from_numpy(a0).to(gs.device)
        return gx.to(x.dtype), gs.to(dtype=sos.dtype, device=sos.device)
    gx, gs = _signal.sosfilt_backward(rows, _numpy64(x), _numpy64(grad_y), axis=-1)
    # The gradient at rows scaled by 1/a0: the adjoint of a0 y[n] + ... runs at 1/a0 of
    # the normalised one's.
    gs = gs / a0
    return (
        torch.from_numpy(np.ascontiguousarray(gx)).to(x.dtype),
        torch.from_numpy(np.ascontiguousarray(gs)).to(dtype=sos.dtype, device=sos.device),
    )


@_sosfilt_backward_op.register_fake
def _(x: torch.Tensor, sos: torch.Tensor, grad_y: torch.Tensor, need_sos: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(sos)


def _setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    x, sos = inputs
    ctx.save_for_backward(x, sos)


def _backward(ctx: Any, grad_y: torch.Tensor) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    x, sos = ctx.saved_tensors
    gx, gs = _sosfilt_backward_op(x, sos, grad_y.contiguous(), bool(ctx.needs_input_grad[1]))
    return (gx if ctx.needs_input_grad[0] else None, gs if ctx.needs_input_grad[1] else None)


_sosfilt_op.register_autograd(_backward, setup_context=_setup_context)


def sosfilt(x: torch.Tensor, sos: torch.Tensor) -> torch.Tensor:
    """`scipy.signal.sosfilt(sos, x, axis=-1)` from zero state on CPU or CUDA tensors,
    differentiable in `x` and `sos` (rows `[b0, b1, b2, a0, a1, a2]`; each row is divided
    by its `a0`, SciPy's sections having `a0 = 1`)."""
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError(f"sos must have shape (n_sections, 6), got {tuple(sos.shape)}")
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    _real_floating(x, "x")
    _real_floating(sos, "sos")
    return _sosfilt_op(x, sos)


def _fir(x: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
    """Causal FIR along the last axis, the output as long as the input (scipy's
    `lfilter(taps, 1, x)`), by PyTorch's conv1d (cross-correlation: taps reversed)."""
    _host_only(x)
    _real_floating(x, "x")
    taps = taps.to(x.device)
    shape = x.shape
    rows = x.reshape(-1, 1, shape[-1])
    kernel = taps.to(x.dtype).flip(-1).view(1, 1, -1)
    y = torch.nn.functional.conv1d(torch.nn.functional.pad(rows, (taps.shape[-1] - 1, 0)), kernel)
    return y.reshape(shape)


class Filter(torch.nn.Module):
    """A FerroFX chain as a layer: its designed stages (cascades of second-order sections
    and FIRs, in order) applied along the last axis of `(frames,)`, `(channels, frames)`
    or `(batch, channels, frames)` tensors from zero state. With `learnable=True` the
    coefficients are `nn.Parameter`s (the cascade's `sos` rows, the FIR taps) that
    optimisers update; otherwise buffers that move with the module's dtype."""

    def __init__(self, stages: "list[tuple[str, Any]]", learnable: bool = False):
        super().__init__()
        self.kinds = []
        for i, (kind, values) in enumerate(stages):
            if kind not in ("sos", "fir"):
                raise ValueError(f"stage {i}: type {kind!r} is not a designed stage ('sos' or 'fir')")
            tensor = torch.as_tensor(np.asarray(values, dtype=np.float64))
            if kind == "sos" and (tensor.ndim != 2 or tensor.shape[1] != 6):
                raise ValueError(f"stage {i}: sos must have shape (n_sections, 6), got {tuple(tensor.shape)}")
            if kind == "sos" and not bool((torch.isfinite(tensor[:, 3]) & (tensor[:, 3] != 0)).all()):
                raise ValueError(f"stage {i}: sos[:, 3] (a0) must be finite and nonzero")
            if kind == "fir" and (tensor.ndim != 1 or tensor.numel() == 0):
                raise ValueError(f"stage {i}: FIR taps must be a non-empty 1-D array")
            name = f"stage{i}"
            if learnable:
                self.register_parameter(name, torch.nn.Parameter(tensor))
            else:
                self.register_buffer(name, tensor)
            self.kinds.append(kind)

    @classmethod
    def from_chain(cls, chain: Any, fs: float, learnable: bool = False) -> "Filter":
        """The chain (a `ferrofx.Chain` or `Stage`) designed at `fs`."""
        designed = chain.design(fs)
        return cls([(d["type"], d["sos"] if d["type"] == "sos" else d["taps"]) for d in designed], learnable)

    @classmethod
    def from_sos(cls, sos: Any, learnable: bool = False) -> "Filter":
        return cls([("sos", sos)], learnable)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, kind in enumerate(self.kinds):
            coefficients = getattr(self, f"stage{i}")
            x = sosfilt(x, coefficients) if kind == "sos" else _fir(x, coefficients)
        return x

    def extra_repr(self) -> str:
        return ", ".join(self.kinds)
