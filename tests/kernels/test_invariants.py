"""The paper's invariants and exact convergence facts, checked on fastgt.run."""

import importlib

import numpy as np
import pytest
import reference as ref

import fastgt
from fastgt.algorithms import ALGORITHMS

pytestmark = pytest.mark.usefixtures("one_numba_thread")

INVARIANT_TOPOLOGIES = [("ring", {"n": 12, "self_weight": 0.2}),
                        ("interp_ring", {"n": 16, "alpha": 0.6}),
                        ("complete", {"n": 10})]


def _run(algorithm, W, steps, record_every, **kw):
    kw = {"problem": "hetero_quadratic", "noise": "gaussian", "d": 5, "stepsize": 0.1,
          "seed": 4, **kw}
    return fastgt.run(algorithm=algorithm, topology=W, steps=steps, record_every=record_every,
                      **kw)


@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("name,params", INVARIANT_TOPOLOGIES)
def test_tracking_mean_equals_gradient_mean(name, params, noise):
    """ybar(t) = (1/n) sum_i g_i(t) at every t (W doubly stochastic and y0 = g0): up to
    rounding, i.e. 1e-13 of the largest gradient entry."""
    W = fastgt.topology(name, **params)
    for t in (1, 2, 7, 20):  # at t >= 1 it holds only if it held at t = 0 (y(0) = g(0))
        st = _run("gt", W, t, 3, noise=noise).state
        scale = np.abs(st["G"]).max()
        np.testing.assert_allclose(st["Y"].mean(axis=0), st["G"].mean(axis=0), rtol=0,
                                   atol=1e-13 * scale)


@pytest.mark.parametrize("problem", ["hetero_quadratic", "quadratic"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_same_seed_same_trajectory_whatever_the_chunking(algorithm, dtype, problem):
    """A run of t steps is bit-identical to the first t steps of a longer run with the same
    seed, whatever record_every (i.e. however the steps are split into kernel calls; on the
    homogeneous quadratic D-SGD fuses mix and update but not on the last step of a call:
    float32 states round x' alike in both)."""
    W = fastgt.topology("interp_ring", n=16, alpha=0.6)
    long = _run(algorithm, W, 20, 1, dtype=dtype, problem=problem)
    for t, every in ((7, 7), (7, 2), (20, 20), (20, 6)):
        short = _run(algorithm, W, t, every, dtype=dtype, problem=problem)
        np.testing.assert_array_equal(short.trace.iloc[-1].to_numpy(),
                                      long.trace.iloc[t].to_numpy())
        if t == 20:
            for key in long.state:
                np.testing.assert_array_equal(short.state[key], long.state[key])


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_complete_graph_is_minibatch_sgd(algorithm):
    """W = (1/n) 11^T: after step 1 all rows equal xbar, and xbar(t+1) = xbar(t) - gamma
    gbar(t), gbar(t) = mean_i grad F_i(x_i(t), xi_i(t)) (for GT because ybar = gbar). The
    numpy SGD below gets the same noise; both algorithms must follow it to 1e-10."""
    n, d, gamma, steps = 16, 5, 0.1, 30
    W = fastgt.topology("complete", n=n)
    inst = fastgt.problem("hetero_quadratic").build(n, d)
    noise = ref.fastgt_noise("gaussian", 1.0, d, W, seed=4)
    x0 = np.random.default_rng(1).normal(size=(n, d))
    res = _run(algorithm, W, steps, 1, x0=x0)

    xs = [x0.mean(axis=0)]
    xs.append(xs[0] - gamma * (inst.grad(x0) + noise(0)).mean(axis=0))
    for t in range(1, steps):
        X = np.tile(xs[t], (n, 1))
        xs.append(xs[t] - gamma * (inst.grad(X) + noise(t)).mean(axis=0))
    xs = np.array(xs)

    abar, xstar = inst.A.mean(axis=0), inst.B.mean(axis=0) / inst.A.mean(axis=0)
    loss = 0.5 * np.sum(abar * (xs - xstar) ** 2, axis=1)
    np.testing.assert_allclose(res.trace["loss_avg"], loss, rtol=1e-10)
    assert np.all(res.trace["consensus"].to_numpy()[1:] < 1e-28 * res.trace["consensus"][0])
    X = res.state["X"]
    assert np.max(np.abs(X - xs[-1])) <= 1e-10 * np.max(np.abs(xs[-1]))


def _gt_mode_radius(lam, gamma):
    """Noiseless GT on f_i = 1/2||x - mu_i||^2, in the eigenbasis of W (eigenvalue lam):
    with e = x - x*, g = e - (mu_i - x*) so g(t+1) - g(t) = x(t+1) - x(t), and
        x' = lam x - gamma lam y
        y' = lam y + x' - x = (lam - 1) x + (1 - gamma) lam y.
    For lam = 1 the invariant ybar = gbar = xbar - x* leaves only (1 - gamma)."""
    if np.isclose(lam, 1.0):
        return 1.0 - gamma
    M = np.array([[lam, -gamma * lam], [lam - 1.0, (1.0 - gamma) * lam]])
    return np.max(np.abs(np.linalg.eigvals(M)))


@pytest.mark.parametrize("name,params", [("ring", {"n": 10, "self_weight": 0.5}),
                                         ("ring", {"n": 12, "self_weight": 0.2}),
                                         ("star", {"n": 8}),
                                         ("torus", {"rows": 3, "cols": 4})])
def test_gt_consensus_linear_rate(name, params):
    """Theorem 2's setting: the distance to x* decays exactly like rho^t, rho = the largest
    spectral radius over the per-eigenvalue GT iteration matrices.

    loss_nodes = (1/(2n)) ||X - 1 x*^T||^2 = sum_modes C_m rho_m^(2t) (+ terms decaying at
    rho rho_2 or faster; the dominant mode is real on these graphs: lambda_2 > 0 gives real
    roots, and the mean mode is real), so over a window [t1, t2]
        |slope of log(loss_nodes) / 2 - log rho| <= log(1 + K r^t1) / (t2 - t1),  r = rho_2/rho,
    with K a ratio of initial mode amplitudes (O(1) for random x0 and mu). We take r^t1 = 1e-3
    and rho^(t2 - t1) = 1e-5 (loss_nodes stays ~1e-12, far above the ~1e-31 rounding floor),
    so the relative error on log rho is <= 1e-3 K / ln(1e5) ~ 1e-4 K: a tolerance of 1e-3
    allows K up to ~10."""
    gamma = 0.1
    W = fastgt.topology(name, **params)
    lam = np.linalg.eigvalsh(W.to_dense())
    radii = sorted({round(_gt_mode_radius(x, gamma), 12) for x in lam}, reverse=True)
    rho, rho2 = radii[0], radii[1]
    t1 = int(np.ceil(np.log(1e-3) / np.log(rho2 / rho)))
    t2 = t1 + int(np.ceil(np.log(1e-5) / np.log(rho)))
    res = fastgt.run(algorithm="gt", topology=W, problem=fastgt.problem("consensus", seed=2),
                     noise="none", d=4, stepsize=gamma, steps=t2, record_every=t1, seed=3)
    tr = res.trace.set_index("step")["loss_nodes"]
    slope = (np.log(tr[t2]) - np.log(tr[t1])) / (2 * (t2 - t1))
    assert abs(slope / np.log(rho) - 1) < 1e-3, (slope, np.log(rho))


def _dsgd_fixed_point(W, inst, gamma):
    """Noiseless D-SGD fixed point, per coordinate k: x = W (x - gamma (a_k * x - b_k)), i.e.
    (I - W + gamma W diag(a_k)) x = gamma W b_k."""
    Wd, n = W.to_dense(), W.n
    cols = [np.linalg.solve(np.eye(n) - Wd + gamma * Wd * inst.A[:, k], gamma * Wd @ inst.B[:, k])
            for k in range(inst.d)]
    return np.column_stack(cols)


@pytest.mark.parametrize("problem", ["consensus", "hetero_quadratic"])
def test_gt_exact_dsgd_biased_on_heterogeneous_problems(problem):
    """Noiseless: GT reaches x* to 1e-10 (and y -> 0); D-SGD stops at its own fixed point
    (solved with numpy), whose distance to x* is a clear, nonzero bias."""
    n, d, gamma, steps = 12, 5, 0.3, 3000
    W = fastgt.topology("ring", n=n)
    spec = fastgt.problem(problem, zeta=2.0)
    inst = spec.build(n, d)
    xstar = inst.B.mean(axis=0) / inst.A.mean(axis=0)
    kw = {"topology": W, "problem": spec, "noise": "none", "d": d, "stepsize": gamma,
          "steps": steps, "record_every": 1000, "seed": 1}
    gt = fastgt.run(algorithm="gt", **kw)
    assert np.max(np.abs(gt.state["X"] - xstar)) < 1e-10 * np.max(np.abs(xstar))
    assert np.max(np.abs(gt.state["Y"])) < 1e-10 * np.max(np.abs(xstar))

    dsgd = fastgt.run(algorithm="dsgd", **kw)
    Xfp = _dsgd_fixed_point(W, inst, gamma)
    np.testing.assert_allclose(dsgd.state["X"], Xfp, rtol=0, atol=1e-10 * np.abs(Xfp).max())
    bias = 0.5 * np.mean(np.sum(inst.A.mean(axis=0) * (Xfp - xstar) ** 2, axis=1))
    assert bias > 1e-2
    np.testing.assert_allclose(dsgd.trace["loss_nodes"].iloc[-1], bias, rtol=1e-6)
    assert gt.trace["loss_nodes"].iloc[-1] < 1e-12 * bias


@pytest.mark.parametrize("algorithm", ["d2", "extra", "centralized", "gt_atc"])
@pytest.mark.parametrize("problem", ["consensus", "hetero_quadratic"])
def test_exact_algorithms_reach_the_optimum_on_heterogeneous_problems(algorithm, problem):
    """Noiseless, like GT: D², EXTRA, ATC-GT and the centralized baseline reach x* to 1e-10
    where D-SGD is biased (previous test)."""
    n, d = 12, 5
    spec = fastgt.problem(problem, zeta=2.0)
    inst = spec.build(n, d)
    xstar = inst.B.mean(axis=0) / inst.A.mean(axis=0)
    res = fastgt.run(algorithm=algorithm, topology=fastgt.topology("ring", n=n, self_weight=0.5),
                     problem=spec, noise="none", d=d, stepsize=0.2, steps=4000,
                     record_every=4000, seed=1)
    assert np.max(np.abs(res.state["X"] - xstar)) < 1e-10 * np.max(np.abs(xstar))


@pytest.mark.parametrize("algorithm", ["gt", "d2", "extra"])
@pytest.mark.parametrize("problem", ["quadratic", "hetero_quadratic"])
@pytest.mark.parametrize("noise", ["structured", "none"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_previous_gradient_recomputed_to_the_bit(monkeypatch, algorithm, problem, noise, dtype):
    """With structured or no noise GT, D² and EXTRA keep no G: g(t) is recomputed from x(t)
    and step t's shared draw. Forcing the stored-G path must give the very same bits, and
    state["G"] must be the gradient the stored path holds (a float32 state: both paths
    take x(t) and the gradients rounded as stored)."""
    module = importlib.import_module(f"fastgt.algorithms.{algorithm}")
    W = fastgt.topology("interp_ring", n=24, alpha=0.7, lazy=True)
    kw = {"algorithm": algorithm, "topology": W, "problem": problem, "noise": noise, "d": 11,
          "steps": 63, "record_every": 7, "seed": 5, "dtype": dtype}
    rows, lean_rows = module.gradient_rows, []

    def counted(batch, *lead, recomputes, at=512):
        assert recomputes  # the module says its kernels recompute G
        G = rows(batch, *lead, recomputes=recomputes, at=at)
        lean_rows.append(G.shape[-2])
        return G

    monkeypatch.setattr(module, "gradient_rows", counted)
    lean = fastgt.run(**kw)
    assert lean.config["noise"] == noise
    assert lean_rows == [0]  # the lean run really kept no G
    monkeypatch.setattr(module, "gradient_rows",  # as an algorithm without the fast path
                        lambda batch, *lead, recomputes, at=512: rows(batch, *lead,
                                                                      recomputes=False, at=at))
    full = fastgt.run(**kw)
    assert not callable(full.state._values["G"])  # the stored path ran
    for key in full.state:
        assert np.array_equal(lean.state[key], full.state[key]), key
    assert np.array_equal(lean.records, full.records, equal_nan=True)


def test_gt_state_g_is_computed_only_when_asked_for(monkeypatch):
    """Without a stored G, RunResult.state["G"] costs an n x d array only on first access
    (a 10^6-node run would otherwise end with a fifth n d array), and once."""
    from fastgt.algorithms.base import Batch

    calls = []
    real = Batch.grads

    def counting(self, t, *args):
        calls.append(t)
        return real(self, t, *args)

    monkeypatch.setattr(Batch, "grads", counting)
    res = fastgt.run(algorithm="gt", topology=fastgt.topology("ring", n=10), noise="structured",
                     d=4, steps=9, record_every=3)
    assert calls == [0]  # the initial gradient only
    assert set(res.state) == {"X", "Y", "G"}
    g = res.state["G"]
    assert calls == [0, 9] and res.state["G"] is g
