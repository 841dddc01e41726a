"""Diagonal quadratic objectives: f_i(x) = 1/2 sum_k a_ik x_k^2 - b_ik x_k + c_i.

Setup A (``quadratic``, f_i = ||x||^2), ``consensus`` and ``hetero_quadratic`` are of this
form: one problem family, whose gradient is grad_i(x) = a_i * x - b_i, or a0 * x when the
problem is homogeneous (``hetero`` False: Setup A's f_i = ||x||^2 is a0 = 2). The family is
the engine's fast path: the algorithms' templates fuse it into their row updates
(``DIAGONAL``), and its metrics are one compiled pass (kernels/metrics.py).
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from ..config import INLINE_FLAGS, SCALAR_FLAGS
from ..errors import FastGTError, bad, check_float, check_int
from ..kernels import jit
from ..kernels.lanes import scalar_intrinsic
from ..kernels.metrics import quadratic_metrics, quadratic_metrics_parallel
from ..kernels.mixing import big
from ..kernels.oracles import NONE, STRUCTURED, ProblemKernels, noise_at, noise_weight
from ..kernels.rounding import emit_fma, fma, mul, stored
from .base import Problem, rounded

#: the family's arrays as its kernels read them (co.data): A and B (n, dp) when hetero,
#: (1, 1) placeholders otherwise
QuadData = namedtuple("QuadData", "hetero a0 A B", module=__name__)


def emit_hom_gradient(L, a0, x, noise):
    """a0 x + noise, rounded once: a homogeneous gradient's coordinate from its noise."""
    return emit_fma(L, a0, x, noise)


hom_gradient = scalar_intrinsic(emit_hom_gradient)


@jit(**SCALAR_FLAGS)
def grad_hom(N, rn, k, v, u, dv, x, a0):
    """Coordinate k of a noisy homogeneous gradient, hom_gradient(a0, x, noise_at): with
    grad_het, the one definition wherever GT computes or recomputes a gradient (the kernels,
    stochastic_grads; the vector rows take its builder, emit_hom_gradient), so that every
    path gives the same bits."""
    return hom_gradient(a0, x, noise_at(N, rn, k, v, u, dv))


@jit(**SCALAR_FLAGS)
def grad_exact(x, a0):
    """grad_hom without noise (kind NONE), to its bits: its noise term is then exactly 0,
    and fma(a0, x, 0) is a0 x rounded once. A loop using it loads one array less."""
    return mul(a0, x)


@jit(**SCALAR_FLAGS)
def grad_het(N, rn, k, v, u, dv, x, A, B, i):
    """Coordinate k of node i's noisy gradient, fma(N[rn, k], w, fma(A_ik, x, -B_ik)) with
    w = noise_weight(k, v, u, dv) in N's type (as noise_at has it: float32 arithmetic for
    a float32 state)."""
    return fma(N[rn, k], stored(N, noise_weight(k, v, u, dv)), fma(A[i, k], x, -B[i, k]))


@jit(**SCALAR_FLAGS)
def grad_het_exact(k, x, A, B, i):
    """grad_het without noise, to its bits: the noise term fma(0, 0, r) is r."""
    return fma(A[i, k], x, -B[i, k])


@jit(**SCALAR_FLAGS)
def previous_row(co, node):
    """The noise row of node i's previous-step gradient when the kernels keep no G (no
    gaussian noise: algorithms.base.gradient_rows), for grad_hom / grad_het: the previous
    step's shared draw for structured noise, the node's (unused, zero-weighted) row
    otherwise. GT, D² and EXTRA recompute that gradient with it, to the bits it had."""
    return co.rp if co.kind == STRUCTURED else node.rn


@jit(**INLINE_FLAGS)
def grad_row(co, node, X, r, G, q):
    """The family's hook (kernels/oracles.py): G[q] = node i's noisy gradient at X[r]."""
    data, N, rn, v, u, i = co.data, co.N, node.rn, node.v, node.u, node.i
    if data.hetero and co.kind != NONE:
        for k in range(X.shape[1]):
            G[q, k] = grad_het(N, rn, k, v, u, co.dv, X[r, k], data.A, data.B, i)
    elif data.hetero:  # no noise: the same bits without loading the noise row
        for k in range(X.shape[1]):
            G[q, k] = grad_het_exact(k, X[r, k], data.A, data.B, i)
    elif co.kind != NONE:
        for k in range(X.shape[1]):
            G[q, k] = grad_hom(N, rn, k, v, u, co.dv, X[r, k], data.a0)
    else:
        for k in range(X.shape[1]):
            G[q, k] = grad_exact(X[r, k], data.a0)


KERNELS = ProblemKernels("quadratic", grad_row, diagonal=True,
                         warm=(("quadratic", "gaussian"), ("hetero_quadratic", "structured")))


@dataclass(eq=False)
class DiagonalQuadratic(Problem):
    """A problem instance on n nodes in dimension d.

    ``A``/``B`` are n x d arrays (heterogeneous case) or None, in which case every node has
    f_i(x) = a0/2 ||x||^2. ``const`` is the mean of the constants c_i (it only shifts f*).
    """

    name: str
    n: int
    d: int
    a0: float = 2.0
    kernels = KERNELS
    A: np.ndarray | None = None
    B: np.ndarray | None = None
    const: float = 0.0
    #: the type the kernels read A and B in (in_dtype)
    data_dtype: type = np.float64

    def __post_init__(self):
        if (self.A is None) != (self.B is None):
            raise FastGTError("a heterogeneous quadratic needs both a and b")
        if self.A is not None:
            for nm, arr in (("a", self.A), ("b", self.B)):
                if arr.shape != (self.n, self.d):
                    raise FastGTError(f"{nm} has shape {arr.shape}: allowed (n, d) = ({self.n}, {self.d})")
                if not np.all(np.isfinite(arr)):
                    raise FastGTError(f"{nm} must be finite")
            if np.any(self.A < 0) or np.any(self.A.mean(axis=0) <= 0):
                raise FastGTError("a is invalid: allowed a >= 0 with a positive mean over nodes in every coordinate")
            self.A = np.ascontiguousarray(self.A, dtype=np.float64)
            self.B = np.ascontiguousarray(self.B, dtype=np.float64)
        else:
            check_float("a0", self.a0, 0.0, lo_open=True)

    @property
    def hetero(self) -> bool:
        return self.A is not None

    @property
    def abar(self) -> np.ndarray:
        """Curvature of f = (1/n) sum f_i, per coordinate."""
        return self.A.mean(axis=0) if self.hetero else np.full(self.d, float(self.a0))

    @property
    def bbar(self) -> np.ndarray:
        return self.B.mean(axis=0) if self.hetero else np.zeros(self.d)

    @property
    def xstar(self) -> np.ndarray:
        return self.bbar / self.abar

    @property
    def fstar(self) -> float:
        return float(self.const - 0.5 * np.sum(self.bbar**2 / self.abar))

    @property
    def L(self) -> float:
        """Smoothness constant of every f_i."""
        return float(self.A.max()) if self.hetero else float(self.a0)

    @property
    def mu(self) -> float:
        """Strong convexity constant of every f_i (0 if some f_i is not strongly convex)."""
        return float(self.A.min()) if self.hetero else float(self.a0)

    def grad(self, X: np.ndarray) -> np.ndarray:
        """Exact local gradients, row i = grad f_i(x_i) (numpy; for references and checks)."""
        return self.A * X - self.B if self.hetero else self.a0 * X

    def loss(self, x: np.ndarray) -> np.ndarray:
        """f(x) - f* for x of shape (d,) or rows of (m, d) (exact: no cancellation)."""
        return 0.5 * np.sum(self.abar * (np.asarray(x) - self.xstar) ** 2, axis=-1)

    def f(self, x: np.ndarray) -> np.ndarray:
        return self.fstar + self.loss(x)

    def hessian_traces(self, x: np.ndarray, probes: int = 4) -> tuple[float, float]:
        """tr H and tr H^2 exactly: H = diag(abar) everywhere."""
        return float(np.sum(self.abar)), float(np.sum(self.abar**2))

    def kernel_data(self, pad) -> QuadData:
        if self.hetero:
            return QuadData(True, self.data_dtype(self.a0),
                            pad(self.A, self.data_dtype), pad(self.B, self.data_dtype))
        dummy = np.zeros((1, 1), dtype=self.data_dtype)  # one signature per data type
        return QuadData(False, self.data_dtype(self.a0), dummy, dummy)

    def in_dtype(self, dtype: str) -> DiagonalQuadratic:
        """A, B and a0 rounded to ``dtype`` and read as such (a float32 state: half the
        traffic of a heterogeneous step's A and B, and its arithmetic in float32); abar, x*
        and f* are then those of the rounded problem. Itself when it is read as ``dtype``
        already (Batch asks again)."""
        if dtype == "float64" or self.data_dtype is np.dtype(dtype).type:
            return self
        return dataclasses.replace(self, A=rounded(self.A, dtype), B=rounded(self.B, dtype),
                                   a0=float(rounded(self.a0, dtype)),
                                   data_dtype=np.dtype(dtype).type)

    def metrics(self, pad):
        """One compiled pass (kernels/metrics.py), abar and x* padded like the rows (the
        padding adds exact zeros to every sum)."""
        abar, xstar = pad(self.abar[None])[0], pad(self.xstar[None])[0]

        def fill(X, Y, has_y, part, out):
            kernel = quadratic_metrics_parallel if big(X) else quadratic_metrics
            kernel(X, Y if has_y else X, has_y, abar, xstar, part, out)

        return fill


def _array(name: str, value, n: int, d: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise bad(name, value, f"an (n, d) = ({n}, {d}) array of numbers") from None
    if arr.shape != (n, d):
        raise FastGTError(f"{name} has shape {arr.shape}: allowed (n, d) = ({n}, {d})")
    return arr


def quadratic(n: int, d: int) -> DiagonalQuadratic:
    """Setup A: f_i(x) = ||x||^2 on every node (grad 2x, x* = 0, f* = 0)."""
    return DiagonalQuadratic("quadratic", n, d, a0=2.0)


def hetero_quadratic(n: int, d: int, a=None, b=None, L: float = 1.0, mu: float = 0.1,
                     zeta: float = 1.0, seed: int = 0) -> DiagonalQuadratic:
    """f_i(x) = 1/2 x^T diag(a_i) x - b_i^T x. Drawn when not given:
    a_ik ~ U[mu, L], b_ik ~ N(0, zeta^2 / d)."""
    rng = np.random.default_rng([check_int("seed", seed, 0), 0x4E7])
    if a is None:
        L = check_float("L", L, 0.0, lo_open=True)
        mu = check_float("mu", mu, 0.0, L, lo_open=True)
        a = rng.uniform(mu, L, size=(n, d))
    if b is None:
        zeta = check_float("zeta", zeta, 0.0)
        b = rng.normal(0.0, zeta / np.sqrt(d), size=(n, d))
    return DiagonalQuadratic("hetero_quadratic", n, d, A=_array("a", a, n, d), B=_array("b", b, n, d))


PROBLEMS = {"quadratic": quadratic, "hetero_quadratic": hetero_quadratic}
