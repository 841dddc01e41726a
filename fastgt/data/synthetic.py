"""Synthetic data: features a ~ N(0, I/d) (so that ||a||^2 is about 1 at any d, and the
problems' smoothness does not grow with d), targets from a planted x ~ N(0, I) (margins
a^T x about N(0, 1)).

- regression: b = a^T x + N(0, noise^2);
- classification: y = sign(a^T x), each label flipped with probability ``label_noise``.
"""

from __future__ import annotations

import numpy as np


def synthetic(rows: int, d: int, classification: bool, label_noise: float,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(features (rows, d), targets (rows,)): labels +-1.0 when ``classification``."""
    A = rng.normal(0.0, 1.0 / np.sqrt(d), size=(rows, d))
    planted = rng.normal(size=d)
    z = A @ planted
    if classification:
        y = np.where(z >= 0.0, 1.0, -1.0)
        y[rng.random(rows) < label_noise] *= -1.0
    else:
        y = z + rng.normal(0.0, label_noise, size=rows)
    return A, y
