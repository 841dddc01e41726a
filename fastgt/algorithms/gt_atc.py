"""Adapt-then-combine Gradient Tracking (ATC-GT):

    Y(0) = G(0)
    X(t+1) = W (X(t) - gamma Y(t))
    Y(t+1) = W (Y(t) + G(t+1) - G(t))   (W_y, topology_y, in place of this W)

Y's mix needs every neighbour's new gradient, so a step is two passes over the rows
(phases): 0 mixes Z(t) = X(t) - gamma Y(t) into X(t+1), evaluates G(t+1) and forms
V = Y(t) + G(t+1) - G(t) in place of Y(t); 1 mixes V into Y(t+1) and forms Z(t+1).
State: S1 holds Z(t) and X(t) (the buffer after Z's, where phase 0 writes X(t+1); phase 1
writes Z(t+1) there and moves X(t+1) to the other, whose Z(t) is spent), Y double-buffered
(S2), G (S3): 5 n d floats. Each phase mixes one array (mixed = 1). Any problem.

Per step: 2 mixes in 2 communication rounds (X, then Y), 1 gradient evaluation.
"""

from collections import namedtuple

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import rows
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import grad_row
from ..kernels.rounding import stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from .base import Algorithm, Costs, initial_point

#: cell c's views in a phase: Z(t), X's buffer (X(t+1)), Y(t) (V in place), Y(t+1), G, a
#: gradient row per block, the phase, the array the next phase mixes
View = namedtuple("View", "Z X Y Yn G GS ph mixed", module=__name__)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i. Phase 0: X[i] = (W Z)_i, g' = the stochastic gradient at X[i], Y[i] += g' -
    G[i] (V), G[i] = g'. Phase 1: Yn[i] = (W V)_i, Z[i] = X[i] (X(t+1) kept beside),
    X[i] = X[i] - gamma Yn[i] (Z(t+1))."""
    Z, X, Y, Yn, G, GS, i, b = view.Z, view.X, view.Y, view.Yn, view.G, view.GS, node.i, node.b
    d = X.shape[1]
    if view.ph == 0:
        mix_row(X, i, Z, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
        grad_row(co, node, X, i, GS, b)
        for k in range(d):
            g = stored(G, GS[b, k])  # as G holds it (rounded for a float32 state)
            Y[i, k] += g - G[i, k]
            G[i, k] = g
    else:  # Y's own matrix with topology_y (CellMix's y fields are W's otherwise)
        mix_row(Yn, i, Y, cm.yindptr, cm.yindices, cm.yw, cm.ybeta, cm.m0, cm.yahead)
        gamma = stored(X, cm.gamma)  # a float32 state's: float32
        for k in range(d):
            x = X[i, k]
            Z[i, k] = x
            X[i, k] = x - gamma * Yn[i, k]


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    Z, X, Y, Yn = state.S1[c, cur], state.S1[c, 1 - cur], state.S2[c, cur], state.S2[c, 1 - cur]
    view = View(Z, X, Y, Yn, state.S3[c], state.grads[c], ph, (Y,) if ph == 0 else (X,))
    sweep(update, view, c, t, b0, b1, last, state, mix, oracle, ph == 0)


def alloc(batch):
    return (batch.new_rows(batch.C, 2), batch.new_rows(batch.C, 2, at=1024),
            batch.new_rows(batch.C, at=512))


def init(batch):
    S1, Y2, G = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        z, x, y, g = (batch.used(S1[c, 0]), batch.used(S1[c, 1]), batch.used(Y2[c, 0]),
                      batch.used(G[c]))
        initial_point(x, cell.x0, cell.seed, batch.d)
        batch.grads(0, x, g, c)
        rows.copy(y, g)
        rows.axpy(z, x, -cell.gamma, y)
        column_means(z, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch, arrays, cur, c):
    S1, Y2, _ = arrays
    return batch.used(S1[c, 1 - cur]), batch.used(Y2[c, cur])


def state(batch, arrays, cur, c, t):
    X, Y = iterates(batch, arrays, cur, c)
    return {"X": batch.real(X), "Y": batch.real(Y), "G": batch.real(arrays[2][c])}


ALGORITHM = Algorithm("gt_atc", (blocks, update), 1,
                      Costs(mixes=2, grad_evals=1, comm_rounds=2), alloc, init, iterates,
                      state, doc=__doc__, phases=2, topology_y=True)
