"""The tasks of a sweep: which cells a worker runs together, bounded by estimated run time,
and how many may run at once on one machine's memory (check_memory_at_once).

Cells of equal ``batch_key`` can advance together in one compiled loop (fastgt.run_batch:
about 1.9x the throughput of one by one on small cells, bench/bench_batch.py), but a task's
results reach the disk only when the whole task ends: 16 large cells in one task kept a
sweep from writing anything for over a minute, and a kill lost all of them. So a task
takes at most ``max_batch`` cells, at most its share of the group (so that every worker
gets some), at most ``seconds`` of estimated run time and at most BATCH_ELEMENTS
node-dimensions together, but always one cell.

A cell's estimate (:func:`estimate`): its loop, ``steps x (STEP_S + n (ROW_S + d
ELEM_S))`` on one thread (ELEM_S: MIX_S per mix of the algorithm's step plus NOISE_S by
noise; divided by the threads), plus CELL_S for the rest. The :class:`Planner` calibrates it with the wall times
of the finished tasks of the sweep: estimates are scaled by measured / estimated seconds of
the latest finished task of the cell's own group, or of any group before one of its own
has finished. The latest, not a running total: a worker's first task also pays its
start-up (imports, loading the compiled kernels: 3x the estimate of 0.2 s cells, measured),
and the load of a shared machine changes.
"""

from __future__ import annotations

import json
import math
from collections import deque

from ..errors import FastGTError
from ..flat import cell_graph, flat_nodes
from ..params import IMPLICIT
from .cellrun import batch_key

#: default for the most cells in one task (64: a task's fixed costs, claims, the round trip
#: to the worker, set up, amortized over its cells; 16 cost ~0.2 ms more per tiny cell)
MAX_BATCH = 64
#: most node-dimensions n d of a task's cells together (its state arrays hold this many
#: numbers each: 16 MB in float64). Batching pays where a cell's step is short beside the
#: fixed cost of a step, or of a thread barrier (small cells); big cells gain nothing from
#: it, and together they outgrow the caches and the memory (64 cells of n = 5 10^4 held
#: 1.7 GB and ran slower than one cell a task, measured by a user trial)
BATCH_ELEMENTS = 2_000_000
#: default for the most seconds finished cells wait in the driver before they are written
#: (as one file pair): a kill of the whole sweep loses at most this much finished work
FLUSH_SECONDS = 5.0
#: finished cells are written sooner when this many trace rows wait (the driver's memory)
FLUSH_ROWS = 1_000_000
#: default for the estimated seconds of work in one task (a few seconds: finished cells
#: reach the disk about this often, and a kill loses at most this much work per worker)
TASK_SECONDS = 4.0

#: one thread, per cell: seconds per step, per node-step and per node-dimension-step
#: (per mix of the algorithm, then noise); measured on a Zen 3 core: GT (2 mixes) 3.1 ns per
#: node-dimension-step with structured or no noise, 4.8-6.5 with Gaussian noise; D-SGD
#: (1 mix) 1.5 and 4.9; tiny cells (n = 8-30, d <= 8) 2-4 us per step, and d = 1 about
#: 0.1 us per node-step
STEP_S = 2e-6
ROW_S = 1e-7
MIX_S = 1.5e-9
NOISE_S = {"gaussian": 2.5e-9, "structured": 0.0, "none": 0.0, "full": 0.0, "minibatch": 0.0,
           "minibatch+gaussian": 2.5e-9}
#: problems with data: per row of a gradient and dimension (a dot product and an axpy;
#: 1-5 ns measured by bench/bench_ml.py, in cache and out)
SAMPLE_S = 2e-9
#: seconds per cell besides its loop: build, spectrum, theory, writing the files
CELL_S = 0.01
#: nodes assumed for a graph read from a file (from_edges, from_matrix) until the first
#: finished task calibrates the estimates
UNKNOWN_N = 1000


def nodes(params: dict) -> int:
    """A cell's nodes n, as far as its parameters tell (UNKNOWN_N for a graph's file)."""
    return flat_nodes(params) or UNKNOWN_N


def estimate(params: dict, threads: int = 1, steps: int | None = None) -> float:
    """Uncalibrated seconds of a cell (canonical parameters) on ``threads`` threads;
    ``steps`` replaces the cell's own count (a diverged task stops early)."""
    n = nodes(params)
    from ..algorithms import ALGORITHMS  # numba: only where cells are planned

    elem = MIX_S * ALGORITHMS[params["algorithm"]].costs.mixes + NOISE_S[params["noise"]]
    if "batch_size" in params:  # a problem with data: rows per gradient (samples: synthetic)
        rows = (params["batch_size"] if params["noise"].startswith("minibatch")
                else params.get("samples") or 100)
        elem += SAMPLE_S * rows
    per_step = STEP_S + n * (ROW_S + params["d"] * elem)
    return CELL_S + (params["steps"] if steps is None else steps) * per_step / threads


def graph_key(params: dict) -> str:
    """Which graph a cell runs on (its topology's family and parameters): cells of one
    graph share its spectrum, derived once per sweep (fastgt/derived.py)."""
    return json.dumps(cell_graph(params), sort_keys=True)


class Planner:
    """Cells grouped by ``batch_key``, handed out as tasks sized when they are asked for,
    so that each one uses the measurements of the tasks finished before it. The first task
    of every graph goes out before a second task of any: workers starting together then
    decompose different graphs (a user trial: two workers both spent the first minutes of
    a sweep on one graph's spectrum, the later tasks of which read it kept in DIR)."""

    def __init__(self, cells: list, slots: int, max_batch: int = MAX_BATCH, threads: int = 1,
                 seconds: float = TASK_SECONDS):
        groups: dict = {}
        for cell in cells:
            groups.setdefault(batch_key(cell.params), []).append(cell)
        # graph -> its groups, each [cells not yet handed out, the group's share per slot]
        self.graphs: dict = {}
        for group in groups.values():
            self.graphs.setdefault(graph_key(group[0].params), deque()).append(
                [group, math.ceil(len(group) / slots)])
        self.unstarted = deque(self.graphs)  # graphs no task has gone out for
        self.left = len(cells)  # cells not yet handed out (len: asked on every loop pass)
        self.max_batch, self.threads, self.limit = max_batch, threads, seconds
        self.ratio: dict = {}  # group key (None: any) -> measured / estimated, latest task

    def __len__(self) -> int:
        """Cells not yet handed out."""
        return self.left

    def seconds(self, cell) -> float:
        """A cell's estimated seconds, calibrated by the tasks finished so far."""
        ratio = self.ratio.get(batch_key(cell.params), self.ratio.get(None, 1.0))
        return estimate(cell.params, self.threads) * ratio

    def next_task(self) -> list:
        """The next cells to run together (all of one group): of a graph not started yet
        if any, else of the first graph left."""
        graph = self.unstarted.popleft() if self.unstarted else next(iter(self.graphs))
        groups = self.graphs[graph]
        entry = groups[0]
        group, share = entry
        fit = int(self.limit // self.seconds(group[0]))  # equal estimates within a group
        room = BATCH_ELEMENTS // (nodes(group[0].params) * group[0].params["d"])  # equal n, d
        size = max(1, min(self.max_batch, share, fit, room))
        task, entry[0] = group[:size], group[size:]
        self.left -= len(task)
        if not entry[0]:
            groups.popleft()
            if not groups:
                del self.graphs[graph]
        return task

    def observe(self, task: list, rows: list[dict]) -> None:
        """Calibrate with a finished task's rows (cells that ran: ok or diverged)."""
        ran = [(c, r) for c, r in zip(task, rows) if r["status"] in ("ok", "diverged")
               and math.isfinite(r["wall_time"]) and r["wall_time"] > 0]
        if not ran:
            return
        steps = max(r["steps_done"] for _, r in ran)  # the loop ran until the last one stopped
        got = sum(r["wall_time"] for _, r in ran)
        est = sum(estimate(c.params, self.threads, steps) for c, _ in ran)
        self.ratio[batch_key(task[0].params)] = self.ratio[None] = got / est


def check_memory_at_once(cells, workers: int) -> None:
    """FastGTError naming ``workers`` when the ``workers`` largest of ``cells`` that fit
    alone, each run by a worker of this machine at the same time, would need more memory
    together than is available (each at least its least state, algorithms.base.least_state):
    a run checks its own state only, and two whose arrays are not yet touched both pass that
    check, then the kernel kills one of them mid-sweep. Cells whose size only a file tells
    (a graph file's n, a data file's d) count as 0; a cell too big on its own is left to its
    own check (recorded as failed, with the reason)."""
    from ..algorithms.base import least_state
    from ..memory import MEMORY_CHECKED, available_memory, size
    from ..params import from_file

    if workers < 2:
        return
    needs = [least_state(n, c.params["d"], c.params.get("dtype", IMPLICIT["dtype"]))
             for c in cells if not from_file(c.params) and (n := flat_nodes(c.params))]
    if sum(sorted(needs)[-workers:]) < MEMORY_CHECKED:  # small sweeps read no meminfo
        return
    avail = available_memory()
    if avail is None:
        return
    top = sorted((x for x in needs if x <= avail), reverse=True)[:workers]
    if sum(top) <= avail:
        return
    fit = max(k for k in range(len(top) + 1) if sum(top[:k]) <= avail)  # 1 at least
    raise FastGTError(f"workers={workers} would run the {len(top)} largest cells at once, "
                      f"{size(sum(top))} of state or more, where {size(avail)} are available: "
                      f"allowed workers={fit} or fewer for these cells")
