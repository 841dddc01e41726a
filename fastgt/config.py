"""Defaults shared by the engine and the orchestration layer."""

from __future__ import annotations

import os
from pathlib import Path

#: a single run with fewer node-dimensions (n d) than this uses 1 thread when threads=None:
#: below it the per-step thread barrier costs more than the second thread brings (measured,
#: bench/bench_steps.py: GT at n = 300, d = 100 takes 1.9 ns/elem on 1 thread, 2.7 on 2; at
#: n = 3000, 2.1 vs 1.6)
SMALL_RUN = 100_000

#: compile flags of every kernel: error_model="numpy" lets loops with divisions vectorize,
#: "contract" allows FMA; no reassociation, so results do not depend on vector width choices
#: made across different reductions. Not inlined by force whoever calls it first (numba gives
#: a function its first caller's setting where it sets none, and INLINE_FLAGS' helpers call
#: a few kernels: rng.fill_normals stays a call).
NJIT_FLAGS = {"cache": True, "error_model": "numpy", "fastmath": {"contract"},
              "forceinline": False}
#: an algorithm's block function (kernels.steps.sweep): compiled without numba's reference
#: counting (NRT). It allocates nothing, only reads and writes views of arrays its caller
#: holds, and the counting numba adds for every array bound inside an inlined helper cost
#: more than the arithmetic at small d (measured, bench/bench_steps.py: GT Setup B at
#: d = 10 2.1x faster without it, D-SGD 1.8x; the same bits)
BLOCK_FLAGS = dict(NJIT_FLAGS, _nrt=False)
#: helpers with loops of their own (a row's mixing, update or gradient): numba compiles each
#: once per signature and process, LLVM optimizes it there (vectorizing its loops) and
#: inlines it at every call (forceinline: LLVM's alwaysinline). Inlined into numba's IR
#: instead, each call was a deep copy of the helper's IR through numba's passes again: 44%
#: of a cold compile (docs/performance.md, Start-up: GT's kernels for the problems with
#: data 52 s that way, 30 s this way; the same bits, the same step times). Not cached on
#: disk: its code is in every cached kernel that calls it, and its own cache index would
#: name the types of every problem family it was compiled for, a test's or a user's
#: module included, which a later process that cannot import it fails to read. No
#: reference counting (as BLOCK_FLAGS): numba then refuses to compile one that allocates
#: or returns a new array, and a helper is the same code whoever calls it first (numba
#: would give it its first caller's setting)
INLINE_FLAGS = dict(NJIT_FLAGS, cache=False, forceinline=True, _nrt=False)
#: the scalar bodies of loops (a coordinate's gradient, a normal pair, a key): inlined into
#: numba's IR, so that LLVM sees the loop around them whole before optimizing anything.
#: Optimized on its own first, the normal pair came back with its two values packed into
#: short vectors and the generator's loop around it no longer vectorized (steps with
#: gaussian noise 1.9-3.6x slower)
SCALAR_FLAGS = dict(NJIT_FLAGS, inline="always")

#: the element types a run's state may have (``dtype``, which its arithmetic follows):
#: float32 halves the state's memory and a step's traffic
DTYPES = ("float64", "float32")

#: a run counts as diverged when a metric is not finite or loss_nodes exceeds
#: DIVERGE_FACTOR * max(1, loss_nodes at step 0)
DIVERGE_FACTOR = 1e12


def cache_base() -> Path:
    """Root of fastgt's compile cache: $FASTGT_CACHE_DIR, else $NUMBA_CACHE_DIR, else ~/.cache/fastgt."""
    for var in ("FASTGT_CACHE_DIR", "NUMBA_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "fastgt"
