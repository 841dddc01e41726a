"""Plain numpy / scipy implementations of GT and D-SGD on Setup A, the benchmark's baselines.

Setup A: f_i(x) = ||x||^2, so a stochastic gradient is 2 x + N(0, sigma2/d) noise per
coordinate, drawn with numpy's ``default_rng(seed).standard_normal(out=...)``.

Two ways to apply the mixing matrix W (n x n) to an n x m block of rows:

- ``numpy-dense``: ``np.matmul(W.to_dense(), S, out=...)`` (one BLAS GEMM);
- ``scipy-sparse``: ``A @ S + beta * mean(S)`` with A = ``W.sparse_part()`` (CSR) and
  beta = ``W.mean_weight``, i.e. W = A + beta/n 1 1^T. This is the fair sparse form: a plain
  CSR of the interpolated ring (alpha < 1) would be fully dense.

Both algorithms allocate their state once and update it with ``out=`` / in-place numpy
operations. GT mixes X - gamma Y and Y with a single product ``W @ [X - gamma Y | Y]``
(n x 2d), D-SGD mixes Z = X - gamma G:

    GT:    X' = W (X - gamma Y);  G' = 2 X' + noise;  Y' = W Y + G' - G;  (Y0 = G0)
    D-SGD: X' = W Z;  G' = 2 X' + noise;  Z' = X' - gamma G'
"""

from __future__ import annotations

import math

import numpy as np

A0 = 2.0  # Setup A: grad f_i(x) = A0 * x


class DenseMix:
    """W as a dense numpy array; ``mix(S, out)`` writes W @ S into ``out``."""

    name = "numpy-dense"

    def __init__(self, W):
        self.Wd = W.to_dense()

    def __call__(self, S: np.ndarray, out: np.ndarray) -> np.ndarray:
        return np.matmul(self.Wd, S, out=out)


class SparseMix:
    """W as scipy CSR sparse part + rank-one mean term; ``mix(S, out)`` returns W @ S.

    scipy's sparse @ dense product cannot write into a given array, so ``out`` is unused
    and the result is a new array.
    """

    name = "scipy-sparse"

    def __init__(self, W):
        self.A = W.sparse_part()
        self.beta = W.mean_weight

    def __call__(self, S: np.ndarray, out: np.ndarray) -> np.ndarray:
        M = self.A @ S
        if self.beta:
            M += self.beta * S.mean(axis=0)
        return M


MIXERS = {m.name: m for m in (DenseMix, SparseMix)}


class _Run:
    """Shared state handling: x0, gradient oracle with preallocated noise buffer."""

    mix_cols = 1  # the mixed block is n x (mix_cols * d)

    def __init__(self, mix, x0: np.ndarray, gamma: float, sigma2: float, seed: int,
                 structured=None):
        self.mix = mix
        self.structured = structured  # Setup B: (uv (2, n), dv), else None (Setup A)
        self.gamma = gamma
        self.n, self.d = x0.shape
        self.scale = math.sqrt(sigma2 / self.d)
        self.rng = np.random.default_rng(seed)
        self.E = np.empty_like(x0)
        self.M = np.empty((self.n, self.mix_cols * self.d))  # mix output (dense engine)
        self.X = np.array(x0, dtype=np.float64)

    def grad(self, X: np.ndarray, out: np.ndarray) -> None:
        """out = A0 X + noise (none when sigma2 = 0): Setup A's N(0, sigma2/d) per entry,
        or Setup B's xi ~ N(0, sigma2/d I_d) shared by all nodes, node i's coordinate k
        getting xi_k v_i (k < dv) or xi_k u_i."""
        np.multiply(X, A0, out=out)
        if not self.scale:
            return
        if self.structured is None:
            self.rng.standard_normal(out=self.E)
            self.E *= self.scale
        else:
            (v, u), dv = self.structured
            xi = self.rng.standard_normal(self.d) * self.scale
            np.multiply(v[:, None], xi[None, :dv], out=self.E[:, :dv])
            np.multiply(u[:, None], xi[None, dv:], out=self.E[:, dv:])
        out += self.E

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self.step()


class GT(_Run):
    """Gradient Tracking (paper Algorithm 1). State S = [X - gamma Y | Y], G, G'."""

    mix_cols = 2

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        d = self.d
        self.S = np.empty((self.n, 2 * d))
        self.Z, self.Y = self.S[:, :d], self.S[:, d:]
        self.G = np.empty_like(self.X)
        self.Gn = np.empty_like(self.X)
        self.grad(self.X, self.G)
        self.Y[...] = self.G
        self._set_z()

    def _set_z(self) -> None:
        np.multiply(self.Y, -self.gamma, out=self.Z)
        self.Z += self.X

    def step(self) -> None:
        M = self.mix(self.S, self.M)
        d = self.d
        self.X = M[:, :d]
        self.grad(self.X, self.Gn)
        np.add(M[:, d:], self.Gn, out=self.Y)
        self.Y -= self.G
        self.G, self.Gn = self.Gn, self.G
        self._set_z()

    def iterates(self):
        return self.X, self.Y


class DSGD(_Run):
    """D-SGD run on Z = X - gamma G (the quantity that is mixed)."""

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        self.G = np.empty_like(self.X)
        self.Z = np.empty_like(self.X)
        self._set_z()

    def _set_z(self) -> None:
        self.grad(self.X, self.G)
        np.multiply(self.G, -self.gamma, out=self.Z)
        self.Z += self.X

    def step(self) -> None:
        self.X = self.mix(self.Z, self.M)
        self._set_z()

    def iterates(self):
        return self.X, None


class D2(_Run):
    """D² on Z(t) = 2 X(t) - X(t-1) - gamma (G(t) - G(t-1)): X(t+1) = W Z(t)."""

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        self.G, self.Gn = np.empty_like(self.X), np.empty_like(self.X)
        self.grad(self.X, self.G)
        self.Z = self.X - gamma * self.G

    def step(self) -> None:
        Xn = self.mix(self.Z, self.M).copy()
        self.grad(Xn, self.Gn)
        self.Z = 2.0 * Xn - self.X - self.gamma * (self.Gn - self.G)
        self.X, self.G, self.Gn = Xn, self.Gn, self.G

    def iterates(self):
        return self.X, None


class EXTRA(_Run):
    """EXTRA with the history H(t) = (X(t-1) + W X(t-1))/2 - gamma G(t-1), H(0) = X(0):
    X(t+1) = X(t) + W X(t) - gamma G(t) - H(t)."""

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        self.G = np.empty_like(self.X)
        self.grad(self.X, self.G)
        self.H = self.X.copy()

    def step(self) -> None:
        WX = self.mix(self.X, self.M)
        Xn = self.X + WX - self.gamma * self.G - self.H
        self.H = 0.5 * (self.X + WX) - self.gamma * self.G
        self.X = Xn
        self.grad(self.X, self.G)

    def iterates(self):
        return self.X, None


class GTATC(_Run):
    """ATC-GT: X(t+1) = W (X - gamma Y); Y(t+1) = W (Y + G(t+1) - G(t))."""

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        self.G, self.Gn = np.empty_like(self.X), np.empty_like(self.X)
        self.grad(self.X, self.G)
        self.Y = self.G.copy()

    def step(self) -> None:
        self.X = self.mix(self.X - self.gamma * self.Y, self.M).copy()
        self.grad(self.X, self.Gn)
        self.Y = self.mix(self.Y + self.Gn - self.G, self.M).copy()
        self.G, self.Gn = self.Gn, self.G

    def iterates(self):
        return self.X, self.Y


class Centralized(_Run):
    """Every node at xbar: xbar(t+1) = mean_i (xbar - gamma g_i(xbar)) (no mixer needed)."""

    def __init__(self, mix, x0, gamma, sigma2, seed, structured=None):
        super().__init__(mix, x0, gamma, sigma2, seed, structured)
        self.X = np.tile(self.X.mean(axis=0), (self.n, 1))
        self.G = np.empty_like(self.X)

    def step(self) -> None:
        self.grad(self.X, self.G)
        self.X[:] = (self.X - self.gamma * self.G).mean(axis=0)

    def iterates(self):
        return self.X, None


ALGORITHMS = {"gt": GT, "dsgd": DSGD, "d2": D2, "extra": EXTRA, "gt_atc": GTATC,
              "centralized": Centralized}


def make(algorithm: str, mix, x0: np.ndarray, gamma: float, sigma2: float, seed: int = 0,
         structured=None) -> _Run:
    """A baseline run of ``algorithm`` (a key of ALGORITHMS) with mixer ``mix`` (DenseMix | SparseMix);
    structured = (uv, dv) for Setup B's noise, None for Setup A's."""
    return ALGORITHMS[algorithm](mix, x0, gamma, sigma2, seed, structured)


def metrics(X: np.ndarray, Y: np.ndarray | None) -> tuple[float, ...]:
    """fastgt's recorded metrics on Setup A (f = ||x||^2, f* = 0):
    loss_avg, loss_nodes, consensus, grad_norm2, tracking (NaN without Y)."""
    xbar = X.mean(axis=0)
    loss_avg = float(xbar @ xbar)
    loss_nodes = float(np.einsum("ij,ij->", X, X)) / X.shape[0]
    D = X - xbar
    consensus = float(np.einsum("ij,ij->", D, D)) / X.shape[0]
    tracking = math.nan
    if Y is not None:
        DY = Y - Y.mean(axis=0)
        tracking = float(np.einsum("ij,ij->", DY, DY)) / Y.shape[0]
    return loss_avg, loss_nodes, consensus, A0 * A0 * loss_avg, tracking
