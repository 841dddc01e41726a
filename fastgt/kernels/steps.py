"""The generic time loop over a batch of C cells, in place: threads, cells and steps
(``run_steps``), row blocks, counter-RNG noise rows and block sums (``sweep``), the
shared draws and the rank-one mean term. An algorithm brings its per-row update and its
per-cell views (docs/extending.md's worked example: D²); ``sweep`` inlines the update
into the algorithm's block function, which ``run_steps`` calls by pointer.

A batch is C independent runs that share n, d, the sparsity pattern of W and the problem;
they may differ in weights (alpha, self weight), stepsize, noise scale and seed. A single
run is C = 1. Arrays travel in three namedtuples, built in one place (algorithms.base.Batch)
and read by field name:

    state  = State(S1, S2, S3, scratch, grads, part, means)
             S1, S2: (C, 2, r, d) double-buffered arrays (or (C, 1, r, d): one buffer), S3:
             (C, r, d) or (C, 0, d); what each holds is said in the algorithm's module
             docstring (D-SGD leaves S2 unused). r >= n rows (the rows past n, zero, only
             space the buffers: Batch.rows)
             scratch (C, nb, >= 16 ceil(d / 16) of the oracle's d): a noise row per
             block, whole generator groups (rng.fill_padded writes them); grads
             (C, nb, d): a gradient row per block (an update that calls grad_row writes
             there, Node.b); part
             (C, nb, 2, d) and means (C, 2, d): block column sums and column means of the
             mixed arrays (d here is the padded row width, Batch.dp; the oracle's d is the
             problem's)
    mix    = Mixing(indptr (Q, n + 1), indices (Q, e), weights (C, Q, e), beta (C, Q),
                    mean (C,), gamma (C,), local, period, ymat, drawn, own (C, 4 n | 0),
                    ahead (Q,))
             the cells' mixing schedule of Q matrices: ``period`` P matrices of one
             sparsity pattern each (one for a static topology, a period of a time-varying
             one), then the tracking variable's own matrix (topology_y: its index ``ymat``,
             else -1) and, last, the identity: step t communicates when local divides t,
             with matrix ((t / local) - 1) mod P (mixing_of), and mixes with the identity
             otherwise (local steps); mean[c]: whether any of cell c's matrices has a mean
             term (its sums are kept every step);
             drawn: the matrix of the schedule (or -1) that is a random matching drawn anew
             every step (kernels/matching.py): its rows are 3 entries (self, partner, the
             partner again with weight 0), their columns drawn at the start of the step
             into the cell's own indices ``own[c, :3 n]`` (own[c, 3 n:]: the shuffle's
             workspace); ahead[q] > 0: matrix q's neighbour rows are prefetched that
             many rows ahead (a drawn matching, a scattered graph: algorithms.base.ahead);
             chain[q] = (o, g, L) with o > 0: matrix q's rows i mix row (i + o) mod n only,
             and a step with it takes its rows in chain order (mixing.chain_row), else
             (0, 0, 0), in row order (algorithms.base.chain)
    oracle = Oracle(seed (C,), kind, scale (C,), xi, uv (C, 2, m), dv, d, data)
             xi (SHARED_ROWS C, >= d): the shared draws of each cell's last SHARED_ROWS
             steps (shared_row: a pass of temporal blocking draws all its steps' first);
             data: the problem's arrays (its family's namedtuple, kernels/oracles.py)

Rows are d coordinates padded with zeros to a whole number of cache lines (state, sums,
and the problem's A and B alike): every row then starts on a line and every loop over a
row runs whole vectors. Noise is drawn for the d coordinates only (a noise row's
coordinates past d are written as zeros), so the padding stays exactly zero and changes
no value of the others.

Buffers come in pairs, ``[:, cur]`` current and ``[:, 1 - cur]`` next; ``run_steps``
returns the new ``cur``. One step of one cell is: the shared draw, then every row block
(noise, the algorithm's row update, block column sums), then the mean-term reduction.
An algorithm's templates are compiled per problem family, with the family's gradient
hooks bound (kernels/specialize.py).
``run_steps`` orders this work by cells or by row blocks; both orders give identical bits.
"""

from collections import namedtuple

from numba import njit, prange, typeof, types

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS
from .matching import draw_matching, matching_key
from .mixing import ROW0, add_row, block_range, chain_row, reduce_blocks, zero_rows
from .oracles import GAUSSIAN, STRUCTURED, CellOracle, Node, draw_shared
from .pointers import pointer
from .rng import STREAM_NOISE, fill_padded, row_key, step_key, stream_key
from .specialize import template
from .temporal import SHARED_ROWS, tile

#: the kernels' bundles (fields: module docstring)
State = namedtuple("State", "S1 S2 S3 scratch grads part means", module=__name__)
Mixing = namedtuple("Mixing", "indptr indices weights beta mean gamma local period ymat drawn "
                    "own ahead chain", module=__name__)
Oracle = namedtuple("Oracle", "seed kind scale xi uv dv d data", module=__name__)
#: cell c's mixing, as a row update reads it: W's CSR pattern, the cell's weights (nnz,),
#: mean weight and stepsize, the column means (dp,) of the first and second mixed arrays;
#: then the same of the tracking variable's matrix (topology_y: ``ysep`` True) or of W again;
#: how many rows ahead mix_row prefetches each one's neighbour rows (Mixing.ahead)
CellMix = namedtuple("CellMix",
                     "indptr indices w beta gamma m0 m1 yindptr yindices yw ybeta ysep ahead yahead",
                     module=__name__)


@njit(**SCALAR_FLAGS)
def cell_key(seed, t):
    return step_key(stream_key(seed, STREAM_NOISE), t)


@njit(**SCALAR_FLAGS)
def shared_row(c, t):
    """Row of xi holding cell c's shared draw of step t: SHARED_ROWS rows per cell, by t
    modulo SHARED_ROWS, so that the previous step's draw is kept (GT recomputes its
    previous gradient from it), and so are the draws of a temporal pass's LEVELS_MAX steps."""
    return SHARED_ROWS * c + (t & (SHARED_ROWS - 1))


@njit(**INLINE_FLAGS)
def step_begin(c, t, oracle, mix):
    """The step's shared draws of cell c, before any row: Setup B's xi, and a drawn
    matching when the step mixes with one (kernels/matching.py)."""
    draw_shared(oracle.kind, cell_key(oracle.seed[c], t), oracle.xi, shared_row(c, t),
                oracle.scale[c], oracle.d)
    if mixing_of(mix, t) == mix.drawn:
        n = mix.indptr.shape[1] - 1
        own = mix.own[c]
        draw_matching(matching_key(oracle.seed[c], t), own[3 * n:], own, n)


@njit(**SCALAR_FLAGS)
def mixing_of(mix, t):
    """The matrix of step t (the step that makes iterate t, t >= 1) in mix's schedule."""
    if t % mix.local != 0:
        return mix.indptr.shape[0] - 1  # the last one is the identity
    return (t // mix.local - 1) % mix.period


@njit(**SCALAR_FLAGS)  # loops, but one call site per algorithm, and a function argument (row)
def sweep(row, view, c, t, b0, b1, last, state, mix, oracle, draw=True):
    """Step t of cell c on row blocks [b0, b1), the loop every algorithm shares: per row i,
    node i's noise (gaussian noise drawn now, unless ``draw`` is False: an update that draws
    its own, kernels/vector_rows.py), then the algorithm's update of row i,
    ``row(view, cm, co, node, last)``, then, with a mean term, row i of each of
    ``view.mixed`` (the next buffers of its mixed arrays) added to the block's column sums.

    ``view``: the algorithm's views of cell c (it names its arrays); ``cm``: CellMix;
    ``co``: oracles.CellOracle, ``node``: oracles.Node (node i's noise, key and block:
    the problem's grad_row takes both); ``last``: the last step before a record (what
    the metrics read must then be written: run_steps' ``writes``); ``draw``: False in a
    phase that evaluates no gradient, or for a row update that draws its row's gaussian
    noise itself (the vector rows' algorithms', from co.scale and node.key). ``row`` is
    inlined: one loop, as if written in place. An algorithm's block function calling this
    is compiled with BLOCK_FLAGS (config.py: no reference counting)."""
    n = mix.indptr.shape[1] - 1  # the state may have more (zero) rows: Batch.rows
    nb = state.scratch.shape[1]
    pc = state.part[c]
    kind, uv, sc, d = oracle.kind, oracle.uv, oracle.scale[c], oracle.d
    structured = kind == STRUCTURED
    p = mixing_of(mix, t)
    ysep = mix.ymat >= 0
    py = mix.ymat if ysep and p < mix.period else p
    own = mix.own[c]
    cm = CellMix(mix.indptr[p], own if p == mix.drawn else mix.indices[p],
                 mix.weights[c, p], mix.beta[c, p], mix.gamma[c], state.means[c, 0],
                 state.means[c, 1], mix.indptr[py], own if py == mix.drawn else mix.indices[py],
                 mix.weights[c, py], mix.beta[c, py], ysep, mix.ahead[p], mix.ahead[py])
    sums = mix.mean[c]  # the next step's mean term may need them
    co = CellOracle(kind, oracle.xi if structured else state.scratch[c], shared_row(c, t - 1),
                    oracle.dv, d, oracle.data, sc)
    tkey = cell_key(oracle.seed[c], t)
    rs = shared_row(c, t)
    nm = len(view.mixed)
    v = u = 1.0 if kind == GAUSSIAN else 0.0
    o, g, L = mix.chain[p, 0], mix.chain[p, 1], mix.chain[p, 2]
    for b in range(b0, b1):
        lo, hi = block_range(b, nb, n)
        rn = rs if structured else b
        if sums:
            zero_rows(pc, b, ROW0, nm)
        q = lo  # positions, in runs of consecutive rows: the block in row order, or chain order
        while q < hi:
            i0, run = (q, hi - q) if o == 0 else chain_row(q, n, o, g, L)
            run = min(run, hi - q)
            for i in range(i0, i0 + run):
                if structured:
                    v, u = uv[c, 0, i], uv[c, 1, i]
                key = row_key(tkey, i)
                if draw and kind == GAUSSIAN:
                    fill_padded(key, co.N, b, sc, d)
                row(view, cm, co, Node(i, b, rn, v, u, key, tkey), last)
                if sums:
                    for a in range(nm):
                        add_row(pc, b, a, view.mixed[a], i)
            q += run


@njit(**NJIT_FLAGS)
def step_end(c, mixed, state, mix):
    """Mean term of the next step: block sums of the ``mixed`` arrays reduced in block order."""
    if mix.mean[c]:
        n = mix.indptr.shape[1] - 1
        for q in range(mixed):
            reduce_blocks(state.part[c], q, state.means[c, q], n)


def blocks_pointer(blocks, state, mix, oracle):
    """An algorithm's block function ``blocks(c, t, ph, cur, b0, b1, last, state, mix,
    oracle)`` (a call of ``sweep`` with its views of cell c) for these bundles' types, as
    the first-class function run_steps calls (kernels/pointers.py: the driver is compiled
    once for every algorithm, without the algorithm's code linked into it)."""
    i64 = types.int64
    return pointer(blocks, (i64, i64, i64, i64, i64, i64, types.boolean, typeof(state),
                            typeof(mix), typeof(oracle)))


@template(parallel=True, **NJIT_FLAGS)
def run_steps(blocks, mixed, phases, t0, steps, cur, state, mix, oracle, data, runs, tiling,
              writes):
    """Steps t0 -> t0 + steps of every cell, in place; returns the new ``cur``. ``blocks``:
    the algorithm's block function (blocks_pointer), ``writes``: whether the call's last
    step is read (a record: it is the ``last`` of the block functions, which write what the
    metrics read, D-SGD's X; a call ending between records leaves that to a later one),
    ``mixed``: its count of mixed arrays,
    ``phases``: its passes over the rows per step (ATC-GT mixes Y after every node's new
    gradient: 2; each phase is followed by its mean-term reduction), ``data``: oracle.data.

    Work items, processed in parallel, are (cell, run of consecutive row blocks) pairs,
    ``runs`` per cell (capped at the block count):

    - runs == 1: an item is a whole cell, advanced through all the steps by one thread:
      no per-step barrier (batches of small cells; any run on one thread);
    - runs > 1: one parallel pass per step and phase, with the shared draws before the
      first and the mean-term reductions after each (big runs on several threads).

    ``tiling`` = (levels, width, hB, hA, RA) with levels > 1: temporal blocking
    (kernels/temporal.py plans it: no mean term, one phase, no drawn matching). A pass
    advances ``levels`` steps over memory once. The blocks form a grid of rows of
    ``width`` blocks (a ring: rows of one block; a torus: its grid rows, in blocks of a
    few columns), periodic both ways, every row's neighbours within hB block rows and hA
    blocks along a row. Rows split into up to ``runs`` regions (when RA is 1), each row
    into RA regions: each region pair is advanced as a trapezoid (its levels shrinking by
    the reaches on every side), in parallel, then the triangles the trapezoids leave at the
    regions' boundaries (across rows, along rows, both), each in parallel (runs == 1: one
    thread takes a cell's region pairs in turn, phase by phase). A block of level
    s is computed once the blocks it reads at level s - 1 are, and overwrites level s - 2,
    which only those read: the same bits as step by step, in two buffers.

    One parallel loop for all of it (not one driver each): each parallel driver costs
    seconds of compile. A template (kernels/specialize.py), compiled once per problem
    family for every algorithm: its types include the family's data, and a family's types
    must only appear in its own cache files (numba unpickles a cache index whole: a type
    whose module cannot be imported, a test's or a user's problem, would break every other
    run).
    """
    C = state.S3.shape[0]
    nb = state.scratch.shape[1]
    # the parallel loop's body takes the oracle's fields one by one and bundles them again:
    # numba's parallel loops unpack a tuple argument one level only (oracle.data is a tuple
    # within it), and rebuild a tuple only from an argument of the function (``data``)
    seed, kind, scale, xi, uv, dv, d, _ = oracle
    levels, hA, RA = tiling[0], tiling[3], tiling[4]
    temporal = levels > 1
    final = steps - 1 if writes else -1  # the step (from 0) whose blocks get last
    RB = tiles = 1
    if temporal:  # region pairs of a cell (runs == 1: all in one item, in turn), its
        # steps per pass, parallel passes per pass
        RB = 1 if RA > 1 else max(1, min(runs, nb // tiling[1] // (2 * levels
                                                                   * max(1, tiling[2]))))
        runs = 1 if runs == 1 else RB * RA
        per = nb
        span = levels
        tiles = 2 if hA == 0 else 4  # the trapezoids' phase and the triangles' (above)
        passes = 1 if runs == 1 else tiles
    else:
        per = -(-nb // max(1, min(nb, runs)))  # blocks per run
        runs = -(-nb // per)
        span = max(1, steps) if runs == 1 else 1  # steps per parallel pass
        passes = 1 if runs == 1 else phases  # parallel passes per step (runs == 1: all in one)
    for s0 in range(0, steps, span):
        L = min(span, steps - s0)
        for p0 in range(passes):
            if p0 == 0 and (temporal or runs > 1):
                for c in range(C):
                    for s in range(1, (L if temporal else 1) + 1):
                        step_begin(c, t0 + s0 + s, oracle, mix)
            for w in prange(C * runs):
                c = w // runs
                r = w - c * runs
                oc = Oracle(seed, kind, scale, xi, uv, dv, d, data)
                if temporal:  # one phase of a region pair, or all of them in turn
                    ra0 = 0 if runs == 1 else r - r // RA * RA
                    for tp in range(p0, p0 + tiles - passes + 1):
                        for ra in range(ra0, RA if runs == 1 else ra0 + 1):
                            tile(blocks, c, tiling, tp, r // RA, RB, ra, t0 + s0, L, cur,
                                 final + 1 - s0, state, mix, oc)
                else:
                    b0 = r * per
                    cc = cur
                    for s in range(s0, s0 + L):
                        t = t0 + s + 1
                        if runs == 1:
                            step_begin(c, t, oc, mix)
                        for ph in range(p0, p0 + phases - passes + 1):
                            blocks(c, t, ph, cc, b0, min(nb, b0 + per), s == final, state,
                                   mix, oc)
                            if runs == 1:
                                step_end(c, mixed, state, mix)
                        cc = 1 - cc
            if runs > 1 and not temporal:
                for c in range(C):
                    step_end(c, mixed, state, mix)
        cur = cur if L % 2 == 0 else 1 - cur
    return cur
