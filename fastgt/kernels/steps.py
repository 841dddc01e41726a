"""Fused time loops of GT and D-SGD over a batch of C cells, in place.

A batch is C independent runs that share n, d, the sparsity pattern of W and the problem;
they may differ in weights (alpha, self weight), stepsize, noise scale and seed. A single
run is C = 1. Arrays travel in three namedtuples, built in one place (algorithms.base.Batch)
and read by field name:

    state  = State(S1, S2, S3, scratch, part, means)
             GT:    S1 = X (C, 2, r, d), S2 = Y (C, 2, r, d), S3 = G (C, r, d), or
                    (C, 0, d) when not stored (structured or no noise: gt_update)
             D-SGD: S1 = Z = X - gamma G (C, 2, r, d), S2 unused, S3 = X (C, r, d)
             r >= n rows (the rows past n, zero, only space the buffers: Batch.rows)
             scratch (C, nb, >= d): a noise row per block; part (C, nb, 2, d); means (C, 2, d)
             (d here is the padded row width, Batch.dp; the oracle's d is the problem's)
    mix    = Mixing(indptr, indices, weights (C, nnz), beta (C,), gamma (C,))
    oracle = Oracle(seed (C,), kind, scale (C,), xi (2 C, >= d), uv (C, 2, m), dv, d, hetero,
                    a0, A, B)
             xi: the shared draws of each cell's current and previous step (shared_row)

Rows are d coordinates padded with zeros to a whole number of cache lines (state, sums,
and the problem's A and B alike): every row then starts on a line and every loop over a
row runs whole vectors. Noise is drawn for the d coordinates only, so the padding stays
exactly zero and changes no value of the others.

Buffers come in pairs, ``[:, cur]`` current and ``[:, 1 - cur]`` next; ``run_steps``
returns the new ``cur``. One step of one cell is: the shared draw, then every row block
(noise, mix, gradient, update, block column sums), then the mean-term reduction.
``run_steps`` orders this work by cells or by row blocks; both orders give identical bits.
"""

from collections import namedtuple

from numba import njit, prange

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .mixing import FUSED_MAX, add_row, block_range, mix_row, reduce_blocks, zero_rows
from .oracles import GAUSSIAN, STRUCTURED, draw_shared, grad_het, grad_hom, noise_at
from .rng import STREAM_NOISE, fill_normals, row_key, step_key, stream_key

GT = 0
DSGD = 1

#: the kernels' bundles (fields: module docstring)
State = namedtuple("State", "S1 S2 S3 scratch part means", module=__name__)
Mixing = namedtuple("Mixing", "indptr indices weights beta gamma", module=__name__)
Oracle = namedtuple("Oracle", "seed kind scale xi uv dv d hetero a0 A B", module=__name__)


@njit(**INLINE_FLAGS)
def gt_update(Xn, Yn, G, N, rn, v, u, dv, i, gamma, hetero, a0, A, B, X, rp):
    """With Xn[i] = (W X)_i, Yn[i] = (W Y)_i and node i's noise e (noise_at), in one pass:
    x' = Xn[i] - gamma Yn[i], g' = e + grad f_i(x'), Yn[i] += g' - g, Xn[i] = x'.

    g, the previous gradient, is G[i] (then G[i] = g') when G has rows (gaussian noise);
    otherwise it is recomputed, with the same expression, from X[i] = x and the previous
    step's noise in row rp of N (the previous shared draw): the same bits (grad_hom and
    grad_het fix the roundings), one array less to read and write."""
    d = Xn.shape[1]
    if G.shape[0] == 0:
        if hetero:
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
    elif hetero:
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


@njit(**INLINE_FLAGS)
def dsgd_update(Zn, X, last, N, rn, v, u, dv, i, gamma, hetero, a0, A, B):
    """With Zn[i] = (W Z)_i = x' and node i's noise e (noise_at): Zn[i] = x' - gamma (e +
    grad f_i(x')), and x' copied to X[i] when ``last``."""
    d = Zn.shape[1]
    if last:
        for k in range(d):
            X[i, k] = Zn[i, k]
    if hetero:
        for k in range(d):
            x = Zn[i, k]
            Zn[i, k] = x - gamma * (noise_at(N, rn, k, v, u, dv) + (A[i, k] * x - B[i, k]))
    else:
        for k in range(d):
            x = Zn[i, k]
            Zn[i, k] = x - gamma * (a0 * x + noise_at(N, rn, k, v, u, dv))


@njit(**INLINE_FLAGS)
def dsgd_fused(Zn, i, Z, indices, w, e0, m, beta, mean, N, rn, v, u, dv, gamma, a0):
    """mix_row then dsgd_update in one pass, for a homogeneous problem, a row of m = 3 or
    FUSED_MAX entries from e0 and a step that does not write X: Zn[i] = x' - gamma (e +
    a0 x') with x' = (W Z)_i and e node i's noise (noise_at). The same expressions as the
    two passes, so the same bits; a pass of its own rather than an option of mix_row,
    where the choice inside the loop stopped it vectorizing (measured 6 ns/elem instead of
    0.5)."""
    d = Zn.shape[1]
    j0, w0, j1, w1 = indices[e0], w[e0], indices[e0 + 1], w[e0 + 1]
    j2, w2 = indices[e0 + 2], w[e0 + 2]
    if m == 3:
        for k in range(d):
            x = w0 * Z[j0, k] + beta * mean[k] + w1 * Z[j1, k] + w2 * Z[j2, k]
            Zn[i, k] = x - gamma * (a0 * x + noise_at(N, rn, k, v, u, dv))
        return
    j3, w3, j4, w4 = indices[e0 + 3], w[e0 + 3], indices[e0 + 4], w[e0 + 4]
    for k in range(d):
        x = (w0 * Z[j0, k] + beta * mean[k] + w1 * Z[j1, k] + w2 * Z[j2, k] + w3 * Z[j3, k]
             + w4 * Z[j4, k])
        Zn[i, k] = x - gamma * (a0 * x + noise_at(N, rn, k, v, u, dv))


@njit(**INLINE_FLAGS)
def cell_key(seed, t):
    return step_key(stream_key(seed, STREAM_NOISE), t)


@njit(**NJIT_FLAGS)
def step_begin(c, t, oracle):
    """The step's shared draw (Setup B's xi) of cell c, before any row."""
    draw_shared(oracle.kind, cell_key(oracle.seed[c], t), oracle.xi, shared_row(c, t),
                oracle.scale[c], oracle.d)


@njit(**INLINE_FLAGS)
def shared_row(c, t):
    """Row of xi holding cell c's shared draw of step t: two rows per cell, by parity, so
    that the previous step's draw is kept (GT recomputes its previous gradient from it)."""
    return 2 * c + (t & 1)


@njit(**NJIT_FLAGS)
def step_blocks(algo, c, t, cur, b0, b1, last, state, mix, oracle):
    """Step t of cell c on row blocks [b0, b1): per row, draw gaussian noise into the
    block's row scratch[c, b] (structured noise needs no row: noise_at), mix the
    neighbours, apply the algorithm's update (gt_update or dsgd_update; for D-SGD usually
    both in one pass, dsgd_fused) and add the row to its block's column sums. D-SGD writes
    X when ``last``."""
    S1, S2, S3, scratch, part, means = (state.S1, state.S2, state.S3, state.scratch, state.part,
                                        state.means)
    indptr, indices, weights, beta, gamma = (mix.indptr, mix.indices, mix.weights, mix.beta,
                                             mix.gamma)
    kind, xi, uv, dv, d = oracle.kind, oracle.xi, oracle.uv, oracle.dv, oracle.d
    hetero, a0, A, B = oracle.hetero, oracle.a0, oracle.A, oracle.B
    gt = algo == GT
    n = indptr.shape[0] - 1  # the state may have more (zero) rows: Batch.rows
    nb = scratch.shape[1]
    # the cell's views, once per call: GT X, Y -> Xn, Yn and G; D-SGD Z -> Xn and X in G
    X, Xn, Y, Yn, G = S1[c, cur], S1[c, 1 - cur], S2[c, cur], S2[c, 1 - cur], S3[c]
    g, pc, w, mx, my = scratch[c], part[c], weights[c], means[c, 0], means[c, 1]
    bt, gm, sc = beta[c], gamma[c], oracle.scale[c]
    tkey = cell_key(oracle.seed[c], t)
    structured = kind == STRUCTURED
    N = xi if structured else g  # noise_at's rows
    v = u = 1.0 if kind == GAUSSIAN else 0.0
    rs, rp = shared_row(c, t), shared_row(c, t - 1)
    for b in range(b0, b1):
        lo, hi = block_range(b, nb, n)
        rn = rs if structured else b
        if bt != 0.0:
            zero_rows(pc, b, 0, 2)
        for i in range(lo, hi):
            if structured:
                v, u = uv[c, 0, i], uv[c, 1, i]
            elif kind == GAUSSIAN:
                fill_normals(row_key(tkey, i), g, b, sc, d)
            m = indptr[i + 1] - indptr[i]
            if not gt and not hetero and not last and (m == 3 or m == FUSED_MAX):
                dsgd_fused(Xn, i, X, indices, w, indptr[i], m, bt, mx, N, rn, v, u, dv, gm, a0)
            else:
                # X (D-SGD: Z), then GT's Y, through one call site: one inlined copy of
                # mix_row's loops to compile (measured 1.5-3 s less cold compile, same speed)
                for q in range(2 if gt else 1):
                    out, src, mq = (Xn, X, mx) if q == 0 else (Yn, Y, my)
                    mix_row(out, i, src, indptr, indices, w, bt, mq)
                if gt:
                    gt_update(Xn, Yn, G, N, rn, v, u, dv, i, gm, hetero, a0, A, B, X,
                              rp if structured else rn)
                else:
                    dsgd_update(Xn, G, last, N, rn, v, u, dv, i, gm, hetero, a0, A, B)
            if bt != 0.0:
                for q in range(2 if gt else 1):
                    add_row(pc, b, q, Xn if q == 0 else Yn, i)


@njit(**NJIT_FLAGS)
def step_end(algo, c, state, mix):
    """Mean term of the next step: block sums reduced in block order."""
    part, means = state.part, state.means
    if mix.beta[c] != 0.0:
        n = mix.indptr.shape[0] - 1
        reduce_blocks(part[c], 0, means[c, 0], n)
        if algo == GT:
            reduce_blocks(part[c], 1, means[c, 1], n)


@njit(parallel=True, **NJIT_FLAGS)
def run_steps(algo, t0, steps, cur, state, mix, oracle, runs):
    """Steps t0 -> t0 + steps of every cell, in place; returns the new ``cur``.

    Work items, processed in parallel, are (cell, run of consecutive row blocks) pairs,
    ``runs`` per cell (capped at the block count):

    - runs == 1: an item is a whole cell, advanced through all the steps by one thread:
      no per-step barrier (batches of small cells; any run on one thread);
    - runs > 1: one parallel pass per step, with the shared draws before it and the
      mean-term reductions after it (big runs on several threads).

    One parallel loop for both (not one driver each) also means one compiled copy of the
    step code: compile time grows with each copy.
    """
    C = state.S3.shape[0]
    nb = state.scratch.shape[1]
    per = -(-nb // max(1, min(nb, runs)))  # blocks per run
    runs = -(-nb // per)
    span = max(1, steps) if runs == 1 else 1  # steps per parallel pass
    for s0 in range(0, steps, span):
        if runs > 1:
            for c in range(C):
                step_begin(c, t0 + s0 + 1, oracle)
        for w in prange(C * runs):
            c = w // runs
            b0 = (w - c * runs) * per
            cc = cur
            for s in range(s0, s0 + span):
                t = t0 + s + 1
                if runs == 1:
                    step_begin(c, t, oracle)
                step_blocks(algo, c, t, cc, b0, min(nb, b0 + per), s == steps - 1, state,
                            mix, oracle)
                if runs == 1:
                    step_end(algo, c, state, mix)
                cc = 1 - cc
        if runs > 1:
            for c in range(C):
                step_end(algo, c, state, mix)
        cur = cur if span % 2 == 0 else 1 - cur
    return cur
