"""Decentralized SGD (D-SGD).

    g_i(t) = grad F_i(x_i(t), xi_i(t))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma g_j(t))

Run on z = x - gamma g: x(t+1) = W z(t), z(t+1) = x(t+1) - gamma g(t+1), so a step reads
one n x d array and writes one. State: Z double-buffered and X (3 n d floats).
"""

from __future__ import annotations

import numpy as np

from ..kernels.mixing import column_means
from ..kernels.oracles import stochastic_grads
from ..kernels.steps import dsgd_chunk
from .base import Algorithm, Context, initial_point


def init(ctx: Context, x0: np.ndarray | None) -> dict:
    n, d = ctx.W.n, ctx.problem.d
    X = np.empty((n, d))
    Z2 = np.empty((2, n, d))
    initial_point(X, x0, ctx.seed)
    stochastic_grads(0, X, Z2[1], *ctx.oracle_args)  # Z2[1] holds g(0) for a moment
    np.multiply(Z2[1], -ctx.gamma, out=Z2[0])
    Z2[0] += X
    column_means(Z2[0], ctx.part, 0, ctx.means[0])
    return {"cur": 0, "Z2": Z2, "X": X}


def advance(ctx: Context, st: dict, t0: int, steps: int) -> None:
    st["cur"] = dsgd_chunk(t0, steps, st["cur"], st["Z2"], st["X"], ctx.scratch, ctx.part,
                           ctx.means, *ctx.mixing_args, *ctx.oracle_args)


def iterates(st: dict):
    return st["X"], None


DSGD = Algorithm("dsgd", init, advance, iterates, tracking=False, doc=__doc__)
