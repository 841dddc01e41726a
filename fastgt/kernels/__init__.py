"""The only compiled (numba) code of fastgt. Kernels take plain arrays and scalars.

Importing this package points numba's cache at a directory keyed by a hash of every
kernel source file (numba itself only checks the jitted function's own file, and would
serve stale machine code after an edit to a helper in another file).
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

import numba
import numpy as np

from ..config import cache_base


def source_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode())
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

# numba reads its cache directory when a function is decorated: define every kernel under
# fastgt's directory, then give the user's own setting back
_user_cache_dir, numba.config.CACHE_DIR = numba.config.CACHE_DIR, str(CACHE_DIR)
try:
    from . import metrics, mixing, oracles, rng, steps  # noqa: F401
finally:
    numba.config.CACHE_DIR = _user_cache_dir
