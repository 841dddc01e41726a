"""Compile-cache warm-up: every kernel compiled (or loaded) once per machine and copy of
fastgt, announced exactly when numba will compile (fastgt.runtime.is_warm). It runs the
engine (fastgt.engine) on tiny batches; the public API (fastgt.run) calls ``ensure_warm``
after checking its arguments, sweeps before starting their workers."""

from __future__ import annotations

import sys
import time

from . import runtime
from .algorithms import ALGORITHMS
from .engine import execute, prepare
from .topology import topology


def warmup(verbose: bool = False, algorithms=None) -> float:
    """Compile (or load from the cache) the kernels of ``algorithms`` (default: all) with
    the argument types runs use, and mark each warm; returns the seconds taken. The
    kernels every algorithm shares compile with the first.

    (Filling a cold cache in two processes, a helper compiling part of the kernels, was
    tried and measured 18-24 s against 21-26 s in one on this 2-vCPU host: not kept.)
    """
    t = time.perf_counter()
    W = topology("ring", n=8)
    for algo in ALGORITHMS if algorithms is None else algorithms:
        for noise, prob in (("gaussian", "quadratic"), ("structured", "hetero_quadratic")):
            execute(prepare([{"topology": W}], algo, prob, noise, d=3, steps=2,
                            record_every=1), threads=1)
        execute(prepare([{"topology": W}, {"topology": W, "seed": 1}], algo, d=3, steps=2,
                        parallel="cells"))
        execute(prepare([{"topology": topology("complete", n=8)}], algo, d=3, steps=2,
                        record_every=1), threads=1)
        runtime.mark_warm(algo)
    dt = time.perf_counter() - t
    if verbose:
        print(f"fastgt kernels ready in {dt:.1f} s (cache: {runtime.cache_dir()})")
    return dt


def ensure_warm(algorithms=("gt",)) -> None:
    """Compile the kernels of ``algorithms`` now if this machine has not yet for this copy
    of fastgt, saying so (the announcement appears exactly when numba compiles, see
    runtime._marker)."""
    cold = [a for a in dict.fromkeys(algorithms) if not runtime.is_warm(a)]
    if not cold:
        return
    print(f"fastgt: compiling the kernels of {', '.join(cold)} once for this machine (about "
          "10-20 s; `fastgt warmup` does it ahead)...", file=sys.stderr, flush=True)
    warmup(algorithms=cold)
