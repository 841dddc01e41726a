"""What a problem instance gives the engine: its objective, its optimum, its gradient
oracle for the kernels (kernels/oracles.py: the hooks of its family) and its metrics.

A problem is one module of fastgt/problems/: a subclass of ``Problem`` with its data, its
family's ``ProblemKernels`` and the function that builds it (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import FastGTError

#: the noises that sample a problem's rows (problems with data; fastgt.problems.NOISES)
SAMPLED = ("minibatch", "minibatch+gaussian")


def rounded(M, dtype: str):
    """M (an array, a scipy sparse matrix or None) with its values rounded to ``dtype`` and
    kept as float64 (a copy; M itself for float64)."""
    if M is None or dtype == "float64":
        return M
    if hasattr(M, "tocsr"):
        out = M.copy()
        out.data = out.data.astype(dtype).astype(np.float64)
        return out
    return np.asarray(M).astype(dtype).astype(np.float64)


class Problem:
    """f = (1/n) sum_i f_i on n nodes in dimension d. A subclass sets ``name``, ``n``,
    ``d`` and ``kernels`` (its family's ProblemKernels) and defines:

    - ``f(x)``: f at x of shape (d,), or at each row of (m, d);
    - ``grad(X)``: the exact local gradients, row i = grad f_i(X[i]) (numpy);
    - ``xstar`` and ``fstar``: a minimizer of f and its value;
    - ``kernel_data(pad)``: the namedtuple of arrays its hooks read (``co.data``), each
      (n, d) array passed through ``pad`` (rows padded with zeros to the kernels' width;
      ``pad(M, dtype)`` gives them as ``dtype``, float64 by default).

    A problem whose arrays the kernels read at every step may also define ``in_dtype``
    (a float32 state: its arrays rounded to float32 and read as such, half their traffic).

    ``metrics`` fills the fused metrics with numpy from these; a subclass may override it
    with a compiled pass (DiagonalQuadratic does)."""

    name: str
    n: int
    d: int
    kernels: object  # kernels.oracles.ProblemKernels

    @property
    def xstar(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def fstar(self) -> float:
        raise NotImplementedError

    def f(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def grad(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def kernel_data(self, pad: Callable):
        raise NotImplementedError

    def in_dtype(self, dtype: str) -> Problem:
        """This instance for a run whose state is ``dtype`` (fastgt.run's dtype). A problem
        with arrays may return a copy whose arrays are rounded to ``dtype`` (so that f, its
        optimum and the metrics describe what the kernels compute) and whose kernel_data
        gives them as ``dtype``; the default, self, keeps them float64."""
        return self

    def for_noise(self, noise: str) -> Problem:
        """This instance as a run with gradient noise ``noise`` uses it: itself, or a
        one-line error for a noise it cannot take. Only problems with data
        (problems/samples.py) have rows for the minibatch noises to draw."""
        if noise in SAMPLED:
            raise FastGTError(f"noise={noise!r} draws rows of a problem's data and problem "
                              f"{self.name!r} has none: allowed with least_squares, logistic, "
                              "nonconvex; or noise none, gaussian, structured")
        return self

    def columns(self) -> dict:
        """fastgt.metrics.PROBLEM_COLUMNS of the instance, for a cell's row (problems with
        data)."""
        return {}

    def info(self) -> dict:
        """Metadata of the instance for a cell (problems with data: the split's classes)."""
        return {}

    def accuracy(self, x: np.ndarray) -> float:
        """Training accuracy of x (classification problems; NaN for the others)."""
        return float("nan")

    def loss(self, x: np.ndarray) -> np.ndarray:
        """f(x) - f* for x of shape (d,) or rows of (m, d)."""
        return self.f(x) - self.fstar

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        """grad f(x) = (1/n) sum_i grad f_i(x) at x of shape (d,)."""
        return self.grad(np.broadcast_to(x, (self.n, self.d))).mean(axis=0)

    def hessian_traces(self, x: np.ndarray, probes: int = 4) -> tuple[float, float]:
        """tr H and tr H^2 of f's Hessian H at x (d,): Hutchinson's estimates (E v^T H v,
        E ||H v||^2 over Rademacher v) from ``probes`` fixed vectors and central differences
        of full_grad. A scale for the rounding floors of a float32 run (fastgt.precision), not
        an exact value."""
        rng = np.random.default_rng(0)
        h = 1e-4 * max(1.0, float(np.sqrt(np.mean(x * x))))
        t1 = t2 = 0.0
        for _ in range(probes):
            v = rng.choice([-1.0, 1.0], size=self.d)
            Hv = (self.full_grad(x + h * v) - self.full_grad(x - h * v)) / (2 * h)
            t1, t2 = t1 + v @ Hv, t2 + Hv @ Hv
        return t1 / probes, t2 / probes

    def metrics(self, pad: Callable) -> Callable:
        """fn(X, Y, has_y, part, out): out = [loss_avg, loss_nodes, consensus, grad_norm2,
        tracking] (kernels/metrics.py's KERNEL_METRICS) of n x dp iterates X and Y (padded
        columns zero; tracking NaN without Y); ``part`` is scratch a compiled pass may use."""
        d = self.d

        def fill(X, Y, has_y, part, out):
            X = X[:, :d]
            xbar = X.mean(axis=0, dtype=np.float64)  # a float32 state: summed in float64
            out[0] = self.loss(xbar)
            out[1] = np.mean(self.loss(X))
            out[2] = np.mean(np.sum((X - xbar) ** 2, axis=1))
            out[3] = np.sum(self.full_grad(xbar) ** 2)
            out[4] = (np.mean(np.sum((Y[:, :d] - Y[:, :d].mean(axis=0, dtype=np.float64)) ** 2,
                                     axis=1)) if has_y else np.nan)

        return fill
