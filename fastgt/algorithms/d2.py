"""D² (Tang et al. 2018), docs/extending.md's worked example of an algorithm.

    X(1) = W (X(0) - gamma G(0))
    X(t+1) = W (2 X(t) - X(t-1) - gamma (G(t) - G(t-1)))

On the lazy matrix (W + I) / 2 this is Exact Diffusion (Yuan et al. 2019). It needs
lambda_n(W) > -1/3 (Tang et al.) and a static W: fastgt refuses any other topology unless
the run says allow_unstable=True.

Run on Z(t) = 2 X(t) - X(t-1) - gamma (G(t) - G(t-1)), Z(0) = X(0) - gamma G(0), so that
X(t+1) = W Z(t). State: Z double-buffered and mixed (S1), G (S2, its first buffer; no rows
when the kernels recompute it: base.gradient_rows), X (S3).
Any problem: the gradient comes from the problem's grad_row hook. With gaussian noise on
a homogeneous diagonal problem, a float64 state's rows of 3 or 5 entries (rings,
interp_ring) draw their noise inside the update, group by group (kernels/vector_rows.py:
the same bits).

Per step: 1 mix (one communication round), 1 gradient evaluation.
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
from .base import (
    Algorithm,
    Costs,
    gradient_rows,
    gradients,
    initial_point,
)

#: cell c's views: Z now and next, G, X, a gradient row per block, the next buffer of the
#: mixed array
View = namedtuple("View", "Z Zn G X GS mixed", module=__name__)


def emit_corrected(L, x, xp, g, gp, gamma):
    """z' = 2 x' - x - gamma (g' - g): D²'s new coordinate from x' = (W Z)_ik, the previous
    iterate's x, the new gradient's g' and the previous one's g."""
    b = L.b
    return b.fsub(b.fsub(b.fmul(L.f(2.0), x), xp), b.fmul(gamma, b.fsub(g, gp)))


#: D²'s update as every path computes it (its scalar loops, its vector rows)
corrected = scalar_intrinsic(emit_corrected)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i: x' = (W Z)_i, g' = node i's stochastic gradient at x',
    Zn[i] = 2 x' - X[i] - gamma (g' - G[i]), then X[i] = x', G[i] = g'. On diagonal
    quadratics without gaussian noise G keeps no rows: G[i] is recomputed from X[i] and the
    previous step's draw (problems.quadratic.previous_row, as GT does), one array less to stream.
    Gradients are taken as G would hold them (stored: rounded for a float32 state)."""
    Z, Zn, G, X, GS, i, b = view.Z, view.Zn, view.G, view.X, view.GS, node.i, node.b
    gamma = stored(Zn, cm.gamma)  # a float32 state's: float32
    mix_row(Zn, i, Z, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
    if DIAGONAL and G.shape[0] == 0:  # G(t) recomputed from X(t): the same bits
        N, rn, rp, v, u, dv = co.N, node.rn, previous_row(co, node), node.v, node.u, co.dv
        a0, A, B = co.data.a0, co.data.A, co.data.B
        # a loop each (a test inside the loop stops it vectorizing)
        if co.data.hetero and co.kind != NONE:
            for k in range(Zn.shape[1]):
                x, xp = Zn[i, k], X[i, k]
                g = stored(Zn, grad_het(N, rn, k, v, u, dv, x, A, B, i))
                gp = stored(Zn, grad_het(N, rp, k, v, u, dv, xp, A, B, i))
                Zn[i, k] = corrected(x, xp, g, gp, gamma)
                X[i, k] = x
        elif co.data.hetero:  # no noise (grad_het_exact: the same bits)
            for k in range(Zn.shape[1]):
                x, xp = Zn[i, k], X[i, k]
                g = stored(Zn, grad_het_exact(k, x, A, B, i))
                gp = stored(Zn, grad_het_exact(k, xp, A, B, i))
                Zn[i, k] = corrected(x, xp, g, gp, gamma)
                X[i, k] = x
        elif co.kind != NONE:
            for k in range(Zn.shape[1]):
                x, xp = Zn[i, k], X[i, k]
                g = stored(Zn, grad_hom(N, rn, k, v, u, dv, x, a0))
                gp = stored(Zn, grad_hom(N, rp, k, v, u, dv, xp, a0))
                Zn[i, k] = corrected(x, xp, g, gp, gamma)
                X[i, k] = x
        else:  # no noise (grad_exact: the same bits)
            for k in range(Zn.shape[1]):
                x, xp = Zn[i, k], X[i, k]
                g, gp = stored(Zn, grad_exact(x, a0)), stored(Zn, grad_exact(xp, a0))
                Zn[i, k] = corrected(x, xp, g, gp, gamma)
                X[i, k] = x
        return
    grad_row(co, node, Zn, i, GS, b)
    for k in range(Zn.shape[1]):
        x, g = Zn[i, k], stored(G, GS[b, k])
        Zn[i, k] = corrected(x, X[i, k], g, G[i, k], gamma)
        X[i, k] = x
        G[i, k] = g


def emit_noisy_group(L, row, k, z, gamma, a0):
    """Coordinates k.. of row i of a gaussian step on a homogeneous diagonal problem
    (float64; arrays Z, Zn, G, X, Z's column means), as update computes them after the
    row's draw, in vectors: the mix x' of Z over the row's entries (emit_mixed, the mean
    term's beta second with the column means), g' (emit_hom_gradient, z being the noise:
    gaussian noise's weights are 1) and z' (emit_corrected), written to Zn, X and G: the
    same operations, the same bits."""
    x = row.mixed(0, 0, k)
    gk = emit_hom_gradient(L, a0, x, z)
    zn = emit_corrected(L, x, row.load(3, k), gk, row.load(2, k), gamma)
    for n, v in ((1, zn), (3, x), (2, gk)):
        row.store(n, k, v)


noisy_group = vector_group(emit_noisy_group)


@jit(**INLINE_FLAGS)
def group(view, cm, co, node, js, ws, g, tail):
    """vector_rows.drawn_row's group: noisy_group on view's arrays."""
    noisy_group((view.Z, view.Zn, view.G, view.X), (cm.m0,), node.i, js, ws,
                (stored(view.Zn, cm.gamma), co.data.a0), node.key, g, co.scale, tail)


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): steps.sweep with ``update``, or with
    drawn_update (a loop of its own, as GT's: gt.blocks) for gaussian noise on a
    homogeneous diagonal problem, whose rows draw their own noise."""
    Zn = state.S1[c, 1 - cur]
    view = View(state.S1[c, cur], Zn, state.S2[c, 0], state.S3[c], state.grads[c], (Zn,))
    if DIAGONAL and oracle.kind == GAUSSIAN and not oracle.data.hetero:
        sweep(drawn_update, view, c, t, b0, b1, last, state, mix, oracle, False)
    else:
        sweep(update, view, c, t, b0, b1, last, state, mix, oracle)


@template(**INLINE_FLAGS)
def drawn_update(view, cm, co, node, last):
    """update with the row's draw, for a step with gaussian noise on a homogeneous
    diagonal problem (vector_rows.drawn_or_update: the vector rows where they apply)."""
    drawn_or_update(update, group, view, cm, co, node, last, (view.Z,))


def alloc(batch):
    return (batch.new_rows(batch.C, 2), gradient_rows(batch, 1, recomputes=True),
            batch.new_rows(batch.C, at=1024))


def init(batch):
    Z2, G2, X = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        x, z = batch.used(X[c]), batch.used(Z2[c, 0])
        initial_point(x, cell.x0, cell.seed, batch.d)
        g = batch.used(G2[c, 0]) if len(G2[c, 0]) else np.zeros_like(x)
        batch.grads(0, x, g, c)
        rows.axpy(z, x, -cell.gamma, g)
        column_means(z, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch, arrays, cur, c):
    return batch.used(arrays[2][c]), None


def state(batch, arrays, cur, c, t):
    Z2, G2, X = arrays
    x = batch.used(X[c])
    return {"X": batch.real(x), "G": gradients(batch, G2[c, 0], x, c, t),
            "Z": batch.real(Z2[c, cur])}


def check(W, local_steps):
    """Tang et al.'s condition lambda_n(W) > -1/3 (equality, as on an even ring with self
    weight 1/3, is allowed: rounding must not refuse it), on a static W: its correction
    -X(t-1) + gamma G(t-1) cancels W's fixed point only when W(t) = W(t-1) (measured: it
    diverges on the time-varying topologies, and with local steps, where a step with W = I
    leaves a unit root: small stepsizes are unstable, docs/theory.md)."""
    if local_steps > 1:
        return (f"d2 with local_steps={local_steps} is unstable at small stepsizes and, "
                "where curvatures spread, at all (a step with W = I leaves its correction a "
                "unit root; theory.stable_stepsizes gives the quadratic problems' stable "
                "ones); allowed: local_steps=1")
    if not W.static:
        return (f"d2 needs a static W (its correction assumes W(t) = W(t-1)), not the "
                f"time-varying {W.name}; allowed: a static topology")
    lam = W.spectrum().lambda_n
    if lam < -1 / 3 - 1e-12:
        return (f"d2 needs lambda_n(W) > -1/3: this topology has lambda_n = {lam:.6g}; "
                "allowed: lazy=True ((W + I) / 2)")
    return None


ALGORITHM = Algorithm("d2", (blocks, update, drawn_update), 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1),
                      alloc, init, iterates, state, doc=__doc__, check=check,
                      drifts=True)
