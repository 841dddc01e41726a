"""What an algorithm spec is, and the batch of cells its kernels advance together."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import FastGTError, FastGTWarning, bad, caller_level
from ..kernels.mixing import n_blocks, pad_rows
from ..kernels.oracles import GAUSSIAN, normal_matrix, stochastic_grads
from ..kernels.rng import STREAM_X0
from ..kernels.steps import Mixing, Oracle, State, blocks_pointer, run_steps, shared_row
from ..kernels.temporal import SHARED_ROWS, Plan, plan
from ..memory import check_memory

#: bytes of a cache line (and of an AVX-512 vector); LANES doubles; bytes of a page
LINE = 64
LANES = LINE // 8
PAGE = 4096
#: rows within which a matrix's neighbours count as near, and distinct offsets per
#: entry of its longest row past which it is no stencil (ahead); rows a scattered
#: matrix's neighbours are prefetched ahead, at most, and lines in flight at most
NEAR, STENCIL, AHEAD_MAX, PREFETCH_LINES = 16, 2, 4, 64
#: a step whose rows mix one row o rows on goes in chain order (algorithms.base.chain) when
#: o rows span CHAIN_BYTES or more
CHAIN_BYTES = 768 << 10
#: rows whose entries decide whether a matrix is a stencil (ahead)
SAMPLE = 4096


def least_state(n: int, d: int, dtype) -> int:
    """The fewest bytes any algorithm's state takes: its mixed array, double-buffered, of n
    rows of d values padded to whole lines."""
    item = np.dtype(dtype).itemsize
    lanes = LINE // item
    return 2 * n * (-(-d // lanes) * lanes) * item


def aligned(shape, at: int = 0, dtype=np.float64) -> np.ndarray:
    """A zeroed array (float64 unless ``dtype``) whose data starts ``at`` bytes (a multiple
    of LINE) past a page boundary (np.zeros: calloc, so a big one costs no pass of its own).
    numpy's arrays start 16 bytes past a line, so a 64-byte vector load of a row would span
    two lines (measured: steps 3-10% slower, AVX-512); ``at`` staggers arrays (see
    Batch.new_rows)."""
    size, item = int(np.prod(shape)), np.dtype(dtype).itemsize
    buf = np.zeros(size + PAGE // item, dtype=dtype)
    skip = ((at - buf.ctypes.data) % PAGE) // item
    return buf[skip:skip + size].reshape(shape)


def padded(M: np.ndarray, dp: int, dtype=np.float64) -> np.ndarray:
    """M (rows, d) as ``dtype`` with its rows padded with zeros to dp columns, on aligned
    memory (M itself when it is already dp wide and of that type)."""
    if M.shape[1] == dp and M.dtype == dtype:
        return np.ascontiguousarray(M)
    out = aligned((M.shape[0], dp), dtype=dtype)
    out[:, :M.shape[1]] = M
    return out


def gradient_rows(batch, *lead: int, recomputes: bool, at: int = 512) -> np.ndarray:
    """The last gradients G, (C, *lead, rows, dp), for an algorithm that keeps them. With
    ``recomputes`` (its kernels read G(t) through problems.quadratic.previous_row, as GT's,
    D²'s and EXTRA's do), no rows, (C, *lead, 0, dp), where that recomputes g_i(t) from
    x_i(t) and step t's draw instead (diagonal quadratics without gaussian noise: the same
    bits, one array less to stream per step). An algorithm whose kernels index G's rows
    must say False: with no rows they would write outside the array."""
    if not recomputes or batch.oracle.kind == GAUSSIAN or not batch.problem.kernels.diagonal:
        return batch.new_rows(batch.C, *lead, at=at)
    return aligned((batch.C, *lead, 0, batch.dp), dtype=batch.dtype)


def gradients(batch, G: np.ndarray, X: np.ndarray, c: int, t: int):
    """Cell c's G(t) as ``state`` gives it: the kept rows G (one cell's, gradient_rows), or,
    when none are kept, a function recomputing them from X = x(t) (n rows) as the kernel
    has them (engine.Result.state calls it on first access)."""
    if len(G):
        return batch.real(G)

    def recompute():
        out = np.zeros_like(X)
        batch.grads(t, X, out, c)
        return batch.real(out)

    return recompute


def initial_point(out: np.ndarray, x0, seed: int, d: int) -> None:
    """out[:, :d] = x0, or i.i.d. N(0, 1) entries from the run seed's own stream when x0 is
    None (out: zeroed rows padded past d)."""
    if x0 is None:
        normal_matrix(seed, STREAM_X0, out, 1.0, d)
        return
    try:
        x0 = np.asarray(x0, dtype=np.float64)  # rounded to the state's type when stored
    except (TypeError, ValueError):
        raise bad("x0", x0, "an (n, d) array of numbers") from None
    if x0.shape != (out.shape[0], d):
        raise FastGTError(f"x0 has shape {x0.shape}: allowed (n, d) = {(out.shape[0], d)}")
    if not np.all(np.isfinite(x0)):
        raise FastGTError("x0 must be finite")
    out[:, :d] = x0


def schedule(topologies: list, gamma: np.ndarray, local: int, lines: int, wy=None) -> Mixing:
    """The kernels' Mixing of C cells: cell c mixes with the matrices of its topology's
    period in turn (P matrices, one for a static W; the cells' p-th ones share one sparsity
    pattern), communicating every ``local`` steps and with the identity in between
    (kernels/steps.py: mixing_of); a drawn random matching is redrawn by the kernels.
    lines: cache lines of a state row (how far ahead to prefetch: ahead); wy: the tracking
    variable's own static matrix (topology_y), or None."""
    mats = [W.period for W in topologies]
    C, n, P = len(mats), mats[0][0].n, len(mats[0])
    if any(len(m) != P or W.drawn != topologies[0].drawn for m, W in zip(mats, topologies)):
        raise FastGTError("cells of a batch must share the kind of topology and its period")
    if wy is not None:
        mats = [(*m, wy) for m in mats]
    rows = []  # per matrix of the schedule: (indptr, indices, weights (C, e), beta (C,))
    for p in range(len(mats[0])):
        ref = mats[0][p]
        for m in mats[1:]:
            if not (np.array_equal(m[p].indptr, ref.indptr)
                    and np.array_equal(m[p].indices, ref.indices)):
                raise FastGTError("cells of a batch must share the sparsity pattern of W")
        w = np.ascontiguousarray([m[p].weights for m in mats], dtype=np.float64)
        rows.append((*pad_rows(ref.indptr, ref.indices, w.reshape(C, -1)),
                     [m[p].mean_weight for m in mats]))
    ref = mats[0][0]
    rows.append((np.arange(n + 1, dtype=ref.indptr.dtype), np.arange(n, dtype=ref.indices.dtype),
                 np.ones((C, n)), [0.0] * C))  # the identity: local steps
    e = max(len(r[1]) for r in rows)
    indptr = np.stack([r[0] for r in rows])
    indices = np.zeros((len(rows), e), dtype=ref.indices.dtype)
    weights = np.zeros((C, len(rows), e))
    for p, (_, ix, w, _) in enumerate(rows):
        indices[p, :len(ix)] = ix
        weights[:, p, :len(ix)] = w
    beta = np.ascontiguousarray(np.array([r[3] for r in rows], dtype=np.float64).T)
    drawn = topologies[0].drawn
    own = np.zeros((C, 4 * n if drawn else 0), dtype=ref.indices.dtype)
    aheads = np.array([ahead(r[0], r[1], n, lines, drawn and p == 0)
                       for p, r in enumerate(rows)])
    mean = (beta != 0.0).any(axis=1)
    # chain order only without any mean term: its block sums would add rows in another order
    chains = np.array([chain(r[0], r[1], n, lines) if not (mean.any() or drawn and p == 0)
                       else (0, 0, 0) for p, r in enumerate(rows)], dtype=np.int64)
    return Mixing(indptr, indices, weights, beta, mean, gamma, int(local), P,
                  P if wy is not None else -1, 0 if drawn else -1, own, aheads, chains)


def chain(indptr: np.ndarray, indices: np.ndarray, n: int, lines: int) -> tuple:
    """(o, gcd(n, o), n / gcd) when every row i of the matrix mixes row (i + o) mod n only
    (besides itself: the one-peer graph's steps), so that a step takes its rows in chain
    order (kernels/mixing.py: chain_row), else (0, 0, 0); only where it pays (``lines``:
    cache lines of a state row): where min(o, n - o) rows span CHAIN_BYTES or more, in
    row order a partner row is read again o rows later (or was read n - o rows before),
    from memory (L2 holds a few hundred kB of the two arrays a step streams). Temporal
    blocking is then off (kernels/temporal.py: plan). Measured: docs/engine.md (one-peer
    / ring 1.14 -> 1.04 at n = 32768, noiseless D-SGD; far steps 0.77-0.97x the time); a
    step of 512 rows' offset measured slower in chain order (runs of 16 rows at n = 30000:
    up to 1.2x), hence the threshold. Judged on up to SAMPLE rows, as ahead."""
    lengths = np.diff(indptr)
    if n < 2 or lengths.min() < 1 or lengths.max() > 3 or lengths.min() != lengths.max():
        return 0, 0, 0
    rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE)).astype(np.int64))  # a hint only,
    m = int(lengths[0])  # as ahead's: any order of the rows gives the same values
    cols = indices[indptr[rows][:, None] + np.arange(m)]
    offsets = (cols - rows[:, None]) % n
    others = np.unique(offsets[offsets != 0])
    if len(others) != 1:
        return 0, 0, 0
    o = int(others[0])
    if min(o, n - o) * lines * LINE < CHAIN_BYTES:  # a partner just behind is in cache too
        return 0, 0, 0
    g = math.gcd(n, o)
    return o, g, n // g


def ahead(indptr: np.ndarray, indices: np.ndarray, n: int, lines: int, drawn: bool) -> int:
    """How many rows ahead the kernels prefetch a matrix's neighbour rows (kernels/mixing.py:
    prefetch_ahead), 0 for not at all: a drawn matching, or a matrix whose rows mix rows the
    hardware prefetcher cannot guess (some neighbour over NEAR rows away, and no stencil,
    whose rows all mix the same few offsets: rings, tori, the one-peer graph stream
    through memory in order), as far ahead as keeps at most PREFETCH_LINES lines of
    ``lines``-line rows in flight; none when a single row's neighbours exceed that. Judged
    on up to SAMPLE evenly spaced rows (a hint only: no value depends on it; all rows of a
    10^6-node torus took 0.2 s of start-up)."""
    lengths = np.diff(indptr)
    if not drawn:
        rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE)).astype(np.int64))
        m = lengths[rows]
        first = np.repeat(indptr[rows] - (np.cumsum(m) - m), m)  # entry e of the sample
        offsets = (indices[first + np.arange(m.sum())] - np.repeat(rows, m)) % n
        if (not np.any(np.minimum(offsets, n - offsets) > NEAR)
                or len(np.unique(offsets)) <= STENCIL * lengths.max()):
            return 0
    others = 1 if drawn else max(1, int(lengths.max()) - 1)  # a row's neighbour rows
    per_row = others * lines
    return min(AHEAD_MAX, PREFETCH_LINES // per_row)


@dataclass(eq=False)
class Cell:
    """What may differ between the cells of a batch."""

    W: object  # MixingMatrix
    noise: object  # Noise
    gamma: float
    seed: int
    x0: np.ndarray | None = None


class Batch:
    """C cells advanced together: they share n, d, W's sparsity pattern, the problem
    instance and the noise kind; weights, stepsizes, noise scales and seeds may differ.

    Rows are ``dp`` wide: d rounded up to whole cache lines, the padding zero (see
    fastgt/kernels/steps.py); state arrays hold ``rows`` >= n rows (new_rows); ``real``
    gives the n x d values. ``temporal``: how the steps run (kernels/temporal.py: plan),
    None to let the plan decide, False step by step, or a plan's forced parameters (tests
    and benchmarks); the bits are the same."""

    def __init__(self, cells: list[Cell], problem, mixing: Callable | None = None,
                 local_steps: int = 1, topology_y=None, dtype: str = "float64",
                 temporal=None):
        first = cells[0]
        Ws = [mixing(c.W) if mixing else c.W for c in cells]  # what the kernels mix with
        for cell in cells[1:]:
            if cell.noise.kind != first.noise.kind or cell.noise.uv.shape != first.noise.uv.shape:
                raise FastGTError("cells of a batch must share the noise kind")
        # the problem as a state of ``dtype`` reads it (Problem.in_dtype, as fastgt.run has
        # it; a Batch built directly would otherwise put float64 arrays beside a float32
        # state: kernel copies no run uses)
        problem = problem.in_dtype(dtype)
        self.cells, self.problem = cells, problem
        self.pointers: dict = {}  # algorithm name -> its block function's pointer (advance)
        C, n, d = len(cells), first.W.n, problem.d
        self.C, self.n, self.d = C, n, d
        # of the state arrays (new_rows) and of the problem's per-step arrays
        # (Problem.in_dtype), column means and noise rows (a float32 state's normals drawn
        # in float32: kernels/rng.py); weights, block sums and gradient rows stay float64
        self.dtype = np.dtype(dtype)
        item = self.dtype.itemsize
        self.reserved = 0  # the state's bytes so far (new_rows: refused beyond the memory)
        # whole lines of the state's rows (16 floats, 8 doubles): float64 rows of dp (sums,
        # scratch, the problem's arrays) are then whole lines too
        lanes = LINE // item
        self.dp = dp = -(-d // lanes) * lanes
        # rows per state buffer: n and up to 63 zero rows more, so that the two buffers of
        # a pair start half a page apart (the closest to it there is): a row of x(t) and
        # the same row of x(t+1), read and written in one pass, would otherwise share their
        # address bits 11..0 whenever 64 divides n (n = 10^6: a torus step 35% slower, the
        # loads falsely waiting on the stores: 4K aliasing)
        self.rows = n + min(range(LANES * LANES),
                            key=lambda e: abs((n + e) * dp * item % PAGE - PAGE // 2))
        gamma = np.array([c.gamma for c in cells], dtype=np.float64)
        self.mix = schedule(Ws, gamma, local_steps, self.dp * item // LINE, topology_y)
        # the step kernels' row blocks: n_blocks(n), or a temporal plan's (kernels/temporal.py;
        # ``temporal`` as plan takes it), whose blocks then only index scratch rows
        self.plan = plan(self.mix, n, dp * item, temporal)
        nb = self.plan.blocks
        # per-block noise row, padded to whole 16-double groups: the steps draw a partial
        # last group whole there (rng.fill_padded; the values of coordinates < d do not
        # change)
        dpad = -(-d // 16) * 16
        self.scratch = aligned((C, nb, dpad), dtype=self.dtype)
        self.grads_scratch = aligned((C, nb, dp))  # a gradient row per block
        self.part = aligned((C, int(n_blocks(n)), 2, dp))  # per-block column sums
        # column means of the mixed quantities, in the state's type (its mixing's)
        self.means = aligned((C, 2, dp), dtype=self.dtype)
        nz = first.noise
        self.oracle = Oracle(np.array([c.seed for c in cells], dtype=np.int64), nz.kind,
                             np.array([c.noise.scale for c in cells], dtype=np.float64),
                             aligned((SHARED_ROWS * C, dpad), dtype=self.dtype),
                             np.stack([c.noise.uv for c in cells]),
                             nz.dv, d, problem.kernel_data(self.widen))

    def new_rows(self, *lead: int, at: int = 0) -> np.ndarray:
        """A zeroed state array of shape (*lead, rows, dp) starting ``at`` bytes past a
        page: the step kernels read and write rows of several such arrays in one pass, so
        each gets its own quarter or eighth of a page (4K aliasing, as for ``rows``).
        MemoryError, before any is touched, once the state would need more memory than the
        machine has available (such a run grew for a minute, slowing the whole machine,
        before an allocation failed)."""
        self.reserved += math.prod((*lead, self.rows, self.dp)) * self.dtype.itemsize
        check_memory(self.reserved)
        return aligned((*lead, self.rows, self.dp), at, self.dtype)

    def widen(self, M: np.ndarray, dtype=np.float64) -> np.ndarray:
        """M (rows, d) as ``dtype`` with its rows padded with zeros to dp (the problem's
        arrays, as the kernels read them)."""
        return padded(M, self.dp, dtype)

    def used(self, M: np.ndarray) -> np.ndarray:
        """The n real rows of a (rows, dp) state array, padded columns included: a
        C-contiguous view, what the metrics and initialisation kernels take."""
        return M[:self.n]

    def real(self, M: np.ndarray) -> np.ndarray:
        """The n x d values of a (rows, dp) state array (a view)."""
        return M[:self.n, :self.d]

    def grads(self, t: int, X: np.ndarray, G: np.ndarray, c: int) -> None:
        """G = cell c's stochastic gradients of step t at X (n rows, padded columns), the
        bits its step kernels compute (oracles.stochastic_grads for the problem's family;
        xi: the row that holds the cell's shared draw of step t)."""
        o = self.oracle
        r = shared_row.py_func(c, t)
        kernels = self.problem.kernels.compile((stochastic_grads,))
        kernels.stochastic_grads(t, X, G, self.scratch[c], self.grads_scratch[c],
                                 int(o.seed[c]), o.kind,
                                 float(o.scale[c]), o.xi[r:r + 1], o.uv[c:c + 1], o.dv, o.d,
                                 o.data)


#: why a float32 state suits an algorithm with ``drifts`` poorly: its mean obeys
#: xbar(t+1) - xbar(t) = xbar(t) - xbar(t-1) - gamma (gbar(t) - gbar(t-1)) + r(t), r the
#: step's rounding of the stored mean; the roundings add up in the velocity, which the
#: gradient term must cancel: a gradient bias of their sum over gamma, growing with the run
DRIFT = ("{name} with dtype float32: its mean's second-order recursion sums the state's "
         "roundings into a gradient bias that grows with the run and with 1/stepsize (a "
         "noiseless torus at stepsize 1e-3: loss 1e-2 where float64 reaches 1e-11); check "
         "its results against a float64 run")


def warn_drift(algo, dtype: str) -> None:
    """DRIFT as a FastGTWarning at the user's line, if a run of ``algo`` with a state of
    ``dtype`` gives cause (one that ``drifts``, in float32): fastgt.run before any work,
    a sweep's driver once per algorithm."""
    if dtype != "float64" and algo.drifts:
        warnings.warn(DRIFT.format(name=algo.name), FastGTWarning, stacklevel=caller_level())


@dataclass(frozen=True)
class Costs:
    """What one step costs per node: mixes (matrix-vector products with W), gradient
    evaluations, communication rounds (exchanges with the neighbours, whatever their size)."""

    mixes: int
    grad_evals: int
    comm_rounds: int


@dataclass(frozen=True)
class Algorithm:
    """An algorithm spec (the optax pattern): how to set up state and advance it.

    - ``templates``: its block function first, ``blocks(c, t, ph, cur, b0, b1, last,
      state, mix, oracle)`` (a call of the generic loop kernels.steps.sweep with its row
      update; ph: the phase of the step, 0 unless it has several),
      then every other template it calls (kernels/specialize.py: compiled per problem
      family, with the family's hooks bound)
    - ``mixed``: how many of its arrays are mixed (S1, then S2: the mean term's sums)
    - ``costs``: what one step costs (Costs)
    - ``alloc(batch) -> (S1, S2, S3)``: the state arrays of all cells, zeroed
      (Batch.new_rows); what each holds is said in the algorithm's module docstring
    - ``init(batch)``: the same arrays at t = 0 (initial gradients drawn)
    - ``iterates(batch, arrays, cur, c) -> (X, Y or None)``: what the metrics read for
      cell c (n rows, padded columns)
    - ``state(batch, arrays, cur, c, t) -> dict``: cell c's final arrays at step t, or
      functions computing them on first access (runner.LazyState)
    - ``mixing(W) -> W'``: the matrix it mixes with, given a cell's topology (centralized:
      the exact average), or None: the cell's own
    - ``phases``: passes over the rows per step, each a call of ``blocks`` followed by the
      mean-term reduction of its ``mixed`` arrays (1, or 2 for ATC-GT)
    - ``topology_y``: whether it takes a second matrix for its tracking variable (the row
      update then reads CellMix's y fields, ``ysep`` True)
    - ``drifts``: its mean obeys a second-order recursion (D², EXTRA), so that a float32
      state's roundings pile up in it (``DRIFT``: fastgt warns on every float32 run)
    - ``temporal``: its steps may run in passes of temporal blocking (kernels/temporal.py;
      with one phase): its update reads, of the step before, only node i's rows and the
      rows its matrices' rows mix (docs/extending.md); False keeps it step by step
    - ``check(W, local_steps) -> str | None``: why W is outside its stability condition and
      the remedies (d2, extra), refused unless the run allows it (allow_unstable), or None
    The update equation is in the module docstring of each algorithm.
    """

    name: str
    templates: tuple
    mixed: int
    costs: Costs
    alloc: Callable
    init: Callable
    iterates: Callable
    state: Callable
    doc: str
    mixing: Callable | None = None
    check: Callable | None = None
    phases: int = 1
    topology_y: bool = False
    drifts: bool = False
    temporal: bool = True

    def __post_init__(self):
        if self.mixed not in (1, 2):  # the mean term keeps sums for S1 and S2 (Batch.part)
            raise ValueError(f"algorithm {self.name}: mixed must be 1 or 2, not {self.mixed}")

    def refusal(self, W, local_steps: int = 1) -> str | None:
        """The one-line error of a run on W (with local_steps) outside the algorithm's
        stability condition (the same from fastgt.run and from grid files), or None."""
        reason = self.check(W, local_steps) if self.check else None
        return reason and f"{reason}, or allow_unstable=True to run it anyway"

    @property
    def passes(self):
        """What a batch of this algorithm takes as ``temporal``: None (passes where the plan
        finds them), or False (step by step; no blocks of a plan for nothing)."""
        return None if self.temporal and self.phases == 1 else False

    def plan_of(self, batch: Batch) -> Plan:
        """How its steps run on ``batch``: the batch's plan, or step by step (passes False)."""
        return Plan(1, batch.plan.blocks) if self.passes is False else batch.plan

    def blocks_for(self, kernels):
        """The block function compiled for a problem family (its ProblemKernels)."""
        return getattr(kernels.compile(self.templates), self.templates[0].__name__)

    def advance(self, batch: Batch, arrays: tuple, cur: int, t0: int, steps: int,
                by_cells: bool, writes: bool = True) -> int:
        """Steps t0 -> t0 + steps of every cell of the batch; returns the new ``cur``.

        by_cells: one thread per cell (no per-step barrier) instead of parallel row blocks
        within each step; both give identical bits. writes: the state after the last step
        is read (a record; False: a later call goes on from it, kernels/steps.run_steps)."""
        state = State(*arrays, batch.scratch, batch.grads_scratch, batch.part, batch.means)
        runs = 1 if by_cells else numba.get_num_threads()
        blocks = batch.pointers.get(self.name)
        if blocks is None:  # the types are the batch's: found once (numba.typeof is slow)
            compiled = self.blocks_for(batch.problem.kernels)
            blocks = batch.pointers[self.name] = blocks_pointer(compiled, state, batch.mix,
                                                                batch.oracle)
        run = batch.problem.kernels.compile((run_steps,)).run_steps
        tiling = self.plan_of(batch).tiling  # step by step, or the batch's passes
        return run(blocks, self.mixed, self.phases, t0, steps, cur, state, batch.mix,
                   batch.oracle, batch.oracle.data, runs, tiling, writes)
