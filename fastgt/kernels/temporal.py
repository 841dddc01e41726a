"""Temporal blocking: whether a batch's steps advance several at a time per pass over
memory, in which row blocks, and the order of a pass (kernels/steps.py: run_steps).

A step of a big state streams it from memory and back; a pass of ``levels`` steps reads
and writes it once, each block advanced through the levels while the blocks it reads are
still in cache. That needs every row's neighbours within a few blocks (the matrices'
circular bandwidth: rings, tori and the like, in their natural order) and no mean term
(whose sums need all rows of a step before any row of the next), a schedule of fixed
matrices (a drawn matching is drawn per step) and one phase per step (run_steps). The
rows themselves are computed as step by step: the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS
from ..memory import llc_bytes
from .mixing import n_blocks

#: rows of the shared draws per cell (steps.shared_row; a power of 2), and the most steps
#: a pass advances: its steps' draws are drawn first, and the one before them is kept
SHARED_ROWS = 8
LEVELS_MAX = SHARED_ROWS - 1

#: passes are planned for a state array (one cell's n rows) of at least MIN_BYTES where
#: every row's neighbours are within 1/NARROW of a block's rows (a ring), BAND_BYTES where
#: they are within a block's rows (a torus in whole grid rows), wide_bytes() where they are
#: further (a torus as a grid: the state must be beyond the last-level cache to gain),
#: and SHORT_BYTES for rows shorter than SHORT_ROW bytes (their per-row costs, not memory,
#: bound a step); LEVELS steps a pass, in blocks of about BLOCK_BYTES of a state array's
#: rows (or the bandwidth, if more: for a grid, blocks of GRID_BLOCK_BYTES of a grid row,
#: regions of BLOCK_BYTES). Measured in bench/bench_temporal.py (docs/performance.md):
#: rings at d = 64 to 200 gained 1.00-1.52x from MIN_BYTES = 16 blocks on 1 and 2
#: threads, but lost on 2 threads with gaussian noise below it (fewer blocks than two
#: trapezoids of 2 levels x the reach each: one thread took a pass); tori of 1500 to
#: 4000 nodes in whole grid rows 0.86-1.35x, tori of 10^4 to 10^5 nodes as grids 0.92-1.19x
#: on an Intel Xeon whose last-level cache held them (its 10^6 nodes: 1.55-1.78x) but
#: 1.17-1.57x on an AMD Zen 4 with a 32 MB L3 (26 and 72 MB a state array, noiseless and
#: Setup B, 1 and 2 threads); rings at d = 10 0.92-1.26x up to 13 MB
BLOCK_BYTES = 64 << 10
MIN_BYTES = 16 * BLOCK_BYTES
NARROW = 8
BAND_BYTES = 8 << 20
WIDE_BYTES = 128 << 20
SHORT_BYTES = 32 << 20
SHORT_ROW = 512
LEVELS = 4
GRID_BLOCK_BYTES = 8 << 10
def wide_bytes() -> int:
    """The least state array a torus taken as a grid goes in passes from: half the
    last-level cache where that is less than WIDE_BYTES (a cell's 3-5 arrays are then
    beyond it), but not under BAND_BYTES; WIDE_BYTES where the cache is not known."""
    llc = llc_bytes()
    return WIDE_BYTES if not llc else min(WIDE_BYTES, max(BAND_BYTES, llc // 2))


@njit(**INLINE_FLAGS)
def segment(blocks, c, tb, s, p, a0, a1, width, cur, left, state, mix, oracle):
    """Level s of a pass after step tb, i.e. step tb + s, of cell c on the blocks a0 to
    a1 - 1 (modulo ``width``) of block row p (modulo the rows): one or two ranges of
    consecutive blocks. ``cur``: the buffer that holds step tb; ``left``: the steps left
    in the call from tb (its last step writes what the metrics read)."""
    if a1 <= a0:
        return
    base = (p % (state.scratch.shape[1] // width)) * width
    lo = a0 % width
    hi = lo + a1 - a0
    bc = cur if s % 2 == 1 else 1 - cur
    blocks(c, tb + s, 0, bc, base + lo, base + min(hi, width), s == left, state, mix, oracle)
    if hi > width:  # wraps around the row
        blocks(c, tb + s, 0, bc, base, base + hi - width, s == left, state, mix, oracle)


@njit(**INLINE_FLAGS)
def tile(blocks, c, tiling, phase, rb, RB, ra, tb, L, cur, left, state, mix, oracle):
    """Work item (rb, ra) of one phase of a pass of L levels (docs in run_steps). The
    blocks form a grid of ``width`` blocks a row (tiling: levels, width, reach across rows
    hB, reach along a row hA, regions along a row RA); the rows split into RB regions,
    each row into RA. Phase 0 takes the trapezoid of both: level s on rows [B0 + (s - 1)
    hB, B1 - (s - 1) hB) and, in each, blocks [A0 + (s - 1) hA, A1 - (s - 1) hA); phases 1
    (rows), 2 (blocks along the rows) and 3 (both) the triangles at region boundaries B0
    and A0: level s on [B0 - (s - 1) hB, B0 + (s - 1) hB), and alike for A. A trapezoid's
    rows go in diagonals p + (s - 1) hB, each level s row right after the level s - 1 rows
    it reads, while they are in cache."""
    width, hB, hA, RA = tiling[1], tiling[2], tiling[3], tiling[4]
    rows = state.scratch.shape[1] // width
    B0, B1 = rb * rows // RB, (rb + 1) * rows // RB
    A0, A1 = ra * width // RA, (ra + 1) * width // RA
    sa = 1 if phase < 2 else -1  # the blocks along a row: trapezoid, or triangle at A0
    if phase >= 2:
        A1 = A0
    if phase % 2 == 0:
        for k in range(B0, B1 + (L - 1) * hB):
            for s in range(1, L + 1):
                p = k - (s - 1) * hB
                if B0 + (s - 1) * hB <= p < B1 - (s - 1) * hB:
                    g = sa * (s - 1) * hA
                    segment(blocks, c, tb, s, p, A0 + g, A1 - g, width, cur, left, state,
                            mix, oracle)
    else:
        for s in range(2, L + 1):
            for p in range(B0 - (s - 1) * hB, B0 + (s - 1) * hB):
                g = sa * (s - 1) * hA
                segment(blocks, c, tb, s, p, A0 + g, A1 - g, width, cur, left, state, mix,
                        oracle)


@dataclass(frozen=True)
class Plan:
    """How a batch's steps run (kernels/steps.py: run_steps). levels: steps per pass (1:
    step by step); blocks: the row blocks of a cell's steps (n_blocks(n) step by step), in
    rows of ``width`` blocks (1 for a ring; a torus's grid row in blocks of a few nodes);
    reach: how many block rows away a row's neighbours may be, ``across`` how many blocks
    along a block row; ``regions``: how many regions each block row splits into."""

    levels: int
    blocks: int
    width: int = 1
    reach: int = 1
    across: int = 0
    regions: int = 1

    @property
    def tiling(self) -> tuple:
        """What run_steps takes: (levels, width, reach, across, regions)."""
        return (self.levels, self.width, self.reach, self.across, self.regions)


@njit(**SCALAR_FLAGS)
def _circular(delta, period):
    delta = abs(delta) % period
    return min(delta, period - delta)


@njit(**NJIT_FLAGS)
def distances(indptr, indices, n, cols):
    """Over the entries (i, j) of a CSR matrix: the largest circular distance between i
    and j modulo n and, with ``cols`` > 0, for rows i = r cols + c of a grid, the largest
    circular distances of their grid rows and of their columns (one pass: every entry
    counts: a 10^6-node torus's plan takes 0.09 s, where numpy's passes took 0.5 s)."""
    rows = n // cols if cols > 0 else 1
    bw = dr = dc = 0
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            bw = max(bw, _circular(j - i, n))
            if cols > 0:
                dr = max(dr, _circular(j // cols - i // cols, rows))
                dc = max(dc, _circular(j % cols - i % cols, cols))
    return bw, dr, dc


def farthest(mix, n: int, cols: int = 0) -> tuple[int, int, int]:
    """distances' maxima over every matrix of the schedule."""
    found = [distances(mix.indptr[p], mix.indices[p], n, cols)
             for p in range(mix.indptr.shape[0])]
    return tuple(int(max(f[k] for f in found)) for k in range(3))


def bandwidth(mix, n: int) -> int:
    """The largest circular distance between a row i and a row j it mixes, over every
    matrix of the schedule."""
    return farthest(mix, n)[0]


def reach(n: int, blocks: int, bw: int) -> int:
    """How many blocks away (either way, modulo ``blocks``) the rows within ``bw`` of a
    block's rows may be, for kernels.mixing.block_range's blocks: all ``size`` rows but
    the last, ``last`` rows (1 to size), which may be among the blocks a row reaches."""
    size = -(-n // blocks)
    last = n - (blocks - 1) * size
    return max(1, -(-bw // size), 1 + -(-max(0, bw - last) // size))


def grid(mix, n: int, cols: int, levels: int, nodes: int, region: int) -> Plan | None:
    """A plan for rows i = r cols + c of a periodic grid (a torus), if every row's
    neighbours are within one grid row (circularly) and a few columns: blocks of ``w``
    columns, w the largest divisor of cols up to ``nodes`` (and at least half of it),
    rows split into regions of about ``region`` nodes and at least 2 levels blocks'
    reach. None if not such a grid."""
    if cols < 2 or n % cols or n // cols < 2 * levels:
        return None
    _, dr, dc = farthest(mix, n, cols)
    w = max(v for v in range(1, min(cols, max(1, nodes)) + 1) if cols % v == 0)
    width, across = cols // w, -(-dc // w)
    if dr > 1 or across > 1 or width < 2 * levels * across or 2 * w < nodes:
        return None  # not a grid, too narrow, or blocks far smaller than asked (a prime
        # cols: blocks of single nodes would make a scratch row per node)
    regions = max(1, min(cols // max(1, region), width // max(1, 2 * levels * across)))
    return Plan(levels, n // w, width, dr, across, regions)


def least_bytes(row_bytes: int, bw: int, rows: int) -> int:
    """The smallest state array that passes of blocks of ``rows`` rows pay for, rows of
    ``row_bytes`` bytes whose neighbours are up to ``bw`` rows away (thresholds above)."""
    if bw > rows:
        return wide_bytes()
    if row_bytes < SHORT_ROW:
        return SHORT_BYTES
    return MIN_BYTES if bw * NARROW <= rows else BAND_BYTES


def plan(mix, n: int, row_bytes: int, temporal=None) -> Plan:
    """The batch's Plan. ``temporal``: None to decide (by a state array's bytes per cell:
    least_bytes), False for step by step, or (levels, rows[, nodes]) for passes of ``levels``
    steps in blocks of ``rows`` rows or, where a row's neighbours are further apart and
    the matrices are a grid's, in blocks of up to ``nodes`` nodes of a grid row, regions of
    about ``rows`` nodes (tests, benchmarks); where the schedule allows it at all."""
    off = Plan(1, int(n_blocks(n)))
    # nor chain order (Mixing.chain), whose blocks are rows spread over the whole state
    if temporal is False or mix.mean.any() or mix.drawn >= 0 or mix.chain[:, 0].any():
        return off
    auto, size = temporal is None, n * row_bytes
    if auto:
        temporal = (LEVELS, max(1, BLOCK_BYTES // row_bytes),
                    max(1, GRID_BLOCK_BYTES // row_bytes))
        if size < least_bytes(row_bytes, 0, temporal[1]):  # the least for any bandwidth,
            return off  # before the bandwidth's pass over the matrices
    levels, rows, *nodes = temporal
    if not 2 <= levels <= LEVELS_MAX:
        raise ValueError(f"temporal levels must be 2 to {LEVELS_MAX}, not {levels}")
    bw = bandwidth(mix, n)
    if auto and size < least_bytes(row_bytes, bw, rows):
        return off
    if nodes and bw > rows:
        found = grid(mix, n, bw, levels, nodes[0], rows)
        if found:
            return found
    blocks = max(1, n // max(rows, bw, 1))
    while -(-n // -(-n // blocks)) != blocks:  # as many blocks as block_range fills
        blocks = -(-n // -(-n // blocks))
    h = reach(n, blocks, bw)
    if blocks < 2 * levels * h:
        return off
    return Plan(levels, blocks, reach=h)
