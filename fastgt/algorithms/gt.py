"""Gradient Tracking, the paper's Algorithm 1 exactly.

    y_i(0) = g_i(0) = grad F_i(x_i(0), xi_i(0))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma y_j(t))
    g_i(t+1) = grad F_i(x_i(t+1), xi_i(t+1))
    y_i(t+1) = sum_j w_ij y_j(t) + g_i(t+1) - g_i(t)

Invariant: ybar(t) = gbar(t) at every t. State: X, Y double-buffered and mixed (S1, S2),
and G (S3), 5 n d floats; G is stored for gaussian noise only: with structured or no noise
g_i(t) is recomputed from x_i(t) and the step's shared draw, to the same bits (4 n d
floats, one array less to stream).

Per step: 2 mixes (X and Y, one communication round), 1 gradient evaluation.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import jit
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import GAUSSIAN, STRUCTURED, grad_het, grad_hom, stochastic_grads
from ..kernels.steps import sweep
from .base import Algorithm, Batch, Costs, aligned, initial_point

#: cell c's views: X, Y now and next, G (rows, or none), the next buffers of the mixed arrays
View = namedtuple("View", "X Xn Y Yn G mixed", module=__name__)


@jit(**INLINE_FLAGS)
def update(view, cm, co, i, rn, v, u, last):
    """Row i (steps.sweep's row update): Xn[i] = (W X)_i, Yn[i] = (W Y)_i, then with node
    i's noise e (noise_at, row rn of co.N, weights v, u) in one pass: x' = Xn[i] - gamma
    Yn[i], g' = e + grad f_i(x'), Yn[i] += g' - g, Xn[i] = x'.

    g, the previous gradient, is G[i] (then G[i] = g') when G has rows (gaussian noise);
    otherwise it is recomputed, with the same expression, from X[i] = x and the previous
    step's shared draw (row co.rp): the same bits (grad_hom and grad_het fix the
    roundings), one array less to read and write."""
    X, Xn, Y, Yn, G = view.X, view.Xn, view.Y, view.Yn, view.G
    # X, then Y, through one call site: one inlined copy of mix_row's loops to compile
    # (measured 1.5-3 s less cold compile, same speed)
    for q in range(2):
        out, src, mq = (Xn, X, cm.m0) if q == 0 else (Yn, Y, cm.m1)
        mix_row(out, i, src, cm.indptr, cm.indices, cm.w, cm.beta, mq)
    N, dv, gamma, a0, A, B = co.N, co.dv, cm.gamma, co.a0, co.A, co.B
    d = Xn.shape[1]
    if G.shape[0] == 0:
        rp = co.rp if co.kind == STRUCTURED else rn
        if co.hetero:
            for k in range(d):
                x = Xn[i, k] - gamma * Yn[i, k]
                gk = grad_het(N, rn, k, v, u, dv, x, A, B, i)
                Yn[i, k] += gk - grad_het(N, rp, k, v, u, dv, X[i, k], A, B, i)
                Xn[i, k] = x
        else:
            for k in range(d):
                x = Xn[i, k] - gamma * Yn[i, k]
                gk = grad_hom(N, rn, k, v, u, dv, x, a0)
                Yn[i, k] += gk - grad_hom(N, rp, k, v, u, dv, X[i, k], a0)
                Xn[i, k] = x
    elif co.hetero:
        for k in range(d):
            x = Xn[i, k] - gamma * Yn[i, k]
            gk = grad_het(N, rn, k, v, u, dv, x, A, B, i)
            Yn[i, k] += gk - G[i, k]
            G[i, k] = gk
            Xn[i, k] = x
    else:
        for k in range(d):
            x = Xn[i, k] - gamma * Yn[i, k]
            gk = grad_hom(N, rn, k, v, u, dv, x, a0)
            Yn[i, k] += gk - G[i, k]
            G[i, k] = gk
            Xn[i, k] = x


@jit(**BLOCK_FLAGS)
def blocks(c, t, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): steps.sweep with ``update``."""
    Xn, Yn = state.S1[c, 1 - cur], state.S2[c, 1 - cur]
    view = View(state.S1[c, cur], Xn, state.S2[c, cur], Yn, state.S3[c], (Xn, Yn))
    sweep(update, view, c, t, b0, b1, last, state, mix, oracle)


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


ALGORITHM = Algorithm("gt", blocks, 2, Costs(mixes=2, grad_evals=1, comm_rounds=1),
                      alloc, init, iterates, state, doc=__doc__)
