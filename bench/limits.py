"""The machine's limits for a GT / D-SGD step: normal-variate throughput and memory bandwidth.

    python bench/limits.py [--n 300,3000,30000,300000] [--d 100] [--json limits.json]

Prints, per thread count, ns per normal (fastgt's counter-based generator and numpy's
PCG64), streaming triad bandwidth, and the per-element lower bound of a step:

    GT    reads X, Y, G and writes X', Y', G   (48 bytes / element) + one normal
          with structured or no noise, no G    (32 bytes / element)
    D-SGD reads Z and writes Z'                 (16 bytes / element) + one normal

bound_overlap = max(bytes / bandwidth, t_normal)   (perfect overlap of memory and compute)
bound_serial  = bytes / bandwidth + t_normal        (no overlap)
When the state fits in the last-level cache (small n) the memory term is dropped: the
generator is the bound (the benches' "/ bound"). bound_cached counts that state's traffic
too, at the triad bandwidth of a working set a third of the cache it fits in, the L2s of
the threads (``l2_triad_GBps``) or the last-level cache (``cache_triad_GBps``): the
no-overlap bound of a step whose state streams from there. Other benches import
`measure()` and `bound()` from here.
"""

from __future__ import annotations

import argparse
import json

import common
import numba
import numpy as np
from numba import njit, prange

from fastgt.kernels.rng import fill_padded, row_key, step_key, stream_key

try:  # older revisions for the benches' --against REF: llc_bytes in kernels/temporal.py
    from fastgt.memory import llc_bytes  # before 82eb5c7; cache_sizes since 2026-11-28
except ImportError:
    from fastgt.kernels.temporal import llc_bytes
try:
    from fastgt.memory import cache_sizes
except ImportError:
    def cache_sizes():
        return {}

#: bytes streamed per element and step: each state array read and/or written once (ATC-GT:
#: two passes; centralized: D-SGD's)
BYTES = {"gt": 48, "dsgd": 16, "d2": 48, "extra": 48, "gt_atc": 88, "centralized": 16}
G_BYTES = 16  # GT's G, read and written: kept for gaussian noise only
#: treat states below this as cache resident: the machine's last-level cache (fastgt's own
#: reading of it, fastgt/memory.py), 32 MB where the system does not say
LLC_BYTES = llc_bytes() or 32 * 2**20
#: a core's L2 (1 MB where the system does not say)
L2_BYTES = cache_sizes().get(2, 2**20)


@njit(parallel=True, cache=True)
def _normals(out, rows, parts, seed):
    """``rows`` rows of normals, each thread writing them into its own few rows of ``out``
    (cache resident: this measures the generator, not the memory it would write to), drawn
    as the step kernels draw a node's row (fill_padded, inlined: no call per row)."""
    tkey = step_key(stream_key(seed, 0), 0)
    own = out.shape[0] // parts
    per = -(-rows // parts)
    for p in prange(parts):
        for i in range(p * per, min(rows, (p + 1) * per)):
            fill_padded(row_key(tkey, i), out, p * own + i % own, 1.0, out.shape[1])


@njit(cache=True, fastmath={"contract"})
def _triad_slice(a, b, c, s, reps):
    for _ in range(reps):
        for i in range(a.shape[0]):
            a[i] = b[i] + s * c[i]


@njit(parallel=True, cache=True)
def _triad(a, b, c, s, reps, parts):
    """a = b + s c, ``reps`` times over, each of ``parts`` threads on its own slice (in its
    own cache, when the slices fit there) in a plain loop, which LLVM vectorizes (a loop
    nested in the parallel one, its bounds computed there, it did not: 19 GB/s in the L2
    against 100)."""
    per = -(-a.shape[0] // parts)
    for p in prange(parts):
        lo, hi = p * per, min(a.shape[0], (p + 1) * per)
        _triad_slice(a[lo:hi], b[lo:hi], c[lo:hi], s, reps)


def _median_time(f, repeats: int = 7) -> float:
    return float(np.median(common.seconds(f, repeats)))


def measure(threads: int) -> dict:
    """ns per normal (fastgt, numpy) and triad GB/s with ``threads`` numba threads."""
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        z = np.empty((32 * threads, 128))  # 32 KB per thread, whole 16-double groups
        rows = 20000
        t_fast = _median_time(lambda: _normals(z, rows, threads, 1)) / (rows * z.shape[1]) * 1e9
        m = 2 * 10**7  # 160 MB per array: far beyond any cache
        a, b, c = np.empty(m), np.ones(m), np.ones(m)
        t_triad = _median_time(lambda: _triad(a, b, c, 0.5, 1, threads), repeats=5)
        cached = {}
        for key, k in (("l2_triad_GBps", L2_BYTES * threads // 9 // 8),  # three arrays, a
                       ("cache_triad_GBps", LLC_BYTES // 9 // 8)):  # third of the cache
            a, b, c = np.empty(k), np.ones(k), np.ones(k)
            reps = max(1, (64 << 20) // (24 * k))  # a few ms a timing
            _triad(a, b, c, 0.5, 1, threads)  # into the cache
            t = _median_time(lambda: _triad(a, b, c, 0.5, reps, threads),  # noqa: B023
                             repeats=9)
            cached[key] = 3 * 8 * k * reps / t / 1e9
    finally:
        numba.set_num_threads(old)
    gen = np.random.default_rng(0)
    z = np.empty((20000, 128))
    t_np = _median_time(lambda: gen.standard_normal(out=z)) / z.size * 1e9
    return {"threads": threads, "ns_per_normal_fastgt": t_fast, "ns_per_normal_numpy": t_np,
            "triad_GBps": 3 * 8 * m / t_triad / 1e9, **cached}


def bound(lim: dict, algorithm: str, n: int, d: int, normals: float = 1.0,
          stores_g: bool = True) -> dict:
    """Lower bounds (ns per node-dimension-step) for one step of ``algorithm`` drawing
    ``normals`` normal variates per element (Setup A: 1; Setup B: d per step, about 0);
    ``stores_g``: GT keeps G (gaussian noise; Setup B's GT does not).
    Both are 0 for a cache-resident step without normals: no bound is known then."""
    nbytes = BYTES[algorithm] - (G_BYTES if algorithm == "gt" and not stores_g else 0)
    state = nbytes // 8 * n * d * 8
    resident = state < LLC_BYTES
    mem = 0.0 if resident else nbytes / lim["triad_GBps"]
    rng = normals * lim["ns_per_normal_fastgt"]
    near = lim["l2_triad_GBps"] if state < L2_BYTES * lim["threads"] else lim["cache_triad_GBps"]
    cached = nbytes / near + rng if resident else mem + rng
    return {"bound_overlap": max(mem, rng), "bound_serial": mem + rng, "bound_cached": cached,
            "cache_resident": resident}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="300,3000,30000,300000")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    rows, lims = [], []
    for th in range(1, numba.config.NUMBA_NUM_THREADS + 1):
        lim = measure(th)
        lims.append(lim)
        for algo in ("gt", "dsgd"):
            for n in ns:
                rows.append({"threads": th, "algorithm": algo, "n": n, **bound(lim, algo, n, args.d)})
    print("| threads | fastgt ns/normal | numpy ns/normal | triad GB/s | L2 triad GB/s | "
          "last-level cache triad GB/s |")
    print("|---|---|---|---|---|---|")
    for lim in lims:
        print(f"| {lim['threads']} | {lim['ns_per_normal_fastgt']:.2f} | "
              f"{lim['ns_per_normal_numpy']:.2f} | {lim['triad_GBps']:.1f} | "
              f"{lim['l2_triad_GBps']:.1f} | {lim['cache_triad_GBps']:.1f} |")
    print()
    print("| threads | algorithm | n | bound (overlap) ns/elem | bound (serial) ns/elem | "
          "bound (serial, cache traffic) ns/elem | in cache |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['threads']} | {r['algorithm']} | {r['n']} | {r['bound_overlap']:.2f} | "
              f"{r['bound_serial']:.2f} | {r['bound_cached']:.2f} | "
              f"{'yes' if r['cache_resident'] else 'no'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"limits": lims, "bounds": rows, "d": args.d}, f, indent=1)


if __name__ == "__main__":
    main()
