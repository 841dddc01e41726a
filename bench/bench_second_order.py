"""D² and EXTRA against D-SGD (Setup B, ring, 1 thread): fastgt's steps beside bare loops.

    python bench/bench_second_order.py [--n 300,3000] [--d 100] [--repeats 9]

Issue 15 asks D² and EXTRA, which mix one array as D-SGD does, for at most 1.3x D-SGD's
step. Their recursions are of second order: a step reads and writes one more n x d array
(D²'s X(t), EXTRA's history H) besides the mixed one, 2 more streams against D-SGD's 2
(the mixed array read, its next buffer written). Timed in one process, taking turns:

- fastgt: D-SGD, D² and EXTRA through their algorithm specs (bench_steps.FastgtRun: no
  metrics), Setup B (structured noise), on the ring, in passes of temporal blocking where
  the engine plans them;
- bare: plain numba loops of each step's arithmetic on the ring, written as a researcher
  would with the engine's layout (the mixed array double-buffered, one shared noise row
  per step, a node's noise weight) and nothing else: no CSR indices, no mean term, no
  engine, no temporal blocking. Their ratio is what that layout costs on this machine.

Reports ns per node-dimension-step (median of interleaved repeats) and each algorithm's
ratio to D-SGD, fastgt's and the bare loops'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_steps
import common

ALGORITHMS = ("dsgd", "d2", "extra")


def bare_steps():
    """Each algorithm's step as one plain loop over rows and coordinates: the ring's mixed
    value m of coordinate k of row i, then the algorithm's update of that coordinate
    (inlined: the loop is as if written out)."""
    from numba import njit

    from fastgt.config import BLOCK_FLAGS, INLINE_FLAGS

    @njit(**INLINE_FLAGS)
    def dsgd(Z, Zn, X, H, N, v, i, k, m, a0, gamma):
        Zn[i, k] = m - gamma * (a0 * m + N[0, k] * v[i])

    @njit(**INLINE_FLAGS)
    def d2(Z, Zn, X, H, N, v, i, k, m, a0, gamma):
        xp = X[i, k]
        g, gp = a0 * m + N[0, k] * v[i], a0 * xp + N[1, k] * v[i]
        Zn[i, k] = 2.0 * m - xp - gamma * (g - gp)
        X[i, k] = m

    @njit(**INLINE_FLAGS)
    def extra(Z, Zn, X, H, N, v, i, k, m, a0, gamma):
        x = Z[i, k]
        g = a0 * x + N[1, k] * v[i]
        Zn[i, k] = x + m - gamma * g - H[i, k]
        H[i, k] = 0.5 * (x + m) - gamma * g

    @njit(**BLOCK_FLAGS)
    def steps_of(update, Z, Zn, X, H, N, v, w, a0, gamma, steps):
        n, d = Z.shape
        for _ in range(steps):
            for i in range(n):
                left, right = (i - 1) % n, (i + 1) % n
                for k in range(d):
                    m = w * Z[left, k] + w * Z[i, k] + w * Z[right, k]
                    update(Z, Zn, X, H, N, v, i, k, m, a0, gamma)
            Z, Zn = Zn, Z

    return steps_of, {"dsgd": dsgd, "d2": d2, "extra": extra}


def advances(n: int, d: int) -> dict:
    """(engine, algorithm) -> advance(steps), fastgt's and the bare loops'."""
    W = bench_steps.build_topology("ring", n)
    g = np.random.default_rng(1)
    x0 = g.standard_normal((n, d))
    out = {}
    for algo in ALGORITHMS:
        run = bench_steps.FastgtRun(algo, W, x0, bench_steps.stepsize("B"),
                                    bench_steps.VARIANCE["B"], setup="B")
        out["fastgt", algo] = run.advance
    steps_of, updates = bare_steps()
    state = [x0.copy(), x0.copy(), x0.copy(), np.zeros((n, d)), g.standard_normal((2, d)),
             g.uniform(0.5, 1.5, n)]
    for algo, update in updates.items():
        arrays = [a.copy() for a in state]
        out["bare", algo] = (lambda k, update=update, arrays=arrays: steps_of(
            update, *arrays, 1 / 3, 1.0, bench_steps.stepsize("B"), k))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=common.int_list, default=[300, 3000])
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--target-s", type=float, default=0.2, help="seconds per timed block")
    args = ap.parse_args()
    import numba

    numba.set_num_threads(1)
    print(common.machine_line(common.machine_info()))
    rows = []
    for n in args.n:
        runs = advances(n, args.d)
        for f in runs.values():  # compiled (or loaded) before the calibration
            f(1)
        steps = {key: common.steps_for(f, args.target_s) for key, f in runs.items()}
        ns = {key: [] for key in runs}
        for _ in range(args.repeats):
            for key, f in runs.items():
                t = time.perf_counter()
                f(steps[key])
                ns[key].append((time.perf_counter() - t) / steps[key] / (n * args.d) * 1e9)
        med = {key: statistics.median(v) for key, v in ns.items()}
        for algo in ALGORITHMS:
            rows.append([str(n), algo, *(f"{med[e, algo]:.3f}" for e in ("fastgt", "bare")),
                         *(f"{med[e, algo] / med[e, 'dsgd']:.2f}" for e in ("fastgt", "bare"))])
        print(f"done n={n}", file=sys.stderr, flush=True)
    print(common.markdown_table(["n", "algorithm", "fastgt ns", "bare ns", "fastgt / D-SGD",
                                 "bare / D-SGD"], rows))


if __name__ == "__main__":
    main()
