"""Random maximal matchings drawn inside the step kernels, one per step, never stored.

Step t of a run with seed s pairs the nodes by a pseudo-random permutation pi of [0, n)
keyed by (s, t): the nodes at positions 2m and 2m + 1 of pi are partners, and with n odd
the node at position n - 1 has none. Node i finds its partner alone, in O(1):

    partner(i) = pi(pi^-1(i) XOR 1)   (i itself when pi^-1(i) XOR 1 >= n)

so every row of every thread computes its own, and the matching is a pure function of
(seed, step, n): the same bits on any thread count, nothing drawn ahead or kept.

pi is a balanced Feistel network of ROUNDS rounds on 2h-bit words (4^h >= n, h >= 3)
restricted to [0, n) by cycle walking (apply it again while the result is >= n: a
permutation of [0, n) whose inverse walks the inverse network; at most 4 walks on
average from n = 64 on, more below). Round r maps the halves (L, R) to (R, L XOR F_r(R)),
F_r(R) the low h bits of SplitMix64's output function of R XOR (k + (r + 1) GOLDEN), k the
run seed's matching stream at step t. Small words need both the floor on h and 6 rounds:
with 4 rounds, or 1- and 2-bit halves, the matchings of n = 4..8 nodes were measurably
far from uniform (chi-square p < 1e-20); with these, the matchings of small n pass a
uniformity test over all matchings, and the pairs of larger n one over all pairs
(tests/topology/test_varying.py). pi is still not a uniform draw among the n!
permutations: a pseudo-random one. tests/reference.py has an independent version.
"""

import numpy as np
from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS
from .rng import GOLDEN, mix64, step_key, stream_key

STREAM_MATCHING = 2
ROUNDS = 6


@njit(**INLINE_FLAGS)
def half_bits(n):
    """h: the smallest h >= 3 with 4^h >= n."""
    h = 3
    while np.int64(1) << np.int64(2 * h) < n:
        h += 1
    return h


@njit(**INLINE_FLAGS)
def matching_key(seed, t):
    """The key k of step t's matching in the run with this seed."""
    return step_key(stream_key(seed, STREAM_MATCHING), t)


@njit(**INLINE_FLAGS)
def _f(x, k, r, mask):
    return np.int64(mix64(np.uint64(x) ^ (k + np.uint64(r + 1) * GOLDEN)) & np.uint64(mask))


@njit(**INLINE_FLAGS)
def _forward(x, key, h, mask):
    lo, hi = x & mask, x >> h
    for r in range(ROUNDS):
        lo, hi = hi ^ _f(lo, key, r, mask), lo
    return (hi << h) | lo


@njit(**INLINE_FLAGS)
def _backward(y, key, h, mask):
    lo, hi = y & mask, y >> h
    for r in range(ROUNDS - 1, -1, -1):
        hi, lo = lo ^ _f(hi, key, r, mask), hi
    return (hi << h) | lo


@njit(**INLINE_FLAGS)
def partner(key, i, n, h):
    """Node i's partner in the matching with this key (i when unmatched)."""
    mask = (np.int64(1) << h) - 1
    pos = _backward(i, key, h, mask)
    while pos >= n:
        pos = _backward(pos, key, h, mask)
    mate = pos ^ 1
    if mate >= n:
        return i
    j = _forward(mate, key, h, mask)
    while j >= n:
        j = _forward(j, key, h, mask)
    return j


@njit(**NJIT_FLAGS)
def partners(seed, t, n):
    """Every node's partner at step t of the run with this seed (for references and
    tests; the kernels draw each row's own)."""
    key, h = matching_key(seed, t), half_bits(n)
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = partner(key, i, n, h)
    return out
