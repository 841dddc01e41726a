"""EXTRA (Shi et al. 2015), with W~ = (I + W) / 2:

    X(1) = W X(0) - gamma G(0)
    X(t+2) = (I + W) X(t+1) - W~ X(t) - gamma (G(t+1) - G(t))

Run with the history H(t) = W~ X(t-1) - gamma G(t-1), H(0) = X(0), so that every step
is X(t+1) = X(t) + W X(t) - gamma G(t) - H(t) (the first one included) and the previous
iterate is not kept: H(t+1) = (X(t) + W X(t)) / 2 - gamma G(t) comes from the same row.
State: X double-buffered and mixed (S1), H (S2, its first buffer), G (S3), 4 n d floats
(3 when the kernels recompute G: base.gradient_rows).
Any problem: the gradient comes from the problem's grad_row hook. With gaussian noise on
a homogeneous diagonal problem, a float64 state's rows of 3 or 5 entries (rings, tori,
interp_ring) draw their noise inside the update, group by group (kernels/vector_rows.py:
the same bits).

Per step: 1 mix (one communication round), 1 gradient evaluation. Its analysis needs a
symmetric W: on time-varying matrices that are not (the one-peer graph's, a cycle's own)
it diverges (``check``).
"""

from collections import namedtuple

import numpy as np

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import jit, rows
from ..kernels.lanes import scalar_intrinsic
from ..kernels.mixing import column_means, mix_row
from ..kernels.oracles import DIAGONAL, GAUSSIAN, NONE, grad_row
from ..kernels.rounding import stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from ..kernels.vector_rows import drawn_or_update, vector_group
from ..problems.quadratic import (
    emit_hom_gradient,
    grad_exact,
    grad_het,
    grad_het_exact,
    grad_hom,
    previous_row,
)
from .base import Algorithm, Costs, gradient_rows, gradients, initial_point

#: cell c's views: X now and next, H, G, a gradient row per block, the next buffer of the
#: mixed array
View = namedtuple("View", "X Xn H G GS mixed", module=__name__)


def emit_extra_x(L, x, w, g, h, gamma):
    """x' = x + w - gamma g - h: EXTRA's new coordinate from x = X_ik, w = (W X)_ik, the
    gradient g at x and the history h = H_ik."""
    b = L.b
    return b.fsub(b.fsub(b.fadd(x, w), b.fmul(gamma, g)), h)


def emit_extra_h(L, x, w, g, gamma):
    """h' = (x + w) / 2 - gamma g: the history's new coordinate (the half as a product)."""
    b = L.b
    return b.fsub(b.fmul(L.f(0.5), b.fadd(x, w)), b.fmul(gamma, g))


#: EXTRA's update as every path computes it (its scalar loops, its vector rows)
extra_x, extra_h = scalar_intrinsic(emit_extra_x), scalar_intrinsic(emit_extra_h)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i: w = (W X)_i into Xn[i], then x' = X[i] + w - gamma G[i] - H[i],
    H[i] = (X[i] + w) / 2 - gamma G[i], Xn[i] = x', G[i] = node i's stochastic gradient at x'.
    On diagonal quadratics without gaussian noise G keeps no rows: G[i] is recomputed from
    X[i] and the previous step's draw (problems.quadratic.previous_row, as GT does), as G
    would hold it (stored: rounded for a float32 state)."""
    X, Xn, H, G, i = view.X, view.Xn, view.H, view.G, node.i
    gamma = stored(Xn, cm.gamma)  # a float32 state's: float32
    mix_row(Xn, i, X, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
    if DIAGONAL and G.shape[0] == 0:  # G(t) recomputed from X(t): the same bits
        N, rp, v, u, dv = co.N, previous_row(co, node), node.v, node.u, co.dv
        a0, A, B = co.data.a0, co.data.A, co.data.B
        # a loop each (a test inside the loop stops it vectorizing)
        if co.data.hetero and co.kind != NONE:
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_het(N, rp, k, v, u, dv, x, A, B, i))
                Xn[i, k] = extra_x(x, w, g, H[i, k], gamma)
                H[i, k] = extra_h(x, w, g, gamma)
        elif co.data.hetero:  # no noise (grad_het_exact: the same bits)
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_het_exact(k, x, A, B, i))
                Xn[i, k] = extra_x(x, w, g, H[i, k], gamma)
                H[i, k] = extra_h(x, w, g, gamma)
        elif co.kind != NONE:
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_hom(N, rp, k, v, u, dv, x, a0))
                Xn[i, k] = extra_x(x, w, g, H[i, k], gamma)
                H[i, k] = extra_h(x, w, g, gamma)
        else:  # no noise (grad_exact: the same bits)
            for k in range(Xn.shape[1]):
                x, w = X[i, k], Xn[i, k]
                g = stored(Xn, grad_exact(x, a0))
                Xn[i, k] = extra_x(x, w, g, H[i, k], gamma)
                H[i, k] = extra_h(x, w, g, gamma)
        return
    for k in range(Xn.shape[1]):
        x, w, g = X[i, k], Xn[i, k], G[i, k]
        Xn[i, k] = extra_x(x, w, g, H[i, k], gamma)
        H[i, k] = extra_h(x, w, g, gamma)
    if DIAGONAL:  # one write per element: straight into G
        grad_row(co, node, Xn, i, G, i)
        return
    GS, b = view.GS, node.b  # a sampled gradient sums rows: in a float64 row, stored once
    grad_row(co, node, Xn, i, GS, b)
    for k in range(Xn.shape[1]):
        G[i, k] = GS[b, k]


def emit_noisy_group(L, row, k, z, gamma, a0):
    """Coordinates k.. of row i of a gaussian step on a homogeneous diagonal problem
    (float64; arrays X, Xn, H, G, X's column means), as update computes them after the
    row's draw, in vectors: the mix w of X over the row's entries (emit_mixed, the mean
    term's beta second with the column means), x' and h' (emit_extra_x, emit_extra_h, from
    G's and H's coordinates) and g' (emit_hom_gradient at x', z being the noise: gaussian
    noise's weights are 1), written to Xn, H and G: the same operations, the same bits."""
    w = row.mixed(0, 0, k)
    x, h, gk = (row.load(n, k) for n in (0, 2, 3))
    xn = emit_extra_x(L, x, w, gk, h, gamma)
    hn = emit_extra_h(L, x, w, gk, gamma)
    gn = emit_hom_gradient(L, a0, xn, z)
    for n, v in ((1, xn), (2, hn), (3, gn)):
        row.store(n, k, v)


noisy_group = vector_group(emit_noisy_group)


@jit(**INLINE_FLAGS)
def group(view, cm, co, node, js, ws, g, tail):
    """vector_rows.drawn_row's group: noisy_group on view's arrays."""
    noisy_group((view.X, view.Xn, view.H, view.G), (cm.m0,), node.i, js, ws,
                (stored(view.Xn, cm.gamma), co.data.a0), node.key, g, co.scale, tail)


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): steps.sweep with ``update``, or with
    drawn_update (a loop of its own, as GT's: gt.blocks) for gaussian noise on a
    homogeneous diagonal problem, whose rows draw their own noise."""
    Xn = state.S1[c, 1 - cur]
    view = View(state.S1[c, cur], Xn, state.S2[c, 0], state.S3[c], state.grads[c], (Xn,))
    if DIAGONAL and oracle.kind == GAUSSIAN and not oracle.data.hetero:
        sweep(drawn_update, view, c, t, b0, b1, last, state, mix, oracle, False)
    else:
        sweep(update, view, c, t, b0, b1, last, state, mix, oracle)


@template(**INLINE_FLAGS)
def drawn_update(view, cm, co, node, last):
    """update with the row's draw, for a step with gaussian noise on a homogeneous
    diagonal problem (vector_rows.drawn_or_update: the vector rows where they apply)."""
    drawn_or_update(update, group, view, cm, co, node, last, (view.X,))


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


ALGORITHM = Algorithm("extra", (blocks, update, drawn_update), 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1), alloc, init, iterates, state,
                      doc=__doc__, check=check, drifts=True)
