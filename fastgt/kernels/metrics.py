"""Recorded metrics: a record costs two passes over X and Y (their block sums, then the
sums below), per row block, reduced in block order; quadratic_metrics_parallel takes the
blocks in parallel, for states of SMALL_RUN elements or more (mixing.big): the same bits
on any thread count, a record of a 10^6-node run is no serial pass, and a tiny cell's
pays no parallel loop's start.

For a diagonal quadratic f(x) = 1/2 sum_k abar_k (x_k - xstar_k)^2 + f*:
out = [loss_avg, loss_nodes, consensus, grad_norm2, tracking]
  loss_avg   = f(xbar) - f*,                loss_nodes = (1/n) sum_i f(x_i) - f*
  consensus  = (1/n) sum_i ||x_i - xbar||^2, grad_norm2 = ||grad f(xbar)||^2
  tracking   = (1/n) sum_i ||y_i - ybar||^2 (NaN when has_y is False)
"""

import numpy as np
from numba import njit, prange

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .mixing import ROW0, block_range, block_sums, block_sums_parallel, reduce_blocks

#: what quadratic_metrics writes to ``out``, in order (names of fastgt.metrics)
KERNEL_METRICS = ("loss_avg", "loss_nodes", "consensus", "grad_norm2", "tracking")


@njit(**INLINE_FLAGS)
def block_terms(X, Y, has_y, abar, xstar, xbar, ybar, sums, b):
    """sums[b] = block b's sums of f_i(x_i) - f* (twice), ||x_i - xbar||^2 and
    ||y_i - ybar||^2 (0 when has_y is False), rows in order."""
    lo, hi = block_range(b, sums.shape[0], X.shape[0])
    ln = 0.0
    cons = 0.0
    trk = 0.0
    for i in range(lo, hi):
        for k in range(X.shape[1]):
            e = X[i, k] - xstar[k]
            ln += abar[k] * e * e
            c = X[i, k] - xbar[k]
            cons += c * c
        if has_y:
            for k in range(X.shape[1]):
                c = Y[i, k] - ybar[k]
                trk += c * c
    sums[b, 0] = ln
    sums[b, 1] = cons
    sums[b, 2] = trk


@njit(**NJIT_FLAGS)
def centres(part, has_y, n, d):
    """xbar and ybar (zeros when has_y is False) from the block sums in part[:, 0], [:, 1]."""
    xbar = np.empty(d)
    ybar = np.zeros(d)
    reduce_blocks(part, ROW0, xbar, n)  # no literal argument (mixing.ROW0)
    if has_y:
        reduce_blocks(part, ROW0 + 1, ybar, n)
    return xbar, ybar


@njit(**NJIT_FLAGS)
def totals(xbar, abar, xstar, sums, n, has_y, out):
    """out from xbar and the blocks' sums, reduced in block order."""
    la = 0.0
    gn = 0.0
    for k in range(xbar.shape[0]):
        e = xbar[k] - xstar[k]
        la += abar[k] * e * e
        gn += (abar[k] * e) ** 2
    tot = np.zeros(3)
    for b in range(sums.shape[0]):
        for q in range(3):
            tot[q] += sums[b, q]
    out[0] = 0.5 * la
    out[1] = 0.5 * tot[0] / n
    out[2] = tot[1] / n
    out[3] = gn
    out[4] = tot[2] / n if has_y else np.nan


@njit(**NJIT_FLAGS)
def quadratic_metrics(X, Y, has_y, abar, xstar, part, out):
    """The record's metrics, blocks in order (a state under SMALL_RUN: mixing.big)."""
    block_sums(X, part, ROW0)
    if has_y:
        block_sums(Y, part, ROW0 + 1)
    xbar, ybar = centres(part, has_y, X.shape[0], X.shape[1])
    sums = np.zeros((part.shape[0], 3))
    for b in range(part.shape[0]):
        block_terms(X, Y, has_y, abar, xstar, xbar, ybar, sums, b)
    totals(xbar, abar, xstar, sums, X.shape[0], has_y, out)


@njit(parallel=True, **NJIT_FLAGS)
def block_terms_parallel(X, Y, has_y, abar, xstar, xbar, ybar, sums):
    """block_terms of every block, blocks in parallel."""
    for pb in prange(sums.shape[0]):
        block_terms(X, Y, has_y, abar, xstar, xbar, ybar, sums, np.int64(pb))


@njit(**NJIT_FLAGS)
def quadratic_metrics_parallel(X, Y, has_y, abar, xstar, part, out):
    """quadratic_metrics with the blocks in parallel (a big state): the same bits. Its
    parallel loops are functions of their own: a parallel function's array expressions
    would become parallel loops too, each more to compile."""
    block_sums_parallel(X, part, ROW0)
    if has_y:
        block_sums_parallel(Y, part, ROW0 + 1)
    xbar, ybar = centres(part, has_y, X.shape[0], X.shape[1])
    sums = np.zeros((part.shape[0], 3))
    block_terms_parallel(X, Y, has_y, abar, xstar, xbar, ybar, sums)
    totals(xbar, abar, xstar, sums, X.shape[0], has_y, out)
