"""What an algorithm spec is, and the arrays every kernel call shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import FastGTError, bad
from ..kernels.mixing import n_blocks
from ..kernels.oracles import normal_matrix
from ..kernels.rng import STREAM_X0


def initial_point(out: np.ndarray, x0, seed: int) -> None:
    """out = x0, or i.i.d. N(0, 1) entries from the run seed's own stream when x0 is None."""
    if x0 is None:
        normal_matrix(seed, STREAM_X0, out, 1.0)
        return
    try:
        x0 = np.asarray(x0, dtype=np.float64)
    except (TypeError, ValueError):
        raise bad("x0", x0, "an (n, d) array of numbers") from None
    if x0.shape != out.shape:
        raise FastGTError(f"x0 has shape {x0.shape}: allowed (n, d) = {out.shape}")
    if not np.all(np.isfinite(x0)):
        raise FastGTError("x0 must be finite")
    out[...] = x0


@dataclass(eq=False)
class Context:
    """Everything fixed during a run: mixing, oracle and noise arrays, stepsize, scratch."""

    W: object  # MixingMatrix
    problem: object  # DiagonalQuadratic
    noise: object  # Noise
    gamma: float
    seed: int

    def __post_init__(self):
        n, d = self.W.n, self.problem.d
        nb = int(n_blocks(n))
        self.scratch = np.zeros((nb, d))  # per-block gradient row
        self.part = np.zeros((nb, 2, d))  # per-block column sums
        self.means = np.zeros((2, d))  # column means of the mixed quantities

    @property
    def mixing_args(self) -> tuple:
        W = self.W
        return (W.indptr, W.indices, W.weights, float(W.mean_weight), float(self.gamma))

    @property
    def oracle_args(self) -> tuple:
        return self.noise.kernel_args(self.seed) + self.problem.kernel_args()


@dataclass(frozen=True)
class Algorithm:
    """An algorithm spec (the optax pattern): how to set up state and advance it.

    - ``init(ctx, x0) -> state`` (a dict of arrays, t = 0 done: initial gradients drawn)
    - ``advance(ctx, state, t0, steps)`` runs steps t0 -> t0 + steps in compiled code
    - ``iterates(state) -> (X, Y or None)`` what the metrics read (Y: tracking variable)
    The update equation is in the module docstring of each algorithm.
    """

    name: str
    init: Callable
    advance: Callable
    iterates: Callable
    tracking: bool
    doc: str
