"""Gradient Tracking, the paper's Algorithm 1 exactly.

    y_i(0) = g_i(0) = grad F_i(x_i(0), xi_i(0))
    x_i(t+1) = sum_j w_ij (x_j(t) - gamma y_j(t))
    g_i(t+1) = grad F_i(x_i(t+1), xi_i(t+1))
    y_i(t+1) = sum_j w_ij y_j(t) + g_i(t+1) - g_i(t)

With topology_y (the paper's different mixing for x and y), y mixes with its own matrix
(w^y_ij) in the last line, while x still mixes W y: a third mix per row.

Invariant: ybar(t) = gbar(t) at every t. State: X, Y double-buffered and mixed (S1, S2),
and G (S3), 5 n d floats. On diagonal quadratics (the fast path: one fused pass per row)
G is stored for gaussian noise only: with structured or no noise g_i(t) is recomputed
from x_i(t) and the step's shared draw, to the same bits (4 n d floats, one array less
to stream). For problems with data (grad_row after x'), both mixes and x' take one pass
on rows of 3 or 5 entries without a mean term (fused_mixes).

Per step: 2 mixes (X and Y, one communication round), 1 gradient evaluation.
"""

from __future__ import annotations

from collections import namedtuple

from ..config import BLOCK_FLAGS, INLINE_FLAGS, SCALAR_FLAGS
from ..kernels import jit, rows
from ..kernels.lanes import scalar_intrinsic
from ..kernels.mixing import FUSED_MAX, column_means, head3, mix3, mix5, mix_row, next2
from ..kernels.oracles import DIAGONAL, GAUSSIAN, NONE, grad_row
from ..kernels.rng import fill_padded
from ..kernels.rounding import stored
from ..kernels.specialize import template
from ..kernels.steps import sweep
from ..kernels.vector_rows import drawn_row, vector_group
from ..problems.quadratic import (
    emit_hom_gradient,
    grad_exact,
    grad_het,
    grad_het_exact,
    grad_hom,
    previous_row,
)
from .base import Algorithm, Batch, Costs, gradient_rows, gradients, initial_point

#: cell c's views: X, Y now and next, G (rows, or none), a gradient row per block, the next
#: buffers of the mixed arrays
View = namedtuple("View", "X Xn Y Yn G GS mixed", module=__name__)


def emit_tracked_x(L, xm, ym, gamma):
    """x' = (W X)_ik - gamma (W Y)_ik, row i's new coordinate k from its mixed values."""
    return L.b.fsub(xm, L.b.fmul(gamma, ym))


def emit_tracked_y(L, ym, g, gp):
    """y' = (W Y)_ik + (g' - g): the tracking variable's new coordinate from its mixed
    value, the new gradient's coordinate g' and the previous one's g."""
    return L.b.fadd(ym, L.b.fsub(g, gp))


#: GT's update as every path computes it (its scalar loops here, its vector rows), one
#: coordinate at a time in numba's loops
tracked_x, tracked_y = scalar_intrinsic(emit_tracked_x), scalar_intrinsic(emit_tracked_y)


@template(**INLINE_FLAGS)
def update(view, cm, co, node, last):
    """Row i (steps.sweep's row update): Xn[i] = (W X)_i, Yn[i] = (W Y)_i, then
    x' = Xn[i] - gamma Yn[i], g' = node i's stochastic gradient at x' (grad_row), Yn[i] +=
    g' - G[i], G[i] = g', Xn[i] = x'. With topology_y (cm.ysep), x' is formed first and Yn[i]
    mixed again with Y's matrix, (W_y Y)_i; x' then takes no more of Yn (gamma 0 below).

    Diagonal quadratics, in one pass per row; g, the previous gradient, is G[i] when G has
    rows (gaussian noise); otherwise it is recomputed, with the same expression, from
    X[i] = x and the previous step's shared draw (row co.rp): the same bits (grad_hom and
    grad_het fix the roundings), one array less to read and write. Then, for a homogeneous
    problem without topology_y, a row of 3 or FUSED_MAX entries, no mean term and no rows
    prefetched ahead, both mixes and the update take one pass (fused: the same bits); with
    gaussian noise, a float64 state's rows of 3 or FUSED_MAX entries (the mean term's and
    scattered ones too) take drawn_update's one pass, the draw in it. Problems with data
    (not DIAGONAL) on fused's rows: both mixes and x' in one pass (fused_mixes), then
    grad_row and Y's update. The row's gaussian noise is drawn here (GT's blocks ask sweep
    for none), before the passes."""
    X, Xn, Y, Yn, G, i = view.X, view.Xn, view.Y, view.Yn, view.G, node.i
    d = Xn.shape[1]
    paired = False  # both mixes and x' done (fused_mixes)
    if not cm.ysep and cm.beta == 0.0 and cm.ahead == 0:
        e0 = cm.indptr[i]
        m = cm.indptr[i + 1] - e0
        if m == 3 or m == FUSED_MAX:
            if not DIAGONAL:
                fused_mixes(view, i, cm.indices, cm.w, e0, m, cm.beta, cm.m0, cm.m1,
                            stored(Xn, cm.gamma))
                paired = True
            elif not co.data.hetero and G.shape[0] == 0:
                fused(view, co, node, cm.indices, cm.w, e0, m, cm.beta, cm.m0, cm.m1,
                      stored(Xn, cm.gamma))
                return
    if co.kind == GAUSSIAN:  # the row's noise (sweep leaves it to GT: vector rows draw their own)
        fill_padded(node.key, co.N, node.b, co.scale, co.d)
    # X, then Y, through one call site: one inlined copy of mix_row's loops to compile
    # (measured 1.5-3 s less cold compile, same speed)
    for q in range(0 if paired else 2):
        out, src, mq = (Xn, X, cm.m0) if q == 0 else (Yn, Y, cm.m1)
        mix_row(out, i, src, cm.indptr, cm.indices, cm.w, cm.beta, mq, cm.ahead)
    if cm.ysep:  # topology_y: x' from W Y, then Y's own mix (a call site of its own: the
        # plain step keeps the loop above exactly as it was)
        gy = stored(Xn, cm.gamma)  # in the state's type
        for k in range(d):
            Xn[i, k] = tracked_x(Xn[i, k], Yn[i, k], gy)
        mix_row(Yn, i, Y, cm.yindptr, cm.yindices, cm.yw, cm.ybeta, cm.m1, cm.yahead)
    gamma = stored(Xn, 0.0 if cm.ysep else cm.gamma)  # a float32 state's: float32
    if not DIAGONAL:
        if not paired:
            for k in range(d):
                Xn[i, k] = tracked_x(Xn[i, k], Yn[i, k], gamma)
        GS, b = view.GS, node.b
        grad_row(co, node, Xn, i, GS, b)
        for k in range(d):
            g = stored(G, GS[b, k])
            Yn[i, k] = tracked_y(Yn[i, k], g, G[i, k])
            G[i, k] = g
        return
    N, dv, rn, v, u = co.N, co.dv, node.rn, node.v, node.u
    A, B = co.data.A, co.data.B
    if G.shape[0] == 0:
        rp = previous_row(co, node)
        # stored(): x and both gradients as the state holds them (float32 state: rounded,
        # so that the recomputed gradient is the one stored G would hold; float64: as is)
        if co.data.hetero and co.kind != NONE:
            for k in range(d):
                x = stored(Xn, tracked_x(Xn[i, k], Yn[i, k], gamma))
                gk = stored(Xn, grad_het(N, rn, k, v, u, dv, x, A, B, i))
                Yn[i, k] = tracked_y(Yn[i, k], gk,
                                     stored(Xn, grad_het(N, rp, k, v, u, dv, X[i, k], A, B, i)))
                Xn[i, k] = x
        elif co.data.hetero:  # no noise (grad_het_exact: the same bits)
            for k in range(d):
                x = stored(Xn, tracked_x(Xn[i, k], Yn[i, k], gamma))
                Yn[i, k] = tracked_y(Yn[i, k], stored(Xn, grad_het_exact(k, x, A, B, i)),
                                     stored(Xn, grad_het_exact(k, X[i, k], A, B, i)))
                Xn[i, k] = x
        elif co.kind != NONE:
            for k in range(d):
                Xn[i, k], Yn[i, k] = recomputed(view, co, node, rp, gamma, k, Xn[i, k],
                                                Yn[i, k])
        else:  # no noise (grad_exact: the same bits)
            for k in range(d):
                Xn[i, k], Yn[i, k] = exact(view, co, node, gamma, k, Xn[i, k], Yn[i, k])
    elif co.data.hetero:
        for k in range(d):
            x = stored(Xn, tracked_x(Xn[i, k], Yn[i, k], gamma))
            gk = stored(G, grad_het(N, rn, k, v, u, dv, x, A, B, i))
            Yn[i, k] = tracked_y(Yn[i, k], gk, G[i, k])
            G[i, k] = gk
            Xn[i, k] = x
    else:
        for k in range(d):
            Xn[i, k], Yn[i, k], G[i, k] = noisy(view, co, node, gamma, k, Xn[i, k], Yn[i, k])


# A homogeneous diagonal row's new coordinate k from its mixed values xm = (W X)_ik and
# ym = (W Y)_ik: x = xm - gamma ym, y = ym + g(x) - g, by the passes (xm, ym read back from
# Xn, Yn) and the one-pass rows (xm, ym from mix3 or mix5) alike; g is recomputed when G
# keeps no rows (structured or no noise), read from G with gaussian noise (noisy).


@jit(**SCALAR_FLAGS)
def recomputed(view, co, node, rp, gamma, k, xm, ym):
    """Structured noise: g(x_i) recomputed from x_i and the previous step's draw (row rp)."""
    Xn, N, v, u, dv, a0 = view.Xn, co.N, node.v, node.u, co.dv, co.data.a0
    x = stored(Xn, tracked_x(xm, ym, gamma))
    gk = stored(Xn, grad_hom(N, node.rn, k, v, u, dv, x, a0))
    return x, tracked_y(ym, gk, stored(Xn, grad_hom(N, rp, k, v, u, dv, view.X[node.i, k], a0)))


@jit(**SCALAR_FLAGS)
def noisy(view, co, node, gamma, k, xm, ym):
    """Gaussian noise (G's rows): (x', y', g'), g' from the row's noise (co.N, row rn)."""
    G, N, v, u, dv = view.G, co.N, node.v, node.u, co.dv
    x = stored(view.Xn, tracked_x(xm, ym, gamma))
    gk = stored(G, grad_hom(N, node.rn, k, v, u, dv, x, co.data.a0))
    return x, tracked_y(ym, gk, G[node.i, k]), gk


@jit(**SCALAR_FLAGS)
def exact(view, co, node, gamma, k, xm, ym):
    """No noise: both gradients exact (grad_exact), g(x_i) recomputed."""
    Xn, a0 = view.Xn, co.data.a0
    x = stored(Xn, tracked_x(xm, ym, gamma))
    return x, tracked_y(ym, stored(Xn, grad_exact(x, a0)),
                        stored(Xn, grad_exact(view.X[node.i, k], a0)))


@jit(**INLINE_FLAGS)
def fused(view, co, node, indices, w, e0, m, beta, mx, my, gamma):
    """Both mixes and the homogeneous diagonal update of row i in one pass, for a row of
    m = 3 or FUSED_MAX entries from e0 (dsgd.fused's rows) and no rows in G: each
    coordinate's (W X)_ik and (W Y)_ik by mix3 or mix5, in the state's type as the two
    passes store and read them back, then recomputed or exact: the same expressions, the
    same bits, one pass over the row's arrays instead of three. One loop per case and row
    length (a choice inside a loop stops it vectorizing: dsgd.fused). For stencils without
    a mean term (no beta, no scattered neighbours: rings and tori, whose states beyond the
    caches go in temporal passes): fused, interp_ring's steps (a mean term) took 0.8x the
    time in cache but 1.25x out of it (n = 3·10^4 and 10^5, no temporal passes there), and
    gaussian noise's, whose update also reads the noise row and G and writes G, 1.02-1.19x
    (docs/performance.md)."""
    X, Xn, Y, Yn, i = view.X, view.Xn, view.Y, view.Yn, node.i
    d = Xn.shape[1]
    j0, w0, j1, w1, j2, w2 = head3(Xn, indices, w, e0)
    beta = stored(Xn, beta)
    rp = previous_row(co, node)
    if m == 3:
        if co.kind != NONE:
            for k in range(d):
                Xn[i, k], Yn[i, k] = recomputed(
                    view, co, node, rp, gamma, k,
                    mix3(Xn, X, i, k, j0, w0, j1, w1, j2, w2, beta, mx),
                    mix3(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, beta, my))
        else:
            for k in range(d):
                Xn[i, k], Yn[i, k] = exact(
                    view, co, node, gamma, k, mix3(Xn, X, i, k, j0, w0, j1, w1, j2, w2, beta, mx),
                    mix3(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, beta, my))
        return
    j3, w3, j4, w4 = next2(Xn, indices, w, e0)
    if co.kind != NONE:
        for k in range(d):
            Xn[i, k], Yn[i, k] = recomputed(
                view, co, node, rp, gamma, k,
                mix5(Xn, X, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mx),
                mix5(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, my))
    else:
        for k in range(d):
            Xn[i, k], Yn[i, k] = exact(
                view, co, node, gamma, k,
                mix5(Xn, X, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mx),
                mix5(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, my))


def emit_noisy_group(L, row, k, z, gamma, a0):
    """Coordinates k.. of row i of Setup A's step (float64; arrays X, Xn, Y, Yn, G, the
    column means of X and Y), as noisy computes them one by one after the row's draw, in
    vectors: the mixes of X and Y over the row's entries (mix3's and mix5's order: the
    first entry's, the mean term's beta with the column means, then the others'), x', g'
    (emit_hom_gradient, z being the noise: gaussian noise's weights are 1) and y', written
    to Xn, Yn and G: the same operations, the same bits. Setup A's draw dominates its
    step; LLVM interleaves a group's draw with its update here, which the draw's loop then
    the update's did not (docs/performance.md)."""
    xm, ym = row.mixed(0, 0, k), row.mixed(2, 1, k)
    x = emit_tracked_x(L, xm, ym, gamma)
    gk = emit_hom_gradient(L, a0, x, z)
    y = emit_tracked_y(L, ym, gk, row.load(4, k))
    for n, v in ((1, x), (3, y), (4, gk)):
        row.store(n, k, v)


noisy_group = vector_group(emit_noisy_group)


@jit(**INLINE_FLAGS)
def group(view, cm, co, node, js, ws, g, tail):
    """vector_rows.drawn_row's group: noisy_group on view's arrays."""
    noisy_group((view.X, view.Xn, view.Y, view.Yn, view.G), (cm.m0, cm.m1), node.i, js, ws,
                (stored(view.Xn, cm.gamma), co.data.a0), node.key, g, co.scale, tail)


@jit(**INLINE_FLAGS)
def fused_mixes(view, i, indices, w, e0, m, beta, mx, my, gamma):
    """Row i's two mixes and x' in one pass, for a problem whose gradient is taken after x'
    (grad_row: problems with data), a row of m = 3 or FUSED_MAX entries from e0 (fused's
    rows, with beta 0: it is applied as mix_row applies it, the same expression): Yn[i] =
    (W Y)_i and Xn[i] = x' = (W X)_i - gamma Yn[i], each mixed value in the state's type as
    the passes store and read it back (mix3, mix5): the same bits (tests/problems/
    test_samples.py, against the passes one by one), one pass over the rows instead of three."""
    X, Xn, Y, Yn = view.X, view.Xn, view.Y, view.Yn
    d = Xn.shape[1]
    j0, w0, j1, w1, j2, w2 = head3(Xn, indices, w, e0)
    beta = stored(Xn, beta)
    if m == 3:
        for k in range(d):
            ym = mix3(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, beta, my)
            Xn[i, k] = tracked_x(mix3(Xn, X, i, k, j0, w0, j1, w1, j2, w2, beta, mx), ym, gamma)
            Yn[i, k] = ym
        return
    j3, w3, j4, w4 = next2(Xn, indices, w, e0)
    for k in range(d):
        ym = mix5(Yn, Y, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, my)
        Xn[i, k] = tracked_x(mix5(Xn, X, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mx),
                             ym, gamma)
        Yn[i, k] = ym


@template(**BLOCK_FLAGS)
def blocks(c, t, ph, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): steps.sweep with ``update``, or with
    drawn_update for gaussian noise on a homogeneous diagonal problem. Two loops over the
    rows: with drawn's branch in update's loop, noiseless steps on the ring took 1.15x
    their time (the branch not taken; in-process alternations, Zen 3). GT draws its rows'
    noise itself (sweep's draw False)."""
    Xn, Yn = state.S1[c, 1 - cur], state.S2[c, 1 - cur]
    view = View(state.S1[c, cur], Xn, state.S2[c, cur], Yn, state.S3[c], state.grads[c],
                (Xn, Yn))
    if DIAGONAL and oracle.kind == GAUSSIAN and not oracle.data.hetero:
        sweep(drawn_update, view, c, t, b0, b1, last, state, mix, oracle, False)
    else:
        sweep(update, view, c, t, b0, b1, last, state, mix, oracle, False)


@template(**INLINE_FLAGS)
def drawn_update(view, cm, co, node, last):
    """update for a step with gaussian noise on a homogeneous diagonal problem: rows of 3
    or FUSED_MAX entries without topology_y by vector_rows.drawn_row (a float64 state; the
    mean term's rows too, unlike fused's: the draw dominates these steps), the others by
    update."""
    i = node.i
    if not cm.ysep:
        e0 = cm.indptr[i]
        m = cm.indptr[i + 1] - e0
        if (m == 3 or m == FUSED_MAX) and drawn_row(group, view, cm, co, node, e0, m,
                                                    (view.X, view.Y)):
            return
    update(view, cm, co, node, last)


def alloc(batch: Batch) -> tuple:
    return (batch.new_rows(batch.C, 2), batch.new_rows(batch.C, 2, at=1024),
            gradient_rows(batch, recomputes=True))


def init(batch: Batch) -> tuple:
    X2, Y2, G = arrays = alloc(batch)
    for c, cell in enumerate(batch.cells):
        X, Y = batch.used(X2[c, 0]), batch.used(Y2[c, 0])
        initial_point(X, cell.x0, cell.seed, batch.d)
        batch.grads(0, X, Y, c)  # y(0) = g(0)
        if len(G[c]):
            rows.copy(G[c], Y2[c, 0])
        column_means(X, batch.part[c], 0, batch.means[c, 0])
        column_means(Y, batch.part[c], 1, batch.means[c, 1])
    return arrays


def iterates(batch: Batch, arrays: tuple, cur: int, c: int):
    X2, Y2, _ = arrays
    return batch.used(X2[c, cur]), batch.used(Y2[c, cur])


def state(batch: Batch, arrays: tuple, cur: int, c: int, t: int) -> dict:
    X, Y = iterates(batch, arrays, cur, c)
    return {"X": batch.real(X), "Y": batch.real(Y), "G": gradients(batch, arrays[2][c], X, c, t)}


ALGORITHM = Algorithm("gt", (blocks, update, drawn_update), 2,
                      Costs(mixes=2, grad_evals=1, comm_rounds=1), alloc, init, iterates, state,
                      doc=__doc__, topology_y=True)
