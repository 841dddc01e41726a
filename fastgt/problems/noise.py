"""Gradient noise models, chosen per run: none, gaussian (Setup A), structured (Setup B)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import FastGTError, check_choice, check_float
from ..kernels.oracles import GAUSSIAN, NONE, STRUCTURED, stochastic_grads
from .quadratic import KERNELS, QuadData

#: noise name -> the additive noise kind of the kernels. ``full`` is ``none`` (the exact
#: local gradients); ``minibatch`` draws the gradient from batch_size of the node's rows
#: (problems with data: problems/samples.py), ``minibatch+gaussian`` adds Setup A's noise
NOISES = {"none": NONE, "gaussian": GAUSSIAN, "structured": STRUCTURED, "full": NONE,
          "minibatch": NONE, "minibatch+gaussian": GAUSSIAN}


@dataclass(eq=False)
class Noise:
    """Kernel-ready noise description. In both noisy models (1/n) sum_i E||noise_i||^2 = sigma2.

    structured: one xi ~ N(0, sigma2/d I_d) per step; coordinate k < ceil(d/2) of node i gets
    xi_k v_i, the others xi_k u_i, with v (lambda_n) and u (lambda2) eigenvectors of W scaled
    to norm sqrt(n).
    """

    name: str
    kind: int
    sigma2: float
    scale: float  # sqrt(sigma2 / d)
    uv: np.ndarray  # (2, n): v, u scaled to norm sqrt(n) (structured); (2, 1) otherwise
    dv: int  # coordinates k < dv follow v


def check_noise_topology(name: str, W) -> None:
    """One-line FastGTError unless noise ``name`` can run on topology W."""
    if NOISES[name] == STRUCTURED and not W.static:
        raise FastGTError(f"noise='structured' follows W's extreme eigenvectors: it needs a "
                          f"static topology, not {W.name}; allowed noise: none, gaussian")


def make_noise(name: str, sigma2: float, d: int, W) -> Noise:
    check_choice("noise", name, tuple(NOISES))
    sigma2 = check_float("sigma2", sigma2, 0.0)
    kind = NOISES[name]  # sigma2 = 0 keeps the kind (scale 0): cells of a batch may differ in sigma2
    uv = np.zeros((2, 1))
    check_noise_topology(name, W)
    if kind == STRUCTURED:
        sp = W.spectrum(vectors=True)
        uv = np.ascontiguousarray(np.stack([sp.v, sp.u]) * math.sqrt(W.n))
    return Noise(name, kind, sigma2, math.sqrt(sigma2 / d), uv, (d + 1) // 2)


def noise_matrix(noise: Noise, seed: int, t: int, n: int, d: int) -> np.ndarray:
    """The exact (n, d) gradient noise fastgt draws at step t (for references and tests):
    the gradients of the zero quadratic."""
    E = np.empty((n, d))
    dummy = np.zeros((1, 1))
    grads = KERNELS.compile((stochastic_grads,)).stochastic_grads
    grads(t, np.zeros((n, d)), E, np.zeros((1, d)), np.zeros((1, d)), int(seed), noise.kind,
          noise.scale, np.zeros((1, d)), noise.uv[None], noise.dv, d,
          QuadData(False, 0.0, dummy, dummy))
    return E
