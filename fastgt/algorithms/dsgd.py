"""Decentralized SGD (D-SGD).

    g_i(t) = grad F_i(x_i(t), xi_i(t))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma g_j(t))

Run on z = x - gamma g: x(t+1) = W z(t), z(t+1) = x(t+1) - gamma g(t+1), so a step reads
one n x d array and writes one. State: Z double-buffered and mixed (S1) and X (S3),
3 n d floats; X is written on the last step of each advance (what the metrics read).

Per step: 1 mix (one communication round), 1 gradient evaluation.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..config import BLOCK_FLAGS, INLINE_FLAGS
from ..kernels import jit, rows
from ..kernels.lanes import scalar_intrinsic
from ..kernels.mixing import (
    FUSED_MAX,
    column_means,
    head3,
    mix3,
    mix5,
    mix_row,
    next2,
    prefetch_ahead,
)
from ..kernels.oracles import DIAGONAL, GAUSSIAN, NONE, grad_row, noise_at
from ..kernels.rng import fill_padded
from ..kernels.rounding import emit_mul, stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from ..kernels.vector_rows import drawn_row, vector_group
from ..problems.quadratic import grad_het_exact
from .base import Algorithm, Batch, Costs, initial_point

#: cell c's views: Z now and next, X, a gradient row per block, the next buffer of the
#: mixed array
View = namedtuple("View", "Z Zn X GS mixed", module=__name__)


def emit_descent(L, x, gamma, a0, noise):
    """z' = x - gamma (a0 x + noise): a homogeneous row's new coordinate from its mixed
    value x = (W Z)_ik and its noise (noise_at's product: the draw times its weight)."""
    b = L.b
    return b.fsub(x, b.fmul(gamma, b.fadd(b.fmul(a0, x), noise)))


#: D-SGD's homogeneous update as every path computes it (its scalar loops, its vector rows)
descent = scalar_intrinsic(emit_descent)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i (steps.sweep's row update), with x' = (W Z)_i and g' node i's stochastic
    gradient at x' (grad_row): Zn[i] = x' - gamma g', and x' copied to X[i] when ``last``.

    Diagonal quadratics, with node i's noise e (noise_at, row rn of co.N, weights v, u):
    Zn[i] = x' - gamma (e + grad f_i(x')) in one pass, and mixing and update in one pass
    (fused) for a homogeneous problem, a row of m = 3 or FUSED_MAX entries and a step that
    does not write X; with gaussian noise such rows of a float64 state take drawn_update's
    pass, the draw in it. The row's gaussian noise is drawn here (D-SGD's blocks ask sweep
    for none)."""
    Z, Zn, X, i = view.Z, view.Zn, view.X, node.i
    gamma, d = stored(Zn, cm.gamma), Zn.shape[1]
    if co.kind == GAUSSIAN:  # the row's noise (sweep leaves it to D-SGD: vector rows draw
        # their own)
        fill_padded(node.key, co.N, node.b, co.scale, co.d)
    if not DIAGONAL:
        mix_row(Zn, i, Z, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
        if last:
            for k in range(d):
                X[i, k] = Zn[i, k]
        GS, b = view.GS, node.b
        grad_row(co, node, Zn, i, GS, b)
        for k in range(d):
            Zn[i, k] = Zn[i, k] - gamma * stored(Zn, GS[b, k])
        return
    N, dv, rn, v, u, a0 = co.N, co.dv, node.rn, node.v, node.u, co.data.a0
    e0 = cm.indptr[i]
    m = cm.indptr[i + 1] - e0
    if not co.data.hetero and not last and (m == 3 or m == FUSED_MAX):
        if cm.ahead > 0:
            prefetch_ahead(Z, i, cm.indptr, cm.indices, cm.ahead)
        fused(Zn, i, Z, cm.indices, cm.w, e0, m, cm.beta, cm.m0, co.kind != NONE, N, rn, v,
              u, dv, gamma, a0)
    else:
        mix_row(Zn, i, Z, cm.indptr, cm.indices, cm.w, cm.beta, cm.m0, cm.ahead)
        if last:
            for k in range(d):
                X[i, k] = Zn[i, k]
        if co.data.hetero and co.kind != NONE:
            A, B = co.data.A, co.data.B
            for k in range(d):
                x = Zn[i, k]
                Zn[i, k] = x - gamma * (noise_at(N, rn, k, v, u, dv) + (A[i, k] * x - B[i, k]))
        elif co.data.hetero:  # no noise: 0 + r is r (grad_het_exact: the same bits)
            A, B = co.data.A, co.data.B
            for k in range(d):
                x = Zn[i, k]
                Zn[i, k] = x - gamma * grad_het_exact(k, x, A, B, i)
        else:
            for k in range(d):
                Zn[i, k] = descent(Zn[i, k], gamma, a0, noise_at(N, rn, k, v, u, dv))


@jit(**INLINE_FLAGS)
def fused(Zn, i, Z, indices, w, e0, m, beta, mean, noisy, N, rn, v, u, dv, gamma, a0):
    """mix_row then the homogeneous update in one pass, for a row of m = 3 or FUSED_MAX
    entries from e0: the same expressions as the two passes, so the same bits; a pass of
    its own rather than an option of mix_row, where the choice inside the loop stopped it
    vectorizing (measured 6 ns/elem instead of 0.5). Without noise (``noisy`` False) the
    loops leave out the noise term, which is then exactly zero: fma(a0, x, 0) is a0 x
    rounded (the same bits), and each element loads two arrays instead of three. The mixed
    x is in Zn's type (mix3, mix5), as the unfused pass reads it back."""
    d = Zn.shape[1]
    j0, w0, j1, w1, j2, w2 = head3(Zn, indices, w, e0)
    beta = stored(Zn, beta)
    if m == 3:
        if noisy:
            for k in range(d):
                x = mix3(Zn, Z, i, k, j0, w0, j1, w1, j2, w2, beta, mean)
                Zn[i, k] = descent(x, gamma, a0, noise_at(N, rn, k, v, u, dv))
        else:
            for k in range(d):
                x = mix3(Zn, Z, i, k, j0, w0, j1, w1, j2, w2, beta, mean)
                Zn[i, k] = x - gamma * (a0 * x)
        return
    j3, w3, j4, w4 = next2(Zn, indices, w, e0)
    if noisy:
        for k in range(d):
            x = mix5(Zn, Z, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mean)
            Zn[i, k] = descent(x, gamma, a0, noise_at(N, rn, k, v, u, dv))
    else:
        for k in range(d):
            x = mix5(Zn, Z, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mean)
            Zn[i, k] = x - gamma * (a0 * x)


def emit_noisy_group(L, row, k, z, gamma, a0, v):
    """Coordinates k.. of row i of a gaussian step (float64; arrays Z, Zn, Z's column
    means), as fused computes them one by one after the row's draw, in vectors: the noise z
    times its weight v (noise_at's product: gaussian noise's v = u = 1), the mix of Z over
    the row's entries (emit_mixed: the first entry's, the mean term's beta with the column
    means, then the others') and z' (emit_descent), written to Zn: the same operations, the
    same bits."""
    row.store(1, k, emit_descent(L, row.mixed(0, 0, k), gamma, a0, emit_mul(L, z, v)))


noisy_group = vector_group(emit_noisy_group)


@jit(**INLINE_FLAGS)
def group(view, cm, co, node, js, ws, g, tail):
    """vector_rows.drawn_row's group: noisy_group on view's arrays."""
    noisy_group((view.Z, view.Zn), (cm.m0,), node.i, js, ws,
                (stored(view.Zn, cm.gamma), co.data.a0, node.v), node.key, g, co.scale, tail)


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): steps.sweep with ``update``, or with
    drawn_update for gaussian noise on a homogeneous diagonal problem (a loop of its own,
    as GT's: gt.blocks). D-SGD draws its rows' noise itself (sweep's draw False)."""
    Zn = state.S1[c, 1 - cur]
    view = View(state.S1[c, cur], Zn, state.S3[c], state.grads[c], (Zn,))
    if DIAGONAL and oracle.kind == GAUSSIAN and not oracle.data.hetero:
        sweep(drawn_update, view, c, t, b0, b1, last, state, mix, oracle, False)
    else:
        sweep(update, view, c, t, b0, b1, last, state, mix, oracle, False)


@template(**INLINE_FLAGS)
def drawn_update(view, cm, co, node, last):
    """update for a step with gaussian noise on a homogeneous diagonal problem: fused's
    rows (3 or FUSED_MAX entries, a step that does not write X) by vector_rows.drawn_row
    (a float64 state), the others by update."""
    i = node.i
    e0 = cm.indptr[i]
    m = cm.indptr[i + 1] - e0
    if not last and (m == 3 or m == FUSED_MAX) and drawn_row(group, view, cm, co, node, e0, m,
                                                             (view.Z,)):
        return
    update(view, cm, co, node, last)


def alloc(batch: Batch) -> tuple:
    Z2 = batch.new_rows(batch.C, 2)
    return Z2, Z2, batch.new_rows(batch.C, at=1024)  # S2 is unused


def init(batch: Batch, at_mean: bool = False) -> tuple:
    """at_mean: every node starts at the mean of the initial points (centralized)."""
    Z2, _, X = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        x, z, g = batch.used(X[c]), batch.used(Z2[c, 0]), batch.used(Z2[c, 1])
        initial_point(x, cell.x0, cell.seed, batch.d)
        if at_mean:
            x[:] = x.mean(axis=0, dtype=np.float64)  # a float32 state: summed in float64
        batch.grads(0, x, g, c)  # Z2[c, 1] holds g(0)
        rows.axpy(z, x, -cell.gamma, g)
        column_means(z, batch.part[c], 0, batch.means[c, 0])
    return arrays


def iterates(batch: Batch, arrays: tuple, cur: int, c: int):
    return batch.used(arrays[2][c]), None


def state(batch: Batch, arrays: tuple, cur: int, c: int, t: int) -> dict:
    return {"X": batch.real(arrays[2][c])}


ALGORITHM = Algorithm("dsgd", (blocks, update, drawn_update), 1,
                      Costs(mixes=1, grad_evals=1, comm_rounds=1), alloc, init, iterates, state,
                      doc=__doc__)
