"""Graph families. Each builder returns an unvalidated MixingMatrix; see topology()."""

from __future__ import annotations

import math

import numpy as np

from ..errors import FastGTError, bad, check_float, check_int
from .files import is_path, read_edges, read_matrix
from .mixing import MixingMatrix, check_entries
from .weights import from_edge_list


def _circulant(shape: tuple[int, ...], offsets: list[tuple[tuple[int, ...], float]],
               **kw) -> MixingMatrix:
    """Circulant on the grid ``shape`` (row-major node ids) from (offset, weight) pairs, as
    CSR arrays built directly (no scipy): every row has the same offsets, sorted per row.

    Offsets that coincide modulo the shape (tiny rings and tori) have their weights summed.
    """
    idx = np.indices(shape).reshape(len(shape), -1)
    cols, vals = [], []
    for off, w in offsets:
        if w != 0.0:
            cols.append(np.ravel_multi_index([(idx[a] + off[a]) % shape[a]
                                              for a in range(len(shape))], shape))
            vals.append(w)
    cols = np.stack(cols, axis=1)  # (n, offsets)
    order = np.argsort(cols, axis=1, kind="stable")
    cols = np.take_along_axis(cols, order, axis=1)
    vals = np.asarray(vals)[order]
    first = np.ones(cols.shape, dtype=bool)
    first[:, 1:] = cols[:, 1:] != cols[:, :-1]
    starts = np.flatnonzero(first)
    indptr = np.concatenate(([0], np.cumsum(first.sum(axis=1))))
    return MixingMatrix(indptr, cols.ravel()[starts], np.add.reduceat(vals.ravel(), starts),
                        0.0, structure=("circulant", shape), **kw)


def _edges_matrix(name: str, params: dict, edges, n: int, weights: str,
                  structure=None) -> MixingMatrix:
    return MixingMatrix.from_sparse(from_edge_list(edges, n, weights), 0.0, name=name,
                                    params=params, structure=structure)


def ring(n: int, self_weight: float = 1 / 3) -> MixingMatrix:
    """Ring: w_ii = self_weight, both neighbours (1 - self_weight) / 2."""
    n = check_int("n", n, 2)
    w = check_float("self_weight", self_weight, 0.0, 1.0, hi_open=True)
    return _circulant((n,), [((0,), w), ((1,), (1 - w) / 2), ((-1,), (1 - w) / 2)],
                      name="ring", params={"n": n, "self_weight": w})


def interp_ring(n: int, alpha: float, self_weight: float = 1 / 3) -> MixingMatrix:
    """alpha * W_ring(self_weight) + (1 - alpha) / n * 1 1^T, stored as sparse part + mean term."""
    a = check_float("alpha", alpha, 0.0, 1.0)
    base = ring(n, self_weight)
    return MixingMatrix(base.indptr, base.indices, base.weights * a, 1.0 - a, name="interp_ring",
                        params={"n": base.n, "alpha": a, "self_weight": base.params["self_weight"]},
                        structure=base.structure)


def torus(rows: int | None = None, cols: int | None = None, n: int | None = None) -> MixingMatrix:
    """2-d torus (rows x cols grid with wrap-around), uniform weight 1/5 incl. the self-loop.

    ``n`` alone gives a square torus (n must be a perfect square).
    """
    if rows is None and cols is None:
        if n is None:
            raise FastGTError("torus needs rows and cols (or n, a perfect square)")
        n = check_int("n", n, 4)
        r = math.isqrt(n)
        if r * r != n:
            raise bad("n", n, "a perfect square for a square torus (or give rows and cols)")
        rows = cols = r
    elif rows is None or cols is None:
        raise FastGTError("torus needs both rows and cols")
    rows = check_int("rows", rows, 1)
    cols = check_int("cols", cols, 1)
    if n is not None and n != rows * cols:
        raise bad("n", n, f"rows * cols = {rows * cols} (or omit n)")
    if rows * cols < 2:
        raise bad("rows", rows, "rows * cols >= 2")
    offs = [((0, 0), 0.2), ((1, 0), 0.2), ((-1, 0), 0.2), ((0, 1), 0.2), ((0, -1), 0.2)]
    return _circulant((rows, cols), offs, name="torus", params={"rows": rows, "cols": cols})


def complete(n: int) -> MixingMatrix:
    """Fully connected, W = (1/n) 1 1^T: no sparse entries, mean_weight 1."""
    n = check_int("n", n, 2)
    return MixingMatrix(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0), 1.0,
                        name="complete", params={"n": n}, structure=("circulant", (n,)))


def star(n: int, weights: str = "metropolis") -> MixingMatrix:
    """Star: node 0 linked to every other node."""
    n = check_int("n", n, 2)
    edges = np.stack([np.zeros(n - 1, np.int64), np.arange(1, n)], axis=1)
    return _edges_matrix("star", {"n": n, "weights": weights}, edges, n, weights)


def hypercube(n: int, weights: str = "metropolis") -> MixingMatrix:
    """Hypercube on n = 2^dim nodes: i ~ i XOR 2^k."""
    n = check_int("n", n, 2)
    dim = n.bit_length() - 1
    if 1 << dim != n:
        raise bad("n", n, "a power of 2 for a hypercube")
    i = np.arange(n)
    edges = np.concatenate([np.stack([i, i ^ (1 << k)], axis=1) for k in range(dim)])
    return _edges_matrix("hypercube", {"n": n, "weights": weights}, edges, n, weights,
                         structure=("hypercube", dim))


def exponential(n: int, weights: str = "metropolis") -> MixingMatrix:
    """Static exponential graph: i ~ i +- 2^k (mod n) for every 2^k < n."""
    n = check_int("n", n, 2)
    i = np.arange(n)
    hops = [1 << k for k in range(max(1, (n - 1).bit_length())) if (1 << k) < n]
    edges = np.concatenate([np.stack([i, (i + h) % n], axis=1) for h in hops])
    return _edges_matrix("exponential", {"n": n, "weights": weights}, edges, n, weights,
                         structure=("circulant", (n,)))


def _row_start(i, n: int):
    """Linear index of the pair (i, i + 1) in the order (0,1), (0,2), ..., (0,n-1), (1,2), ..."""
    return i * n - i * (i + 1) // 2


def pair_from_index(lin, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j), i < j, at linear indices lin of that row-major order, in O(len(lin)).

    i is the root of _row_start(i) = lin rounded down, then corrected by one row where the
    float square root lands on the wrong side of a row boundary.
    """
    lin = np.asarray(lin, dtype=np.int64)
    i = np.floor((2 * n - 1 - np.sqrt((2.0 * n - 1) ** 2 - 8.0 * lin)) / 2).astype(np.int64)
    i -= lin < _row_start(i, n)
    i += lin >= _row_start(i + 1, n)
    return i, lin - _row_start(i, n) + i + 1


def erdos_renyi(n: int, prob: float, seed: int = 0, weights: str = "metropolis") -> MixingMatrix:
    """G(n, prob): each of the n(n-1)/2 pairs is an edge with probability prob. O(n + m) sampling:
    the edge count is Binomial(n(n-1)/2, prob), then that many distinct pairs uniformly."""
    n = check_int("n", n, 2)
    prob = check_float("prob", prob, 0.0, 1.0, lo_open=True)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng([seed, 0xE5])
    total = n * (n - 1) // 2
    m = int(rng.binomial(total, prob))
    lin = rng.choice(total, size=m, replace=False) if m < total else np.arange(total)
    i, j = pair_from_index(lin, n)
    return _edges_matrix("erdos_renyi", {"n": n, "prob": prob, "seed": seed, "weights": weights},
                         np.stack([i, j], axis=1), n, weights)


def geometric(n: int, radius: float, seed: int = 0, weights: str = "metropolis") -> MixingMatrix:
    """Random geometric graph: n uniform points in the unit square, edges at distance <= radius."""
    from scipy.spatial import cKDTree

    n = check_int("n", n, 2)
    radius = check_float("radius", radius, 0.0, lo_open=True)
    seed = check_int("seed", seed, 0)
    pts = np.random.default_rng([seed, 0x6E0]).random((n, 2))
    edges = cKDTree(pts).query_pairs(radius, output_type="ndarray")
    return _edges_matrix("geometric", {"n": n, "radius": radius, "seed": seed, "weights": weights},
                         edges, n, weights)


def _edge_array(edges) -> np.ndarray:
    """An (m, 2) int64 array from an edge list; integer node ids only (1.5 is not truncated)."""
    try:
        a = np.asarray(edges)
        ok = a.size == 0 or (a.ndim == 2 and a.shape[1] == 2 and np.all(a >= 0) and (
            a.dtype.kind in "iu" or (a.dtype.kind == "f" and np.all(np.mod(a, 1) == 0))))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise bad("edges", type(edges).__name__, "an (m, 2) list of integer node ids >= 0, a "
                  "scipy sparse adjacency or a networkx-like graph")
    return a.astype(np.int64).reshape(-1, 2)


def from_edges(edges, n: int | None = None, weights: str = "metropolis") -> MixingMatrix:
    """A user graph: an (m, 2) edge list, a scipy sparse adjacency, a networkx-like graph, or
    the path of an edge-list file (fastgt.topology.files.read_edges)."""
    import scipy.sparse as sp

    if is_path(edges):
        edges = read_edges(edges)
    if sp.issparse(edges):
        coo = sp.coo_matrix(edges)
        if coo.shape[0] != coo.shape[1]:
            raise bad("edges", f"sparse {coo.shape}", "a square adjacency matrix")
        n = coo.shape[0] if n is None else n
        e = np.stack([coo.row, coo.col], axis=1)[coo.data != 0]
    elif hasattr(edges, "nodes") and hasattr(edges, "edges"):
        nodes = list(edges.nodes)
        pos = {v: k for k, v in enumerate(nodes)}
        n = len(nodes) if n is None else n
        e = np.array([(pos[a], pos[b]) for a, b in edges.edges], dtype=np.int64).reshape(-1, 2)
    else:
        e = _edge_array(edges)
        n = int(e.max()) + 1 if n is None and len(e) else n
    if n is None:
        raise FastGTError("from_edges: n is needed for an empty edge list")
    n = check_int("n", n, 2)
    if len(e) and e.max() >= n:
        raise bad("edges", f"node id {int(e.max())}", f"integer node ids in [0, {n})")
    return _edges_matrix("from_edges", {"n": n, "weights": weights}, e, n, weights)


def from_matrix(W) -> MixingMatrix:
    """A user mixing matrix (dense or scipy sparse, or the path of a .npy, .npz or .mtx file:
    fastgt.topology.files.read_matrix), as is: its entries checked here (lazy=True would
    hide negative ones), the rest by fastgt.topology, or as a step of a cycle (which need
    not be connected)."""
    return check_entries(MixingMatrix.from_matrix(read_matrix(W) if is_path(W) else W,
                                                  check=False))


#: the static families (topology/__init__.py: FAMILIES adds the time-varying ones)
STATIC = {
    "ring": ring,
    "interp_ring": interp_ring,
    "torus": torus,
    "complete": complete,
    "star": star,
    "hypercube": hypercube,
    "exponential": exponential,
    "erdos_renyi": erdos_renyi,
    "geometric": geometric,
    "from_edges": from_edges,
    "from_matrix": from_matrix,
}
