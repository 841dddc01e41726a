"""Adapt-then-combine Gradient Tracking (ATC-GT):

    Y(0) = G(0)
    X(t+1) = W (X(t) - gamma Y(t))
    Y(t+1) = W (Y(t) + G(t+1) - G(t))   (W_y, topology_y, in place of this W)

Y's mix needs every neighbour's new gradient, so a step is two passes over the rows
(phases): 0 mixes Z(t) = X(t) - gamma Y(t) into X(t+1), evaluates G(t+1) and forms
V = Y(t) + G(t+1) - G(t) in place of Y(t); 1 mixes V into Y(t+1) and forms Z(t+1).
State: S1 holds Z(t) and X(t) (the buffer after Z's, where phase 0 writes X(t+1); phase 1
writes Z(t+1) there and moves X(t+1) to the other, whose Z(t) is spent), Y double-buffered
(S2), G (S3): 5 n d floats. Each phase mixes one array (mixed = 1). Any problem. With
gaussian noise on a homogeneous diagonal problem, phase 0 of a float64 state's rows of 3 or
5 entries draws the noise inside the update, group by group (kernels/vector_rows.py: the
same bits).

Per step: 2 mixes in 2 communication rounds (X, then Y), 1 gradient evaluation.
"""

from collections import namedtuple

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import jit, rows
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import DIAGONAL, GAUSSIAN, grad_row
from ..kernels.rounding import stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from ..kernels.vector_rows import drawn_or_update, vector_group
from ..problems.quadratic import emit_hom_gradient
from .base import Algorithm, Costs, initial_point
from .gt import emit_tracked_y, tracked_y

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
            Y[i, k] = tracked_y(Y[i, k], g, G[i, k])
            G[i, k] = g
    else:  # Y's own matrix with topology_y (CellMix's y fields are W's otherwise)
        mix_row(Yn, i, Y, cm.yindptr, cm.yindices, cm.yw, cm.ybeta, cm.m0, cm.yahead)
        gamma = stored(X, cm.gamma)  # a float32 state's: float32
        for k in range(d):
            x = X[i, k]
            Z[i, k] = x
            X[i, k] = x - gamma * Yn[i, k]


def emit_noisy_group(L, row, k, z, a0):
    """Coordinates k.. of row i of phase 0 of a gaussian step on a homogeneous diagonal
    problem (float64; arrays Z, X, Y, G, Z's column means), as update computes them after
    the row's draw, in vectors: the mix x of Z over the row's entries (emit_mixed, the mean
    term's beta second with the column means), g' (emit_hom_gradient at x, z being the
    noise: gaussian noise's weights are 1) and V = Y + (g' - G) (gt.emit_tracked_y),
    written to X, Y and G: the same operations, the same bits."""
    x = row.mixed(0, 0, k)
    gk = emit_hom_gradient(L, a0, x, z)
    y = emit_tracked_y(L, row.load(2, k), gk, row.load(3, k))
    for n, v in ((1, x), (2, y), (3, gk)):
        row.store(n, k, v)


noisy_group = vector_group(emit_noisy_group)


@jit(**INLINE_FLAGS)
def group(view, cm, co, node, js, ws, g, tail):
    """vector_rows.drawn_row's group: noisy_group on view's arrays."""
    noisy_group((view.Z, view.X, view.Y, view.G), (cm.m0,), node.i, js, ws, (co.data.a0,),
                node.key, g, co.scale, tail)


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    """Phase ph of step t of cell c on row blocks [b0, b1): steps.sweep with ``update``,
    or, phase 0 of a gaussian step on a homogeneous diagonal problem, with drawn_update (a
    loop of its own, as GT's: gt.blocks), whose rows draw their own noise."""
    Z, X, Y, Yn = state.S1[c, cur], state.S1[c, 1 - cur], state.S2[c, cur], state.S2[c, 1 - cur]
    view = View(Z, X, Y, Yn, state.S3[c], state.grads[c], ph, (Y,) if ph == 0 else (X,))
    if ph == 0 and DIAGONAL and oracle.kind == GAUSSIAN and not oracle.data.hetero:
        sweep(drawn_update, view, c, t, b0, b1, last, state, mix, oracle, False)
    else:
        sweep(update, view, c, t, b0, b1, last, state, mix, oracle, ph == 0)


@template(**INLINE_FLAGS)
def drawn_update(view, cm, co, node, last):
    """update's phase 0 with the row's draw, for a step with gaussian noise on a
    homogeneous diagonal problem (vector_rows.drawn_or_update: the vector rows where they
    apply)."""
    drawn_or_update(update, group, view, cm, co, node, last, (view.Z,))


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


ALGORITHM = Algorithm("gt_atc", (blocks, update, drawn_update), 1,
                      Costs(mixes=2, grad_evals=1, comm_rounds=2), alloc, init, iterates,
                      state, doc=__doc__, phases=2, topology_y=True)
