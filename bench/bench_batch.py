"""Small cells in bulk: throughput of run_batch against one cell at a time.

    python bench/bench_batch.py [--cells 16] [--n 300] [--d 100] [--steps 2000] [--repeats 3]

A 16-cell sweep (GT, interp_ring with 16 alphas, Setup A): cells per second when each cell
is a separate fastgt.run (all threads, then 1 thread), and when run_batch advances them
together (threads over cells, then over row blocks). Medians of --repeats, interleaved; the
ratio is against "one at a time, all threads", measured in the same process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np

import fastgt
from fastgt.runner import run_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import limits


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=16)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    alphas = np.linspace(0.5, 0.999, a.cells)
    cells = [{"topology": fastgt.topology("interp_ring", n=a.n, alpha=float(al)), "seed": i}
             for i, al in enumerate(alphas)]
    kw = {"algorithm": "gt", "d": a.d, "steps": a.steps, "record_every": 100}
    threads = numba.config.NUMBA_NUM_THREADS
    ways = {
        f"one at a time, {threads} threads": lambda: [fastgt.run(threads=threads, **kw, **c)
                                                      for c in cells],
        "one at a time, 1 thread": lambda: [fastgt.run(threads=1, **kw, **c) for c in cells],
        f"run_batch, {threads} threads over cells": lambda: run_batch(
            cells, parallel="cells", threads=threads, **kw),
        f"run_batch, {threads} threads over blocks": lambda: run_batch(
            cells, parallel="blocks", threads=threads, **kw),
    }
    run_batch(cells[:2], **{**kw, "steps": 2})  # compile / load
    res = {}
    for _ in range(a.repeats):  # interleaved: a change of load hits every variant alike
        for name, f in ways.items():
            t = time.perf_counter()
            f()
            res.setdefault(name, []).append(time.perf_counter() - t)
    base = a.cells / np.median(next(iter(res.values())))
    bounds = {k: limits.bound(limits.measure(k), "gt", a.n, a.d)["bound_serial"]
              for k in {1, threads}}
    print(f"{a.cells} cells, GT, interp_ring n={a.n}, d={a.d}, {a.steps} steps, "
          f"median of {a.repeats}")
    print("| schedule | cells/s | ns per node-dim-step | / bound | ratio |")
    print("|---|---|---|---|---|")
    for name, ts in res.items():
        rate = a.cells / np.median(ts)
        ns = 1e9 / (rate * a.n * a.d * a.steps)
        bound = bounds[1 if "1 thread" in name else threads]
        print(f"| {name} | {rate:.2f} | {ns:.2f} | {ns / bound:.2f} | {rate / base:.2f}x |")
    print(f"bound: bench/limits.py's no-overlap bound for a GT step at n={a.n}, d={a.d} "
          f"(1 thread {bounds[1]:.2f} ns, {threads} threads {bounds[threads]:.2f} ns)")


if __name__ == "__main__":
    main()
