"""Scale: GT on a ring and a torus with n = 10^6 nodes, d = 100, on all threads.

    python bench/bench_scale.py [--n 1000000] [--d 100] [--steps 20]

Each case runs in a fresh process so its peak memory (ru_maxrss) is its own. Prints the
spectrum time, the median time per step over chunks of steps (metrics recorded between
chunks, as in a run), ns per node-dimension-step, and peak memory against GT's state of
5 n d doubles.
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
name, n, d, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
kw = {"n": n} if name == "ring" else {"rows": int(n ** 0.5), "cols": int(n ** 0.5)}
t = time.perf_counter(); W = fastgt.topology(name, **kw); t_build = time.perf_counter() - t
t = time.perf_counter(); sp = W.spectrum(); t_spec = time.perf_counter() - t
chunk = max(1, steps // 4)
r = fastgt.run("gt", W, d=d, steps=steps, record_every=chunk, stepsize=0.001)
per_step = r.summary["loop_time"] / steps
wall, threads = r.summary["wall_time"], r.summary["threads"]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # before limits allocates
del r
bound = limits.bound(limits.measure(numba.get_num_threads()), "gt", W.n, d)["bound_serial"]
print(json.dumps({"bound_ns": bound, "topology": name, "n": W.n, "d": d, "build_s": t_build, "spectrum_s": t_spec,
                  "p": sp.p, "c": sp.c, "step_s": per_step, "ns_per_elem": per_step / (W.n * d) * 1e9,
                  "wall_s": wall, "threads": threads,
                  "peak_GB": peak}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    side = math.isqrt(a.n)
    state_gb = 5 * a.n * a.d * 8 / 2**30
    print(f"GT, d={a.d}, {a.steps} steps; GT state 5 n d doubles = {state_gb:.2f} GiB")
    print("| topology | n | build s | spectrum s | s/step | ns/elem | / bound | peak GiB | "
          "peak / state |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, n in (("ring", a.n), ("torus", side * side)):
        child = CHILD.replace("BENCH", repr(str(Path(__file__).resolve().parent)))
        out = subprocess.run([sys.executable, "-c", child, name, str(n), str(a.d), str(a.steps)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {name} | {r['n']} | {r['build_s']:.2f} | {r['spectrum_s']:.2f} | "
              f"{r['step_s']:.3f} | {r['ns_per_elem']:.2f} | {r['ns_per_elem'] / r['bound_ns']:.2f} | "
              f"{r['peak_GB']:.2f} | "
              f"{r['peak_GB'] / state_gb:.2f} |")


if __name__ == "__main__":
    main()
