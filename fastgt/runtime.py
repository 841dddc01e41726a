"""Thread control, threading-layer facts and compile-cache warm-up."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import numba

from .errors import check_int


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def max_threads() -> int:
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def numba_threads(threads: int | None):
    """Run the body with ``threads`` numba threads (None: leave as is), restoring after."""
    if threads is None:
        yield numba.get_num_threads()
        return
    threads = check_int("threads", threads, 1, max_threads())
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield threads
    finally:
        numba.set_num_threads(old)


def threading_layer() -> str:
    """The layer numba picked (only known once a parallel kernel ran)."""
    try:
        return numba.threading_layer()
    except ValueError:
        return "not initialised"


_state = {"warm": False, "warming": False}


def _stamp() -> str:
    """Size and mtime of every kernel source: what numba's cache index checks too."""
    from pathlib import Path

    from . import kernels

    files = sorted(Path(kernels.__file__).parent.glob("*.py"))
    return " ".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)


def _marker():
    from pathlib import Path

    return Path(cache_dir()) / "fastgt-warm"


def is_warm() -> bool:
    """Whether the compile cache holds every kernel for the current sources."""
    if not _state["warm"]:
        m = _marker()
        _state["warm"] = m.exists() and m.read_text() == _stamp()
    return _state["warm"]


def warmup(verbose: bool = False) -> float:
    """Compile (or load from the cache) every kernel with the argument types runs use, and
    mark the cache warm; returns the seconds taken.

    A cold cache is filled by two processes at once: a helper compiles the step functions
    that ``run_steps`` calls while this process compiles the kernels runs call before their
    first step; then ``run_steps`` itself (its callees now load from the cache), and every
    run shape is replayed. On a 2-core Zen 3: 18-21 s, against 21-22 s in one process.
    """
    t = time.perf_counter()
    _state["warming"] = True
    try:
        helper = None if is_warm() else _start_helper()
        if helper is not None:
            try:
                _warm_runs(steps=0)
            finally:
                _join(helper)
        _compile_steps()
        _warm_runs(steps=2)
    finally:
        _state["warming"] = False
    m = _marker()
    m.parent.mkdir(parents=True, exist_ok=True)
    m.write_text(_stamp())
    _state["warm"] = True
    dt = time.perf_counter() - t
    if verbose:
        print(f"fastgt kernels ready in {dt:.1f} s (cache: {cache_dir()})")
    return dt


def _warm_runs(steps: int) -> None:
    """Every kind of run once, on a tiny problem. With steps=0 a run never advances, so
    every kernel but run_steps is compiled (the helper's share of a cold warm-up)."""
    from . import run, run_batch
    from .topology import topology

    W = topology("ring", n=8)
    for algo in ("gt", "dsgd"):
        for noise, prob in (("gaussian", "quadratic"), ("structured", "hetero_quadratic")):
            run(algorithm=algo, topology=W, problem=prob, noise=noise, d=3, steps=steps,
                record_every=1, stepsize=0.01)
        run_batch([{"topology": W}, {"topology": W, "seed": 1}], algorithm=algo, d=3,
                  steps=steps, parallel="cells")
    run(algorithm="gt", topology=topology("complete", n=8), d=3, steps=steps, record_every=1)


def _compile_steps(callees_only: bool = False) -> None:
    """Compile run_steps (or only the step functions it calls): advance a tiny batch's
    uninitialised arrays by 0 steps (or over an empty range of row blocks). The argument
    types are the same for every algorithm, noise and topology."""
    from .algorithms import Batch, Cell, algorithm
    from .kernels import steps
    from .problems import make_noise, problem
    from .topology import topology

    W = topology("ring", n=8)
    batch = Batch([Cell(W, make_noise("gaussian", 1.0, 3, W), 0.01, 0)],
                  problem("quadratic").build(W.n, 3))
    gt = algorithm("gt")
    if not callees_only:
        gt.advance(batch, gt.alloc(batch), 0, 0, 0, True)
        return
    state = gt.alloc(batch) + (batch.scratch, batch.part, batch.means)
    steps.step_begin(0, 1, batch.oracle)
    steps.step_blocks(gt.code, 0, 1, 0, 0, 0, False, state, batch.mix, batch.oracle)
    steps.step_end(gt.code, 0, state, batch.mix)


def package_env() -> dict:
    """Environment for child Pythons (``-c`` commands, the forkserver) that must import this
    very fastgt: its directory first on PYTHONPATH, and PYTHONSAFEPATH so that the working
    directory is not put before it (a source checkout beside an installed copy would
    otherwise be imported instead, with other file times, and compile a cache of its own)."""
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    return {"PYTHONSAFEPATH": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}


def _start_helper():
    """A process compiling every kernel but run_steps into the cache (None on one core)."""
    import os
    import subprocess

    if usable_cpus() < 2:
        return None
    try:
        return subprocess.Popen([sys.executable, "-c", "from fastgt.runtime import helper; helper()"],
                                env=dict(os.environ, **package_env()), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None  # this process compiles everything itself


def helper() -> None:
    """The helper process's work (never starting a helper of its own)."""
    _state["warming"] = True
    _compile_steps(callees_only=True)


def _join(helper) -> None:
    """Wait for the helper (it finishes first); whatever it did not compile, this process will."""
    import subprocess

    try:
        helper.wait(timeout=300)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


def ensure_warm() -> None:
    """Compile every kernel now if this machine has not yet, saying so (once per machine)."""
    if _state["warming"] or is_warm():
        return
    print("fastgt: compiling the kernels once for this machine (about 10-25 s; "
          "`fastgt warmup` does it ahead)...", file=sys.stderr, flush=True)
    warmup()


def cache_dir() -> str:
    from .kernels import CACHE_DIR

    return str(CACHE_DIR)
