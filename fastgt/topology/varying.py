"""Time-varying topologies: the mixing matrix changes with the step.

A ``TimeVarying`` is a period of mixing matrices applied in turn (``cycle``, the one-peer
exponential graph), or a random matching drawn anew at every step inside the kernels
(``drawn``: never stored, kernels/matching.py). Each step's W(t) is doubly stochastic and
nonnegative, but need not be symmetric, nor contract on its own: what counts is the
product over a period. Its summary (``spectrum()``, a PeriodSpectrum) gives

- ``p_eff`` = 1 - ||W(P-1) ... W(0) - J||_2^(2/P) over one period of P matrices: the
  per-step contraction of the product, comparable with a static W's p = 1 - ||W - J||_2^2
  (which it equals for P = 1). For a random matching, the expected per-step contraction
  of the uniform random matching, 1 - lambda_max(E[W^T W] - J) (closed form below);
- ``lambda2``, ``lambda_n``, ``p``, ``c``: each matrix's own values where they are the same
  for every matrix of the period and defined (symmetric matrices), NaN otherwise.

The exact theory (fastgt.theory) covers static topologies only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import DegenerateGraphError, FastGTError, bad, check_int
from .mixing import TOL, MixingMatrix, describe
from .spectrum import SpectralSummary

#: a product over one period with ||.||_2 below this averages exactly (p_eff = 1):
#: rounding leaves ~1e-16 where the exact product is J
EXACT = 1e-13
#: dense products up to this n, Lanczos on the product operator beyond
DENSE_MAX = 2048


@dataclass(frozen=True, repr=False)
class PeriodSpectrum(SpectralSummary):
    """A time-varying topology's spectral summary (module docstring); NaN where undefined."""

    lambda2: float
    lambda_n: float
    p_eff: float
    method: str

    @property
    def gap2(self) -> float:
        return 1.0 - self.lambda2

    @property
    def gapn(self) -> float:
        return 1.0 + self.lambda_n

    @property
    def delta(self) -> float:
        return min(self.gap2, self.gapn) if np.isfinite(self.lambda2) else math.nan

    @property
    def p(self) -> float:
        return 1.0 - max(abs(self.lambda2), abs(self.lambda_n)) ** 2

    @property
    def c(self) -> float:
        return 1.0 - min(self.lambda_n, 0.0) ** 2 if np.isfinite(self.lambda_n) else math.nan



@dataclass(eq=False)
class TimeVarying:
    """W(t) of step t: ``period[r mod P]`` at the r-th communication, or (``drawn``) a random
    matching of step t drawn from the run's seed, ``period`` then holding its template (rows
    of 3 entries: the node, its partner and the partner again, weights (a, 1 - a, 0);
    kernels/steps.py: Mixing.drawn). ``closed``: a function giving ||W(P-1)...W(0) - J||_2 in
    closed form (the one-peer graph), or None (a dense or Lanczos product: _product_norm)."""

    period: tuple
    name: str
    params: dict
    drawn: bool = False
    closed: Callable | None = field(default=None, repr=False)
    _spectrum: PeriodSpectrum | None = field(default=None, repr=False)

    static = False

    @property
    def n(self) -> int:
        return self.period[0].n

    @property
    def symmetric(self) -> bool:
        """Whether every W(t) is symmetric (a matching's always is; the one-peer graph's
        never)."""
        return self.drawn or all(_symmetric(m) for m in self.period)

    def describe(self) -> str:
        return describe(self.name, self.params)

    def __repr__(self) -> str:
        kind = "a matching drawn every step" if self.drawn else f"period {len(self.period)}"
        return f"TimeVarying({self.describe()}, n={self.n}, {kind})"

    def at(self, step: int, seed: int = 0, local_steps: int = 1) -> MixingMatrix:
        """The matrix step ``step`` (from x(step) to x(step + 1)) mixes with in a run with this
        seed: the identity on a local step, else the period's next matrix (the r-th
        communication uses period[r mod P]) or the step's matching."""
        t = step + 1  # the iterate it makes, as the kernels count (kernels/steps.py)
        if t % local_steps:
            return _identity(self.n)
        if not self.drawn:
            return self.period[(t // local_steps - 1) % len(self.period)]
        from ..kernels.matching import partners

        j = partners(int(seed), t, self.n)
        a = float(self.period[0].weights[0])
        i = np.arange(self.n)
        rows = np.concatenate([i, i])
        vals = np.concatenate([np.full(self.n, a), np.full(self.n, 1.0 - a)])
        return MixingMatrix.from_sparse(_coo(vals, rows, np.concatenate([i, j]), self.n),
                                        name=self.name,
                                        params={"n": self.n, "step": step, "seed": seed})

    def spectrum(self, vectors: bool = False, method: str = "auto") -> PeriodSpectrum:
        """The PeriodSpectrum (module docstring); ``vectors``: refused (no eigenvectors of a
        changing W), and so is a ``method`` other than auto (its values are closed forms
        or the period's product: no eigensolver choice applies)."""
        if method != "auto":
            raise FastGTError(f"method={method!r} does not apply to the time-varying "
                              f"{self.name}: allowed 'auto' (its values are closed forms or "
                              "the product over a period)")
        if vectors:
            raise FastGTError(f"{self.name} is time-varying: it has no eigenvectors (they "
                              "are a static topology's: structured noise and the theory)")
        if self._spectrum is None:
            self._spectrum = (_matching_spectrum(self) if self.drawn else
                              _period_spectrum(self))
        return self._spectrum

    def lazy(self) -> TimeVarying:
        """(W(t) + I) / 2 at every step."""
        params = dict(self.params, lazy=True)
        if self.drawn:
            return TimeVarying((matching_template(self.n, 0.5 + 0.5 * self.period[0].weights[0]),),
                               self.name, params, True)
        # no ``closed``: the one-peer graph's closed form is for (I + S^s) / 2 itself
        return TimeVarying(tuple(m.lazy() for m in self.period), self.name, params, False)

    def validated(self) -> TimeVarying:
        """Self, once every matrix is a valid step (doubly stochastic, nonnegative, entries
        in range) and the period contracts (p_eff > 0); FastGTError otherwise."""
        for r, m in enumerate(self.period):
            if m.n != self.n:
                raise FastGTError(f"{self.name}: matrix {r} has n={m.n}, matrix 0 has "
                                  f"n={self.n}: allowed matrices of one size")
            if not self.drawn:
                check_step(m, f"{self.name} matrix {r}")
        if not self.spectrum().p_eff > 0.0:
            raise DegenerateGraphError(f"{self.name}: the product over one period does not "
                                       "contract (p_eff = 0): allowed matrices whose product "
                                       "mixes every node (a connected union)")
        return self


def _coo(vals, rows, cols, n: int):
    import scipy.sparse as sp

    return sp.coo_matrix((vals, (rows, cols)), shape=(n, n))


def _identity(n: int) -> MixingMatrix:
    i = np.arange(n)
    return MixingMatrix(np.arange(n + 1), i, np.ones(n), name="identity")


def check_step(m: MixingMatrix, what: str) -> None:
    """FastGTError unless m is a valid step of a time-varying topology: entries in range and
    finite, nonnegative, rows and columns summing to 1 (symmetry not needed)."""
    n = m.n
    if np.any(m.indices < 0) or np.any(m.indices >= n):
        raise FastGTError(f"{what}: column indices out of range [0, {n})")
    if not np.all(np.isfinite(m.weights)):
        raise FastGTError(f"{what}: weights must be finite")
    if np.any(m.weights < -TOL) or not 0.0 <= m.mean_weight <= 1.0 + TOL:
        raise FastGTError(f"{what} must be nonnegative: found negative weights")
    rows = np.repeat(np.arange(n), np.diff(m.indptr))
    for axis, ids in (("row", rows), ("column", m.indices)):
        sums = np.bincount(ids, m.weights, minlength=n) + m.mean_weight
        err = np.max(np.abs(sums - 1.0))
        if err > TOL:
            raise FastGTError(f"{what} must be doubly stochastic: max |{axis} sum - 1| = "
                              f"{err:.3g} > {TOL:g}")


def _symmetric(m: MixingMatrix) -> bool:
    A = m.sparse_part()
    return not (abs(A - A.T) > TOL).nnz


def _per_matrix(period) -> tuple[float, float]:
    """(lambda2, lambda_n) shared by every matrix of the period (equal to 12 digits; the
    first matrix's values, unrounded), or NaN."""
    vals = []
    for m in period:
        if not _symmetric(m):
            return math.nan, math.nan
        s = m.spectrum()
        vals.append((s.lambda2, s.lambda_n))
    if len({(round(a, 12), round(b, 12)) for a, b in vals}) != 1:
        return math.nan, math.nan
    return vals[0]


def _period_spectrum(tv: TimeVarying) -> PeriodSpectrum:
    norm, method = (tv.closed(), "closed") if tv.closed else _product_norm(tv.period)
    norm = 0.0 if norm < EXACT else norm
    l2, ln = _per_matrix(tv.period)
    return PeriodSpectrum(l2, ln, 1.0 - norm ** (2.0 / len(tv.period)), method)


def _product_norm(period) -> tuple[float, str]:
    """||W(P-1) ... W(0) - J||_2: dense for small n, else Lanczos (scipy's svds) on the
    product operator, a matrix-vector product costing P sparse products."""
    n = period[0].n
    if n <= DENSE_MAX:
        Pi = np.eye(n)
        for m in period:
            Pi = m.to_dense() @ Pi
        return float(np.linalg.norm(Pi - 1.0 / n, 2)), "dense"
    from scipy.sparse.linalg import LinearOperator, svds

    def center(x):
        return x - x.mean(axis=0)

    def mv(x):
        x = center(x)
        for m in period:
            x = m.matvec(x)
        return center(x)

    def rmv(x):
        x = center(x)
        for m in reversed(period):
            x = m.sparse_part().T @ x + m.mean_weight * x.mean(axis=0)
        return center(x)

    op = LinearOperator((n, n), matvec=mv, rmatvec=rmv, dtype=np.float64)
    return float(svds(op, k=1, return_singular_vectors=False, random_state=0)[0]), "sparse"


# --------------------------------------------------------------------------- families


def one_peer_exponential(n: int) -> TimeVarying:
    """One-peer exponential graph (Ying et al. 2021): at step t node i averages with node
    (i + 2^(t mod tau)) mod n, tau = ceil(log2 n), weights 1/2: W(t) doubly stochastic, not
    symmetric, one neighbour. With n a power of 2, one period averages exactly."""
    n = check_int("n", n, 2)
    tau = (n - 1).bit_length()
    i = np.arange(n)
    period = []
    for k in range(tau):
        j = (i + (1 << k)) % n
        cols = np.sort(np.stack([i, j], axis=1), axis=1)
        period.append(MixingMatrix(np.arange(0, 2 * n + 1, 2), cols.ravel(), np.full(2 * n, 0.5),
                                   name="one_peer_exponential", params={"n": n}))
    return TimeVarying(tuple(period), "one_peer_exponential", {"n": n},
                       closed=lambda: _shifts_norm(n, [1 << k for k in range(tau)]))


def _shifts_norm(n: int, shifts: list[int]) -> float:
    """||prod_k (I + S^(s_k)) / 2 - J||_2, S the cyclic shift: the product is circulant,
    so its norm is the largest |eigenvalue| over the modes j = 1..n-1, each a product of
    |cos(pi j s_k / n)| (exact zeros where 2 j s_k = n mod 2n)."""
    j = np.arange(1, n, dtype=np.int64)
    out = np.ones(n - 1)
    for s in shifts:
        m = (j * s) % n
        out *= np.where(2 * m == n, 0.0, np.abs(np.cos(np.pi * m / n)))
    return float(out.max())


def matching_template(n: int, a: float) -> MixingMatrix:
    """The schedule entry of a drawn matching: rows of 3 entries (columns written by the
    kernels at every step), weights (a, 1 - a, 0); as stored, the identity's columns."""
    return MixingMatrix(np.arange(0, 3 * n + 1, 3), np.repeat(np.arange(n), 3),
                        np.tile([a, 1.0 - a, 0.0], n), name="random_matching", params={"n": n})


def random_matching(n: int) -> TimeVarying:
    """A fresh random maximal matching of the n nodes at every step, from the run's seed
    (kernels/matching.py): matched pairs average with weight 1/2, an unmatched node (n odd)
    keeps its value. Drawn inside the kernels, never stored."""
    n = check_int("n", n, 2)
    return TimeVarying((matching_template(n, 0.5),), "random_matching", {"n": n}, True)


def _matching_spectrum(tv: TimeVarying) -> PeriodSpectrum:
    """W = a I + (1 - a) M, M the matching's involution (M^2 = I): its eigenvalues are 1
    and 2a - 1 (n = 2: 2a - 1 only besides the mean). The uniform random matching has
    E[M] = (1 1^T - I) / (n - 1) for n even, 1 1^T / n for n odd, so on the mean-zero
    space E[W^T W] = a^2 + (1 - a)^2 + 2a(1 - a) m, m = -1 / (n - 1) or 0."""
    n, a = tv.n, float(tv.period[0].weights[0])
    m = -1.0 / (n - 1) if n % 2 == 0 else 0.0
    peff = 1.0 - (a * a + (1 - a) ** 2 + 2 * a * (1 - a) * m)
    return PeriodSpectrum(2 * a - 1 if n == 2 else 1.0, 2 * a - 1, peff, "closed")


def cycle(matrices) -> TimeVarying:
    """A user-given list of mixing matrices applied in turn, one per communication: each a
    MixingMatrix, a dense array or a scipy sparse matrix, doubly stochastic and nonnegative
    (not necessarily symmetric); their product over the period must contract."""
    if isinstance(matrices, (str, bytes, dict)) or not hasattr(matrices, "__len__") or \
            not len(matrices):
        raise bad("matrices", matrices, "a non-empty list of mixing matrices")
    period = []
    for r, W in enumerate(matrices):
        if isinstance(W, TimeVarying):
            raise bad("matrices", W.describe(), "static mixing matrices (matrix "
                      f"{r} is time-varying)")
        period.append(W if isinstance(W, MixingMatrix) else _as_matrix(W, r))
    params = {"matrices": [m.describe() for m in period]}
    return TimeVarying(tuple(period), "cycle", params)


def _as_matrix(W, r: int) -> MixingMatrix:
    import scipy.sparse as sp

    if not sp.issparse(W):
        try:
            W = np.asarray(W, dtype=np.float64)
        except (TypeError, ValueError):
            raise bad("matrices", f"matrix {r}", "square matrices of numbers") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise bad("matrices", f"matrix {r} of shape {W.shape}", "square n x n matrices, n >= 2")
    A = sp.csr_matrix(W, dtype=np.float64)
    A.eliminate_zeros()
    return MixingMatrix.from_sparse(A, name="matrix", params={"n": A.shape[0]})


VARYING = {"one_peer_exponential": one_peer_exponential, "random_matching": random_matching,
           "cycle": cycle}
