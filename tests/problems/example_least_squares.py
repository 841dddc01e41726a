"""Least squares on node-local samples: the worked example of docs/extending.md, a problem
module as it would sit in fastgt/problems/ (tests/problems/test_example_problem.py registers and
checks it).

    f_i(x) = 1/(2 m_i) ||A_i x - b_i||^2 + reg/2 ||x||^2

Node i holds m_i = ``samples`` rows (A_i, b_i), drawn from the problem's seed: a_ij ~ N(0, I),
b_ij = a_ij^T x_i + N(0, 0.25) with x_i = x_0 + N(0, I) (each node its own planted point).
Under noise="minibatch" its stochastic gradient is the gradient on ``batch_size`` of its rows
drawn with replacement from the node's counter-based stream; under the other noises, on all
of them (the exact gradient) plus the run's additive noise, if any.
"""

from collections import namedtuple
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from fastgt.config import INLINE_FLAGS
from fastgt.errors import check_float, check_int
from fastgt.kernels.oracles import ProblemKernels, noise_at
from fastgt.kernels.rng import uniform_index
from fastgt.problems.base import SAMPLED, Problem

#: the arrays the kernels read (co.data): every node's rows, node i's from offsets[i] to
#: offsets[i + 1]; batch 0 = all rows
Data = namedtuple("Data", "A b offsets batch reg")


@njit(**INLINE_FLAGS)
def grad_row(co, node, X, r, G, q):
    """G[q] = node i's stochastic gradient at X[r]: reg X[r] + (1/B) sum over its B drawn
    rows j of (a_j^T X[r] - b_j) a_j, plus the additive noise."""
    A, b, data, i, d = co.data.A, co.data.b, co.data, node.i, X.shape[1]
    lo, m = data.offsets[i], data.offsets[i + 1] - data.offsets[i]
    drawn = data.batch if data.batch > 0 else m
    for k in range(d):
        G[q, k] = data.reg * X[r, k]
    for j in range(drawn):
        s = lo + (uniform_index(node.key, j, m) if data.batch > 0 else j)
        res = -b[s]
        for k in range(d):
            res += A[s, k] * X[r, k]
        res /= drawn
        for k in range(d):
            G[q, k] += res * A[s, k]
    for k in range(d):
        G[q, k] += noise_at(co.N, node.rn, k, node.v, node.u, co.dv)


KERNELS = ProblemKernels("least_squares", grad_row)


@dataclass(eq=False)
class LeastSquares(Problem):
    name: str
    n: int
    d: int
    A: np.ndarray  # (sum m_i, d)
    b: np.ndarray
    offsets: np.ndarray  # (n + 1,)
    batch_size: int = 1
    reg: float = 0.0
    drawn: bool = False  # minibatches drawn (noise="minibatch"), else every row
    kernels = KERNELS

    def for_noise(self, noise: str):
        """The instance a run with gradient noise ``noise`` uses: minibatches under the
        minibatch noises, every row under the others."""
        return replace(self, drawn=noise in SAMPLED)

    def _node_sums(self):
        """(1/n) sum_i A_i^T A_i / m_i and (1/n) sum_i A_i^T b_i / m_i."""
        m = np.diff(self.offsets)
        w = np.repeat(1.0 / (self.n * m), m)
        return (self.A * w[:, None]).T @ self.A, (self.A * w[:, None]).T @ self.b

    @property
    def xstar(self) -> np.ndarray:
        H, g = self._node_sums()
        return np.linalg.solve(H + self.reg * np.eye(self.d), g)

    @property
    def fstar(self) -> float:
        return float(self.f(self.xstar))

    def f(self, x):
        x = np.asarray(x, dtype=np.float64)
        m = np.diff(self.offsets)
        res2 = (x @ self.A.T - self.b) ** 2  # (..., sum m_i)
        per_node = np.add.reduceat(res2, self.offsets[:-1], axis=-1) / (2 * m)
        return per_node.mean(axis=-1) + 0.5 * self.reg * np.sum(x * x, axis=-1)

    def grad(self, X):
        node = np.repeat(np.arange(self.n), np.diff(self.offsets))
        res = (np.einsum("sk,sk->s", self.A, X[node]) - self.b) / np.diff(self.offsets)[node]
        G = np.zeros_like(X, dtype=np.float64)
        np.add.at(G, node, res[:, None] * self.A)
        return G + self.reg * X

    def kernel_data(self, pad) -> Data:
        return Data(pad(self.A), self.b, self.offsets, self.batch_size if self.drawn else 0,
                    self.reg)


def least_squares(n: int, d: int, samples: int = 20, batch_size: int = 1, reg: float = 0.0,
                  seed: int = 0) -> LeastSquares:
    samples = check_int("samples", samples, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    reg = check_float("reg", reg, 0.0)
    rng = np.random.default_rng([check_int("seed", seed, 0), 0x15])
    A = rng.normal(size=(n * samples, d))
    planted = rng.normal(size=d) + rng.normal(size=(n, d))
    b = np.einsum("sk,sk->s", A, np.repeat(planted, samples, axis=0))
    b += rng.normal(0.0, 0.5, size=n * samples)
    offsets = np.arange(n + 1, dtype=np.int64) * samples
    return LeastSquares("least_squares", n, d, A, b, offsets, batch_size, reg)


PROBLEMS = {"least_squares": least_squares}
