"""docs/extending.md's worked example of a problem (least squares on node-local samples,
tests/problems/example_least_squares.py), registered as the doc says and checked like the
built-in ones: its objective and optimum against direct formulas, every algorithm against
its dense twin (tests/reference.py) with exact and minibatch gradients, the same bits on 1
and 2 threads and in a batch."""

import example_least_squares as ex
import numpy as np
import pytest
import reference as ref
from examples import assert_doc_shows, assert_same_bits_on_threads_and_in_a_batch

import fastgt
from fastgt.kernels import rng
from fastgt.problems import PROBLEMS

pytestmark = pytest.mark.usefixtures("one_numba_thread")

STEPS, RECORD, GAMMA, RTOL = 23, 5, 0.05, 1e-10


@pytest.fixture
def lsq(monkeypatch):
    """The example registered (a module in fastgt/problems/ is registered by being there)."""
    for name, build in ex.PROBLEMS.items():
        monkeypatch.setitem(PROBLEMS, name, build)
    return "least_squares"


def test_the_doc_shows_the_tested_module():
    assert_doc_shows("## A problem", ex)


def _f_loops(inst, x):
    """f(x) = (1/n) sum_i 1/(2 m_i) sum_j (a_ij^T x - b_ij)^2 + reg/2 ||x||^2, by loops."""
    total = 0.0
    for i in range(inst.n):
        rows = range(inst.offsets[i], inst.offsets[i + 1])
        total += sum((inst.A[s] @ x - inst.b[s]) ** 2 for s in rows) / (2 * len(rows))
    return total / inst.n + 0.5 * inst.reg * x @ x


def test_objective_gradient_and_optimum():
    inst = ex.least_squares(5, 3, samples=4, reg=0.3, seed=2)
    x = np.random.default_rng(1).normal(size=(5, 3))
    assert np.allclose(inst.f(x), [_f_loops(inst, row) for row in x], rtol=1e-13)
    eps = 1e-6  # central differences of f_i (f with node i's rows only, n = 1)
    for i in range(inst.n):
        node = ex.LeastSquares("node", 1, 3, inst.A[4 * i:4 * i + 4], inst.b[4 * i:4 * i + 4],
                               np.array([0, 4]), reg=0.3)
        fd = [(node.f(x[i] + eps * e) - node.f(x[i] - eps * e)) / (2 * eps) for e in np.eye(3)]
        assert np.allclose(inst.grad(x)[i], fd, rtol=1e-7, atol=1e-8)
    xs = inst.xstar
    assert np.linalg.norm(inst.full_grad(xs)) < 1e-12
    assert inst.fstar == pytest.approx(_f_loops(inst, xs), rel=1e-13)
    assert np.all(inst.loss(xs + 0.01 * x) > 0)


def _sampled_grad(inst, seed):
    """grad(X, t): node i's gradient on the rows its step-t key draws (rng.uniform_index
    of the node's noise key, as docs/extending.md says), written from the definition."""

    def grad(X, t):
        G = inst.reg * X
        u64 = np.uint64  # keys leave numba as Python ints
        tkey = u64(rng.step_key(u64(rng.stream_key(seed, rng.STREAM_NOISE)), t))
        for i in range(inst.n):
            key, lo = u64(rng.row_key(tkey, i)), inst.offsets[i]
            m = inst.offsets[i + 1] - lo
            drawn = [lo + rng.uniform_index(key, j, m) for j in range(inst.batch_size)]
            G[i] += sum((inst.A[s] @ X[i] - inst.b[s]) * inst.A[s] for s in drawn) / len(drawn)
        return G

    return grad


@pytest.mark.parametrize("noise,batch_size", [("none", 1), ("gaussian", 1), ("minibatch", 3)])
#: the example's family compiled for two algorithms (each costs a cold compile in CI): the
#: generic hook path of every algorithm is covered by the built-in problems with data
#: (tests/problems/test_samples.py)
@pytest.mark.parametrize("algorithm", ["gt", "d2"])
def test_every_algorithm_matches_its_twin(lsq, algorithm, noise, batch_size):
    W, d, seed = fastgt.topology("erdos_renyi", n=12, prob=0.4, seed=3), 5, 4
    spec = fastgt.problem(lsq, samples=6, batch_size=batch_size, reg=0.1, seed=1)
    x0 = np.random.default_rng(7).normal(size=(W.n, d))
    res = fastgt.run(algorithm=algorithm, topology=W, problem=spec, noise=noise,
                     sigma2=ref.given_sigma2(noise, 0.5),
                     d=d, stepsize=GAMMA, steps=STEPS, record_every=RECORD, seed=seed, x0=x0)
    inst = spec.build(W.n, d)
    grad = _sampled_grad(inst, seed) if noise == "minibatch" else lambda X, t: inst.grad(X)
    noise_fn = (ref.no_noise(W.n, d) if noise != "gaussian"
                else ref.fastgt_noise(noise, 0.5, d, W, seed))
    states = ref.simulate(algorithm, W.to_dense(), lambda X, t: grad(X, t) + noise_fn(t),
                          GAMMA, x0, STEPS)
    for key, want in states[-1].items():
        got = res.state[key]
        assert np.max(np.abs(got - want)) <= RTOL * np.max(np.abs(want)), key
    for t in range(0, STEPS, RECORD):  # the recorded metrics, from the problem's f and grad
        want = ref.metrics(inst, states[t]["X"], states[t].get("Y"))
        got = res.trace.loc[res.trace["step"] == t, list(fastgt.METRICS)].to_numpy()[0]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_minibatch_same_bits_on_threads_and_in_a_batch(lsq):
    assert_same_bits_on_threads_and_in_a_batch(
        problem=fastgt.problem(lsq, samples=9, batch_size=2), noise="minibatch+gaussian", d=9,
        steps=17, record_every=4, stepsize=0.02)


def test_gradient_tracking_reaches_the_optimum_with_exact_gradients(lsq):
    """GT's fixed point is x* on every node, heterogeneous data or not (full gradients)."""
    res = fastgt.run(topology=fastgt.topology("ring", n=10), problem=fastgt.problem(lsq),
                     noise="none", d=4, stepsize=0.05, steps=3000, record_every=3000)
    inst = fastgt.problem(lsq).build(10, 4)
    np.testing.assert_allclose(res.state["X"], np.tile(inst.xstar, (10, 1)), atol=1e-9)


def test_the_example_takes_grid_files_defaults(lsq):
    """Its parameters as fastgt declares them (batch_size >= 1, a default of 1): a grid file
    naming it validates and builds (a batch_size of 0 by default refused every grid)."""
    from fastgt.sweep.grid import parse_spec

    cells = parse_spec(f'[run]\ntopology = "ring"\nn = 8\nd = 3\nproblem = "{lsq}"\n'
                       '[[grid]]\nnoise = ["none", "minibatch"]\n').cells()
    assert [c.params["batch_size"] for c in cells] == [1, 1]  # null in the none cell's row
    for c in cells:
        p = c.params
        res = fastgt.run(topology=fastgt.topology("ring", n=8), problem=lsq, d=3,
                         noise=p["noise"], steps=3, record_every=1)
        assert res.summary["status"] == "ok"
