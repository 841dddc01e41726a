"""MixingMatrix: W = A + mean_weight * (1/n) 1 1^T, with A stored as CSR neighbour lists.

A dense complete graph or an interpolated ring thus costs O(n d) per mix, never O(n^2 d).
scipy.sparse is imported only where a general sparse matrix is handled, so that a run on a
ring or a torus starts without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DegenerateGraphError, FastGTError

if TYPE_CHECKING:
    import scipy.sparse as sp

TOL = 1e-12
#: a family's parameter name -> its flat name (grid files, the CLI, topology tables): the
#: family's own seed is graph_seed, from_matrix's W is matrix
TOPO_RENAME = {"seed": "graph_seed", "W": "matrix"}


def flat_names(params: dict) -> dict:
    """A family's parameters by their flat names (graph_seed: a run's seed is another)."""
    return {TOPO_RENAME.get(k, k): v for k, v in params.items()}


def describe(name: str, params: dict) -> str:
    """A topology as messages, summaries and a run's config show it: its family and its
    parameters by their flat names."""
    return f"{name}({', '.join(f'{k}={v}' for k, v in flat_names(params).items())})"


@dataclass(eq=False)
class MixingMatrix:
    """A symmetric, doubly stochastic, nonnegative mixing matrix (paper Definition 1).

    ``W = A + mean_weight / n * 1 1^T`` where ``A`` is the sparse part in CSR form
    (``indptr``, ``indices`` int64 and ``weights`` float64, diagonal included).

    ``structure`` lets the spectrum use closed forms: ``("circulant", shape)`` for
    (multi-dimensional) circulant matrices, ``("hypercube", dim)`` for Cayley graphs of
    Z_2^dim, ``None`` otherwise.
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    mean_weight: float = 0.0
    name: str = "custom"
    params: dict = field(default_factory=dict)
    structure: tuple | None = None
    _spectra: dict = field(default_factory=dict, repr=False)

    #: a static topology: the same W at every step (topology/varying.py: TimeVarying)
    static = True
    drawn = False

    def __post_init__(self):
        self.indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(self.indices, dtype=np.int64)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float64)
        self.mean_weight = float(self.mean_weight)

    # ------------------------------------------------------------------ basics
    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def period(self) -> tuple:
        """The matrices applied in turn: W alone (as TimeVarying.period)."""
        return (self,)

    @property
    def nnz(self) -> int:
        return len(self.indices)

    def fingerprint(self) -> str:
        """A hash of W's stored form (n, the CSR arrays, the mean term): equal for matrices
        built alike (a family's parameters, one file), under which a sweep keeps what it
        derived from W (fastgt/derived.py). Equal matrices stored otherwise (explicit zeros,
        a dense mean) hash apart: their values are derived again, never confused."""
        import hashlib

        h = hashlib.blake2b(digest_size=16)
        h.update(np.array([self.n, self.mean_weight]).tobytes())
        for a in (self.indptr, self.indices, self.weights):
            h.update(a.tobytes())
        return h.hexdigest()

    def sparse_part(self) -> sp.csr_matrix:
        """The sparse part A as a scipy CSR matrix."""
        import scipy.sparse as sp

        n = self.n
        return sp.csr_matrix((self.weights, self.indices, self.indptr), shape=(n, n))

    def to_dense(self) -> np.ndarray:
        """Dense W (n x n). Only for small n: tests and references."""
        return self.sparse_part().toarray() + self.mean_weight / self.n

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """W @ x for x of shape (n,) or (n, d), in O(nnz d + n d)."""
        return self.sparse_part() @ x + self.mean_weight * x.mean(axis=0, keepdims=x.ndim > 1)

    def describe(self) -> str:
        return describe(self.name, self.params)

    def __repr__(self) -> str:
        return (f"MixingMatrix({self.describe()}, n={self.n}, nnz={self.nnz}, "
                f"mean_weight={self.mean_weight:g})")

    def spectrum(self, vectors: bool = False, method: str = "auto"):
        """Eigen-summary of W: lambda2, lambda_n, delta, p, c (and unit u, v if vectors).

        ``method``: ``"auto"`` (closed form when known, dense eigh for moderate n, else
        Lanczos), ``"closed"``, ``"dense"`` or ``"sparse"``.
        """
        from .spectrum import compute_spectrum

        key = (vectors, method)
        if key not in self._spectra and not vectors and (True, method) in self._spectra:
            # the same values are known, computed with the vectors: no second decomposition
            self._spectra[key] = replace(self._spectra[(True, method)], u=None, v=None)
        if key not in self._spectra:
            self._spectra[key] = compute_spectrum(self, vectors=vectors, method=method)
        return self._spectra[key]

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_sparse(cls, A, mean_weight: float = 0.0, **kw) -> MixingMatrix:
        import scipy.sparse as sp

        A = sp.csr_matrix(A, dtype=np.float64)
        A.sum_duplicates()
        A.sort_indices()
        return cls(A.indptr, A.indices, A.data, mean_weight, **kw)

    @classmethod
    def from_matrix(cls, W, mean_weight: float = 0.0, name: str = "matrix",
                    check: bool = True) -> MixingMatrix:
        """Wrap a user matrix (dense array or scipy sparse) and (``check``) validate it."""
        import scipy.sparse as sp

        if sp.issparse(W):
            A = sp.csr_matrix(W, dtype=np.float64)
        else:
            try:
                W = np.asarray(W, dtype=np.float64)
            except (TypeError, ValueError):
                raise FastGTError("W must be a square matrix of numbers") from None
            if W.ndim != 2 or W.shape[0] != W.shape[1]:
                raise FastGTError(f"W must be a square matrix, got shape {W.shape}")
            A = sp.csr_matrix(W)
        if A.shape[0] != A.shape[1]:
            raise FastGTError(f"W must be a square matrix, got shape {A.shape}")
        A.eliminate_zeros()
        mm = cls.from_sparse(A, mean_weight, name=name, params={"n": A.shape[0]})
        return validate(mm) if check else mm

    def lazy(self) -> MixingMatrix:
        """(W + I) / 2: keeps the eigenvectors, maps every eigenvalue l to (l + 1) / 2, so c = 1."""
        import scipy.sparse as sp

        n = self.n
        A = (self.sparse_part() + sp.identity(n, format="csr")) * 0.5
        params = dict(self.params, lazy=True)
        return MixingMatrix.from_sparse(A, self.mean_weight * 0.5, name=self.name,
                                        params=params, structure=self.structure)


def check_entries(mm: MixingMatrix) -> MixingMatrix:
    """Raise FastGTError unless W's entries may be a mixing matrix's: n >= 2, indices in
    range, weights finite and nonnegative (what (W + I) / 2 would hide: a lazy user matrix
    is checked before)."""
    n = mm.n
    if n < 2:
        raise FastGTError(f"n={n} is invalid: allowed an integer >= 2 (number of nodes)")
    if np.any(mm.indices < 0) or np.any(mm.indices >= n):
        raise FastGTError("W: column indices out of range [0, n)")
    if not np.all(np.isfinite(mm.weights)):
        raise FastGTError("W: weights must be finite")
    if not (0.0 <= mm.mean_weight <= 1.0 + TOL):
        raise FastGTError(f"mean_weight={mm.mean_weight!r} is invalid: allowed a number in [0, 1]")
    if np.any(mm.weights < -TOL) or mm.mean_weight < 0:
        raise FastGTError("W must be nonnegative: found negative weights")
    return mm


def validate(mm: MixingMatrix) -> MixingMatrix:
    """Raise FastGTError unless W is a valid mixing matrix with p > 0
    (DegenerateGraphError when only p = 0 is at fault: a disconnected or bipartite graph).

    A W with a ``structure`` (built by a circulant or hypercube family: symmetric by
    construction) has p > 0 checked exactly on its closed-form spectrum, in O(n log n)
    and without scipy; any other W is checked for symmetry, then its graph for
    connectedness and bipartiteness.
    """
    n = check_entries(mm).n
    if mm.structure is None:
        A = mm.sparse_part()
        asym = abs(A - A.T)
        if asym.nnz and asym.max() > TOL:
            raise FastGTError(f"W must be symmetric: max |w_ij - w_ji| = {asym.max():.3g} > {TOL:g}")
    rows = np.bincount(np.repeat(np.arange(n), np.diff(mm.indptr)), mm.weights, minlength=n)
    err = np.max(np.abs(rows + mm.mean_weight - 1.0))
    if err > TOL:
        raise FastGTError(f"W must be doubly stochastic: max |row sum - 1| = {err:.3g} > {TOL:g}")
    if mm.mean_weight > TOL:
        return mm
    if mm.structure is not None:
        s = mm.spectrum()  # exact gaps: a disconnected or bipartite structure gives exactly 0
        if s.gap2 <= 0.0:
            raise DegenerateGraphError(_disconnected(mm, "eigenvalue 1 is repeated"))
        if s.gapn <= 0.0:
            raise DegenerateGraphError(BIPARTITE)
        return mm
    from scipy.sparse.csgraph import connected_components

    A = A.copy()
    A.eliminate_zeros()  # csgraph counts explicitly stored zeros as edges
    ncomp, _ = connected_components(A, directed=False)
    if ncomp > 1:
        raise DegenerateGraphError(_disconnected(mm, f"{ncomp} components"))
    if np.all(A.diagonal() <= TOL) and _is_bipartite(A):
        raise DegenerateGraphError(BIPARTITE)
    return mm


def _disconnected(mm: MixingMatrix, what: str) -> str:
    """The refusal of a disconnected graph, with the remedy of a random family's."""
    seed = "another seed: graph_seed in grid files and the shell"
    remedy = {"erdos_renyi": f" (raise prob, or {seed})",
              "geometric": f" (raise radius, or {seed})"}.get(mm.name, "")
    return f"graph is disconnected ({what}): p = 0; allowed only connected graphs{remedy}"
BIPARTITE = ("W has eigenvalue -1 (bipartite graph with zero self-weights): p = 0; "
             "allowed only W with lambda_n > -1 (use lazy=True or a positive self_weight)")


def _is_bipartite(A: sp.csr_matrix) -> bool:
    """A connected graph is bipartite iff its bipartite double cover [[0, A], [A, 0]]
    (two copies of the nodes, every edge joining the copies) is disconnected."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    cover = sp.bmat([[None, A], [A, None]], format="csr")
    return connected_components(cover, directed=False)[0] > 1
