"""kernels/rows.py, the initialisations' whole-state passes, against the numpy expressions
they replace: the same bits (signed zeros included), for float64 and float32 states, on 1
and 2 threads, rows in turn (a small state) and in parallel (from SMALL_RUN elements)."""

import numba
import numpy as np
import pytest

from fastgt.config import SMALL_RUN
from fastgt.kernels import rows


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("shape", [(37, 9), (1201, 90)])
@pytest.mark.parametrize("state", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [1, 2])
def test_axpy_and_copy_are_numpys(state, threads, shape):
    assert (shape[0] * shape[1] >= SMALL_RUN) == (shape[0] > 1000)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(state)
    g = rng.standard_normal(shape).astype(state)
    x[0, :3], g[0, :3] = -0.0, (0.0, -0.0, 1e-300)  # signed zeros and a vanishing product
    g[1, 0] = np.finfo(state).max  # the largest finite element
    a = -0.05
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        z = np.empty_like(x)
        rows.axpy(z, x, a, g)
        ref = x.astype(np.float64) + a * g.astype(np.float64)  # as the inits' numpy was
        with np.errstate(over="ignore"):
            assert np.array_equal(_bits(z), _bits(ref.astype(state)))
        h = np.empty_like(x)
        rows.copy(h, x)
        assert np.array_equal(_bits(h), _bits(x))
        wide = np.empty(x.shape)  # float32 into float64: exact
        rows.copy(wide, x)
        assert np.array_equal(_bits(wide), _bits(x.astype(np.float64)))
    finally:
        numba.set_num_threads(before)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is double here")
def test_axpy_is_not_fused():
    """The product is rounded before the sum: where an FMA would differ, axpy does not (a
    product and sum in x86's 80-bit long double stand for the FMA)."""
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((200, 8)), rng.standard_normal((200, 8))
    z = np.empty_like(x)
    rows.axpy(z, x, -0.05, g)
    exact = x + (-0.05 * g)
    fused = np.array([float(np.longdouble(xv) + np.longdouble(-0.05) * np.longdouble(gv))
                      for xv, gv in zip(x.ravel(), g.ravel())]).reshape(x.shape)
    assert np.array_equal(z, exact)
    assert not np.array_equal(fused, exact)  # the check can tell the two apart
