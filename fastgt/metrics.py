"""The recorded metrics, each declared once: its name, its definition, whether it needs Y
(GT's tracking variable), whether the exact theory predicts its plateau, and how it is
computed. Every trace column, cell-row column (plateau and ``final_``), Parquet field, CLI
choice and the dense reference's list come from ``DECLARED``, in this order. Light to
import: no numba. Definitions in full: docs/definitions.md.

How a metric is computed: the problem's ``metrics`` (problems/base.py; for the quadratics
one compiled pass, kernels/metrics.py: quadratic_metrics) fills the values named in
``KERNEL_METRICS``; a metric it does not know gives ``compute(snapshot)``, a function of a
``Snapshot`` (numpy on the n x d iterates; a record happens every ``record_every`` steps,
so a pass of its own is cheap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Snapshot:
    """What a metric's ``compute`` gets at a record: the n x d iterates X and Y (None
    without Y), their column means, and the problem instance."""

    X: np.ndarray
    Y: np.ndarray | None
    xbar: np.ndarray
    problem: object


@dataclass(frozen=True)
class Metric:
    name: str
    definition: str
    needs_y: bool = False
    theory: bool = False  # the exact theory gives its plateau (fastgt.theory)
    compute: Callable | None = None  # (Snapshot) -> float, when the fused kernel lacks it
    #: (problem) -> whether the metric is defined for it (NaN, not a divergence, otherwise)
    applies: Callable | None = None


DECLARED = (
    Metric("loss_avg", "f(xbar) - f*", theory=True),
    Metric("loss_nodes", "(1/n) sum_i f(x_i) - f*", theory=True),
    Metric("consensus", "(1/n) sum_i ||x_i - xbar||^2", theory=True),
    Metric("grad_norm2", "||grad f(xbar)||^2"),
    Metric("tracking", "(1/n) sum_i ||y_i - ybar||^2", needs_y=True, theory=True),
    Metric("accuracy", "fraction of the training rows with y a^T xbar > 0 (classification)",
           compute=lambda s: s.problem.accuracy(s.xbar),
           applies=lambda problem: getattr(problem, "classification", False)),
)
METRICS = tuple(m.name for m in DECLARED)
#: the metrics whose plateaus the exact theory predicts
THEORY_METRICS = tuple(m.name for m in DECLARED if m.theory)
#: values of the problem instance in a cell's row (Problem.columns: the problems with data;
#: NaN for the others): f* and the heterogeneity zeta2 = (1/n) sum_i ||grad f_i(x*)||^2
PROBLEM_COLUMNS = ("fstar", "zeta2")
#: a trace's x axes: the step, and the costs so far per node (engine.cost_counts)
TRACE_AXES = ("step", "comm_rounds", "grad_evals")
