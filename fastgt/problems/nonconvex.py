"""Logistic loss with the non-convex regularizer:
f_i(x) = 1/m_i sum_j log(1 + exp(-y_ij a_ij^T x)) + reg sum_k x_k^2 / (1 + x_k^2)."""

from __future__ import annotations

from .samples import LABEL_NOISE, SAMPLES, SPLIT_ALPHA, SampleProblem, build


def nonconvex(n: int, d: int, data: str = "synthetic", samples: int = SAMPLES, split: str = "iid",
              split_alpha: float = SPLIT_ALPHA, batch_size: int = 1, reg: float = 0.01,
              label_noise: float = LABEL_NOISE, seed: int = 0) -> SampleProblem:
    """The usual non-convex benchmark (grad_norm2 is its metric); data, split and batch as
    for logistic. x* and f*: the local minimizer the centralized solver reaches from 0."""
    return build("nonconvex", n, d, "logistic", "nonconvex", data, samples, split,
                 split_alpha, batch_size, reg, label_noise, seed)


PROBLEMS = {"nonconvex": nonconvex}
