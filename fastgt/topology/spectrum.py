"""Spectrum of a mixing matrix: lambda2, lambda_n, delta, p, c and the two eigenvectors.

Closed forms (FFT of the first row) for circulant families (ring, interp_ring, torus,
complete, exponential) and Walsh-Hadamard for the hypercube; dense ``eigh`` up to
``DENSE_MAX`` nodes; Lanczos (``eigsh``) on the deflated operator W - (1/n) 1 1^T beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from ..errors import FastGTError, check_choice

DENSE_MAX = 2048
METHODS = ("auto", "closed", "dense", "sparse")


@dataclass(frozen=True)
class Spectrum:
    """Second largest (lambda2) and smallest (lambda_n) eigenvalues of W, u and v their unit
    eigenvectors.

    Stored as gap2 = 1 - lambda2 and gapn = 1 + lambda_n, which closed forms compute
    without cancellation (a ring with n = 10^6 has 1 - lambda2 ~ 1e-11). Then
    delta = 1 - max(|l2|, |ln|) = min(gap2, gapn),
    p = 1 - max(|l2|, |ln|)^2 = min(gap2 (2 - gap2), gapn (2 - gapn)),
    c = 1 - min(ln, 0)^2 = gapn (2 - gapn) if ln < 0 else 1.
    """

    gap2: float
    gapn: float
    method: str
    u: np.ndarray | None = None
    v: np.ndarray | None = None

    @property
    def lambda2(self) -> float:
        return 1.0 - self.gap2

    @property
    def lambda_n(self) -> float:
        return self.gapn - 1.0

    @property
    def delta(self) -> float:
        return min(self.gap2, self.gapn)

    @property
    def p(self) -> float:
        return min(self.gap2 * (2.0 - self.gap2), self.gapn * (2.0 - self.gapn))

    @property
    def c(self) -> float:
        return self.gapn * (2.0 - self.gapn) if self.gapn < 1.0 else 1.0

    def as_dict(self) -> dict:
        return {"lambda2": self.lambda2, "lambda_n": self.lambda_n, "delta": self.delta,
                "p": self.p, "c": self.c, "method": self.method}


def compute_spectrum(mm, vectors: bool = False, method: str = "auto") -> Spectrum:
    check_choice("method", method, METHODS)
    if method == "auto":
        if mm.structure is not None:
            method = "closed"
        elif mm.n <= DENSE_MAX:
            method = "dense"
        else:
            method = "sparse"
    if method == "closed":
        if mm.structure is None:
            raise FastGTError(f"method='closed' is invalid for {mm.name}: allowed only for "
                              "circulant families and the hypercube")
        return _closed(mm, vectors)
    if method == "dense":
        return _dense(mm, vectors)
    return _sparse(mm, vectors)


def _first_row(mm) -> np.ndarray:
    row = np.zeros(mm.n)
    lo, hi = mm.indptr[0], mm.indptr[1]
    np.add.at(row, mm.indices[lo:hi], mm.weights[lo:hi])
    return row + mm.mean_weight / mm.n


def _fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform of a length-2^k vector."""
    a = a.copy()
    n, h = len(a), 1
    while h < n:
        a = a.reshape(-1, 2, h)
        a = np.stack([a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]], axis=1).reshape(n)
        h *= 2
    return a


def _closed(mm, vectors: bool) -> Spectrum:
    kind, shape = mm.structure
    row = _first_row(mm)
    n = mm.n
    if kind == "circulant":
        lam = np.real(np.fft.fftn(row.reshape(shape))).ravel()
    else:  # hypercube: Cayley graph of Z_2^dim, characters (-1)^popcount(j & S)
        lam = _fwht(row)
    lam[0] = -np.inf  # the all-ones eigenvector (eigenvalue 1) is not lambda2
    i2 = int(np.argmax(lam))
    lam[0] = np.inf
    i_n = int(np.argmin(lam))
    u = v = None
    if vectors:
        u, v = (_closed_vector(kind, shape, n, k) for k in (i2, i_n))
    return Spectrum(_mode_gaps(mm, i2)[0], _mode_gaps(mm, i_n)[1], "closed", u, v)


def _closed_vector(kind: str, shape, n: int, k: int) -> np.ndarray:
    """Unit eigenvector of mode k: cos(2 pi <freq, index>) or a Walsh character."""
    if kind == "circulant":
        freq = np.unravel_index(k, shape)
        idx = np.indices(shape).reshape(len(shape), -1)
        phase = sum(freq[a] * idx[a] / shape[a] for a in range(len(shape)))
        vec = np.cos(2 * np.pi * phase)
    else:
        vec = 1.0 - 2.0 * (np.bitwise_count(np.arange(n) & k) % 2)
    return vec / np.linalg.norm(vec)


def _mode_gaps(mm, k: int) -> tuple[float, float]:
    """(1 - lambda_k, 1 + lambda_k) for a non-constant mode k, without cancellation.

    With row 0 of the sparse part a_j and the mode's value chi_j = cos(theta_j) at node j
    (chi_0 = 1): lambda_k = sum_j a_j chi_j, sum_j a_j = 1 - beta, so
    1 - lambda_k = beta + sum_j a_j (1 - chi_j) = beta + sum_j a_j 2 sin^2(theta_j / 2) and
    1 + lambda_k = beta + sum_j a_j 2 cos^2(theta_j / 2).
    """
    kind, shape = mm.structure
    lo, hi = mm.indptr[0], mm.indptr[1]
    j, a = mm.indices[lo:hi], mm.weights[lo:hi]
    if kind == "circulant":
        freq = np.unravel_index(k, shape)
        idx = np.unravel_index(j, shape)
        half = np.pi * sum(freq[q] * idx[q] / shape[q] for q in range(len(shape)))
        sin2, cos2 = np.sin(half) ** 2, np.cos(half) ** 2
    else:
        odd = (np.bitwise_count(j & k) % 2).astype(np.float64)
        sin2, cos2 = odd, 1.0 - odd
    beta = mm.mean_weight
    return float(beta + 2.0 * a @ sin2), float(beta + 2.0 * a @ cos2)


def _dense(mm, vectors: bool) -> Spectrum:
    W = mm.to_dense()
    if vectors:
        lam, vec = sla.eigh(W)
        return Spectrum(1.0 - lam[-2], 1.0 + lam[0], "dense", vec[:, -2].copy(), vec[:, 0].copy())
    lam = sla.eigvalsh(W)
    return Spectrum(1.0 - lam[-2], 1.0 + lam[0], "dense")


def _sparse(mm, vectors: bool) -> Spectrum:
    """Lanczos on M = W - (1/n) 1 1^T (the all-ones direction maps to 0, others unchanged)."""
    A = mm.sparse_part()
    n, shift = mm.n, mm.mean_weight - 1.0

    def mv(x):
        x = np.asarray(x)
        return A @ x + shift * x.mean(axis=0)

    op = spla.LinearOperator((n, n), matvec=mv, matmat=mv, dtype=np.float64)
    ones = np.ones(n) / math.sqrt(n)
    out = []
    for which in ("LA", "SA"):
        try:
            lam, vec = spla.eigsh(op, k=2, which=which, tol=0, maxiter=max(1000, 20 * n))
        except spla.ArpackNoConvergence as err:
            raise FastGTError(f"spectrum: Lanczos did not converge for {mm.describe()} "
                              f"(n={n}); try method='dense' if n allows ({err})") from None
        order = np.argsort(lam)[::-1] if which == "LA" else np.argsort(lam)
        lam, vec = lam[order], vec[:, order]
        k = 1 if abs(vec[:, 0] @ ones) > 0.5 else 0  # skip the deflated all-ones direction
        out.append((float(lam[k]), vec[:, k].copy()))
    (l2, u), (ln, v) = out
    return Spectrum(1.0 - l2, 1.0 + ln, "sparse", u if vectors else None, v if vectors else None)
