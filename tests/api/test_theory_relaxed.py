"""The exact theory of the paper's relaxations (fastgt.modes): local steps and separate
mixing for y (topology_y), and of D², EXTRA and ATC-GT, against (a) brute-force
covariances of the full n-node system, written here from the update equations without the
mode split, and (b) simulations (plateau means over seeds, tolerance from their standard
error)."""

import itertools
import math
import re

import numpy as np
import pytest
import scipy.linalg as sla
from test_theory import check_against_simulation, noise_covs

import fastgt
from fastgt import theory


def _full_maps(Wd, Wy, algorithm, gamma, a):
    """(M, N, ell) of one step of the full per-coordinate system s = (x, y, e) (GT) or
    s = (x, e) (D-SGD): s' = M s + N e'. ell: the invariant functional of GT (1^T (y - a x -
    e) = 0, since y(0) = g(0)), None for D-SGD."""
    n = len(Wd)
    I, Z = np.eye(n), np.zeros((n, n))
    if algorithm == "gt":
        M = np.block([[Wd, -gamma * Wd, Z], [a * (Wd - I), Wy - a * gamma * Wd, -I], [Z, Z, Z]])
        return M, np.vstack([Z, I, I]), np.concatenate([-a * np.ones(n), np.ones(n),
                                                         -np.ones(n)])
    # D-SGD: x' = W (x - gamma (a x + e)), e the noise of the current x's gradient
    M = np.block([[(1 - a * gamma) * Wd, -gamma * Wd], [Z, Z]])
    return M, np.vstack([Z, I]), None


def _second_order_maps(Wd, algorithm, gamma, a):
    """(M, N, ell) of the other algorithms' full systems, from their update equations
    (tests/reference.py's twins) with g = a x + e, e the noise of the current x's gradient:

    d2, s = (x, z, e): x' = W z, z' = 2 x' - x - gamma (g' - g); ell = 1^T (z - (1 - a
        gamma) x + gamma e) (z(0) = x(0) - gamma g(0));
    extra, s = (x, h, e): x' = (I + W) x - h - gamma g, h' = (I + W) / 2 x - gamma g;
        ell = 1^T (x - h) (0 from the first step, x(1) = W x(0) - gamma g(0), on);
    gt_atc, s = (x, y, e): x' = W (x - gamma y), y' = W (y + g' - g); ell = 1^T (y - a x -
        e) (y(0) = g(0))."""
    n = len(Wd)
    I, Z = np.eye(n), np.zeros((n, n))
    one, zero = np.ones(n), np.zeros(n)
    if algorithm == "d2":
        M = np.block([[Z, Wd, Z], [-(1 - a * gamma) * I, (2 - a * gamma) * Wd, gamma * I],
                      [Z, Z, Z]])
        return M, np.vstack([Z, -gamma * I, I]), np.concatenate([-(1 - a * gamma) * one, one,
                                                                  gamma * one])
    if algorithm == "extra":
        M = np.block([[(1 - a * gamma) * I + Wd, -I, -gamma * I],
                      [(I + Wd) / 2 - a * gamma * I, Z, -gamma * I], [Z, Z, Z]])
        return M, np.vstack([Z, Z, I]), np.concatenate([one, -one, zero])
    W2 = Wd @ Wd
    M = np.block([[Wd, -gamma * Wd, Z], [a * (W2 - Wd), Wd - a * gamma * W2, -Wd], [Z, Z, Z]])
    return M, np.vstack([Z, Wd, I]), np.concatenate([-a * one, one, -one])


def brute_periodic(W, algorithm, gamma, a, covs, local=1, Wy=None, phases=None):
    """Stationary consensus and tracking of the full system over a period (local - 1 steps
    with W = I, then one with W), averaged over ``phases`` (default all): the periodic
    Lyapunov equation on the period's product, restricted to GT's invariant subspace."""
    n = W.n
    Wd = W.to_dense()
    Wyd = Wd if Wy is None else Wy.to_dense()
    maps = [_full_maps(np.eye(n), np.eye(n), algorithm, gamma, a)] * (local - 1) + [
        _full_maps(Wd, Wyd, algorithm, gamma, a)]
    ell = maps[0][2]
    U = np.eye(len(maps[0][0])) if ell is None else sla.null_space(ell[None, :])
    C = np.eye(n) - 1.0 / n
    out = np.zeros(2)
    for count, S in covs:
        Phi, Q = np.eye(len(U)), np.zeros((len(U), len(U)))
        for M, N, _ in maps:
            Phi = M @ Phi
            Q = M @ Q @ M.T + N @ S @ N.T
        P = [U @ sla.solve_discrete_lyapunov(U.T @ Phi @ U, U.T @ Q @ U) @ U.T]
        for M, N, _ in maps[:-1]:
            P.append(M @ P[-1] @ M.T + N @ S @ N.T)
        for j in phases if phases is not None else range(local):
            cons = np.trace(C @ P[j][:n, :n]) / n
            track = np.trace(C @ P[j][n:2 * n, n:2 * n]) / n if algorithm == "gt" else math.nan
            out += count * np.array([cons, track]) / len(phases or range(local))
    return out


CASES = [("ring", {"n": 7}), ("ring", {"n": 8, "self_weight": 0.1}),
         ("erdos_renyi", {"n": 7, "prob": 0.6, "seed": 1}), ("star", {"n": 6})]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("algorithm", ["d2", "extra", "gt_atc"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
def test_second_order_stationary_matches_bruteforce(case, algorithm, noise):
    """D², EXTRA and ATC-GT's stationary metrics (fastgt.theory's per-mode systems) against
    the Lyapunov equation of the full n-node system written from their update equations
    (_second_order_maps), restricted to its invariant subspace."""
    name, params = CASES[case]
    W = fastgt.topology(name, **params)
    if algorithm == "d2" and W.spectrum().lambda_n <= -1 / 3:
        W = fastgt.topology(name, **params, lazy=True)
    n, d, sigma2, a = W.n, 5, 1.3, 2.0
    gamma = 0.3 * theory.max_stepsize(W, algorithm)
    M, N, ell = _second_order_maps(W.to_dense(), algorithm, gamma, a)
    assert np.allclose(ell @ M, ell) and np.allclose(ell @ N, 0)  # invariant, and 0 at start
    U = sla.null_space(ell[None, :])
    C = np.eye(n) - 1.0 / n
    want = np.zeros(4)
    for count, S in noise_covs(W, noise, sigma2, d):
        P = U @ sla.solve_discrete_lyapunov(U.T @ M @ U, U.T @ N @ S @ N.T @ U) @ U.T
        Pxx, Pyy = P[:n, :n], P[n:2 * n, n:2 * n]
        want += count * np.array([a / 2 * Pxx.sum() / n**2, a / 2 * np.trace(Pxx) / n,
                                  np.trace(C @ Pxx) / n, np.trace(C @ Pyy) / n])
    got = theory.stationary(W, algorithm, gamma, sigma2, noise=noise, d=d)
    for m, v in zip(("loss_avg", "loss_nodes", "consensus", "tracking"), want):
        if m == "tracking" and algorithm != "gt_atc":
            assert math.isnan(got[m])
        else:
            assert got[m] == pytest.approx(v, rel=1e-10, abs=1e-12), m  # (abs: Setup B's
            # loss_avg, exactly 0 by the modes, the full system's rounding here)


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("local,record_every", [(2, None), (3, 20), (4, 6)])
def test_local_steps_match_bruteforce(case, algorithm, noise, local, record_every):
    name, params = CASES[case]
    W = fastgt.topology(name, **params)
    d, sigma2, a = 5, 1.3, 2.0
    gamma = 0.3 * theory.max_stepsize(W, algorithm, local_steps=local)
    got = theory.stationary(W, algorithm, gamma, sigma2, noise=noise, d=d, local_steps=local,
                            record_every=record_every)
    phases = None if record_every is None else sorted({(m * record_every) % local
                                                       for m in range(1, local + 1)})
    cons, track = brute_periodic(W, algorithm, gamma, a, noise_covs(W, noise, sigma2, d), local,
                                 phases=phases)
    assert got["consensus"] == pytest.approx(cons, rel=1e-10, abs=1e-14)
    if algorithm == "gt":
        assert got["tracking"] == pytest.approx(track, rel=1e-10, abs=1e-14)
    assert got["loss_avg"] == theory.stationary(W, algorithm, gamma, sigma2, noise=noise,
                                                d=d)["loss_avg"]  # the mean mode: SGD


@pytest.mark.parametrize("W,Wy", [
    (("ring", {"n": 8}), ("ring", {"n": 8, "self_weight": 0.6})),
    (("ring", {"n": 9, "self_weight": 0.1}), ("interp_ring", {"n": 9, "alpha": 0.5})),
    (("torus", {"rows": 2, "cols": 4}), ("complete", {"n": 8})),
    (("hypercube", {"n": 8}), ("hypercube", {"n": 8, "lazy": True})),
])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("local", [1, 3])
def test_topology_y_matches_bruteforce(W, Wy, noise, local):
    """GT with y mixing with W_y (same eigenvectors as W; the torus 2 x 4 and the complete
    graph are both circulants of... the torus is a 2-d circulant: a shape of its own, so the
    complete graph on 8 is built as a torus-shaped circulant below)."""
    W = fastgt.topology(W[0], **W[1])
    Wy = fastgt.topology(Wy[0], **Wy[1])
    if W.structure != Wy.structure:  # the complete graph as a circulant of the torus's shape
        Wy = fastgt.MixingMatrix(Wy.indptr, Wy.indices, Wy.weights, Wy.mean_weight,
                                 name="complete", params=Wy.params, structure=W.structure)
    d, sigma2, a = 4, 1.1, 2.0
    gamma = 0.3 * theory.max_stepsize(W, "gt", local_steps=local, topology_y=Wy)
    got = theory.stationary(W, "gt", gamma, sigma2, noise=noise, d=d, local_steps=local,
                            topology_y=Wy)
    cons, track = brute_periodic(W, "gt", gamma, a, noise_covs(W, noise, sigma2, d), local, Wy)
    assert got["consensus"] == pytest.approx(cons, rel=1e-10, abs=1e-14)
    assert got["tracking"] == pytest.approx(track, rel=1e-10, abs=1e-14)


def test_plain_runs_keep_their_numbers():
    """local_steps=1 without topology_y takes the closed forms as before; the periodic path
    with one step per period gives the same values to 1e-12."""
    W = fastgt.topology("ring", n=10, self_weight=0.2)
    for algorithm in theory.ALGORITHMS:
        if algorithm == "d2":
            continue
        plain = theory.mode_variances(theory.eigenvalues(W), algorithm, 0.05, 2.0)
        lam = theory.eigenvalues(W)
        periodic = theory.mode_variances(lam, algorithm, 0.05, 2.0, mu=lam)
        np.testing.assert_allclose(periodic[0], plain[0], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("algorithm", ["gt", "gt_atc"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("local", [1, 3])
def test_dense_path_agrees_with_the_modes(algorithm, noise, local):
    """The same W_y without its circulant structure takes the dense path (the full 3n-state
    system): the values of the per-mode path to 1e-10."""
    W = fastgt.topology("ring", n=8)
    Wy = fastgt.topology("ring", n=8, self_weight=0.6)
    plain = fastgt.MixingMatrix(Wy.indptr, Wy.indices, Wy.weights, Wy.mean_weight)
    kw = {"noise": noise, "d": 4, "local_steps": local}
    modes = theory.stationary(W, algorithm, 0.1, topology_y=Wy, **kw)
    dense = theory.stationary(W, algorithm, 0.1, topology_y=plain, **kw)
    for m in ("consensus", "tracking", "loss_nodes"):
        assert dense[m] == pytest.approx(modes[m], rel=1e-10), m
    assert theory.rate(W, algorithm, 0.1, local_steps=local, topology_y=plain) == pytest.approx(
        theory.rate(W, algorithm, 0.1, local_steps=local, topology_y=Wy), rel=1e-10)


def test_dense_path_has_a_size_limit(monkeypatch):
    from fastgt import modes

    monkeypatch.setattr(modes, "DENSE_Y_MAX", 6)
    W = fastgt.topology("ring", n=8)
    Wy = fastgt.topology("erdos_renyi", n=8, prob=0.6, seed=1)
    with pytest.raises(fastgt.FastGTError, match="do not share their eigenvectors, and the "
                                                 "dense path is for n <= 6"):
        theory.stationary(W, "gt", 0.01, topology_y=Wy)
    cols = theory.theory_columns(W, "gt", 0.01, 1.0, "quadratic", "gaussian", 4)
    assert math.isfinite(cols["theory_consensus"])


def test_d2_with_local_steps_is_unstable_at_small_stepsizes_refused_and_diverges():
    """D²'s correction on a local step (W = I) leaves a unit root: with local steps small
    stepsizes are unstable (max_stepsize 0), so a run is refused before it starts, and with
    allow_unstable it diverges there; a stepsize of stable_stepsizes converges to x* on the
    quadratic problem (curvature a = 2, which the windows are for: with curvatures spread
    over coordinates, as in hetero_quadratic, some are outside them and it diverges)."""
    W = fastgt.topology("ring", n=10)
    assert theory.max_stepsize(W, "d2", local_steps=2) == 0.0
    (lo, hi), = theory.stable_stepsizes(W, "d2", local_steps=2)
    assert 0.2 < lo < 0.4 and hi == 1.0
    kw = {"algorithm": "d2", "topology": W, "problem": "hetero_quadratic", "noise": "none",
          "d": 2, "steps": 3000, "stepsize": 0.05, "local_steps": 2}
    with pytest.raises(fastgt.FastGTError, match=r"d2 with local_steps=2 is unstable at small "
                                                 r"stepsizes .*allowed: local_steps=1, "
                                                 r"or allow_unstable=True"):
        fastgt.run(**kw)
    assert fastgt.run(**kw, allow_unstable=True).summary["status"] == "diverged"
    ok = fastgt.run(**(kw | {"stepsize": 0.6, "problem": "quadratic"}), allow_unstable=True
                    ).summary
    assert ok["status"] == "ok" and ok["final_loss_nodes"] < 1e-20


@pytest.mark.parametrize("W,algorithm,local", [
    (fastgt.topology("ring", n=16, self_weight=0.1), "d2", 1),
    (fastgt.topology("ring", n=10), "d2", 2),
    (fastgt.topology("ring", n=16), "extra", 5),
    (fastgt.topology("ring", n=16), "extra", 2),
    (fastgt.topology("ring", n=8, self_weight=0.05), "gt", 1),
    (fastgt.topology("torus", rows=3, cols=4), "gt_atc", 3),
    (fastgt.topology("ring", n=15, self_weight=0.0), "gt_atc", 1),  # ends before the grid
    (fastgt.topology("ring", n=15, self_weight=0.0), "gt_atc", 2),  # and a second window
    (fastgt.topology("ring", n=16), "gt", 3),  # a narrow unstable gap at 0.5
])
def test_stable_stepsizes_are_where_the_rate_is_below_one(W, algorithm, local):
    """On a fine grid of stepsizes below 2 / a, rate < 1 exactly inside the intervals (up
    to 1e-9 of an edge), and the rate crosses 1 at each edge but 0 and 2 / a."""
    found = theory.stable_stepsizes(W, algorithm, local_steps=local)
    assert found
    for g in np.linspace(1e-4, 1.0, 1500, endpoint=False).tolist() + [found[0][1] / 2]:
        inside = any(lo < g < hi for lo, hi in found)
        if all(min(abs(g - lo), abs(g - hi)) > 1e-9 for lo, hi in found):
            assert (theory.rate(W, algorithm, g, local_steps=local) < 1) == inside, g
    for lo, hi in found:
        for edge in (lo, hi):
            if 0 < edge < 1.0:
                below = theory.rate(W, algorithm, edge * (1 - 1e-9), local_steps=local)
                above = theory.rate(W, algorithm, edge * (1 + 1e-9), local_steps=local)
                assert (below < 1) != (above < 1), (edge, below, above)
    top = theory.max_stepsize(W, algorithm, local_steps=local)
    assert top == (found[0][1] if found[0][0] == 0 else 0.0)
    said = theory.where_stable(W, algorithm, local_steps=local)
    if len(found) > 1:  # not "the largest stable stepsize": there is more beyond it
        assert said.startswith("stable: between 0 and ") and " or between " in said, said
        edges = re.findall(r"between (\S+) and (\S+)", said)
        assert all(hi != lo for (_, hi), (lo, _) in itertools.pairwise(edges)), said


def _steps(W, algorithm, gamma, **relax):
    """Enough steps for the start-up transient to vanish (check_against_simulation)."""
    r = theory.rate(W, algorithm, gamma, **relax)
    return max(2000, math.ceil(math.log(1e-9) / math.log(r)) + 20)


@pytest.mark.parametrize("algorithm", ["gt", "dsgd", "extra", "gt_atc", "centralized"])
def test_local_steps_plateau_matches_theory(algorithm):
    W = fastgt.topology("ring", n=12)
    steps = _steps(W, algorithm, 0.1, local_steps=3)
    check_against_simulation(W, algorithm, "quadratic", "gaussian", 0.1, 8, steps, 16,
                             local_steps=3)


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_records_on_one_phase_match_that_phase(algorithm):
    """local_steps = 4 and records every 20 steps: every record falls just after a
    communication (phase 0), whose consensus differs from the period's average by far more
    than the statistical error; the theory of that phase matches, the average does not."""
    W = fastgt.topology("ring", n=12)
    steps = _steps(W, algorithm, 0.1, local_steps=4)
    check_against_simulation(W, algorithm, "quadratic", "gaussian", 0.1, 8, steps, 16,
                             local_steps=4)
    one = theory.stationary(W, algorithm, 0.1, d=8, local_steps=4, record_every=20)
    every = theory.stationary(W, algorithm, 0.1, d=8, local_steps=4)
    assert abs(one["consensus"] - every["consensus"]) > 0.2 * one["consensus"]


@pytest.mark.parametrize("algorithm", ["gt", "gt_atc"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("shared", [True, False])
def test_topology_y_plateau_matches_theory(algorithm, noise, shared):
    """W_y a ring of other weights (the per-mode path) or an Erdos-Renyi graph (dense)."""
    W = fastgt.topology("ring", n=12)
    Wy = (fastgt.topology("ring", n=12, self_weight=0.7) if shared else
          fastgt.topology("erdos_renyi", n=12, prob=0.4, seed=0))
    steps = _steps(W, algorithm, 0.1, topology_y=Wy)
    check_against_simulation(W, algorithm, "quadratic", noise, 0.1, 8, steps, 16, topology_y=Wy)


def test_a_last_record_off_the_grid_is_left_out_of_a_periodic_plateau():
    """With local steps, records every 9 steps of a 3-step period fall just after a
    communication, where the centralized baseline's nodes agree (consensus 0, as the theory
    of that phase says); the last step, 2000, is off that grid (2000 = 3 x 666 + 2): its
    record held disagreeing nodes and made the plateau 4e-5, ten standard errors from the
    theory in a user's sweep. Without local steps the last record stays in (the numbers of
    every other run are kept: test_plain_runs_keep_their_numbers)."""
    W = fastgt.topology("ring", n=16)
    kw = {"algorithm": "centralized", "topology": W, "d": 10, "stepsize": 0.05,
          "local_steps": 3, "record_every": 9}
    res = fastgt.run(**kw, steps=2000)
    assert res.trace["step"].iloc[-1] == 2000
    want = theory.stationary(W, "centralized", 0.05, d=10, local_steps=3, record_every=9)
    assert want["consensus"] == 0.0 and res.summary["consensus"] < 1e-30  # rounding only
    assert res.trace["consensus"].iloc[-1] > 1e-6  # what it averaged in before
    assert res.summary["final_consensus"] == res.trace["consensus"].iloc[-1]  # still the last
    on_grid = res.trace[res.trace["step"] % 9 == 0]
    half = on_grid["loss_nodes"].iloc[len(on_grid) // 2:]
    assert res.summary["loss_nodes"] == half.mean()
    short = fastgt.run(**(kw | {"record_every": 100}), steps=50).summary  # grid: step 0 only
    assert short["loss_nodes"] == short["final_loss_nodes"]  # the last record, not step 0's
