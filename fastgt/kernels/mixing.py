"""Row-wise mixing with W = A + beta (1/n) 1 1^T, A in CSR form, and block reductions.

Rows are processed in ``nb`` fixed blocks (nb depends on n only, never on the thread
count); column sums are accumulated per block and reduced in block order, so every
result is bit-identical for any number of threads.

Row helpers index whole 2-d arrays by row (``out[i, k]``) instead of taking row views: a
view made per row costs two atomic reference-count updates, which at d = 100 cost as much
as the row's arithmetic.
"""

import numpy as np
from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS

#: index 0 as a typed int64 for kernel calls: a literal 0 argument would make numba compile
#: one more copy of the callee (a Literal[int](0) signature)
ROW0 = np.int64(0)
BLOCKS_MAX = 256
ROWS_MIN = 8
#: CSR entries mixed in the first, fused pass over a row (the self loop and up to 4
#: neighbours: a ring or a 2-d torus in one pass); each further entry takes its own pass
FUSED_MAX = 5


@njit(**NJIT_FLAGS)
def n_blocks(n):
    return min(BLOCKS_MAX, (n + ROWS_MIN - 1) // ROWS_MIN)


@njit(**INLINE_FLAGS)
def block_range(b, nb, n):
    bs = (n + nb - 1) // nb
    return b * bs, min(n, (b + 1) * bs)


@njit(**INLINE_FLAGS)
def mix_row(out, i, X, indptr, indices, w, beta, mean):
    """out[i] = beta * mean + sum_e w_e X[j_e] over row i's CSR entries e, added in entry
    order. Rows of 2 to FUSED_MAX entries take one pass (a loop per count, so that each
    vectorizes with its rows' pointers known); entries beyond FUSED_MAX, and rows of fewer
    than 2 (the mean term alone; no valid W has a row of exactly one entry), take a pass
    per entry.

    The first product is written before ``beta * mean`` so that FMA contraction fuses each
    product into the running sum (fma(w0, x0, beta * mean), then fma(w1, x1, .), ...): the
    same roundings as a pass per entry."""
    d = out.shape[1]
    e0, e1 = indptr[i], indptr[i + 1]
    m = min(e1 - e0, FUSED_MAX)
    rest = e0 + FUSED_MAX
    if m < 2:
        for k in range(d):
            out[i, k] = beta * mean[k]
        rest = e0
    else:
        j0, w0, j1, w1 = indices[e0], w[e0], indices[e0 + 1], w[e0 + 1]
        if m == 2:
            for k in range(d):
                out[i, k] = w0 * X[j0, k] + beta * mean[k] + w1 * X[j1, k]
            return
        j2, w2 = indices[e0 + 2], w[e0 + 2]
        if m == 3:
            for k in range(d):
                out[i, k] = w0 * X[j0, k] + beta * mean[k] + w1 * X[j1, k] + w2 * X[j2, k]
            return
        j3, w3 = indices[e0 + 3], w[e0 + 3]
        if m == 4:
            for k in range(d):
                out[i, k] = (w0 * X[j0, k] + beta * mean[k] + w1 * X[j1, k] + w2 * X[j2, k]
                             + w3 * X[j3, k])
            return
        j4, w4 = indices[e0 + 4], w[e0 + 4]
        for k in range(d):
            out[i, k] = (w0 * X[j0, k] + beta * mean[k] + w1 * X[j1, k] + w2 * X[j2, k]
                         + w3 * X[j3, k] + w4 * X[j4, k])
    for e in range(rest, e1):
        j, we = indices[e], w[e]
        for k in range(d):
            out[i, k] += we * X[j, k]


@njit(**INLINE_FLAGS)
def zero_rows(part, b, q0, q1):
    """part[b, q0:q1] = 0, as a loop (array expressions inside prange become nested
    parfors, which cost compile time and nothing else)."""
    for q in range(q0, q1):
        for k in range(part.shape[2]):
            part[b, q, k] = 0.0


@njit(**INLINE_FLAGS)
def add_row(part, b, q, Z, i):
    """part[b, q] += Z[i]."""
    for k in range(Z.shape[1]):
        part[b, q, k] += Z[i, k]


@njit(**INLINE_FLAGS)
def reduce_blocks(part, q, out, n):
    """out = (sum over blocks b, in order, of part[b, q]) / n."""
    d = out.shape[0]
    for k in range(d):
        out[k] = 0.0
    for b in range(part.shape[0]):
        for k in range(d):
            out[k] += part[b, q, k]
    for k in range(d):
        out[k] /= n


@njit(**NJIT_FLAGS)
def block_sums(Z, part, q):
    """part[b, q] = sum of Z's rows in block b, rows added in order (as the step kernels do)."""
    n = Z.shape[0]
    nb = part.shape[0]
    for b in range(nb):
        lo, hi = block_range(b, nb, n)
        zero_rows(part, b, q, q + 1)
        for i in range(lo, hi):
            add_row(part, b, q, Z, i)


@njit(**NJIT_FLAGS)
def column_means(Z, part, q, out):
    """out = mean over rows of Z, summed in the same block order as the step kernels."""
    block_sums(Z, part, q)
    reduce_blocks(part, q, out, Z.shape[0])
