"""Temporal blocking against step by step: cost per node-dimension-step at large n.

    python bench/bench_temporal.py [--n 1000000] [--d 100] [--algorithms gt,dsgd,d2,extra]
                                   [--topologies ring,torus] [--setups 0,B,A]
                                   [--threads 1,2] [--repeats 5] [--cache-n 3000]
                                   [--min-bytes BYTES] [--dtype float32] [--quick]

For each case, one state advanced by the kernels through two batches of the same cells
that differ only in their plan: step by step (``temporal=False``, the code before
temporal blocking) and the plan fastgt makes for it (kernels/temporal.py: passes of
``levels`` steps), the two taking turns in every repeat. Reports ns per
node-dimension-step (median and min), the plan, the speed-up (ratio of the medians), and
the same step at ``--cache-n`` nodes (the state in cache: what a pass can approach, its
rows read from cache instead of memory). Setups: 0 no noise, B structured, A gaussian
(compute-bound by the normal generator: little to gain). The issue's target: >= 1.5x at
n = 10^6 on 2 threads, ring and torus.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common

NOISES = {"A": "gaussian", "B": "structured", "0": "none"}


def topology(name: str, n: int):
    import fastgt

    if name == "torus":
        side = round(n ** 0.5)
        return fastgt.topology("torus", rows=side, cols=-(-n // side))
    return fastgt.topology(name, n=n)


def measure(args) -> None:
    """In a child with ``args.threads_now`` threads: every case, one JSON line each."""
    import time

    import numba

    import fastgt
    from fastgt.algorithms import ALGORITHMS, Batch, Cell
    from fastgt.problems import make_noise

    numba.set_num_threads(args.threads_now)
    if args.min_bytes is not None:  # where passes begin (kernels/temporal.py)
        from fastgt.kernels import temporal
        for name in ("MIN_BYTES", "BAND_BYTES", "SHORT_BYTES", "WIDE_BYTES"):
            setattr(temporal, name, args.min_bytes[0])
    by_cells = False  # one cell: its rows in parallel

    def per_step(algo, batch, arrays, cur, t, k):
        start = time.perf_counter()
        cur = algo.advance(batch, arrays, cur, t, k, by_cells)
        return cur, (time.perf_counter() - start) / k

    for name, setup, algorithm, n, d in itertools.product(
            args.topologies, args.setups, args.algorithms, args.n, args.d):
        algo = ALGORITHMS[algorithm]
        W = topology(name, n)
        problem = fastgt.problem("quadratic").build(W.n, d).in_dtype(args.dtype[0])
        cells = [Cell(W, make_noise(NOISES[setup], 1.0, d, W), 0.001, 0)]
        plans = {way: Batch(cells, problem, dtype=args.dtype[0], temporal=temporal)
                 for way, temporal in (("steps", False), ("passes", None))}
        plan = plans["passes"].plan
        arrays = algo.init(plans["steps"])
        cur, t = algo.advance(plans["steps"], arrays, 0, 0, 2, by_cells), 2  # first touch
        k = plan.levels * max(1, round(args.target_s / per_step(algo, plans["steps"], arrays,
                                                                 cur, t, 1)[1] / plan.levels))
        secs = {way: [] for way in plans}
        for _ in range(args.repeats):  # the two take turns: a burst of load hits both
            for way, batch in plans.items():
                cur, s = per_step(algo, batch, arrays, cur, t, k)
                secs[way].append(s)
                t += k
        del arrays
        Ws = topology(name, args.cache_n[0])
        small = Batch([Cell(Ws, make_noise(NOISES[setup], 1.0, d, Ws), 0.001, 0)],
                      fastgt.problem("quadratic").build(Ws.n, d).in_dtype(args.dtype[0]),
                      dtype=args.dtype[0], temporal=False)
        arrays = algo.init(small)
        cur = algo.advance(small, arrays, 0, 0, 2, by_cells)
        kc = max(1, round(k * W.n / small.n))
        cache = [per_step(algo, small, arrays, cur, 2, kc)[1] for _ in range(args.repeats)]
        print(json.dumps({"topology": name, "setup": setup, "algorithm": algorithm, "n": W.n,
                          "d": d, "plan": [plan.levels, plan.blocks],
                          "ns": {way: common.summarize(v, W.n * d * 1e-9)
                                 for way, v in secs.items()},
                          "cache": common.summarize(cache, small.n * d * 1e-9)["median"]}),
              flush=True)
        del arrays, plans


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.case_options(ap, n=[1000000], d=[100], algorithms=["gt", "dsgd", "d2", "extra"],
                        repeats=5, target_s=1.0)
    ap.add_argument("--topologies", type=lambda s: s.split(","), default=["ring", "torus"])
    ap.add_argument("--setups", type=lambda s: s.split(","), default=["0", "B", "A"])
    ap.add_argument("--cache-n", "--cache_n", dest="cache_n", type=common.int_list,
                    default=[3000])
    ap.add_argument("--min-bytes", "--min_bytes", dest="min_bytes", type=common.int_list,
                    help="plan passes from this many bytes of a state array, whatever its "
                         "rows' bandwidth (default: kernels/temporal.py's least_bytes)")
    ap.add_argument("--dtype", type=lambda s: s.split(","), default=["float64"],
                    help="the state's element type: float64 or float32")
    ap.add_argument("--quick", action="store_true",
                    help="n = 300000, gt and dsgd, setups 0 and B, 3 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.algorithms, args.setups, args.repeats = [300000], ["gt", "dsgd"], ["0", "B"], 3
    if args.threads_now:
        measure(args)
        return
    machine = common.machine_info()
    rows = []
    lists = ("topologies", "setups", "cache_n", "dtype") + (
        ("min_bytes",) if args.min_bytes else ())
    for threads, case in common.threaded_cases(__file__, args, lists):
        steps, passes = case["ns"]["steps"], case["ns"]["passes"]
        levels, blocks = case["plan"]
        rows.append([case["algorithm"], case["topology"], case["setup"], str(case["n"]),
                     str(threads), f"{levels} x {blocks}" if levels > 1 else "steps",
                     f"{steps['median']:.2f} ({steps['min']:.2f})",
                     f"{passes['median']:.2f} ({passes['min']:.2f})",
                     f"{steps['median'] / passes['median']:.2f}x", f"{case['cache']:.2f}"])
    print(common.machine_line(machine))
    print(common.markdown_table(["algo", "topology", "setup", "n", "threads",
                                 "plan (levels x blocks)", "step by step ns", "passes ns",
                                 "speed-up", f"in cache ns (n = {args.cache_n[0]})"], rows))
    print(f"\nns = nanoseconds per node-dimension-step of the kernels' steps, median (min) of "
          f"{args.repeats} interleaved repeats on one state; speed-up = step by step's median "
          f"/ the passes' median, in the same process; d as given; a {args.dtype[0]} state.")


if __name__ == "__main__":
    main()
