"""Time-varying topologies: their matrices, p_eff against dense products and the
closed forms' derivations, the matchings' distribution, and every refusal."""

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

import fastgt
from fastgt.errors import DegenerateGraphError, FastGTError
from fastgt.kernels.matching import partners
from fastgt.topology import varying

sys.path.insert(0, str(Path(__file__).parents[1]))
import reference as ref


def _dense_peff(mats):
    """1 - ||W(P-1)...W(0) - J||_2^(2/P), by dense products."""
    n = len(mats[0])
    Pi = np.eye(n)
    for M in mats:
        Pi = M @ Pi
    norm = np.linalg.norm(Pi - 1.0 / n, 2)
    return 1.0 - (0.0 if norm < 1e-13 else norm) ** (2.0 / len(mats))


@pytest.mark.parametrize("n", [2, 3, 5, 12, 16, 100, 128])
def test_one_peer_matrices_and_p_eff(n):
    W = fastgt.topology("one_peer_exponential", n=n)
    tau = math.ceil(math.log2(n))
    assert len(W.period) == tau
    mats = [m.to_dense() for m in W.period]
    for r, M in enumerate(mats):
        np.testing.assert_array_equal(M, ref.one_peer_matrix(n, r))
    sp = W.spectrum()
    assert sp.p_eff == pytest.approx(_dense_peff(mats), abs=1e-12)
    if n & (n - 1) == 0:  # a power of 2: one period averages exactly
        assert sp.p_eff == 1.0
    else:
        assert 0.0 < sp.p_eff < 1.0
    if n > 2:  # not symmetric: no per-matrix eigenvalues
        assert np.isnan(sp.lambda2) and np.isnan(sp.p) and np.isnan(sp.c)


def test_lazy_one_peer_is_the_average_with_the_identity():
    W = fastgt.topology("one_peer_exponential", n=12, lazy=True)
    for r, m in enumerate(W.period):
        np.testing.assert_allclose(m.to_dense(), 0.5 * (ref.one_peer_matrix(12, r) + np.eye(12)),
                                   atol=1e-15)
    assert W.spectrum().p_eff == pytest.approx(_dense_peff([m.to_dense() for m in W.period]),
                                               abs=1e-12)
    assert W.params == {"n": 12, "lazy": True}


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10, 101])
def test_matchings_are_maximal(n):
    """Every step's partners form an involution with one fixed point exactly when n is odd."""
    for t in range(1, 40):
        j = partners(3, t, n)
        np.testing.assert_array_equal(j[j], np.arange(n))
        assert np.sum(j == np.arange(n)) == n % 2


def _matching_id(j):
    return tuple(sorted((min(a, b), max(a, b)) for a, b in enumerate(j)))


@pytest.mark.parametrize("n,count,T", [(3, 3, 3000), (4, 3, 3000), (5, 15, 6000),
                                       (6, 15, 6000), (8, 105, 30000)])
def test_matchings_are_uniform(n, count, T):
    """Over T steps, every maximal matching of n nodes comes up about equally often:
    chi-square test at level 1e-4 (the seeds are fixed: this is deterministic)."""
    seen = {}
    for t in range(1, T + 1):
        key = _matching_id(partners(11, t, n))
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == count
    obs = np.array(list(seen.values()))
    stat = np.sum((obs - T / count) ** 2 / (T / count))
    assert stat < chi2.ppf(1 - 1e-4, count - 1), stat


@pytest.mark.parametrize("n,T", [(40, 5000), (200, 5000)])
def test_matching_pairs_are_uniform(n, T):
    """Every pair of nodes is matched about equally often (probability 1/(n - 1)): a
    chi-square over the n(n-1)/2 pairs at level 1e-4 (the pairs of one matching are
    slightly negatively correlated, which only lowers the statistic)."""
    counts = np.zeros((n, n))
    for t in range(1, T + 1):
        counts[np.arange(n), partners(7, t, n)] += 1
    obs = counts[np.triu_indices(n, 1)]
    e = T / (n - 1)
    stat = np.sum((obs - e) ** 2 / e)
    assert stat < chi2.ppf(1 - 1e-4, len(obs) - 1), stat


@pytest.mark.parametrize("n,lazy", [(6, False), (7, False), (6, True)])
def test_matching_p_eff_is_the_expected_contraction(n, lazy):
    """p_eff = 1 - lambda_max(E[W^T W] - J) on the mean-zero space, with E over the
    matchings as the kernels draw them (a uniform permutation, positions 2m and 2m + 1
    paired, the last node alone when n is odd): exactly, averaged over all n! permutations."""
    W = fastgt.topology("random_matching", n=n, lazy=lazy)
    a = 0.75 if lazy else 0.5
    acc = np.zeros((n, n))
    perms = list(itertools.permutations(range(n)))
    for perm in perms:
        M = np.eye(n)
        for m in range(0, n - 1, 2):
            i, j = perm[m], perm[m + 1]
            M[i, i] = M[j, j] = a
            M[i, j] = M[j, i] = 1 - a
        acc += M.T @ M
    E = acc / len(perms) - 1.0 / n
    Q = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, 1:]]))[0][:, 1:]
    top = np.linalg.eigvalsh(Q.T @ E @ Q).max()
    assert W.spectrum().p_eff == pytest.approx(1.0 - top, abs=1e-12)
    assert W.spectrum().lambda_n == 2 * a - 1 and W.spectrum().lambda2 == 1.0


def test_cycle_p_eff_and_shared_per_matrix_values():
    ring = fastgt.topology("ring", n=10, self_weight=0.2)
    same = fastgt.topology("cycle", matrices=[ring, ring])
    sp = same.spectrum()
    # the matrices' own values, not rounded to the 12 digits they are compared at
    assert (sp.lambda2, sp.lambda_n) == (ring.spectrum().lambda2, ring.spectrum().lambda_n)
    assert sp.p_eff == pytest.approx(ring.spectrum().p, abs=1e-12)  # P = 2 of one W: p
    mixed = fastgt.topology("cycle", matrices=[ring, ref.one_peer_matrix(10, 1)])
    assert np.isnan(mixed.spectrum().lambda2)
    assert mixed.spectrum().p_eff == pytest.approx(
        _dense_peff([ring.to_dense(), ref.one_peer_matrix(10, 1)]), abs=1e-12)


def test_large_products_go_through_lanczos(monkeypatch):
    """Beyond DENSE_MAX the product's norm comes from svds on the product operator: the
    same value as the dense product."""
    mats = [fastgt.topology("erdos_renyi", n=60, prob=0.1, seed=0),
            fastgt.MixingMatrix.from_sparse(ref.one_peer_matrix(60, 2)),
            fastgt.topology("interp_ring", n=60, alpha=0.9)]  # a mean term
    dense, how = varying._product_norm(mats)
    assert how == "dense"
    monkeypatch.setattr(varying, "DENSE_MAX", 10)
    sparse, how = varying._product_norm(mats)
    assert how == "sparse" and sparse == pytest.approx(dense, rel=1e-9)


@pytest.mark.parametrize("matrices,match", [
    ([], "a non-empty list"),
    ("ring", "a non-empty list"),
    ({"topology": "ring", "n": 8}, "a non-empty list"),
    ([np.ones((2, 3))], "square n x n"),
    ([[["a"]]], "square matrices of numbers"),
    ([np.full((3, 3), 0.5)], "doubly stochastic: max |row sum - 1|"),
    ([np.array([[1.0, 0.0], [1.0, 0.0]])], "doubly stochastic: max |column sum - 1|"),
    ([np.array([[1.5, -0.5], [-0.5, 1.5]])], "nonnegative"),
    ([np.eye(4)], "does not contract"),
    ([np.eye(4), np.eye(3) / 1.0], "matrix 1 has n=3"),
])
def test_cycle_refusals(matrices, match):
    with pytest.raises(FastGTError, match=match):
        fastgt.topology("cycle", matrices=matrices)


def test_cycle_takes_topology_tables():
    """The example of docs/topologies.md: tables are built like fastgt.topology's own calls."""
    C = fastgt.topology("cycle", matrices=[{"topology": "ring", "n": 16},
                                           {"topology": "torus", "n": 16}])
    np.testing.assert_array_equal(C.period[1].to_dense(),
                                  fastgt.topology("torus", n=16).to_dense())
    with pytest.raises(FastGTError, match="topology 'ring' needs n"):
        fastgt.topology("cycle", matrices=[{"topology": "ring"}])


def test_cycle_tables_are_steps_not_topologies_of_their_own():
    """A step of a cycle need not be connected nor contract alone (two alternating perfect
    matchings, a bipartite ring): given as tables they are built as the same arrays would
    be, in the Python or the flat names (seed, graph_seed), in Python and in grid files."""
    from fastgt.flat import cell_topology
    from fastgt.sweep.grid import parse_spec

    even = {"topology": "from_edges", "edges": [[0, 1], [2, 3], [4, 5], [6, 7]]}
    odd = {"topology": "from_edges", "edges": [[1, 2], [3, 4], [5, 6], [7, 0]]}
    arrays = []
    for table in (even, odd):  # (I + P) / 2: metropolis weights of a perfect matching
        P = np.zeros((8, 8))
        for i, j in table["edges"]:
            P[i, j] = P[j, i] = 1.0
        arrays.append((np.eye(8) + P) / 2)
    tables = fastgt.topology("cycle", matrices=[even, odd])
    for built, array in zip(tables.period, arrays):
        np.testing.assert_array_equal(built.to_dense(), array)
    assert tables.spectrum().p_eff == fastgt.topology("cycle", matrices=arrays).spectrum().p_eff
    assert tables.spectrum().p_eff > 0.29
    with pytest.raises(DegenerateGraphError, match="disconnected"):
        fastgt.topology("from_edges", edges=even["edges"])  # alone it is no topology
    bipartite = [{"topology": "ring", "n": 16, "self_weight": 0.0, "lazy": True},
                 {"topology": "ring", "n": 16, "self_weight": 0.0}]
    assert fastgt.topology("cycle", matrices=bipartite).spectrum().p_eff > 0
    er = {"topology": "erdos_renyi", "n": 16, "prob": 0.3}
    by_flat = fastgt.topology("cycle", matrices=[{**er, "graph_seed": 3}])
    by_python = fastgt.topology("cycle", matrices=[{**er, "seed": 3}])
    np.testing.assert_array_equal(by_flat.period[0].to_dense(), by_python.period[0].to_dense())
    (cell,) = parse_spec('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 16, '
                         'self_weight = 0.0, lazy = true}, {topology = "ring", n = 16, '
                         'self_weight = 0.0}]\n').cells()
    np.testing.assert_array_equal(cell_topology(cell.params).period[1].to_dense(),
                                  fastgt.topology("cycle", matrices=bipartite).period[1].to_dense())


def test_cycle_steps_from_matrix_files_need_not_be_connected(tmp_path):
    """The same two matchings as .npy files in from_matrix tables: a cycle (from_matrix
    validated each step as a topology of its own and refused them); alone, a file's
    disconnected matrix is refused without the remedy of a random graph's."""
    paths = []
    for k, edges in enumerate(([[0, 1], [2, 3]], [[1, 2], [3, 0]])):
        P = np.eye(4) / 2
        for i, j in edges:
            P[i, j] = P[j, i] = 0.5
        paths.append(tmp_path / f"m{k}.npy")
        np.save(paths[-1], P)
    tables = [{"topology": "from_matrix", "matrix": str(p)} for p in paths]
    C = fastgt.topology("cycle", matrices=tables)
    arrays = fastgt.topology("cycle", matrices=[np.load(p) for p in paths])
    assert C.spectrum().p_eff == arrays.spectrum().p_eff == 1.0  # exact average in 2 steps
    with pytest.raises(DegenerateGraphError) as err:
        fastgt.topology("from_matrix", W=str(paths[0]))
    assert str(err.value).endswith("allowed only connected graphs"), err.value
    negative = np.full((3, 3), 0.6) - 0.8 * np.eye(3)  # rows sum to 1, diagonal -0.2
    for lazy in (False, True):  # (W + I) / 2 would look like a mixing matrix
        with pytest.raises(fastgt.FastGTError, match="W must be nonnegative"):
            fastgt.topology("from_matrix", W=negative, lazy=lazy)
        with pytest.raises(fastgt.FastGTError, match="W must be nonnegative"):
            fastgt.topology("cycle", matrices=[{"topology": "from_matrix",
                                                "matrix": negative.tolist(), "lazy": lazy}])


def test_a_time_varying_spectrum_takes_no_eigensolver():
    """Its values are closed forms or the period's product: a method asked for would be
    silently ignored (fastgt topo --method dense said 'closed')."""
    W = fastgt.topology("one_peer_exponential", n=16)
    assert W.spectrum(method="auto").p_eff > 0
    with pytest.raises(FastGTError, match="method='dense' does not apply to the time-varying "
                                          "one_peer_exponential: allowed 'auto'"):
        W.spectrum(method="dense")


def test_cycle_of_a_time_varying_topology_is_refused():
    with pytest.raises(FastGTError, match="static mixing matrices"):
        fastgt.topology("cycle", matrices=[fastgt.topology("random_matching", n=4)])


def test_non_contracting_cycle_is_a_degenerate_graph():
    """Each matrix disconnected, the union too: p_eff = 0 (a DegenerateGraphError, as a
    disconnected static graph)."""
    half = np.kron(np.eye(2), np.full((2, 2), 0.5))
    with pytest.raises(DegenerateGraphError):
        fastgt.topology("cycle", matrices=[half, half])
    swap = np.eye(4)[[1, 0, 3, 2]] * 0.5 + np.eye(4)[[2, 3, 0, 1]] * 0.5  # links the halves
    assert fastgt.topology("cycle", matrices=[half, swap]).spectrum().p_eff > 0


def test_time_varying_has_no_theory_and_no_eigenvectors():
    W = fastgt.topology("one_peer_exponential", n=8)
    with pytest.raises(FastGTError, match="static topologies only"):
        fastgt.theory.stationary(W, "gt", 0.01)
    with pytest.raises(FastGTError, match="static topologies only"):
        fastgt.theory.max_stepsize(W, "gt")
    with pytest.raises(FastGTError, match="no eigenvectors"):
        W.spectrum(vectors=True)
    assert fastgt.theory.theory_columns(W, "gt", 0.01, 1.0, "quadratic", "gaussian", 4) == {}


def test_topology_of_a_built_time_varying_topology():
    W = fastgt.topology("random_matching", n=6)
    assert fastgt.topology(W) is W
    assert fastgt.topology(W, lazy=True).spectrum().lambda_n == 0.5
    with pytest.raises(FastGTError, match="no parameters except lazy"):
        fastgt.topology(W, n=3)


def test_matching_seeds_give_different_matchings():
    a = [tuple(partners(1, t, 50)) for t in range(1, 30)]
    b = [tuple(partners(2, t, 50)) for t in range(1, 30)]
    assert len(set(a)) == len(a) and not set(a) & set(b)
    assert all(x != y for x, y in itertools.pairwise(a))
