"""Scale: GT (or --algorithm) on a ring and a torus with n = 10^6 nodes, d = 100, on all threads.

    python bench/bench_scale.py [--n 1000000] [--d 100] [--steps 20] [--setups A,B]
                                [--algorithm gt]

Each case runs in a fresh process so its peak memory (ru_maxrss) is its own. Prints the
spectrum time; the run's set-up (wall time minus ``loop_time``: the problem, schedule
and plan, allocation, initial point, first gradients and record, the threads' start; the
compiled kernels loaded by a small run before), also in steps; the whole run's seconds per step (``loop_time`` / steps: metrics every steps / 4
steps, and the first touch of the state's pages, as a user sees them); the step alone
(median over chunks of steps advanced by the kernel, after a first chunk that touched
every page) in seconds and ns per node-dimension-step, and its ratio to the machine's
no-overlap bound; peak memory against the state: GT's 5 n d doubles in Setup A (gaussian
noise), 4 n d in Setup B (structured noise: no G); D-SGD's 3 n d.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import numba
import numpy as np
import fastgt
sys.path.insert(0, BENCH)
import limits
name, n, d, steps, setup, algorithm = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                       int(sys.argv[4]), sys.argv[5], sys.argv[6])
noise = "gaussian" if setup == "A" else "structured"
kw = {"n": n} if name == "ring" else {"rows": int(n ** 0.5), "cols": int(n ** 0.5)}
t = time.perf_counter(); W = fastgt.topology(name, **kw); t_build = time.perf_counter() - t
t = time.perf_counter(); sp = W.spectrum(); t_spec = time.perf_counter() - t
chunk = max(1, steps // 4)
small = fastgt.topology(name, **({"n": 64} if name == "ring" else {"rows": 8, "cols": 8}))
fastgt.run(algorithm, small, noise=noise, d=d, steps=2)  # loads the compiled kernels
r = fastgt.run(algorithm, W, noise=noise, d=d, steps=steps, record_every=chunk, stepsize=0.001)
per_step = r.summary["loop_time"] / steps
wall, threads = r.summary["wall_time"], r.summary["threads"]
set_up = wall - r.summary["loop_time"]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # before limits allocates
del r
from fastgt.algorithms import ALGORITHMS, Batch, Cell
from fastgt.problems import make_noise
batch = Batch([Cell(W, make_noise(noise, 1.0, d, W), 0.001, 0)],
              fastgt.problem("quadratic").build(W.n, d))
algo = ALGORITHMS[algorithm]
arrays = algo.init(batch)
cur = algo.advance(batch, arrays, 0, 0, 2, False)  # touches every page of the state
k = max(1, steps // 4)
ts = []
for i in range(3):
    t = time.perf_counter(); cur = algo.advance(batch, arrays, cur, 2 + i * k, k, False)
    ts.append((time.perf_counter() - t) / k)
kernel_step = float(np.median(ts))
del arrays, batch
bound = limits.bound(limits.measure(numba.get_num_threads()), algorithm, W.n, d,
                     1.0 if setup == "A" else 1.0 / W.n, stores_g=setup == "A")["bound_serial"]
print(json.dumps({"bound_ns": bound, "setup": setup, "topology": name, "n": W.n, "d": d, "build_s": t_build, "spectrum_s": t_spec,
                  "p": sp.p, "c": sp.c, "run_step_s": per_step, "step_s": kernel_step,
                  "ns_per_elem": kernel_step / (W.n * d) * 1e9,
                  "wall_s": wall, "set_up_s": set_up, "threads": threads,
                  "peak_GB": peak}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--setups", default="A,B")
    ap.add_argument("--algorithm", default="gt")
    a = ap.parse_args()
    side = math.isqrt(a.n)
    print(f"{a.algorithm}, d={a.d}, {a.steps} steps; state: GT 5 n d doubles (A), 4 n d (B); "
          "D-SGD 3 n d")
    print("| setup | topology | n | build s | spectrum s | set-up s | set-up / step | run s/step "
          "| step s | step ns/elem | / bound | peak GiB | peak / state |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for setup in a.setups.split(","):
        for name, n in (("ring", a.n), ("torus", side * side)):
            _case(setup, name, n, a)


def _case(setup: str, name: str, n: int, a) -> None:
    arrays = {"gt": (5, 4), "dsgd": (3, 3)}.get(a.algorithm)  # n x d doubles (A, B)
    state_gb = arrays[setup != "A"] * n * a.d * 8 / 2**30 if arrays else math.nan
    child = CHILD.replace("BENCH", repr(str(Path(__file__).resolve().parent)))
    # run from bench/: ``python -c`` puts its working directory first on sys.path, which
    # from a checkout's root would shadow a PYTHONPATH naming another checkout's fastgt
    out = subprocess.run([sys.executable, "-c", child, name, str(n), str(a.d), str(a.steps), setup,
                          a.algorithm], cwd=Path(__file__).resolve().parent,
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    print(f"| {setup} | {name} | {r['n']} | {r['build_s']:.2f} | {r['spectrum_s']:.2f} | "
          f"{r['set_up_s']:.2f} | {r['set_up_s'] / r['step_s']:.1f} | {r['run_step_s']:.3f} | "
          f"{r['step_s']:.3f} | {r['ns_per_elem']:.2f} | "
          f"{r['ns_per_elem'] / r['bound_ns']:.2f} | {r['peak_GB']:.2f} | "
          f"{r['peak_GB'] / state_gb:.2f} |", flush=True)


if __name__ == "__main__":
    main()
