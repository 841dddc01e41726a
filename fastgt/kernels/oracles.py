"""Stochastic gradients of diagonal quadratics, row by row.

f_i(x) = 1/2 sum_k a_ik x_k^2 - b_ik x_k (+ const); grad_i(x) = a_i * x - b_i, or a0 * x
when the problem is homogeneous (``hetero`` False: Setup A's f_i = ||x||^2 is a0 = 2).

Noise kinds: NONE; GAUSSIAN (Setup A: i.i.d. N(0, sigma2/d) per node, step, coordinate);
STRUCTURED (Setup B: one xi ~ N(0, sigma2/d I_d) per step shared by all nodes, node i's
coordinate k gets xi_k * uv[0, i] for k < dv and xi_k * uv[1, i] otherwise).

Row helpers write row r of a 2-d array (no per-row views, see mixing.py).
"""

from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .mixing import ROW0
from .rng import STREAM_NOISE, fill_normals, row_key, step_key, stream_key
from .rounding import fma, mul

NONE = 0
GAUSSIAN = 1
STRUCTURED = 2


@njit(**INLINE_FLAGS)
def noise_weight(k, v, u, dv):
    """Node's factor on coordinate k of a noise row: v for k < dv, u otherwise."""
    return v if k < dv else u


@njit(**INLINE_FLAGS)
def noise_at(N, rn, k, v, u, dv):
    """Coordinate k of a node's noise, N[rn, k] v (k < dv) or N[rn, k] u (k >= dv): with N
    a row of normals and v = u = 1 for gaussian noise, the step's shared draw and the
    node's structure values for structured noise, v = u = 0 for none (N finite). An
    uncontracted product (rounding.mul)."""
    return mul(N[rn, k], noise_weight(k, v, u, dv))


@njit(**INLINE_FLAGS)
def grad_hom(N, rn, k, v, u, dv, x, a0):
    """Coordinate k of a noisy homogeneous gradient, fma(a0, x, noise_at): with grad_het,
    the one definition wherever GT computes or recomputes a gradient (the kernels and
    stochastic_grads), so that every path gives the same bits."""
    return fma(a0, x, noise_at(N, rn, k, v, u, dv))


@njit(**INLINE_FLAGS)
def grad_het(N, rn, k, v, u, dv, x, A, B, i):
    """Coordinate k of node i's noisy gradient, fma(N[rn, k], w, fma(A_ik, x, -B_ik)) with
    w = noise_weight(k, v, u, dv)."""
    return fma(N[rn, k], noise_weight(k, v, u, dv), fma(A[i, k], x, -B[i, k]))


@njit(**INLINE_FLAGS)
def draw_shared(kind, tkey, xi, row, scale, d):
    """xi[row, :d] = the step's shared draw (Setup B's xi); call once per step before the
    rows. The row's padding past d stays zero, so padded coordinates get no noise."""
    if kind == STRUCTURED:
        fill_normals(row_key(tkey, -1), xi, row, scale, d)


@njit(**INLINE_FLAGS)
def grad_row(g, i, x, N, rn, v, u, dv, hetero, a0, A, B):
    """g[i] = node i's noisy gradient at x[i], the noise as in noise_at (N may be g)."""
    d = x.shape[1]
    if hetero:
        for k in range(d):
            g[i, k] = grad_het(N, rn, k, v, u, dv, x[i, k], A, B, i)
    else:
        for k in range(d):
            g[i, k] = grad_hom(N, rn, k, v, u, dv, x[i, k], a0)


@njit(**NJIT_FLAGS)
def stochastic_grads(t, X, G, seed, kind, scale, xi, uv, dv, d, hetero, a0, A, B):
    """G = grad F(X, xi^(t)) for every node of one cell (used once, at t = 0, and by
    tests); xi (1, >= d) and uv (1, 2, n) are the cell's own. Rows may be padded past the
    problem's d with zeros (X, G, A and B alike): the padding gets no noise and stays zero."""
    tkey = step_key(stream_key(seed, STREAM_NOISE), t)
    draw_shared(kind, tkey, xi, ROW0, scale, d)
    for i in range(X.shape[0]):
        N, rn, v, u = xi, ROW0, 0.0, 0.0  # no noise (xi: zeros, never drawn)
        if kind == GAUSSIAN:
            fill_normals(row_key(tkey, i), G, i, scale, d)
            N, rn, v, u = G, i, 1.0, 1.0
        elif kind == STRUCTURED:
            v, u = uv[0, 0, i], uv[0, 1, i]
        grad_row(G, i, X, N, rn, v, u, dv, hetero, a0, A, B)


@njit(**NJIT_FLAGS)
def normal_matrix(seed, stream, out, scale, d):
    """out[i, k] = scale * N(0, 1) for k < d from stream ``stream`` of ``seed`` (step 0)."""
    tkey = step_key(stream_key(seed, stream), 0)
    for i in range(out.shape[0]):
        fill_normals(row_key(tkey, i), out, i, scale, d)
