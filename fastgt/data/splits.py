"""Splits of a data set's rows across n nodes; every node gets at least one row.

- ``iid``: a uniform shuffle cut into n near-equal parts;
- ``dirichlet`` (label skew, the standard non-IID protocol): for each class c, shares
  q_c ~ Dirichlet(alpha 1_n) and node i gets about q_ci of the class's (shuffled) rows;
  smaller alpha, more skew. A node left empty takes one row from the largest node;
- ``sorted``: rows sorted by label, cut into n near-equal contiguous parts (the
  pathological split: most nodes see one class).

Classes are the distinct labels (classification), or, for real-valued targets, their
deciles (at most 10 bins of equal count).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..errors import FastGTError, check_choice, check_float

SPLITS = ("iid", "dirichlet", "sorted")
#: bins of real-valued targets for the class histogram and the dirichlet split
TARGET_BINS = 10


@dataclass(frozen=True)
class NodeSplit:
    """Node i holds rows ``order[offsets[i]:offsets[i + 1]]`` of the data set;
    ``counts[i, c]`` of them are of class ``classes[c]`` (class c: the c-th decile bin of
    real-valued targets)."""

    order: np.ndarray
    offsets: np.ndarray
    classes: np.ndarray
    counts: np.ndarray


def classes_of(y: np.ndarray, classification: bool) -> tuple[np.ndarray, np.ndarray]:
    """(class names, class index of each row)."""
    if classification:
        names, idx = np.unique(y, return_inverse=True)
        return names, idx
    bins = min(TARGET_BINS, len(y))
    edges = np.quantile(y, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    idx = np.searchsorted(edges, y, side="right")
    return np.arange(bins, dtype=np.float64), idx


def split_rows(y: np.ndarray, n: int, how: str, alpha: float, classification: bool,
               rng: np.random.Generator) -> NodeSplit:
    check_choice("split", how, SPLITS)
    alpha = check_float("split_alpha", alpha, 0.0, lo_open=True)
    rows = len(y)
    if rows < n:
        raise FastGTError(f"the data have {rows} rows for n={n} nodes: allowed n <= rows "
                          "(every node needs a sample)")
    names, cls = classes_of(y, classification)
    perm = rng.permutation(rows)
    if how == "iid":
        node = _even(rows, n)[np.argsort(perm)]
    elif how == "sorted":
        node = np.empty(rows, dtype=np.int64)
        node[perm[np.argsort(cls[perm], kind="stable")]] = _even(rows, n)
    else:
        node = _dirichlet(cls[perm], len(names), n, alpha, rng)[np.argsort(perm)]
    order = np.argsort(node, kind="stable")
    sizes = np.bincount(node, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    counts = np.zeros((n, len(names)), dtype=np.int64)
    np.add.at(counts, (node, cls), 1)
    return NodeSplit(order, offsets, names, counts)


def _even(rows: int, n: int) -> np.ndarray:
    """Node of each of ``rows`` positions: n contiguous near-equal parts."""
    return (np.arange(rows, dtype=np.int64) * n) // rows


def _dirichlet(cls: np.ndarray, k: int, n: int, alpha: float,
               rng: np.random.Generator) -> np.ndarray:
    """Node of each row (rows in the shuffled order): per class, Dirichlet shares."""
    node = np.empty(len(cls), dtype=np.int64)
    for c in range(k):
        where = np.flatnonzero(cls == c)
        share = rng.dirichlet(np.full(n, alpha))
        cuts = np.minimum(np.floor(np.cumsum(share) * len(where)), len(where)).astype(np.int64)
        node[where] = np.searchsorted(cuts, np.arange(len(where)), side="right")
    np.minimum(node, n - 1, out=node)
    _fill_empty(node, n)
    return node


def _fill_empty(node: np.ndarray, n: int) -> None:
    """Each empty node takes one row (the last) of the currently largest node."""
    sizes = np.bincount(node, minlength=n)
    empty = np.flatnonzero(sizes == 0)
    if not len(empty):
        return
    rows_of = {}
    heap = [(-int(s), int(i)) for i, s in enumerate(sizes) if s > 1]
    heapq.heapify(heap)
    for e in empty:
        s, donor = heapq.heappop(heap)
        if donor not in rows_of:
            rows_of[donor] = list(np.flatnonzero(node == donor))
        node[rows_of[donor].pop()] = e
        if -s - 1 > 1:
            heapq.heappush(heap, (s + 1, donor))
