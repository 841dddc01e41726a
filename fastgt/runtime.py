"""Thread control, threading-layer facts and compile-cache warm-up."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

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


def _kernels() -> list:
    """One compiled kernel of every kernel source file, by module name."""
    import types

    from numba.core.dispatcher import Dispatcher

    from . import kernels

    first = {}
    for mod in vars(kernels).values():
        if isinstance(mod, types.ModuleType) and mod.__name__.startswith(kernels.__name__ + "."):
            jitted = [v for v in vars(mod).values()
                      if isinstance(v, Dispatcher) and v.__module__ == mod.__name__]
            if jitted:
                first[mod.__name__] = jitted[0]
    return [first[k] for k in sorted(first)]


def _marker() -> tuple[Path, str]:
    """The marker file, and the text it holds once warmup() has compiled every kernel
    there: what numba's on-disk cache checks before it loads a kernel instead of compiling
    it, asked of numba's own cache locators (no public API: the dispatchers' ``_cache``).

    - Where: numba keeps a source file's entries in a subdirectory of the cache named
      after the file's directory path, so two copies of fastgt sharing FASTGT_CACHE_DIR (two
      checkouts, a checkout and an installed copy) each compile their own kernels once;
      the marker lives there too, one per copy.
    - What: each kernel file's source stamp (its content hash; mtime and size before numba
      0.61), which the entries' index must match, and the target machine (CPU name and
      features), by which the index keys machine code.
    """
    ks = _kernels()
    locators = [k._cache._impl.locator for k in ks]
    stamps = [f"{Path(k.py_func.__code__.co_filename).name} {loc.get_source_stamp()!r}"
              for k, loc in zip(ks, locators)]
    machine = repr(ks[0].targetctx.codegen().magic_tuple())
    return Path(locators[0].get_cache_path()) / "fastgt-warm", "\n".join([*stamps, machine])


def is_warm() -> bool:
    """Whether the compile cache holds every kernel for this copy of fastgt (its sources
    and their place) and this machine: whether a run would load them, not compile."""
    if not _state["warm"]:
        m, text = _marker()
        _state["warm"] = m.exists() and m.read_text() == text
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
    m, text = _marker()
    m.parent.mkdir(parents=True, exist_ok=True)
    m.write_text(text)
    _state["warm"] = True
    dt = time.perf_counter() - t
    if verbose:
        print(f"fastgt kernels ready in {dt:.1f} s (cache: {cache_dir()})")
    return dt


def ensure_warm() -> None:
    """Compile every kernel now if this machine has not yet for this copy of fastgt, saying
    so (the announcement appears exactly when numba compiles, see _marker)."""
    if _state["warming"] or is_warm():
        return
    print("fastgt: compiling the kernels once for this machine (about 10-30 s; "
          "`fastgt warmup` does it ahead)...", file=sys.stderr, flush=True)
    warmup()


def cache_dir() -> str:
    from .kernels import CACHE_DIR

    return str(CACHE_DIR)
