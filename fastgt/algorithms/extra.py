"""EXTRA (Shi et al. 2015), with W~ = (I + W) / 2:

    X(1) = W X(0) - gamma G(0)
    X(t+2) = (I + W) X(t+1) - W~ X(t) - gamma (G(t+1) - G(t))

Run with the history H(t) = W~ X(t-1) - gamma G(t-1), H(0) = X(0), so that every step
is X(t+1) = X(t) + W X(t) - gamma G(t) - H(t) (the first one included) and the previous
iterate is not kept: H(t+1) = (X(t) + W X(t)) / 2 - gamma G(t) comes from the same row.
State: X double-buffered and mixed (S1), H (S2, its first buffer), G (S3), 4 n d floats.
Any problem: the gradient comes from the problem's grad_row hook.

Per step: 1 mix (one communication round), 1 gradient evaluation.
"""

from collections import namedtuple

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import grad_row
from ..kernels.specialize import template
from ..kernels.steps import sweep
from .base import Algorithm, Costs, initial_point

#: cell c's views: X now and next, H, G, the next buffer of the mixed array
View = namedtuple("View", "X Xn H G mixed", module=__name__)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i: w = (W X)_i into Xn[i], then x' = X[i] + w - gamma G[i] - H[i],
    H[i] = (X[i] + w) / 2 - gamma G[i], Xn[i] = x', G[i] = node i's stochastic gradient at x'."""
    X, Xn, H, G, i, gamma = view.X, view.Xn, view.H, view.G, node.i, cm.gamma
    mix_row(Xn, i, X, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0)
    for k in range(Xn.shape[1]):
        x, w, g = X[i, k], Xn[i, k], G[i, k]
        Xn[i, k] = x + w - gamma * g - H[i, k]
        H[i, k] = 0.5 * (x + w) - gamma * g
    grad_row(co, node, Xn, i, G, i)


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    Xn = state.S1[c, 1 - cur]
    view = View(state.S1[c, cur], Xn, state.S2[c, 0], state.S3[c], (Xn,))
    sweep(update, view, c, t, b0, b1, last, state, mix, oracle)


def alloc(batch):
    return (batch.new_rows(batch.C, 2), batch.new_rows(batch.C, 1, at=512),
            batch.new_rows(batch.C, at=1024))


def init(batch):
    X2, H2, G = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        x, h, g = batch.used(X2[c, 0]), batch.used(H2[c, 0]), batch.used(G[c])
        initial_point(x, cell.x0, cell.seed, batch.d)
        batch.grads(0, x, g, c)
        h[:] = x
        column_means(x, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch, arrays, cur, c):
    return batch.used(arrays[0][c, cur]), None


def state(batch, arrays, cur, c, t):
    X2, H2, G = arrays
    return {"X": batch.real(X2[c, cur]), "H": batch.real(H2[c, 0]), "G": batch.real(G[c])}


ALGORITHM = Algorithm("extra", (blocks, update), 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1), alloc, init, iterates, state,
                      doc=__doc__)
