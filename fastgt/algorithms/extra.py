"""EXTRA (Shi et al. 2015), with W~ = (I + W) / 2:

    X(1) = W X(0) - gamma G(0)
    X(t+2) = (I + W) X(t+1) - W~ X(t) - gamma (G(t+1) - G(t))

Run with the history H(t) = W~ X(t-1) - gamma G(t-1), H(0) = X(0), so that every step
is X(t+1) = X(t) + W X(t) - gamma G(t) - H(t) (the first one included) and the previous
iterate is not kept: H(t+1) = (X(t) + W X(t)) / 2 - gamma G(t) comes from the same row.
State: X double-buffered and mixed (S1), H (S2, its first buffer), G (S3), 4 n d floats
(3 when the kernels recompute G: base.gradient_rows).
Any problem: the gradient comes from the problem's grad_row hook.

Per step: 1 mix (one communication round), 1 gradient evaluation. Its analysis needs a
symmetric W: on time-varying matrices that are not (the one-peer graph's, a cycle's own)
it diverges (``check``).
"""

from collections import namedtuple

import numpy as np

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import rows
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import DIAGONAL, NONE, grad_row
from ..kernels.rounding import stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from ..problems.quadratic import grad_exact, grad_het, grad_het_exact, grad_hom, previous_row
from .base import Algorithm, Costs, gradient_rows, gradients, initial_point

#: cell c's views: X now and next, H, G, a gradient row per block, the next buffer of the
#: mixed array
View = namedtuple("View", "X Xn H G GS mixed", module=__name__)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i: w = (W X)_i into Xn[i], then x' = X[i] + w - gamma G[i] - H[i],
    H[i] = (X[i] + w) / 2 - gamma G[i], Xn[i] = x', G[i] = node i's stochastic gradient at x'.
    On diagonal quadratics without gaussian noise G keeps no rows: G[i] is recomputed from
    X[i] and the previous step's draw (problems.quadratic.previous_row, as GT does), as G
    would hold it (stored: rounded for a float32 state)."""
    X, Xn, H, G, i = view.X, view.Xn, view.H, view.G, node.i
    gamma, half = stored(Xn, cm.gamma), stored(Xn, 0.5)  # a float32 state's: float32
    mix_row(Xn, i, X, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
    if DIAGONAL and G.shape[0] == 0:  # G(t) recomputed from X(t): the same bits
        N, rp, v, u, dv = co.N, previous_row(co, node), node.v, node.u, co.dv
        a0, A, B = co.data.a0, co.data.A, co.data.B
        # a loop each (a test inside the loop stops it vectorizing)
        if co.data.hetero and co.kind != NONE:
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_het(N, rp, k, v, u, dv, x, A, B, i))
                Xn[i, k] = x + w - gamma * g - H[i, k]
                H[i, k] = half * (x + w) - gamma * g
        elif co.data.hetero:  # no noise (grad_het_exact: the same bits)
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_het_exact(k, x, A, B, i))
                Xn[i, k] = x + w - gamma * g - H[i, k]
                H[i, k] = half * (x + w) - gamma * g
        elif co.kind != NONE:
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_hom(N, rp, k, v, u, dv, x, a0))
                Xn[i, k] = x + w - gamma * g - H[i, k]
                H[i, k] = half * (x + w) - gamma * g
        else:  # no noise (grad_exact: the same bits)
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_exact(x, a0))
                Xn[i, k] = x + w - gamma * g - H[i, k]
                H[i, k] = half * (x + w) - gamma * g
        return
    for k in range(Xn.shape[1]):
        x, w, g = X[i, k], Xn[i, k], G[i, k]
        Xn[i, k] = x + w - gamma * g - H[i, k]
        H[i, k] = half * (x + w) - gamma * g
    if DIAGONAL:  # one write per element: straight into G
        grad_row(co, node, Xn, i, G, i)
        return
    GS, b = view.GS, node.b  # a sampled gradient sums rows: in a float64 row, stored once
    grad_row(co, node, Xn, i, GS, b)
    for k in range(Xn.shape[1]):
        G[i, k] = GS[b, k]


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    Xn = state.S1[c, 1 - cur]
    view = View(state.S1[c, cur], Xn, state.S2[c, 0], state.S3[c], state.grads[c], (Xn,))
    sweep(update, view, c, t, b0, b1, last, state, mix, oracle)


def alloc(batch):
    return batch.new_rows(batch.C, 2), batch.new_rows(batch.C, 1, at=512), \
        gradient_rows(batch, recomputes=True, at=1024)


def init(batch):
    X2, H2, G = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        x, h = batch.used(X2[c, 0]), batch.used(H2[c, 0])
        initial_point(x, cell.x0, cell.seed, batch.d)
        g = batch.used(G[c]) if len(G[c]) else np.zeros_like(x)  # G(0) kept or not,
        batch.grads(0, x, g, c)  # step 0's shared draw is drawn (step 1 recomputes G(0))
        rows.copy(h, x)
        column_means(x, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch, arrays, cur, c):
    return batch.used(arrays[0][c, cur]), None


def state(batch, arrays, cur, c, t):
    X2, H2, G = arrays
    x = batch.used(X2[c, cur])
    return {"X": batch.real(x), "H": batch.real(H2[c, 0]), "G": gradients(batch, G[c], x, c, t)}


def check(W, local_steps):
    """A symmetric W(t) at every step (static matrices are): on the one-peer graph's it
    diverged at n = 64 and 256 at every stepsize tried (1e-3 to 0.1) and grew at n = 30
    (1e-3), noiseless hetero_quadratic, while it converged at n = 8 and 16; matchings and
    cycles of symmetric matrices converge."""
    if not W.static and not W.symmetric:
        return (f"extra needs symmetric mixing matrices: the time-varying {W.name}'s are "
                "not, and on them it can diverge at any stepsize; allowed: a static "
                "topology, random_matching or a cycle of symmetric matrices")
    return None


ALGORITHM = Algorithm("extra", (blocks, update), 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1), alloc, init, iterates, state,
                      doc=__doc__, check=check, drifts=True)
