"""Dense-numpy reference implementation of GT and D-SGD: the yardstick for fastgt's kernels.

Written from docs/definitions.md and the paper's Algorithm 1, independently of fastgt's
kernels: W is the dense matrix ``W.to_dense()``, gradients come from the problem instance
(``inst.grad``), and the noise of step t from a callback ``noise(t) -> (n, d) array``.
"""

from __future__ import annotations

import numpy as np

from fastgt.problems import make_noise
from fastgt.problems.noise import noise_matrix


def gt(Wd, grad, noise, gamma, x0, steps):
    """Paper Algorithm 1; returns the list of states (X, Y, G) for t = 0..steps."""
    X = np.array(x0, dtype=float)
    G = grad(X) + noise(0)
    Y = G.copy()
    states = [(X, Y, G)]
    for t in range(steps):
        X = Wd @ (X - gamma * Y)
        G_new = grad(X) + noise(t + 1)
        Y = Wd @ Y + G_new - G
        G = G_new
        states.append((X, Y, G))
    return states


def dsgd(Wd, grad, noise, gamma, x0, steps):
    """x(t+1) = W (x(t) - gamma g(t)); returns the list of iterates X for t = 0..steps."""
    X = np.array(x0, dtype=float)
    states = [X]
    for t in range(steps):
        X = Wd @ (X - gamma * (grad(X) + noise(t)))
        states.append(X)
    return states


def metrics(inst, X, Y=None):
    """[loss_avg, loss_nodes, consensus, grad_norm2, tracking] of docs/definitions.md.

    f = (1/n) sum_i f_i is the diagonal quadratic 1/2 sum_k abar_k x_k^2 - bbar_k x_k + c,
    so f(x) - f* = 1/2 sum_k abar_k (x_k - x*_k)^2 with x* = bbar / abar (exact, no
    cancellation), and grad f(x) = mean_i grad f_i(x).
    """
    n, d = X.shape
    if inst.hetero:
        abar, bbar = inst.A.mean(axis=0), inst.B.mean(axis=0)
    else:
        abar, bbar = np.full(d, inst.a0), np.zeros(d)
    xstar = bbar / abar
    xbar = X.mean(axis=0)
    loss_avg = 0.5 * np.sum(abar * (xbar - xstar) ** 2)
    loss_nodes = np.mean(0.5 * np.sum(abar * (X - xstar) ** 2, axis=1))
    consensus = np.mean(np.sum((X - xbar) ** 2, axis=1))
    grad_norm2 = np.sum(inst.grad(np.tile(xbar, (n, 1))).mean(axis=0) ** 2)
    tracking = np.nan if Y is None else np.mean(np.sum((Y - Y.mean(axis=0)) ** 2, axis=1))
    return np.array([loss_avg, loss_nodes, consensus, grad_norm2, tracking])


def fastgt_noise(name, sigma2, d, W, seed):
    """noise(t): the exact (n, d) noise matrix fastgt draws at step t (zero problem oracle)."""
    nz = make_noise(name, sigma2, d, W)
    return lambda t: noise_matrix(nz, seed, t, W.n, d)


def no_noise(n, d):
    """noise(t) = 0."""
    return lambda t: np.zeros((n, d))


def default_x0(seed, n, d):
    """The (n, d) initial point fastgt draws when x0 is not given (the run seed's stream)."""
    from fastgt.algorithms.base import initial_point

    out = np.zeros((n, d))
    initial_point(out, None, seed, d)
    return out
