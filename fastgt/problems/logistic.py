"""Logistic regression on node-local data:
f_i(x) = 1/m_i sum_j log(1 + exp(-y_ij a_ij^T x)) + reg/2 ||x||^2, labels +-1."""

from __future__ import annotations

from .samples import LABEL_NOISE, SAMPLES, SPLIT_ALPHA, SampleProblem, build


def logistic(n: int, d: int, data: str = "synthetic", samples: int = SAMPLES, split: str = "iid",
             split_alpha: float = SPLIT_ALPHA, batch_size: int = 1, reg: float = 0.01,
             label_noise: float = LABEL_NOISE, seed: int = 0) -> SampleProblem:
    """Node i's labelled rows of a data set split across the nodes (``split``: iid,
    dirichlet with ``split_alpha``, sorted by label). ``data="synthetic"``: ``samples`` rows
    per node, a ~ N(0, I/d), y = sign(a^T x_planted) flipped with probability
    ``label_noise``; or a LIBSVM / .npz / .parquet file with two classes (the smaller label
    becomes -1; d is the file's). ``batch_size``: rows per gradient under
    noise="minibatch"."""
    return build("logistic", n, d, "logistic", "l2", data, samples, split, split_alpha,
                 batch_size, reg, label_noise, seed)


PROBLEMS = {"logistic": logistic}
