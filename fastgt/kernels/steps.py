"""Fused time loops of GT and D-SGD over a batch of C cells, in place.

A batch is C independent runs that share n, d, the sparsity pattern of W and the problem;
they may differ in weights (alpha, self weight), stepsize, noise scale and seed. A single
run is C = 1. Arrays (``state``, ``mix``, ``oracle`` tuples):

    state  = (S1, S2, S3, scratch, part, means)
             GT:    S1 = X (C, 2, n, d), S2 = Y (C, 2, n, d), S3 = G (C, n, d)
             D-SGD: S1 = Z = X - gamma G (C, 2, n, d), S2 unused, S3 = X (C, n, d)
             scratch (C, nb, d), part (C, nb, 2, d), means (C, 2, d)
    mix    = (indptr, indices, weights (C, nnz), beta (C,), gamma (C,))
    oracle = (seed (C,), kind, scale (C,), xi (C, d), uv (C, 2, m), dv, hetero, a0, A, B)

Buffers come in pairs, ``[:, cur]`` current and ``[:, 1 - cur]`` next; drivers return the
new ``cur``. One step of one cell is: the shared draw, then every row block (mix, noise,
gradient, update, block column sums), then the mean-term reduction. Two drivers order the
same work differently and give identical bits:

- ``chunk_blocks``: per step, one parallel pass over all (cell, block) pairs: for big runs;
- ``chunk_cells``: cells in parallel, each advanced through all steps by one thread, no
  per-step barrier: for batches of small cells.
"""

from numba import njit, prange

from ..config import NJIT_FLAGS
from .mixing import accumulate, block_range, mix_rows, reduce_blocks, zero
from .oracles import draw_shared, noise_row
from .rng import STREAM_NOISE, step_key, stream_key

GT = 0
DSGD = 1


@njit(**NJIT_FLAGS)
def gt_row_update(xr, yr, g, gi, i, gamma, hetero, a0, A, B):
    """With xr = (W X)_i, yr = (W Y)_i and g = node i's noise, in one pass:
    x' = xr - gamma yr, g' = g + grad f_i(x'), y' = yr + g' - g_old, g_old <- g'."""
    d = xr.shape[0]
    if hetero:
        for k in range(d):
            x = xr[k] - gamma * yr[k]
            gk = g[k] + (A[i, k] * x - B[i, k])
            yr[k] += gk - gi[k]
            gi[k] = gk
            xr[k] = x
    else:
        for k in range(d):
            x = xr[k] - gamma * yr[k]
            gk = g[k] + a0 * x
            yr[k] += gk - gi[k]
            gi[k] = gk
            xr[k] = x


@njit(**NJIT_FLAGS)
def dsgd_row_update(zr, xout, last, g, i, gamma, hetero, a0, A, B):
    """With zr = (W Z)_i = x' and g = node i's noise: z' = x' - gamma (g + grad f_i(x')),
    and x' copied to xout when ``last``."""
    d = zr.shape[0]
    if last:
        for k in range(d):
            xout[k] = zr[k]
    if hetero:
        for k in range(d):
            x = zr[k]
            zr[k] = x - gamma * (g[k] + (A[i, k] * x - B[i, k]))
    else:
        for k in range(d):
            x = zr[k]
            zr[k] = x - gamma * (g[k] + a0 * x)


@njit(**NJIT_FLAGS)
def cell_key(seed, t):
    return step_key(stream_key(seed, STREAM_NOISE), t)


@njit(**NJIT_FLAGS)
def step_begin(c, t, oracle):
    """The step's shared draw (Setup B's xi) of cell c, before any row."""
    seed, kind, scale, xi = oracle[0], oracle[1], oracle[2], oracle[3]
    draw_shared(kind, cell_key(seed[c], t), xi[c], scale[c])


@njit(**NJIT_FLAGS)
def step_blocks(algo, c, t, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): per row, mix the neighbours, draw the
    noise, apply the algorithm's update (gt_row_update or dsgd_row_update) and add the row
    to its block's column sums. D-SGD writes X when ``last``."""
    S1, S2, S3, scratch, part, means = state
    indptr, indices, weights, beta, gamma = mix
    seed, kind, scale, xi, uv, dv, hetero, a0, A, B = oracle
    gt = algo == GT
    n = S3.shape[1]
    nb = scratch.shape[1]
    w, bt, gm = weights[c], beta[c], gamma[c]
    tkey = cell_key(seed[c], t)
    for b in range(b0, b1):
        lo, hi = block_range(b, nb, n)
        g = scratch[c, b]
        pb = part[c, b]
        if bt != 0.0:
            zero(pb)
        for i in range(lo, hi):
            xr = S1[c, 1 - cur, i]  # GT: next X row; D-SGD: next Z row
            yr = S2[c, 1 - cur, i]  # GT: next Y row; D-SGD: unused
            mix_rows(xr, yr, gt, i, indptr, indices, w, bt, means[c, 0], means[c, 1],
                     S1[c, cur], S2[c, cur])
            noise_row(g, kind, tkey, i, scale[c], xi[c], uv[c], dv)
            if gt:
                gt_row_update(xr, yr, g, S3[c, i], i, gm, hetero, a0, A, B)
            else:
                dsgd_row_update(xr, S3[c, i], last, g, i, gm, hetero, a0, A, B)
            if bt != 0.0:
                accumulate(pb[0], xr)
                if gt:
                    accumulate(pb[1], yr)


@njit(**NJIT_FLAGS)
def step_end(algo, c, state, mix):
    """Mean term of the next step: block sums reduced in block order."""
    part, means = state[4], state[5]
    if mix[3][c] != 0.0:
        n = state[2].shape[1]
        reduce_blocks(part[c], 0, means[c, 0], n)
        if algo == GT:
            reduce_blocks(part[c], 1, means[c, 1], n)


@njit(parallel=True, **NJIT_FLAGS)
def chunk_blocks(algo, t0, steps, cur, state, mix, oracle):
    """Steps t0 -> t0 + steps of every cell; each step is one parallel pass over
    (cell, block) pairs."""
    C = state[2].shape[0]
    nb = state[3].shape[1]
    for s in range(steps):
        t = t0 + s + 1
        for c in range(C):
            step_begin(c, t, oracle)
        for w in prange(C * nb):
            c = w // nb
            b = w - c * nb
            step_blocks(algo, c, t, cur, b, b + 1, s == steps - 1, state, mix, oracle)
        for c in range(C):
            step_end(algo, c, state, mix)
        cur = 1 - cur
    return cur


@njit(parallel=True, **NJIT_FLAGS)
def chunk_cells(algo, t0, steps, cur, state, mix, oracle):
    """Steps t0 -> t0 + steps of every cell; cells in parallel, no per-step barrier."""
    C = state[2].shape[0]
    nb = state[3].shape[1]
    for c in prange(C):
        cc = cur
        for s in range(steps):
            t = t0 + s + 1
            step_begin(c, t, oracle)
            step_blocks(algo, c, t, cc, 0, nb, s == steps - 1, state, mix, oracle)
            step_end(algo, c, state, mix)
            cc = 1 - cc
    return cur if steps % 2 == 0 else 1 - cur
