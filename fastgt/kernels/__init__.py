"""fastgt's compiled (numba) code: the generic kernels, which take plain arrays and
scalars (each algorithm's templates, in fastgt/algorithms/, and each problem's hooks, in
fastgt/problems/, are compiled per problem family: specialize.py).

Importing this package points numba's cache at a directory keyed by a hash of every
source file with numba code (numba itself only checks the jitted function's own file, and
would serve stale machine code after an edit to a helper in another file).
"""

from __future__ import annotations

import hashlib
import os
import platform
import warnings
from contextlib import contextmanager
from pathlib import Path

import llvmlite.binding as ll
import numba
import numpy as np

from ..config import cache_base
from ..errors import FastGTWarning, bad

#: the source files that decide the compiled code: the packages holding numba code (the
#: kernels, the algorithms' templates, the problems' hooks) and config.py, which holds the
#: compile flags (numba's own cache key has neither the flags nor other files: an edit to
#: either would load stale machine code). Any edit there, even to pure Python such as
#: algorithms/base.py, recompiles everything once.
SOURCES = ("kernels/*.py", "algorithms/*.py", "problems/*.py", "config.py")


def source_hash() -> str:
    h = hashlib.sha256()
    root = Path(__file__).parent.parent
    for f in sorted(f for pattern in SOURCES for f in root.glob(pattern)):
        h.update(f"{f.parent.name}/{f.name}".encode())
        h.update(f.read_bytes())
    h.update(f"{numba.__version__} {np.__version__} {platform.python_version()}".encode())
    return h.hexdigest()[:16]


CACHE_DIR = cache_base() / f"numba-{source_hash()}"


def configure_threading() -> None:
    """Deliberate defaults, each overridden by the user's own environment variable.

    - Layer: OpenMP first (workqueue is not safe for concurrent callers; tbb is rarely
      installed), then tbb, then workqueue.
    - Wait policy: passive. OpenMP's default spinning makes per-step barriers collapse when
      another process shares the cores (measured: 22 ns/elem instead of 3.5 for a 2-thread
      GT run at n = 300 beside a busy process); passive threads sleep at once.
    Must run before the first parallel kernel loads the OpenMP runtime.
    """
    if "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
        numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
    if not any(v in os.environ for v in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


configure_threading()

#: LLVM's names of the first AVX-512 generation (Skylake-SP, Cascade Lake, Cooper Lake), whose
#: cores lower their clock under 512-bit code: left at LLVM's choice unless asked
FIRST_AVX512 = ("skylake-avx512", "cascadelake", "cooperlake")
VECTOR_BITS = ("256", "512")


def configure_vectors() -> None:
    """512-bit vectors on a CPU with AVX-512, where LLVM would pick 256 (its tuning for Intel
    cores: every AVX-512 Intel CPU; AMD's Zen 4 and 5 get 512 anyway). Measured on an Intel
    Xeon of the Sapphire Rapids class (docs/performance.md): steps of the quadratic problems
    in 0.79-1.02x the time; data problems' steps, 1.02-1.24x slower at d = 50 that way, keep
    their gradients 256-bit (their gradient hook calls rounding.narrow_vectors).
    ``FASTGT_VECTOR_BITS=256`` or ``512`` chooses (on any AVX-512 CPU). numba's setting, for
    the whole process (numba code of the user's too), not the environment: child processes
    decide for themselves. Left alone (a FASTGT_VECTOR_BITS that cannot apply is warned
    of): a CPU name or features the user gave numba (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES, its
    config file or numba.config), a process where a numba function was decorated before
    fastgt's kernels were imported (numba fixed its features then), a CPU without AVX-512
    as numba sees it (NUMBA_ENABLE_AVX=0: none). Must run before this package's first numba
    decoration."""
    from numba.core import registry
    from numba.core.codegen import get_host_cpu_features

    bits = os.environ.get("FASTGT_VECTOR_BITS", "")
    if bits not in ("", *VECTOR_BITS):
        raise bad("FASTGT_VECTOR_BITS", bits, " or ".join(VECTOR_BITS) + " (unset: 512 where "
                  "the CPU has AVX-512, but for its first generation)")
    if numba.config.CPU_NAME is not None or numba.config.CPU_FEATURES is not None:
        why = "numba's CPU name or features given (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES) decide"
    elif "_toplevel_target_context" in vars(registry.cpu_target):
        why = ("a numba function was defined before fastgt's kernels were imported, which "
               "fixed numba's CPU features (import fastgt first)")
    else:
        # numba's own view of the host: "" where LLVM cannot tell, no AVX under
        # NUMBA_ENABLE_AVX=0
        host = get_host_cpu_features()
        if "+avx512f" in host.split(","):
            if bits or ll.get_host_cpu_name() not in FIRST_AVX512:
                tune = "+prefer-256-bit" if bits == "256" else "-prefer-256-bit"
                numba.config.CPU_FEATURES = f"{host},{tune}"
            return
        why = "the CPU has no AVX-512 (or numba's AVX is off)" if bits == "512" else None
    if bits and why:
        warnings.warn(f"FASTGT_VECTOR_BITS={bits} is not applied: {why}", FastGTWarning,
                      stacklevel=2)


configure_vectors()


@contextmanager
def fastgt_cache():
    """numba reads its cache directory when a function is decorated: functions decorated
    in this context cache under fastgt's directory; the user's own setting comes back."""
    user, numba.config.CACHE_DIR = numba.config.CACHE_DIR, str(CACHE_DIR)
    try:
        yield
    finally:
        numba.config.CACHE_DIR = user


def jit(**flags):
    """numba.njit(**flags), caching under fastgt's directory: for numba code outside this
    package (an algorithm's row update and block function)."""

    def decorate(fn):
        with fastgt_cache():
            return numba.njit(**flags)(fn)

    return decorate


with fastgt_cache():
    from . import metrics, mixing, oracles, pointers, rng, rows, steps  # noqa: F401
