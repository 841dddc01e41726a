"""Exact noise floors and linear rates on quadratics (derivation: docs/theory.md): closed
forms for GT and D-SGD, per-mode Lyapunov equations for D², EXTRA and ATC-GT.

Every node has f_i(x) = a/2 ||x - x*_i||^2 with the same curvature a (a = 2 for Setup A's
``quadratic``, a = 1 for ``consensus``). With W = Q diag(lambda) Q^T, each eigenvector q_m
and coordinate gives a scalar system driven by the projected noise; with g = a gamma:

    D-SGD  x' = lambda (1 - g) x - lambda gamma e
    GT     x'' - T x' + D x = lambda gamma (e - e'),  T = lambda (2 - g),  D = lambda (lambda - g)

so the stationary variances per unit noise variance are, in closed form,

    D-SGD  E x^2 = lambda^2 gamma^2 / (1 - lambda^2 (1 - g)^2)
    GT     E x^2 = 2 lambda^2 gamma^2 / K,
           E y^2 = 1 + ((eps + g lambda)^2 + lambda^2 (eps + g)^2 + T eps^2) / K,
           K = (1 - lambda^2 + g lambda) ((1 + lambda)^2 - 2 g lambda),  eps = 1 - lambda.

D², EXTRA and ATC-GT are linear systems per mode too, s' = A s + b e (``mode_system``:
2 or 3 states), whose stationary covariance solves P = A P A^T + b b^T (a 4 x 4 or 9 x 9
linear system per mode, all modes at once) and whose rate is the spectral radius of A.
The centralized baseline has no non-mean modes: every node holds xbar.

The mean mode (lambda = 1) is mini-batch SGD for every algorithm (for GT thanks to the
invariant ybar = gbar, i.e. y(0) = g(0)). The recorded metrics are averages of these over
modes: O(n) once the eigenvalues are known. Rates and stability only need lambda2 and
lambda_n, which ``W.spectrum()`` gives at any n.

Public: ``stationary``, ``rate``, ``max_stepsize``, ``stable_stepsizes``, ``eigenvalues``,
``theory_columns``, ``unsupported``, ``unstable_message``, ``where_stable``, ``is_stable``,
``stable_set``, ``mode_variances``, ``mode_radius``.
"""

from __future__ import annotations

import itertools
import math
import warnings
import weakref

import numpy as np

from .errors import FastGTError, FastGTWarning, bad, check_choice, check_float, check_int
from .metrics import THEORY_METRICS
from .modes import (
    dense_covariances,
    dense_maps,
    dense_radius,
    lyapunov,
    mode_eigenvalue,
    mode_system,
    period_maps,
    period_radius,
    phase_covariances,
    recorded_phases,
    shared_modes,
    shares_modes,
)

#: largest n for which the eigenvalues of a W without closed form come from a dense eigvalsh
DENSE_MAX = 20000
ALGORITHMS = ("gt", "dsgd", "d2", "extra", "gt_atc", "centralized")
#: algorithms with a tracking variable Y (the others' tracking is NaN)
WITH_Y = ("gt", "gt_atc")
#: the closed forms; the others go through mode_system
CLOSED = ("gt", "dsgd")
NOISES = ("gaussian", "structured", "none")
#: curvature a of f_i = a/2 ||x - x*_i||^2 of the problems the exact theory covers
CURVATURE = {"quadratic": 2.0, "consensus": 1.0}
#: the metrics whose plateaus stationary() gives (declared in fastgt.metrics)
STATIONARY_METRICS = THEORY_METRICS
#: a sweep cell's theory columns (theory_columns; NaN where not covered)
THEORY_COLUMNS = (*(f"theory_{m}" for m in STATIONARY_METRICS), "theory_rate")

_EIGENVALUES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ------------------------------------------------------------------------------ eigenvalues
def eigenvalues(W) -> np.ndarray:
    """All eigenvalues of W except the all-ones mode (n - 1 values, ascending).

    Closed forms for circulant families (FFT of the first row) and the hypercube
    (Walsh-Hadamard), dense ``eigvalsh`` up to ``DENSE_MAX`` nodes, else FastGTError.
    Cached per MixingMatrix object.
    """
    _static(W)
    if W not in _EIGENVALUES:
        _EIGENVALUES[W] = _compute_eigenvalues(W)
    return _EIGENVALUES[W]


def _compute_eigenvalues(W) -> np.ndarray:
    from .topology.spectrum import dense_eigenvalues, mode_eigenvalues

    if W.structure is not None:
        return np.sort(mode_eigenvalues(W)[1:])  # mode 0 is the all-ones vector
    if W.n > DENSE_MAX:
        raise FastGTError(
            f"theory: {W.describe()} has n={W.n} nodes and no closed-form spectrum: all its "
            f"eigenvalues need a dense eigvalsh, allowed only n <= {DENSE_MAX} (closed forms: "
            "ring, interp_ring, torus, complete, exponential, hypercube)")
    return dense_eigenvalues(W)[:-1]  # the largest: the all-ones mode (1; W is connected)


# ------------------------------------------------------------------------- per-mode formulas
def mode_variances(lam, algorithm: str, stepsize: float, a: float, mu=None, local: int = 1,
                   record_every: int | None = None):
    """Stationary (E x_m^2, E y_m^2) of modes with eigenvalues ``lam`` per unit noise variance.

    Valid for stable modes (see ``max_stepsize``); E y^2 is None without Y. At lam = 1 the
    x-variance is SGD's gamma / (a (2 - a gamma)) (closed forms; the mode systems are for
    lam != 1). Centralized: no spread between nodes, zeros. mu: y's own eigenvalues
    (topology_y); local: local steps, the variances then averaged over the phases of the
    period that records every ``record_every`` steps fall on (fastgt.modes).
    """
    lam = np.asarray(lam, dtype=np.float64)
    g = a * stepsize
    if mu is not None or local != 1:
        maps = period_maps(lam, algorithm, stepsize, a, mu, local)
        P = np.mean([phase_covariances(maps)[j] for j in recorded_phases(local, record_every)],
                    axis=0)
        return P[:, 0, 0], (P[:, 1, 1] if algorithm in WITH_Y else None)
    if algorithm == "centralized":
        return np.zeros_like(lam), None
    if algorithm not in CLOSED:
        P = lyapunov(*mode_system(lam, algorithm, stepsize, a))
        return P[:, 0, 0], (P[:, 1, 1] if algorithm in WITH_Y else None)
    if algorithm == "dsgd":
        return lam**2 * stepsize**2 / (1.0 - lam**2 * (1.0 - g) ** 2), None
    eps = 1.0 - lam
    T = lam * (2.0 - g)
    K = (1.0 - lam**2 + g * lam) * ((1.0 + lam) ** 2 - 2.0 * g * lam)
    vx = 2.0 * lam**2 * stepsize**2 / K
    vy = 1.0 + ((eps + g * lam) ** 2 + lam**2 * (eps + g) ** 2 + T * eps**2) / K
    return vx, vy


def mode_radius(lam, algorithm: str, stepsize: float, a: float, mu=None,
                local: int = 1) -> np.ndarray:
    """Spectral radius of the noiseless iteration of non-mean modes with eigenvalues ``lam``.

    D-SGD: |lam (1 - g)|. GT: largest root modulus of z^2 - lam (2 - g) z + lam (lam - g).
    The others: the spectral radius of their mode system's A. With mu (topology_y) or
    local steps: the per-step radius of the period's map (fastgt.modes).
    """
    lam = np.asarray(lam, dtype=np.float64)
    g = a * stepsize
    if mu is not None or local != 1:
        return period_radius(period_maps(lam, algorithm, stepsize, a, mu, local))
    if algorithm == "centralized":
        return np.zeros_like(lam)
    if algorithm not in CLOSED:
        return np.abs(np.linalg.eigvals(mode_system(lam, algorithm, stepsize, a)[0])).max(axis=1)
    if algorithm == "dsgd":
        return np.abs(lam * (1.0 - g))
    T = lam * (2.0 - g)
    root = np.sqrt((T**2 - 4.0 * lam * (lam - g)).astype(np.complex128))
    return np.maximum(np.abs(T + root), np.abs(T - root)) / 2.0


# ---------------------------------------------------------------------------- public API
def _curvature(problem) -> float:
    name = getattr(problem, "name", problem)
    if name not in CURVATURE:
        raise bad("problem", name, "'quadratic' or 'consensus' (the exact theory needs the "
                  "same curvature on every node)")
    return CURVATURE[name]


#: why a time-varying topology has no theory columns (said once per sweep: cli/sweep.py)
TIME_VARYING = ("the exact theory covers static topologies only: a time-varying W(t) has no "
                "per-mode closed form")


def _static(W) -> None:
    if not W.static:
        raise FastGTError(f"{W.name}: {TIME_VARYING}")


def _check(algorithm: str, stepsize=None, W=None) -> float | None:
    """Validate; returns the stepsize as a float (None if not given)."""
    if W is not None:
        if not hasattr(W, "static"):
            raise bad("W", W, "a MixingMatrix, e.g. fastgt.topology('ring', n=30)")
        _static(W)
    if algorithm not in ALGORITHMS:
        from .algorithms import ALGORITHMS as SPECS  # numba: only for this message

        if algorithm in SPECS:
            raise FastGTError(f"algorithm={algorithm!r} has no exact theory (its per-mode "
                              "system: fastgt/modes.py, mode_system, and its name in "
                              f"theory.ALGORITHMS): allowed {', '.join(ALGORITHMS)}")
    check_choice("algorithm", algorithm, ALGORITHMS)
    return None if stepsize is None else check_float("stepsize", stepsize, 0.0, lo_open=True)


def _topology_y(W, algorithm: str, Wy):
    """topology_y as fastgt.run takes it (a MixingMatrix or a topology table), checked
    as the engine checks it: an algorithm that tracks gradients, a static matrix, W's n."""
    if Wy is None:
        return None
    from .algorithms import ALGORITHMS as SPECS  # numba: only when topology_y is given
    from .engine import checked_topology_y
    from .flat import table_topology

    return checked_topology_y(table_topology(Wy), SPECS[algorithm], W.n)


def _relaxed(local_steps, topology_y) -> bool:
    return local_steps != 1 or topology_y is not None


def _dense(W, Wy) -> bool:
    """Whether topology_y takes the dense path (it does not share W's modes)."""
    return Wy is not None and not shares_modes(W, Wy)


def _mode_pairs(W, algorithm: str, local_steps: int, Wy):
    """(lam, mu) of the modes a rate is maximised over (mu None: y mixes with W)."""
    if Wy is not None:
        lam, mu = shared_modes(W, Wy)
        pairs = np.unique(np.round(np.stack([lam, mu], axis=1), 12), axis=0)
        return pairs[:, 0], pairs[:, 1]
    if algorithm in CLOSED and local_steps == 1:
        sp = W.spectrum()
        return np.array([sp.lambda2, sp.lambda_n]), None
    return _modes(W), None


def max_stepsize(W, algorithm: str, problem="quadratic", local_steps: int = 1,
                 topology_y=None) -> float:
    """Where the stable stepsizes that begin at 0 end (``rate`` < 1 for every stepsize
    below it; larger ones may be stable again: ``stable_stepsizes``); 0 when the smallest
    are unstable.

    Closed form (Jury criterion per mode, docs/theory.md): D-SGD and centralized 2 / a; GT
    min(2, c / |lambda_n|) / a when lambda_n < 0 (c = 1 - lambda_n^2), else 2 / a. D²,
    EXTRA, ATC-GT, and any algorithm with local steps or topology_y: the first unstable
    stepsize of a grid of 256 below 2 / a (the mean mode's bound), refined by bisection to
    1e-12 relative on the radius of their modes (``_modes``); 0 when even the smallest is
    unstable (D² with lambda_n < -1/3, or with local steps, EXTRA with many local steps).
    """
    return stable_set(W, algorithm, problem, local_steps, topology_y)[0]


def stable_stepsizes(W, algorithm: str, problem="quadratic", local_steps: int = 1,
                     topology_y=None) -> list[tuple[float, float]]:
    """The stable stepsizes (``rate`` < 1) as open intervals (lo, hi), in increasing
    order: (0, max_stepsize) where the closed forms apply; else (0, max_stepsize) if it is
    not 0 and the later runs of stable points of max_stepsize's grid of 256 below 2 / a,
    each edge refined by bisection to 1e-12 relative (a window narrower than the grid's
    spacing beyond the first can be missed). D² with lambda_n < -1/3, for one, is unstable
    at small stepsizes and stable at large ones on the quadratic problems; [] if none is
    stable."""
    return stable_set(W, algorithm, problem, local_steps, topology_y)[1]


def stable_set(W, algorithm: str, problem="quadratic", local_steps: int = 1,
               topology_y=None) -> tuple[float, list[tuple[float, float]]]:
    """(max_stepsize, stable_stepsizes) from one scan of the grid."""
    a, closed, stable = _stability(W, algorithm, problem, local_steps, topology_y)
    if closed is not None:
        return closed, [(0.0, closed)]
    grid = (2.0 / a) * np.arange(1, GRID + 1) / GRID
    ok = [stable(g * (1 - 1e-12)) for g in grid]
    if all(ok):
        return 2.0 / a, [(0.0, 2.0 / a)]
    first = ok.index(False)
    hi = grid[first]
    lo = hi - grid[0]
    top = 0.0 if lo == 0.0 and not stable(1e-9 * hi) else _edge(stable, lo, hi)
    out = [(0.0, float(top))] if top > 0.0 else []
    for i in range(first + 1, GRID):
        if not ok[i] or ok[i - 1]:
            continue  # not the first point of a later run
        j = i
        while j + 1 < GRID and ok[j + 1]:
            j += 1
        out.append((_edge(stable, grid[i], grid[i - 1]),
                    2.0 / a if j == GRID - 1 else _edge(stable, grid[j], grid[j + 1])))
    return float(top), out


#: stepsizes tried below 2 / a where stability has no closed form
GRID = 256


def _stability(W, algorithm: str, problem, local_steps: int, topology_y):
    """(a, the closed-form max_stepsize or None, whether a stepsize is stable) of a case."""
    _check(algorithm, W=W)
    topology_y = _topology_y(W, algorithm, topology_y)
    local_steps = check_int("local_steps", local_steps, 1)
    a = _curvature(problem)
    if not _relaxed(local_steps, topology_y):
        lam_n = W.spectrum().lambda_n
        if algorithm == "gt" and lam_n < 0:
            return a, min(2.0, (1.0 - lam_n**2) / -lam_n) / a, None
        if algorithm in CLOSED or algorithm == "centralized":
            return a, 2.0 / a, None
        lam, mu = _modes(W), None
    elif not _dense(W, topology_y):
        lam, mu = _mode_pairs(W, algorithm, local_steps, topology_y)

    def stable(gamma):
        if _dense(W, topology_y):
            return dense_radius(*dense_maps(W, topology_y, algorithm, gamma, a,
                                            local_steps)) < 1.0
        return mode_radius(lam, algorithm, gamma, a, mu, local_steps).max() < 1.0

    return a, None, stable


def _edge(stable, lo: float, hi: float) -> float:
    """Between a stable ``lo`` and an unstable ``hi`` (either order), by bisection to 1e-12
    relative: the unstable end."""
    while abs(hi - lo) > 1e-12 * max(abs(hi), abs(lo)):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if stable(mid) else (lo, mid)
    return float(hi)


def _modes(W) -> np.ndarray:
    """The non-mean eigenvalues a rate is maximised over: all of them where known (closed
    form, or n <= DENSE_MAX), else lambda2, lambda_n and 399 values between (the radius of
    the mode systems is not monotone in lambda; all eigenvalues lie in that interval)."""
    if W.structure is not None or W.n <= DENSE_MAX:
        return np.unique(np.round(eigenvalues(W), 12))
    sp = W.spectrum()
    return np.linspace(sp.lambda_n, sp.lambda2, 401)


def rate(W, algorithm: str, stepsize: float, problem="quadratic", local_steps: int = 1,
         topology_y=None) -> float:
    """Exact linear rate: spectral radius of the noiseless iteration, maximised over modes.

    The mean mode contracts by |1 - a gamma| (for GT on the invariant ybar = gbar). For
    a gamma < 4 the radius of the other modes grows with |lambda| on each side of 0, so
    lambda2 and lambda_n suffice (docs/theory.md); beyond, the value is a lower bound >= 3.
    D², EXTRA, ATC-GT: the largest radius over the modes (``_modes``). With local steps k:
    per step, rho(period map)^(1/k); with topology_y: over the modes' (lambda, mu) pairs.
    On ``consensus`` the heterogeneity mu is a constant input that cancels from the error
    dynamics (GT) or shifts the fixed point (D-SGD): same rate, curvature 1.
    """
    stepsize = _check(algorithm, stepsize, W)
    topology_y = _topology_y(W, algorithm, topology_y)
    a = _curvature(problem)
    local_steps = check_int("local_steps", local_steps, 1)
    if _dense(W, topology_y):
        return dense_radius(*dense_maps(W, topology_y, algorithm, stepsize, a, local_steps))
    lam, mu = _mode_pairs(W, algorithm, local_steps, topology_y)
    radius = mode_radius(lam, algorithm, stepsize, a, mu, local_steps)
    return float(max(abs(1.0 - a * stepsize), radius.max()))


def unstable_message(W, algorithm: str, stepsize: float, problem="quadratic",
                     local_steps: int = 1, topology_y=None, known=None) -> str:
    """What to say of an unstable stepsize; ``known``: stable_set's result, if computed."""
    head = (f"stepsize={stepsize:g} is unstable for {algorithm} on {W.describe()}: the "
            "iterates diverge (infinite floors); ")
    return head + where_stable(W, algorithm, problem, local_steps, topology_y, known)


def where_stable(W, algorithm: str, problem="quadratic", local_steps: int = 1,
                 topology_y=None, known=None) -> str:
    """Which stepsizes are stable, in words: below max_stepsize when they are one window
    from 0, else the windows of stable_stepsizes. ``known``: stable_set's result."""
    top, found = known or stable_set(W, algorithm, problem, local_steps, topology_y)
    if found == [(0.0, top)]:
        return (f"the largest stable stepsize is {top:.6g} (theory.max_stepsize; every "
                "stepsize below it is stable)")
    if not found:
        return "no stepsize is stable with these settings (theory.stable_stepsizes)"
    small = "" if found[0][0] == 0.0 else "small stepsizes are unstable here; "
    digits = 6  # more where a narrow unstable gap would read as none (0.5 and 0.5)
    while digits < 17 and any(f"{a:.{digits}g}" == f"{b:.{digits}g}"
                              for (_, a), (b, _) in itertools.pairwise(found)):
        digits += 2
    windows = " or ".join(f"between {lo:.{digits}g} and {hi:.{digits}g}" for lo, hi in found)
    return f"{small}stable: {windows} (theory.stable_stepsizes)"


def is_stable(W, algorithm: str, stepsize: float, problem="quadratic", local_steps: int = 1,
              topology_y=None) -> bool:
    """Whether the noiseless iteration contracts: stepsize < max_stepsize where a closed
    form gives it (GT and D-SGD without relaxations: exact where the rate rounds
    to 1 a few ulps below it), else ``rate`` < 1."""
    if algorithm in CLOSED and not _relaxed(local_steps, topology_y):
        return stepsize < max_stepsize(W, algorithm, problem)
    return rate(W, algorithm, stepsize, problem, local_steps, topology_y) < 1.0


def covers(algorithm: str, problem: str) -> bool:
    """Whether ``stationary`` gives this algorithm's floors on this problem (by name)."""
    return problem in CURVATURE and unsupported(algorithm, problem) is None


def unsupported(algorithm: str, problem) -> str | None:
    """Why ``stationary`` does not cover this case, or None."""
    if algorithm == "dsgd" and getattr(problem, "name", problem) == "consensus":
        return ("D-SGD on 'consensus' converges to a biased point that depends on mu; "
                "allowed for dsgd: problem='quadratic'")
    return None


def stationary(W, algorithm: str, stepsize: float, sigma2: float = 1.0, problem="quadratic",
               noise: str = "gaussian", d: int = 100, local_steps: int = 1, topology_y=None,
               record_every: int | None = None) -> dict:
    """Exact expected stationary (t -> infinity) values of the recorded metrics.

    Returns {"loss_avg", "loss_nodes", "consensus", "tracking"} (tracking NaN without Y), all
    inf, with a FastGTWarning naming the largest stable stepsize, if the stepsize is not
    stable. noise: "gaussian" (Setup A: i.i.d. N(0, sigma2/d) per
    node, coordinate, step), "structured" (Setup B: only the lambda_n mode, ceil(d/2)
    coordinates, and the lambda2 mode, the others, are excited) or "none" (all zero). The
    problem is "quadratic" (Setup A/B, a = 2) or "consensus" (a = 1; not D-SGD, whose fixed
    point is biased there). Every algorithm of ALGORITHMS.

    The paper's relaxations (fastgt.modes): ``local_steps`` k (a periodic system per mode;
    the metrics vary within a period, so they are averaged over the phases that records
    every ``record_every`` steps fall on: all k phases when None) and ``topology_y`` (GT,
    ATC-GT: y's own static matrix, sharing W's eigenvectors). The mean mode is SGD on xbar
    in every case (ybar = gbar holds for any doubly stochastic matrices).
    """
    stepsize = _check(algorithm, stepsize, W)
    topology_y = _topology_y(W, algorithm, topology_y)
    if record_every is not None:
        record_every = check_int("record_every", record_every, 1)
    a = _curvature(problem)
    reason = unsupported(algorithm, problem)
    if reason:
        raise FastGTError(f"stationary: {reason}")
    check_choice("noise", noise, NOISES)
    sigma2 = check_float("sigma2", sigma2, 0.0)
    d = check_int("d", d, 1)
    local_steps = check_int("local_steps", local_steps, 1)
    if not is_stable(W, algorithm, stepsize, problem, local_steps, topology_y):
        warnings.warn(unstable_message(W, algorithm, stepsize, problem, local_steps,
                                       topology_y), FastGTWarning, stacklevel=2)
        return _constant(algorithm, math.inf)
    if noise == "none" or sigma2 == 0.0:
        return _constant(algorithm, 0.0)
    if _dense(W, topology_y):
        return _dense_stationary(W, algorithm, stepsize, sigma2, a, noise, d, local_steps,
                                 topology_y, record_every)
    mu = None
    if noise == "gaussian":
        # every mode gets noise variance sigma2/d in each of d coordinates; metrics are (1/n) sum
        if topology_y is None:
            lam = eigenvalues(W)
        else:
            lam, mu = shared_modes(W, topology_y)
        weights = np.full(len(lam), sigma2 / W.n)
        g = a * stepsize
        loss_avg = 0.5 * a * sigma2 / W.n * stepsize**2 / (1.0 - (1.0 - g) ** 2)  # SGD on xbar
    else:
        # one mode per coordinate, noise variance n sigma2/d; the 1/n of the metrics cancels n
        sp = W.spectrum(vectors=topology_y is not None)
        lam = np.array([sp.lambda_n, sp.lambda2])
        if topology_y is not None:
            mu = np.array([mode_eigenvalue(topology_y, sp.v), mode_eigenvalue(topology_y, sp.u)])
        dv = (d + 1) // 2
        weights = np.array([dv, d - dv]) * sigma2 / d
        loss_avg = 0.0
    vx, vy = mode_variances(lam, algorithm, stepsize, a, mu, local_steps, record_every)
    consensus = float(weights @ vx)
    return {"loss_avg": loss_avg, "loss_nodes": loss_avg + 0.5 * a * consensus,
            "consensus": consensus, "tracking": math.nan if vy is None else float(weights @ vy)}


def _dense_stationary(W, algorithm, stepsize, sigma2, a, noise, d, local_steps, Wy,
                      record_every) -> dict:
    """stationary() for a topology_y that does not share W's eigenvectors: the full system's
    covariance per noise structure (fastgt.modes.dense_maps), averaged over the recorded
    phases; the mean mode is SGD on xbar as always."""
    n = W.n
    maps, U = dense_maps(W, Wy, algorithm, stepsize, a, local_steps)
    if noise == "gaussian":  # d coordinates of sigma2/d I: as one of sigma2 I
        covs, loss_avg = [(1, sigma2 * np.eye(n))], 0.5 * a * sigma2 / n * stepsize**2 / (
            1.0 - (1.0 - a * stepsize) ** 2)
    else:
        sp = W.spectrum(vectors=True)
        dv = (d + 1) // 2
        covs = [(dv, sigma2 / d * n * np.outer(sp.v, sp.v)),
                (d - dv, sigma2 / d * n * np.outer(sp.u, sp.u))]
        loss_avg = 0.0
    C = np.eye(n) - 1.0 / n
    phases = recorded_phases(local_steps, record_every)
    consensus = tracking = 0.0
    for count, S in covs:
        P = dense_covariances(maps, U, S)
        consensus += count * np.mean([np.trace(C @ P[j][:n, :n]) for j in phases]) / n
        tracking += count * np.mean([np.trace(C @ P[j][n:2 * n, n:2 * n]) for j in phases]) / n
    return {"loss_avg": loss_avg, "loss_nodes": loss_avg + 0.5 * a * consensus,
            "consensus": float(consensus), "tracking": float(tracking)}


def _constant(algorithm: str, value: float) -> dict:
    return {m: math.nan if m == "tracking" and algorithm not in WITH_Y else value
            for m in STATIONARY_METRICS}


def theory_columns(W, algorithm: str, stepsize: float, sigma2: float, problem_name: str,
                   noise: str, d: int, dense_max: int = DENSE_MAX, local_steps: int = 1,
                   topology_y=None, record_every: int | None = None) -> dict:
    """``theory_*`` columns of a grid cell: {} when the problem is not covered (heterogeneous
    curvature) or W is time-varying; NaN stationary values when only the rate is (D-SGD on
    consensus, or Setup A on a graph without closed form beyond ``dense_max`` nodes)."""
    if problem_name not in CURVATURE or not W.static:
        return {}
    cols = {f"theory_{m}": math.nan for m in STATIONARY_METRICS}
    cols["theory_rate"] = rate(W, algorithm, stepsize, problem_name, local_steps, topology_y)
    too_big = noise == "gaussian" and W.structure is None and W.n > min(dense_max, DENSE_MAX)
    if covers(algorithm, problem_name) and not too_big:
        with warnings.catch_warnings():  # an unstable cell's inf columns say it already
            warnings.simplefilter("ignore", FastGTWarning)
            st = stationary(W, algorithm, stepsize, sigma2, problem_name, noise, d, local_steps,
                            topology_y, record_every)
        cols.update({f"theory_{m}": v for m, v in st.items()})
    return cols
