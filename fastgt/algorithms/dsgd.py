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
    return Z2, Z2, batch.new_rows(batch.C, at=1024)  # the kernels' second slot is unused


def init(batch: Batch) -> tuple:
    Z2, _, X = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        x, z, g = batch.used(X[c]), batch.used(Z2[c, 0]), batch.used(Z2[c, 1])
        initial_point(x, cell.x0, cell.seed, batch.d)
        stochastic_grads(0, x, g, *batch.oracle_args(c))  # Z2[c, 1] holds g(0)
        np.multiply(g, -cell.gamma, out=z)
        z += x
        column_means(z, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch: Batch, arrays: tuple, cur: int, c: int):
    return batch.used(arrays[2][c]), None


def state(batch: Batch, arrays: tuple, cur: int, c: int, t: int) -> dict:
    return {"X": batch.real(arrays[2][c])}


DSGD = Algorithm("dsgd", steps.DSGD, alloc, init, iterates, state, doc=__doc__)
