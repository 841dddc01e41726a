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

NONE = 0
GAUSSIAN = 1
STRUCTURED = 2


@njit(**INLINE_FLAGS)
def draw_shared(kind, tkey, xi, c, scale):
    """xi[c] = the step's shared draw (Setup B's xi); call once per step before the rows."""
    if kind == STRUCTURED:
        fill_normals(row_key(tkey, -1), xi, c, scale, xi.shape[1])


@njit(**INLINE_FLAGS)
def noise_row(out, r, kind, tkey, i, scale, xi, c, uv, dv, d):
    """out[r, :d] = node i's gradient noise at the step with key tkey; xi[c] is the step's
    shared draw (at least as wide as ``out``), uv[c] the cell's structure vectors.

    ``out`` may be wider than d (padded to whole vectors): gaussian noise fills only the
    pairs coordinates < d need (coordinate k's value never depends on the width); the
    other kinds fill the whole row in one loop with no remainder."""
    if kind == GAUSSIAN:
        fill_normals(row_key(tkey, i), out, r, scale, d)
    elif kind == STRUCTURED:
        v = uv[c, 0, i]
        u = uv[c, 1, i]
        for k in range(out.shape[1]):
            out[r, k] = xi[c, k] * (v if k < dv else u)
    else:
        for k in range(out.shape[1]):
            out[r, k] = 0.0


@njit(**INLINE_FLAGS)
def grad_row(g, r, x, i, hetero, a0, A, B):
    """g[r] += grad f_i(x[i])."""
    d = x.shape[1]
    if hetero:
        for k in range(d):
            g[r, k] += A[i, k] * x[i, k] - B[i, k]
    else:
        for k in range(d):
            g[r, k] += a0 * x[i, k]


@njit(**NJIT_FLAGS)
def stochastic_grads(t, X, G, seed, kind, scale, xi, uv, dv, hetero, a0, A, B):
    """G = grad F(X, xi^(t)) for every node of one cell (used once, at t = 0, and by
    tests); xi (1, >= d) and uv (1, 2, n) are the cell's own."""
    tkey = step_key(stream_key(seed, STREAM_NOISE), t)
    draw_shared(kind, tkey, xi, ROW0, scale)
    for i in range(X.shape[0]):
        noise_row(G, i, kind, tkey, i, scale, xi, ROW0, uv, dv, G.shape[1])
        grad_row(G, i, X, i, hetero, a0, A, B)


@njit(**NJIT_FLAGS)
def normal_matrix(seed, stream, out, scale):
    """out[i, k] = scale * N(0, 1) from stream ``stream`` of ``seed`` (step 0)."""
    tkey = step_key(stream_key(seed, stream), 0)
    for i in range(out.shape[0]):
        fill_normals(row_key(tkey, i), out, i, scale, out.shape[1])
