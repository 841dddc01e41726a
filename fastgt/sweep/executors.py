"""Running the cells of a sweep: one dispatch loop, two backends.

- ``local``: a process pool started with ``forkserver`` (or ``spawn``; never ``fork``: numba's
  OpenMP pool does not survive a fork), ``workers`` processes x ``threads`` numba threads.
- ``dask``: any ``dask.distributed`` cluster (``scheduler="tcp://host:port"``) or a
  ``LocalCluster`` bound to 127.0.0.1 (``scheduler="local"``); dask is an optional extra,
  imported only here, only when asked for.

Every worker gets NUMBA_NUM_THREADS / OMP_NUM_THREADS / ... = ``threads`` in its environment
before it imports numba, and every task runs under ``numba_threads(threads)``, so the thread
count is enforced, not just requested (the cell row records the count that ran). The driver
(this process) claims each cell just before submitting it, writes each result atomically as
it arrives and releases the claim: a killed sweep loses only the cells in flight, at most
one task (bounded by its estimated run time, fastgt.sweep.tasks) per worker, one queued task and
the task whose results were being written.
A claim says whether its cell is queued or running: backends start tasks in the order they
get them, so of the tasks in flight the first ``slots`` (one per worker) are running.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import math
import os
import re
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data import file_stamp
from ..errors import FastGTError, check_choice, check_float, check_int
from ..params import IMPLICIT, inapplicable
from .cellrun import THREAD_ENV, one_line, ping, run_cells, warm_cache, worker_init
from .tasks import FLUSH_ROWS, FLUSH_SECONDS, MAX_BATCH, TASK_SECONDS, Planner

if TYPE_CHECKING:
    from .storage import Store

EXECUTORS = ("local", "dask")
DASK_HINT = "pip install 'fastgt[dask]'"


@dataclass
class SweepReport:
    """Counts of one ``run_sweep``: computed cells by status, and cells not computed here;
    the errors of the failed and diverged cells, grouped by message."""

    total: int = 0
    status: Counter = field(default_factory=Counter)
    skipped: int = 0  # finished before (or by a concurrent sweep)
    busy: int = 0  # claimed by another live sweep
    lost: int = 0  # in a task whose worker died: not recorded, a rerun computes them
    lost_reason: str = ""
    lost_ids: list = field(default_factory=list)  # the first few
    kept_failed: int = 0  # skipped, recorded as failed before
    others: int = 0  # cells of DIR not in this grid (other specs run there)
    #: data file -> skipped cells that ran on it before it was rewritten
    stale: dict = field(default_factory=dict)
    elapsed: float = 0.0
    #: (status, message with its numbers masked) -> [count, first message, first cell id]
    errors: dict = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.status["failed"]

    def add(self, cell_id: str, row: dict) -> None:
        """Count a computed cell (and its error, if it failed or diverged)."""
        self.status[row["status"]] += 1
        if row["status"] in ("failed", "diverged"):
            msg = row.get("error") or ""
            group = self.errors.setdefault((row["status"], _NUMBER.sub("#", msg)),
                                           [0, msg, cell_id])
            group[0] += 1

    def line(self) -> str:
        s = self.status
        computed = sum(s.values())
        rate = f", {computed / self.elapsed:.3g} cells/s" if computed and self.elapsed > 0 else ""
        lost = f", {self.lost} lost (their worker died)" if self.lost else ""
        return (f"{self.total} cells: {s['ok']} ok, {s['diverged']} diverged, {s['failed']} failed, "
                f"{self.skipped} skipped (done before), {self.busy} running elsewhere{lost} "
                f"[{self.elapsed:.1f} s{rate}]")

    def notes(self) -> list[str]:
        """What a rerun leaves as it is: failed cells skipped, cells of other specs."""
        out = []
        if self.kept_failed:
            out.append(f"  {self.kept_failed} of the skipped cells had failed: "
                       "--retry-failed computes them again")
        if self.others:
            out.append(f"  DIR also holds {self.others} cells of other grids (fastgt.load "
                       "reads them too: where= selects)")
        for path, count in self.stale.items():
            out.append(f"  {count} of the skipped cells ran on {path} before it changed: "
                       "--force computes them again")
        return out

    def failures(self, most: int = 10) -> list[str]:
        """One line per kind of error, most frequent first: count, status, a message, a cell."""
        groups = sorted(self.errors.items(), key=lambda kv: -kv[1][0])
        lines = [f"  {n} {status}: {msg} (e.g. cell {cell})"
                 for (status, _), (n, msg, cell) in groups[:most]]
        if len(groups) > most:
            rest = sum(n for _, (n, _, _) in groups[most:])
            lines.append(f"  ... {rest} more cells with {len(groups) - most} other messages")
        return lines


#: numbers in error messages (masked to group messages that differ only in them)
_NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


# --------------------------------------------------------------------------- backends


def package_env() -> dict:
    """Environment for worker Pythons, which must import this very fastgt: its directory
    first on PYTHONPATH, and PYTHONSAFEPATH so that the working directory does not come
    before it (Python 3.11's forkserver runs ``python -c`` and ignores the parent's
    sys.path: a sweep started in a source checkout beside an installed copy ran its
    workers on the checkout, with other file times, compiling a cache of their own)."""
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    return {"PYTHONSAFEPATH": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}


@contextlib.contextmanager
def worker_environment(threads: int):
    """Thread variables, and the variables that make workers import the driver's own fastgt
    (``package_env``), for worker processes started inside the block; restored after
    (the driver's own numba keeps its configuration)."""
    env = {k: str(threads) for k in THREAD_ENV} | package_env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


#: thread count the (process-wide, started once) forkserver was started with
_forkserver_threads: int | None = None


def _mp_context(threads: int):
    """forkserver (fastgt imported once in the server, workers forked from it) when it is
    available and was started for this thread count; spawn otherwise. The server starts
    here, ignoring Ctrl-C from its first instruction, as the workers forked from it then do
    (the driver stops them): it ignored SIGINT only once its imports were done, and a Ctrl-C
    during them printed its traceback under the driver's "interrupted"."""
    import multiprocessing as mp
    import multiprocessing.forkserver
    import signal
    import threading

    global _forkserver_threads
    if "forkserver" in mp.get_all_start_methods() and _forkserver_threads in (None, threads):
        _forkserver_threads = threads
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["fastgt.sweep.cellrun"])
        if threading.current_thread() is threading.main_thread():
            # an ignored signal stays ignored across exec (a handled one does not); the
            # driver ignores it only while the server is spawned, not while it starts up
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                multiprocessing.forkserver.ensure_running()
            finally:
                signal.signal(signal.SIGINT, previous)
        return ctx
    return mp.get_context("spawn")


@contextlib.contextmanager
def _signals_deferred():
    """A Ctrl-C or SIGTERM inside the block is handled at its end (however the block ends)
    by the handler in place before it, a second one at once (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught, previous = [], {}

    def restore():
        for s, handler in previous.items():
            signal.signal(s, handler)

    def record(signum, frame):
        caught.append(signum)
        if len(caught) == 2:  # insisted on: now
            restore()
            signal.raise_signal(signum)

    previous.update({s: signal.signal(s, record) for s in (signal.SIGINT, signal.SIGTERM)})
    try:
        yield
    finally:
        restore()
        if len(caught) == 1:
            signal.raise_signal(caught[0])


#: a stop a signal handler asked for (``stop``): the dispatch loop raises it too, as an
#: exception raised in a handler is lost when it lands in a gc callback (Python prints it)
_stops: list = []

#: longest wait for a task, in seconds, between two looks at ``_stops``
POLL = 1.0


def stop(exc: BaseException) -> None:
    """For a signal handler: stop the running sweep with ``exc`` (a KeyboardInterrupt,
    which writes the finished cells first), now and, should that be lost, within POLL s."""
    _stops[:] = [exc]
    raise exc


#: Dask's errors of a task whose worker died or that the cluster dropped (by class name:
#: where they live moves between releases)
DASK_LOST = {"KilledWorker", "CommClosedError", "CancelledError", "FutureCancelledError",
             "FuturesCancelledError"}


def _lost(err: BaseException) -> bool:
    """Whether a Dask error says the task's worker or future is gone (DASK_LOST)."""
    return bool({t.__name__ for t in type(err).__mro__} & DASK_LOST)


class LostTask(Exception):
    """A task whose worker died: its cells are not recorded (a rerun computes them)."""


class LocalBackend:
    """``workers`` processes (forkserver or spawn, never fork), all started up front; a pool
    broken by a dying worker is replaced."""

    def __init__(self, workers: int, threads: int):
        self.workers, self.threads = workers, threads
        self.slots = workers  # tasks running at once
        self.capacity = workers + 1  # one queued task keeps workers busy while results are written
        self._start()

    def _start(self) -> None:
        with worker_environment(self.threads):
            self.pool = cf.ProcessPoolExecutor(self.workers, initializer=worker_init,
                                               initargs=(os.getpid(),),
                                               mp_context=_mp_context(self.threads))
            try:
                # start every worker while the environment is set: each submit starts a
                # process as long as none is idle, and none can be idle before its first
                # task is done. A Ctrl-C or SIGTERM waits for the starts: one cut short
                # left a child outside the pool that printed a traceback once the driver
                # had gone
                with _signals_deferred():
                    futures = [self.pool.submit(ping) for _ in range(self.workers)]
                for fut in futures:
                    fut.result()
            except BaseException:
                self.close(terminate=True)
                raise

    def submit(self, *args):
        """Run ``run_cells(*args)`` in a worker."""
        try:
            return self.pool.submit(run_cells, *args)
        except cf.process.BrokenProcessPool:
            self.pool.shutdown(wait=False)
            self._start()
            return self.pool.submit(run_cells, *args)

    @staticmethod
    def wait_any(futures, timeout: float | None = None):
        """The futures done, waiting at most ``timeout`` seconds (None: until one is)."""
        return cf.wait(futures, timeout, return_when=cf.FIRST_COMPLETED).done

    @staticmethod
    def result(fut, count: int):
        """The task's results, or a LostTask: a worker died (killed, out of memory), which
        breaks the pool and every task in it, not only its own."""
        try:
            return fut.result()
        except cf.process.BrokenProcessPool as err:
            raise LostTask(f"worker process died: {err}") from None

    def close(self, terminate: bool = False) -> None:
        """Stop the pool (again: a pool closed before, as by a failed restart, is left)."""
        running = self.pool._processes or {}  # no public API < 3.14; None once shut down
        procs = list(running.values()) if terminate else []
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join()
        self.pool.shutdown(wait=terminate, cancel_futures=True)


class DaskBackend:
    """Cells as tasks of a Dask cluster (an existing one, or a LocalCluster on 127.0.0.1)."""

    def __init__(self, scheduler: str, workers: int, threads: int,
                 units=(("gt", "quadratic", "float64"),)):
        self.units = list(units)
        try:
            import dask
            from dask import distributed
        except ImportError:
            raise FastGTError(f"executor='dask' needs dask.distributed: {DASK_HINT}") from None
        self.distributed = distributed
        self.cluster = None
        if scheduler == "local":
            key = "distributed.nanny.pre-spawn-environ"
            env = {**dask.config.get(key, {}), **{k: str(threads) for k in THREAD_ENV}}
            with worker_environment(threads), dask.config.set({key: env}):
                self.cluster = distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address=None, silence_logs=logging.ERROR,
                    preload=["fastgt.sweep.dask_worker"])
            address = self.cluster.scheduler_address
        else:
            address = scheduler
        self.client, self.futures = None, set()
        try:
            self._connect(address, scheduler, threads)
        except BaseException:
            self.close()  # a failed start leaves no cluster or client behind
            raise

    def _connect(self, address: str, scheduler: str, threads: int) -> None:
        distributed = self.distributed
        try:
            self.client = distributed.Client(address, timeout="20s")
        except OSError as err:
            raise FastGTError(f"scheduler={scheduler!r} is unreachable ({err}): allowed "
                              "'local' or the address of a running Dask scheduler") from None
        nthreads = self.client.nthreads()
        self.slots = sum(nthreads.values())
        self.capacity = self.slots + 1
        if any(k > 1 for k in nthreads.values()):
            print(f"fastgt: Dask workers with several threads run that many cells at once, each "
                  f"with {threads} numba thread(s); start them with --nthreads 1", file=sys.stderr)
        # fill the compile cache once per machine of the cluster (one worker per host)
        hosts: dict = {}
        for addr in nthreads:
            hosts.setdefault(addr.rsplit(":", 1)[0], addr)
        self.client.run(warm_cache, self.units, workers=list(hosts.values()))

    def submit(self, *args):
        """Run ``run_cells(*args)`` on the cluster."""
        fut = self.client.submit(run_cells, *args, pure=False)
        self.futures.add(fut)
        return fut

    def wait_any(self, futures, timeout: float | None = None):
        try:
            return self.distributed.wait(futures, timeout, return_when="FIRST_COMPLETED").done
        except TimeoutError:  # distributed's wait raises where concurrent.futures' returns
            return set()
        except Exception as err:  # a cancelled future (a lost scheduler): result() says so
            if not _lost(err):
                raise
            return {f for f in futures if f.done()}

    def result(self, fut, count: int):
        """The task's results; a LostTask when its worker died or the cluster dropped it,
        failed rows for any other error of the task (a rerun would meet it again)."""
        self.futures.discard(fut)
        try:
            return fut.result()
        except Exception as err:  # noqa: BLE001 (recorded: the sweep goes on)
            if _lost(err):
                raise LostTask(f"dask task lost: {one_line(err)}") from None
            row = {"status": "failed", "error": f"dask task: {one_line(err)}",
                   "wall_time": math.nan}
            return [(row, None, {})] * count

    def close(self, terminate: bool = False) -> None:
        if self.client is not None:
            if terminate and self.futures:
                self.client.cancel(list(self.futures))
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


#: a Dask scheduler's address: [PROTOCOL://]HOST:PORT
_ADDRESS = re.compile(r"^(?:[a-z]+://)?[^\s:/]+:\d+$")


def check_executor(executor: str, scheduler: str | None) -> None:
    check_choice("executor", executor, EXECUTORS)
    if executor == "local" and scheduler is not None:
        raise FastGTError("scheduler is only for executor='dask'")
    if scheduler not in (None, "local") and not _ADDRESS.match(str(scheduler)):
        raise FastGTError(f"scheduler={scheduler!r} is invalid: allowed 'local' (a "
                          "LocalCluster here) or a scheduler's address, tcp://HOST:PORT")


def check_options(executor: str, scheduler: str | None, workers: int | None, threads: int,
                  max_batch: int, flush_seconds: float) -> tuple:
    """A sweep's options checked (one-line errors), workers defaulting to the usable cores:
    (workers, threads, max_batch, flush_seconds)."""
    check_executor(executor, scheduler)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (check_int("workers", usable if workers is None else workers, 1),
            check_int("threads_per_worker", threads, 1), check_int("max_batch", max_batch, 1),
            check_float("flush_seconds", flush_seconds, 0.0))


def _drift_notes(units) -> None:
    """The warning a float32 run of D² or EXTRA gives, once per algorithm of the sweep, by
    the driver (the workers' runs say nothing)."""
    from ..algorithms import ALGORITHMS
    from ..algorithms.base import warn_drift

    for algo, dtype in sorted({(a, dtype) for a, _, dtype in units}):
        warn_drift(ALGORITHMS[algo], dtype)


def make_backend(executor: str, workers: int, threads: int, scheduler: str | None,
                 units=(("gt", "quadratic", "float64"),)):
    """The one dispatch point: "local" -> LocalBackend, "dask" -> DaskBackend; the kernels
    of ``units``, the sweep's (algorithm, problem, dtype) triples, are compiled first, once per
    machine."""
    check_executor(executor, scheduler)
    if executor == "local":
        warm_cache(units)  # before any worker starts: they all load, none compiles
        return LocalBackend(workers, threads)
    return DaskBackend(scheduler or "local", workers, threads, units)


# --------------------------------------------------------------------------- the sweep


def run_sweep(cells, out, executor: str = "local", workers: int | None = None,
              threads: int = 1, scheduler: str | None = None, force: bool = False,
              retry_failed: bool = False, spec_text: str | None = None,
              progress: bool = True, max_batch: int = MAX_BATCH,
              task_seconds: float = TASK_SECONDS,
              flush_seconds: float = FLUSH_SECONDS) -> SweepReport:
    """Compute every cell not yet in ``out`` and write their results; see the module doc.

    force: recompute finished cells too (not those a concurrent sweep finished meanwhile);
    retry_failed: recompute cells recorded as failed. max_batch: most cells in one task;
    task_seconds: most estimated seconds of work in one task (at least one cell), see
    fastgt.sweep.tasks; flush_seconds: finished cells are written, as one file pair, at
    least this often. When every cell is done, the files are compacted (Store.compact).
    Ctrl-C (KeyboardInterrupt) stops the workers, writes the finished cells, releases this
    sweep's claims and propagates, the report as its ``sweep_report``.
    """
    workers, threads, max_batch, flush_seconds = check_options(
        executor, scheduler, workers, threads, max_batch, flush_seconds)  # before DIR
    task_seconds = check_float("task_seconds", task_seconds, 0.0, lo_open=True)
    t0, t0_ns = time.time(), time.time_ns()
    _stops.clear()
    from .storage import Store  # pyarrow and pandas only for sweeps

    store = Store(out, create=False)  # read only until the workers are up: a scheduler
    report = SweepReport(total=len(cells))  # that cannot be reached changes nothing in DIR
    todo, replace = _todo(cells, store, force, retry_failed, report)
    report.skipped = len(cells) - len(todo)
    report.stale = _stale_data(cells, todo, store)
    sweep = {"started": t0, "executor": executor, "workers": workers,
             "threads_per_worker": threads, "scheduler": scheduler, "driver_pid": os.getpid()}
    try:  # whichever KeyboardInterrupt leaves: the first, or one during the clean-up
        _work(cells, todo, replace, out, store, report, sweep, spec_text, t0_ns,
              (executor, workers, threads, scheduler), progress,
              (max_batch, task_seconds, flush_seconds))
    except KeyboardInterrupt as stop:
        stop.sweep_report = report
        raise
    finally:
        report.elapsed = time.time() - t0
    if _stops:  # a stop whose exception was lost after the loop
        stop = _stops.pop()
        stop.sweep_report = report
        raise stop
    return report


def _work(cells, todo, replace, out, store, report, sweep, spec_text, t0_ns, how, progress,
          sizes) -> None:
    """run_sweep's work, once it knows the cells to compute: ``how`` = (executor, workers,
    threads, scheduler), ``sizes`` = (max_batch, task_seconds, flush_seconds)."""
    from .storage import Store

    executor, workers, threads, scheduler = how
    max_batch, task_seconds, flush_seconds = sizes
    backend = pending = None
    try:
        if todo:
            units = sorted({(c.params["algorithm"], c.params["problem"],
                             c.params.get("dtype", IMPLICIT["dtype"])) for c in todo})
            _drift_notes(units)
            backend = make_backend(executor, workers, threads, scheduler, units)
        store = Store(out)
        if spec_text is not None:
            store.put_spec(spec_text, [c.id for c in cells])
        store.clean()
        if not todo:  # all done before (a killed sweep's rerun: its parts are compacted here)
            store.compact()
            return
        pending = _Pending(store, sweep, flush_seconds)
        planner = Planner(todo, backend.slots, max_batch, threads, task_seconds)
        _dispatch(backend, planner, _Skip(store, replace, t0_ns), store, pending, report,
                  threads, progress)
    except BaseException:
        if backend is not None:
            with _signals_deferred():  # a second Ctrl-C waits for the workers to stop
                backend.close(terminate=True)
            backend = None
        raise
    finally:
        with _signals_deferred():  # finished work is never lost, whatever stopped the sweep
            try:
                if backend is not None:
                    backend.close()
                if pending is not None:
                    pending.flush()
            finally:
                store.release_all()
    store.compact()


def _todo(cells, store: Store, force: bool, retry_failed: bool,
          report: SweepReport) -> tuple[list, set]:
    """Cells to compute, and those of them that already have a result (to be replaced);
    the report counts the cells kept as failed and those of DIR not in this grid."""
    done = store.ids()
    report.others = len(done - {c.id for c in cells})
    if force:
        return list(cells), done
    failed = set()
    if done:
        failed = set(store.table("cells", ["id"], where={"status": "failed"})["id"].to_pylist())
    redo = failed if retry_failed else set()
    report.kept_failed = sum(c.id in failed for c in cells) - len(redo & {c.id for c in cells})
    return [c for c in cells if c.id not in done or c.id in redo], redo


def _stale_data(cells, todo, store: Store) -> dict:
    """Data files rewritten since the finished cells of this grid ran on them: path -> how
    many (a file's path, not its content, is part of a cell's id; each file's stamp is
    read from the provenance of one of its cells)."""
    todo_ids = {c.id for c in todo}
    by_path: dict = {}
    for c in cells:
        path = c.params.get("data", "synthetic")
        if path != "synthetic" and c.id not in todo_ids:
            by_path.setdefault(path, []).append(c.id)
    stale = {}
    for path, ids in by_path.items():
        ran, now = store.provenance(ids[0]), file_stamp(path)
        then = ran.get("data_stamp")  # None: written before stamps
        # a file this host sees, as the one that ran it did (another host's copy differs)
        if then is not None and now is not None and ran.get("host") == socket.gethostname() \
                and then != now:
            stale[path] = len(ids)
    return stale


class _Skip:
    """Which cells a concurrent sweep finished since this one listed DIR (a result this
    sweep is meant to replace counts only if written after this sweep started)."""

    def __init__(self, store: Store, replace: set, started_ns: int):
        self.store, self.replace, self.started_ns = store, replace, started_ns

    def __call__(self, ids: list[str]) -> set[str]:
        return {i for i, written in self.store.finished(ids).items()
                if i not in self.replace or written >= self.started_ns}


class _Pending:
    """Finished cells not yet written, with the claims they hold: written as one part
    when ``flush_seconds`` have passed since the oldest of them, or FLUSH_ROWS trace rows
    are waiting, and when the sweep ends; a claim is released once its cells are written."""

    def __init__(self, store: Store, sweep: dict, flush_seconds: float):
        self.store, self.sweep, self.seconds = store, sweep, flush_seconds
        self.results: list = []
        self.tokens: list = []
        self.rows, self.since = 0, None

    def add(self, cells: list, results: list, token: str) -> None:
        for cell, (row, trace, meta) in zip(cells, results):
            # the columns show what ran (a data file's d, not the grid's default; local_steps
            # 1 where unset; null where the cell ignores a parameter); the provenance keeps
            # the cell's parameters, those of its id
            ran = {"d": meta["run_config"]["d"]} if "run_config" in meta else {}
            ran |= {k: v for k, v in IMPLICIT.items() if k not in cell.params}
            ran |= dict.fromkeys(inapplicable(cell.params))
            self.results.append((cell.id, {**cell.params, **ran}, row, trace,
                                 {**meta, "sweep": self.sweep, "params": cell.params}))
            self.rows += 0 if trace is None else len(trace)
        self.tokens.append(token)
        self.since = time.monotonic() if self.since is None else self.since

    def due(self) -> bool:
        return self.since is not None and (
            time.monotonic() - self.since >= self.seconds or self.rows >= FLUSH_ROWS)

    def left(self) -> float | None:
        """Seconds until the waiting cells are due (None: none waits): the most the sweep
        waits for a task before writing them."""
        if self.since is None:
            return None
        return max(0.0, self.seconds - (time.monotonic() - self.since))

    def flush(self) -> None:
        if self.results:
            self.store.write(self.results)
        for token in self.tokens:
            self.store.release(token)
        self.results, self.tokens, self.rows, self.since = [], [], 0, None


class _InFlight:
    """The tasks submitted and not finished, in submission order, and their claims' states:
    the first ``slots`` can be running (backends start tasks in the order they get them),
    the others are queued."""

    def __init__(self, store: Store, slots: int):
        self.store, self.slots = store, slots
        self.tasks: dict = {}  # future -> (cells, claim token), in submission order
        self.running: set = set()

    def __len__(self) -> int:
        return len(self.tasks)

    def next_state(self) -> str:
        """The state of the claim of the next task submitted."""
        return "running" if len(self.tasks) < self.slots else "queued"

    def add(self, fut, cells: list, token: str, state: str) -> None:
        self.tasks[fut] = cells, token
        if state == "running":
            self.running.add(fut)

    def pop(self, fut) -> tuple[list, str]:
        """A finished task's cells and claim; the first queued task moves up to running."""
        task = self.tasks.pop(fut)
        self.running.discard(fut)
        for first in list(self.tasks)[:self.slots]:
            if first not in self.running:
                self.running.add(first)
                self.store.mark(self.tasks[first][1], "running")
        return task

    def cells(self) -> tuple[int, int]:
        """(running, queued) cell counts."""
        running = sum(len(self.tasks[f][0]) for f in self.running)
        return running, sum(len(c) for c, _ in self.tasks.values()) - running


def _dispatch(backend, planner: Planner, skip: _Skip, store: Store, pending: _Pending,
              report: SweepReport, threads: int, progress: bool) -> None:
    from tqdm import tqdm

    inflight = _InFlight(store, backend.slots)
    optimum = store.url("optimum")
    with tqdm(total=len(planner), unit="cell", disable=not progress or None, file=sys.stderr,
              dynamic_ncols=True, mininterval=0.5) as bar:

        def show():  # shown with the next update of the bar
            running, queued = inflight.cells()
            bar.set_postfix(failed=report.failed, diverged=report.status["diverged"],
                            running=running, queued=queued, refresh=False)

        while planner or inflight:
            while planner and len(inflight) < backend.capacity:
                state = inflight.next_state()
                task = planner.next_task()
                token, taken = store.claim([c.id for c in task], state)
                report.busy += len(task) - len(taken)
                done = skip(taken)
                if done:
                    store.narrow(token, [i for i in taken if i not in done])
                    report.skipped += len(done)
                keep = set(taken) - done
                cells = [c for c in task if c.id in keep]
                bar.update(len(task) - len(cells))
                if cells:
                    inflight.add(backend.submit([c.params for c in cells], threads, optimum),
                                 cells, token, state)
            show()
            if _stops:  # a signal's exception lost on the way
                raise _stops.pop()
            left = pending.left()
            for fut in backend.wait_any(list(inflight.tasks), POLL if left is None else left):
                cells, token = inflight.pop(fut)
                try:
                    results = backend.result(fut, len(cells))
                except LostTask as lost:  # free for a rerun (or a concurrent sweep)
                    store.release(token)
                    report.lost += len(cells)
                    report.lost_reason = report.lost_reason or str(lost)
                    report.lost_ids += [c.id for c in cells][:3 - len(report.lost_ids)]
                    bar.update(len(cells))
                    continue
                pending.add(cells, results, token)
                for cell, (row, _, _) in zip(cells, results):
                    report.add(cell.id, row)
                planner.observe(cells, [row for row, _, _ in results])
                show()
                bar.update(len(cells))
            if pending.due():
                pending.flush()
