"""Running the cells of a sweep: one dispatch loop over a backend (backends.py: local
processes or Dask). The driver
(this process) claims each cell just before submitting it, writes each result atomically as
it arrives and releases the claim: a killed sweep loses only the cells in flight, at most
one task (bounded by its estimated run time, fastgt.sweep.tasks) per worker, one queued task and
the task whose results were being written.
A claim says whether its cell is queued or running: backends start tasks in the order they
get them, so of the tasks in flight the first ``slots`` (one per worker) are running.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import TYPE_CHECKING

from ..data import file_stamp
from ..errors import check_float
from ..params import IMPLICIT, inapplicable
from ..runtime import signals_deferred
from .backends import LostTask, check_options, make_backend
from .report import SweepReport
from .signals import stops
from .tasks import FLUSH_ROWS, FLUSH_SECONDS, MAX_BATCH, TASK_SECONDS, Planner, check_memory_at_once

if TYPE_CHECKING:
    from .storage import Store

#: longest wait for a task, in seconds, between two looks at signals.stops
POLL = 1.0


def _drift_notes(units) -> None:
    """The warning a float32 run of D² or EXTRA gives, once per algorithm of the sweep, by
    the driver (the workers' runs say nothing)."""
    from ..algorithms import ALGORITHMS
    from ..algorithms.base import warn_drift

    for algo, dtype in sorted({(a, dtype) for a, _, dtype in units}):
        warn_drift(ALGORITHMS[algo], dtype)


# --------------------------------------------------------------------------- the sweep


def run_sweep(cells, out, executor: str = "local", workers: int | None = None,
              threads: int = 1, scheduler: str | None = None, force: bool = False,
              retry_failed: bool = False, spec_text: str | None = None,
              progress: bool = True, max_batch: int = MAX_BATCH,
              task_seconds: float = TASK_SECONDS,
              flush_seconds: float = FLUSH_SECONDS, held=()) -> SweepReport:
    """Compute every cell not yet in ``out`` and write their results; see the module doc.

    force: recompute finished cells too (not those a concurrent sweep finished meanwhile);
    retry_failed: recompute cells recorded as failed. max_batch: most cells in one task;
    task_seconds: most estimated seconds of work in one task (at least one cell), see
    fastgt.sweep.tasks; flush_seconds: finished cells are written, as one file pair, at
    least this often. When every cell is done, the files are compacted (Store.compact).
    held: values derived while the cells were checked (fastgt.derived.cache_in's list),
    kept in DIR once the workers are up.
    Ctrl-C (KeyboardInterrupt) stops the workers, writes the finished cells, releases this
    sweep's claims and propagates, the report as its ``sweep_report``.
    """
    workers, threads, max_batch, flush_seconds = check_options(
        executor, scheduler, workers, threads, max_batch, flush_seconds)  # before DIR
    task_seconds = check_float("task_seconds", task_seconds, 0.0, lo_open=True)
    t0, t0_ns = time.time(), time.time_ns()
    stops.clear()
    from .storage import Store  # pyarrow and pandas only for sweeps

    store = Store(out, create=False)  # read only until the workers are up: a scheduler
    report = SweepReport(total=len(cells))  # that cannot be reached changes nothing in DIR
    todo, replace = _todo(cells, store, force, retry_failed, report)
    report.skipped = len(cells) - len(todo)
    if executor == "local" or scheduler in (None, "local"):  # the workers share this machine
        check_memory_at_once(todo, workers)
    report.stale = _stale_data(cells, todo, store)
    sweep = {"started": t0, "executor": executor, "workers": workers,
             "threads_per_worker": threads, "scheduler": scheduler, "driver_pid": os.getpid()}
    try:  # whichever KeyboardInterrupt leaves: the first, or one during the clean-up
        _work(cells, todo, replace, out, store, report, sweep, spec_text, t0_ns,
              (executor, workers, threads, scheduler), progress,
              (max_batch, task_seconds, flush_seconds), held)
    except KeyboardInterrupt as stop:
        stop.sweep_report = report
        raise
    finally:
        report.elapsed = time.time() - t0
    if stops:  # a stop whose exception was lost after the loop
        stop = stops.pop()
        stop.sweep_report = report
        raise stop
    return report


def _work(cells, todo, replace, out, store, report, sweep, spec_text, t0_ns, how, progress,
          sizes, held) -> None:
    """run_sweep's work, once it knows the cells to compute: ``how`` = (executor, workers,
    threads, scheduler), ``sizes`` = (max_batch, task_seconds, flush_seconds)."""
    from ..derived import keep_all
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
        keep_all(store.url(""), held)
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
            with signals_deferred():  # a second Ctrl-C waits for the workers to stop
                backend.close(terminate=True)
            backend = None
        raise
    finally:
        with signals_deferred():  # finished work is never lost, whatever stopped the sweep
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
    older = store.older_ids() if done else set()
    report.others, report.older = len(done - older - {c.id for c in cells}), len(older)
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
    derived = store.url("")  # DIR: fastgt/derived.py
    with tqdm(total=len(planner), unit="cell", disable=not progress or None, file=sys.stderr,
              dynamic_ncols=True, mininterval=0.5) as bar:

        shown = {}

        def show():
            """The counts, once the next tasks are submitted (right after a task ends, the
            queued one has always just started: none queued); redrawn when they change."""
            running, queued = inflight.cells()
            counts = {"failed": report.failed, "diverged": report.status["diverged"],
                      "running": running, "queued": queued}
            if counts != shown:
                shown.update(counts)
                bar.set_postfix(**counts)

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
                    inflight.add(backend.submit([c.params for c in cells], threads, derived),
                                 cells, token, state)
            show()
            if stops:  # a signal's exception lost on the way
                raise stops.pop()
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
                bar.update(len(cells))
            if pending.due():
                pending.flush()
        show()  # the last counts, none running
