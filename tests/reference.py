"""Dense-numpy twins of fastgt's algorithms: the yardstick for its kernels.

Written from docs/definitions.md and the paper's Algorithm 1, independently of fastgt's
kernels: W is the dense matrix ``W.to_dense()``, gradients come from the problem instance
(``inst.grad``), and the noise of step t from a callback ``noise(t) -> (n, d) array``.
"""

from __future__ import annotations

import numpy as np

from fastgt.kernels.oracles import GAUSSIAN, NONE
from fastgt.problems import NOISES, make_noise


def given_sigma2(noise: str, sigma2: float):
    """sigma2 as fastgt.run takes it with this noise: None (not given) with a noise that
    adds none, where any other value than the default is refused."""
    return None if NOISES[noise] == NONE else sigma2


def gt_init(X, oracle, gamma):
    G = oracle(X, 0)
    return {"X": X, "Y": G.copy(), "G": G}


def gt_step(s, W, oracle, gamma, t, Wy=None):
    """Paper Algorithm 1; Wy: y's own matrix (topology_y), else W."""
    X = W @ (s["X"] - gamma * s["Y"])
    G = oracle(X, t + 1)
    return {"X": X, "Y": (W if Wy is None else Wy) @ s["Y"] + G - s["G"], "G": G}


def dsgd_init(X, oracle, gamma):
    return {"X": X}


def dsgd_step(s, W, oracle, gamma, t):
    """x(t+1) = W (x(t) - gamma g(t))."""
    return {"X": W @ (s["X"] - gamma * oracle(s["X"], t))}


def d2_init(X, oracle, gamma):
    G = oracle(X, 0)
    return {"X": X, "G": G, "Z": X - gamma * G}


def d2_step(s, W, oracle, gamma, t):
    """D² on Z = 2 X(t) - X(t-1) - gamma (G(t) - G(t-1)): X(t+1) = W Z(t)."""
    X = W @ s["Z"]
    G = oracle(X, t + 1)
    return {"X": X, "G": G, "Z": 2 * X - s["X"] - gamma * (G - s["G"])}


def gt_atc_step(s, W, oracle, gamma, t, Wy=None):
    """X(t+1) = W (X(t) - gamma Y(t)); Y(t+1) = Wy (Y(t) + G(t+1) - G(t)), Wy = W unless
    given (topology_y)."""
    X = W @ (s["X"] - gamma * s["Y"])
    G = oracle(X, t + 1)
    return {"X": X, "Y": (W if Wy is None else Wy) @ (s["Y"] + G - s["G"]), "G": G}


def extra_init(X, oracle, gamma):
    return {"X": X, "G": oracle(X, 0), "H": None}


def extra_step(s, W, oracle, gamma, t):
    """EXTRA: X(1) = W X(0) - gamma G(0); X(t+2) = (I + W) X(t+1) - H(t+1) - gamma G(t+1)
    with H(t+1) = (I + W)/2 X(t) - gamma G(t), the bracket of Shi et al.'s recursion."""
    X, G = s["X"], s["G"]
    WX = W @ X
    Xn = WX - gamma * G if t == 0 else X + WX - s["H"] - gamma * G
    return {"X": Xn, "G": oracle(Xn, t + 1), "H": 0.5 * (X + WX) - gamma * G}


def centralized_init(X, oracle, gamma):
    return {"X": np.tile(X.mean(axis=0), (X.shape[0], 1))}


def centralized_step(s, W, oracle, gamma, t):
    """xbar(t+1) = xbar(t) - gamma (1/n) sum_i g_i(xbar(t)) on every node: the exact
    average whatever W, but on a local step (W = I, local_steps) each node keeps its own
    x_i - gamma g_i (local SGD)."""
    X = s["X"] - gamma * oracle(s["X"], t)
    if isinstance(W, np.ndarray) and np.array_equal(W, np.eye(len(W))):
        return {"X": X}
    return {"X": np.tile(X.mean(axis=0), (X.shape[0], 1))}


#: an algorithm's twin is its dense update, a few lines each: init(X, oracle, gamma) -> the
#: state at t = 0, step(state, W, oracle, gamma, t) -> the state at t + 1, where oracle(X, t) is
#: the stochastic gradient of step t at X; states are dicts named like RunResult.state
TWINS = {"gt": (gt_init, gt_step), "dsgd": (dsgd_init, dsgd_step), "d2": (d2_init, d2_step),
         "extra": (extra_init, extra_step), "centralized": (centralized_init, centralized_step),
         "gt_atc": (gt_init, gt_atc_step)}  # ATC-GT starts as GT: Y(0) = G(0)


def simulate(algorithm, Wd, oracle, gamma, x0, steps, local_steps=1, Wy=None):
    """The states of ``algorithm`` (a key of TWINS) for t = 0..steps: W dense, or a function
    W(r) giving the dense matrix of the r-th communication (r = 0, 1, ...: a time-varying
    topology), oracle(X, t) the stochastic gradient of step t at X (e.g. inst.grad(X) +
    noise(t), or a minibatch gradient). With local steps k, step t (from t to t + 1) mixes
    with W when k divides t + 1 and with the identity otherwise. Wy: the tracking
    variable's own dense matrix (gt, gt_atc: topology_y), the identity on local steps too."""
    init, step = TWINS[algorithm]
    states = [init(np.array(x0, dtype=float), oracle, gamma)]
    x0 = np.asarray(x0)
    I = np.eye(len(x0))
    for t in range(steps):
        local = (t + 1) % local_steps
        if local:
            W = I
        else:
            W = Wd((t + 1) // local_steps - 1) if callable(Wd) else Wd
        extra = {} if Wy is None else {"Wy": I if local else Wy}
        states.append(step(states[-1], W, oracle, gamma, t, **extra))
    return states


# ------------------------------------------------ the generator's keys and draws, matchings
# written from the docstrings of fastgt/kernels/rng.py (SplitMix64, the keys, the pair
# layout, uniform_index) and fastgt/kernels/matching.py, in Python integers (mod 2^64) and
# numpy's log, sin and cos, without fastgt's code
_U64 = (1 << 64) - 1
_GOLDEN, _M1, _M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def splitmix64(z):
    """SplitMix64's output function of a Python integer (mod 2^64)."""
    z = ((z ^ (z >> 30)) * _M1) & _U64
    z = ((z ^ (z >> 27)) * _M2) & _U64
    return z ^ (z >> 31)


def step_key(seed, stream, t):
    """The key of step t of a stream of the seed (kernels/rng.py: stream_key, step_key)."""
    skey = splitmix64((splitmix64((seed + _GOLDEN) & _U64) ^ (stream * _M1)) & _U64)
    return splitmix64((skey + (t + 1) * _GOLDEN) & _U64)


def row_key(tkey, node):
    """Node's row key at a step with key tkey; node -1: the step's shared draw."""
    return splitmix64(tkey ^ (((node + 1) * _M2) & _U64))


def pair_hashes(rkey: int, pairs: int) -> np.ndarray:
    """The row's pair hashes: SplitMix64 outputs of rkey + (m + 1) golden, m < pairs."""
    return np.array([splitmix64((rkey + (m + 1) * _GOLDEN) & _U64) for m in range(pairs)],
                    dtype=np.uint64)


def box_muller(h: np.ndarray):
    """(z0, z1, r) of the pairs with hashes h by the documented bit layout (40-bit radius
    uniform, 2-bit quadrant, 22-bit centred phase), in numpy's float64 log, sin and cos."""
    u1 = 1.0 - (h >> np.uint64(24)).astype(np.float64) * 2.0**-40  # (0, 1]
    q = ((h >> np.uint64(22)) & np.uint64(3)).astype(np.float64)
    phi = ((h & np.uint64(2**22 - 1)).astype(np.float64) + 0.5) * 2.0**-22 - 0.5
    angle = (q + phi) * np.pi / 2
    r = np.sqrt(-2.0 * np.log(u1))
    return r * np.cos(angle), r * np.sin(angle), r


def grouped(z0, z1, width):
    """A row's coordinates from its pairs' values: per group, 8 z0 then 8 z1."""
    return np.stack([z0, z1]).reshape(2, -1, 8).transpose(1, 0, 2).reshape(-1)[:width]


def noise_rows(seed, stream, t, nodes, d):
    """The rows of standard normals of ``nodes`` at step t of a stream of the seed, d
    coordinates each."""
    tkey = step_key(seed, stream, t)
    rows = []
    for i in nodes:
        z0, z1, _ = box_muller(pair_hashes(row_key(tkey, i), 8 * -(-d // 16)))
        rows.append(grouped(z0, z1, d))
    return np.array(rows)


def matching_partners(seed, t, n):
    """Every node's partner in the random matching of step t (the iterate it makes, t >= 1)
    of the run with this seed: an inside-out Fisher-Yates shuffle pi of [0, n) (for i = 0..n-1:
    j uniform in [0, i], pi[i] = pi[j], pi[j] = i) whose j is draw i of the step's key in the
    run seed's matching stream (stream 2); the nodes at positions 2m and 2m + 1 of pi are
    partners."""
    key = step_key(seed, 2, t)
    pi = [0] * n
    for i in range(n):
        u = (splitmix64((key - (i + 1) * _GOLDEN) & _U64) >> 12) / 2.0**52
        j = min(i, int(u * (i + 1)))
        pi[i] = pi[j]
        pi[j] = i
    out = np.arange(n)
    for m in range(0, n - 1, 2):
        out[pi[m]], out[pi[m + 1]] = pi[m + 1], pi[m]
    return out


def matching_matrix(partners, a=0.5):
    """Dense W of a matching: a on the diagonal, 1 - a between partners (1 when unmatched)."""
    n = len(partners)
    W = a * np.eye(n)
    W[np.arange(n), partners] += 1.0 - a
    return W


def one_peer_matrix(n, r):
    """The one-peer exponential graph's W at communication r: node i averages with
    (i + 2^(r mod tau)) mod n, tau = ceil(log2 n)."""
    tau = int(np.ceil(np.log2(n)))
    W = 0.5 * np.eye(n)
    W[np.arange(n), (np.arange(n) + 2 ** (r % tau)) % n] += 0.5
    return W


def _optimum(inst, d):
    """abar, x*: f = (1/n) sum_i f_i is the diagonal quadratic 1/2 sum_k abar_k x_k^2 -
    bbar_k x_k + c, so f(x) - f* = 1/2 sum_k abar_k (x_k - x*_k)^2 with x* = bbar / abar
    (exact, no cancellation)."""
    if inst.hetero:
        abar, bbar = inst.A.mean(axis=0), inst.B.mean(axis=0)
    else:
        abar, bbar = np.full(d, inst.a0), np.zeros(d)
    return abar, bbar / abar


def _loss_avg(inst, X, Y):
    if not hasattr(inst, "abar"):  # not a diagonal quadratic: its own f and f*
        return inst.f(X.mean(axis=0)) - inst.fstar
    abar, xstar = _optimum(inst, X.shape[1])
    return 0.5 * np.sum(abar * (X.mean(axis=0) - xstar) ** 2)


def _loss_nodes(inst, X, Y):
    if not hasattr(inst, "abar"):
        return np.mean(inst.f(X)) - inst.fstar
    abar, xstar = _optimum(inst, X.shape[1])
    return np.mean(0.5 * np.sum(abar * (X - xstar) ** 2, axis=1))


def _grad_norm2(inst, X, Y):
    """grad f(x) = mean_i grad f_i(x) at x = xbar."""
    return np.sum(inst.grad(np.tile(X.mean(axis=0), (X.shape[0], 1))).mean(axis=0) ** 2)


def _accuracy(inst, X, Y):
    """Share of the training rows (a, y) with y a^T xbar > 0, row by row; NaN unless the
    problem classifies."""
    if not getattr(inst, "classification", False):
        return np.nan
    A = inst.A.toarray() if hasattr(inst.A, "toarray") else inst.A
    xbar = X.mean(axis=0)
    return sum(1 for a, y in zip(A, inst.y) if y * float(a @ xbar) > 0) / len(inst.y)


#: each declared metric's twin (docs/definitions.md), (inst, X, Y) -> value; Y is None
#: without a tracking variable, and a metric that needs Y is then NaN
METRIC_TWINS = {
    "loss_avg": _loss_avg,
    "loss_nodes": _loss_nodes,
    "consensus": lambda inst, X, Y: np.mean(np.sum((X - X.mean(axis=0)) ** 2, axis=1)),
    "grad_norm2": _grad_norm2,
    "tracking": lambda inst, X, Y: np.mean(np.sum((Y - Y.mean(axis=0)) ** 2, axis=1)),
    "accuracy": _accuracy,
}


def metrics(inst, X, Y=None):
    """The declared metrics (fastgt.metrics.DECLARED, in order) of X and Y."""
    from fastgt.metrics import DECLARED

    return np.array([np.nan if m.needs_y and Y is None else METRIC_TWINS[m.name](inst, X, Y)
                     for m in DECLARED])


def fastgt_noise(name, sigma2, d, W, seed):
    """noise(t): the (n, d) noise matrix fastgt draws at step t, from the documented keys
    and transform (noise_rows), within 2e-13 of fastgt's own (test_rng checks it). Setup A:
    node i's row of N(0, sigma2/d) normals; Setup B: the step's shared row xi of them times
    v_i on the first ceil(d/2) coordinates and u_i on the others, (v, u) the extreme
    eigenvectors of fastgt's spectrum (their eigen-equations: test_kernels), scaled to norm
    sqrt(n)."""
    n, scale, dv = W.n, np.sqrt(sigma2 / d), -(-d // 2)
    if NOISES[name] == NONE:
        return lambda t: np.zeros((n, d))
    if NOISES[name] == GAUSSIAN:
        return lambda t: scale * noise_rows(seed, 0, t, range(n), d)
    v, u = make_noise(name, sigma2, d, W).uv
    assert np.allclose([v @ v, u @ u], n)
    weights = np.concatenate([np.tile(v[:, None], dv), np.tile(u[:, None], d - dv)], axis=1)
    return lambda t: scale * noise_rows(seed, 0, t, [-1], d) * weights


def no_noise(n, d):
    """noise(t) = 0."""
    return lambda t: np.zeros((n, d))


def default_x0(seed, n, d):
    """The (n, d) initial point fastgt draws when x0 is not given: stream 1 of the run
    seed, step 0, node i's row of N(0, 1) normals (noise_rows)."""
    return noise_rows(seed, 1, 0, range(n), d)
