"""Topology families: every W is a valid mixing matrix and matches its family's definition
(built independently here with plain numpy); bad input gives one-line FastGTErrors; the
``fastgt topo`` command."""

import inspect
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

import fastgt
from fastgt import FastGTError
from fastgt.cli import main
from fastgt.topology import FAMILIES, family_params
from fastgt.topology.families import erdos_renyi as er_builder
from fastgt.topology.families import geometric as geo_builder
from fastgt.topology.families import pair_from_index


# ---------------------------------------------------------------- reference constructions
def ring_ref(n, w=1 / 3):
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] += w
        W[i, (i + 1) % n] += (1 - w) / 2
        W[i, (i - 1) % n] += (1 - w) / 2
    return W


def torus_ref(rows, cols):
    n = rows * cols
    W = np.zeros((n, n))
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
                W[i, ((r + dr) % rows) * cols + (c + dc) % cols] += 0.2
    return W


def adjacency(n, edges):
    adj = np.zeros((n, n), dtype=bool)
    for i, j in edges:
        if i != j:
            adj[i, j] = adj[j, i] = True
    return adj


def weights_ref(adj, rule="metropolis"):
    """w_ij = 1/(1 + max(deg_i, deg_j)) (metropolis) or 1/(1 + max deg) on edges, w_ii = rest."""
    deg = adj.sum(axis=1)
    if rule == "metropolis":
        W = np.where(adj, 1.0 / (1.0 + np.maximum.outer(deg, deg)), 0.0)
    else:
        W = np.where(adj, 1.0 / (1.0 + deg.max()), 0.0)
    return W + np.diag(1.0 - W.sum(axis=1))


def graph_of(W):
    """Adjacency (off-diagonal pattern) of a MixingMatrix's sparse part."""
    A = W.sparse_part().toarray() != 0
    np.fill_diagonal(A, False)
    return A


def _valid(W):
    D = W.to_dense()
    assert np.array_equal(D, D.T)  # symmetric to the last bit
    assert D.min() >= 0
    assert np.abs(D.sum(axis=1) - 1).max() < 1e-12
    assert np.abs(D.sum(axis=0) - 1).max() < 1e-12
    return D


# ------------------------------------------------------------------------ definitions
@pytest.mark.parametrize("n,w", [(2, 1 / 3), (3, 1 / 3), (8, 1 / 3), (9, 0.1), (7, 0.0), (10, 0.9)])
def test_ring(n, w):
    W = fastgt.topology("ring", n=n, self_weight=w)
    np.testing.assert_allclose(_valid(W), ring_ref(n, w), atol=1e-15)
    assert W.name == "ring" and W.params == {"n": n, "self_weight": w}


@pytest.mark.parametrize("n,alpha,w", [(6, 0.3, 1 / 3), (9, 0.0, 0.2), (10, 1.0, 1 / 3)])
def test_interp_ring(n, alpha, w):
    W = fastgt.topology("interp_ring", n=n, alpha=alpha, self_weight=w)
    ref = alpha * ring_ref(n, w) + (1 - alpha) / n * np.ones((n, n))
    np.testing.assert_allclose(_valid(W), ref, atol=1e-15)
    assert W.mean_weight == pytest.approx(1 - alpha)
    assert W.nnz <= 3 * n  # the dense part is never stored


@pytest.mark.parametrize("rows,cols", [(4, 4), (3, 5), (1, 2), (2, 2), (1, 7), (2, 3), (5, 1)])
def test_torus(rows, cols):
    W = fastgt.topology("torus", rows=rows, cols=cols)
    np.testing.assert_allclose(_valid(W), torus_ref(rows, cols), atol=1e-15)
    assert W.n == rows * cols


def test_torus_square_from_n():
    W = fastgt.topology("torus", n=36)
    assert (W.params["rows"], W.params["cols"]) == (6, 6)
    np.testing.assert_allclose(W.to_dense(), torus_ref(6, 6), atol=1e-15)
    assert np.all(np.diag(W.to_dense()) == 0.2)  # self weight 1/5 included


@pytest.mark.parametrize("n", [2, 5])
def test_complete(n):
    W = fastgt.topology("complete", n=n)
    np.testing.assert_allclose(_valid(W), np.full((n, n), 1 / n), atol=1e-15)
    assert W.nnz == 0 and W.mean_weight == 1.0


def _hypercube_edges(n):
    return [(i, i ^ (1 << k)) for i in range(n) for k in range(n.bit_length() - 1)]


def _exponential_edges(n):
    return [(i, (i + 2**k) % n) for i in range(n) for k in range(n) if 2**k < n]


GENERAL = [
    ("star", {"n": 7}, lambda n: [(0, i) for i in range(1, n)]),
    ("hypercube", {"n": 16}, _hypercube_edges),
    ("hypercube", {"n": 2}, _hypercube_edges),
    ("exponential", {"n": 12}, _exponential_edges),
    ("exponential", {"n": 16}, _exponential_edges),
    ("exponential", {"n": 3}, _exponential_edges),
]


@pytest.mark.parametrize("rule", ["metropolis", "max_degree"])
@pytest.mark.parametrize("name,kw,edges", GENERAL, ids=[f"{g[0]}{g[1]['n']}" for g in GENERAL])
def test_general_graphs(name, kw, edges, rule):
    W = fastgt.topology(name, weights=rule, **kw)
    n = kw["n"]
    ref = weights_ref(adjacency(n, edges(n)), rule)
    np.testing.assert_allclose(_valid(W), ref, atol=1e-15)


def test_metropolis_formula_on_irregular_graph():
    """Path 0-1-2 plus a triangle 2-3-4: degrees 1, 2, 3, 2, 2."""
    W = fastgt.topology("from_edges", edges=[(0, 1), (1, 2), (2, 3), (3, 4), (4, 2)]).to_dense()
    assert W[0, 1] == pytest.approx(1 / 3)  # 1 / (1 + max(1, 2))
    assert W[1, 2] == pytest.approx(1 / 4)  # 1 / (1 + max(2, 3))
    assert W[3, 4] == pytest.approx(1 / 3)
    assert W[0, 0] == pytest.approx(2 / 3) and W[2, 2] == pytest.approx(1 / 4)
    assert W[0, 2] == 0
    M = fastgt.topology("from_edges", edges=[(0, 1), (1, 2), (2, 3), (3, 4), (4, 2)],
                        weights="max_degree").to_dense()
    assert M[0, 1] == pytest.approx(1 / 4) and M[0, 0] == pytest.approx(3 / 4)


@pytest.mark.parametrize("name,kw", [
    ("ring", {"n": 8}), ("ring", {"n": 6, "self_weight": 0.0}), ("torus", {"rows": 2, "cols": 3}),
    ("interp_ring", {"n": 5, "alpha": 0.4}), ("complete", {"n": 4}), ("star", {"n": 5}),
    ("hypercube", {"n": 8}), ("erdos_renyi", {"n": 20, "prob": 0.5}),
])
def test_lazy(name, kw):
    """lazy=True gives (W + I) / 2 (for the bipartite ring with w = 0 only the lazy W is valid)."""
    L = fastgt.topology(name, lazy=True, **kw)
    base = FAMILIES[name](**kw)  # unvalidated builder: the same W without the lazy step
    n = base.n
    np.testing.assert_allclose(_valid(L), (base.to_dense() + np.eye(n)) / 2, atol=1e-15)
    assert L.params["lazy"] is True
    assert L.spectrum().c == 1.0


def test_lazy_on_a_built_matrix():
    W = fastgt.topology("ring", n=6)
    L = fastgt.topology(W, lazy=True)
    np.testing.assert_allclose(L.to_dense(), (W.to_dense() + np.eye(6)) / 2, atol=1e-15)
    assert fastgt.topology(W) is W
    with pytest.raises(FastGTError, match="^n=6 is invalid"):
        fastgt.topology(W, n=6)


# ------------------------------------------------------------------------ random graphs
@pytest.mark.parametrize("n", list(range(2, 30)) + [97])
def test_pair_from_index_brute_force(n):
    total = n * (n - 1) // 2
    i, j = pair_from_index(np.arange(total), n)
    brute = [(a, b) for a in range(n) for b in range(a + 1, n)]
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == brute


@pytest.mark.parametrize("n", [1000, 10**6 + 3, 10**8])
def test_pair_from_index_row_boundaries_large_n(n):
    """At and around the first pair of many rows, where a float sqrt may round the wrong way."""
    rows = np.unique(np.concatenate([np.arange(5), n - 2 - np.arange(5),
                                     np.random.default_rng(0).integers(0, n - 1, 200)]))
    start = rows * n - rows * (rows + 1) // 2  # first pair of row i is (i, i + 1)
    total = n * (n - 1) // 2
    for delta in (-1, 0, 1):
        lin = start + delta
        ok = (lin >= 0) & (lin < total)
        i, j = pair_from_index(lin[ok], n)
        exp_i = rows[ok] + (-1 if delta == -1 else 0)
        exp_j = np.where(delta == -1, n - 1, rows[ok] + 1 + delta)
        np.testing.assert_array_equal(i, exp_i)
        np.testing.assert_array_equal(j, exp_j)


def test_erdos_renyi_weights_and_seed():
    W = fastgt.topology("erdos_renyi", n=60, prob=0.2, seed=4)
    np.testing.assert_allclose(_valid(W), weights_ref(graph_of(W)), atol=1e-15)
    again = fastgt.topology("erdos_renyi", n=60, prob=0.2, seed=4)
    assert np.array_equal(again.to_dense(), W.to_dense())
    other = fastgt.topology("erdos_renyi", n=60, prob=0.2, seed=5)
    assert not np.array_equal(other.to_dense(), W.to_dense())
    full = fastgt.topology("erdos_renyi", n=6, prob=1.0)
    np.testing.assert_allclose(full.to_dense(), weights_ref(~np.eye(6, dtype=bool)))


def test_erdos_renyi_edge_count_binomial():
    """Edges of G(60, 0.2) summed over 20 seeds ~ Binomial(20 * 1770, 0.2): mean 7080,
    sd sqrt(35400 * 0.2 * 0.8) = 75.3; a 5 sd band fails with probability ~6e-7."""
    n, prob, seeds = 60, 0.2, 20
    total = n * (n - 1) // 2
    m = sum(graph_of(er_builder(n, prob, seed=s)).sum() // 2 for s in range(seeds))
    mean, sd = seeds * total * prob, math.sqrt(seeds * total * prob * (1 - prob))
    assert abs(m - mean) < 5 * sd


def test_erdos_renyi_every_pair_equally_likely():
    """Over 300 seeds each of the 28 pairs of 8 nodes is present Binomial(300, 0.3) times:
    mean 90, sd 7.94; max over 28 pairs within 5 sd fails with probability < 28 * 6e-7.
    A wrong index -> pair map would leave some pairs at 0 and double others."""
    n, prob, seeds = 8, 0.3, 300
    counts = sum(graph_of(er_builder(n, prob, seed=s)).astype(int) for s in range(seeds))
    iu = np.triu_indices(n, 1)
    sd = math.sqrt(seeds * prob * (1 - prob))
    assert np.abs(counts[iu] - seeds * prob).max() < 5 * sd


def test_geometric_edge_count():
    """P(|X - Y| <= r) for uniform X, Y in the unit square is pi r^2 - 8 r^3 / 3 + r^4 / 2
    (r <= 1). Edge counts over 40 seeds: their mean must be within 5 standard errors (from
    the sample sd) of N P, N = n (n - 1) / 2."""
    n, r, seeds = 100, 0.2, 40
    counts = np.array([graph_of(geo_builder(n, r, seed=s)).sum() / 2 for s in range(seeds)])
    expected = n * (n - 1) / 2 * (math.pi * r**2 - 8 * r**3 / 3 + r**4 / 2)
    se = counts.std(ddof=1) / math.sqrt(seeds)
    assert abs(counts.mean() - expected) < 5 * se
    W = fastgt.topology("geometric", n=200, radius=0.25, seed=1)
    np.testing.assert_allclose(_valid(W), weights_ref(graph_of(W)), atol=1e-15)


# ------------------------------------------------------------------------ user graphs
EDGES = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (1, 1), (1, 0)]


def test_from_edges_list_sparse_and_graph_like():
    ref = weights_ref(adjacency(6, EDGES))
    a = fastgt.topology("from_edges", edges=EDGES)  # self-loop (1,1) and duplicate (1,0) dropped
    np.testing.assert_allclose(_valid(a), ref, atol=1e-15)
    b = fastgt.topology("from_edges", edges=np.array(EDGES, dtype=float))
    np.testing.assert_allclose(b.to_dense(), ref, atol=1e-15)
    adj = sp.csr_matrix(adjacency(6, EDGES).astype(float))
    np.testing.assert_allclose(fastgt.topology("from_edges", edges=adj).to_dense(), ref, atol=1e-15)

    # the networkx interface from_edges uses: .nodes and .edges (node labels of any type)
    graph = SimpleNamespace(nodes=list("abcdef"), edges=[("abcdef"[i], "abcdef"[j])
                                                         for i, j in EDGES])
    np.testing.assert_allclose(fastgt.topology("from_edges", edges=graph).to_dense(), ref,
                               atol=1e-15)
    W = fastgt.topology("from_edges", edges=EDGES, weights="max_degree")
    np.testing.assert_allclose(W.to_dense(), weights_ref(adjacency(6, EDGES), "max_degree"))


def test_from_edges_networkx():
    nx = pytest.importorskip("networkx")
    G = nx.petersen_graph()
    W = fastgt.topology("from_edges", edges=G)
    nodes = list(G.nodes)
    pos = {v: k for k, v in enumerate(nodes)}
    ref = weights_ref(adjacency(len(nodes), [(pos[a], pos[b]) for a, b in G.edges]))
    np.testing.assert_allclose(_valid(W), ref, atol=1e-15)


def test_from_matrix():
    n = 9
    eye = np.eye(n)
    cyc = np.roll(eye, 1, axis=1)
    D = (2 * eye + cyc + cyc.T) / 4
    W = fastgt.topology("from_matrix", W=D)
    assert np.array_equal(_valid(W), D)
    W2 = fastgt.topology("from_matrix", W=sp.csr_matrix(D))
    assert np.array_equal(W2.to_dense(), D)


def test_family_params():
    assert family_params("ring") == {"n": inspect.Parameter.empty, "self_weight": 1 / 3,
                                     "lazy": False}  # n has no default
    assert set(family_params("erdos_renyi")) == {"n", "prob", "seed", "weights", "lazy"}
    assert set(family_params("torus")) == {"rows", "cols", "n", "lazy"}


def test_large_builds_are_fast_enough_to_run():
    """Topologies with 10^5 - 10^6 nodes build (sort-based edge dedup, vectorized checks)."""
    W = fastgt.topology("exponential", n=2**17)
    deg = np.diff(W.indptr) - 1  # every node: 2 * 17 - 1 neighbours (i + 2^16 = i - 2^16)
    assert np.all(deg == 33)
    assert W.weights.min() > 0
    assert fastgt.topology("ring", n=10**6 + 1, self_weight=0.0).n == 10**6 + 1


# ------------------------------------------------------------------------ errors
def _D(rows):
    return np.array(rows, dtype=float)


ERRORS = [
    ({"name": "from_matrix", "W": _D([[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]])}, "symmetric"),
    ({"name": "from_matrix", "W": _D([[0.5, 0.4], [0.4, 0.5]])}, "doubly stochastic"),
    ({"name": "from_matrix", "W": _D([[1.5, -0.5], [-0.5, 1.5]])}, "nonnegative"),
    ({"name": "from_matrix", "W": _D([[0.5, 0.5, 0], [0.5, 0.5, 0], [0, 0, 1]])}, "disconnected"),
    ({"name": "from_matrix", "W": _D([[0, 1], [1, 0]])}, "eigenvalue -1"),
    ({"name": "from_matrix", "W": _D([[1.0]])}, "^n=1 is invalid"),
    ({"name": "from_matrix", "W": np.ones((2, 3)) / 3}, "square"),
    ({"name": "from_matrix", "W": _D([[np.nan, 0.5], [0.5, 0.5]])}, "finite"),
    ({"name": "from_edges", "edges": [(0, 1), (2, 3)]}, "disconnected"),
    ({"name": "from_edges", "edges": [(0, 1), (1, 2)], "n": 5}, "disconnected"),
    ({"name": "from_edges", "edges": [(0, 1), (1, 5)], "n": 4}, "^edges="),
    ({"name": "from_edges", "edges": [(0, 1.5)]}, "^edges="),
    ({"name": "from_edges", "edges": [(0, 1, 2), (3, 4, 5)]}, "^edges="),
    ({"name": "from_edges", "edges": [(0, -1)]}, "^edges="),
    ({"name": "from_edges", "edges": []}, "needs n|n is needed"),
    ({"name": "erdos_renyi", "n": 50, "prob": 0.001}, "disconnected"),
    ({"name": "geometric", "n": 50, "radius": 0.01}, "disconnected"),
    ({"name": "ring", "n": 4, "self_weight": 0.0}, "eigenvalue -1"),
    ({"name": "ring", "n": 2, "self_weight": 0.0}, "eigenvalue -1"),
    ({"name": "torus", "rows": 2, "cols": 2, "n": 5}, "^n=5 is invalid"),
    ({"name": "ring", "n": 1}, "^n=1 is invalid"),
    ({"name": "complete", "n": 0}, "^n=0 is invalid"),
    ({"name": "ring", "n": 2.5}, "^n=2.5 is invalid"),
    ({"name": "star", "n": True}, "^n=True is invalid"),
    ({"name": "torus", "rows": 1, "cols": 1}, "^rows=1 is invalid"),
    ({"name": "petersen", "n": 10}, "^topology='petersen' is invalid: allowed one of 'ring'"),
    ({"name": "ring", "n": 5, "nn": 3}, "^nn=3 is invalid: allowed parameters of 'ring'"),
    ({"name": "ring", "n": 5, "seed": 3}, "^seed=3 is invalid"),
    ({"name": "ring"}, "needs n"),
    ({"name": "interp_ring", "n": 5}, "needs alpha"),
    ({"name": "erdos_renyi", "n": 5}, "needs prob"),
    ({"name": "torus"}, "torus needs rows and cols"),
    ({"name": "torus", "rows": 3}, "torus needs both rows and cols"),
    ({"name": "hypercube", "n": 12}, "^n=12 is invalid: allowed a power of 2"),
    ({"name": "torus", "n": 10}, "^n=10 is invalid: allowed a perfect square"),
    ({"name": "erdos_renyi", "n": 10, "prob": 0.0}, "^prob=0.0 is invalid: allowed a number in"),
    ({"name": "erdos_renyi", "n": 10, "prob": 1.5}, "^prob=1.5 is invalid"),
    ({"name": "erdos_renyi", "n": 10, "prob": 0.5, "seed": -1}, "^seed=-1 is invalid"),
    ({"name": "geometric", "n": 10, "radius": 0.0}, "^radius=0.0 is invalid"),
    ({"name": "geometric", "n": 10, "radius": -1}, "^radius=-1 is invalid"),
    ({"name": "interp_ring", "n": 10, "alpha": -0.1}, "^alpha=-0.1 is invalid"),
    ({"name": "interp_ring", "n": 10, "alpha": 1.1}, "^alpha=1.1 is invalid"),
    ({"name": "ring", "n": 10, "self_weight": -0.1}, "^self_weight=-0.1 is invalid"),
    ({"name": "ring", "n": 10, "self_weight": 1.0}, "^self_weight=1.0 is invalid"),
    ({"name": "ring", "n": 10, "self_weight": "x"}, "^self_weight='x' is invalid"),
    ({"name": "star", "n": 10, "weights": "uniform"}, "^weights='uniform' is invalid: allowed one"),
    ({"name": "ring", "n": 10, "lazy": "yes"}, "^lazy='yes' is invalid"),
]


@pytest.mark.parametrize("kw,match", ERRORS, ids=[f"{e[0]['name']}-{e[1][:14]}" for e in ERRORS])
def test_errors_are_one_line_and_name_the_parameter(kw, match):
    kw = dict(kw)
    name = kw.pop("name")
    with pytest.raises(FastGTError, match=match) as err:
        fastgt.topology(name, **kw)
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_validate_ignores_explicitly_stored_zeros():
    """A zero stored in the CSR arrays is not an edge: two blocks joined by 0.0 are disconnected."""
    from fastgt.topology import MixingMatrix, validate

    # rows: {0, 1}, {0, 1, 2 (stored 0.0)}, {1 (stored 0.0), 2, 3}, {2, 3}
    indptr = [0, 2, 5, 8, 10]
    indices = [0, 1, 0, 1, 2, 1, 2, 3, 2, 3]
    weights = [0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5]
    mm = MixingMatrix(indptr, indices, weights)
    assert mm.sparse_part().nnz == 10
    with pytest.raises(FastGTError, match="disconnected"):
        validate(mm)



CIRCULANTS = [(8, [1]), (8, [2]), (9, [3]), (9, [2]), (7, [2, 3]), (12, [4, 6]), (10, [2, 5]),
              (6, [3]), (5, [1, 2])]


@pytest.mark.parametrize("self_weight", [0.0, 0.2])
@pytest.mark.parametrize("n,hops", CIRCULANTS)
def test_structured_validation_agrees_with_graph_search(n, hops, self_weight):
    """Circulants are checked on their exact closed-form spectrum (no scipy): the verdict,
    and its message, are those of the graph search that other matrices get."""
    from fastgt.topology import MixingMatrix, validate
    from fastgt.topology.families import _circulant

    w = (1 - self_weight) / (2 * len(hops))
    offs = [((0,), self_weight)] + [((s * h,), w) for h in hops for s in (1, -1)]
    mm = _circulant((n,), offs, name="test")
    plain = MixingMatrix(mm.indptr, mm.indices, mm.weights)  # structure=None: scipy's path

    def verdict(m):
        try:
            validate(m)
            return "valid"
        except FastGTError as err:
            return str(err).split(" ")[:3]

    assert verdict(mm) == verdict(plain)
    # and the ground truth: p > 0 iff 1 is a simple eigenvalue and -1 is not one
    lam = np.linalg.eigvalsh(mm.to_dense())
    assert (verdict(mm) == "valid") == (lam[-2] < 1 - 1e-9 and lam[0] > -1 + 1e-9)


def test_a_ring_run_starts_without_pandas_scipy_sparse_or_tqdm():
    """`fastgt run --quiet` on a ring loads only what it uses (start-up time): pandas and
    pyarrow come with --out, scipy.sparse with general graphs, tqdm with the progress bar."""
    import subprocess
    import sys

    code = ("import sys; from fastgt.cli import main\n"
            "try: main(['run', '--n', '8', '--d', '3', '--steps', '2', '--quiet'])\n"
            "except SystemExit: pass\n"
            "print(sorted({m for m in sys.modules if m.split('.')[0] in "
            "('pandas', 'pyarrow', 'tqdm')} | {m for m in sys.modules if m.startswith('scipy.sparse')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


# ------------------------------------------------------------------------ CLI
def _invoke(*args):
    return CliRunner().invoke(main, ["topo", *args])


def test_cli_table():
    res = _invoke("ring", "--n", "30", "--self-weight", "0.2")
    assert res.exit_code == 0, res.output
    table = dict(line.split(None, 1) for line in res.output.strip().splitlines())
    sp_ = fastgt.topology("ring", n=30, self_weight=0.2).spectrum()
    for key in ("lambda2", "lambda_n", "delta", "p", "c"):
        assert float(table[key]) == pytest.approx(getattr(sp_, key), rel=1e-11, abs=1e-12)
    assert table["topology"] == "ring" and table["method"] == "closed"
    # ring with w = 0.2, n = 30: lambda2 = 0.2 + 0.8 cos(2 pi / 30)
    assert float(table["lambda2"]) == pytest.approx(0.2 + 0.8 * math.cos(math.pi / 15), rel=1e-11)


@pytest.mark.parametrize("args,name,kw", [
    (["torus", "--rows", "3", "--cols", "4"], "torus", {"rows": 3, "cols": 4}),
    (["erdos_renyi", "--n", "30", "--prob", "0.3", "--graph-seed", "2", "--weights",
      "max_degree"], "erdos_renyi", {"n": 30, "prob": 0.3, "seed": 2, "weights": "max_degree"}),
    (["star", "--n", "9", "--lazy", "--method", "sparse"], "star", {"n": 9, "lazy": True}),
])
def test_cli_json(args, name, kw):
    res = _invoke(*args, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    W = fastgt.topology(name, **kw)
    expected = W.spectrum(method=out["method"]).as_dict()
    assert {k: out[k] for k in expected} == pytest.approx(expected, abs=1e-14)
    assert out["n"] == W.n and out["topology"] == name and out["nnz"] == W.nnz
    assert _reference_l2(W) == pytest.approx(out["lambda2"], abs=1e-10)


def _reference_l2(W):
    return np.linalg.eigvalsh(W.to_dense())[-2]


def test_cli_vectors_json():
    out = json.loads(_invoke("ring", "--n", "8", "--vectors", "--json").output)
    u = np.array(out["u"])
    W = fastgt.topology("ring", n=8).to_dense()
    assert np.linalg.norm(W @ u - out["lambda2"] * u) < 1e-12


@pytest.mark.parametrize("args,match", [
    (["ring"], "needs n"),
    (["ring", "--n", "1"], "n=1 is invalid"),
    (["hexagon", "--n", "6"], "'hexagon' is not one of 'ring', 'interp_ring'"),
    (["hypercube", "--n", "12"], "power of 2"),
    (["torus", "--n", "10"], "perfect square"),
    (["ring", "--n", "5", "--prob", "0.3"], "prob does not apply to topology 'ring'"),
    (["ring", "--n", "4", "--self-weight", "0"], "eigenvalue -1"),
    (["erdos_renyi", "--n", "50", "--prob", "0.001"], "disconnected"),
    (["star", "--n", "5", "--method", "closed"], "method='closed'"),
])
def test_cli_errors(args, match):
    res = _invoke(*args)
    assert res.exit_code == 2
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and match in errors[0]
    assert "Traceback" not in res.output


def test_a_topology_is_described_by_its_flat_names():
    """A graph's seed is graph_seed wherever a topology is shown (the run summary's
    topology_y, a run's config, theory's messages): seed there is the run's (a review)."""
    W = fastgt.topology("erdos_renyi", n=20, prob=0.5, seed=3)
    assert W.describe() == "erdos_renyi(n=20, prob=0.5, graph_seed=3, weights=metropolis)"
    cyc = fastgt.topology("cycle", matrices=[W, fastgt.topology("ring", n=20)])
    assert "graph_seed=3" in cyc.describe() and "seed=3" not in cyc.describe().replace(
        "graph_seed", "")
    res = fastgt.run(topology="ring", n=20, d=2, steps=2, topology_y=W)
    assert res.config["topology_y"] == W.describe()
