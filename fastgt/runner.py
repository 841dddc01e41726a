"""``run(...)`` and ``run_batch(...)``: simulations with metrics recorded every
``record_every`` steps. No file I/O."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .algorithms import Batch, Cell
from .algorithms import algorithm as get_algorithm
from .config import DIVERGE_FACTOR, SMALL_RUN
from .errors import bad, check_choice, check_float, check_int
from .flat import build
from .kernels.metrics import quadratic_metrics
from .metrics import METRICS
from .problems import make_noise
from .problems import problem as get_problem
from .runtime import ensure_warm, numba_threads
from .topology import MixingMatrix

#: parameters that may differ between the cells of one run_batch call
CELL_KEYS = ("topology", "stepsize", "sigma2", "seed", "x0")


class LazyState(Mapping):
    """A run's final arrays by name; a value given as a function is computed on first
    access (GT's G when the run kept none: no n x d array is allocated unless asked for)."""

    def __init__(self, values: dict):
        self._values = dict(values)

    def __getitem__(self, key):
        v = self._values[key]
        if callable(v):
            v = self._values[key] = v()
        return v

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"LazyState({list(self._values)})"


@dataclass(eq=False)
class RunResult:
    """``trace``: one row per record (step + METRICS); ``summary``: finals, plateaus, status.

    ``records`` holds the trace's numbers, (records, 1 + len(METRICS)); the pandas
    DataFrame ``trace`` is built from it on first access (so that a run needs no pandas).
    ``state`` holds the final arrays (X, and Y, G for GT): views into the run's buffers,
    which they keep alive (all 5 n d doubles of GT with gaussian noise; with structured or
    no noise the buffers are 4 n d and G is recomputed on first access); copy what you
    keep of a large run.
    """

    records: np.ndarray = field(repr=False)
    summary: dict
    config: dict
    state: Mapping = field(repr=False, default_factory=dict)

    @functools.cached_property
    def trace(self):
        import pandas as pd

        df = pd.DataFrame(self.records, columns=("step",) + METRICS)
        df["step"] = df["step"].astype(np.int64)
        return df

    def __repr__(self) -> str:
        s = self.summary
        return (f"RunResult({self.config['algorithm']} on {self.config['topology']}, status={s['status']}, "
                f"steps={s['steps_done']}, loss_nodes={s['loss_nodes']:.4g}, {s['steps_per_s']:.0f} steps/s)")


def run(algorithm: str = "gt", topology: MixingMatrix | str | None = None, problem="quadratic",
        noise: str = "gaussian", sigma2: float = 1.0, d: int = 100, stepsize: float = 0.01,
        steps: int = 1000, record_every: int = 100, seed: int = 0, x0=None,
        threads: int | None = None, progress=None, **params) -> RunResult:
    """Simulate ``algorithm`` ("gt" | "dsgd") on mixing matrix ``topology``.

    topology: a MixingMatrix (``fastgt.topology(...)``) or a family name with its parameters
    in the flat form that grid files and the CLI take (``topology="ring", n=30,
    self_weight=0.2``; a random graph's seed is ``graph_seed``). problem: a name (its
    parameters flat as well: ``zeta=``, ``problem_seed=``) or ``fastgt.problem(...)``.
    noise: "gaussian" (Setup A), "structured" (Setup B) or "none", with
    (1/n) sum_i E||noise_i||^2 = sigma2. x0: (n, d) initial iterates (default i.i.d.
    N(0, 1) from ``seed``). threads: numba threads (default: all, or 1 for runs below
    ``config.SMALL_RUN`` node-dimensions, where a second thread slows each step down; the
    numbers never depend on it). progress: optional callable(steps_done) after each record.
    A parameter that neither the topology nor the problem takes is refused by name.
    """
    if params or isinstance(topology, str):
        topology, problem = build(topology, problem, params)
    cell = {"topology": topology, "stepsize": stepsize, "sigma2": sigma2, "seed": seed, "x0": x0}
    return run_batch([cell], algorithm=algorithm, problem=problem, noise=noise, d=d, steps=steps,
                     record_every=record_every, threads=threads, progress=progress)[0]


def run_batch(cells: list[dict], algorithm: str = "gt", problem="quadratic",
              noise: str = "gaussian", d: int = 100, steps: int = 1000, record_every: int = 100,
              threads: int | None = None, progress=None, parallel: str = "auto") -> list[RunResult]:
    """Several runs advanced together by one compiled loop; results equal ``run``'s bit for bit.

    Each cell is a dict with ``topology`` (a MixingMatrix) and optionally ``stepsize``,
    ``sigma2``, ``seed``, ``x0`` (defaults as in ``run``); all topologies must share one
    sparsity pattern (e.g. interp_ring with several alphas, rings with several self weights).
    parallel: "cells" (each thread advances whole cells: no per-step barrier), "blocks"
    (every step split over row blocks) or "auto" (cells when there are at least as many
    cells as threads). The choice changes the speed, never the numbers.
    """
    t_start = time.perf_counter()
    algo = get_algorithm(algorithm)
    d = check_int("d", d, 1)
    steps = check_int("steps", steps, 1)
    record_every = check_int("record_every", record_every, 1)
    check_choice("parallel", parallel, ("auto", "cells", "blocks"))
    spec = get_problem(problem)
    if not cells:
        raise bad("cells", cells, "a non-empty list of dicts")
    parsed = [_parse_cell(c, noise, d) for c in cells]
    prob = spec.build(parsed[0].W.n, d)
    shared = {"algorithm": algo.name, "problem": spec.name,
              **{f"problem_{k}": v for k, v in spec.params.items() if np.isscalar(v)},
              "noise": noise, "d": d, "steps": steps, "record_every": record_every}

    ensure_warm()  # after the checks: a typo never waits for a compile
    if threads is None and len(parsed) == 1 and parsed[0].W.n * d < SMALL_RUN:
        threads = 1
    with numba_threads(threads) as nthreads:
        batch = Batch(parsed, prob)
        arrays = algo.init(batch)
        recs = [_Recorder(algo, arrays, c, batch) for c in range(batch.C)]
        by_cells = parallel == "cells" or (parallel == "auto" and 1 < nthreads <= batch.C)
        t_loop = time.perf_counter()
        t, cur = 0, 0
        while t < steps and any(r.status == "ok" for r in recs):
            k = min(record_every - t % record_every, steps - t)
            cur = algo.advance(batch, arrays, cur, t, k, by_cells)
            t += k
            for r in recs:
                if r.status == "ok":
                    r.record(t, cur)
            if progress is not None:
                progress(t)
        loop_time = time.perf_counter() - t_loop

    wall = time.perf_counter() - t_start
    out = []
    for c, (cell, rec) in enumerate(zip(parsed, recs)):
        records = np.array(rec.rows).reshape(-1, 1 + len(METRICS))
        config = {**shared, "topology": cell.W.name, **cell.W.params, "sigma2": cell.noise.sigma2,
                  "stepsize": cell.gamma, "seed": cell.seed, "threads": nthreads}
        summary = _summarize(records, rec, loop_time / batch.C, wall / batch.C, nthreads, batch.C)
        out.append(RunResult(records, summary, config,
                             LazyState(algo.state(batch, arrays, cur, c, t))))
    return out


def _parse_cell(cell: dict, noise: str, d: int) -> Cell:
    if not isinstance(cell, dict):
        raise bad("cells", cell, "dicts with keys " + ", ".join(CELL_KEYS))
    unknown = sorted(set(cell) - set(CELL_KEYS))
    if unknown:
        raise bad(unknown[0], cell[unknown[0]], "per-cell parameters " + ", ".join(CELL_KEYS))
    W = cell.get("topology")
    if not isinstance(W, MixingMatrix):
        raise bad("topology", W, "a MixingMatrix, e.g. fastgt.topology('ring', n=300)")
    gamma = check_float("stepsize", cell.get("stepsize", 0.01), 0.0, lo_open=True)
    seed = check_int("seed", cell.get("seed", 0), 0, 2**63 - 1)
    nz = make_noise(noise, cell.get("sigma2", 1.0), d, W)
    return Cell(W, nz, gamma, seed, cell.get("x0"))


class _Recorder:
    """Metrics of one cell; stops recording (status "diverged") once they blow up."""

    def __init__(self, algo, arrays, c, batch):
        self.algo, self.arrays, self.c, self.batch = algo, arrays, c, batch
        self.part = batch.part[c]
        # padded like the rows: the padding (zero) adds exact zeros to every sum
        self.abar, self.xstar = batch.pad(batch.problem.abar), batch.pad(batch.problem.xstar)
        self.out = np.empty(len(METRICS))
        self.rows: list[float] = []
        self.status, self.diverged_step, self.steps_done = "ok", None, 0
        self.reason = None
        self.record(0, 0)
        self.limit = DIVERGE_FACTOR * max(1.0, self.out[1])

    def record(self, t: int, cur: int) -> None:
        X, Y = self.algo.iterates(self.batch, self.arrays, cur, self.c)
        has_y = Y is not None
        quadratic_metrics(X, Y if has_y else X, has_y, self.abar, self.xstar, self.part, self.out)
        self.rows.append(float(t))
        self.rows.extend(self.out.tolist())
        self.steps_done = t
        vals = self.out if has_y else self.out[:4]
        if t > 0 and (not np.all(np.isfinite(vals)) or self.out[1] > self.limit):
            self.status, self.diverged_step, self.reason = "diverged", t, self._why(vals)

    def _why(self, vals) -> str:
        bad = [m for m, v in zip(METRICS, vals) if not np.isfinite(v)]
        if bad:
            return f"{bad[0]} is not finite ({vals[METRICS.index(bad[0])]})"
        return (f"loss_nodes = {self.out[1]:.3g} exceeds {DIVERGE_FACTOR:g} x max(1, its value "
                "at step 0)")


def _summarize(records: np.ndarray, rec: _Recorder, loop_time: float, wall: float,
               threads: int, batch: int) -> dict:
    """Finals and plateaus (mean over the last half of the records). Times of a batch are
    shared equally by its cells."""
    s = {"status": rec.status, "diverged_step": rec.diverged_step,
         "diverged_reason": rec.reason, "steps_done": rec.steps_done,
         "records": len(records), "wall_time": wall, "loop_time": loop_time,
         "steps_per_s": rec.steps_done / loop_time if loop_time > 0 else math.nan,
         "threads": threads, "batch": batch}
    half = records[len(records) // 2:]
    for q, m in enumerate(METRICS, start=1):
        s[f"final_{m}"] = float(records[-1, q])
        s[m] = float(half[:, q].mean()) if rec.status == "ok" else math.nan
    return s

