"""Spectrum of a mixing matrix: lambda2, lambda_n, delta, p, c and the two eigenvectors.

Closed forms (FFT of the first row) for circulant families (ring, interp_ring, torus,
complete, exponential) and Walsh-Hadamard for the hypercube, with the gaps of the extreme
modes recomputed without cancellation; dense ``eigh`` up to ``DENSE_MAX`` nodes; Lanczos
(``eigsh``) beyond, with the all-ones direction shifted away from the wanted end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import derived
from ..errors import FastGTError, bad, check_choice

DENSE_MAX = 2048
DENSE_FORCE_MAX = 8192  # method="dense" beyond this would need > 0.5 GB
CANDIDATE_TOL = 1e-12
MAX_CANDIDATES = 1024
METHODS = ("auto", "closed", "dense", "sparse")


class SpectralSummary:
    """What a static spectrum (Spectrum) and a period's (topology/varying.py) show alike:
    their columns (as_dict) and a repr of the values a reader looks for."""

    def as_dict(self) -> dict:
        return {"lambda2": self.lambda2, "lambda_n": self.lambda_n, "gap2": self.gap2,
                "gapn": self.gapn, "delta": self.delta, "p": self.p, "c": self.c,
                "p_eff": self.p_eff, "method": self.method}

    def __repr__(self) -> str:
        keys = ("lambda2", "lambda_n", "p", "c") + (("p_eff",) if self.p_eff != self.p else ())
        shown = ", ".join(f"{k}={getattr(self, k):.12g}" for k in keys)
        vectors = ", u, v" if getattr(self, "u", None) is not None else ""
        return f"{type(self).__name__}({shown}, method={self.method!r}{vectors})"


@dataclass(frozen=True, repr=False)
class Spectrum(SpectralSummary):
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

    @property
    def p_eff(self) -> float:
        """A time-varying topology's per-step contraction (topology/varying.py); p here."""
        return self.p


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
        if mm.n > DENSE_FORCE_MAX:
            raise bad("method", method, f"'auto', 'closed' or 'sparse' for n={mm.n} > "
                      f"{DENSE_FORCE_MAX} (a dense n x n matrix)")
        return _dense(mm, vectors)
    if vectors:
        return _sparse(mm, vectors)
    # Lanczos' values (DIR/spectrum holds no others), kept by a sweep
    gaps = derived.kept("spectrum", mm.fingerprint, (2,),
                        lambda: np.array([(sp := _sparse(mm, False)).gap2, sp.gapn]))
    return Spectrum(float(gaps[0]), float(gaps[1]), "sparse")


def dense_eigenvalues(mm) -> np.ndarray:
    """Every eigenvalue of W, ascending, by a dense ``eigvalsh``: computed once per matrix
    (the spectrum and the theory's modes share it) and kept by a sweep (fastgt/derived.py:
    seconds at n = 2048, a minute at 4096)."""
    if "eigenvalues" not in mm._spectra:
        def derive():
            import scipy.linalg as sla  # lazily, as _sparse's solver: most runs need neither

            return sla.eigvalsh(mm.to_dense(), overwrite_a=True, check_finite=False)

        mm._spectra["eigenvalues"] = derived.kept("eigenvalues", mm.fingerprint, (mm.n,),
                                                  derive)
    return mm._spectra["eigenvalues"]


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


def mode_eigenvalues(mm) -> np.ndarray:
    """Eigenvalue of every mode of a circulant or hypercube W (mode 0 is the all-ones
    vector, eigenvalue 1): FFT or Walsh-Hadamard transform of the first row, O(n log n)."""
    kind, shape = mm.structure
    row = _first_row(mm)
    if kind == "circulant":
        return np.real(np.fft.fftn(row.reshape(shape))).ravel()
    return _fwht(row)  # hypercube: Cayley graph of Z_2^dim, characters (-1)^popcount(j & S)


def _closed(mm, vectors: bool) -> Spectrum:
    """Eigenvalues of every mode (``mode_eigenvalues``); the gaps of the extreme modes are
    then recomputed exactly (``_mode_gaps``)."""
    kind, shape = mm.structure
    lam = mode_eigenvalues(mm)[1:]
    # mode 0 (the all-ones vector, eigenvalue 1) is left out. Transform errors are ~1e-15, so
    # every mode within CANDIDATE_TOL of an extreme is a candidate; the exact gaps decide.
    # (Huge sets of candidates are exact ties, e.g. the complete graph: a few suffice.)
    top = 1 + np.flatnonzero(lam >= lam.max() - CANDIDATE_TOL)[:MAX_CANDIDATES]
    bottom = 1 + np.flatnonzero(lam <= lam.min() + CANDIDATE_TOL)[:MAX_CANDIDATES]
    gap2 = _mode_gaps(mm, top)[0]
    gapn = _mode_gaps(mm, bottom)[1]
    i2, i_n = int(top[np.argmin(gap2)]), int(bottom[np.argmin(gapn)])
    u = v = None
    if vectors:
        u, v = (_closed_vector(kind, shape, mm.n, k) for k in (i2, i_n))
    return Spectrum(float(gap2.min()), float(gapn.min()), "closed", u, v)


def _phase(freq, idx, shape) -> tuple[np.ndarray, int]:
    """Integer P with <freq, idx / shape> = P / N mod 1, N = prod(shape): exact, no rounding."""
    big = math.prod(shape)
    num = 0
    for f, i, m in zip(freq, idx, shape, strict=True):
        num = (num + (np.asarray(f, np.int64) * i % m) * (big // m)) % big
    return num, big


def _closed_vector(kind: str, shape, n: int, k: int) -> np.ndarray:
    """Unit eigenvector of mode k: cos(2 pi <freq, index / shape>) or a Walsh character."""
    if kind == "circulant":
        num, big = _phase(np.unravel_index(k, shape), np.indices(shape).reshape(len(shape), -1),
                          shape)
        vec = np.cos(2 * np.pi * (num / big))
    else:
        vec = 1.0 - 2.0 * (np.bitwise_count(np.arange(n) & k) % 2)
    return vec / np.linalg.norm(vec)


def _mode_gaps(mm, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1 - lambda_k, 1 + lambda_k) for non-constant modes ks, without cancellation.

    With row 0 of the sparse part a_j and the mode's value chi_j = cos(theta_j) at node j
    (chi_0 = 1): lambda_k = sum_j a_j chi_j, sum_j a_j = 1 - beta, so
    1 - lambda_k = beta + sum_j a_j (1 - chi_j) = beta + sum_j a_j 2 sin^2(theta_j / 2) and
    1 + lambda_k = beta + sum_j a_j 2 cos^2(theta_j / 2).
    For circulants theta_j / 2 = pi P / N with an exact integer P (``_phase``), reduced so that
    the sine's argument is at most pi / 2 in size: sin^2(pi P / N) = sin^2(pi (P - N) / N) and
    cos^2(pi P / N) = sin^2(pi (2P - N) / (2N)). A ring with n = 10^6 thus gets
    1 - lambda2 = 2 a_1 sin^2(pi / n) to full relative precision.
    """
    kind, shape = mm.structure
    lo, hi = mm.indptr[0], mm.indptr[1]
    j, a = mm.indices[lo:hi], mm.weights[lo:hi]
    ks = np.asarray(ks, np.int64)[:, None]
    if kind == "circulant":
        num, big = _phase(np.unravel_index(ks, shape), np.unravel_index(j, shape), shape)
        sin2 = np.sin(np.pi * (np.where(2 * num > big, num - big, num) / big)) ** 2
        cos2 = np.sin(np.pi * ((2 * num - big) / (2 * big))) ** 2
    else:
        sin2 = (np.bitwise_count(j & ks) % 2).astype(np.float64)
        cos2 = 1.0 - sin2
    beta = mm.mean_weight
    return beta + 2.0 * (sin2 @ a), beta + 2.0 * (cos2 @ a)


def _dense(mm, vectors: bool) -> Spectrum:
    if vectors:
        import scipy.linalg as sla

        lam, vec = sla.eigh(mm.to_dense())
        return Spectrum(1.0 - lam[-2], 1.0 + lam[0], "dense", vec[:, -2].copy(), vec[:, 0].copy())
    lam = dense_eigenvalues(mm)
    return Spectrum(1.0 - lam[-2], 1.0 + lam[0], "dense")


def _sparse(mm, vectors: bool) -> Spectrum:
    """Lanczos (ARPACK) on W with the all-ones direction deflated out of the way.

    The eigenvalue 1 of the all-ones vector is moved by a rank-one shift, W - s (1/n) 1 1^T,
    to 1 - s: to -2 (s = 3) when looking for the largest eigenvalue lambda2 and to 2 (s = -1)
    for the smallest lambda_n; the other eigenpairs are unchanged (they are orthogonal to 1).
    The start vector is fixed, so results are reproducible.
    """
    import scipy.sparse.linalg as spla

    A = mm.sparse_part()
    n = mm.n
    start = np.random.default_rng(0).standard_normal(n)
    out = []
    for which, s in (("LA", 3.0), ("SA", -1.0)):
        shift = mm.mean_weight - s

        def mv(x, shift=shift):
            x = np.asarray(x)
            return A @ x + shift * x.mean(axis=0)

        op = spla.LinearOperator((n, n), matvec=mv, matmat=mv, dtype=np.float64)
        try:
            lam, vec = spla.eigsh(op, k=1, which=which, v0=start, tol=0,
                                  ncv=min(n, 40), maxiter=max(1000, 20 * n))
        except spla.ArpackNoConvergence as err:
            raise FastGTError(f"spectrum: Lanczos did not converge for {mm.describe()} "
                              f"(n={n}); try method='dense' if n allows ({err})") from None
        out.append((float(lam[0]), vec[:, 0].copy()))
    (l2, u), (ln, v) = out
    return Spectrum(1.0 - l2, 1.0 + ln, "sparse", u if vectors else None, v if vectors else None)
