"""fastgt.run against the dense-numpy reference (tests/reference.py) on small graphs.

Noiseless runs must agree to 1e-10 relative; noisy runs too, when the reference is fed the
exact noise matrices fastgt draws. steps is not a multiple of record_every, so the runs
span several kernel calls of unequal length and a final partial record. Runs with a float32
state follow the same (float64) reference to RTOL32 (RTOL32_DRIFT for D² and EXTRA), what
their roundings allow.
"""

import itertools

import numpy as np
import pytest
import reference as ref
import scipy.sparse as sp
from numba import njit

import fastgt
from fastgt.algorithms import ALGORITHMS
from fastgt.kernels.mixing import mix_row, pad_rows
from fastgt.runner import METRICS

pytestmark = [
    pytest.mark.usefixtures("one_numba_thread"),
    # some of these short runs grow (D² at the tests' stepsize on the small ring, with or
    # without local steps), as their twins do: the trajectories are what is compared, and
    # the warning that such a run may be diverging is expected
    pytest.mark.filterwarnings("ignore:loss_nodes grew:fastgt.errors.FastGTWarning"),
]

STEPS, RECORD = 23, 5  # records at 0, 5, 10, 15, 20, 23
GAMMA = 0.1
RTOL = 1e-10
#: a float32 state computes in float32, each operation rounding by at most 2^-24 relative:
#: a step rounds a row a few times (its mix about once at the row's magnitude, in the
#: Laplacian form, mixing.emit_mixed; its update's operations), and the steps here do not
#: expand errors by more than a small factor: 8 roundings per step over STEPS steps bound
#: the deviation from the float64 reference with a margin (measured: the metrics within
#: 0.03-0.1x this but D²'s). An algorithm that drifts (D², EXTRA: its mean's second-order
#: recursion sums each step's roundings into a velocity, a random walk that the mean then
#: sums) deviates as STEPS^(3/2) rather than STEPS: sqrt(STEPS) x this (measured: D² within
#: 1-3x RTOL32 on the metrics of xbar since its noise rows are float32, 1x before)
RTOL32 = 8 * STEPS * 2.0**-24
RTOL32_DRIFT = RTOL32 * STEPS**0.5
#: every registered algorithm: each needs its dense twin (test_every_algorithm_has_a_twin)
ALGOS = list(ALGORITHMS)


def _x0(n, d, seed=7):
    return np.random.default_rng(seed).normal(size=(n, d))


def _assert_state_close(actual, expected, rtol=RTOL):
    """max |actual - expected| <= rtol * max |expected| (relative in the max norm)."""
    assert actual.shape == expected.shape
    err = np.max(np.abs(actual - expected))
    assert err <= rtol * np.max(np.abs(expected)), err


def _assert_trace_close(trace, expected, has_y, rtol=RTOL):
    """Each metric to RTOL relative, or to 1e-12 of its largest value in the run, or below
    1e-28: a metric that shrank by orders of magnitude (consensus on `complete` is ~1e-32
    after step 1) is the difference of nearly equal numbers and only agrees in absolute
    terms, and one that is zero but for rounding (centralized's consensus: squared
    differences of O(1) numbers at 1e-16 each) agrees with nothing."""
    np.testing.assert_array_equal(trace["step"].to_numpy(), expected[:, 0])
    for col, m in enumerate(METRICS, start=1):
        got, want = trace[m].to_numpy(), expected[:, col]
        if m == "tracking" and not has_y:
            assert np.all(np.isnan(got))
            continue
        scale = 1e-12 if rtol == RTOL else rtol  # float32: its roundings, of the largest value
        np.testing.assert_allclose(got, want, rtol=rtol,
                                   atol=max(scale * np.max(np.abs(want)), 1e-28), err_msg=m)


def _check_against_reference(algorithm, W, d, problem, noise, sigma2=1.0, x0=None, seed=5,
                             local_steps=1, dtype="float64"):
    """Run fastgt, replay the run with the reference, compare state and every trace row."""
    res = fastgt.run(algorithm=algorithm, topology=W, problem=problem, noise=noise,
                     sigma2=ref.given_sigma2(noise, sigma2), d=d, stepsize=GAMMA, steps=STEPS,
                     record_every=RECORD, seed=seed, x0=x0, local_steps=local_steps, dtype=dtype,
                     allow_unstable=True)  # d2 on a torus: short runs
    rtol = (RTOL if dtype == "float64"
            else RTOL32_DRIFT if ALGORITHMS[algorithm].drifts else RTOL32)
    assert all(np.asarray(a).dtype == dtype for a in res.state.values())
    if x0 is None:  # the default x0 of the seed
        x0 = ref.default_x0(seed, W.n, d)
    x0 = np.asarray(x0, dtype=dtype).astype(np.float64)  # as the run stored it
    inst = fastgt.problem(problem).build(W.n, d).in_dtype(dtype)  # float32: rounded A, B
    noise_fn = ref.no_noise(W.n, d) if noise == "none" else ref.fastgt_noise(
        noise, sigma2, d, W, seed)
    rec_steps = list(range(0, STEPS, RECORD)) + [STEPS]
    states = ref.simulate(algorithm, W.to_dense(), lambda X, t: inst.grad(X) + noise_fn(t),
                          GAMMA, x0, STEPS, local_steps)
    rows = [ref.metrics(inst, states[t]["X"], states[t].get("Y")) for t in rec_steps]
    assert set(res.state) == set(states[-1])
    for key, arr in states[-1].items():
        _assert_state_close(res.state[key], arr, rtol)
    expected = np.column_stack([rec_steps, np.array(rows)])
    _assert_trace_close(res.trace, expected, "Y" in states[-1], rtol)


def test_every_algorithm_has_a_twin():
    """A registered algorithm is compared with its dense twin below: it must have one."""
    assert set(ref.TWINS) >= set(ALGORITHMS)


@pytest.mark.parametrize("problem", ["consensus", "hetero_quadratic"])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_noiseless_matches_reference(small_topology, algorithm, problem):
    W, d = small_topology
    _check_against_reference(algorithm, W, d, problem, "none", x0=_x0(W.n, d))


@pytest.mark.parametrize("problem", ["quadratic", "hetero_quadratic"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_noisy_matches_reference(small_topology, algorithm, noise, problem):
    W, d = small_topology
    _check_against_reference(algorithm, W, d, problem, noise, sigma2=2.0, x0=_x0(W.n, d))


@pytest.mark.parametrize("local_steps", [2, 3])
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("name,params,d", [("ring", {"n": 12, "self_weight": 0.2}, 7),
                                           ("interp_ring", {"n": 16, "alpha": 0.6}, 3),
                                           ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}, 5)])
def test_local_steps_match_reference(name, params, d, algorithm, local_steps):
    """Local steps: W on every local_steps-th step, the identity between (the mean term
    too), for every algorithm, with noise."""
    W = fastgt.topology(name, **params)
    _check_against_reference(algorithm, W, d, "hetero_quadratic", "gaussian", sigma2=2.0,
                             x0=_x0(W.n, d), local_steps=local_steps)


@pytest.mark.parametrize("problem,noise,local_steps", [("hetero_quadratic", "none", 1),
                                                       ("quadratic", "gaussian", 1),
                                                       ("hetero_quadratic", "structured", 3)])
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("name,params,d", [("ring", {"n": 12, "self_weight": 0.2}, 7),
                                           ("torus", {"rows": 4, "cols": 5}, 6),
                                           ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}, 5)])
def test_float32_state_follows_reference(name, params, d, algorithm, problem, noise,
                                         local_steps):
    """dtype="float32": every algorithm, with and without noise and local steps, follows the
    float64 reference to RTOL32, and its state arrays are float32."""
    W = fastgt.topology(name, **params)
    _check_against_reference(algorithm, W, d, problem, noise, sigma2=2.0, x0=_x0(W.n, d),
                             local_steps=local_steps, dtype="float32")


def _ladder():
    """A path p0..p6 where p_k (1 <= k <= 5) has k - 1 extra leaves: rows of every length
    from 2 to 7 CSR entries (self loop included)."""
    edges, leaf = [(k, k + 1) for k in range(6)], 7
    for k in range(1, 7):
        for _ in range(k - 1):
            edges.append((k, leaf))
            leaf += 1
    return fastgt.topology("from_edges", edges=edges)


@pytest.mark.parametrize("problem", ["quadratic", "hetero_quadratic"])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_every_row_length_matches_reference(algorithm, problem):
    """Rows of 2 and 4 entries run the 3- and 5-entry fused passes with a zero-weight pad,
    rows of 6 and 7 the 5-entry pass and then a pass per further entry (D-SGD on the
    homogeneous quadratic takes its own fused pass)."""
    W = _ladder()
    assert set(np.diff(W.indptr)) == {2, 3, 4, 5, 6, 7}
    _check_against_reference(algorithm, W, 5, problem, "gaussian", sigma2=2.0,
                             x0=_x0(W.n, 5))


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("d", [16, 27, 40, 100])
@pytest.mark.parametrize("name,params", [("ring", {"n": 12, "self_weight": 0.2}),
                                         ("torus", {"rows": 4, "cols": 5}),
                                         ("interp_ring", {"n": 16, "alpha": 0.6})])
def test_setup_a_vector_rows_have_the_bits_of_other_passes(algorithm, name, params, d):
    """GT's and D-SGD's Setup A rows on rings, tori and interp_ring (the mean term) take
    their whole groups of 16 coordinates in vectors, the draw inside the update
    (noisy_group), the partial last group the same way: the bits of the draw then the
    passes, which GT takes with a topology_y equal to W (its x' is formed from the same
    W Y, its y mixed again to the same values) and D-SGD on a step that writes X (a record
    at every step), at d with no partial group (16), one of both runs, the second padded
    (27: rows of 32), of one run (40) and of one run padded (100: rows of 104); and the
    dense reference's values, fed fastgt's noise (to RTOL)."""
    W = fastgt.topology(name, **params)
    kw = {"algorithm": algorithm, "topology": W, "problem": "quadratic", "noise": "gaussian",
          "d": d, "stepsize": GAMMA, "steps": STEPS, "seed": 5}
    if algorithm == "gt":
        vectors = fastgt.run(**kw, record_every=RECORD)
        passes = fastgt.run(**kw, record_every=RECORD, topology_y=fastgt.topology(name, **params))
        np.testing.assert_array_equal(vectors.records, passes.records)
        assert vectors.records.shape[0] == STEPS // RECORD + 2
    else:
        vectors = fastgt.run(**kw, record_every=STEPS)  # its last step only writes X
        passes = fastgt.run(**kw, record_every=1)
        np.testing.assert_array_equal(vectors.records[-1], passes.records[-1])
    for key, value in vectors.state.items():
        np.testing.assert_array_equal(value, passes.state[key], err_msg=key)
    _check_against_reference(algorithm, W, d, "quadratic", "gaussian", sigma2=2.0,
                             x0=_x0(W.n, d))


def _padded_to_six(indptr, indices, weights):
    """pad_rows, then every row of 3 or 5 entries given zero-weight entries of its last
    column up to 6: such rows take the passes (mix_row's 5-entry pass and a pass for the
    sixth), not the vector rows, with the same sums (each adds fma(0, x, s) = s)."""
    indptr, indices, weights = pad_rows(indptr, indices, weights)
    lengths = np.diff(indptr)
    extra = np.where((lengths == 3) | (lengths == 5), 6 - lengths, 0)
    ends = np.repeat(indptr[1:], extra)
    return ((indptr + np.concatenate([[0], np.cumsum(extra)])).astype(indptr.dtype),
            np.insert(indices, ends, indices[ends - 1]), np.insert(weights, ends, 0.0, axis=1))


def _shuffled_cycle(n=48, seed=2):
    """A cycle through the nodes in a random order: rows of 3 entries whose neighbours are
    scattered (prefetched ahead: algorithms.base.ahead)."""
    p = np.random.default_rng(seed).permutation(n)
    return fastgt.topology("from_edges", edges=[(int(p[k]), int(p[(k + 1) % n]))
                                                for k in range(n)])


@pytest.mark.parametrize("name,params", [("ring", {"n": 12}),
                                         ("interp_ring", {"n": 16, "alpha": 0.6}),
                                         ("torus", {"rows": 4, "cols": 5}),
                                         ("shuffled_cycle", {})])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_setup_a_vector_rows_have_the_bits_of_the_passes(monkeypatch, algorithm, name, params):
    """Setup A's rows of 3 or 5 entries (vector groups with their draw, kernels/
    vector_rows.py) give the bits of the same rows padded to 6 entries, which take the draw
    then the passes: on any CPU, every algorithm, the mean term (interp_ring), a torus,
    scattered rows prefetched ahead (a shuffled cycle), at d with a partial group of both
    runs (27) and of one (40), and in a batch of two cells of other stepsizes, noise
    scales and seeds (D² on a torus: allow_unstable, 23 steps)."""
    from fastgt.algorithms import base

    W = _shuffled_cycle() if name == "shuffled_cycle" else fastgt.topology(name, **params)
    if name == "shuffled_cycle":
        assert base.ahead(W.indptr, W.indices, W.n, 1, False) > 0
    kw = {"algorithm": algorithm, "problem": "quadratic", "noise": "gaussian",
          "steps": STEPS, "record_every": RECORD, "allow_unstable": True}
    cells = [{"topology": W, "stepsize": GAMMA, "seed": 5, "sigma2": 2.0},
             {"topology": W, "stepsize": 0.05, "seed": 6, "sigma2": 0.5}]
    runs = []
    for pad in (base.pad_rows, _padded_to_six):
        monkeypatch.setattr(base, "pad_rows", pad)
        runs.append([fastgt.run(topology=W, d=d, stepsize=GAMMA, seed=5, **kw)
                     for d in (27, 40)] + fastgt.run_batch(cells, d=40, **kw))
    for vectors, passes in zip(*runs):
        np.testing.assert_array_equal(vectors.records, passes.records)
        for key, value in vectors.state.items():
            np.testing.assert_array_equal(value, passes.state[key], err_msg=key)


def test_padded_rows_mix_to_the_same_values():
    """pad_rows gives rows of 2 and 4 entries a zero-weight entry (so that mix_row fuses
    them): the same matrices, and mix_row gives the same bits with and without it (the
    unpadded rows take a pass per entry), equal to the dense product."""
    W = _ladder()
    lengths = np.diff(W.indptr)
    weights = np.stack([W.weights, 0.5 * W.weights])
    indptr, indices, padded = pad_rows(W.indptr, W.indices, weights)
    np.testing.assert_array_equal(np.diff(indptr), lengths + np.isin(lengths, (2, 4)))
    for c in range(2):
        A = sp.csr_matrix((padded[c], indices, indptr), shape=(W.n, W.n)).toarray()
        np.testing.assert_array_equal(A, sp.csr_matrix(
            (weights[c], W.indices, W.indptr), shape=(W.n, W.n)).toarray())
    rng = np.random.default_rng(1)
    X, mean, beta = rng.normal(size=(W.n, 7)), rng.normal(size=7), 0.3
    outs = []
    for ip, ix, w in ((W.indptr, W.indices, weights[1]), (indptr, indices, padded[1])):
        for ahead in (0, 3):  # prefetching neighbour rows (scattered matrices) changes nothing
            out = np.empty_like(X)
            for i in range(W.n):
                mix_row(out, i, X, ip, ix, w, beta, mean, ahead)
            outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(outs[0], out)
    np.testing.assert_allclose(outs[0], 0.5 * W.to_dense() @ X + beta * mean, rtol=1e-13)


@njit(fastmath={"contract"})
def _entry_passes(out, X, indptr, indices, w, skip, laplacian):
    """The twin of mix_row's entries past the first ``skip`` of each row: a pass per entry
    along the row, out[i] += w (x_j - x_i) (``laplacian``: a float32 state's form, w
    rounded to float32), else w x_j, in entry order (the products fused into the sums, as
    the kernels' contract flag fuses them)."""
    for i in range(out.shape[0]):
        for e in range(indptr[i] + skip, indptr[i + 1]):
            j, we = indices[e], w[e]
            for k in range(out.shape[1]):
                if laplacian:
                    out[i, k] += np.float32(we) * (X[j, k] - X[i, k])
                else:
                    out[i, k] += we * X[j, k]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [7, 8, 40, 77])
def test_long_rows_have_the_bits_of_a_pass_per_entry(dtype, d):
    """Rows of more than FUSED_MAX entries (a star's centre, an exponential graph, a random
    graph, a mean term) add their further entries after mix_row's fused pass in entry
    order: the bits of the same rows' first FUSED_MAX entries mixed by mix_row, then a pass
    per further entry (the twin), in both element types; and within the roundings' bound
    of the exact mix. It guards the order of the further entries' sums, which a faster
    long row must keep (docs/performance.md, Rows of more than 5 entries: forms that take
    a row in vectors of 8 or 32 coordinates, hence the widths, with and without a partial
    vector of either)."""
    from fastgt.kernels.mixing import FUSED_MAX

    rng = np.random.default_rng(d)
    tops = [fastgt.topology("star", n=11), fastgt.topology("exponential", n=32),
            fastgt.topology("erdos_renyi", n=30, prob=0.4, seed=2)]
    X = (rng.normal(size=(32, d)) * 10).astype(dtype)
    mean = X.mean(axis=0)
    long_rows = 0
    for W in tops:
        # weights of no special form; rows padded as runs pad them (a star's leaves: 3)
        indptr, indices, w = pad_rows(W.indptr, W.indices, rng.uniform(0.05, 0.3, (1, W.nnz)))
        w = w[0]
        lengths = np.diff(indptr)
        long_rows += np.sum(lengths > FUSED_MAX)
        # the first FUSED_MAX entries of each row: mix_row's fused pass alone
        keep = np.concatenate([np.arange(a, min(b, a + FUSED_MAX))
                               for a, b in itertools.pairwise(indptr)])
        head_ptr = np.concatenate([[0], np.cumsum(np.minimum(lengths, FUSED_MAX))])
        for beta in (0.0, 0.3):
            out, want = (np.empty((W.n, d), dtype) for _ in range(2))
            for i in range(W.n):
                mix_row(out, np.int64(i), X, indptr, indices, w, beta, mean, np.int64(0))
                mix_row(want, np.int64(i), X, head_ptr.astype(indptr.dtype), indices[keep],
                        w[keep], beta, mean, np.int64(0))
            _entry_passes(want, X, indptr, indices, w, FUSED_MAX, dtype == np.float32)
            np.testing.assert_array_equal(out, want)
            # the exact mix of the weights as the state holds them (float32: rounded)
            wr, br = w.astype(dtype).astype(np.float64), float(dtype(beta))
            X64, m64 = X[:W.n].astype(np.float64), mean.astype(np.float64)
            rows = np.repeat(np.arange(W.n), lengths)
            mixed = np.zeros((W.n, d))
            np.add.at(mixed, rows, wr[:, None] * X64[indices])
            mixed += br * m64
            # what the roundings can move: each of a row's terms and sums rounds once at
            # the size of the terms, m + 2 roundings of unit u (float32: the Laplacian
            # form x_i + sum_j w_ij (x_j - x_i), its differences rounded too)
            size = np.zeros((W.n, d))
            if dtype == np.float32:
                mixed += (1 - np.bincount(rows, wr, W.n)[:, None] - br) * X64
                np.add.at(size, rows, np.abs(wr[:, None] * (X64[indices] - X64[rows])))
                size += np.abs(X64) + abs(br) * np.abs(m64 - X64)
            else:
                np.add.at(size, rows, np.abs(wr[:, None] * X64[indices]))
                size += abs(br) * np.abs(m64)
            u = np.finfo(dtype).eps / 2
            bound = 2 * (lengths[:, None] + 2) * u * size
            assert np.all(np.abs(out - mixed) <= bound)
    assert long_rows >= 3


@pytest.mark.parametrize("algorithm", ALGOS)
def test_default_x0_run_matches_reference(algorithm):
    W = fastgt.topology("interp_ring", n=20, alpha=0.7)
    _check_against_reference(algorithm, W, 5, "hetero_quadratic", "gaussian", seed=12)


def test_default_x0_is_standard_normal():
    """1200 entries: |mean| < 5 SE = 5/sqrt(N); |var - 1| < 5 SE = 5 sqrt(2/N) (normal).
    The initial point is what a noiseless run with x0 = None starts from: a 1-step D-SGD
    run on the complete graph (f_i = ||x||^2, gamma) ends at (1 - 2 gamma) mean(x0)."""
    x0s = [ref.default_x0(s, 40, 30) for s in (3, 4)]
    one = fastgt.run(algorithm="dsgd", topology=fastgt.topology("complete", n=40), d=30,
                     noise="none", stepsize=0.25, steps=1, seed=3).state["X"]
    # (the twin's normals are numpy's Box-Muller: within 2e-13 of fastgt's polynomials)
    np.testing.assert_allclose(one, np.tile(0.5 * x0s[0].mean(axis=0), (40, 1)), rtol=1e-12,
                               atol=1e-13)
    assert not np.any(x0s[0] == x0s[1])  # another seed, other numbers
    for x in x0s:
        N = x.size
        assert abs(x.mean()) < 5 / np.sqrt(N)
        assert abs(x.var() - 1) < 5 * np.sqrt(2 / N)


@pytest.mark.parametrize("name,params", [("ring", {"n": 12, "self_weight": 0.2}),
                                         ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}),
                                         ("complete", {"n": 10})])
def test_structured_noise_lives_on_extreme_eigenvectors(name, params):
    """Setup B, checked with numpy's eigh: per step, columns k < ceil(d/2) are multiples of one
    vector v with W v = lambda_n v, the others of one u with W u = lambda_2 u, so every column
    sums to 0. (The scale, ||u|| = ||v|| = sqrt(n), is checked statistically in test_rng.)"""
    W = fastgt.topology(name, **params)
    d = 7
    lam = np.linalg.eigvalsh(W.to_dense())  # ascending: lam[0] = lambda_n, lam[-2] = lambda_2
    noise = ref.fastgt_noise("structured", 1.0, d, W, seed=9)
    Wd = W.to_dense()
    for t in (0, 1, 17):
        E = noise(t)
        for cols, eig in ((slice(0, 4), lam[0]), (slice(4, d), lam[-2])):
            block = E[:, cols]
            s = np.linalg.svd(block, compute_uv=False)
            assert s[1] < 1e-12 * s[0]  # rank one: one shared vector, one xi_k per column
            np.testing.assert_allclose(Wd @ block, eig * block, atol=1e-12 * s[0])
        np.testing.assert_allclose(E.sum(axis=0), 0.0, atol=1e-12 * np.abs(E).max())


@pytest.mark.parametrize("problem,noise", [("hetero_quadratic", "gaussian"),
                                           ("hetero_quadratic", "structured"),
                                           ("quadratic", "gaussian"), ("consensus", "none")])
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_row_padding_stays_zero_and_rows_start_on_lines(algorithm, problem, noise, dtype):
    """Rows are padded from d = 11 to 16 columns so that every row starts on a cache line,
    and state buffers get spare rows past n: after steps (a batch of two cells), every
    padded column of the state, the block sums and the means, and every spare row, is
    exactly zero, so it adds nothing to any mix or metric. Rows are whole runs of a
    generator group (kernels/vector_rows.py)."""
    from fastgt.algorithms import ALGORITHMS, Batch, Cell
    from fastgt.algorithms.base import LANES
    from fastgt.kernels.rng import PAIRS
    from fastgt.problems import make_noise

    n, d = 14, 11
    W = fastgt.topology("interp_ring", n=n, alpha=0.7)
    prob = fastgt.problem(problem).build(n, d)
    cells = [Cell(W, make_noise(noise, 2.0, d, W), 0.05, s) for s in (1, 2)]
    batch = Batch(cells, prob, dtype=dtype)
    assert batch.dp == 16 and LANES % PAIRS == 0
    algo = ALGORITHMS[algorithm]
    arrays = algo.init(batch)
    for by_cells in (True, False):
        algo.advance(batch, arrays, 0, 0, 9, by_cells)
    for a in (*arrays, batch.part, batch.means, batch.scratch):
        assert a.size == 0 or (a.ctypes.data % 64 == 0 and (a.shape[-1] * a.itemsize) % 64 == 0)
    assert all(a.dtype == dtype for a in arrays)
    for a in (*arrays, batch.part, batch.means):
        assert a.shape[-1] == 16 and not np.any(a[..., d:])
    for a in arrays:
        assert a.size == 0 or (a.shape[-2] == batch.rows > n and not np.any(a[..., n:, :]))
    X = algo.iterates(batch, arrays, 1, 0)[0]
    assert np.all(X[:, :d] != 0)  # the real columns did move
