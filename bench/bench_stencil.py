"""Structured stencils against CSR: does mixing a ring or torus by fixed offsets pay?

    python bench/bench_stencil.py [--n 300,3000,30000] [--d 100] [--repeats 9]

One mixing sweep X' = W X over every row, 1 thread, two ways in the same process, taking
turns in every repeat:

- csr: fastgt's row mixing (kernels/mixing.py: mix_row), neighbours read from the CSR
  indices of each row, as every step kernel does;
- offsets: the fixed-offset twin a structured-stencil path would be: a row whose
  neighbours do not wrap takes its columns as i + offset (no index loads, the weights of
  an inner row held in registers), a row at the wrap takes mix_row; the same entry order,
  so the same bits (checked before timing);
- copy: X' = X, one read and one write of every element: the floor of any step that
  reads the state and writes it anew, at that size (in L1 at n = 8, in L2 at n = 300).

All are compiled as the engine's block functions are (config.BLOCK_FLAGS: without
numba's reference counting, which at a helper call per row costs more than the row: the
CSR sweep took 3x the time with it). Reports ns per node-dimension (median and min),
csr / offsets (> 1: the offsets are faster) and csr / copy. Issue 18's item 2 asked for
such a path; this is the measurement that decides whether the engine carries it
(docs/performance.md, "Structured stencils").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common


def kernels():
    from numba import njit

    from fastgt.config import BLOCK_FLAGS
    from fastgt.kernels.mixing import mix_row

    @njit(**BLOCK_FLAGS)
    def by_csr(out, X, indptr, indices, w, beta, mean, reps):
        for _ in range(reps):
            for i in range(X.shape[0]):
                mix_row(out, i, X, indptr, indices, w, beta, mean, 0)

    @njit(**BLOCK_FLAGS)
    def by_offsets(out, X, indptr, indices, w, beta, mean, inner, offs, wo, reps):
        d = X.shape[1]
        o0, o1, o2, v0, v1, v2 = offs[0], offs[1], offs[2], wo[0], wo[1], wo[2]
        five = offs.shape[0] == 5
        o3, o4 = offs[3 % offs.shape[0]], offs[4 % offs.shape[0]]
        v3, v4 = wo[3 % offs.shape[0]], wo[4 % offs.shape[0]]
        for _ in range(reps):
            for i in range(X.shape[0]):
                if not inner[i]:
                    mix_row(out, i, X, indptr, indices, w, beta, mean, 0)
                elif five:
                    for k in range(d):
                        out[i, k] = (v0 * X[i + o0, k] + beta * mean[k] + v1 * X[i + o1, k]
                                     + v2 * X[i + o2, k] + v3 * X[i + o3, k] + v4 * X[i + o4, k])
                else:
                    for k in range(d):
                        out[i, k] = (v0 * X[i + o0, k] + beta * mean[k] + v1 * X[i + o1, k]
                                     + v2 * X[i + o2, k])

    @njit(**BLOCK_FLAGS)
    def copy(out, X, reps):
        for _ in range(reps):
            for i in range(X.shape[0]):
                for k in range(X.shape[1]):
                    out[i, k] = X[i, k]

    return by_csr, by_offsets, copy


def case(name: str, n: int):
    """The matrix, the rows whose neighbours do not wrap, their offsets and weights."""
    import fastgt

    if name == "ring":
        W = fastgt.topology("ring", n=n)
        inner = np.zeros(n, bool)
        inner[1:-1] = True
        cols = 1
    else:
        side = round(n ** 0.5)
        W = fastgt.topology("torus", rows=side, cols=-(-n // side))
        rows, cols = W.params["rows"], W.params["cols"]
        r, c = np.divmod(np.arange(W.n), cols)
        inner = (r > 0) & (r < rows - 1) & (c > 0) & (c < cols - 1)
    i = int(np.flatnonzero(inner)[0])
    e = slice(W.indptr[i], W.indptr[i + 1])
    offs = (W.indices[e] - i).astype(np.int64)
    assert (np.abs(offs) <= cols).all()
    return W, inner, offs, W.weights[e].astype(np.float64)


def timed(kernels, name: str, n: int, d: int, repeats: int, target_s: float):
    """ns per node-dimension of each way's sweeps (repeats interleaved), the bits checked."""
    W, inner, offs, wo = case(name, n)
    dp = -(-d // 8) * 8  # rows padded to whole cache lines, as the engine's
    X = np.random.default_rng(0).standard_normal((W.n, dp))
    mean = np.zeros(dp)
    ip, ix, w = W.indptr.astype(np.int64), W.indices.astype(np.int64), W.weights
    by_csr, by_offsets, copy = kernels
    outs = [np.empty_like(X) for _ in range(3)]
    run = {"csr": lambda r: by_csr(outs[0], X, ip, ix, w, 0.0, mean, r),
           "offsets": lambda r: by_offsets(outs[1], X, ip, ix, w, 0.0, mean, inner, offs, wo,
                                           r),
           "copy": lambda r: copy(outs[2], X, r)}
    for f in run.values():
        f(1)
    if not np.array_equal(outs[0], outs[1]):
        raise SystemExit(f"{name} n={n}: the offsets' sweep differs from CSR's")
    reps = common.steps_for(run["csr"], target_s)
    secs = {k: [] for k in run}
    for _ in range(repeats):
        for k, f in run.items():
            t = time.perf_counter()
            f(reps)
            secs[k].append((time.perf_counter() - t) / reps / (W.n * d) * 1e9)
    return W.n, len(offs), secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=common.int_list, default=[300, 3000, 30000])
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--target-s", type=float, default=0.1, help="seconds per timed block")
    args = ap.parse_args()

    import numba

    numba.set_num_threads(1)
    compiled = kernels()
    rows = []
    for name in ("ring", "torus"):
        for n in args.n:
            n, entries, secs = timed(compiled, name, n, args.d, args.repeats,
                                     args.target_s)
            med = {k: statistics.median(v) for k, v in secs.items()}
            rows.append([name, str(n), str(entries)]
                        + [f"{med[k]:.3f} ({min(v):.3f})" for k, v in secs.items()]
                        + [f"{med['csr'] / med['offsets']:.2f}x",
                           f"{med['csr'] / med['copy']:.2f}x"])
    print(common.machine_line(common.machine_info()) + f"numba {numba.__version__}\n")
    print(common.markdown_table(["topology", "n", "entries per row", "csr ns", "offsets ns",
                                 "copy ns", "csr / offsets", "csr / copy"], rows))
    print(f"\nns = nanoseconds per node-dimension of one mixing sweep, d = {args.d}, 1 thread: "
          f"median (min) of {args.repeats} interleaved repeats.")


if __name__ == "__main__":
    main()
