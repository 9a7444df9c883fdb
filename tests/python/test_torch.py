"""`ferrofx.torch`: the layer against SciPy, its gradients by `torch.autograd.gradcheck`
(float64), `torch.compile` with `fullgraph=True` (no graph break) equal to eager.

PyTorch is not installed by `scripts/install-deps.sh` (its Linux wheel brings the CUDA
stack, several GB): without it these tests skip with that reason. To run them:
`pip install torch` into the test environment, then `pytest tests/python/test_torch.py`."""

import os

import numpy as np
import pytest
import scipy.signal as ss

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch to run ferrofx.torch's tests)")

import ferrofx  # noqa: E402
from ferrofx.torch import Filter, sosfilt  # noqa: E402


def _sos(rng, sections):
    r = rng.uniform(0.3, 0.9, sections)
    th = rng.uniform(0.1, 3.0, sections)
    b = rng.standard_normal((sections, 3))
    a = np.stack([np.ones(sections), -2 * r * np.cos(th), r * r], axis=1)
    return np.concatenate([b, a], axis=1)


@pytest.mark.parametrize("shape", [(500,), (3, 400), (2, 3, 300)])
def test_forward_is_scipys_sosfilt_along_the_last_axis(shape):
    rng = np.random.default_rng(len(shape))
    sos = ss.ellip(6, 0.5, 60, 0.1, output="sos")
    x = rng.standard_normal(shape)
    y = sosfilt(torch.from_numpy(x), torch.from_numpy(sos))
    assert y.dtype == torch.float64 and tuple(y.shape) == shape
    np.testing.assert_array_equal(y.numpy(), ss.sosfilt(sos, x, axis=-1))
    y32 = sosfilt(torch.from_numpy(x.astype(np.float32)), torch.from_numpy(sos))
    assert y32.dtype == torch.float32
    np.testing.assert_allclose(y32.numpy(), ss.sosfilt(sos, x.astype(np.float32)), rtol=0, atol=1e-6 * np.abs(y.numpy()).max())


def test_gradcheck_in_the_input_and_the_coefficients():
    rng = np.random.default_rng(3)
    for sections, shape in [(1, (12,)), (3, (2, 20)), (2, (2, 2, 9))]:
        x = torch.from_numpy(rng.standard_normal(shape)).requires_grad_()
        sos = torch.from_numpy(_sos(rng, sections)).requires_grad_()
        assert torch.autograd.gradcheck(sosfilt, (x, sos), eps=1e-6, atol=1e-6, rtol=1e-5)
        # The input alone (fixed coefficients): the cascade run backwards in time.
        assert torch.autograd.gradcheck(sosfilt, (x, sos.detach()), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_the_input_gradient_alone_equals_the_full_adjoints():
    rng = np.random.default_rng(8)
    x = torch.from_numpy(rng.standard_normal((3, 2000)))
    sos = torch.from_numpy(ss.ellip(6, 0.5, 60, 0.1, output="sos"))
    g = torch.from_numpy(rng.standard_normal((3, 2000)))
    xa = x.clone().requires_grad_()
    sosfilt(xa, sos).backward(g)
    xb, sb = x.clone().requires_grad_(), sos.clone().requires_grad_()
    sosfilt(xb, sb).backward(g)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=0, atol=1e-12 * float(xb.grad.abs().max()))


def test_a_chain_layer_equals_its_design_and_learns():
    chain = ferrofx.Butterworth.highpass(40, 4) | ferrofx.Fir.lowpass(31, 8000) | ferrofx.Biquad.peaking(1000, 1.4, -6)
    fs = 48_000
    layer = Filter.from_chain(chain, fs)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4000))
    want = x
    for d in chain.design(fs):
        want = ss.sosfilt(d["sos"], want) if d["type"] == "sos" else ss.lfilter(d["taps"], [1.0], want)
    got = layer(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    # Learnable: gradient steps move the coefficients and lower the loss (on a chain whose
    # poles sit well inside the unit circle: the 40 Hz highpass's are within 3e-5 of
    # instability, where any plain gradient step diverges).
    learn = Filter.from_chain(ferrofx.Butterworth.lowpass(6000, 2) | ferrofx.Fir.lowpass(31, 8000) | ferrofx.Biquad.peaking(1000, 1.4, -6), fs, learnable=True)
    target = torch.from_numpy(ss.sosfilt(ss.butter(2, 0.05, output="sos"), x))
    opt = torch.optim.SGD(learn.parameters(), lr=1e-3)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.mean((learn(torch.from_numpy(x)) - target) ** 2)
        loss.backward()
        losses.append(float(loss))
        opt.step()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in learn.parameters())
    assert losses[-1] < losses[0], losses


def test_torch_compile_keeps_the_operator_in_one_graph():
    sos = torch.from_numpy(ss.butter(4, 0.2, output="sos"))
    layer = Filter.from_sos(sos, learnable=True)
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((2, 256))).requires_grad_()
    compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
    y = compiled(x)
    torch.testing.assert_close(y, layer(x), rtol=0, atol=0)
    y.sum().backward()
    gx = x.grad.clone()
    x.grad = None
    layer(x).sum().backward()
    torch.testing.assert_close(gx, x.grad, rtol=0, atol=0)


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="shape \\(n_sections, 6\\)"):
        sosfilt(torch.zeros(10), torch.zeros(2, 5))
    with pytest.raises(ValueError, match="stage 0: sos\\[:, 3\\] \\(a0\\) must be finite and nonzero"):
        Filter.from_sos(np.array([[1.0, 0, 0, 0.0, 0, 0]]))
    # a0 other than 1 is the same filter divided through.
    x = torch.from_numpy(np.random.default_rng(2).standard_normal(50))
    sos = np.array([[1.0, 0.5, 0.25, 1.0, -0.5, 0.2]])
    torch.testing.assert_close(sosfilt(x, torch.from_numpy(2 * sos)), sosfilt(x, torch.from_numpy(sos)), rtol=1e-15, atol=1e-15)
    from ferrofx.torch import _host_only

    # A tensor on another device (here PyTorch's `meta`, present on every machine) is
    # refused with the reason, never copied to the host silently.
    with pytest.raises(NotImplementedError, match="CPU and CUDA tensors only"):
        _host_only(torch.zeros(10, device="meta"))


def test_the_adjoint_in_torch_operations_equals_the_cores():
    # What CUDA tensors' gradients run (torch reductions around filters run as GPU
    # filters), here with the CPU filter, against the core's adjoint (tested against
    # finite differences): the composition is the same arithmetic.
    from ferrofx import signal as fsignal
    from ferrofx.torch import _adjoint

    def _host_filter_(y, rows):
        # The device filter's contract (in place, float64 rows, zero state) on the CPU.
        y.copy_(torch.from_numpy(np.ascontiguousarray(fsignal.sosfilt(rows, y.numpy(), axis=-1))))

    rng = np.random.default_rng(11)
    for sections, shape in [(1, (40,)), (4, (3, 500)), (3, (2, 2, 300)), (2, (5, 1)), (3, (2, 2)), (5, (4, 3)), (6, (1, 2, 257))]:
        rows = _sos(rng, sections)
        x, g = rng.standard_normal(shape), rng.standard_normal(shape)
        gx, gs = _adjoint(torch.from_numpy(x), rows, torch.from_numpy(g), _host_filter_)
        want_x, want_s = fsignal.sosfilt_backward(rows, x, g, axis=-1)
        np.testing.assert_allclose(gx.numpy(), want_x, rtol=0, atol=1e-12 * np.abs(want_x).max())
        np.testing.assert_allclose(gs.numpy(), want_s, rtol=0, atol=1e-12 * np.abs(want_s).max())


def test_the_adjoint_in_groups_of_rows_equals_it_whole(monkeypatch):
    # What CUDA tensors' backward runs within a memory budget: groups of rows, the input
    # gradient each row's own arithmetic (the same bits), the coefficients' sums added
    # group by group (within 1e-12); the budget from the environment, refused by name.
    from ferrofx import signal as fsignal
    from ferrofx.torch import _adjoint, _adjoint_rows, _backward_budget

    def _host_filter_(y, rows):
        y.copy_(torch.from_numpy(np.ascontiguousarray(fsignal.sosfilt(rows, y.numpy(), axis=-1))))

    rng = np.random.default_rng(12)
    for sections, shape in [(3, (7, 300)), (2, (2, 5, 129)), (4, (9,)), (1, (3, 1, 64)), (2, (4, 0)), (2, (0, 3))]:
        rows = _sos(rng, sections)
        x, g = torch.from_numpy(rng.standard_normal(shape)), torch.from_numpy(rng.standard_normal(shape))
        whole_x, whole_s = _adjoint(x, rows, g, _host_filter_)
        per_row = (sections + 3) * (shape[-1] + 2) * 8
        for budget in [1, per_row, 2 * per_row + 1, 3 * per_row, None]:
            gx, gs = _adjoint_rows(x, rows, g, _host_filter_, max_bytes=budget)
            assert gx.shape == x.shape
            assert torch.equal(gx, whole_x), (shape, budget)
            np.testing.assert_allclose(gs.numpy(), whole_s.numpy(), rtol=0, atol=1e-12 * whole_s.abs().max().item())
    monkeypatch.setenv("FERROFX_TORCH_BACKWARD_BYTES", "123456")
    assert _backward_budget(torch.device("cpu")) == 123456
    for bad in ["lots", "-5", "0"]:
        monkeypatch.setenv("FERROFX_TORCH_BACKWARD_BYTES", bad)
        with pytest.raises(ValueError, match="FERROFX_TORCH_BACKWARD_BYTES"):
            _backward_budget(torch.device("cpu"))


def test_inductor_keeps_the_operator_and_equals_eager():
    layer = Filter.from_chain(ferrofx.Butterworth.highpass(40, 2) | ferrofx.Fir.lowpass(15, 8000), 48_000, learnable=True)
    x = torch.from_numpy(np.random.default_rng(5).standard_normal((2, 512))).requires_grad_()
    compiled = torch.compile(layer, backend="inductor", fullgraph=True)
    y = compiled(x)
    torch.testing.assert_close(y, layer(x), rtol=1e-12, atol=1e-12)
    y.sum().backward()
    gx = x.grad.clone()
    x.grad = None
    layer(x).sum().backward()
    torch.testing.assert_close(gx, x.grad, rtol=1e-12, atol=1e-12)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (the device check runs these)")


@cuda
def test_cuda_tensors_filter_on_the_device_within_the_float64_bound_of_scipy():
    rng = np.random.default_rng(12)
    sos = ss.ellip(6, 0.5, 60, 0.1, output="sos")
    # The steepest: a 12th-order Chebyshev band-stop (the reference case float32 declines).
    hard = ss.cheby1(12, 1.12, [715.08, 2461.27], "bandstop", fs=48_000, output="sos")
    x = rng.standard_normal((2, 100_000))
    want = ss.sosfilt(hard, x)
    err = np.abs(sosfilt(torch.from_numpy(x).cuda(), torch.from_numpy(hard).cuda()).cpu().numpy() - want).max() / np.abs(want).max()
    print(f"cuda, chebyshev I band-stop order 12: {err:.2e} of the peak from SciPy")
    assert err <= 1e-10, err
    for shape in [(5000,), (3, 40_000), (4, 2, 100_000)]:
        x = rng.standard_normal(shape)
        want = ss.sosfilt(sos, x, axis=-1)
        # An elliptic low-pass at 0.1 Nyquist: well inside the 1e-10 the docs promise for
        # the steepest designs (CPU model: 1e-15 to 1e-12 for designs like it).
        for dtype, tol in [(torch.float64, 1e-12), (torch.float32, 2e-6)]:
            y = sosfilt(torch.from_numpy(x).to("cuda", dtype), torch.from_numpy(sos).cuda())
            assert y.device.type == "cuda" and y.dtype == dtype and tuple(y.shape) == shape
            err = np.abs(y.double().cpu().numpy() - want).max() / np.abs(want).max()
            print(f"cuda {shape} {dtype}: {err:.2e} of the peak from SciPy")
            assert err <= tol, (shape, dtype, err)


@cuda
def test_gradcheck_on_cuda_in_the_input_and_the_coefficients():
    rng = np.random.default_rng(13)
    for sections, shape in [(1, (12,)), (3, (2, 20)), (2, (2, 2, 9))]:
        x = torch.from_numpy(rng.standard_normal(shape)).cuda().requires_grad_()
        sos = torch.from_numpy(_sos(rng, sections)).cuda().requires_grad_()
        assert torch.autograd.gradcheck(sosfilt, (x, sos), eps=1e-6, atol=1e-6, rtol=1e-5)
        assert torch.autograd.gradcheck(sosfilt, (x, sos.detach()), eps=1e-6, atol=1e-6, rtol=1e-5)


@cuda
def test_a_layer_on_cuda_equals_it_on_the_cpu_and_compiles():
    chain = ferrofx.Butterworth.highpass(40, 4) | ferrofx.Fir.lowpass(31, 8000) | ferrofx.Biquad.peaking(1000, 1.4, -6)
    layer = Filter.from_chain(chain, 48_000, learnable=True)
    x = torch.from_numpy(np.random.default_rng(14).standard_normal((2, 2, 20_000)))
    want = layer(x)
    want.sum().backward()
    want_grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    gpu = layer.cuda()
    xc = x.cuda()
    y = gpu(xc)
    torch.testing.assert_close(y.cpu(), want.detach(), rtol=0, atol=1e-9 * float(want.abs().max()))
    y.sum().backward()
    for p, w in zip(gpu.parameters(), want_grads):
        torch.testing.assert_close(p.grad.cpu(), w, rtol=1e-7, atol=1e-9 * float(w.abs().max()))
    compiled = torch.compile(gpu, fullgraph=True)
    torch.testing.assert_close(compiled(xc), y, rtol=1e-12, atol=1e-12)


@cuda
def test_the_device_adjoint_reads_one_launchs_forward_signals():
    # The backward pass on CUDA tensors: the forward signals from one launch (every
    # section's output kept) equal the per-section device filters bit for bit, rows short
    # (one thread per row) and long (the chunked scan); the whole adjoint (those signals,
    # the step kernel reading them backwards) within 1e-12 of the core's.
    from ferrofx import signal as fsignal
    from ferrofx.torch import _adjoint, _device_filter_, _device_step, _device_taps

    # With FERROFX_CUDA_FUSED set, the long rows' filters run the fused scan: other bits.
    fused = os.environ.get("FERROFX_CUDA_FUSED", "0").strip() not in ("", "0")
    rng = np.random.default_rng(15)
    for sections, shape in [(3, (2, 300)), (5, (3, 70_000)), (1, (1, 9)), (4, (2, 2, 40_001))]:
        rows = _sos(rng, sections)
        n = shape[-1]
        x = torch.from_numpy(rng.standard_normal(shape)).cuda()
        signals = torch.zeros((sections + 1,) + shape[:-1] + (n + 2,), dtype=torch.float64, device="cuda")
        signals[0, ..., :n] = x
        _device_taps(signals, rows, n)
        each = x.clone()
        for s in range(sections):
            _device_filter_(each, rows[s:s + 1])
            if fused:
                torch.testing.assert_close(signals[s + 1, ..., :n], each, rtol=0, atol=1e-12 * float(each.abs().max()))
            else:
                assert torch.equal(signals[s + 1, ..., :n], each), (sections, shape, s)
        assert not signals[..., n:].any(), "wrote past the frames"
        g = rng.standard_normal(shape)
        gx, gs = _adjoint(x, rows, torch.from_numpy(g).cuda(), _device_filter_, _device_step, _device_taps)
        want_x, want_s = fsignal.sosfilt_backward(rows, x.cpu().numpy(), g, axis=-1)
        np.testing.assert_allclose(gx.cpu().numpy(), want_x, rtol=0, atol=1e-12 * np.abs(want_x).max())
        np.testing.assert_allclose(gs.cpu().numpy(), want_s, rtol=0, atol=1e-12 * np.abs(want_s).max())


def test_half_precision_tensors_and_refused_dtypes():
    # float16 and bfloat16 (NumPy has no bfloat16): the layer computes in float64 and
    # rounds once, so the result is the float64 result of the widened input, rounded; the
    # package's functions widen them to float32 and give their dtype back. Complex and
    # integer tensors are refused by name, never filtered with a part dropped or rounded.
    rng = np.random.default_rng(16)
    sos = torch.from_numpy(_sos(rng, 3))
    chain = ferrofx.Butterworth.highpass(40, 4) | ferrofx.Biquad.peaking(1000, 1.4, -6)
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.from_numpy(rng.standard_normal((2, 3, 500))).to(dtype)
        y = sosfilt(x, sos)
        assert y.dtype == dtype and torch.equal(y, sosfilt(x.double(), sos).to(dtype))
        xg = x.clone().requires_grad_()
        sosfilt(xg, sos).float().sum().backward()
        assert xg.grad.dtype == dtype and torch.isfinite(xg.grad.float()).all()
        y = chain.process(x, 48_000)
        assert y.dtype == dtype and torch.equal(y, chain.process(x.float(), 48_000).to(dtype))
        # SciPy's functions give SciPy's result type (float64 here), on tensors as on arrays.
        y = ferrofx.sosfilt(sos.numpy(), x)
        assert y.dtype == torch.float64 and torch.equal(y, torch.from_numpy(ss.sosfilt(sos.numpy(), x.double().numpy())))
        layer = Filter.from_chain(chain | ferrofx.Fir.lowpass(15, 8000), 48_000)
        assert layer(x).dtype == dtype
    for bad in (torch.complex64, torch.int16, torch.bool):
        x = torch.ones((2, 100), dtype=bad)
        with pytest.raises(ValueError, match=f"real floating-point tensors.*x is {bad}"):
            sosfilt(x, sos)
        with pytest.raises(ValueError, match="real floating-point tensors"):
            Filter.from_chain(ferrofx.Fir.lowpass(15, 8000), 48_000)(x)
    with pytest.raises(ValueError, match="sos is torch.complex128"):
        sosfilt(torch.ones(100), sos.to(torch.complex128))
