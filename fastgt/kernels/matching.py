"""Random maximal matchings drawn inside the step kernels, one per step, never kept.

Step t of a run with seed s pairs the nodes by a uniformly random permutation pi of
[0, n), drawn by Fisher-Yates from the counter-based stream of (s, t) (rng.uniform_index:
draw i of the step's matching key picks the position node i swaps with): the nodes at positions
2m and 2m + 1 of pi are partners, and with n odd the node at position n - 1 has none.
The matching is thus a pure function of (seed, step, n), uniform over all maximal
matchings (but for uniform_index's bias, below m / 2^52): the same bits on any thread
count and in batches.

A cell's matching is drawn at the start of its step by the thread that owns the cell, into
the cell's workspace (the permutation, then the CSR columns every row reads), overwritten
at the next step. The rejected alternative, each row finding its own partner through a
keyed Feistel permutation (pi(pi^-1(i) XOR 1), no workspace), measured 1.3-1.4x the ring's
step at n = 300, d = 100 (20 hashes and two cycle walks per row), and a 4-round network
was measurably non-uniform on small n; the shuffle costs a few ns per node and is exact.
tests/reference.py has an independent version.
"""

import numpy as np
from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS
from .rng import step_key, stream_key, uniform_index

STREAM_MATCHING = 2


@njit(**SCALAR_FLAGS)
def matching_key(seed, t):
    """The key of step t's matching in the run with this seed."""
    return step_key(stream_key(seed, STREAM_MATCHING), t)


@njit(**INLINE_FLAGS)
def draw_matching(key, perm, cols, n):
    """The matching with this key: perm (n,) the permutation drawn by Fisher-Yates (its
    inside-out form: position i takes a uniform j in [0, i], node i goes to j), cols
    (3 n,) the CSR columns of its rows, (i, j, j) for node i and its partner j (i itself
    when unmatched), for the weights (self, partner, 0)."""
    for i in range(n):  # "inside-out": no pass to set perm = identity first
        j = uniform_index(key, i, i + 1)
        perm[i] = perm[j]
        perm[j] = i
    for m in range(0, n, 2):
        a = perm[m]
        # n odd: the last node is unmatched, written here (as its own partner): a separate
        # block after the loop lost its stores once inlined in run_steps's parallel loop
        # (numba 0.68; the twin tests caught it)
        b = perm[m + 1] if m + 1 < n else a
        cols[3 * a] = a
        cols[3 * a + 1] = b
        cols[3 * a + 2] = b
        cols[3 * b] = b
        cols[3 * b + 1] = a
        cols[3 * b + 2] = a


@njit(**NJIT_FLAGS)
def partners(seed, t, n):
    """Every node's partner at step t of the run with this seed (for references and
    tests; the kernels draw into a cell's workspace)."""
    perm = np.empty(n, dtype=np.int64)
    cols = np.empty(3 * n, dtype=np.int64)
    draw_matching(matching_key(seed, t), perm, cols, n)
    return cols[1::3].copy()
