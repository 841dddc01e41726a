"""Parallel runs on a shared machine: threading layer and wait policy, idle and under load.

    python bench/bench_load.py [--n 300,30000] [--d 100] [--seconds 2] [--repeats 5]

A single GT run (ring, Setup A) on all cores, timed in a fresh process per configuration
(the OpenMP runtime reads its wait policy once, at start), first on an idle machine, then
while one busy process (a pure-Python spin loop) occupies a core. Configurations:

- omp, passive: fastgt's default (`OMP_WAIT_POLICY=PASSIVE`, see fastgt/kernels/__init__.py)
- omp, active: OpenMP spinning at every barrier (`OMP_WAIT_POLICY=ACTIVE`)
- workqueue: numba's own thread pool
- 1 thread: the same run on one thread, for scale

Prints ns per node-dimension-step (median of the repeats), the idle time over
bench/limits.py's no-overlap bound (measured idle, same thread count), the slowdown under
load, and the loaded time over the 1-thread run's loaded time (above 1: using the second
core made the run slower than not using it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import common

CONFIGS = {
    "omp, passive (default)": {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "PASSIVE"},
    "omp, active": {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "ACTIVE"},
    "omp, spin 1e4": {"NUMBA_THREADING_LAYER": "omp", "GOMP_SPINCOUNT": "10000"},
    "omp, spin 1e5": {"NUMBA_THREADING_LAYER": "omp", "GOMP_SPINCOUNT": "100000"},
    "workqueue": {"NUMBA_THREADING_LAYER": "workqueue"},
    "1 thread": {"NUMBA_NUM_THREADS": "1"},
}

CHILD = r"""
import json, sys, time
import numpy as np
import fastgt
from fastgt.algorithms import ALGORITHMS, Batch, Cell
from fastgt.problems import make_noise
from fastgt.runtime import threading_layer
n, d, seconds, repeats = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
W = fastgt.topology("ring", n=n)
batch = Batch([Cell(W, make_noise("gaussian", 1.0, d, W), 0.01, 0)],
              fastgt.problem("quadratic").build(n, d))
algo = ALGORITHMS["gt"]
arrays = algo.init(batch)
state = {"cur": 0, "t": 0}
def advance(k):
    state["cur"] = algo.advance(batch, arrays, state["cur"], state["t"], k, False)
    state["t"] += k
advance(2)
t = time.perf_counter(); advance(5); per = (time.perf_counter() - t) / 5
k = max(1, int(seconds / repeats / per))
ts = []
for _ in range(repeats):
    t = time.perf_counter(); advance(k); ts.append((time.perf_counter() - t) / k)
import numba
print(json.dumps({"ns": float(np.median(ts)) / (n * d) * 1e9, "steps": k,
                  "threads": numba.get_num_threads(), "layer": threading_layer()}))
"""


def spin(stop) -> None:
    while not stop.is_set():
        for _ in range(10**5):
            pass


def run_child(env_extra: dict, args) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_THREADING_LAYER",
                        "NUMBA_NUM_THREADS")}
    env.update(env_extra)
    cmd = [sys.executable, "-c", CHILD, str(args.n_now), str(args.d), str(args.seconds),
           str(args.repeats)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True,
                         cwd=Path(__file__).parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    one = {r["n"]: r["loaded"]["ns"] for r in rows if r["config"] == "1 thread"}
    cells = [[str(r["n"]), r["config"], r["idle"]["layer"], str(r["idle"]["threads"]),
              f"{r['idle']['ns']:.2f}", f"{r['idle']['ns'] / r['bound']:.2f}",
              f"{r['loaded']['ns']:.2f}",
              f"{r['loaded']['ns'] / r['idle']['ns']:.2f}x",
              f"{r['loaded']['ns'] / one[r['n']]:.2f}x" if r["n"] in one else "-"]
             for r in rows]
    return common.markdown_table(["n", "configuration", "layer", "threads", "idle ns/elem",
                                  "idle / bound", "loaded ns/elem", "slowdown",
                                  "loaded / 1 thread loaded"], cells)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="300,3000,30000")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per configuration")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    machine = common.machine_info()
    rows = []
    for n in [int(v) for v in args.n.split(",")]:
        args.n_now = n
        bounds = {t: common.bound_in_child("gt", n, args.d, t) for t in (1, os.cpu_count())}
        for name, env in CONFIGS.items():
            idle = run_child(env, args)
            stop = mp.Event()
            hog = mp.Process(target=spin, args=(stop,), daemon=True)
            hog.start()
            time.sleep(0.2)
            try:
                loaded = run_child(env, args)
            finally:
                stop.set()
                hog.join(5)
            rows.append({"n": n, "config": name, "idle": idle, "loaded": loaded,
                         "bound": bounds[idle["threads"]] if idle["threads"] in bounds
                         else common.bound_in_child("gt", n, args.d, idle["threads"])})
            print(f"n={n} {name}: idle {idle['ns']:.2f}, loaded {loaded['ns']:.2f} ns/elem",
                  file=sys.stderr, flush=True)
    print(f"CPU: {machine['cpu']} ({machine['cores']} cores); load avg at start "
          f"{machine['load_avg_start'][0]:.2f}; GT on a ring, d = {args.d}; one busy process "
          "under load\n")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
