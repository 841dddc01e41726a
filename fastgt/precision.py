"""What a float32 state's rounding does to the recorded metrics (dtype="float32"): the floor
each metric's plateau cannot go below, and the metrics a run's plateau puts on it.

Every step rounds every element a few times (float32 arithmetic: its mix about once at the
row's magnitude, its update's operations), each by up to half an ulp. Modelled as an
independent perturbation e of random signs and size eps = one ulp of the state's rms
magnitude (over X and Y: Y's roundings move xbar through GT's tracking), a step changes each
metric, to second order and in expectation, by

    consensus, tracking   d eps^2 (1 - 1/n)
    loss_nodes            tr(H) eps^2 / 2
    loss_avg              tr(H) eps^2 / (2 n)
    grad_norm2            tr(H^2) eps^2 / n

(H: f's Hessian at xbar, Problem.hessian_traces). A mixing with a mean term of weight beta
rounds beta (mean - x_i) in float32 alike for every node whose x_i shares a binade (the
mean's bits below x_i's last one): xbar then moves by that rounding too, as one rounding of
variance beta^2 eps^2 / 12 per step, which the nodes do not average out (loss_avg, loss_nodes
and grad_norm2 take n (1/n + beta^2 / 12) times the figures above; the paper's Figure 1
cells with a strong mean term, alpha = 0.25 and 0.5, reach Setup B floors of 1e-9 in
float32). A recursion whose modes do not expand
accumulates the variance of such perturbations at most linearly in the steps, so after
``steps`` steps a plateau below ROUNDING_MARGIN x steps x that is the state's rounding, not
the algorithm. Contracting modes forget old roundings, so the state's magnitude at the end
sets that floor; a marginal mode keeps them: GT's and ATC-GT's tracking invariant ybar =
gbar carries every rounding of ybar since step 0 into xbar, so for an algorithm with a
tracker the metrics of xbar take the larger of that and the sum, over the run's records,
of each interval's steps x the floor at the larger of its ends' magnitudes (a noiseless GT
run converging to x* = 0 keeps its first steps' rounding bias: loss_avg 2.5e-16 against
float64's 8e-31, which the final magnitude alone put far below the floor). D² and EXTRA
pile roundings up in their mean's velocity, which this does not model: they warn on every
float32 run (algorithms.base.DRIFT), and their metrics of xbar are always listed.
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


def rounding_eps2(X: np.ndarray, Y: np.ndarray | None, consensus: float,
                  tracking: float) -> tuple[float, np.ndarray]:
    """(eps^2, xbar): the squared ulp of the rms magnitude of a state X (and Y) of n x d
    values whose consensus and tracking are given (they make the mean squares without
    another pass), and X's mean."""
    d = X.shape[1]
    xbar = X.mean(axis=0, dtype=np.float64)
    squares = [consensus + xbar @ xbar]  # (1/n) sum_i ||x_i||^2, and y's
    if Y is not None:
        ybar = Y.mean(axis=0, dtype=np.float64)
        squares.append(tracking + ybar @ ybar)
    return float(np.spacing(np.float32(np.sqrt(np.mean(squares) / d)))) ** 2, xbar


def floors(eps2: float, history: float, steps: int, xbar: np.ndarray, n: int,
           problem, beta: float = 0.0) -> dict:
    """Each kernel metric's accumulated floor after ``steps`` steps that end at a state of
    n x d values of squared ulp ``eps2`` and mean xbar (the table of the module docstring,
    x steps); ``history``: the records' sum of eps^2 x steps for an algorithm with a
    tracker (its metrics of xbar take the larger), else 0; ``beta``: the weight of the
    mixing's mean term (its rounding, alike for every node, moves xbar: module doc)."""
    d = xbar.shape[0]
    tr, tr2 = problem.hessian_traces(xbar)
    # xbar's: the nodes' own roundings average out, the mean term's do not
    mean = max(history, eps2 * steps) * (1 / n + beta**2 / 12)
    nodes = eps2 * steps * (1 - 1 / n)  # the x_i's
    return {"loss_avg": 0.5 * tr * mean, "loss_nodes": 0.5 * tr * (nodes + mean),
            "consensus": d * nodes, "grad_norm2": tr2 * mean, "tracking": d * nodes}


#: the metrics of xbar, which a drifting algorithm's roundings move (algorithms.base.DRIFT)
MEAN_METRICS = ("loss_avg", "loss_nodes", "grad_norm2")


def rounding_limited(summary: dict, floors: dict, drifts: bool = False) -> str:
    """The kernel metrics (comma-separated, "" if none) whose plateau in ``summary`` lies
    within ROUNDING_MARGIN x their accumulated floor (``floors``), with a FastGTWarning naming them. For
    an algorithm that ``drifts`` (D², EXTRA) the metrics of xbar are listed whatever their
    plateau: its roundings pile up in xbar beyond this estimate (the warning it gave before
    the run says so), so that a sweep's column marks every result to check in float64."""
    names = [m for m in KERNEL_METRICS if np.isfinite(summary.get(m, np.nan))
             and 0 < abs(summary[m]) <= ROUNDING_MARGIN * floors[m]]
    if names:  # (an exact 0, every node at xbar as on the complete graph, is no floor)
        warnings.warn(f"dtype float32: rounding of the state may dominate {', '.join(names)} "
                      "(its plateau is within the floor its steps' roundings accumulate); a "
                      "float64 run measures them", FastGTWarning, stacklevel=caller_level())
    if drifts:
        names = [m for m in KERNEL_METRICS if m in names or (
            m in MEAN_METRICS and np.isfinite(summary.get(m, np.nan)))]
    return ", ".join(names)
