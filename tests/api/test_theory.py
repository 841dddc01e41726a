"""fastgt.theory against (a) brute-force n x n covariance computations, (b) exact formulas,
(c) fastgt.run simulations (plateau means over seeds, tolerance from their standard error)."""

import json
import math
import re

import numpy as np
import pytest
import scipy.linalg as sla
from click.testing import CliRunner

import fastgt
from fastgt import theory
from fastgt.cli import main

#: tiny graphs for brute force: every weight construction, eigenvalue signs and multiplicities
TINY = [
    ("ring", {"n": 7}),
    ("ring", {"n": 8, "self_weight": 0.1}),  # lambda_n = -0.8 limits GT's stepsize
    ("torus", {"rows": 2, "cols": 3}),
    ("interp_ring", {"n": 6, "alpha": 0.7}),
    ("erdos_renyi", {"n": 7, "prob": 0.6, "seed": 1}),
    ("star", {"n": 6}),
    ("hypercube", {"n": 8, "lazy": True}),
    ("complete", {"n": 5}),
]
TINY_IDS = [f"{f}-{'-'.join(map(str, p.values()))}" for f, p in TINY]


def tiny(i):
    name, params = TINY[i]
    return fastgt.topology(name, **params)


# ----------------------------------------------------------------- brute-force references
def _gt_matrices(Wd, gamma, a):
    """Full GT state s = (x, y, e) (e = current noise) per coordinate: s' = M s + N e'.

    x' = W x - gamma W y;  y' = W y + a (x' - x) + e' - e.  The functional
    ell(s) = 1^T (y - a x - e) is invariant (ell^T M = ell^T, ell^T N = 0) and 0 since y0 = g0.
    """
    n = len(Wd)
    I, Z = np.eye(n), np.zeros((n, n))
    M = np.block([[Wd, -gamma * Wd, Z], [a * (Wd - I), (1 - a * gamma) * Wd, -I], [Z, Z, Z]])
    N = np.vstack([Z, I, I])
    ell = np.concatenate([-a * np.ones(n), np.ones(n), -np.ones(n)])
    U = sla.null_space(ell[None, :])  # orthonormal basis of the invariant subspace ell = 0
    assert np.allclose(ell @ M, ell) and np.allclose(ell @ N, 0)
    return M, N, U


def brute_stationary(Wd, algorithm, gamma, a, noise_covs):
    """Stationary metrics from the n x n (GT: 3n x 3n) Lyapunov equation, no eigen-split.

    noise_covs: list of (number of coordinates, n x n covariance of that coordinate's noise).
    """
    n = len(Wd)
    one = np.ones(n)
    C = np.eye(n) - np.outer(one, one) / n
    out = np.zeros(4)
    for count, S in noise_covs:
        if algorithm == "gt":
            M, N, U = _gt_matrices(Wd, gamma, a)
            P = U @ sla.solve_discrete_lyapunov(U.T @ M @ U, U.T @ N @ S @ N.T @ U) @ U.T
            Pxx, Pyy = P[:n, :n], P[n:2 * n, n:2 * n]
        else:  # x' = W (x - gamma (a x + e))
            Pxx = sla.solve_discrete_lyapunov((1 - a * gamma) * Wd, gamma**2 * Wd @ S @ Wd.T)
            Pyy = np.full((n, n), np.nan)
        out += count * np.array([a / 2 * one @ Pxx @ one / n**2, a / 2 * np.trace(Pxx) / n,
                                 np.trace(C @ Pxx) / n, np.trace(C @ Pyy) / n])
    return dict(zip(("loss_avg", "loss_nodes", "consensus", "tracking"), out))


def noise_covs(W, noise, sigma2, d):
    """Per-coordinate noise covariances, built from a fresh dense eigh of W."""
    n = W.n
    if noise == "gaussian":  # d coordinates with sigma2/d I: as one coordinate with sigma2 I
        return [(1, sigma2 * np.eye(n))]
    vec = np.linalg.eigh(W.to_dense())[1]
    v, u = vec[:, 0], vec[:, -2]  # lambda_n and lambda2 (lambda1 = 1 is last)
    dv = math.ceil(d / 2)
    return [(dv, sigma2 / d * n * np.outer(v, v)), (d - dv, sigma2 / d * n * np.outer(u, u))]


def brute_rate(Wd, algorithm, gamma, a):
    """Spectral radius of the noiseless iteration (GT: on the invariant subspace)."""
    if algorithm == "dsgd":
        return max(abs(np.linalg.eigvals((1 - a * gamma) * Wd)))
    n = len(Wd)
    M = _gt_matrices(Wd, gamma, a)[0]
    # noiseless: e = 0; drop the e block and restrict to ell = 1^T (y - a x) = 0
    M2 = M[:2 * n, :2 * n]
    U2 = sla.null_space(np.concatenate([-a * np.ones(n), np.ones(n)])[None, :])
    return max(abs(np.linalg.eigvals(U2.T @ M2 @ U2)))


# ------------------------------------------------------------------------- eigenvalues
@pytest.mark.parametrize("name,params", [
    ("ring", {"n": 50, "self_weight": 0.2}), ("ring", {"n": 9, "lazy": True}),
    ("interp_ring", {"n": 30, "alpha": 0.5}), ("torus", {"rows": 6, "cols": 7}),
    ("complete", {"n": 9}), ("exponential", {"n": 20}), ("hypercube", {"n": 32}),
    ("erdos_renyi", {"n": 25, "prob": 0.3, "seed": 2}),
])
def test_eigenvalues_match_dense(name, params):
    W = fastgt.topology(name, **params)
    ref = np.linalg.eigvalsh(W.to_dense())
    assert abs(ref[-1] - 1) < 1e-12
    np.testing.assert_allclose(theory.eigenvalues(W), ref[:-1], rtol=0, atol=1e-12)


def test_eigenvalues_limit_without_closed_form(monkeypatch):
    monkeypatch.setattr(theory, "DENSE_MAX", 10)
    W = fastgt.topology("erdos_renyi", n=12, prob=0.6, seed=0)
    with pytest.raises(fastgt.FastGTError, match="n <= 10"):
        theory.stationary(W, "gt", 0.01)
    # Setup B and rates need lambda2, lambda_n only: still available
    assert math.isfinite(theory.stationary(W, "gt", 0.01, noise="structured")["loss_nodes"])
    cols = theory.theory_columns(W, "gt", 0.01, 1.0, "quadratic", "gaussian", 10)
    assert math.isnan(cols["theory_loss_nodes"]) and cols["theory_rate"] < 1


# ------------------------------------------------------------ stationary vs brute force
@pytest.mark.parametrize("i", range(len(TINY)), ids=TINY_IDS)
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("frac", [0.05, 0.7])
def test_stationary_matches_bruteforce(i, algorithm, noise, frac):
    W = tiny(i)
    d, sigma2, a = 5, 1.7, 2.0
    gamma = frac * theory.max_stepsize(W, algorithm)
    got = theory.stationary(W, algorithm, gamma, sigma2, noise=noise, d=d)
    ref = brute_stationary(W.to_dense(), algorithm, gamma, a, noise_covs(W, noise, sigma2, d))
    for m, v in ref.items():
        if m == "tracking" and algorithm == "dsgd":
            assert math.isnan(got[m])
        else:
            assert got[m] == pytest.approx(v, rel=1e-10, abs=1e-13), m


@pytest.mark.parametrize("i", [0, 1, 4], ids=[TINY_IDS[k] for k in (0, 1, 4)])
def test_consensus_gt_matches_bruteforce_with_unit_curvature(i):
    W = tiny(i)
    gamma = 0.5 * theory.max_stepsize(W, "gt", "consensus")
    got = theory.stationary(W, "gt", gamma, 0.8, problem="consensus", d=4)
    ref = brute_stationary(W.to_dense(), "gt", gamma, 1.0, noise_covs(W, "gaussian", 0.8, 4))
    for m, v in ref.items():
        assert got[m] == pytest.approx(v, rel=1e-10, abs=1e-13), m


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("name,params", [
    ("ring", {"n": 300}), ("ring", {"n": 100000, "self_weight": 0.2}),
    ("torus", {"rows": 300, "cols": 300}), ("hypercube", {"n": 1024}),
    ("erdos_renyi", {"n": 60, "prob": 0.1, "seed": 4}),
])
def test_loss_avg_is_minibatch_sgd(algorithm, name, params):
    """Setup A: xbar is SGD with averaged noise, E f(xbar) = gamma sigma2 / (4 n (1 - gamma))."""
    W = fastgt.topology(name, **params)
    for gamma in (0.001, 0.03):
        got = theory.stationary(W, algorithm, gamma, 2.5)
        assert got["loss_avg"] == pytest.approx(gamma * 2.5 / (4 * W.n * (1 - gamma)), rel=1e-12)


def test_complete_graph_exact():
    """W = 11^T/n kills every non-mean mode: consensus 0; GT's y_m = e_m(t) - e_m(t-1)."""
    n, gamma, sigma2 = 40, 0.1, 3.0
    W = fastgt.topology("complete", n=n)
    st = theory.stationary(W, "gt", gamma, sigma2)
    assert st["consensus"] < 1e-30  # FFT eigenvalues are 0 up to ~1e-17
    assert st["tracking"] == pytest.approx(2 * sigma2 * (n - 1) / n, rel=1e-14)
    assert st["loss_nodes"] == pytest.approx(gamma * sigma2 / (4 * n * (1 - gamma)), rel=1e-14)
    assert theory.stationary(W, "gt", gamma, sigma2, noise="structured")["loss_nodes"] < 1e-30


def test_structured_and_noiseless():
    W = fastgt.topology("ring", n=50, self_weight=0.2)
    st = theory.stationary(W, "gt", 0.02, noise="structured", d=7)
    assert st["loss_avg"] == 0.0 and st["loss_nodes"] == pytest.approx(st["consensus"], rel=1e-15)
    none = theory.stationary(W, "dsgd", 0.02, noise="none")
    assert none["loss_nodes"] == 0.0 and math.isnan(none["tracking"])
    top = theory.max_stepsize(W, "gt")
    with pytest.warns(fastgt.FastGTWarning, match=f"largest stable stepsize is {top:.6g}"):
        bad = theory.stationary(W, "gt", 1.01 * top)
    assert bad["loss_nodes"] == math.inf


# --------------------------------------------------------------------- rate, stepsize
@pytest.mark.parametrize("i", range(len(TINY)), ids=TINY_IDS)
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("problem,a", [("quadratic", 2.0), ("consensus", 1.0)])
def test_rate_matches_bruteforce(i, algorithm, problem, a):
    W = tiny(i)
    Wd = W.to_dense()
    for gamma in (0.01, 0.2, 0.9, 1.7):  # includes unstable stepsizes: rate > 1 there
        got = theory.rate(W, algorithm, gamma, problem)
        # eigenvalues of non-normal matrices (Jordan blocks at lambda = 0) carry ~1e-8 errors
        assert got == pytest.approx(brute_rate(Wd, algorithm, gamma, a), abs=1e-7)


@pytest.mark.parametrize("i", range(len(TINY)), ids=TINY_IDS)
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_max_stepsize_is_the_stability_edge(i, algorithm):
    W = tiny(i)
    Wd = W.to_dense()
    g = theory.max_stepsize(W, algorithm)
    assert brute_rate(Wd, algorithm, g * (1 - 1e-5), 2.0) < 1
    assert brute_rate(Wd, algorithm, g * (1 + 1e-5), 2.0) > 1


def test_max_stepsize_closed_form_cases():
    # GT on a ring with self-weight 0.05: c / |lambda_n| = (1 - 0.81) / 0.9 < 2, so it binds
    W = fastgt.topology("ring", n=8, self_weight=0.05)
    assert theory.max_stepsize(W, "gt") == pytest.approx(0.19 / 0.9 / 2, rel=1e-12)
    assert theory.max_stepsize(W, "dsgd") == 1.0
    assert theory.max_stepsize(W, "gt", "consensus") == pytest.approx(0.19 / 0.9, rel=1e-12)


def test_rate_extremes_suffice():
    """rate() uses lambda2 and lambda_n only: the per-mode radius is monotone in |lambda| on
    each side of 0 (for a gamma < 4). Check on a dense eigenvalue grid."""
    lam = np.linspace(-0.999, 0.999, 2001)
    for g in np.linspace(0.01, 3.99, 60):
        r = theory.mode_radius(lam, "gt", g, 1.0)
        assert np.all(np.diff(r[lam <= 0]) <= 1e-12) and np.all(np.diff(r[lam >= 0]) >= -1e-12)


def test_rate_noiseless_simulation():
    """Noiseless GT on the consensus problem: ||X - x*||^2 decays as rate^(2t) (the mean and
    lambda2 modes dominate here, real roots: no oscillation)."""
    W = fastgt.topology("ring", n=10)
    gamma = 0.3
    res = fastgt.run("gt", W, problem=fastgt.problem("consensus", zeta=1.0), noise="none",
                     d=3, stepsize=gamma, steps=600, record_every=300, seed=1)
    # loss ~ 6e-20 at step 600, far above the rounding floor (~1e-33); every other root has
    # modulus <= 0.75 (vs 0.966), so their share is negligible after 300 steps
    loss = res.trace.set_index("step")["loss_nodes"]
    est = (loss[600] / loss[300]) ** (1 / 600)
    assert est == pytest.approx(theory.rate(W, "gt", gamma, "consensus"), rel=1e-8)


# ------------------------------------------------------------------------------ errors, API
def test_errors():
    W = fastgt.topology("ring", n=10)
    with pytest.raises(fastgt.FastGTError, match="problem"):
        theory.stationary(W, "gt", 0.1, problem="hetero_quadratic")
    with pytest.raises(fastgt.FastGTError, match="biased"):
        theory.stationary(W, "dsgd", 0.1, problem="consensus")
    with pytest.raises(fastgt.FastGTError, match="algorithm"):
        theory.rate(W, "adam", 0.1)
    with pytest.raises(fastgt.FastGTError, match="stepsize"):
        theory.stationary(W, "gt", -1.0)
    with pytest.raises(fastgt.FastGTError, match="noise"):
        theory.stationary(W, "gt", 0.1, noise="laplace")
    with pytest.raises(fastgt.FastGTError, match=re.escape(
            "W='ring' is invalid: allowed a MixingMatrix, e.g. fastgt.topology('ring', n=30)")):
        theory.stationary("ring", "gt", 0.1)
    with pytest.raises(fastgt.FastGTError, match="record_every=0 is invalid"):
        theory.stationary(W, "gt", 0.1, local_steps=2, record_every=0)


def test_topology_y_is_taken_and_checked_as_run_takes_it():
    """A topology table or a MixingMatrix, as fastgt.run takes it; the engine's one-line
    errors for another n, a time-varying matrix, an algorithm without a tracker."""
    W = fastgt.topology("ring", n=10)
    table = {"topology": "ring", "n": 10, "self_weight": 0.5}
    built = fastgt.topology("ring", n=10, self_weight=0.5)
    assert theory.stationary(W, "gt", 0.05, topology_y=table) == theory.stationary(
        W, "gt", 0.05, topology_y=built)
    assert theory.rate(W, "gt", 0.05, topology_y=table) == theory.rate(W, "gt", 0.05,
                                                                        topology_y=built)
    for fn in (theory.stationary, theory.rate):
        with pytest.raises(fastgt.FastGTError, match="topology_y has n=8, the topology n=10"):
            fn(W, "gt", 0.05, topology_y=fastgt.topology("ring", n=8))
        with pytest.raises(fastgt.FastGTError, match="allowed a static topology"):
            fn(W, "gt", 0.05, topology_y=fastgt.topology("random_matching", n=10))
        with pytest.raises(fastgt.FastGTError, match="only with the algorithms that track"):
            fn(W, "dsgd", 0.05, topology_y=table)
    with pytest.raises(fastgt.FastGTError, match="topology_y has n=8"):
        theory.max_stepsize(W, "gt", topology_y=fastgt.topology("ring", n=8))


def test_theory_columns():
    W = fastgt.topology("ring", n=20)
    assert theory.theory_columns(W, "gt", 0.05, 1.0, "hetero_quadratic", "gaussian", 10) == {}
    cols = theory.theory_columns(W, "gt", 0.05, 1.0, "quadratic", "structured", 10)
    st = theory.stationary(W, "gt", 0.05, 1.0, noise="structured", d=10)
    assert cols == {**{f"theory_{k}": v for k, v in st.items()},
                    "theory_rate": theory.rate(W, "gt", 0.05)}
    dsgd = theory.theory_columns(W, "dsgd", 0.05, 1.0, "consensus", "gaussian", 10)
    assert dsgd["theory_rate"] == pytest.approx(0.95) and math.isnan(dsgd["theory_loss_nodes"])


def test_cli_json_and_error():
    runner = CliRunner()
    res = runner.invoke(main, ["theory", "--topology", "ring", "--n", "30", "--self-weight",
                               "0.2", "--stepsize", "0.05", "--noise", "structured", "--d",
                               "9", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    W = fastgt.topology("ring", n=30, self_weight=0.2)
    st = theory.stationary(W, "gt", 0.05, noise="structured", d=9)
    assert {k: out[k] for k in st} == st
    assert out["max_stepsize"] == theory.max_stepsize(W, "gt") and out["c"] == W.spectrum().c
    assert out["time_constant"] == pytest.approx(1 / (1 - theory.rate(W, "gt", 0.05)),
                                                 rel=1e-12)
    text = runner.invoke(main, ["theory", "--topology", "ring", "--n", "30", "--stepsize",
                                "0.05"]).output
    tau = float(dict(r.split(None, 1) for r in text.splitlines())["time_constant"])
    assert (f"can measure these floors only from about {10 * tau:.3g} steps on (10 time "
            "constants; docs/paper.md)") in text
    assert "note:" not in runner.invoke(main, ["theory", "--n", "30", "--stepsize", "0.05",
                                               "--noise", "none"]).output  # floors of 0
    res = runner.invoke(main, ["theory", "--n", "30", "--stepsize", "-1"])
    assert res.exit_code == 2 and "stepsize" in res.output


# --------------------------------------------------------------------- vs simulation
def simulated_plateaus(W, algorithm, problem, noise, gamma, d, steps, seeds, **relax):
    """Per-seed plateaus (mean of the second half of the records) -> (mean, standard error).
    relax: local_steps, topology_y."""
    rows = []
    for seed in seeds:
        res = fastgt.run(algorithm, W, problem=problem, noise=noise, sigma2=1.0, d=d,
                         stepsize=gamma, steps=steps, record_every=RECORD, seed=seed, **relax)
        assert res.summary["status"] == "ok"
        rows.append([res.summary[m] for m in theory.STATIONARY_METRICS])
    rows = np.array(rows)
    return rows.mean(axis=0), rows.std(axis=0, ddof=1) / math.sqrt(len(seeds))


RECORD = 20


def check_against_simulation(W, algorithm, problem, noise, gamma, d, steps, n_seeds, **relax):
    """Seeds are independent, so (mean - theory) / SE follows a Student t with n_seeds - 1
    degrees of freedom; |t_15| > 5 has probability 1.6e-4 per metric. The start-up excess
    (at most the initial loss, ~ d for x0 ~ N(0, 1)) decays like rate^(2t); averaged over the
    second half of the run it is below d rate^steps < 1e-9 d: negligible against the SE."""
    assert theory.rate(W, algorithm, gamma, problem, **relax) ** steps < 1e-9
    mean, se = simulated_plateaus(W, algorithm, problem, noise, gamma, d, steps,
                                  range(n_seeds), **relax)
    exact = theory.stationary(W, algorithm, gamma, 1.0, getattr(problem, "name", problem),
                              noise, d, record_every=RECORD, **relax)
    for k, m in enumerate(theory.STATIONARY_METRICS):
        if m == "tracking" and algorithm not in theory.WITH_Y:
            assert math.isnan(exact[m]) and math.isnan(mean[k]), m
            continue
        if exact[m] == 0.0:  # Setup B's loss_avg: the mean mode gets no noise at all
            assert mean[k] < 1e-20, m
            continue
        assert se[k] < 0.1 * exact[m], m  # the check has power: SE is small
        assert abs(mean[k] - exact[m]) < 5 * se[k], (m, mean[k], exact[m], se[k])


@pytest.mark.parametrize("algorithm,noise,problem", [
    ("gt", "gaussian", "quadratic"), ("dsgd", "gaussian", "quadratic"),
    ("gt", "structured", "quadratic"), ("dsgd", "structured", "quadratic"),
    ("gt", "gaussian", fastgt.problem("consensus", zeta=1.0)),
])
def test_simulation_plateau_matches_theory(algorithm, noise, problem):
    W = fastgt.topology("ring", n=20)
    check_against_simulation(W, algorithm, problem, noise, 0.05, 16, 4000, 16)


SLOW_TOPOLOGIES = [
    ("ring", {"n": 40}), ("ring", {"n": 40, "self_weight": 0.1}), ("torus", {"rows": 5, "cols": 8}),
    ("interp_ring", {"n": 40, "alpha": 0.7}), ("erdos_renyi", {"n": 40, "prob": 0.15, "seed": 2}),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,params", SLOW_TOPOLOGIES)
def test_simulation_plateau_matches_theory_many_topologies(name, params):
    W = fastgt.topology(name, **params)
    for algorithm in ("gt", "dsgd"):
        for noise in ("gaussian", "structured"):
            gamma = 0.04
            steps = max(4000, math.ceil(math.log(1e-9) / math.log(theory.rate(W, algorithm, gamma))))
            check_against_simulation(W, algorithm, "quadratic", noise, gamma, 15, steps, 16)


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_mode_systems_reproduce_the_closed_forms(algorithm):
    """The per-mode Lyapunov path (used for D², EXTRA, ATC-GT), run on GT's and D-SGD's own
    mode systems, gives their closed-form variances and radii."""
    lam = np.linspace(-0.95, 0.99, 97)
    for a, gamma in ((2.0, 0.05), (1.0, 0.3)):
        vx, vy = theory.mode_variances(lam, algorithm, gamma, a)
        A, b = theory.mode_system(lam, algorithm, gamma, a)
        P = theory.lyapunov(A, b)
        stable = theory.mode_radius(lam, algorithm, gamma, a) < 1
        # (near lam = 0 x's variance is ~1e-10: the solve's error there is absolute, ~1e-16)
        np.testing.assert_allclose(P[stable, 0, 0], vx[stable], rtol=1e-9,
                                   atol=1e-13 * vx[stable].max())
        if vy is not None:
            np.testing.assert_allclose(P[stable, 1, 1], vy[stable], rtol=1e-9)
        np.testing.assert_allclose(np.abs(np.linalg.eigvals(A)).max(axis=1),
                                   theory.mode_radius(lam, algorithm, gamma, a), atol=1e-12)


def test_extra_and_d2_stability_limits():
    """EXTRA's mode x'' - (1 + lam - g) x' + ((1 + lam)/2 - g) x = 0 is stable (Jury) iff
    g < (5 + 3 lam) / 4 (the other conditions hold for g <= 2): on a graph, lambda_n binds.
    D² on a torus 5 x 10 (lambda_n = -0.52 < -1/3) has no stable small stepsize."""
    for name, kw in (("interp_ring", {"n": 50, "alpha": 0.5}), ("torus", {"rows": 5, "cols": 10})):
        W = fastgt.topology(name, **kw)
        lam_n = W.spectrum().lambda_n
        assert theory.max_stepsize(W, "extra") == pytest.approx((5 + 3 * lam_n) / 8, rel=1e-9)
    W = fastgt.topology("torus", rows=5, cols=10)
    assert theory.max_stepsize(W, "d2") == 0.0 and theory.rate(W, "d2", 0.01) > 1
    with pytest.warns(fastgt.FastGTWarning, match="unstable for d2"):
        assert math.isinf(theory.stationary(W, "d2", 0.01)["consensus"])
    assert theory.max_stepsize(fastgt.topology("torus", rows=5, cols=10, lazy=True), "d2") == 1.0


def test_an_algorithm_without_theory_says_where_its_theory_goes(monkeypatch):
    """(A new algorithm, registered by its module, before its mode system: the message said
    only that the name was invalid.)"""
    monkeypatch.setattr(theory, "ALGORITHMS", ("gt",))
    with pytest.raises(fastgt.FastGTError, match=r"^algorithm='dsgd' has no exact theory "
                                                 r"\(its per-mode system: fastgt/modes.py"):
        theory.rate(fastgt.topology("ring", n=8), "dsgd", 0.1)
    with pytest.raises(fastgt.FastGTError, match="algorithm='nope' is invalid"):
        theory.rate(fastgt.topology("ring", n=8), "nope", 0.1)
