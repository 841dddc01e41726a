"""Gradient Tracking, the paper's Algorithm 1 exactly.

    y_i(0) = g_i(0) = grad F_i(x_i(0), xi_i(0))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma y_j(t))
    g_i(t+1) = grad F_i(x_i(t+1), xi_i(t+1))
    y_i(t+1) = sum_j w_ij y_j(t) + g_i(t+1) - g_i(t)

Invariant: ybar(t) = gbar(t) at every t. State: X, Y double-buffered and G (5 n d floats).
"""

from __future__ import annotations

import numpy as np

from ..kernels.mixing import column_means
from ..kernels.oracles import stochastic_grads
from ..kernels.steps import gt_chunk
from .base import Algorithm, Context, initial_point


def init(ctx: Context, x0: np.ndarray | None) -> dict:
    n, d = ctx.W.n, ctx.problem.d
    X2 = np.empty((2, n, d))
    Y2 = np.empty((2, n, d))
    G = np.empty((n, d))
    initial_point(X2[0], x0, ctx.seed)
    stochastic_grads(0, X2[0], G, *ctx.oracle_args)
    Y2[0] = G
    column_means(X2[0], ctx.part, 0, ctx.means[0])
    column_means(Y2[0], ctx.part, 1, ctx.means[1])
    return {"cur": 0, "X2": X2, "Y2": Y2, "G": G}


def advance(ctx: Context, st: dict, t0: int, steps: int) -> None:
    st["cur"] = gt_chunk(t0, steps, st["cur"], st["X2"], st["Y2"], st["G"], ctx.scratch,
                         ctx.part, ctx.means, *ctx.mixing_args, *ctx.oracle_args)


def iterates(st: dict):
    return st["X2"][st["cur"]], st["Y2"][st["cur"]]


GT = Algorithm("gt", init, advance, iterates, tracking=True, doc=__doc__)
