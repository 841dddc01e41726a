"""Finite sums over node-local samples: the family of ``least_squares``, ``logistic`` and
``nonconvex`` (one module each, which declare their loss and regularizer by name).

    f_i(x) = (1/m_i) sum_{j in node i} loss(a_j^T x, y_j) + R(x),   f = (1/n) sum_i f_i

with ``loss`` squared (1/2 (z - y)^2) or logistic (log(1 + exp(-y z)), labels +-1) and R
l2 (reg/2 ||x||^2) or the non-convex reg sum_k x_k^2 / (1 + x_k^2). Node i's rows are a
contiguous range of the data set (dense rows, or CSR when the data are sparse), placed by a
split (fastgt.data.splits). Its stochastic gradient (the kernels' ``grad_row``) is the
gradient on ``batch`` of its rows drawn with replacement from the node's counter-based
stream (``noise="minibatch"``), or on all of them (batch 0: ``full``, ``none``, and the
additive ``gaussian``/``structured`` noise on top of the exact local gradient).

One family, compiled once for all three problems: the loss and regularizer are integer
codes read per row (a branch per sample, against a dot product of d).

Dense rows are summed four at a time: their four margins first (independent dot products,
whose latencies overlap), their four slopes' exps in one vector (kernels/exp.py: each
lane's bits those of a single dense row's exp), then one pass over the gradient row adding
the four products in row order, each rounded into it as a row at a time would (the same
bits: the golden set of tests/kernels/golden_data.json, and a row-at-a-time twin in
tests/problems/test_samples.py on any CPU), the gradient row read and written once, not
four times.
GT's step on logistic regression took 0.79-1.00x the time on an AMD EPYC Zen 4
(bench/bench_ml.py's sizes, docs/performance.md). Sparse rows go one at a time, with
libm's exp (loss_slope): in blocks of four with the vector exp they took 0.88-0.97x the
time, but 15 s more to compile per algorithm and state type (measured when numba inlined
every helper's IR at each call, the rows' index pipeline's too: config.py), and sparse
runs' bits would change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import warnings
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from .. import derived
from ..config import INLINE_FLAGS, SCALAR_FLAGS
from ..data import SPLITS, file_stamp, read_file, split_rows, synthetic
from ..errors import (
    FastGTError,
    FastGTWarning,
    bad,
    caller_level,
    check_choice,
    check_float,
    check_int,
)
from ..kernels import jit
from ..kernels.exp import exp_neg, exp_neg4
from ..kernels.oracles import ProblemKernels, noise_at
from ..kernels.rng import row_key, uniform_index
from ..kernels.rounding import fma, narrow_vectors, prefetch_row_l2, prefetch_span, stored
from ..memory import llc_bytes
from .base import SAMPLED, Problem, rounded

#: the data problems' defaults of the parameters that apply only to some data: split_alpha
#: (split="dirichlet"), samples and label_noise (data="synthetic")
SPLIT_ALPHA, SAMPLES, LABEL_NOISE = 1.0, 100, 0.1
LOSSES = {"squared": 0, "logistic": 1}
REGULARIZERS = {"l2": 0, "nonconvex": 1}
#: rows of a gradient prefetched ahead of the one being summed (measured: 1 -> 4 halves
#: the cost of out-of-cache dense rows, bench/bench_ml.py; sparse rows: values and indices;
#: 8 was no faster, but for dense rows beyond the last-level cache, which are asked for
#: again 2 AHEAD rows ahead). grad_row holds the AHEAD indices in flight in four
#: variables, the width of its dense blocks too: a block's rows are the indices drawn a
#: block before
AHEAD = 4
#: far rows in gradients of fewer than AHEAD rows: a node starts loading those of the node
#: max(1, min(2 AHEAD // rows, LEAD // w)) nodes ahead (w the padded row width), about
#: 2 AHEAD rows in flight and a memory latency's lead: at d = 50, batch 1, a node's step
#: is shorter than a row's load from memory (0.76x the time against the next node's; at
#: d = 500 the next node is far enough)
LEAD = 512
#: f's evaluation in blocks of _ROWS data rows x X's rows, _CHUNK margins at most (2 MB:
#: the losses' passes stay in cache)
_ROWS, _CHUNK = 4096, 1 << 18

#: what the kernels read (co.data): dense rows A (rows, dp) or CSR (indptr, indices,
#: values), targets y, node i's rows offsets[i]:offsets[i + 1], batch (0: all rows), the
#: regularizer's weight, the loss and regularizer codes, whether the rows are sparse, and
#: whether they are beyond the last-level cache (``far``: a gradient then starts loading
#: a later node's first rows, each a memory latency away (the next node's, or for a
#: gradient of fewer than AHEAD rows the one LEAD sets), and asks for its dense rows a
#: second time, 2 AHEAD rows before their sums)
SampleData = namedtuple("SampleData", "A indptr indices values y offsets batch reg loss rkind "
                        "sparse far", module=__name__)


@jit(**SCALAR_FLAGS)
def loss_slope(code, z, y, own_exp):
    """d loss(z, y) / dz: squared z - y; logistic -y / (1 + exp(y z)), written so that no
    exp overflows (large margins of either sign): -y e / (1 + e) with e = exp(-y z) for a
    positive margin, -y / (1 + e) with e = exp(y z) otherwise, without a branch (the
    margins' signs are random early in a run, and a branch mispredicted every other sample
    cost 5-20% of a gradient at d = 50: bench/bench_ml.py). ``own_exp``: fastgt's exp
    (kernels/exp.py), whose bits the dense blocks' four-lane exp gives, for dense rows;
    libm's for sparse rows, summed one at a time, where its shorter latency is worth 12-16%
    of a gradient at batch 64 (docs/performance.md)."""
    if code == 0:
        return z - y
    m = y * z
    return logistic_slope(m, y, exp_neg(-abs(m)) if own_exp else math.exp(-abs(m)))


@jit(**SCALAR_FLAGS)
def logistic_slope(m, y, e):
    """The logistic loss's slope at the margin m = y z, given e = exp(-|m|): exp(-m) for
    m > 0, exp(m) otherwise (the two branches' bits)."""
    return -y * (e if m > 0.0 else 1.0) / (1.0 + e)  # a select, not a branch


@jit(**SCALAR_FLAGS)
def loss_slopes4(code, z0, z1, z2, z3, y0, y1, y2, y3):
    """loss_slope of four dense rows' margins, their four exps in one vector
    (kernels/exp.py: each lane's bits those of the one-value exp, so a dense row's slope
    does not depend on the block it falls in)."""
    if code == 0:
        return z0 - y0, z1 - y1, z2 - y2, z3 - y3
    m0, m1, m2, m3 = y0 * z0, y1 * z1, y2 * z2, y3 * z3
    e0, e1, e2, e3 = exp_neg4(-abs(m0), -abs(m1), -abs(m2), -abs(m3))
    return (logistic_slope(m0, y0, e0), logistic_slope(m1, y1, e1),
            logistic_slope(m2, y2, e2), logistic_slope(m3, y3, e3))


@jit(cache=True, error_model="numpy", fastmath=True, forceinline=False)
def dense_dot(A, s, X, r):
    """a_s^T X[r] over the padded row, vectorized with reassociation, in 256-bit vectors
    whatever the process's width (narrow_vectors: the order, so the bits, do not follow
    FASTGT_VECTOR_BITS): compiled on its own, so that every caller runs this one compiled
    loop (forceinline=False: it would take grad_row's, config.INLINE_FLAGS)."""
    narrow_vectors()
    z = 0.0
    for k in range(X.shape[1]):
        z += np.float64(A[s, k]) * X[r, k]  # float32 data and state: a float64 product
    return z


@jit(**SCALAR_FLAGS)
def sample_index(key, j, m, batch):
    """The j-th row (within the node's m) of a gradient: drawn from the node's stream
    (batch > 0), or row j (every row, batch 0)."""
    return uniform_index(key, j, m) if batch > 0 else j


@jit(**SCALAR_FLAGS)
def prefetch_sample(data, s):
    """Start loading row s: its label, and its dense values (into the L2:
    prefetch_row_l2) or its CSR values and column indices."""
    prefetch_span(data.y, s, s + 1)
    if data.sparse:
        prefetch_span(data.values, data.indptr[s], data.indptr[s + 1])
        prefetch_span(data.indices, data.indptr[s], data.indptr[s + 1])
    else:
        prefetch_row_l2(data.A, s)


@jit(**SCALAR_FLAGS)
def ahead_index(data, node, lo, m, j, drawn):
    """The data row of the node's j-th drawn row, its loads started (prefetch_sample); -1
    past the last (j >= drawn)."""
    if j >= drawn:
        return -1
    s = lo + sample_index(node.key, j, m, data.batch)
    prefetch_sample(data, s)
    return s


@jit(**SCALAR_FLAGS)
def prefetch_rows(data, key, lo, m, j0, j1):
    """Start loading the drawn rows j0 to j1 - 1 of the node whose m rows start at lo and
    whose key is ``key`` (prefetch_sample; their indices hashed here and again when their
    sums come)."""
    for j in range(j0, j1):
        prefetch_sample(data, lo + sample_index(key, j, m, data.batch))


@jit(**SCALAR_FLAGS)
def dense_slope(data, s, X, r, drawn):
    """loss'(a_s^T X[r], y_s) / drawn, for dense row s."""
    return loss_slope(data.loss, dense_dot(data.A, s, X, r), data.y[s], True) / drawn


@jit(**INLINE_FLAGS)
def grad_row(co, node, X, r, G, q):
    """The family's hook (kernels/oracles.py): G[q] = R'(X[r]) + (1/B) sum over node i's B
    drawn rows s of loss'(a_s^T X[r], y_s) a_s, plus the additive noise. Its
    narrow_vectors() compiles its loops for 256-bit vectors, before LLVM inlines them into
    an algorithm's block function for this family or the initial gradients."""
    narrow_vectors()
    data, i, w = co.data, node.i, X.shape[1]
    lo = data.offsets[i]
    m = data.offsets[i + 1] - lo
    drawn = data.batch if data.batch > 0 else m
    if data.rkind == 0:
        for k in range(w):
            G[q, k] = data.reg * X[r, k]
    else:
        for k in range(w):
            x = np.float64(X[r, k])  # a float32 state: x * x in float64
            h = 1.0 + x * x
            G[q, k] = data.reg * 2.0 * x / (h * h)
    # the next AHEAD rows' indices, each drawn once, when its row's loads start (AHEAD rows
    # before its sum: the rows are random, and their loads overlap, AHEAD in flight)
    i0, i1 = ahead_index(data, node, lo, m, 0, drawn), ahead_index(data, node, lo, m, 1, drawn)
    i2, i3 = ahead_index(data, node, lo, m, 2, drawn), ahead_index(data, node, lo, m, 3, drawn)
    # fewer rows than that, or rows beyond the last-level cache (data.far): a later node's
    # first row(s) too, no wait on them at its start (the next node's; for far rows in a
    # gradient of fewer than AHEAD, the one LEAD sets)
    nxt = i + (max(1, min(2 * AHEAD // drawn, LEAD // w)) if data.far and drawn < AHEAD
               else 1)
    if (drawn < AHEAD or data.far) and nxt < data.offsets.shape[0] - 1:
        lo1 = data.offsets[nxt]
        m1 = data.offsets[nxt + 1] - lo1
        k1 = row_key(node.tkey, nxt)
        if not data.far:
            prefetch_rows(data, k1, lo1, m1, 0, 1)
        else:  # dense rows 2 AHEAD of them (into the L2), sparse spans AHEAD (the L1)
            count = AHEAD if data.sparse else 2 * AHEAD
            prefetch_rows(data, k1, lo1, m1, 0, min(count, data.batch if data.batch > 0 else m1))
    done = 0
    if not data.sparse:  # dense rows 4 at a time (module doc), the rest one by one
        for j in range(0, drawn - 3, 4):
            s0, s1, s2, s3 = i0, i1, i2, i3
            i0 = ahead_index(data, node, lo, m, j + AHEAD, drawn)
            i1 = ahead_index(data, node, lo, m, j + AHEAD + 1, drawn)
            i2 = ahead_index(data, node, lo, m, j + AHEAD + 2, drawn)
            i3 = ahead_index(data, node, lo, m, j + AHEAD + 3, drawn)
            if data.far:  # rows beyond the last-level cache, a memory latency each: a
                # second distance, 2 AHEAD rows before their sums (more rows in flight)
                prefetch_rows(data, node.key, lo, m, j + 2 * AHEAD, min(j + 3 * AHEAD, drawn))
            c0, c1, c2, c3 = loss_slopes4(
                data.loss, dense_dot(data.A, s0, X, r), dense_dot(data.A, s1, X, r),
                dense_dot(data.A, s2, X, r), dense_dot(data.A, s3, X, r),
                data.y[s0], data.y[s1], data.y[s2], data.y[s3])
            c0, c1, c2, c3 = c0 / drawn, c1 / drawn, c2 / drawn, c3 / drawn
            for k in range(w):  # in row order, each product rounded into G as stored
                g = stored(G, fma(c0, data.A[s0, k], G[q, k]))
                g = stored(G, fma(c1, data.A[s1, k], g))
                g = stored(G, fma(c2, data.A[s2, k], g))
                G[q, k] = fma(c3, data.A[s3, k], g)
        done = drawn - drawn % 4
    for j in range(done, drawn):
        s = i0
        i0, i1, i2 = i1, i2, i3
        i3 = ahead_index(data, node, lo, m, j + AHEAD, drawn)
        if data.sparse:  # unsigned positions and columns: numba wraps a signed index
            # that might be negative (about 8 instructions an access, 3 accesses a nonzero);
            # an unsigned one it takes as is (batches 8, 64: 0.79-0.90x the time, bench_ml)
            a, e = np.uint64(data.indptr[s]), np.uint64(data.indptr[s + 1])
            z = 0.0
            for p in range(a, e):
                z = fma(data.values[p], X[r, np.uint64(data.indices[p])], z)
            c = loss_slope(data.loss, z, data.y[s], False) / drawn
            for p in range(a, e):
                col = np.uint64(data.indices[p])
                G[q, col] = fma(c, data.values[p], G[q, col])
        else:
            c = dense_slope(data, s, X, r, drawn)
            for k in range(w):
                G[q, k] = fma(c, data.A[s, k], G[q, k])
    if node.v != 0.0 or node.u != 0.0:  # else it adds N 0 = +0 (N finite): no value changes
        for k in range(w):  # (but a zero's sign: -0 + 0 is +0, which compares equal)
            G[q, k] += noise_at(co.N, node.rn, k, node.v, node.u, co.dv)


KERNELS = ProblemKernels("samples", grad_row, warm=(("logistic", "minibatch+gaussian"),),
                         big={"samples": 1})


def _loss(code: int, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """loss(z, y) elementwise, overwriting z (a chunk of margins). Logistic as
    max(t, 0) + log1p(exp(-|t|)), t = -y z: np.logaddexp(0, t)'s formula, but in numpy's
    vectorized exp and log1p (logaddexp calls the scalar ones: 20 ns an element against
    ~3: f(X) at n = 1000 nodes of 100 rows, d = 100, took 2.4 s, now 0.7)."""
    if code == 0:
        z -= y
        z *= z
        z *= 0.5
        return z
    z *= -y
    e = np.abs(z)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.log1p(e, out=e)
    np.maximum(z, 0.0, out=z)
    z += e
    return z


def _slope(code: int, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return z - y if code == 0 else -y * expit(-y * z)


def _curvature(code: int, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    if code == 0:
        return np.ones_like(z)
    s = expit(y * z)
    return s * (1.0 - s)


@dataclass(eq=False)
class SampleProblem(Problem):
    """A finite-sum problem on n nodes (module docstring). ``A`` is (rows, d) dense or CSR,
    rows ordered by node (``offsets``); ``batch`` the minibatch of the run's noise (0:
    every row). ``classes``/``counts``: the split's class histogram per node; ``source``
    names the data; ``key`` identifies the instance (its optimum's cache key)."""

    name: str
    n: int
    d: int
    A: object
    y: np.ndarray
    offsets: np.ndarray
    loss_code: int
    rkind: int
    reg: float
    classification: bool
    classes: np.ndarray
    counts: np.ndarray
    key: str
    batch_size: int = 1
    batch: int = 0
    optimum: dict = field(default_factory=dict, repr=False)  # shared by sampled() copies
    #: the type the kernels read the rows' values in, and this instance in other types
    #: (in_dtype: built once, its optimum solved once)
    data_dtype: type = np.float64
    variants: dict = field(default_factory=dict, repr=False)
    kernels = KERNELS

    @property
    def sparse(self) -> bool:
        return hasattr(self.A, "tocsr")  # a scipy sparse matrix (CSR)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def weights(self) -> np.ndarray:
        """Each row's weight in f: 1 / (n m_i) for a row of node i."""
        return np.repeat(1.0 / (self.n * self.sizes), self.sizes)

    def in_dtype(self, dtype: str) -> SampleProblem:
        """The rows' values rounded to ``dtype`` and read as such by the kernels (a float32
        state: half the traffic of the sampled rows); f, x*, f* and zeta2 are the rounded
        problem's, its optimum cached under a key of its own. Itself when it is read as
        ``dtype`` already (Batch asks again)."""
        if dtype == "float64" or self.data_dtype is np.dtype(dtype).type:
            return self
        if dtype not in self.variants:
            self.variants[dtype] = dataclasses.replace(
                self, A=rounded(self.A, dtype), key=f"{self.key}-{dtype}", optimum={},
                data_dtype=np.dtype(dtype).type, variants={})
        return self.variants[dtype]

    def sampled(self, batch: int | None = None) -> SampleProblem:
        """This instance with the kernels drawing ``batch`` (default: batch_size) rows per
        gradient (0: all)."""
        return dataclasses.replace(self, batch=self.batch_size if batch is None else batch,
                                   variants={})  # its own: a variant keeps its own batch

    def for_noise(self, noise: str) -> SampleProblem:
        """The minibatch noises draw batch_size rows per gradient (``sampled``); the others
        take every row, so a batch_size other than 1 there is a mistake, refused. A batch
        beyond every node's rows draws more than the exact gradient costs: a warning."""
        if noise in SAMPLED:
            most = int(self.sizes.max())
            if self.batch_size > most:
                warnings.warn(f"batch_size={self.batch_size} draws more rows per gradient than "
                              f"any node has (at most {most}): noise='full' takes the exact "
                              f"gradient from {most} rows", FastGTWarning,
                              stacklevel=caller_level())
            return self.sampled()
        if self.batch_size != 1:
            raise FastGTError(f"batch_size={self.batch_size} applies to noise 'minibatch' and "
                              f"'minibatch+gaussian' only: with noise={noise!r} every gradient "
                              "takes all of a node's rows (leave batch_size at 1)")
        return self

    # ---------------------------------------------------------------- numpy side
    def _margins(self, A, X: np.ndarray, buf: np.ndarray) -> np.ndarray:
        """a_s^T x for the rows a_s of A (a block of the data) and x each row of X (m, d):
        (m, rows), dense rows written into ``buf`` (no allocation: a fresh 32 MB array a
        chunk cost more in page faults than the product), sparse rows by scipy."""
        if self.sparse:
            return np.asarray(A @ X.T).T
        Z = buf[:len(X) * len(A)].reshape(len(X), len(A))
        return np.matmul(X, A.T, out=Z)

    def _reg_value(self, X: np.ndarray) -> np.ndarray:
        if self.rkind == 0:
            return 0.5 * self.reg * np.sum(X * X, axis=-1)
        return self.reg * np.sum(X * X / (1.0 + X * X), axis=-1)

    def _reg_grad(self, X: np.ndarray) -> np.ndarray:
        if self.rkind == 0:
            return self.reg * X
        return self.reg * 2.0 * X / (1.0 + X * X) ** 2

    def f(self, x: np.ndarray) -> np.ndarray:
        """f at x (d,) or at each row of X (m, d): blocks of _ROWS data rows against blocks
        of X's rows, each block's margins and losses in one reused cache-sized buffer."""
        x = np.asarray(x, dtype=np.float64)
        X = np.atleast_2d(x)
        w, out = self.weights, np.zeros(len(X))
        step = max(1, _CHUNK // min(_ROWS, len(self.y)))
        # dense margins go here (a solver's single x: one block's worth, not 2 MB)
        buf = None if self.sparse else np.empty(min(step, len(X)) * min(_ROWS, len(self.y)))
        for r0 in range(0, len(self.y), _ROWS):
            rows = slice(r0, r0 + _ROWS)
            A = self.A[rows]  # a view (dense) or a copy (CSR): once per block
            for lo in range(0, len(X), step):
                Z = self._margins(A, X[lo:lo + step], buf)
                out[lo:lo + step] += _loss(self.loss_code, Z, self.y[rows]) @ w[rows]
        out += self._reg_value(X)
        return out[0] if x.ndim == 1 else out

    def node_matrix(self, coef: np.ndarray):
        """The (n, rows) CSR matrix with coef[s] in row node(s), column s."""
        import scipy.sparse as sps

        return sps.csr_matrix((coef, np.arange(len(coef)), self.offsets),
                              shape=(self.n, len(coef)))

    def grad(self, X: np.ndarray) -> np.ndarray:
        """Row i = grad f_i(X[i]) (exact, every row of node i)."""
        X = np.asarray(X, dtype=np.float64)
        node = np.repeat(np.arange(self.n), self.sizes)
        if self.sparse:
            z = np.asarray(self.A.multiply(X[node]).sum(axis=1)).ravel()
        else:
            z = np.einsum("sk,sk->s", self.A, X[node])
        coef = _slope(self.loss_code, z, self.y) / self.sizes[node]
        G = self.node_matrix(coef) @ self.A
        return np.asarray(G.todense() if hasattr(G, "todense") else G) + self._reg_grad(X)

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        z = self.A @ x
        return np.asarray(self.A.T @ (self.weights * _slope(self.loss_code, z, self.y))).ravel() \
            + self._reg_grad(x)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """The exact Hessian of f at x (d x d, dense): for the solver's polish."""
        h = self.weights * _curvature(self.loss_code, self.A @ x, self.y)
        H = self.A.T @ (self.A.multiply(h[:, None]) if self.sparse else self.A * h[:, None])
        H = np.asarray(H.todense() if hasattr(H, "todense") else H)
        if self.rkind == 0:
            return H + self.reg * np.eye(self.d)
        return H + np.diag(self.reg * 2.0 * (1.0 - 3.0 * x * x) / (1.0 + x * x) ** 3)

    def accuracy(self, x: np.ndarray) -> float:
        """Fraction of the training rows with y a^T x > 0 (classification; NaN otherwise)."""
        if not self.classification:
            return math.nan
        return float(np.mean(self.y * (self.A @ x) > 0.0))

    # ---------------------------------------------------------------- optimum
    @property
    def xstar(self) -> np.ndarray:
        if "xstar" not in self.optimum:
            def derive():
                from .optimum import solve  # scipy's solvers: only when not kept

                return solve(self)

            self.optimum["xstar"] = derived.kept("optimum", self.key, (self.d,), derive)
        return self.optimum["xstar"]

    @property
    def fstar(self) -> float:
        if "fstar" not in self.optimum:
            self.optimum["fstar"] = float(self.f(self.xstar))
        return self.optimum["fstar"]

    @property
    def zeta2(self) -> float:
        """(1/n) sum_i ||grad f_i(x*)||^2: the heterogeneity of the paper's theory."""
        if "zeta2" not in self.optimum:
            G = self.grad(np.broadcast_to(self.xstar, (self.n, self.d)))
            self.optimum["zeta2"] = float(np.mean(np.sum(G * G, axis=1)))
        return self.optimum["zeta2"]

    def columns(self) -> dict:
        """The instance's values in a cell's row: f*, zeta2."""
        return {"fstar": self.fstar, "zeta2": self.zeta2}

    def info(self) -> dict:
        """A cell's metadata: the data, its split's class histogram per node."""
        return {"data_rows": len(self.y), "features": self.d, "sparse": self.sparse,
                "classes": self.classes.tolist(), "class_counts": self.counts.tolist()}

    def kernel_data(self, pad) -> SampleData:
        dt = self.data_dtype  # placeholders of that type too: one signature per type
        dummy_f, dummy_p = np.zeros(1, dtype=dt), np.zeros(1, dtype=np.int64)
        dummy_c = np.zeros(1, dtype=np.int32)
        if self.sparse:
            A = np.zeros((1, 1), dtype=dt)
            indptr = self.A.indptr.astype(np.int64)
            # columns < d as int32: a nonzero's 12 bytes, not 16, from a random row
            indices, values = self.A.indices.astype(np.int32), self.A.data.astype(dt)
        else:
            A, indptr, indices, values = pad(self.A, dt), dummy_p, dummy_c, dummy_f
        llc = llc_bytes()  # the rows' bytes, beyond it?
        read = A.nbytes + indptr.nbytes + indices.nbytes + values.nbytes + self.y.nbytes
        far = bool(llc) and read > llc
        return SampleData(A, indptr, indices, values, self.y, self.offsets, int(self.batch),
                          float(self.reg), self.loss_code, self.rkind, self.sparse, far)


def build(name: str, n: int, d: int, loss: str, rkind: str, data: str, samples: int,
          split: str, split_alpha: float, batch_size: int, reg: float, label_noise: float,
          seed: int) -> SampleProblem:
    """A SampleProblem from a problem module's parameters (checked here, one line each)."""
    check_choice("loss", loss, tuple(LOSSES))
    check_choice("regularizer", rkind, tuple(REGULARIZERS))
    seed = check_int("seed", seed, 0)
    samples = check_int("samples", samples, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    reg = check_float("reg", reg, 0.0)
    label_noise = check_float("label_noise", label_noise, 0.0)
    check_choice("split", split, tuple(SPLITS))  # both before the check that they fit
    split_alpha = check_float("split_alpha", split_alpha, 0.0, lo_open=True)
    if not isinstance(data, str) or not data:
        raise bad("data", data, "'synthetic' or the path of a LIBSVM, .npz or .parquet file")
    if split != "dirichlet" and split_alpha != SPLIT_ALPHA:  # else silently the same split
        raise FastGTError(f"split_alpha={split_alpha:g} applies to split='dirichlet' only: "
                          f"with split={split!r}, leave it out (a grid: give it in a [[grid]] "
                          "table with split = \"dirichlet\")")
    if data != "synthetic":
        for key, val, default in (("samples", samples, SAMPLES),
                                  ("label_noise", label_noise, LABEL_NOISE)):
            if val != default:
                raise FastGTError(f"{key}={val:g} applies to data='synthetic' only: the rows "
                                  f"and labels of data={data!r} are the file's; leave it out")
    classification = loss == "logistic"
    if classification and data == "synthetic" and reg == 0 and (
            label_noise == 0 or n * samples <= d):
        # separable whatever the draw: labels of a planted x, none flipped, or no more rows
        # than dimensions (as optimum.solve finds on any data, but judged here, where a
        # grid's spec is checked; more rows than d can be separable too: solve says so then)
        why = ("its labels, sign(a^T x) of a planted x, are" if label_noise == 0 else
               f"its {n * samples} rows in d = {d} dimensions are")
        raise FastGTError(f"{name} with reg = 0 has no minimizer on this synthetic data: "
                          f"{why} linearly separable (f -> 0 as ||x|| grows); allowed reg > 0, "
                          "or label_noise > 0 and more rows than d")
    rng = np.random.default_rng([seed, 0xDA7A])
    if data == "synthetic":
        if classification and label_noise > 0.5:
            raise FastGTError(f"label_noise={label_noise:g} is invalid: allowed a number in "
                              "[0, 0.5] (the probability of flipping a label)")
        A, y = synthetic(n * samples, d, classification, label_noise, rng)
        ident = {"data": data, "samples": samples, "label_noise": label_noise}
    else:
        A, y = read_file(data)
        d = A.shape[1]
        ident = {"data": data, "stat": file_stamp(data)}
        if classification:
            y = _pm_one(y, data)
    sp = split_rows(y, n, split, split_alpha, classification, rng)
    A = A[sp.order]
    if hasattr(A, "tocsr"):
        A = A.tocsr()
        A.sort_indices()
    else:
        A = np.ascontiguousarray(A)
    key = hashlib.sha256(json.dumps(
        {"problem": name, "n": n, "d": d, "split": split, "split_alpha": split_alpha,
         "reg": reg, "seed": seed, **ident}, sort_keys=True).encode()).hexdigest()[:20]
    return SampleProblem(name, n, d, A, np.ascontiguousarray(y[sp.order]), sp.offsets,
                         LOSSES[loss], REGULARIZERS[rkind], reg, classification, sp.classes,
                         sp.counts, key, batch_size)


def _pm_one(y: np.ndarray, source: str) -> np.ndarray:
    """Two-class labels as -1.0, +1.0 (the smaller value -1), or a one-line error."""
    vals = np.unique(y)
    if len(vals) != 2:
        shown = ", ".join(f"{v:g}" for v in vals[:5]) + (", ..." if len(vals) > 5 else "")
        raise FastGTError(f"data={source!r} has {len(vals)} distinct labels ({shown}): the "
                          "classification problems allow exactly two classes")
    return np.where(y == vals[1], 1.0, -1.0)

