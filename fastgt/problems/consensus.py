"""The consensus problem of the paper's Theorem 2: f_i(x) = 1/2 ||x - mu_i||^2."""

from __future__ import annotations

import numpy as np

from ..errors import check_float, check_int
from .quadratic import DiagonalQuadratic, _array


def consensus(n: int, d: int, mu=None, zeta: float = 1.0, seed: int = 0) -> DiagonalQuadratic:
    """x* = mean(mu_i). Drawn when not given: mu_i ~ N(0, zeta^2 / d I), so that the
    heterogeneity (1/n) sum_i ||grad f_i(x*)||^2 is about zeta^2."""
    if mu is None:
        zeta = check_float("zeta", zeta, 0.0)
        mu = np.random.default_rng([check_int("seed", seed, 0), 0xC05]).normal(0.0, zeta / np.sqrt(d), size=(n, d))
    mu = _array("mu", mu, n, d)
    const = 0.5 * float(np.mean(np.sum(mu**2, axis=1)))
    return DiagonalQuadratic("consensus", n, d, A=np.ones((n, d)), B=mu.copy(), const=const)


PROBLEMS = {"consensus": consensus}
