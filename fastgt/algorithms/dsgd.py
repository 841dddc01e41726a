"""Decentralized SGD (D-SGD).

    g_i(t) = grad F_i(x_i(t), xi_i(t))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma g_j(t))

Run on z = x - gamma g: x(t+1) = W z(t), z(t+1) = x(t+1) - gamma g(t+1), so a step reads
one n x d array and writes one. State: Z double-buffered and X (3 n d floats).
"""

from __future__ import annotations

import numpy as np

from ..kernels import steps
from ..kernels.mixing import column_means
from ..kernels.oracles import stochastic_grads
from .base import Algorithm, Batch, initial_point


def alloc(batch: Batch) -> tuple:
    Z2 = batch.new_rows(batch.C, 2)
    return Z2, Z2, batch.new_rows(batch.C)  # the kernels' second slot is unused


def init(batch: Batch) -> tuple:
    Z2, _, X = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        initial_point(X[c], cell.x0, cell.seed, batch.d)
        stochastic_grads(0, X[c], Z2[c, 1], *batch.oracle_args(c))  # Z2[c, 1] holds g(0)
        np.multiply(Z2[c, 1], -cell.gamma, out=Z2[c, 0])
        Z2[c, 0] += X[c]
        column_means(Z2[c, 0], batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(arrays: tuple, cur: int, c: int):
    return arrays[2][c], None


def state(batch: Batch, arrays: tuple, cur: int, c: int, t: int) -> dict:
    return {"X": batch.unpad(iterates(arrays, cur, c)[0])}


DSGD = Algorithm("dsgd", steps.DSGD, alloc, init, iterates, state, doc=__doc__)
