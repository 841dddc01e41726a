"""Stochastic gradients of diagonal quadratics, row by row.

f_i(x) = 1/2 sum_k a_ik x_k^2 - b_ik x_k (+ const); grad_i(x) = a_i * x - b_i, or a0 * x
when the problem is homogeneous (``hetero`` False: Setup A's f_i = ||x||^2 is a0 = 2).

Noise kinds: NONE; GAUSSIAN (Setup A: i.i.d. N(0, sigma2/d) per node, step, coordinate);
STRUCTURED (Setup B: one xi ~ N(0, sigma2/d I_d) per step shared by all nodes, node i's
coordinate k gets xi_k * uv[0, i] for k < dv and xi_k * uv[1, i] otherwise).
"""

from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .rng import STREAM_NOISE, fill_normals, row_key, step_key, stream_key

NONE = 0
GAUSSIAN = 1
STRUCTURED = 2


@njit(**INLINE_FLAGS)
def draw_shared(kind, tkey, xi, scale):
    """The step's shared draw (Setup B's xi); call once per step before the rows."""
    if kind == STRUCTURED:
        fill_normals(row_key(tkey, -1), xi, scale)


@njit(**NJIT_FLAGS)
def noise_row(out, kind, tkey, i, scale, xi, uv, dv):
    """out[:d] = node i's gradient noise at the step with key tkey (d = len(xi)).

    ``out`` may be longer than d (padded to whole vectors): gaussian noise then fills it all,
    coordinate k's value never depends on the length."""
    if kind == GAUSSIAN:
        fill_normals(row_key(tkey, i), out, scale)
    elif kind == STRUCTURED:
        v = uv[0, i]
        u = uv[1, i]
        for k in range(dv):
            out[k] = xi[k] * v
        for k in range(dv, xi.shape[0]):
            out[k] = xi[k] * u
    else:
        for k in range(out.shape[0]):
            out[k] = 0.0


@njit(**NJIT_FLAGS)
def add_grad_row(g, x, i, hetero, a0, A, B):
    """g += grad f_i(x)."""
    d = g.shape[0]
    if hetero:
        for k in range(d):
            g[k] += A[i, k] * x[k] - B[i, k]
    else:
        for k in range(d):
            g[k] += a0 * x[k]


@njit(**NJIT_FLAGS)
def stochastic_grads(t, X, G, seed, kind, scale, xi, uv, dv, hetero, a0, A, B):
    """G = grad F(X, xi^(t)) for every node (used once, at t = 0, and by tests)."""
    tkey = step_key(stream_key(seed, STREAM_NOISE), t)
    draw_shared(kind, tkey, xi, scale)
    for i in range(X.shape[0]):
        noise_row(G[i], kind, tkey, i, scale, xi, uv, dv)
        add_grad_row(G[i], X[i], i, hetero, a0, A, B)


@njit(**NJIT_FLAGS)
def normal_matrix(seed, stream, out, scale):
    """out[i, k] = scale * N(0, 1) from stream ``stream`` of ``seed`` (step 0)."""
    tkey = step_key(stream_key(seed, stream), 0)
    for i in range(out.shape[0]):
        fill_normals(row_key(tkey, i), out[i], scale)
