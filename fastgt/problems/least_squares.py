"""Least squares on node-local data: f_i(x) = 1/(2 m_i) ||A_i x - b_i||^2 + reg/2 ||x||^2."""

from __future__ import annotations

from .samples import LABEL_NOISE, SAMPLES, SPLIT_ALPHA, SampleProblem, build


def least_squares(n: int, d: int, data: str = "synthetic", samples: int = SAMPLES,
                  split: str = "iid", split_alpha: float = SPLIT_ALPHA, batch_size: int = 1,
                  reg: float = 0.0, label_noise: float = LABEL_NOISE,
                  seed: int = 0) -> SampleProblem:
    """Node i's rows (A_i, b_i) of a data set split across the nodes (``split``: iid,
    dirichlet with ``split_alpha`` on the deciles of b, sorted). ``data="synthetic"``:
    ``samples`` rows per node, a ~ N(0, I/d), b = a^T x_planted + N(0, label_noise^2); or a
    LIBSVM / .npz / .parquet file (then d is the file's). ``batch_size``: rows per
    gradient under noise="minibatch"."""
    return build("least_squares", n, d, "squared", "l2", data, samples, split, split_alpha,
                 batch_size, reg, label_noise, seed)


PROBLEMS = {"least_squares": least_squares}
