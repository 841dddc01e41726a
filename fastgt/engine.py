"""The engine under fastgt.run: a batch of cells checked and set up (``prepare``, which
compiles nothing), then advanced by the compiled kernels with metrics recorded every
``record_every`` steps (``execute``). No file I/O, no warm-up: fastgt.warmup and the public
API (fastgt.runner) sit above it."""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from . import metrics as M
from .algorithms import Batch, Cell
from .algorithms import algorithm as get_algorithm
from .algorithms.base import warn_drift
from .config import DIVERGE_FACTOR, SMALL_RUN
from .errors import (
    FastGTError,
    FastGTWarning,
    bad,
    caller_level,
    check_choice,
    check_float,
    check_int,
)
from .kernels.metrics import KERNEL_METRICS
from .kernels.oracles import NONE
from .params import PARAMS
from .precision import floors, rounding_eps2, rounding_limited
from .problems import NOISES, make_noise
from .problems import problem as get_problem
from .runtime import numba_threads, signals_polled
from .topology import MixingMatrix, TimeVarying

#: seconds a kernel call runs, about (engine._Calls), and how much longer a call may be
#: than the one before
CALL_S, GROWTH = 0.2, 8
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


def cost_counts(step: np.ndarray, algorithm: str, local_steps: int) -> tuple:
    """Cumulative communication rounds and gradient evaluations per node after ``step``
    steps (the algorithm's Costs): rounds on the communicating steps only (every
    local_steps-th), gradients on every step plus the initial one."""
    costs = get_algorithm(algorithm).costs
    return (costs.comm_rounds * (step // local_steps), costs.grad_evals * (step + 1))


@dataclass(eq=False)
class RunResult:
    """``trace``: one row per record (step, comm_rounds, grad_evals, METRICS); ``summary``:
    finals, plateaus, status.

    ``records`` holds the trace's numbers, (records, 1 + len(metrics)); the pandas
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

        return pd.DataFrame(self.trace_columns())

    def trace_columns(self) -> dict[str, np.ndarray]:
        """The trace's columns as arrays (what ``trace`` holds, without pandas)."""
        step = self.records[:, 0].astype(np.int64)
        comm, grads = cost_counts(step, self.config["algorithm"], self.config["local_steps"])
        cols = {"step": step, "comm_rounds": np.asarray(comm, dtype=np.int64),
                "grad_evals": np.asarray(grads, dtype=np.int64)}
        return cols | {m: self.records[:, q] for q, m in enumerate(M.METRICS, start=1)}

    def __repr__(self) -> str:
        s = self.summary
        return (f"RunResult({self.config['algorithm']} on {self.config['topology']}, status={s['status']}, "
                f"steps={s['steps_done']}, loss_nodes={s['loss_nodes']:.4g}, {s['steps_per_s']:.0f} steps/s)")


@dataclass(eq=False)
class Plan:
    """A checked batch, ready to run: what ``execute`` needs, nothing compiled yet."""

    algo: object
    cells: list
    problem: object
    shared: dict
    steps: int
    record_every: int
    parallel: str
    t_start: float
    topology_y: object = None


def check_sigma2(noise: str, sigma2) -> None:
    """One-line FastGTError when a sigma2 other than its default is given with a noise that
    adds none (none, full, minibatch): it would be recorded and ignored (in a grid:
    identical cells under different ids). None: not given; an unknown noise is
    make_noise's to name."""
    if sigma2 is not None and NOISES.get(noise) == NONE and sigma2 != PARAMS["sigma2"].default:
        added = ", ".join(repr(k) for k, v in NOISES.items() if v != NONE)
        raise FastGTError(f"sigma2={sigma2:g} applies to noise {added} only: noise={noise!r} "
                          "adds none (leave sigma2 out)")


def _dimension(d: int | None) -> int:
    """d checked, None being PARAMS' default."""
    return check_int("d", PARAMS["d"].default if d is None else d, 1)


def built_problem(spec, n: int, d: int | None):
    """The instance of problem ``spec`` on n nodes in dimension d (None: PARAMS' default),
    or in a data file's own d, which a d given beside it must equal (one-line FastGTError)."""
    default, d = d is None, _dimension(d)
    prob = spec.build(n, d)
    if prob.d != d and not default:
        raise FastGTError(f"d={d} does not apply to data={spec.params.get('data')!r}: its d is "
                          f"the file's, {prob.d} (leave d out)")
    return prob


def prepare(cells: list[dict], algorithm: str = "gt", problem="quadratic",
            noise: str = "gaussian", d: int | None = None, steps: int = 1000,
            record_every: int = 100,
            parallel: str = "auto", local_steps: int = 1, allow_unstable: bool = False,
            topology_y=None, dtype: str = "float64") -> Plan:
    """Check every argument (one-line FastGTError) and build the problem instance; see
    fastgt.run_batch for their meaning."""
    t_start = time.perf_counter()
    algo = get_algorithm(algorithm)
    given, d = d, _dimension(d)  # given: as built_problem takes it
    steps = check_int("steps", steps, 1)
    record_every = check_int("record_every", record_every, 1)
    local_steps = 1 if local_steps is None else PARAMS["local_steps"].validate("local_steps",
                                                                               local_steps)
    check_choice("parallel", parallel, ("auto", "cells", "blocks"))
    dtype = "float64" if dtype is None else PARAMS["dtype"].validate("dtype", dtype)
    warn_drift(algo, dtype)
    if local_steps > steps:  # legitimate (a baseline without communication), but rarely meant
        warnings.warn(f"local_steps={local_steps} > steps={steps}: no step of this run "
                      "communicates (W = I throughout)", FastGTWarning,
                      stacklevel=caller_level())
    spec = get_problem(problem)
    if not cells:
        raise bad("cells", cells, "a non-empty list of dicts")
    parsed = [_parse_cell(c, noise, d) for c in cells]
    if not PARAMS["allow_unstable"].validate("allow_unstable", allow_unstable):
        for W in {id(c.W): c.W for c in parsed}.values():
            refusal = algo.refusal(W, local_steps)
            if refusal:
                raise FastGTError(refusal)
    wy = checked_topology_y(topology_y, algo, parsed[0].W.n)
    prob = built_problem(spec, parsed[0].W.n, given)
    if prob.d != d:  # a data file fixes d
        d = prob.d
        parsed = [_parse_cell(c, noise, d) for c in cells]
    prob = prob.in_dtype(dtype)  # float32: arrays the kernels read rounded and read as such
    prob = prob.for_noise(noise)
    shared = {"algorithm": algo.name, "problem": spec.name,
              **{f"problem_{k}": v for k, v in spec.params.items() if np.isscalar(v)},
              "noise": noise, "d": d, "steps": steps, "record_every": record_every,
              "local_steps": local_steps, "dtype": dtype}
    if wy is not None:
        shared["topology_y"] = wy.describe()
    return Plan(algo, parsed, prob, shared, steps, record_every, parallel, t_start, wy)


def execute(plan: Plan, threads: int | None = None, progress=None) -> list[RunResult]:
    """Run a prepared batch (compiling what the cache lacks): one RunResult per cell."""
    algo, parsed, prob, shared = plan.algo, plan.cells, plan.problem, plan.shared
    steps, record_every, parallel, t_start = (plan.steps, plan.record_every, plan.parallel,
                                              plan.t_start)
    if threads is None and len(parsed) == 1 and parsed[0].W.n * prob.d < SMALL_RUN:
        threads = 1
    with numba_threads(threads) as nthreads:
        batch = Batch(parsed, prob, algo.mixing, shared["local_steps"], plan.topology_y,
                      shared["dtype"], algo.passes)
        arrays = algo.init(batch)
        recs = [_Recorder(algo, arrays, c, batch) for c in range(batch.C)]
        by_cells = parallel == "cells" or (parallel == "auto" and 1 < nthreads <= batch.C)
        t_loop = time.perf_counter()
        t, cur, calls = 0, 0, _Calls(algo.plan_of(batch).levels)
        # Ctrl-C between calls of about CALL_S (and while numba unpacks a call's arguments:
        # recorded, then raised here), progress too
        with signals_polled() as poll:
            while t < steps and any(r.status == "ok" for r in recs):
                end = min(t + record_every - t % record_every, steps)
                while t < end:
                    k = calls.next(end - t)
                    cur = algo.advance(batch, arrays, cur, t, k, by_cells, t + k == end)
                    t += k
                    calls.took(k)
                    if progress is not None:
                        progress(t)
                    poll()
                for r in recs:
                    if r.status == "ok":
                        r.record(t, cur)
                poll()
        loop_time = time.perf_counter() - t_loop

    wall = time.perf_counter() - t_start
    info = prob.info()
    out = []
    for c, (cell, rec) in enumerate(zip(parsed, recs)):
        records = np.array(rec.rows).reshape(-1, 1 + len(M.DECLARED))
        config = {**shared, "topology": cell.W.name, **cell.W.params, "sigma2": cell.noise.sigma2,
                  "stepsize": cell.gamma, "seed": cell.seed, "threads": nthreads,
                  **({"problem_info": info} if info else {})}
        summary = _summarize(records, rec, loop_time / batch.C, wall / batch.C, nthreads, batch.C,
                             record_every if shared["local_steps"] > 1 else None)
        summary.update(prob.columns())
        # float32: the metrics its rounding may dominate ("" if none); float64: not checked
        summary["rounding_limited"] = (rec.rounding_limited(cur, t, summary, algo.drifts)
                                       if batch.dtype != np.float64 else None)
        # an ok run whose loss_nodes grew to its end: what to say of it, else None
        said = summary["growing"] = growing(records) if summary["status"] == "ok" else None
        if said:  # (run_batch: which of its cells)
            warnings.warn(said if batch.C == 1 else f"cell {c}: {said}", FastGTWarning,
                          stacklevel=caller_level())
        out.append(RunResult(records, summary, config,
                             LazyState(algo.state(batch, arrays, cur, c, t))))
    return out


class _Calls:
    """How many steps each kernel call advances: about CALL_S seconds' worth, measured by
    the calls before (Python sees a Ctrl-C, and a progress bar moves, only between calls:
    a run recorded once waited for its end), growing at most GROWTH-fold a call, in whole
    temporal passes of ``unit`` steps (a pass's steps cost one sweep of memory). Where a
    call ends changes no number: a call continues from step t as the next would."""

    def __init__(self, unit: int):
        self.unit, self.size = unit, unit
        self.t0 = time.perf_counter()

    def next(self, left: int) -> int:
        self.t0 = time.perf_counter()
        return min(left, self.size)

    def took(self, k: int) -> None:
        per_step = max(time.perf_counter() - self.t0, 1e-9) / k
        fit = max(self.unit, int(CALL_S / per_step) // self.unit * self.unit)
        self.size = min(fit, GROWTH * max(k, self.unit))


def checked_topology_y(Wy, algo, n: int):
    """The tracking variable's own matrix, checked against the algorithm and the topology's
    n (None: y mixes with W)."""
    if Wy is None:
        return None
    if not algo.topology_y:
        from .algorithms import ALGORITHMS

        takers = ", ".join(k for k, a in ALGORITHMS.items() if a.topology_y)
        raise bad("topology_y", _shown(Wy),
                  f"only with the algorithms that track gradients ({takers}), not {algo.name}")
    if not isinstance(Wy, MixingMatrix):
        raise bad("topology_y", _shown(Wy),
                  "a static topology, e.g. the table {\"topology\": \"ring\", \"n\": 300, "
                  "\"self_weight\": 0.5} (fastgt.topology('ring', n=300, self_weight=0.5) in "
                  "Python)")
    if Wy.n != n:
        raise FastGTError(f"topology_y has n={Wy.n}, the topology n={n}: allowed the same n")
    return Wy


def _shown(W):
    """A topology as a message names it: its family and parameters."""
    return W.describe() if hasattr(W, "describe") else W


def _parse_cell(cell: dict, noise: str, d: int) -> Cell:
    if not isinstance(cell, dict):
        raise bad("cells", cell, "dicts with keys " + ", ".join(CELL_KEYS))
    unknown = sorted(set(cell) - set(CELL_KEYS))
    if unknown:
        raise bad(unknown[0], cell[unknown[0]], "per-cell parameters " + ", ".join(CELL_KEYS))
    W = cell.get("topology")
    if not isinstance(W, (MixingMatrix, TimeVarying)):
        raise bad("topology", W, "a MixingMatrix or TimeVarying, e.g. "
                  "fastgt.topology('ring', n=300)")
    gamma = check_float("stepsize", cell.get("stepsize", 0.01), 0.0, lo_open=True)
    seed = check_int("seed", cell.get("seed", 0), 0, 2**63 - 1)
    sigma2 = cell.get("sigma2")
    check_sigma2(noise, sigma2)
    nz = make_noise(noise, PARAMS["sigma2"].default if sigma2 is None else sigma2, d, W)
    return Cell(W, nz, gamma, seed, cell.get("x0"))


class _Recorder:
    """The declared metrics (fastgt.metrics) of one cell: those named in KERNEL_METRICS from
    the problem's ``metrics`` (one pass over X and Y), the others from their own ``compute``. Stops
    recording (status "diverged") once they blow up."""

    def __init__(self, algo, arrays, c, batch):
        self.algo, self.arrays, self.c, self.batch = algo, arrays, c, batch
        self.part = batch.part[c]
        self.fill = batch.problem.metrics(batch.widen)
        self.declared = M.DECLARED
        self.defined = [m.applies is None or m.applies(batch.problem) for m in self.declared]
        self.fused = np.empty(len(KERNEL_METRICS))
        self.slots = [KERNEL_METRICS.index(m.name) if m.name in KERNEL_METRICS else -1
                      for m in self.declared]
        self.out = np.empty(len(self.declared))
        self.plans = {has_y: self._plan(has_y) for has_y in (False, True)}
        self.loss = M.METRICS.index("loss_nodes")
        self.rows: list[float] = []
        self.status, self.diverged_step, self.steps_done = "ok", None, 0
        self.reason = None
        #: float32 with a tracker: the records' sum of eps^2 x steps, the last record's eps^2
        self.history, self.eps2 = 0.0, 0.0
        self.record(0, 0)
        self.limit = DIVERGE_FACTOR * max(1.0, self.out[self.loss])

    def _plan(self, has_y: bool) -> tuple:
        """Where each declared metric comes from when the step has (or lacks) Y: indices
        left NaN, fused ones (index, kernel slot), computed ones (index, metric), and the
        indices checked for divergence."""
        nan, dst, src, computed = [], [], [], []
        for j, (m, slot, defined) in enumerate(zip(self.declared, self.slots, self.defined)):
            if (m.needs_y and not has_y) or not defined:
                nan.append(j)
            elif slot >= 0:
                dst.append(j)
                src.append(slot)
            else:
                computed.append((j, m))
        checked = sorted(set(range(len(self.declared))) - set(nan))
        return tuple(np.array(a, dtype=np.int64) for a in (nan, dst, src, checked)) + (computed,)

    def record(self, t: int, cur: int) -> None:
        X, Y = self.algo.iterates(self.batch, self.arrays, cur, self.c)
        has_y = Y is not None
        self.fill(X, Y, has_y, self.part, self.fused)
        nan, dst, src, checked, computed = self.plans[has_y]
        out = self.out
        out[nan] = np.nan
        out[dst] = self.fused[src]
        if computed:
            snap = self._snapshot(X, Y)
            for j, m in computed:
                out[j] = m.compute(snap)
        self.rows.append(float(t))
        self.rows.extend(out.tolist())
        if has_y and self.batch.dtype != np.float64:
            self._accumulate(X, Y, t)
        self.steps_done = t
        if t > 0 and (not np.isfinite(out[checked]).all() or out[self.loss] > self.limit):
            self.status, self.diverged_step = "diverged", t
            self.reason = self._why([(self.declared[j].name, out[j]) for j in checked])

    def _accumulate(self, X, Y, t: int) -> None:
        """The rounding history of a float32 run with a tracker (fastgt.precision): the
        steps since the last record at the larger of its and this record's eps^2."""
        k, real = KERNEL_METRICS, self.batch.real
        eps2, _ = rounding_eps2(real(X), real(Y), self.fused[k.index("consensus")],
                                self.fused[k.index("tracking")])
        self.history += (t - self.steps_done) * max(eps2, self.eps2)
        self.eps2 = eps2

    def rounding_limited(self, cur: int, steps: int, summary: dict, drifts: bool) -> str:
        """The metrics whose plateau a float32 state's rounding may dominate after
        ``steps`` steps (fastgt.precision), from the last record's values and its buffers
        ``cur`` (those of the run's end: a cell still ok recorded last there), and, with a
        tracker, the records' history."""
        if self.status != "ok":
            return ""
        X, Y = self.algo.iterates(self.batch, self.arrays, cur, self.c)
        last = dict(zip((m.name for m in self.declared), self.out))
        X, Y = self.batch.real(X), None if Y is None else self.batch.real(Y)
        eps2, xbar = rounding_eps2(X, Y, last["consensus"], last["tracking"])
        beta = float(np.max(np.abs(self.batch.mix.beta[self.c])))  # its mean term's weight
        return rounding_limited(summary, floors(eps2, self.history, steps, xbar, X.shape[0],
                                                self.batch.problem, beta), drifts)

    def _snapshot(self, X, Y) -> M.Snapshot:
        real = self.batch.real
        Xr = real(X)
        return M.Snapshot(Xr, None if Y is None else real(Y), Xr.mean(axis=0, dtype=np.float64),
                          self.batch.problem)

    def _why(self, vals) -> str:
        bad = [(m, v) for m, v in vals if not np.isfinite(v)]
        if bad:
            return f"{bad[0][0]} is not finite ({bad[0][1]})"
        return (f"loss_nodes = {self.out[self.loss]:.3g} exceeds {DIVERGE_FACTOR:g} x max(1, its "
                "value at step 0)")


#: a run that ends "ok" while loss_nodes grew at each of its last GROWING records, to more
#: than GROWING_FACTOR x max(1, its value at step 0), is said to be growing
GROWING, GROWING_FACTOR = 2, 1e6


def growing(records: np.ndarray) -> str | None:
    """What to say of a run whose records (step, then the metrics) end in growth of
    loss_nodes short of the divergence threshold (a run stopped before it passed
    DIVERGE_FACTOR: "ok" said nothing of a loss growing 10x every 20 steps; a user trial),
    or None. fastgt.run warns it and keeps it in summary["growing"]; a sweep in the cell's
    ``growing`` column."""
    loss = records[:, 1 + M.METRICS.index("loss_nodes")]
    tail = loss[-GROWING - 1:]
    if len(tail) <= GROWING or not np.all(np.diff(tail) > 0):
        return None
    ratio = tail[-1] / max(1.0, loss[0])
    if not ratio > GROWING_FACTOR:
        return None
    return (f"loss_nodes grew at each of the last {GROWING} records, to {tail[-1]:.3g} at step "
            f"{int(records[-1, 0])} ({ratio:.3g} x max(1, its value at step 0)): the run may "
            f"be diverging (it counts as diverged past {DIVERGE_FACTOR:g} x; a longer run tells)")


def _summarize(records: np.ndarray, rec: _Recorder, loop_time: float, wall: float,
               threads: int, batch: int, grid: int | None = None) -> dict:
    """Finals and plateaus (mean over the last half of the records; with ``grid``, of the
    records at its multiples: with local steps the metrics vary within a period, and the
    last step's record, off the grid of every record_every steps, fell on a phase the
    others need not, which the exact theory's average leaves out). Times of a batch are
    shared equally by its cells."""
    s = {"status": rec.status, "diverged_step": rec.diverged_step,
         "diverged_reason": rec.reason, "steps_done": rec.steps_done,
         "records": len(records), "wall_time": wall, "loop_time": loop_time,
         "steps_per_s": rec.steps_done / loop_time if loop_time > 0 else math.nan,
         "threads": threads, "batch": batch}
    kept = records if grid is None else records[records[:, 0] % grid == 0]
    if len(kept) < 2:  # the grid holds step 0 alone (steps < record_every): all of them
        kept = records
    half = kept[len(kept) // 2:]
    for q, m in enumerate(M.METRICS, start=1):
        s[f"final_{m}"] = float(records[-1, q])
        s[m] = float(half[:, q].mean()) if rec.status == "ok" else math.nan
    return s

