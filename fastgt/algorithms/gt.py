"""Gradient Tracking, the paper's Algorithm 1 exactly.

    y_i(0) = g_i(0) = grad F_i(x_i(0), xi_i(0))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma y_j(t))
    g_i(t+1) = grad F_i(x_i(t+1), xi_i(t+1))
    y_i(t+1) = sum_j w_ij y_j(t) + g_i(t+1) - g_i(t)

Invariant: ybar(t) = gbar(t) at every t. State: X, Y double-buffered and G (5 n d floats);
G is stored for gaussian noise only: with structured or no noise g_i(t) is recomputed from
x_i(t) and the step's shared draw, to the same bits (4 n d floats, one array less to stream).
"""

from __future__ import annotations

import numpy as np

from ..kernels import steps
from ..kernels.mixing import column_means
from ..kernels.oracles import GAUSSIAN, stochastic_grads
from .base import Algorithm, Batch, aligned, initial_point


def alloc(batch: Batch) -> tuple:
    G = (batch.new_rows(batch.C, at=512) if batch.oracle.kind == GAUSSIAN
         else aligned((batch.C, 0, batch.dp)))
    return batch.new_rows(batch.C, 2), batch.new_rows(batch.C, 2, at=1024), G


def init(batch: Batch) -> tuple:
    X2, Y2, G = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        X, Y = batch.used(X2[c, 0]), batch.used(Y2[c, 0])
        initial_point(X, cell.x0, cell.seed, batch.d)
        stochastic_grads(0, X, Y, *batch.oracle_args(c))  # y(0) = g(0)
        if len(G[c]):
            G[c] = Y2[c, 0]
        column_means(X, batch.part[c], 0, batch.means[c, 0])
        column_means(Y, batch.part[c], 1, batch.means[c, 1])
    return arrays


def iterates(batch: Batch, arrays: tuple, cur: int, c: int):
    X2, Y2, _ = arrays
    return batch.used(X2[c, cur]), batch.used(Y2[c, cur])


def state(batch: Batch, arrays: tuple, cur: int, c: int, t: int) -> dict:
    X, Y = iterates(batch, arrays, cur, c)
    G = arrays[2][c]
    if len(G):
        return {"X": batch.real(X), "Y": batch.real(Y), "G": batch.real(G)}

    def recompute():  # g(t) from x(t) and step t's draw, as the kernel has it
        out = np.zeros_like(X)
        stochastic_grads(t, X, out, *batch.oracle_args(c, t))
        return batch.real(out)

    return {"X": batch.real(X), "Y": batch.real(Y), "G": recompute}


GT = Algorithm("gt", steps.GT, alloc, init, iterates, state, doc=__doc__)
