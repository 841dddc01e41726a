"""The problems on node-local data (least_squares, logistic, nonconvex): objectives and
gradients against loops over the rows written from their definitions and against finite
differences, the optimum against an independent scipy solve, every algorithm against its
dense twin with exact and minibatch gradients on dense and sparse data, fixed points,
minibatch unbiasedness, and the same bits on any thread count."""

import math

import numba
import numpy as np
import pytest
import reference as ref
import scipy.optimize as sopt
import scipy.sparse as sps
from examples import assert_same_bits_on_threads_and_in_a_batch

import fastgt
from fastgt.algorithms import ALGORITHMS
from fastgt.kernels import rng
from fastgt.problems import samples

pytestmark = pytest.mark.usefixtures("one_numba_thread")

PROBLEMS = ("least_squares", "logistic", "nonconvex")
STEPS, RECORD, GAMMA, RTOL = 23, 5, 0.2, 1e-10


def _dense(inst):
    return inst.A.toarray() if sps.issparse(inst.A) else inst.A


def _row_loss(name, z, y):
    if name == "least_squares":
        return 0.5 * (z - y) ** 2
    return math.log1p(math.exp(-y * z)) if -y * z < 30 else -y * z


def _row_slope(name, z, y):
    if name == "least_squares":
        return z - y
    return -y / (1.0 + math.exp(y * z))


def _reg(name, reg, x):
    if name == "nonconvex":
        return reg * np.sum(x * x / (1 + x * x)), reg * 2 * x / (1 + x * x) ** 2
    return 0.5 * reg * x @ x, reg * x


def _f_i(inst, i, x):
    """f_i(x) by a loop over node i's rows."""
    A, lo, hi = _dense(inst), inst.offsets[i], inst.offsets[i + 1]
    data = sum(_row_loss(inst.name, float(A[s] @ x), inst.y[s]) for s in range(lo, hi))
    return data / (hi - lo) + _reg(inst.name, inst.reg, x)[0]


def _twin_grads(inst, seed=None, batch=0):
    """grad(X, t): node i's gradient at X[i] by a loop over its rows, or over the rows its
    step-t key draws (rng.uniform_index of the node's noise key) when batch > 0."""
    A = _dense(inst)

    def grad(X, t):
        G = np.empty_like(X)
        tkey = None
        if batch:
            u64 = np.uint64
            tkey = u64(rng.step_key(u64(rng.stream_key(seed, rng.STREAM_NOISE)), t))
        for i in range(inst.n):
            lo, m = inst.offsets[i], inst.offsets[i + 1] - inst.offsets[i]
            if batch:
                key = np.uint64(rng.row_key(tkey, i))
                rows = [lo + rng.uniform_index(key, j, m) for j in range(batch)]
            else:
                rows = range(lo, lo + m)
            G[i] = _reg(inst.name, inst.reg, X[i])[1] + sum(
                _row_slope(inst.name, float(A[s] @ X[i]), inst.y[s]) * A[s] for s in rows) / len(rows)
        return G

    return grad


def _sparse_file(tmp_path, rows=60, d=7, seed=0):
    """An .npz of a sparse matrix with two-class labels (about 40% nonzeros)."""
    g = np.random.default_rng(seed)
    X = sps.random(rows, d, density=0.4, random_state=seed, format="csr") * 2.0
    y = np.where(X @ g.normal(size=d) + 0.3 * g.normal(size=rows) > 0, 1.0, 0.0)
    path = tmp_path / "sparse.npz"
    sps.save_npz(path, X)
    with np.load(path) as z:
        np.savez(path, **z, y=y)
    return str(path), X, y


@pytest.mark.parametrize("name", PROBLEMS)
def test_objective_and_gradient_against_loops_and_finite_differences(name):
    inst = fastgt.problem(name, samples=5, reg=0.3, split="dirichlet", split_alpha=0.5,
                          seed=2).build(6, 4)
    X = np.random.default_rng(1).normal(size=(6, 4))
    f_loop = [np.mean([_f_i(inst, i, x) for i in range(6)]) for x in X]
    np.testing.assert_allclose(inst.f(X), f_loop, rtol=1e-13)
    np.testing.assert_allclose(inst.grad(X), _twin_grads(inst)(X, 0), rtol=1e-12, atol=1e-14)
    eps = 1e-6
    for i in range(6):
        fd = [(_f_i(inst, i, X[i] + eps * e) - _f_i(inst, i, X[i] - eps * e)) / (2 * eps)
              for e in np.eye(4)]
        np.testing.assert_allclose(inst.grad(X)[i], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(inst.full_grad(X[0]), inst.grad(np.tile(X[0], (6, 1))).mean(0),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", PROBLEMS)
def test_objective_in_blocks_and_at_large_margins(name, sparse, tmp_path, monkeypatch):
    """f evaluates in blocks of data rows x iterates: with blocks smaller than the data (7
    rows, 20 margins: every boundary crossed, partial last blocks) it still equals the
    loops, at margins from 0.1 to ~1e3 (where exp(-y z) overflows unless written stably)."""
    monkeypatch.setattr(samples, "_ROWS", 7)
    monkeypatch.setattr(samples, "_CHUNK", 20)
    data = {"data": _sparse_file(tmp_path)[0]} if sparse else {"samples": 5}
    inst = fastgt.problem(name, **data, reg=0.3, seed=2).build(6, 7)
    assert len(inst.y) > 3 * samples._ROWS and inst.sparse == sparse
    scale = np.array([0.1, 1.0, 10.0, 300.0, -300.0])[:, None]
    X = np.random.default_rng(3).normal(size=(5, inst.d)) * scale
    f_loop = [np.mean([_f_i(inst, i, x) for i in range(6)]) for x in X]
    np.testing.assert_allclose(inst.f(X), f_loop, rtol=1e-13)
    np.testing.assert_allclose([inst.f(x) for x in X], f_loop, rtol=1e-13)


@pytest.mark.parametrize("name", PROBLEMS)
def test_optimum_against_an_independent_scipy_solve(name):
    inst = fastgt.problem(name, samples=8, reg=0.05, split="sorted", seed=3).build(5, 3)

    def f(x):
        return np.mean([_f_i(inst, i, x) for i in range(inst.n)])

    other = sopt.minimize(f, np.full(3, 0.1), method="BFGS", options={"gtol": 1e-10})
    assert inst.fstar == pytest.approx(other.fun, rel=1e-10)
    assert np.linalg.norm(inst.full_grad(inst.xstar)) < 1e-12
    if name != "nonconvex":  # convex: one minimizer
        np.testing.assert_allclose(inst.xstar, other.x, atol=1e-5)
    G = np.array([inst.grad(np.tile(inst.xstar, (5, 1)))[i] for i in range(5)])
    assert inst.zeta2 == pytest.approx(np.mean(np.sum(G * G, axis=1)), rel=1e-12)


def test_logistic_is_stable_for_large_margins():
    inst = fastgt.problem("logistic", samples=4, reg=0.0).build(3, 2)
    x = np.array([1e4, -1e4])
    assert np.isfinite(inst.f(x)) and np.all(np.isfinite(inst.grad(np.tile(x, (3, 1)))))
    res = fastgt.run(topology="ring", n=3, problem=fastgt.problem("logistic", samples=4), d=2,
                     noise="none", steps=2, record_every=1, x0=np.tile(x, (3, 1)),
                     stepsize=1e-9)
    assert np.all(np.isfinite(res.state["X"]))


def _spec(name, sparse_path=None, **kw):
    kw = dict(samples=6, reg=0.1, split="dirichlet", split_alpha=0.3, seed=1, **kw)
    if sparse_path:
        kw.update(data=sparse_path)
        kw.pop("samples")
    return fastgt.problem(name, **kw)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("noise", ["none", "minibatch", "minibatch+gaussian"])
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_every_algorithm_matches_its_twin(algorithm, noise, sparse, tmp_path):
    _check_twin(algorithm, noise, sparse, tmp_path)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_float32_state_follows_the_twin(algorithm, sparse, tmp_path):
    """dtype="float32" with minibatches drawn in the kernels: the float64 twin to what 8
    roundings of 2^-24 per step allow over the run (tests/kernels/test_kernels.py: RTOL32)."""
    _check_twin(algorithm, "minibatch", sparse, tmp_path, "float32")


def _check_twin(algorithm, noise, sparse, tmp_path, dtype="float64"):
    W, d, seed = fastgt.topology("erdos_renyi", n=12, prob=0.4, seed=3), 5, 4
    path = _sparse_file(tmp_path, d=d)[0] if sparse else None
    # a batch_size acts under minibatch only; 5 rows: a block of 4 dense rows and one more
    batch = 5 if noise.startswith("minibatch") else 1
    spec = _spec("logistic" if sparse else "least_squares", path, batch_size=batch)
    x0 = np.random.default_rng(7).normal(size=(W.n, d))
    res = fastgt.run(algorithm=algorithm, topology=W, problem=spec, noise=noise,
                     sigma2=ref.given_sigma2(noise, 0.5),
                     d=d, stepsize=GAMMA, steps=STEPS, record_every=RECORD, seed=seed, x0=x0,
                     allow_unstable=True, dtype=dtype)
    rtol = RTOL if dtype == "float64" else 8 * STEPS * 2.0**-24
    x0 = x0.astype(dtype).astype(np.float64)  # as the run stored it
    inst = spec.build(W.n, d).in_dtype(dtype)  # float32: the rows rounded, as the run's
    grad = _twin_grads(inst, seed, batch if noise.startswith("minibatch") else 0)
    add = (ref.fastgt_noise("gaussian", 0.5, d, W, seed) if noise.endswith("gaussian")
           else ref.no_noise(W.n, d))
    states = ref.simulate(algorithm, W.to_dense(), lambda X, t: grad(X, t) + add(t), GAMMA,
                          x0, STEPS)
    for key, want in states[-1].items():
        got = res.state[key]
        assert got.dtype == dtype
        assert np.max(np.abs(got - want)) <= rtol * np.max(np.abs(want)), key
    for t in range(0, STEPS, RECORD):
        want = ref.metrics(inst, states[t]["X"], states[t].get("Y"))
        got = res.trace.loc[res.trace["step"] == t, list(fastgt.METRICS)].to_numpy()[0]
        np.testing.assert_allclose(got, want, rtol=max(1e-9, 2 * rtol), atol=1e-12)


def test_minibatch_same_bits_on_threads_and_in_a_batch():
    assert_same_bits_on_threads_and_in_a_batch(
        problem=fastgt.problem("logistic", samples=9, batch_size=2, split="dirichlet"),
        noise="minibatch+gaussian", d=9, steps=17, record_every=4, stepsize=0.02)


@numba.njit(error_model="numpy", fastmath=True)  # as the kernels
def _row_by_row(data, rows, counts, X, G):
    """Each node's gradient a row at a time (the loop before dense rows were summed in
    blocks of four): G[i] = reg X[i], then G[i] += c_s a_s for each drawn row s in turn, an
    fma per coordinate (a CSR row's nonzeros), c_s = loss'(a_s^T X[i], y_s) / count by the
    family's own dot product (dense) and slope."""
    for i in range(X.shape[0]):
        for k in range(X.shape[1]):
            G[i, k] = data.reg * X[i, k]
        for j in range(counts[i]):
            s = rows[i, j]
            if data.sparse:
                z = 0.0
                for p in range(data.indptr[s], data.indptr[s + 1]):
                    z = samples.fma(data.values[p], X[i, data.indices[p]], z)
                c = samples.loss_slope(data.loss, z, data.y[s], False) / counts[i]
                for p in range(data.indptr[s], data.indptr[s + 1]):
                    G[i, data.indices[p]] = samples.fma(c, data.values[p],
                                                        G[i, data.indices[p]])
            else:
                c = samples.dense_slope(data, s, X, i, counts[i])
                for k in range(X.shape[1]):
                    G[i, k] = samples.fma(c, data.A[s, k], G[i, k])


@pytest.mark.parametrize("batch", [0, 3, 4, 5, 8, 13])
@pytest.mark.parametrize("name", ["least_squares", "logistic", "sparse"])
def test_blocked_rows_give_the_bits_of_a_row_at_a_time(name, batch, tmp_path):
    """The kernels' gradients (oracles.stochastic_grads through grad_row, dense rows four at
    a time) equal, to the bit and on any CPU, the row-at-a-time loop compiled beside them
    (batch 0: every row of the node, 1-17 of them; "sparse": logistic on a CSR file)."""
    from fastgt.algorithms import Batch, Cell
    from fastgt.problems import make_noise

    n, d, seed, t = 7, 11, 4, 3
    W = fastgt.topology("ring", n=n)
    if name == "sparse":
        spec = fastgt.problem("logistic", data=_sparse_file(tmp_path, rows=63, d=d)[0],
                              split="dirichlet", split_alpha=0.5, reg=0.2, seed=1)
    else:
        spec = fastgt.problem(name, samples=9, split="dirichlet", split_alpha=0.5, reg=0.2,
                              seed=1)
    inst = spec.build(n, d).sampled(batch)
    b = Batch([Cell(W, make_noise("none", 0.0, d, W), 0.1, seed, None)], inst, None, 1, None)
    X = np.zeros((b.rows, b.dp))
    X[:n, :d] = np.random.default_rng(2).normal(size=(n, d))
    G = np.zeros_like(X)
    b.grads(t, b.used(X), b.used(G), 0)
    sizes = np.diff(inst.offsets)
    counts = np.full(n, batch) if batch else sizes
    rows = np.zeros((n, counts.max()), dtype=np.int64)
    u64 = np.uint64
    tkey = u64(rng.step_key(u64(rng.stream_key(seed, rng.STREAM_NOISE)), t))
    for i in range(n):
        lo, key = inst.offsets[i], u64(rng.row_key(tkey, i))
        rows[i, :counts[i]] = [lo + (rng.uniform_index(key, j, sizes[i]) if batch else j)
                               for j in range(counts[i])]
    want = np.zeros_like(G)
    _row_by_row(b.oracle.data, rows, counts, b.used(X), b.used(want))
    assert inst.sparse == (name == "sparse") and sizes.max() >= 8
    assert np.array_equal(G, want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name,params", [("ring", {"n": 12, "self_weight": 0.2}),
                                         ("torus", {"rows": 3, "cols": 4})])
def test_gts_one_mixing_pass_gives_the_bits_of_three(name, params, sparse, dtype, tmp_path):
    """GT on a data problem mixes Y and X and forms x' in one pass on rows of 3 and 5
    entries (gt.fused_mixes); topology_y, the same matrix again, takes the passes one by one
    (x' from W Y, then Y mixed with its copy of W): the same numbers to the bit, on any CPU."""
    W = fastgt.topology(name, **params)
    assert set(np.diff(W.indptr)) == ({3} if name == "ring" else {5})
    path = _sparse_file(tmp_path, d=5)[0] if sparse else None
    kw = {"algorithm": "gt", "topology": W, "problem": _spec("logistic", path, batch_size=3),
          "noise": "minibatch+gaussian", "sigma2": 0.5, "d": 5, "stepsize": GAMMA,
          "steps": STEPS, "record_every": RECORD, "seed": 4, "dtype": dtype}
    one = fastgt.run(**kw)
    three = fastgt.run(topology_y=fastgt.topology(name, **params), **kw)
    np.testing.assert_array_equal(one.records, three.records)
    for key in ("X", "Y"):
        assert np.array_equal(one.state[key], three.state[key])


@pytest.mark.parametrize("noise,batch_size", [("minibatch", 1), ("minibatch", 3),
                                               ("minibatch", 6), ("minibatch", 13),
                                               ("none", None)])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_rows_beyond_the_cache_prefetched_further_ahead_give_the_same_bits(
        sparse, noise, batch_size, tmp_path, monkeypatch):
    """Rows beyond the last-level cache (SampleData.far: a cache of 64 bytes here) start
    loading a later node's first rows at each gradient (at batch 1 the node's 8 ahead, at
    3 the next-but-one's), and dense rows 2 AHEAD rows before their sums too: the same
    numbers to the bit, at batches under AHEAD, between AHEAD and 2 AHEAD, over 2 AHEAD,
    and every row (noise "none": nodes of 1 to 21 rows)."""
    path = _sparse_file(tmp_path, d=5)[0] if sparse else None
    spec = (_spec("logistic", path, batch_size=batch_size) if batch_size else
            _spec("logistic", path))
    kw = {"algorithm": "gt", "topology": fastgt.topology("ring", n=10), "problem": spec,
          "noise": noise, "d": 5, "stepsize": GAMMA, "steps": STEPS, "record_every": RECORD,
          "seed": 4}
    near = fastgt.run(**kw)
    inst = kw["problem"].build(10, 5)
    assert not inst.kernel_data(lambda M, dt: M).far
    monkeypatch.setattr(samples, "llc_bytes", lambda: 64)
    assert inst.kernel_data(lambda M, dt: M).far
    far = fastgt.run(**kw)
    np.testing.assert_array_equal(near.records, far.records)
    assert np.array_equal(near.state["X"], far.state["X"])


def test_minibatch_gradients_are_unbiased():
    """The mean of many minibatch gradients (steps t, batch 2) is the exact local gradient
    within 5 standard errors, coordinate by coordinate."""
    from fastgt.algorithms import Batch, Cell
    from fastgt.problems import make_noise

    W, d, draws = fastgt.topology("ring", n=4), 3, 4000
    inst = fastgt.problem("logistic", samples=7, split="iid", batch_size=2).build(4, d)
    inst = inst.sampled(2)
    batch = Batch([Cell(W, make_noise("none", 0.0, d, W), 0.1, 11, None)], inst,
                  None, 1, None)
    X = np.zeros((batch.rows, batch.dp))
    X[:4, :d] = np.random.default_rng(2).normal(size=(4, d))
    G = np.zeros_like(X)
    samples = np.empty((draws, 4, d))
    for t in range(draws):
        batch.grads(t, batch.used(X), batch.used(G), 0)
        samples[t] = G[:4, :d]
    mean, se = samples.mean(axis=0), samples.std(axis=0, ddof=1) / math.sqrt(draws)
    exact = inst.grad(X[:4, :d])
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-15)
    assert np.all(se > 0)  # the draws do vary


def test_exact_methods_reach_the_optimum_where_dsgd_stalls():
    """Noiseless GT, EXTRA and D² reach x* to 1e-8 on logistic regression with a Dirichlet
    split; D-SGD stops at a heterogeneity floor far from it."""
    spec = fastgt.problem("logistic", samples=20, reg=0.1, split="dirichlet", split_alpha=0.1)
    W, d = fastgt.topology("ring", n=8, self_weight=0.4), 5
    xstar = spec.build(8, d).xstar
    dist = {}
    for algo in ("gt", "extra", "d2", "dsgd"):
        res = fastgt.run(algorithm=algo, topology=W, problem=spec, noise="none", d=d,
                         stepsize=1.0, steps=3000, record_every=3000)
        dist[algo] = np.max(np.abs(res.state["X"] - xstar))
    assert max(dist["gt"], dist["extra"], dist["d2"]) < 1e-8, dist
    assert dist["dsgd"] > 1e-3, dist


def test_metrics_and_columns_of_a_classification_run():
    spec = fastgt.problem("logistic", samples=10, split="sorted")
    res = fastgt.run(topology="ring", n=4, problem=spec, noise="full", d=3, steps=10,
                     record_every=5, stepsize=0.5)
    inst = spec.build(4, 3)
    assert res.trace["accuracy"].between(0, 1).all()
    assert res.summary["final_accuracy"] == pytest.approx(
        ref.METRIC_TWINS["accuracy"](inst, res.state["X"], None))
    cols = inst.columns()
    assert set(cols) == {"fstar", "zeta2"} and cols["zeta2"] > 0
    info = inst.info()
    assert np.sum(info["class_counts"]) == 40 and sorted(info["classes"]) == [-1.0, 1.0]
    quad = fastgt.run(topology="ring", n=4, d=3, steps=10, record_every=5)
    assert quad.trace["accuracy"].isna().all() and quad.summary["status"] == "ok"


def test_a_sweep_solves_each_instance_once_and_keeps_the_optimum(tmp_path):
    """Cells of a sweep on DIR keep x* in DIR/optimum/<key>.npy; a later process (here: the
    in-process instances forgotten) reads it instead of solving: a planted x* in that file
    is what its cells' fstar is computed from."""
    from fastgt.problems import _BUILT
    from fastgt.sweep.cellrun import run_cells
    from fastgt.sweep.grid import canonical

    params = canonical({"algorithm": "gt", "topology": "ring", "n": 4, "problem": "logistic",
                        "samples": 10, "reg": 0.1, "noise": "full", "d": 3, "stepsize": 0.5,
                        "steps": 4, "record_every": 2})
    cache = tmp_path / "optimum"
    _BUILT.clear()
    (row, _, _), = run_cells([params], 1, str(tmp_path))
    files = list(cache.glob("*.npy"))
    assert len(files) == 1 and row["status"] == "ok", row
    inst = fastgt.problem("logistic", samples=10, reg=0.1).build(4, 3)
    assert np.array_equal(np.load(files[0]), inst.xstar)
    assert row["fstar"] == inst.fstar
    planted = inst.xstar + 0.5
    np.save(files[0], planted)
    _BUILT.clear()
    (row2, _, _), = run_cells([params], 1, str(tmp_path))
    assert row2["fstar"] == float(inst.f(planted)) != row["fstar"]
    _BUILT.clear()
    (row3, _, _), = run_cells([params], 1, None)  # no cache: solved again
    assert row3["fstar"] == row["fstar"]
