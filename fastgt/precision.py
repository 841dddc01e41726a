"""What a float32 state's rounding does to the recorded metrics (dtype="float32"): the floor
each metric's plateau cannot go below, and the metrics a run's plateau puts on it.

Every step rounds every stored element, by up to half an ulp. Modelled conservatively as an
independent perturbation e of random signs and size eps = one ulp of the state's rms
magnitude (over X and Y: Y's roundings move xbar through GT's tracking), a step changes each
metric, to second order and in expectation, by

    consensus, tracking   d eps^2 (1 - 1/n)
    loss_nodes            tr(H) eps^2 / 2
    loss_avg              tr(H) eps^2 / (2 n)
    grad_norm2            tr(H^2) eps^2 / n

(H: f's Hessian at xbar, Problem.hessian_traces). A recursion whose modes do not expand
accumulates the variance of such perturbations at most linearly in the steps (GT's
tracking invariant ybar = gbar, a marginal mode, exactly so), so after ``steps`` steps a
plateau below ROUNDING_MARGIN x steps x that is the state's rounding, not the algorithm.
D² and EXTRA pile roundings up in their mean's velocity, which this does not model: they
warn on every float32 run (algorithms.base.DRIFT), and their metrics of xbar are always
listed.
"""

from __future__ import annotations

import warnings

import numpy as np

from .errors import FastGTWarning, caller_level
from .kernels.metrics import KERNEL_METRICS

#: a plateau within this factor of its accumulated floor counts as rounding-limited
#: (calibrated on the float32 runs of docs/engine.md: the noise-driven plateaus of Setup A
#: sit >= 400x above it at gamma = 1e-3, floors reached by rounding below it)
ROUNDING_MARGIN = 100.0


def step_floors(X: np.ndarray, Y: np.ndarray | None, consensus: float, tracking: float,
                problem) -> dict:
    """Each kernel metric's change per step from the rounding of a state X (and Y) of n x d
    values, whose consensus and tracking are given (they make the mean squares without
    another pass): the table of the module docstring."""
    n, d = X.shape
    xbar = X.mean(axis=0, dtype=np.float64)
    squares = [consensus + xbar @ xbar]  # (1/n) sum_i ||x_i||^2, and y's
    if Y is not None:
        ybar = Y.mean(axis=0, dtype=np.float64)
        squares.append(tracking + ybar @ ybar)
    eps2 = float(np.spacing(np.float32(np.sqrt(np.mean(squares) / d)))) ** 2
    tr, tr2 = problem.hessian_traces(xbar)
    spread = d * eps2 * (1 - 1 / n)
    return {"loss_avg": 0.5 * tr * eps2 / n, "loss_nodes": 0.5 * tr * eps2,
            "consensus": spread, "grad_norm2": tr2 * eps2 / n, "tracking": spread}


#: the metrics of xbar, which a drifting algorithm's roundings move (algorithms.base.DRIFT)
MEAN_METRICS = ("loss_avg", "loss_nodes", "grad_norm2")


def rounding_limited(summary: dict, floors: dict, steps: int, drifts: bool = False) -> str:
    """The kernel metrics (comma-separated, "" if none) whose plateau in ``summary`` lies
    within ROUNDING_MARGIN x steps x their step floor, with a FastGTWarning naming them. For
    an algorithm that ``drifts`` (D², EXTRA) the metrics of xbar are listed whatever their
    plateau: its roundings pile up in xbar beyond this estimate (the warning it gave before
    the run says so), so that a sweep's column marks every result to check in float64."""
    names = [m for m in KERNEL_METRICS if np.isfinite(summary.get(m, np.nan))
             and 0 < abs(summary[m]) <= ROUNDING_MARGIN * steps * floors[m]]
    if names:  # (an exact 0, every node at xbar as on the complete graph, is no floor)
        warnings.warn(f"dtype float32: rounding of the state may dominate {', '.join(names)} "
                      "(its plateau is within the floor its steps' roundings accumulate); a "
                      "float64 run measures them", FastGTWarning, stacklevel=caller_level())
    if drifts:
        names = [m for m in KERNEL_METRICS if m in names or (
            m in MEAN_METRICS and np.isfinite(summary.get(m, np.nan)))]
    return ", ".join(names)
