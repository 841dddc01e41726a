"""Slow subprocess work done beside the other tests: the tests of a cold compile cache each
spend a minute in child processes compiling every kernel, on one core, while the rest of the
suite runs its tiny problems on one thread. A test marked
``@pytest.mark.background.with_args(job)`` (with_args: a bare function argument would be
decorated by the mark instead) has ``job(path)`` (``path``: an empty directory of its own)
started when collection ends, on one worker thread, jobs in collection order; the test
itself is moved to the end of the session, where its ``background_result`` fixture
(tests/conftest.py) waits for what ``job`` returned (or raises what it raised). Jobs run
their children with ``run``, so that an interrupted session stops them."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_pool: ThreadPoolExecutor | None = None
_futures: dict[str, Future] = {}
_children: set[subprocess.Popen] = set()
_lock = threading.Lock()
_stopping = threading.Event()
_root: Path | None = None


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, capture_output=True, text=True, **kwargs), killed when the
    session ends first; a failed child raises with its stderr."""
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          **kwargs) as proc:
        with _lock:
            _children.add(proc)
            if _stopping.is_set():
                proc.kill()
        try:
            out, err = proc.communicate()
        finally:
            with _lock:
                _children.discard(proc)
    if proc.returncode:
        raise RuntimeError(f"{args} exited with {proc.returncode}:\n{err}")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def start(items: list, launch: bool = True) -> list:
    """Start the jobs of the marked items among ``items`` (if ``launch``); return
    ``items`` with those last."""
    global _pool, _root
    marked = [item for item in items if item.get_closest_marker("background")]
    if not marked or not launch:
        return [item for item in items if item not in marked] + marked
    _root = Path(tempfile.mkdtemp(prefix="fastgt-background-"))
    _pool = ThreadPoolExecutor(1, thread_name_prefix="background")
    for k, item in enumerate(marked):
        job = item.get_closest_marker("background").args[0]
        path = _root / str(k)
        path.mkdir()
        _futures[item.nodeid] = _pool.submit(job, path)
    return [item for item in items if item not in marked] + marked


def result(nodeid: str):
    """What the job of the test ``nodeid`` returned, once it has."""
    return _futures[nodeid].result()


def stop() -> None:
    """Cancel the jobs not started, kill the children running, remove the directories."""
    if _pool is None:
        return
    for future in _futures.values():
        future.cancel()
    with _lock:
        _stopping.set()
        for proc in _children:
            proc.kill()
    _pool.shutdown(wait=True)
    shutil.rmtree(_root, ignore_errors=True)
