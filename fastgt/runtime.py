"""Thread control, threading-layer facts and compile-cache warm-up."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import numba

from .errors import check_int


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

    (Filling a cold cache in two processes, a helper compiling part of the kernels, was
    tried and measured 18-24 s against 21-26 s in one on this 2-vCPU host: not kept.)
    """
    from . import run, run_batch
    from .topology import topology

    t = time.perf_counter()
    _state["warming"] = True
    try:
        W = topology("ring", n=8)
        for algo in ("gt", "dsgd"):
            for noise, prob in (("gaussian", "quadratic"), ("structured", "hetero_quadratic")):
                run(algorithm=algo, topology=W, problem=prob, noise=noise, d=3, steps=2,
                    record_every=1, stepsize=0.01)
            run_batch([{"topology": W}, {"topology": W, "seed": 1}], algorithm=algo, d=3,
                      steps=2, parallel="cells")
        run(algorithm="gt", topology=topology("complete", n=8), d=3, steps=2, record_every=1)
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


def ensure_warm() -> None:
    """Compile every kernel now if this machine has not yet, saying so (once per machine)."""
    if _state["warming"] or is_warm():
        return
    print("fastgt: compiling the kernels once for this machine (about 10-30 s; "
          "`fastgt warmup` does it ahead)...", file=sys.stderr, flush=True)
    warmup()


def cache_dir() -> str:
    from .kernels import CACHE_DIR

    return str(CACHE_DIR)
