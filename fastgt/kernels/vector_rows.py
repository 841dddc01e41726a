"""Vector rows: a gaussian step's row with its draw, in vectors of a generator group's
coordinates, for the algorithms whose rows take it (GT, D-SGD, D², EXTRA, ATC-GT's
phase 0).

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
from numba.extending import intrinsic, overload

from ..config import INLINE_FLAGS
from .lanes import Lanes, element_pointer
from .mixing import FUSED_MAX, emit_mixed, head3, next2, prefetch_ahead
from .rng import PAIRS, emit_runs, fill_padded
from .rounding import F64, stored


def vector_row_typed(arrays, means, i, js, ws, floats, rkey, g, scale, tail):
    """Whether a vector group's operands type (vector_group's typing, which returns None
    otherwise): tuples of float64 C arrays, rows (2-d) and column means (1-d); integer i;
    the row's entries js (integers) and their weights ws (float64, the mean term's beta
    second); the update's floats (float64); the row's key (uint64); integer g; the scale
    (float64); ``tail`` None (a whole group) or two integers (rng.emit_runs: a partial last
    group)."""
    def c_f64(t, ndim):
        return (isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Array)
                and t.dtype.dtype == F64 and t.dtype.layout == "C" and t.dtype.ndim == ndim)

    return (c_f64(arrays, 2) and c_f64(means, 1)
            and isinstance(js, types.UniTuple) and isinstance(js.dtype, types.Integer)
            and isinstance(ws, types.UniTuple) and ws.dtype == F64 and ws.count == js.count + 1
            and isinstance(floats, types.UniTuple) and floats.dtype == F64
            and isinstance(i, types.Integer) and isinstance(g, types.Integer)
            and rkey == types.uint64 and scale == F64
            and (isinstance(tail, types.NoneType)
                 or isinstance(tail, types.UniTuple) and tail.count == 2
                 and isinstance(tail.dtype, types.Integer)))


class VectorRow:
    """A vector group's view of its operands (vector_row_typed's), in its codegen: ``i``
    and ``g`` as int64, the row's entries ``js`` as int64 and its weights ``ws`` in every
    lane of L, ``tail`` None or its two int64s (rng.emit_runs); ``load(n, k)`` and
    ``store(n, k, v)``, the vector at row i, coordinates k.., of array n; ``mixed(n, mean,
    k)``, the row's mix (emit_mixed) of array n's rows js at coordinates k.. (the mean
    term's column means: mean array ``mean``)."""

    def __init__(self, context, builder, sig, args, L):
        self.context, self.builder, self.args, self.L = context, builder, args, L
        ty = sig.args
        self.arrays, self.means = ty[0].dtype, ty[1].dtype
        self.i, self.g = (context.cast(builder, args[n], ty[n], types.int64) for n in (2, 7))
        self.js = [context.cast(builder, j, ty[3].dtype, types.int64)
                   for j in cgutils.unpack_tuple(builder, args[3])]
        self.ws = [L.splat(w) for w in cgutils.unpack_tuple(builder, args[4])]
        self.tail = (None if isinstance(ty[9], types.NoneType) else
                     [context.cast(builder, v, ty[9].dtype, types.int64)
                      for v in cgutils.unpack_tuple(builder, args[9])])

    def _at(self, ty, tup, n, inds):
        return element_pointer(self.context, self.builder, ty,
                               self.builder.extract_value(self.args[tup], n), inds, self.L.fty)

    def load(self, n, k, j=None):
        return self.builder.load(self._at(self.arrays, 0, n, [self.i if j is None else j, k]),
                                 align=8)

    def store(self, n, k, v):
        self.builder.store(v, self._at(self.arrays, 0, n, [self.i, k]), align=8)

    def mixed(self, n, mean, k):
        xs = [self.load(n, k, j) for j in self.js]
        xs.insert(1, self.builder.load(self._at(self.means, 1, mean, [k]), align=8))
        return emit_mixed(self.L, False, None, self.ws, xs)


def vector_group(emit_update):
    """The vector group intrinsic (named as emit_update without ``emit_``, with its
    docstring) of an algorithm whose coordinates k.. of row i a group updates as
    ``emit_update(L, row, k, z, *floats)`` (row: VectorRow; z: the group's normals at
    k.., scaled, the noise row's values there; floats splat in every lane), called as
    ``group(arrays, means, i, js, ws, floats, rkey, g, scale, tail)``: the group's 8
    normal pairs (rng.emit_runs) and each run's update, in one basic block."""

    def typer(typingctx, arrays, means, i, js, ws, floats, rkey, g, scale, tail):
        if not vector_row_typed(arrays, means, i, js, ws, floats, rkey, g, scale, tail):
            return None
        sig = types.void(arrays, means, i, js, ws, floats, rkey, g, scale, tail)

        def codegen(context, builder, sig, args):
            L = Lanes(builder, PAIRS)
            row = VectorRow(context, builder, sig, args, L)
            fl = [L.splat(f) for f in cgutils.unpack_tuple(builder, args[5])]
            emit_runs(L, args[6], row.g, args[8], lambda k, z: emit_update(L, row, k, z, *fl),
                      row.tail)
            return context.get_dummy_value()

        return sig, codegen

    typer.__name__ = typer.__qualname__ = emit_update.__name__.removeprefix("emit_")
    typer.__doc__, typer.__module__ = emit_update.__doc__, emit_update.__module__
    return intrinsic(typer)


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


@njit(**INLINE_FLAGS)
def drawn_or_update(update, group, view, cm, co, node, last, sources):
    """An algorithm's drawn_update whose other rows go as sweep takes them: rows of 3 or
    FUSED_MAX entries by drawn_row (a float64 state), the others drawn (fill_padded, as
    sweep draws them) then by ``update``."""
    i = node.i
    e0 = cm.indptr[i]
    m = cm.indptr[i + 1] - e0
    if (m == 3 or m == FUSED_MAX) and drawn_row(group, view, cm, co, node, e0, m, sources):
        return
    fill_padded(node.key, co.N, node.b, co.scale, co.d)
    update(view, cm, co, node, last)
