"""Vector rows: a gaussian step's row with its draw, in vectors of a generator group's
coordinates, for the algorithms whose rows take it (GT, D-SGD, D², EXTRA).

Such a step's row of 3 or FUSED_MAX entries (rings, tori and interp_ring; the mean term's
rows too) goes group by group: per group of 16 coordinates, the algorithm's vector group
(an intrinsic built from the IR builders its scalar code uses: kernels/lanes.py) draws the
group's 8 normal pairs and updates its coordinates in one basic block (a partial last
group: a branch for its second run), the same bits as the draw then the passes.
``drawn_row`` takes a row through its groups, the partial last group included;
``VectorRow`` is a vector group's view of its operands in its codegen. A row's runs of
PAIRS coordinates lie wholly inside it or outside: Batch's rows are whole cache lines
(algorithms.base.LANES doubles, a multiple of PAIRS: tests/kernels/test_kernels.py).
"""

from numba import njit, types
from numba.core import cgutils
from numba.extending import overload

from ..config import INLINE_FLAGS
from .lanes import element_pointer
from .mixing import emit_mixed, head3, next2, prefetch_ahead
from .rng import PAIRS
from .rounding import F64, stored


def vector_row_typed(arrays2, means, js, ws, i, g, tail):
    """Whether a vector row kernel's operands type (its typing, which returns None
    otherwise): float64 C arrays, rows (2-d) and column means (1-d); the row's entries js
    (integers) and their weights ws (float64, the mean term's beta second); integer i and g;
    ``tail`` None (a whole group) or two integers (rng.emit_runs: a partial last group)."""
    return (all(isinstance(a, types.Array) and a.dtype == F64 and a.layout == "C"
                for a in arrays2 + means)
            and all(a.ndim == 2 for a in arrays2) and all(a.ndim == 1 for a in means)
            and isinstance(js, types.UniTuple) and isinstance(js.dtype, types.Integer)
            and isinstance(ws, types.UniTuple) and ws.dtype == F64 and ws.count == js.count + 1
            and isinstance(i, types.Integer) and isinstance(g, types.Integer)
            and (isinstance(tail, types.NoneType)
                 or isinstance(tail, types.UniTuple) and tail.count == 2
                 and isinstance(tail.dtype, types.Integer)))


class VectorRow:
    """A vector row kernel's view of its operands (vector_row_typed's), in its codegen:
    ``i`` and ``g`` as int64, the row's entries ``js`` as int64 and its weights ``ws`` in
    every lane of L, ``tail`` None or its two int64s (rng.emit_runs); ``at(n, inds)``, a
    pointer to the vector at argument n's [inds]; ``mixed(n, mean, k)``, the row's mix
    (emit_mixed) of argument n's rows js at coordinates k.. (the mean term's column means:
    argument ``mean``)."""

    def __init__(self, context, builder, sig, args, L, i, js, ws, g, tail):
        self.context, self.builder, self.sig, self.args, self.L = context, builder, sig, args, L
        ty = sig.args
        self.i, self.g = (context.cast(builder, args[n], ty[n], types.int64) for n in (i, g))
        self.js = [context.cast(builder, j, ty[js].dtype, types.int64)
                   for j in cgutils.unpack_tuple(builder, args[js])]
        self.ws = [L.splat(w) for w in cgutils.unpack_tuple(builder, args[ws])]
        self.tail = (None if isinstance(ty[tail], types.NoneType) else
                     [context.cast(builder, v, ty[tail].dtype, types.int64)
                      for v in cgutils.unpack_tuple(builder, args[tail])])

    def at(self, n, inds):
        return element_pointer(self.context, self.builder, self.sig.args[n], self.args[n], inds,
                               self.L.fty)

    def load(self, n, inds):
        return self.builder.load(self.at(n, inds), align=8)

    def mixed(self, n, mean, k):
        xs = [self.load(n, [j, k]) for j in self.js]
        xs.insert(1, self.load(mean, [k]))
        return emit_mixed(self.L, False, None, self.ws, xs)


def drawn_row(group, view, cm, co, node, e0, m, sources):
    """Row node.i of a gaussian step, a row of m = 3 or FUSED_MAX entries from e0, by the
    algorithm's vector ``group`` (group(view, cm, co, node, js, ws, g, tail): the row's
    entries js, their weights ws, the mean term's beta second, group g, ``tail`` None or
    rng.emit_runs's (d, runs)): whether it took the row. Compiled code only (an overload
    chosen by the state's type, inlined): a float64 state's rows, every whole group of 16
    coordinates below d then the partial last group, the row's padding included, as the
    passes take it (rows are whole runs of PAIRS: Batch.dp's cache lines); a float32
    state's rows are left to the draw then the passes (its transform, rng.pair32, has no
    vector form). ``sources``: the arrays the row mixes, whose neighbour rows ahead a
    scattered matrix prefetches first (cm.ahead), as mix_row does."""
    raise TypeError("drawn_row is called from numba code only")


def _drawn64(group, view, cm, co, node, e0, m, sources):
    i, out = node.i, sources[0]
    if cm.ahead > 0:
        for A in sources:
            prefetch_ahead(A, i, cm.indptr, cm.indices, cm.ahead)
    j0, w0, j1, w1, j2, w2 = head3(out, cm.indices, cm.w, e0)
    beta = stored(out, cm.beta)
    full = co.d // (2 * PAIRS)
    left = out.shape[1] - 2 * PAIRS * full  # the coordinates of a partial group: 0, 8 or 16
    if m == 3:
        groups(group, view, cm, co, node, (j0, j1, j2), (w0, beta, w1, w2), full, left)
    else:
        j3, w3, j4, w4 = next2(out, cm.indices, cm.w, e0)
        groups(group, view, cm, co, node, (j0, j1, j2, j3, j4), (w0, beta, w1, w2, w3, w4),
               full, left)
    return True


@overload(drawn_row, inline="always")
def _drawn_row(group, view, cm, co, node, e0, m, sources):
    if sources.dtype.dtype == F64:
        return _drawn64

    def passes(group, view, cm, co, node, e0, m, sources):
        return False
    return passes


@njit(**INLINE_FLAGS)
def groups(group, view, cm, co, node, js, ws, full, left):
    """drawn_row's groups: ``full`` whole ones, then a partial one of ``left`` coordinates."""
    for g in range(full):
        group(view, cm, co, node, js, ws, g, None)
    if left:
        group(view, cm, co, node, js, ws, full, (co.d, left // PAIRS))
