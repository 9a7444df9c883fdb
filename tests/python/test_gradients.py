"""`ferrofx.signal.sosfilt_backward` (the gradients a differentiable layer needs) against
central differences of SciPy's own `sosfilt`: the forward that defines the gradient is
not FerroFX's, so a wrong adjoint cannot agree with it by construction."""

import numpy as np
import pytest
import scipy.signal as ss

from ferrofx.signal import sosfilt_backward


def _random_sos(rng, sections):
    """Stable random sections (poles inside radius 0.95), a0 = 1."""
    r = rng.uniform(0.2, 0.95, sections)
    th = rng.uniform(0.0, np.pi, sections)
    b = rng.standard_normal((sections, 3))
    a = np.stack([np.ones(sections), -2 * r * np.cos(th), r * r], axis=1)
    return np.concatenate([b, a], axis=1)


def _loss(sos, x, g, axis):
    # The a0 column enters through the difference equation: the section divided by a0.
    return float(np.sum(g * ss.sosfilt(sos / sos[:, 3:4], x, axis=axis)))


def _central(f, v, h=1e-6):
    out = np.zeros_like(v)
    flat, grad = v.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + h
        up = f()
        flat[i] = keep - h
        down = f()
        flat[i] = keep
        grad[i] = (up - down) / (2 * h)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_gradients_equal_central_differences_of_scipys_sosfilt(seed):
    rng = np.random.default_rng(seed)
    sections = 1 + seed % 4
    shape, axis = [((37,), -1), ((3, 29), 1), ((21, 2), 0), ((2, 13, 3), 1)][seed % 4]
    sos = _random_sos(rng, sections)
    x = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    gx, gs = sosfilt_backward(sos, x, g, axis=axis)
    assert gx.shape == x.shape and gs.shape == sos.shape
    assert gx.dtype == np.float64 and gs.dtype == np.float64
    want_x = _central(lambda: _loss(sos, x, g, axis), x)
    want_s = _central(lambda: _loss(sos, x, g, axis), sos)
    np.testing.assert_allclose(gx, want_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gs, want_s, rtol=1e-5, atol=1e-5)


def test_a_designed_filter_and_the_adjoint_identity():
    """For a designed cascade the input gradient is the filter run backwards in time
    (an LTI filter's adjoint), at full length."""
    sos = ss.ellip(8, 0.5, 60, 0.2, output="sos")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 5000))
    g = rng.standard_normal((4, 5000))
    gx, gs = sosfilt_backward(sos, x, g)
    want = ss.sosfilt(sos, g[:, ::-1])[:, ::-1]
    np.testing.assert_allclose(gx, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    # The coefficient gradient of a batch is the sum of its rows' gradients.
    per_row = sum(sosfilt_backward(sos, x[i], g[i])[1] for i in range(4))
    np.testing.assert_allclose(gs, per_row, rtol=1e-9, atol=1e-9 * np.abs(per_row).max())


def test_float32_in_gives_float32_out_and_bad_arguments_are_refused():
    sos = ss.butter(4, 0.1, output="sos")
    x = np.ones(64, np.float32)
    gx, gs = sosfilt_backward(sos.astype(np.float32), x, x)
    assert gx.dtype == np.float32 and gs.dtype == np.float32
    with pytest.raises(ValueError, match="grad_y must have the shape"):
        sosfilt_backward(sos, x, x[:10])
    bad = sos.copy()
    bad[0, 3] = 2.0
    with pytest.raises(ValueError, match="should be all ones"):
        sosfilt_backward(bad, x, x)
    with pytest.raises(NotImplementedError):
        sosfilt_backward(sos, x.astype(np.complex128), x)
