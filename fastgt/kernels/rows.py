"""Whole-state row operations of the algorithms' initialisations, rows in parallel for a
big state (mixing.big).

An initialisation touches every row of a state once or twice; as numpy expressions those
passes are serial and allocate temporaries (at n = 10^6, d = 100, D-SGD's z = x - gamma g
took 1.9 s, ten steps' worth). These give numpy's bits: each element is the same one or
two roundings, whatever the thread count: compiled without FMA contraction (EXACT_FLAGS),
which would fuse a product into its sum (numba marks every floating-point operation of a
function compiled with it contractible, rounding.mul's too).
"""

import numpy as np
from numba import njit, prange

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .mixing import big

#: the kernels' flags without fastmath: every operation rounded on its own, as numpy's
EXACT_FLAGS = dict(NJIT_FLAGS, fastmath=False)


@njit(**dict(INLINE_FLAGS, fastmath=False))  # a row helper, without FMA (module doc)
def row(out, x, a, g, i, scaled):
    """Row i: out = x + a g (``scaled``: a g rounded, then the sum, in float64, float32
    elements widened, rounded again where out holds less; as numpy's ``x + a * g`` of
    float64 arrays, and ``x - gamma * g`` with a = -gamma), else out = x."""
    if scaled:
        for k in range(out.shape[1]):
            out[i, k] = np.float64(x[i, k]) + a * np.float64(g[i, k])
    else:
        for k in range(out.shape[1]):
            out[i, k] = x[i, k]


@njit(parallel=True, **EXACT_FLAGS)
def all_rows_parallel(out, x, a, g, scaled):
    for pi in prange(out.shape[0]):
        row(out, x, a, g, np.int64(pi), scaled)  # a parfor's index may be unsigned


@njit(**EXACT_FLAGS)
def all_rows(out, x, a, g, scaled):
    for i in range(out.shape[0]):
        row(out, x, a, g, i, scaled)


def axpy(out, x, a, g):
    """out = x + a g, element by element (``row``), rows in parallel for a big state."""
    (all_rows_parallel if big(out) else all_rows)(out, x, a, g, True)


def copy(out, x):
    """out = x (rounded where out holds less), rows in parallel for a big state."""
    (all_rows_parallel if big(out) else all_rows)(out, x, 0.0, x, False)
