"""Row-wise mixing with W = A + beta (1/n) 1 1^T, A in CSR form, and block reductions.

Rows are processed in ``nb`` fixed blocks (nb depends on n only, never on the thread
count); column sums are accumulated per block and reduced in block order, so every
result is bit-identical for any number of threads.

Row helpers index whole 2-d arrays by row (``out[i, k]``) instead of taking row views: a
view made per row costs two atomic reference-count updates, which at d = 100 cost as much
as the row's arithmetic.
"""

import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS, SMALL_RUN
from .lanes import Lanes
from .rounding import F32, FLOATS, prefetch_row, stored

#: index 0 as a typed int64 for kernel calls: a literal 0 argument would make numba compile
#: one more copy of the callee (a Literal[int](0) signature)
ROW0 = np.int64(0)
BLOCKS_MAX = 256
ROWS_MIN = 8
#: CSR entries mixed in the first, fused pass over a row (the self loop and up to 4
#: neighbours: a ring or a 2-d torus in one pass); each further entry takes its own pass
FUSED_MAX = 5


#: a step in chain order (Mixing.chain) goes along its chains in batches of this many rows
CHAIN_ROWS = 256


@njit(**SCALAR_FLAGS)
def chain_row(q, n, o, g, L):
    """(row, run) at position q of a step whose every row i mixes row (i + o) mod n only
    (the one-peer graph's): rows a + k o (mod n), a < g = gcd(n, o), k < L = n / g, in
    groups of CHAIN_ROWS residues a, each group k by k; ``run``: the positions from q on
    whose rows follow row by row, CHAIN_ROWS or fewer (none past row n - 1). Rows i + o,
    read as partners of a batch, are then the next batch's own rows while they are in
    cache (in row order they are read again o rows later: from memory, once o rows outgrow
    the cache). A bijection of [0, n); the order changes no value (a row reads the
    previous step's arrays only). Three divisions: once per run (steps.sweep loops over a
    run's rows)."""
    G = q // (CHAIN_ROWS * L)
    r = q - G * CHAIN_ROWS * L
    s = min(CHAIN_ROWS, g - G * CHAIN_ROWS)
    k = r // s
    a = r - k * s
    i = (G * CHAIN_ROWS + a + k * o) % n
    return i, min(s - a, n - i)


@njit(**NJIT_FLAGS)
def n_blocks(n):
    return min(BLOCKS_MAX, (n + ROWS_MIN - 1) // ROWS_MIN)


@njit(**SCALAR_FLAGS)
def block_range(b, nb, n):
    bs = (n + nb - 1) // nb
    return b * bs, min(n, (b + 1) * bs)


@njit(**INLINE_FLAGS)
def prefetch_ahead(X, i, indptr, indices, ahead):
    """Hint the CPU to load the rows of X that row i + ahead mixes, while row i is being
    computed (mix_row, for a matrix whose neighbours are scattered: Mixing.ahead): a
    random matching's partner, a random graph's neighbours, are rows the hardware
    prefetcher cannot guess. No effect on any value."""
    ia = i + ahead
    if ia < indptr.shape[0] - 1:
        e0 = indptr[ia]
        for e in range(e0, indptr[ia + 1]):
            j = indices[e]
            # not row ia itself (read in order), nor a padded row's repeated column
            if j != ia and (e == e0 or j != indices[e - 1]):
                prefetch_row(X, j)


# A row's arithmetic, written once as LLVM IR (kernels/lanes.py): numba's loops take it as
# scalar intrinsics (mixed, pull), a vector kernel as vectors of a row's coordinates
# (gt.py's fused Setup A row); the same operations in the same order, the same bits.


def emit_pull(L, single, w, xj, xi):
    """One entry's term of a row of W X as it is summed: w x_j (float64 state), or
    w (x_j - x_i) (float32: the Laplacian form, which emit_mixed adds to x_i)."""
    return L.b.fmul(w, L.b.fsub(xj, xi)) if single else L.b.fmul(w, xj)


def emit_mixed(L, single, xi, ws, xs):
    """Row i's value from its terms' weights ``ws`` and values ``xs`` (the mean term's
    among them: beta and the column mean), added in order: the sum (float64), x_i + the
    sum (float32).

    A float32 state mixes in the Laplacian form, x_i + sum_j w_ij (x_j - x_i), the
    diagonal's own term 0: its row sums are exactly 1 whatever the weights' rounding (the
    ring's 1/3, rounded, sum to 1 + 3e-8: a state mixed as sum_j w_ij x_j would grow by
    that every step), a symmetric W keeps the mean, and near consensus each term is small,
    so that the sum rounds once at the magnitude of x_i. Mixed as sum_j w_ij x_j, which
    rounds at every term, a float32 GT run's mean ended 7e-5 relative from float64's after
    40000 steps of stepsize 2e-4 (ring of 12, heterogeneous quadratic, no noise); in this
    form 4e-6 (and 6e-6 with float64 arithmetic rounded on store, before float32 states
    computed in float32). Float64 states keep sum_j w_ij x_j, and their bits."""
    s = emit_pull(L, single, ws[0], xs[0], xi)
    for w, x in zip(ws[1:], xs[1:]):
        s = L.b.fadd(s, emit_pull(L, single, w, x, xi))
    return L.b.fadd(xi, s) if single else s


def _row_type(out, *values):
    """The float type of ``out``'s elements when every value (a number or a tuple of them)
    is of it, else None (an intrinsic's typing: a value of another type is a caller's
    error, which numba then reports)."""
    if not (isinstance(out, types.Array) and out.dtype in FLOATS):
        return None
    for v in values:
        if (v.dtype if isinstance(v, types.UniTuple) else v) != out.dtype:
            return None
    return out.dtype


@intrinsic
def pull(typingctx, out, w, xj, xi):
    """One entry's term of row i of W X as mix_row sums it into ``out`` (emit_pull)."""
    ty = _row_type(out, w, xj, xi)
    if ty is None:
        return None

    def codegen(context, builder, sig, args):
        L = Lanes(builder, fp=context.get_value_type(ty))
        return emit_pull(L, ty == F32, *args[1:])

    return ty(out, ty, ty, ty), codegen


@intrinsic
def mixed(typingctx, out, xi, ws, xs):
    """Row i's value, as ``out`` holds it, from its terms in order (emit_mixed): ws and xs are
    tuples of the weights and values (the mean term's beta and column mean among them)."""
    ty = _row_type(out, xi, ws, xs)
    if ty is None or not isinstance(ws, types.UniTuple) or ws.count != getattr(xs, "count", -1):
        return None

    def codegen(context, builder, sig, args):
        L = Lanes(builder, fp=context.get_value_type(ty))
        ws_, xs_ = (cgutils.unpack_tuple(builder, t) for t in args[2:])
        return emit_mixed(L, ty == F32, args[1], ws_, xs_)

    return ty(out, ty, ws, xs), codegen


@njit(**SCALAR_FLAGS)
def mix3(out, X, i, k, j0, w0, j1, w1, j2, w2, beta, mean):
    """Coordinate k of row i of W X for a row of 3 entries (and the mean term), as ``out``
    holds it (emit_mixed): the one expression of mix_row's fused pass and D-SGD's."""
    return mixed(out, X[i, k], (w0, beta, w1, w2), (X[j0, k], mean[k], X[j1, k], X[j2, k]))


@njit(**SCALAR_FLAGS)
def mix5(out, X, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mean):
    """mix3 for a row's first FUSED_MAX entries: two terms more, added in order."""
    return mixed(out, X[i, k], (w0, beta, w1, w2, w3, w4),
                 (X[j0, k], mean[k], X[j1, k], X[j2, k], X[j3, k], X[j4, k]))


@njit(**SCALAR_FLAGS)
def entry(out, indices, w, e):
    """CSR entry e: its column and its weight as ``out`` holds it (stored)."""
    return indices[e], stored(out, w[e])


@njit(**SCALAR_FLAGS)
def head3(out, indices, w, e0):
    """A row's first 3 entries from e0, as mix3 takes them: j0, w0, j1, w1, j2, w2."""
    j0, w0 = entry(out, indices, w, e0)
    j1, w1 = entry(out, indices, w, e0 + 1)
    j2, w2 = entry(out, indices, w, e0 + 2)
    return j0, w0, j1, w1, j2, w2


@njit(**SCALAR_FLAGS)
def next2(out, indices, w, e0):
    """Entries 4 and 5 of a row from e0, the two more that mix5 takes: j3, w3, j4, w4."""
    j3, w3 = entry(out, indices, w, e0 + 3)
    j4, w4 = entry(out, indices, w, e0 + 4)
    return j3, w3, j4, w4


@njit(**INLINE_FLAGS)
def mix_row(out, i, X, indptr, indices, w, beta, mean, ahead):
    """out[i] = beta * mean + sum_e w_e X[j_e] over row i's CSR entries e, added in entry
    order. A row's first 3 entries, or first FUSED_MAX if it has that many, take one pass
    (a loop for each of the two counts, vectorizing with its rows' pointers known); every
    further entry, and the entry of a row of one, takes a pass of its own.
    Runs pad rows of 2 and 4 entries to 3 and 5 (pad_rows), so that they too are fused.

    The first product is written before ``beta * mean`` so that FMA contraction fuses each
    product into the running sum (fma(w0, x0, beta * mean), then fma(w1, x1, .), ...): the
    same roundings as a pass per entry. A float32 ``out``: the Laplacian form of each row
    of 3 or more entries (emit_mixed). ``ahead`` > 0: prefetch_ahead first."""
    if ahead > 0:  # scattered neighbours (Mixing.ahead): the rows of row i + ahead
        prefetch_ahead(X, i, indptr, indices, ahead)
    d = out.shape[1]
    e0, e1 = indptr[i], indptr[i + 1]
    beta = stored(out, beta)  # a float32 state: weights and mean in float32 (pull)
    if e1 - e0 == 3 or e1 - e0 >= FUSED_MAX:
        j0, w0, j1, w1, j2, w2 = head3(out, indices, w, e0)
        if e1 - e0 == 3:
            for k in range(d):
                out[i, k] = mix3(out, X, i, k, j0, w0, j1, w1, j2, w2, beta, mean)
            return
        j3, w3, j4, w4 = next2(out, indices, w, e0)
        for k in range(d):
            out[i, k] = mix5(out, X, i, k, j0, w0, j1, w1, j2, w2, j3, w3, j4, w4, beta, mean)
    else:  # a row of one entry or none (pad_rows pads 2 and 4): the identity, a pure mean
        for k in range(d):  # term, one partner; as sum_j w_ij x_j in either type, exact
            out[i, k] = beta * mean[k]  # there (x_i + (mean - x_i) need not be the mean)
        for e in range(e0, e1):
            j, we = entry(out, indices, w, e)
            for k in range(d):
                out[i, k] += we * X[j, k]
        return
    for e in range(e0 + FUSED_MAX, e1):  # a pass per further entry
        j, we = entry(out, indices, w, e)
        for k in range(d):
            out[i, k] += pull(out, we, X[j, k], X[i, k])


def pad_rows(indptr, indices, weights):
    """The CSR arrays (indptr, indices, weights (C, nnz)) with every row of 2 or 4 entries
    given one more, of weight 0 on the row's last column, so that mix_row fuses it: that
    adds fma(0, x, s) = s, the same sums (but for the sign of a zero sum, and NaN for an
    infinite x). The fused passes come in two counts, 3 and FUSED_MAX, instead of one per
    count from 2: 1.5-2 s less cold compile (measured), the same speed on rings and tori."""
    lengths = np.diff(indptr)
    pad = (lengths == 2) | (lengths == 4)
    if not pad.any():
        return indptr, indices, weights
    ends = indptr[1:][pad]  # insert before each padded row's end
    new_indptr = (indptr + np.concatenate([[0], np.cumsum(pad)])).astype(indptr.dtype)
    new_indices = np.insert(indices, ends, indices[ends - 1])
    new_weights = np.insert(weights, ends, 0.0, axis=1)
    return new_indptr, new_indices, new_weights


@njit(**INLINE_FLAGS)
def zero_rows(part, b, q0, q1):
    """part[b, q0:q1] = 0, as a loop (array expressions inside prange become nested
    parfors, which cost compile time and nothing else)."""
    for q in range(q0, q1):
        for k in range(part.shape[2]):
            part[b, q, k] = 0.0


@njit(**INLINE_FLAGS)
def add_row(part, b, q, Z, i):
    """part[b, q] += Z[i]."""
    for k in range(Z.shape[1]):
        part[b, q, k] += Z[i, k]


@njit(**NJIT_FLAGS)
def reduce_blocks(part, q, out, n):
    """out = (sum over blocks b, in order, of part[b, q]) / n, summed in float64 into
    part[0, q] (block sums are scratch: every caller writes them anew before it reduces
    them) and rounded once where ``out`` (a float32 state's means) holds less: vectorized
    along the row, the same sums and bits as summing into a float64 ``out`` from 0. A
    kernel, not a helper (config.INLINE_FLAGS): column_means calls it from Python, in
    every run's init, where a helper, not cached, would compile in every process."""
    d = out.shape[0]
    for k in range(d):
        part[0, q, k] = 0.0 + part[0, q, k]  # as 0 + p: the sign of a zero sum
    for b in range(1, part.shape[0]):
        for k in range(d):
            part[0, q, k] += part[b, q, k]
    for k in range(d):
        out[k] = part[0, q, k] / n


@njit(**INLINE_FLAGS)
def block_sum(Z, part, q, b):
    """part[b, q] = sum of Z's rows in block b, rows added in order (as the step kernels do)."""
    lo, hi = block_range(b, part.shape[0], Z.shape[0])
    zero_rows(part, b, q, q + 1)
    for i in range(lo, hi):
        add_row(part, b, q, Z, i)


@njit(**NJIT_FLAGS)
def block_sums(Z, part, q):
    """block_sum of every block, in order."""
    for b in range(part.shape[0]):
        block_sum(Z, part, q, b)


@njit(parallel=True, **NJIT_FLAGS)
def block_sums_parallel(Z, part, q):
    """block_sum of every block, blocks in parallel (each its own sum: the same bits)."""
    for pb in prange(part.shape[0]):
        block_sum(Z, part, q, np.int64(pb))  # a parfor's index may be unsigned


def big(Z) -> bool:
    """Whether passes over the state Z run rows in parallel: from SMALL_RUN elements (a
    parallel loop's start costs microseconds on 1 thread, 10-80 on 2: more than a tiny
    cell's rows). Chosen here, not in compiled code: a kernel that held both loops would
    compile the parallel one for every copy that calls it (the warm-up compiles them
    once, with a big run: fastgt/warmup.py)."""
    return Z.shape[0] * Z.shape[1] >= SMALL_RUN


def column_means(Z, part, q, out):
    """out = mean over rows of Z, summed in the same block order as the step kernels."""
    (block_sums_parallel if big(Z) else block_sums)(Z, part, q)
    reduce_blocks(part, q, out, Z.shape[0])
