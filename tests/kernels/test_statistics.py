"""Stochastic plateaus against exact stationary theory, within derived statistical error.

Setup A (f_i = ||x||^2, grad 2x, i.i.d. N(0, sigma2/d) noise). For both algorithms the mean
mode is exactly SGD with averaged noise (W doubly stochastic; for GT ybar = gbar):
    xbar_k(t+1) = (1 - 2 gamma) xbar_k(t) - gamma eps_k(t),  eps_k ~ N(0, sigma2/(n d)),
d independent AR(1) coordinates with phi = 1 - 2 gamma and stationary variance
    v = gamma^2 sigma2 / (n d (1 - phi^2)) = gamma sigma2 / (4 n d (1 - gamma)),
so E loss_avg = E ||xbar||^2 = d v = gamma sigma2 / (4 n (1 - gamma)), whatever the topology.

Other eigen-modes of W (eigenvalue lam, unit eigenvector w, coefficient c = w^T X[:, k]) get
noise w^T e ~ N(0, sigma2/d) and evolve linearly (``_mode_system``); loss_nodes
= (1/n) sum_i ||x_i||^2 = (1/n) sum over modes and coordinates of c^2.

Standard error of a time average: for a stationary Gaussian mode, Cov(x_s^2, x_t^2)
= 2 Cov(x_s, x_t)^2, and modes are independent, so the average of m records taken every
r steps of sum_modes w x_mode^2 has variance
    sum_modes w^2 (2 / m^2) [m C_0^2 + 2 sum_{h>=1} (m - h) C_h^2],  C_h = Cov(x_t, x_{t+hr}).
For the AR(1) mean mode C_h = v phi^(r h). Records before a burn-in t_b, after which every
transient factor rho^(2 t_b) < 1e-10, are discarded (the bias left is < 1e-10 times the
initial loss, negligible against the ~1% standard errors). The averages are over hundreds of
effective samples, so they are close to normal and we accept |mean - theory| < 4.5 SE
(two-sided false-alarm probability 7e-6 per check). Calibration, 100-200 seeds per setting
(not part of the suite): the z-scores had mean 0 within error and standard deviation 0.9-1.1.
"""

import warnings

import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov

import fastgt

pytestmark = pytest.mark.usefixtures("one_numba_thread")

N, D, SIGMA2 = 50, 20, 1.0
TOPOLOGIES_50 = {
    "ring": {"n": N},
    "interp_ring": {"n": N, "alpha": 0.5},
    "torus": {"rows": 5, "cols": 10},
    "complete": {"n": N},
    "star": {"n": N},
    "erdos_renyi": {"n": N, "prob": 0.1, "seed": 0},
    "geometric": {"n": N, "radius": 0.3, "seed": 0},
}
#: graphs whose slowest GT mode mixes fast enough for a short stationary run (D-SGD's modes
#: all decay at least as fast as its mean mode, on every graph)
FAST_MIXING = ["interp_ring", "torus", "complete", "erdos_renyi"]
Z_MAX = 4.5


def _var_of_mean_of_squares(acov, m):
    """Variance of the average of m records of x^2, x stationary Gaussian with
    acov[h] = Cov(x_t, x_{t + h r}) (acov may be truncated once negligible)."""
    h = np.arange(1, min(len(acov), m))
    return 2.0 / m**2 * (m * acov[0] ** 2 + 2.0 * np.sum((m - h) * acov[h] ** 2))


def _ar1_loss_avg_theory(gamma, r, m):
    """(E loss_avg, SE of its m-record average), Setup A, records every r steps."""
    phi = 1.0 - 2.0 * gamma
    v = gamma * SIGMA2 / (4.0 * N * D * (1.0 - gamma))
    acov = v * phi ** (r * np.arange(m))
    return D * v, np.sqrt(D * _var_of_mean_of_squares(acov, m))


def _mode_system(algorithm, lam, gamma):
    """s(t+1) = A s(t) + b e(t+1) for one eigen-mode of W with gradient 2x + e (e the noise).

    D-SGD, s = (x, e):    x' = lam (x - gamma (2x + e)).
    GT,    s = (x, y, e): x' = lam (x - gamma y),
                          y' = lam y + (2x' + e') - (2x + e)
                             = (2 lam - 2) x + lam (1 - 2 gamma) y - e + e'.
    The mean mode (lam = 1) of GT is the D-SGD one: y = 2x + e holds there (ybar = gbar)."""
    if algorithm == "dsgd" or np.isclose(lam, 1.0):
        return np.array([[lam * (1 - 2 * gamma), -gamma * lam], [0, 0]]), np.array([0.0, 1.0])
    if algorithm != "gt":  # D², EXTRA, ATC-GT: fastgt.theory's systems, from their updates
        A, b = fastgt.theory.mode_system(lam, algorithm, gamma, 2.0)
        return A[0], b[0]
    A = np.array([[lam, -gamma * lam, 0], [2 * lam - 2, lam * (1 - 2 * gamma), -1], [0, 0, 0]])
    return A, np.array([0.0, 1.0, 1.0])


def _mode_acov(algorithm, lam, gamma, s2, r, m):
    """C_h = Cov(x_t, x_{t+hr}) = (A^(hr) P)[0, 0], P the stationary covariance
    (P = A P A^T + s2 b b^T); truncated once A^(hr) P is negligible."""
    A, b = _mode_system(algorithm, lam, gamma)
    P = solve_discrete_lyapunov(A, s2 * np.outer(b, b))
    Ar = np.linalg.matrix_power(A, r)
    out, M = [], P
    while len(out) < m and np.abs(M).max() > 1e-14 * np.abs(P).max():
        out.append(M[0, 0])
        M = Ar @ M
    return np.array(out or [0.0])


def _loss_nodes_theory(algorithm, modes, gamma, r, m):
    """modes: list of (lam, multiplicity, noise variance); loss_nodes = (1/n) sum c^2."""
    mean = var = 0.0
    for lam, mult, s2 in modes:
        acov = _mode_acov(algorithm, lam, gamma, s2, r, m)
        mean += mult * acov[0] / N
        var += mult * _var_of_mean_of_squares(acov, m) / N**2
    return mean, np.sqrt(var)


def _slowest_rate(algorithm, lams, gamma):
    """Largest spectral radius over the modes (transients of loss_nodes decay like its square)."""
    return max(np.max(np.abs(np.linalg.eigvals(_mode_system(algorithm, lam, gamma)[0])))
               for lam in lams)


def _stationary_records(res, burn):
    tr = res.trace
    return tr[tr["step"] >= burn]


def _assert_within(mean, theory, se, what):
    z = (mean - theory) / se
    assert abs(z) < Z_MAX, f"{what}: mean {mean:.6g}, theory {theory:.6g}, z = {z:.2f}"


def _check_setup_a(algorithm, name, gamma, steps, r, seed, loss_nodes, dtype="float64"):
    W = fastgt.topology(name, **TOPOLOGIES_50[name])
    res = fastgt.run(algorithm=algorithm, topology=W, problem="quadratic", noise="gaussian",
                     sigma2=SIGMA2, d=D, stepsize=gamma, steps=steps, record_every=r, seed=seed,
                     dtype=dtype)
    burn = np.log(1e-10) / (2 * np.log(1 - 2 * gamma))
    rec = _stationary_records(res, burn)
    theory, se = _ar1_loss_avg_theory(gamma, r, len(rec))
    assert np.isclose(theory, gamma * SIGMA2 / (4 * N * (1 - gamma)))
    _assert_within(rec["loss_avg"].mean(), theory, se, f"loss_avg {algorithm} {name}")
    if loss_nodes:
        lams = np.linalg.eigvalsh(W.to_dense())
        burn = np.log(1e-10) / (2 * np.log(_slowest_rate(algorithm, lams, gamma)))
        rec = _stationary_records(res, burn)
        assert len(rec) > 0.5 * len(res.trace)  # the run is long enough for this graph
        lam, mult = np.unique(np.round(lams, 12), return_counts=True)
        modes = [(x, D * k, SIGMA2 / D) for x, k in zip(lam, mult)]
        theory, se = _loss_nodes_theory(algorithm, modes, gamma, r, len(rec))
        _assert_within(rec["loss_nodes"].mean(), theory, se, f"loss_nodes {algorithm} {name}")
    return res


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_setup_a_loss_avg_plateau_every_topology(algorithm):
    """E loss_avg = gamma sigma2 / (4 n (1 - gamma)) on every graph; and since the noise of a
    seed is the same on every graph, the loss_avg traces agree across graphs up to rounding."""
    traces = [_check_setup_a(algorithm, name, 0.05, 3000, 2, 1,
                             algorithm == "dsgd" or name in FAST_MIXING)
              .trace["loss_avg"].to_numpy() for name in TOPOLOGIES_50]
    for tr in traces[1:]:
        np.testing.assert_allclose(tr, traces[0], rtol=1e-9)


def test_setup_a_zero_start():
    """x0 = 0: the same plateau (burn-in discarded), GT on a fast-mixing graph."""
    W = fastgt.topology("torus", rows=5, cols=10)
    gamma, r = 0.1, 3
    res = fastgt.run(algorithm="gt", topology=W, d=D, sigma2=SIGMA2, stepsize=gamma, steps=6000,
                     record_every=r, seed=8, x0=np.zeros((N, D)))
    assert res.trace["loss_avg"].iloc[0] == 0.0
    rec = _stationary_records(res, np.log(1e-10) / (2 * np.log(1 - 2 * gamma)))
    theory, se = _ar1_loss_avg_theory(gamma, r, len(rec))
    _assert_within(rec["loss_avg"].mean(), theory, se, "loss_avg from x0 = 0")


@pytest.mark.parametrize("algorithm", ["gt", "dsgd", "extra", "gt_atc"])
@pytest.mark.parametrize("name", ["torus", "erdos_renyi"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_setup_b_mean_noise_free(algorithm, name, dtype):
    """Structured noise is orthogonal to 1, so ebar = 0 and xbar(t) = (1 - 2 gamma)^t xbar(0):
    loss_avg falls to the rounding floor, while loss_nodes settles at the exact stationary
    value of the two noise-driven modes: coordinates k < ceil(d/2) drive the lambda_n mode,
    the others the lambda_2 mode, each with noise coefficient sqrt(n) xi_k. A float32 state
    reaches the same loss_nodes plateau; its loss_avg floor is float32's, and said to be."""
    W = fastgt.topology(name, **TOPOLOGIES_50[name])
    gamma, r, steps = 0.1, 2, 5000
    with warnings.catch_warnings(record=True) as seen:  # float32: the floor, below
        warnings.simplefilter("always", fastgt.FastGTWarning)
        res = fastgt.run(algorithm=algorithm, topology=W, problem="quadratic",
                         noise="structured", sigma2=SIGMA2, d=D, stepsize=gamma, steps=steps,
                         record_every=r, seed=5, dtype=dtype)
    tr = res.trace
    assert tr["loss_avg"].iloc[0] > 0.01  # default x0: ||xbar(0)||^2 ~ chi2_d / n, mean 0.4
    if dtype == "float64":
        assert tr["loss_avg"].iloc[-1] < 1e-25  # (1 - 2 gamma)^(2 * 5000) underflows; rounding floor ~1e-31
    else:  # float32's floor, ~1e-15 here: rounding, flagged as such (EXTRA's, which piles
        # up in its mean's velocity, by the warning every float32 run of it gives)
        assert tr["loss_avg"].iloc[-1] < 1e-10
        said = " ".join(str(w.message) for w in seen)
        assert "loss_avg" in res.summary["rounding_limited"] or (
            fastgt.algorithm(algorithm).drifts and "second-order recursion" in said)
    lams = np.linalg.eigvalsh(W.to_dense())
    burn = np.log(1e-10) / (2 * np.log(_slowest_rate(algorithm, lams, gamma)))
    rec = _stationary_records(res, burn)
    dv = (D + 1) // 2
    sp = W.spectrum()
    modes = [(sp.lambda_n, dv, N * SIGMA2 / D), (sp.lambda2, D - dv, N * SIGMA2 / D)]
    theory, se = _loss_nodes_theory(algorithm, modes, gamma, r, len(rec))
    assert theory > 1e-3
    _assert_within(rec["loss_nodes"].mean(), theory, se, f"Setup B loss_nodes {algorithm} {name}")


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [0.02, 0.1, 0.25])
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("name", list(TOPOLOGIES_50))
def test_setup_a_long_runs(name, algorithm, gamma):
    """Longer runs, an independent seed per cell; loss_nodes too, except for GT on the ring
    (its slowest mode needs > 2e4 steps to forget x0, at every gamma here)."""
    seed = 100 + list(TOPOLOGIES_50).index(name)
    _check_setup_a(algorithm, name, gamma, 50000, 5, seed, algorithm == "dsgd" or name != "ring")


@pytest.mark.parametrize("algorithm", fastgt.theory.ALGORITHMS)
def test_float32_setup_a_plateaus(algorithm):
    """A float32 state (float32 arithmetic): the same statistical
    check of loss_avg and loss_nodes against the exact theory, which knows no rounding; its
    relative errors, ~1e-7 per step, are far below the plateaus' ~1% standard errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastgt.FastGTWarning)  # D², EXTRA: the drift note
        res = _check_setup_a(algorithm, "interp_ring", 0.05, 4000, 2, 23,
                             algorithm != "centralized", dtype="float32")
    assert res.state["X"].dtype == np.float32


@pytest.mark.parametrize("algorithm", ["d2", "extra", "gt_atc", "centralized"])
@pytest.mark.parametrize("name", ["interp_ring", "erdos_renyi"])
def test_setup_a_plateaus_of_the_other_algorithms(algorithm, name):
    """D², EXTRA, ATC-GT and the centralized baseline: loss_avg is SGD's on every graph,
    loss_nodes the sum of their modes' stationary variances (their mode systems: fastgt.
    theory.mode_system), within the statistical error; fastgt.theory.stationary says the
    same numbers. Centralized: every node holds xbar (consensus at rounding level)."""
    gamma = 0.05
    res = _check_setup_a(algorithm, name, gamma, 4000, 2, 11, algorithm != "centralized")
    W = fastgt.topology(name, **TOPOLOGIES_50[name])
    st = fastgt.theory.stationary(W, algorithm, gamma, SIGMA2, d=D)
    assert np.isclose(st["loss_avg"], gamma * SIGMA2 / (4 * N * (1 - gamma)), rtol=1e-12)
    if algorithm == "centralized":
        assert st["consensus"] == 0.0 and res.trace["consensus"].iloc[1:].max() < 1e-25
        return
    lams = np.linalg.eigvalsh(W.to_dense())
    lam, mult = np.unique(np.round(lams, 12), return_counts=True)
    modes = [(x, D * k, SIGMA2 / D) for x, k in zip(lam, mult)]
    mean, _ = _loss_nodes_theory(algorithm, modes, gamma, 2, 10)
    assert np.isclose(st["loss_nodes"], mean, rtol=1e-9)

