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
#: made across different reductions.
NJIT_FLAGS = {"cache": True, "error_model": "numpy", "fastmath": {"contract"}}
#: an algorithm's block function (kernels.steps.sweep): compiled without numba's reference
#: counting (NRT). It allocates nothing, only reads and writes views of arrays its caller
#: holds, and the counting numba adds for every array bound inside an inlined helper cost
#: more than the arithmetic at small d (measured, bench/bench_steps.py: GT Setup B at
#: d = 10 2.1x faster without it, D-SGD 1.8x; the same bits)
BLOCK_FLAGS = dict(NJIT_FLAGS, _nrt=False)
#: small helpers are inlined at numba-IR level, so that LLVM sees (and vectorizes) whole loops
INLINE_FLAGS = dict(NJIT_FLAGS, inline="always")

#: the element types a run's state may have (``dtype``; arithmetic is float64 either way):
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
