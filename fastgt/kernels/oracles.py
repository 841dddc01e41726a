"""The oracle side of the kernels: gradient noise, and the contract of a problem's hooks.

Noise kinds, the same for every problem (added to its gradient): NONE; GAUSSIAN (Setup A:
i.i.d. N(0, sigma2/d) per node, step, coordinate); STRUCTURED (Setup B: one xi ~ N(0,
sigma2/d I_d) per step shared by all nodes, node i's coordinate k gets xi_k * uv[0, i] for
k < dv and xi_k * uv[1, i] otherwise).

A problem family's kernels (problems/quadratic.py is one, docs/extending.md shows another)
are *hooks* that templates call by global name, bound per family by kernels/specialize.py:

- ``grad_row(co, node, X, r, G, q)``: G[q] = node i's stochastic gradient at X[r], i.e.
  grad f_i(X[r]) from the problem's data ``co.data`` (a namedtuple of the family's arrays),
  sampled (e.g. a minibatch drawn from the counter-based stream of ``node.key``) or exact,
  plus the additive noise e_k = noise_at(co.N, node.rn, k, node.v, node.u, co.dv). Must
  write every coordinate of G[q] (the padding past co.d as zero) and must not allocate;
- ``DIAGONAL``: True for the diagonal quadratics only: the algorithms' templates then
  compile their fused fast paths, which read ``co.data`` = problems.quadratic.QuadData.

Row helpers write row r of a 2-d array (no per-row views, see mixing.py).
"""

from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS
from .mixing import ROW0, block_range
from .rng import STREAM_NOISE, fill_normals, row_key, step_key, stream_key
from .rounding import mul, stored
from .specialize import specialize, template

NONE = 0
GAUSSIAN = 1
STRUCTURED = 2

#: cell c's oracle at a step, as a row update and the hooks read it: the noise kind and
#: rows N (a block's noise row, or the shared draws xi for structured noise, row rp then
#: holding the previous step's), the noise's dv, the problem's d and data, and the noise's
#: scale (sqrt(sigma2 / d): a gaussian row's normals are drawn scaled, rng.fill_padded)
CellOracle = namedtuple("CellOracle", "kind N rp dv d data scale", module=__name__)
#: node i as one row update sees it: its block b (the row of per-block scratch it may use),
#: its noise (row rn of the CellOracle's N, weights v, u: noise_at) and its RNG key at this
#: step (rng.row_key of the step's noise key: the normals of gaussian noise are drawn from
#: it; a problem drawing more, e.g. a minibatch, uses rng.uniform_index) and the step's key
#: tkey (node j's key is rng.row_key(tkey, j): a problem may start loading a later node's
#: rows while this one's are summed)
Node = namedtuple("Node", "i b rn v u key tkey", module=__name__)

#: placeholders naming the hooks (contract above); a template's copy binds the family's
DIAGONAL = False


def grad_row(co, node, X, r, G, q):
    raise NotImplementedError("a template's hooks are bound by kernels.specialize")


@njit(**SCALAR_FLAGS)
def noise_weight(k, v, u, dv):
    """Node's factor on coordinate k of a noise row: v for k < dv, u otherwise."""
    return v if k < dv else u


@njit(**SCALAR_FLAGS)
def noise_at(N, rn, k, v, u, dv):
    """Coordinate k of a node's noise, N[rn, k] v (k < dv) or N[rn, k] u (k >= dv): with N
    a row of normals and v = u = 1 for gaussian noise, the step's shared draw and the
    node's structure values for structured noise, v = u = 0 for none (N finite). The
    product as rounding.mul writes it (contractible after all: its module doc), in N's type
    (a float32 state's noise rows are float32, and so is its arithmetic)."""
    return mul(N[rn, k], stored(N, noise_weight(k, v, u, dv)))


@njit(**INLINE_FLAGS)
def draw_shared(kind, tkey, xi, row, scale, d):
    """xi[row, :d] = the step's shared draw (Setup B's xi); call once per step before the
    rows. The row's padding past d stays zero, so padded coordinates get no noise."""
    if kind == STRUCTURED:
        fill_normals(row_key(tkey, -1), xi, row, scale, d)


@template(parallel=True, **NJIT_FLAGS)
def stochastic_grads(t, X, G, E, GS, seed, kind, scale, xi, uv, dv, d, data):
    """G = grad F(X, xi^(t)) for every node of one cell (at t = 0, for recomputed states
    and for tests), through the family's grad_row: the same bits as the step kernels. xi
    (1, >= d) and uv (1, 2, n) are the cell's own, E (nb, >= d) scratch for a gaussian noise
    row per block of rows and GS (nb, >= G's width) a float64 gradient row per block (a
    float32 G gets it rounded once, as the steps store it): the nb blocks run in parallel
    (rows are independent, so any nb gives the same bits; the initial gradient of a
    10^6-node run is no serial pass). Rows may be padded past the problem's d with zeros
    (X, G and the problem's arrays alike): the padding gets no noise and stays zero."""
    tkey = step_key(stream_key(seed, STREAM_NOISE), t)
    draw_shared(kind, tkey, xi, ROW0, scale, d)
    nb, n = E.shape[0], X.shape[0]
    for pb in prange(nb):
        b = np.int64(pb)  # a parfor's index may be unsigned: rn below must stay an integer
        lo, hi = block_range(b, nb, n)
        co = CellOracle(kind, E if kind == GAUSSIAN else xi, ROW0, dv, d, data, scale)
        rn = b if kind == GAUSSIAN else ROW0
        for i in range(lo, hi):
            key = row_key(tkey, i)
            v = u = 0.0  # no noise (xi: zeros, never drawn)
            if kind == GAUSSIAN:
                fill_normals(key, E, b, scale, d)
                v = u = 1.0
            elif kind == STRUCTURED:
                v, u = uv[0, 0, i], uv[0, 1, i]
            grad_row(co, Node(i, b, rn, v, u, key, tkey), X, i, GS, b)
            for k in range(G.shape[1]):
                G[i, k] = GS[b, k]


@njit(parallel=True, **NJIT_FLAGS)
def normal_matrix(seed, stream, out, scale, d):
    """out[i, k] = scale * N(0, 1) for k < d from stream ``stream`` of ``seed`` (step 0),
    rows in parallel (each from its own key: the same bits on any thread count)."""
    tkey = step_key(stream_key(seed, stream), 0)
    for pi in prange(out.shape[0]):
        i = np.int64(pi)  # a parfor's index may be unsigned: one fill_normals overload
        fill_normals(row_key(tkey, i), out, i, scale, d)


@dataclass(frozen=True, eq=False)
class ProblemKernels:
    """A problem family's hooks (the contract above). ``compile(templates)`` gives the
    templates' copies with them bound (kernels/specialize.py), once per process; each copy
    caches on disk under its template's name and the family's (``gt.blocks_quadratic``),
    so that only the family's own cache files name its types."""

    family: str
    grad_row: object  # a jitted function, INLINE_FLAGS
    diagonal: bool = False
    #: (problem, noise) pairs whose runs compile every kernel of the family (fastgt.warmup;
    #: none: the family compiles on first use, unannounced)
    warm: tuple = ()
    #: parameters of the first warm problem in the warm-up's big run (fastgt.warmup.BIG),
    #: which compiles what big runs add: a data problem's few rows per node keep its
    #: records (n x rows x d operations per node) cheap at that size
    big: dict = field(default_factory=dict)
    _copies: dict = field(default_factory=dict, repr=False)

    def compile(self, templates: tuple):
        if templates not in self._copies:
            self._copies[templates] = specialize(self.family, templates,
                                                 {"grad_row": self.grad_row,
                                                  "DIAGONAL": self.diagonal})
        return self._copies[templates]
