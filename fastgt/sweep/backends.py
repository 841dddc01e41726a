"""The two backends of a sweep's dispatch loop (executors.run_sweep) and the one place
that picks one (make_backend).

- ``local``: a process pool started with ``forkserver`` (or ``spawn``; never ``fork``: numba's
  OpenMP pool does not survive a fork), ``workers`` processes x ``threads`` numba threads.
- ``dask``: any ``dask.distributed`` cluster (``scheduler="tcp://host:port"``) or a
  ``LocalCluster`` bound to 127.0.0.1 (``scheduler="local"``); dask is an optional extra,
  imported only here, only when asked for.

Every worker gets NUMBA_NUM_THREADS / OMP_NUM_THREADS / ... = ``threads`` in its environment
before it imports numba, and every task runs under ``numba_threads(threads)``, so the thread
count is enforced, not just requested (the cell row records the count that ran). A backend
has ``slots`` (tasks running at once), ``capacity`` (tasks in flight), ``submit``,
``wait_any``, ``result`` (a LostTask when the task's worker died) and ``close``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import math
import os
import re
import sys

from ..errors import FastGTError, check_choice, check_float, check_int
from ..runtime import signals_deferred
from .cellrun import THREAD_ENV, one_line, ping, run_cells, warm_cache, worker_init

EXECUTORS = ("local", "dask")
DASK_HINT = "pip install 'fastgt[dask]'"


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


#: Dask's errors of a task whose worker died or that the cluster dropped (by class name:
#: where they live moves between releases)
DASK_LOST = {"KilledWorker", "CommClosedError", "CancelledError", "FutureCancelledError",
             "FuturesCancelledError"}


def _lost(err: BaseException) -> bool:
    """Whether a Dask error says the task's worker or future is gone (DASK_LOST)."""
    return bool({t.__name__ for t in type(err).__mro__} & DASK_LOST)


def quiet_interrupted_sync(record: logging.LogRecord) -> bool:
    """A logging filter for the driver's ``tornado.application`` logger: False (drop) for the
    NameError of distributed's ``sync`` when Ctrl-C lands before the call it waits for has
    started on the event loop (its ``cancel`` callback reads the call's future before it is
    set; distributed 2026.8). The interrupt goes on as asked; the traceback, printed under the
    driver's "interrupted" line, was seen now and then (a race with the Ctrl-C)."""
    err = record.exc_info[1] if record.exc_info else None
    if not isinstance(err, NameError) or "future" not in str(err) or err.__traceback__ is None:
        return True
    tb = err.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return not (code.co_name == "cancel"
                and code.co_filename.endswith(os.path.join("distributed", "utils.py")))


def quiet_cancelled_gather(record: logging.LogRecord) -> bool:
    """A logging filter for the ``distributed.scheduler`` logger of the driver's own
    LocalCluster, installed as an interrupted sweep cancels its tasks: False (drop) for the
    scheduler's error on a gather of keys it has just forgotten (those tasks, cancelled),
    seen now and then under the driver's "interrupted" line on a busy host (a race with the
    cancel)."""
    return not record.getMessage().startswith("Couldn't gather keys")


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
                with signals_deferred():
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
        logging.getLogger("tornado.application").addFilter(quiet_interrupted_sync)
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
            if scheduler != "local":
                _reachable(address)
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
                logging.getLogger("distributed.scheduler").addFilter(quiet_cancelled_gather)
                self.client.cancel(list(self.futures))
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


#: a Dask scheduler's address: [PROTOCOL://]HOST:PORT
_ADDRESS = re.compile(r"^(?:[a-z]+://)?[^\s:/]+:\d+$")
_TCP = re.compile(r"^(?:tcp://)?([^\s:/]+):(\d+)$")


def _reachable(address: str) -> None:
    """Raise OSError at once when a tcp:// scheduler's host is unknown or its port refuses
    connections: Dask's Client retries those for its whole timeout (20 s for a mistyped
    address, a trial found). Other protocols are left to the Client."""
    import socket

    m = _TCP.match(address)
    if m:
        socket.create_connection((m[1], int(m[2])), timeout=10).close()


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
            # a worker on this machine (local, or a LocalCluster's) has its cores at most,
            # as fastgt.run; a remote Dask cluster's workers may have more
            check_int("threads_per_worker", threads, 1,
                      usable if executor == "local" or scheduler in (None, "local") else None),
            check_int("max_batch", max_batch, 1),
            check_float("flush_seconds", flush_seconds, 0.0))


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
