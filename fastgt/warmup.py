"""Compile-cache warm-up: every kernel compiled (or loaded) once per machine and copy of
fastgt, announced exactly when numba will compile (fastgt.runtime.is_warm). It runs the
engine (fastgt.engine) on tiny batches; the public API (fastgt.run) calls ``ensure_warm``
after checking its arguments, sweeps before starting their workers. Each problem family
(kernels/oracles.py: ProblemKernels) compiles its own copies of the kernels, warmed apart."""

from __future__ import annotations

import sys
import time
import warnings

from . import runtime
from .algorithms import ALGORITHMS
from .derived import cache_in
from .engine import execute, prepare
from .errors import FastGTWarning
from .problems import problem as get_problem
from .problems.quadratic import KERNELS as QUADRATIC
from .topology import topology

#: a run big enough for the paths a small one skips, which would otherwise compile
#: unannounced in a machine's first big run (measured 4.1-4.5 s at n = 2 10^5, d = 100): the
#: row-parallel init and record loops (kernels/mixing.big: n dp >= SMALL_RUN elements) and a
#: temporal plan's bandwidth (kernels/temporal.plan: a ring's state array of >= MIN_BYTES,
#: rows of >= SHORT_ROW bytes), float32 states too, with margin (tests/api/test_warmup.py).
#: Its problem is the family's first warm one with the family's ``big`` parameters.
BIG = {"n": 2048, "d": 192}


def warmup(algorithms=None, kernels=QUADRATIC, dtype: str = "float64") -> float:
    """Compile (or load from the cache) the kernels of ``algorithms`` (default: all) on the
    problem family of ``kernels`` with the argument types runs use, for a state of
    ``dtype``, and mark each warm; returns the seconds taken. The kernels every algorithm
    shares compile with the first.

    (Filling a cold cache in two processes, a helper compiling part of the kernels, was
    tried and measured 18-24 s against 21-26 s in one on this 2-vCPU host: not kept.)
    """
    # its tiny problems' optima belong to no sweep; its runs' warnings (D² in float32) to
    # no user run
    with cache_in(None), warnings.catch_warnings():
        warnings.simplefilter("ignore", FastGTWarning)
        return _warmup(algorithms, kernels, dtype)


def unit(algorithm: str, dtype: str) -> str:
    """The name under which ``algorithm``'s kernels for a state of ``dtype`` are marked warm
    (float32 states compile copies of their own)."""
    return algorithm if dtype == "float64" else f"{algorithm}-{dtype}"


def _warmup(algorithms, kernels, dtype: str) -> float:
    t = time.perf_counter()
    W, Wbig = topology("ring", n=8), topology("ring", n=BIG["n"])
    (prob0, noise0), rest = kernels.warm[0], kernels.warm[1:]
    for algo in ALGORITHMS if algorithms is None else algorithms:
        for prob, noise in ((prob0, noise0), *rest):
            execute(prepare([{"topology": W}], algo, prob, noise, d=3, steps=2,
                            record_every=1, dtype=dtype), threads=1)
        execute(prepare([{"topology": W}, {"topology": W, "seed": 1}], algo, prob0, noise0,
                        d=3, steps=2, parallel="cells", dtype=dtype))
        execute(prepare([{"topology": topology("complete", n=8)}], algo, prob0, noise0, d=3,
                        steps=2, record_every=1, dtype=dtype), threads=1)
        execute(prepare([{"topology": Wbig}], algo, get_problem(prob0, **kernels.big), noise0,
                        d=BIG["d"], steps=2, record_every=1, dtype=dtype), threads=1)
        runtime.mark_warm(unit(algo, dtype), kernels)
    return time.perf_counter() - t


def kernels_of(problem: str):
    """The problem family (ProblemKernels) of a registered problem's name."""
    return get_problem(problem).build(8, 3).kernels


def families() -> list[tuple]:
    """The problem families of the registered problems that have warm-up runs, each as
    (ProblemKernels, the names of its problems)."""
    from .problems import PROBLEMS

    found = {}
    for name in PROBLEMS:
        kernels = kernels_of(name)
        if kernels.warm:
            found.setdefault(kernels.family, (kernels, []))[1].append(name)
    return list(found.values())


def ensure_warm(algorithms=("gt",), kernels=QUADRATIC, dtype: str = "float64") -> None:
    """Compile the kernels of ``algorithms`` on the family of ``kernels`` (for a state of
    ``dtype``) now if this machine has not yet for this copy of fastgt, saying so (the
    announcement appears exactly when numba compiles, see runtime._marker). A family
    without warm-up runs compiles on first use."""
    if not kernels.warm:
        return
    cold = [a for a in dict.fromkeys(algorithms) if not runtime.is_warm(unit(a, dtype), kernels)]
    if not cold:
        return
    what = "" if kernels is QUADRATIC else f" for {kernels.family} problems"
    what += "" if dtype == "float64" else f" ({dtype})"
    ahead = "`fastgt warmup" + ("" if dtype == "float64" else f" --dtype {dtype}") + "`"
    print(f"fastgt: compiling the kernels of {', '.join(cold)}{what} once for this machine "
          f"(about 10-30 s; {ahead} does it ahead)...", file=sys.stderr, flush=True)
    warmup(algorithms=cold, kernels=kernels, dtype=dtype)
