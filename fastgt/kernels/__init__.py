"""The only compiled (numba) code of fastgt. Kernels take plain arrays and scalars.

Importing this package points numba's cache at a directory keyed by a hash of every
kernel source file (numba itself only checks the jitted function's own file, and would
serve stale machine code after an edit to a helper in another file).
"""

from __future__ import annotations

import hashlib
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
numba.config.CACHE_DIR = str(CACHE_DIR)
