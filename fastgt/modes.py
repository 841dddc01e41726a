"""Per-mode linear systems of the exact theory (fastgt.theory, docs/theory.md): one
non-mean mode's step map, its stationary covariance, and the paper's two relaxations.

- Separate mixing for y (topology_y): when W and W_y share their eigenvectors (both
  circulant of one shape, or both hypercubes: the same modes), each mode has its own pair
  of eigenvalues (lam, mu), and ``mode_system`` takes mu. Otherwise, up to DENSE_Y_MAX
  nodes, the full 3n-state system of a coordinate (``dense_maps``), on the subspace where
  GT's invariant holds.
- Local steps k: a period is k - 1 steps with W = I (every mode's lam = mu = 1) and one
  communicating step; the covariance at the period's start solves P = Phi P Phi^T + Q, Phi
  the product of the k step maps and Q their accumulated noise, and the covariance at each
  later phase follows by one step map each (``phase_covariances``). The rate per step is
  rho(Phi)^(1/k).
"""

from __future__ import annotations

import numpy as np

from .errors import FastGTError


def mode_system(lam, algorithm: str, stepsize: float, a: float, mu=None):
    """(A, b): one non-mean mode (eigenvalue lam, an array) as s(t+1) = A s(t) + b e(t+1),
    e the mode's noise at the step's new gradient; s[0] = x, and s[1] = y for GT and ATC-GT.
    With g = a gamma and gradient a x + e (mu: the mode's eigenvalue of y's own matrix,
    topology_y, which must share W's eigenvectors; lam when None):

        GT      s = (x, y, e):       x' = lam (x - gamma y),  y' = mu y + (a x' + e') - (a x + e)
        ATC-GT  s = (x, y, e):       x' = lam (x - gamma y),  y' = mu (y + a (x' - x) + e' - e)
        D²      s = (x, x_, e):      x' = lam ((2 - g) x - (1 - g) x_ - gamma (e - e_)),
                                     the noise of x's gradient entering as the *new* e
        EXTRA   s = (x, h, e):       x' = (1 + lam) x - h - gamma (a x + e),
                                     h' = (1 + lam)/2 x - gamma (a x + e)
                                     (h: the kernel's H, made with the step's own W: with
                                     local steps, the next step's W may differ)
        D-SGD   s = (x, e):          x' = lam ((1 - g) x - gamma e)

    (D²: e is the noise of the gradient at x, e_ the previous one; the input is the
    gradient noise of the current iterate, drawn when it was made. EXTRA: e is the noise of
    the gradient at x, the input that of x'.)"""
    lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    mu = lam if mu is None else np.atleast_1d(np.asarray(mu, dtype=np.float64))
    g, gm, m = a * stepsize, stepsize, len(lam)
    z, one = np.zeros(m), np.ones(m)
    if algorithm == "gt":
        A = [[lam, -gm * lam, z], [a * lam - a, mu - a * gm * lam, -one], [z, z, z]]
        b = [z, one, one]
    elif algorithm == "gt_atc":
        # written so that mu = lam gives the bits of lam - a gm lam^2 and a lam (lam - 1)
        A = [[lam, -gm * lam, z], [a * mu * (lam - 1), mu - a * gm * (lam * mu), -mu], [z, z, z]]
        b = [z, mu, one]
    elif algorithm == "d2":
        A = [[lam * (2 - g), -lam * (1 - g), gm * lam], [one, z, z], [z, z, z]]
        b = [-gm * lam, z, one]
    elif algorithm == "extra":
        A = [[1 + lam - g, -one, -gm * one], [(1 + lam) / 2 - g, z, -gm * one], [z, z, z]]
        b = [z, z, one]
    elif algorithm == "dsgd":
        A = [[lam * (1 - g), -gm * lam], [z, z]]
        b = [z, one]
    else:
        raise FastGTError(f"theory: no mode system for algorithm={algorithm!r}")
    return np.moveaxis(np.array(A), -1, 0), np.moveaxis(np.array(b), -1, 0)


def lyapunov(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P with P = A P A^T + Q for every mode at once (A: (m, k, k)), Q = b b^T for b of
    shape (m, k), or Q itself (m, k, k), through vec: (I - A (x) A) vec P = vec Q."""
    m, k, _ = A.shape
    kron = np.einsum("mij,mkl->mikjl", A, A).reshape(m, k * k, k * k)
    Q = np.einsum("mi,mj->mij", b, b) if b.ndim == 2 else b
    rhs = Q.reshape(m, k * k)
    return np.linalg.solve(np.eye(k * k) - kron, rhs[..., None])[..., 0].reshape(m, k, k)




def period_maps(lam, algorithm: str, stepsize: float, a: float, mu=None, local: int = 1):
    """[(A, b)] of the steps of one period from a communication: local - 1 steps with
    W = I (lam = mu = 1), then the communicating one. Centralized is D-SGD with every
    non-mean lam = 0 (the exact average) on its communicating steps."""
    lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    if algorithm == "centralized":
        algorithm, lam, mu = "dsgd", np.zeros_like(lam), None
    comm = mode_system(lam, algorithm, stepsize, a, mu)
    if local == 1:
        return [comm]
    one = np.ones_like(lam)
    return [mode_system(one, algorithm, stepsize, a, one)] * (local - 1) + [comm]


def _product(maps):
    """(Phi, Q): the period's map and its accumulated noise covariance."""
    A0, _ = maps[0]
    m, k, _ = A0.shape
    Phi, Q = np.broadcast_to(np.eye(k), (m, k, k)), np.zeros((m, k, k))
    for A, b in maps:
        Phi = A @ Phi
        Q = A @ Q @ np.swapaxes(A, 1, 2) + np.einsum("mi,mj->mij", b, b)
    return Phi, Q


def phase_covariances(maps) -> list[np.ndarray]:
    """Stationary covariance (m, k, k) at each phase j = 0..len(maps) - 1 of the period
    (phase 0: just after a communicating step; phase j: j local steps later)."""
    Phi, Q = _product(maps)
    P = [lyapunov(Phi, Q)]
    for A, b in maps[:-1]:
        P.append(A @ P[-1] @ np.swapaxes(A, 1, 2) + np.einsum("mi,mj->mij", b, b))
    return P


def period_radius(maps) -> np.ndarray:
    """Per-step spectral radius of each mode's noiseless iteration: rho(Phi)^(1/k)."""
    Phi, _ = _product(maps)
    return np.abs(np.linalg.eigvals(Phi)).max(axis=1) ** (1.0 / len(maps))


def recorded_phases(local: int, record_every: int | None) -> list[int]:
    """The phases the records fall on (steps r, 2 r, ... mod local), each equally often."""
    if record_every is None or local == 1:
        return list(range(local))
    return sorted({(m * record_every) % local for m in range(1, local + 1)})


def shared_modes(W, Wy) -> tuple[np.ndarray, np.ndarray]:
    """(lam, mu) of every non-mean mode of W and W_y, paired by mode: both circulant of one
    shape, or both hypercubes of one size (their modes are the same Fourier or Walsh
    vectors); FastGTError otherwise."""
    from .topology.spectrum import mode_eigenvalues

    if not shares_modes(W, Wy):
        raise FastGTError(
            f"theory with topology_y: covered when W and topology_y share their eigenvectors "
            f"(both circulant of one shape, or both hypercubes), not {W.describe()} with "
            f"{Wy.describe()}")
    return mode_eigenvalues(W)[1:], mode_eigenvalues(Wy)[1:]


def mode_eigenvalue(Wy, v) -> float:
    """mu with W_y v = mu v (v a unit eigenvector of W that W_y shares), or FastGTError."""
    Wv = Wy.matvec(v)
    mu = float(v @ Wv)
    if np.linalg.norm(Wv - mu * v) > 1e-9:
        raise FastGTError("theory with topology_y: structured noise's eigenvectors of W are "
                          "not eigenvectors of topology_y")
    return mu


#: largest n of the dense path (topology_y without W's eigenvectors): 3n states per coordinate
DENSE_Y_MAX = 120


def dense_maps(W, Wy, algorithm: str, stepsize: float, a: float, local: int = 1):
    """GT or ATC-GT with y mixing with W_y, as the full system of one coordinate, for W and
    W_y that need not share eigenvectors: s = (x, y, e) over the n nodes, s' = M s + N e'.
    Returns ([(M, N)] of a period, U): U an orthonormal basis of the subspace where the
    invariant 1^T (y - a x - e) is 0 (y(0) = g(0)), which every M keeps."""
    n = W.n
    if n > DENSE_Y_MAX:
        raise FastGTError(
            f"theory with topology_y: {W.describe()} and {Wy.describe()} do not share their "
            f"eigenvectors, and the dense path is for n <= {DENSE_Y_MAX} (n={n})")
    import scipy.linalg as sla

    I, Z = np.eye(n), np.zeros((n, n))

    def step(Wd, Yd):
        if algorithm == "gt":
            M = np.block([[Wd, -stepsize * Wd, Z], [a * (Wd - I), Yd - a * stepsize * Wd, -I],
                          [Z, Z, Z]])
            return M, np.vstack([Z, I, I])
        M = np.block([[Wd, -stepsize * Wd, Z],
                      [a * Yd @ (Wd - I), Yd @ (I - a * stepsize * Wd), -Yd], [Z, Z, Z]])
        return M, np.vstack([Z, Yd, I])

    maps = [step(I, I)] * (local - 1) + [step(W.to_dense(), Wy.to_dense())]
    ell = np.concatenate([-a * np.ones(n), np.ones(n), -np.ones(n)])
    return maps, sla.null_space(ell[None, :])


def dense_covariances(maps, U, S) -> list[np.ndarray]:
    """The stationary covariance of the full state at each phase of the period, for noise
    of covariance S (n x n) per step, on the invariant subspace U."""
    import scipy.linalg as sla

    k = len(U)
    Phi, Q = np.eye(k), np.zeros((k, k))
    for M, N in maps:
        Phi = M @ Phi
        Q = M @ Q @ M.T + N @ S @ N.T
    P = [U @ sla.solve_discrete_lyapunov(U.T @ Phi @ U, U.T @ Q @ U) @ U.T]
    for M, N in maps[:-1]:
        P.append(M @ P[-1] @ M.T + N @ S @ N.T)
    return P


def dense_radius(maps, U) -> float:
    """Per-step spectral radius of the noiseless full system on the invariant subspace (the
    mean mode included)."""
    Phi = np.eye(len(U))
    for M, _ in maps:
        Phi = M @ Phi
    return float(np.abs(np.linalg.eigvals(U.T @ Phi @ U)).max() ** (1.0 / len(maps)))


def shares_modes(W, Wy) -> bool:
    """Whether the per-mode path pairs W's and W_y's modes (shared_modes)."""
    return W.structure is not None and W.structure == Wy.structure
