"""The worker side of a sweep: run one cell from its flat parameters, worker start-up and
watchdog, compile-cache warm-up. Light to import: no pyarrow, no dask."""

from __future__ import annotations

import datetime
import json
import math
import os
import socket
import time
import traceback
import warnings

from ..data import file_stamp
from ..errors import FastGTError, FastGTWarning
from ..flat import cell_problem, cell_topology, table_topology
from ..metrics import METRICS, PROBLEM_COLUMNS
from ..params import IMPLICIT, PER_CELL
from ..procs import process_start
from ..theory import THEORY_COLUMNS

#: thread-count variables of numba and the BLAS/OpenMP libraries, set in every worker
THREAD_ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the summary's keys a cell's row copies as they are (besides the METRICS plateaus and
#: finals): among them rounding_limited, a float32 cell's metrics that its rounding may
#: dominate (None for float64), and growing, what fastgt.run warns of an ok cell whose
#: loss_nodes grew to its end
SUMMARY_KEYS = ("status", "diverged_step", "steps_done", "loop_time", "steps_per_s", "threads",
                "rounding_limited", "growing")
SPECTRUM_KEYS = ("lambda2", "lambda_n", "p", "c", "p_eff")
#: exact theory next to the simulated plateaus (fastgt.theory.theory_columns); graphs without a
#: closed-form spectrum get it up to this many nodes (a dense eigvalsh per graph, kept in
#: the sweep's DIR: fastgt/derived.py)
THEORY_DENSE_MAX = 4096


def run_arguments(params: dict, topologies: dict | None = None) -> dict:
    """Keyword arguments of :func:`fastgt.run` for a cell's canonical parameters.

    topologies: a memo of built mixing matrices (cells of one task often share one, and with
    it its spectrum and theory eigenvalues)."""
    keys = ("algorithm", "noise", "sigma2", "stepsize", "steps", "record_every", "seed")
    return {"topology": cell_topology(params, topologies), "problem": cell_problem(params),
            **{k: params[k] for k in keys},
            # a data file's d is the file's (the grid refused any other before running)
            "d": params["d"] if params.get("data", "synthetic") == "synthetic" else None,
            **{k: params.get(k, v) for k, v in IMPLICIT.items()},
            "topology_y": params.get("topology_y") and table_topology(params["topology_y"],
                                                                      topologies)}


def batch_key(params: dict) -> str:
    """Cells with equal keys can share one compiled loop (fastgt.run_batch)."""
    return json.dumps({k: v for k, v in params.items() if k not in PER_CELL}, sort_keys=True)


def run_cell(params: dict, threads: int = 1) -> tuple[dict, object, dict]:
    """Simulate one cell with exactly ``threads`` numba threads; never raises.

    Returns (row, trace, meta): row = the results (spectrum, theory, plateaus under each
    metric's name, ``final_<metric>``, status "ok" | "diverged" | "failed", error, wall_time,
    ...), trace = the run's trace columns, {name: array} (RunResult.trace_columns; None if
    the cell failed), meta = provenance of
    the process that ran it (host, pid, start time, versions, the run's own config).
    """
    return run_cells([params], threads)[0]


def run_cells(plist: list[dict], threads: int = 1,
              derived_dir: str | None = None) -> list[tuple[dict, object, dict]]:
    """``run_cell`` for several cells: those of equal ``batch_key`` advance together in one
    compiled loop (same numbers as separate runs); if they turn out not to share a sparsity
    pattern or noise kind, they run one by one. Never raises. ``derived_dir``: where values
    derived once for many cells are kept (a sweep's DIR: fastgt/derived.py)."""
    from ..derived import cache_in

    # a cell's warnings live in its row (rounding_limited) or are said once by the driver
    # (executors.run_sweep: D², EXTRA in float32), not once per cell on a worker's stderr
    with cache_in(derived_dir), warnings.catch_warnings():
        warnings.simplefilter("ignore", FastGTWarning)
        return _run_cells(plist, threads)


def _run_cells(plist: list[dict], threads: int) -> list[tuple[dict, object, dict]]:
    from ..runtime import numba_threads

    start = time.time()
    meta = {"host": socket.gethostname(), "pid": os.getpid(),
            "start_time": datetime.datetime.fromtimestamp(start, datetime.UTC).isoformat(),
            **versions()}
    topologies: dict = {}
    theories: dict = {}
    cells = [_Prepared(params, meta, topologies, theories) for params in plist]
    todo = [c for c in cells if c.kwargs is not None]
    try:
        # threads=None within the worker's threads: a lone small cell runs on one thread,
        # as fastgt.run puts it (a user trial: tiny cells on --threads-per-worker 2, slower)
        with numba_threads(threads):
            _simulate(todo)
    except FastGTError as err:  # more threads than this process has: every cell says so
        for c in todo:
            c.fail(err)
    return [(c.row, c.trace, c.meta) for c in cells]


def _simulate(todo: list) -> None:
    """Run the prepared cells: those of one task together (run_batch), one by one if they
    cannot be; each cell's result or failure recorded in it."""
    from ..runner import run, run_batch

    if len(todo) > 1:
        shared = {k: todo[0].kwargs[k] for k in ("algorithm", "problem", "noise", "d", "steps",
                                                  "record_every", "local_steps",
                                                  "allow_unstable", "topology_y", "dtype")}
        try:
            results = run_batch([{k: c.kwargs[k] for k in ("topology", "stepsize", "sigma2",
                                                            "seed")} for c in todo], **shared)
        except Exception:  # noqa: BLE001 (not batchable, or out of memory: one by one below,
            results = [None] * len(todo)  # so that each cell's own failure is recorded)
        for c, res in zip(todo, results):
            c.result = res
    for c in todo:
        try:
            c.finish(c.result if c.result is not None else run(**c.kwargs))
        except Exception as err:  # noqa: BLE001 (a failing cell is recorded, the sweep goes on)
            c.fail(err)


class _Prepared:
    """One cell of a task: spectrum and theory first, then its run's results."""

    def __init__(self, params: dict, meta: dict, topologies: dict, theories: dict):
        """topologies, theories: memos shared by the cells of a task (the theory of
        cells that differ only in their seed is computed once)."""
        t0 = time.perf_counter()
        self.row, self.trace, self.meta = {"error": None}, None, dict(meta)
        self.kwargs, self.result = None, None
        if params.get("data", "synthetic") != "synthetic":  # which version of the file ran
            self.meta["data_stamp"] = file_stamp(params["data"])
        try:
            self.kwargs = run_arguments(params, topologies)
            sp = self.kwargs["topology"].spectrum()
            self.row.update({k: float(getattr(sp, k)) for k in SPECTRUM_KEYS})
            key = json.dumps({k: v for k, v in params.items() if k != "seed"}, sort_keys=True)
            if key not in theories:
                theories[key] = theory_row(self.kwargs, params)
            self.row.update(theories[key])
        except Exception as err:  # noqa: BLE001
            self.kwargs = None
            self.fail(err)
        self.prep_time = time.perf_counter() - t0
        self.row["wall_time"] = self.prep_time

    def fail(self, err: BaseException) -> None:
        self.row.update(status="failed", error=one_line(err))
        self.meta["traceback"] = traceback.format_exc()

    def finish(self, res) -> None:
        self.row.update({k: res.summary[k] for k in SUMMARY_KEYS})
        self.row["error"] = res.summary["diverged_reason"]  # why a diverged cell stopped
        self.row.update({m: res.summary[m] for m in METRICS})
        self.row.update({f"final_{m}": res.summary[f"final_{m}"] for m in METRICS})
        self.row.update({k: res.summary.get(k, math.nan) for k in PROBLEM_COLUMNS})
        self.row["wall_time"] = self.prep_time + res.summary["wall_time"]
        self.trace = res.trace_columns()
        self.meta["run_config"] = res.config
        self.meta["batch"] = res.summary["batch"]


def theory_row(kwargs: dict, params: dict) -> dict:
    """The cell's theory_* values; NaN where the theory does not cover it (a time-varying
    W, topology_y without W's eigenvectors, a heterogeneous problem) or fails."""
    from ..theory import theory_columns

    try:
        cols = theory_columns(kwargs["topology"], params["algorithm"], params["stepsize"],
                              params["sigma2"], params["problem"], params["noise"], params["d"],
                              dense_max=THEORY_DENSE_MAX, local_steps=kwargs["local_steps"],
                              topology_y=kwargs["topology_y"],
                              record_every=params["record_every"])
    except Exception:  # noqa: BLE001 (the theory is an extra; it never fails a cell)
        cols = {}
    return {k: float(cols.get(k, math.nan)) for k in THEORY_COLUMNS}


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def versions() -> dict:
    """Versions of the numerical stack (recorded in every file's footer)."""
    import platform

    import numba
    import numpy

    from .._version import __version__

    return {"fastgt": __version__, "numba": numba.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


def worker_init(driver_pid: int) -> None:
    """Start of a worker process: leave Ctrl-C to the driver (which stops the workers), and
    exit if the driver dies (a killed sweep leaves no orphan computing or holding pipes)."""
    import multiprocessing
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # numba guards the start of its threading layer with an interprocess lock, a named
    # semaphore, when the start method has "fork" in its name (a forkserver child's has); a
    # worker the driver terminates (Ctrl-C) never unlinks it, and the resource tracker warned
    # of it at exit. A worker starts no processes: with "spawn" numba's lock is a no-op.
    multiprocessing.set_start_method("spawn", force=True)
    start = process_start(driver_pid)

    def watch():
        while process_start(driver_pid) == start:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="fastgt-driver-watch").start()


def ping() -> int:
    """A no-op task (the driver waits for one per worker to know they all started)."""
    return os.getpid()


def warm_cache(units) -> None:
    """Compile the kernels of the (algorithm, problem, dtype) triples ``units`` once per
    machine, before workers start (so that they all load them and none compiles)."""
    from ..warmup import ensure_warm, kernels_of

    by_family: dict = {}
    for algo, prob, dtype in units:
        kernels = kernels_of(prob)
        by_family.setdefault((kernels.family, dtype), (kernels, []))[1].append(algo)
    for (_, dtype), (kernels, algos) in by_family.items():
        ensure_warm(algos, kernels, dtype)
