"""Thread control, threading-layer facts and compile-cache warm-up."""

from __future__ import annotations

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


def warmup(verbose: bool = False) -> float:
    """Compile (or load from cache) every kernel with the argument types runs use; seconds taken."""
    from . import run
    from .topology import topology

    t = time.perf_counter()
    W = topology("ring", n=8)
    for algo in ("gt", "dsgd"):
        for noise, prob in (("gaussian", "quadratic"), ("structured", "hetero_quadratic")):
            run(algorithm=algo, topology=W, problem=prob, noise=noise, d=3, steps=2,
                record_every=1, stepsize=0.01)
    run(algorithm="gt", topology=topology("complete", n=8), d=3, steps=2, record_every=1)
    dt = time.perf_counter() - t
    if verbose:
        print(f"fastgt kernels ready in {dt:.1f} s (cache: {cache_dir()})")
    return dt


def cache_dir() -> str:
    from .kernels import CACHE_DIR

    return str(CACHE_DIR)
