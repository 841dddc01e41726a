"""JAX implementations of baselines.ALGORITHMS, the benchmark's third baseline.

The same equations, problem (f_i = ||x||^2, gradient A0 x + noise) and noise semantics as
bench/baselines.py (Setup A: N(0, sigma2/d) per entry; Setup B: one xi ~ N(0, sigma2/d I_d)
per step shared by all nodes, node i's coordinate k getting xi_k v_i (k < dv) or xi_k u_i),
written the way one writes JAX today: float64, pure step functions, ``jax.lax.scan`` over
steps inside ``jax.jit``, noise from ``jax.random.normal`` (not fastgt's or numpy's bits).

Mixing: W = A + beta/n 1 1^T (A = ``W.sparse_part()``, beta = ``W.mean_weight``) applied
as a ``jnp.roll`` stencil on the node grid (ring and interpolated ring: (n, d); torus:
(rows, cols, d)), which is what circulant topologies allow: W S = sum_k w_k roll(S, -o_k)
+ beta mean(S), the offsets o_k and weights w_k read from A's row 0.

A run compiles when it is built (``advance(0)`` warms both of its programs), so timing its
``advance(k)`` excludes compilation; ``advance`` blocks until the result is ready.
"""

from __future__ import annotations

import functools
import math

import baselines
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)  # before any array is made
A0 = baselines.A0  # grad f_i(x) = A0 x

BLOCK = 32  # advance(k): k // BLOCK scans of BLOCK steps, then k % BLOCK scans of one step


class Stencil:
    """W of a circulant topology as ``jnp.roll``s; ``mix(S)`` returns W @ S for S (n, m)."""

    name = "jax"

    def __init__(self, W):
        if not (W.structure and W.structure[0] == "circulant"):
            raise ValueError(f"jax baseline: {W.describe()} is not circulant (no roll stencil)")
        self.shape = tuple(W.structure[1])
        A = W.sparse_part()
        row = A[[0]]  # node 0's neighbours j at offsets unravel(j), weights A[0, j]
        self.terms = tuple((tuple(-int(o) for o in np.unravel_index(j, self.shape)), float(w))
                           for j, w in zip(row.indices, row.data))
        self.beta = W.mean_weight
        v = np.random.default_rng(0).standard_normal((W.n, 1))  # every row the same stencil?
        if not np.allclose(self._apply(np, v), W.matvec(v), rtol=1e-12, atol=1e-12):
            raise ValueError(f"jax baseline: {W.describe()} is not a stencil of its row 0")

    def _apply(self, xp, S):
        G = S.reshape(*self.shape, S.shape[1])
        axes = tuple(range(len(self.shape)))
        M = sum(w * (xp.roll(G, shift, axes) if any(shift) else G) for shift, w in self.terms)
        M = M.reshape(S.shape)
        return M + self.beta * S.mean(axis=0) if self.beta else M

    def __call__(self, S):
        return self._apply(jnp, S)


MIXERS = {Stencil.name: Stencil}


def oracle(n: int, d: int, sigma2: float, structured):
    """grad(X, key) = A0 X + Setup A's or B's noise (none when sigma2 = 0)."""
    scale = math.sqrt(sigma2 / d)
    if not scale:
        return lambda X, key: A0 * X
    if structured is None:
        return lambda X, key: A0 * X + scale * jax.random.normal(key, (n, d))
    (v, u), dv = structured
    v, u = jnp.asarray(v)[:, None], jnp.asarray(u)[:, None]

    def grad(X, key):
        xi = scale * jax.random.normal(key, (d,))
        return A0 * X + jnp.concatenate([v * xi[:dv], u * xi[dv:]], axis=1)

    return grad


# Each algorithm: (mix, grad, gamma) -> init(X0, key) -> state, step(state, key) -> state,
# iterates(state) -> (X, Y or None); one gradient (one key) per step, as in baselines.py.
def tracking(mix, grad, gamma, next_y):
    """GT's and ATC-GT's shape: X' = W (X - gamma Y); G' = g(X'); Y' = next_y(Y, G', G);
    Y(0) = G(0)."""
    def init(X, key):
        G = grad(X, key)
        return X, G, G

    def step(s, key):
        X, Y, G = s
        Xn = mix(X - gamma * Y)
        Gn = grad(Xn, key)
        return Xn, next_y(Y, Gn, G), Gn

    return init, step, lambda s: (s[0], s[1])


def gt(mix, grad, gamma):
    """Gradient Tracking: Y' = W Y + G' - G."""
    return tracking(mix, grad, gamma, lambda Y, Gn, G: mix(Y) + Gn - G)


def dsgd(mix, grad, gamma):
    """D-SGD on Z = X - gamma g(X), the quantity mixed: X' = W Z; Z' = X' - gamma g(X').
    (Mixing X - gamma g(X) within the step, XLA fuses the noise into every roll: 5x slower.)"""
    def step(s, key):
        Xn = mix(s[1])
        return Xn, Xn - gamma * grad(Xn, key)

    return (lambda X, key: (X, X - gamma * grad(X, key)), step, lambda s: (s[0], None))


def d2(mix, grad, gamma):
    """D²: X' = W Z; Z' = 2 X' - X - gamma (G' - G); Z(0) = X(0) - gamma G(0)."""
    def init(X, key):
        G = grad(X, key)
        return X, G, X - gamma * G

    def step(s, key):
        X, G, Z = s
        Xn = mix(Z)
        Gn = grad(Xn, key)
        return Xn, Gn, 2.0 * Xn - X - gamma * (Gn - G)

    return init, step, lambda s: (s[0], None)


def extra(mix, grad, gamma):
    """EXTRA: X' = X + W X - gamma G - H; H' = (X + W X)/2 - gamma G; H(0) = X(0)."""
    def step(s, key):
        X, G, H = s
        WX = mix(X)
        Xn = X + WX - gamma * G - H
        return Xn, grad(Xn, key), 0.5 * (X + WX) - gamma * G

    return lambda X, key: (X, grad(X, key), X), step, lambda s: (s[0], None)


def gt_atc(mix, grad, gamma):
    """ATC-GT: Y' = W (Y + G' - G)."""
    return tracking(mix, grad, gamma, lambda Y, Gn, G: mix(Y + Gn - G))


def centralized(mix, grad, gamma):
    """Every node at xbar: xbar' = mean_i (xbar - gamma g_i(xbar)) (no mixing)."""
    def init(X, key):
        return jnp.broadcast_to(X.mean(axis=0), X.shape)

    def step(X, key):
        return jnp.broadcast_to((X - gamma * grad(X, key)).mean(axis=0), X.shape)

    return init, step, lambda X: (X, None)


ALGORITHMS = {"gt": gt, "dsgd": dsgd, "d2": d2, "extra": extra, "gt_atc": gt_atc,
              "centralized": centralized}
assert ALGORITHMS.keys() == baselines.ALGORITHMS.keys()


class Run:
    """One run: ``advance(steps)`` (blocking), ``iterates()`` as numpy arrays (X, Y or None)."""

    def __init__(self, algorithm: str, mix: Stencil, x0: np.ndarray, gamma: float,
                 sigma2: float, seed: int = 0, structured=None):
        n, d = x0.shape
        init, step, self._iterates = ALGORITHMS[algorithm](mix, oracle(n, d, sigma2, structured),
                                                           gamma)

        def one(carry, _):
            state, key = carry
            key, sub = jax.random.split(key)
            return (step(state, sub), key), None

        @functools.partial(jax.jit, static_argnames="length")
        def scan_blocks(carry, blocks, length):
            return lax.fori_loop(0, blocks,
                                 lambda _, c: lax.scan(one, c, None, length=length)[0], carry)

        self._run = scan_blocks
        key, sub = jax.random.split(jax.random.key(seed))
        self.carry = (init(jnp.asarray(x0, dtype=jnp.float64), sub), key)
        self.advance(0)  # compiles

    def advance(self, steps: int) -> None:
        c = self._run(self.carry, steps // BLOCK, length=BLOCK)
        self.carry = jax.block_until_ready(self._run(c, steps % BLOCK, length=1))

    def iterates(self):
        return tuple(None if a is None else np.asarray(a) for a in self._iterates(self.carry[0]))


def make(algorithm: str, mix: Stencil, x0: np.ndarray, gamma: float, sigma2: float,
         seed: int = 0, structured=None) -> Run:
    """As baselines.make, with mix a Stencil."""
    return Run(algorithm, mix, x0, gamma, sigma2, seed, structured)
