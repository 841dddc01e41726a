"""Sweep throughput: cells/hour with 1 and 2 worker processes, and the overhead per cell.

Each configuration runs the real command, ``fastgt grid SPEC --out DIR --workers K``, in a
fresh process on the same grid of equal cells (GT, ring n=300, d=100, Setup A, one seed per
cell), into a fresh directory. Timings come from outside the command (its wall time) and
from the cell files (worker-side start time, wall time and run-loop time of every cell).

    python bench/bench_sweep.py                 # 16 cells x 5000 steps, workers 1 and 2, x2
    python bench/bench_sweep.py --cells 8 --steps 2000 --repeats 3 --json bench/sweep.json

The configurations are run interleaved ``--repeats`` times and each one's fastest repeat
(highest steady rate) is reported: on a shared machine that is the least disturbed one;
the JSON keeps every run.

Reported, per configuration (a task = the cells a worker ran together: fastgt grid
batches cells that differ only in seed, stepsize, sigma2, alpha or self weight):
- wall: the whole command (driver start, cache check, worker start, all tasks, shutdown);
- startup: command start -> first task starts; tail: last task ends -> command exits;
- cells/h end-to-end = cells / wall; cells/h steady = cells / (last task end - first task
  start): the rate a long sweep sees once its workers run; speedups = ratios of those rates;
- overhead/cell = (workers x (last end - first start) - sum of run-loop times) / cells:
  every worker-second per cell not spent in the simulation loop (cache load in each
  worker's first task, topology build + spectrum + theory, pickling, Parquet writes, gaps);
- +startup: the same over the whole wall time (workers x wall);
- first task extra s/cell: worker-side wall minus loop time in each worker's first task
  (which loads the compiled kernels from the cache), per cell.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bound_in_child, machine_info, markdown_table

SPEC = """\
[run]
algorithm = "gt"
topology = "ring"
n = 300
d = 100
stepsize = 0.01
steps = {steps}
record_every = {record}

[[grid]]
seed = {seeds}
"""


def run_config(spec: Path, workers: int, root: Path) -> dict:
    from fastgt.sweep.storage import Store, load

    out = root / f"w{workers}"
    cmd = [sys.executable, "-c", "from fastgt.cli import main; main()", "grid", str(spec),
           "--out", str(out), "--workers", str(workers), "--quiet"]
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.time() - t0
    if proc.returncode != 0:
        raise SystemExit(f"sweep failed: {proc.stderr}")
    cells, _ = load(out)
    store = Store(out, create=False)
    # a task = the cells one worker ran together (fastgt grid batches compatible cells): they
    # share the task's start time, and their wall and loop times add up to the task's
    tasks: dict = {}
    for i, w, lp in zip(cells.id, cells.wall_time, cells.loop_time):
        prov = store.provenance(i)
        t = tasks.setdefault((prov["pid"], prov["start_time"]), [0.0, 0.0, 0])
        t[0], t[1], t[2] = t[0] + w, t[1] + lp, t[2] + 1
    spans = [(pid, datetime.datetime.fromisoformat(st).timestamp(), w, lp, k)
             for (pid, st), (w, lp, k) in tasks.items()]
    first_start = min(sp[1] for sp in spans)
    last_end = max(sp[1] + sp[2] for sp in spans)
    steady = last_end - first_start
    n = len(cells)
    loop = float(cells.loop_time.sum())
    firsts = {}  # each worker's first task: it loads the compiled kernels from the cache
    for pid, start, w, lp, k in sorted(spans, key=lambda sp: sp[1]):
        firsts.setdefault(pid, (w - lp) / k)
    return {
        "workers": workers, "cells": n, "tasks": len(tasks), "wall_s": wall,
        "startup_s": first_start - t0, "tail_s": t0 + wall - last_end,
        "cells_per_hour_end_to_end": n / wall * 3600, "cells_per_hour_steady": n / steady * 3600,
        "loop_s_per_cell": loop / n,
        "overhead_s_per_cell": (workers * steady - loop) / n,
        "overhead_with_startup_s_per_cell": (workers * wall - loop) / n,
        "first_task_extra_s_per_cell": sum(firsts.values()) / len(firsts),
        "worker_processes": len(firsts), "threads": sorted(set(cells.threads)),
        "load_avg_after": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeats", type=int, default=2, help="runs per configuration (best kept)")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()

    info = machine_info()
    print(f"# sweep benchmark: {args.cells} cells, GT ring n=300 d=100, {args.steps} steps; "
          f"{info['cores']} cores, load avg {info['load_avg_start'][0]:.2f}", file=sys.stderr)
    subprocess.run([sys.executable, "-c", "from fastgt.cli import main; main()", "warmup"],
                   check=True, capture_output=True)  # compile once, before any timing
    runs: dict[int, list] = {int(x): [] for x in args.workers.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.toml"
        spec.write_text(SPEC.format(steps=args.steps, record=max(1, args.steps // 20),
                                    seeds=list(range(args.cells))))
        for rep in range(args.repeats):  # interleaved, so that a busy spell hits all configs
            for w, done in runs.items():
                print(f"  repeat {rep + 1}: {w} worker(s) ...", file=sys.stderr)
                done.append(run_config(spec, w, Path(tmp) / f"r{rep}"))
    # the machine is shared: keep each configuration's fastest repeat (least disturbed)
    results = [max(rs, key=lambda r: r["cells_per_hour_steady"]) for rs in runs.values()]
    base = results[0]
    bound = bound_in_child("gt", 300, 100, 1)  # each worker runs its cells on 1 thread
    elems = args.steps * 300 * 100
    rows = []
    for r in results:
        rows.append([str(r["workers"]), f"{r['wall_s']:.1f}", f"{r['startup_s']:.1f}",
                     f"{r['tail_s']:.1f}",
                     f"{r['cells_per_hour_end_to_end']:.0f}", f"{r['cells_per_hour_steady']:.0f}",
                     f"{r['cells_per_hour_steady'] / base['cells_per_hour_steady']:.2f}x",
                     f"{r['loop_s_per_cell']:.3f}",
                     f"{r['loop_s_per_cell'] / elems * 1e9 / bound:.2f}",
                     f"{r['overhead_s_per_cell']:.3f}",
                     f"{r['overhead_with_startup_s_per_cell']:.3f}", str(r["tasks"]),
                     f"{r['first_task_extra_s_per_cell']:.3f}",
                     f"{r['cells_per_hour_end_to_end'] / base['cells_per_hour_end_to_end']:.2f}x"])
    print(markdown_table(["workers", "wall s", "startup s", "tail s", "cells/h e2e",
                          "cells/h steady", "speedup (steady)", "loop s/cell",
                          "loop / bound", "overhead s/cell", "+startup s/cell", "tasks",
                          "first task extra s/cell", "speedup (e2e)"], rows))
    print(f"\nloop / bound: a cell's run-loop time per node-dimension-step over bench/limits.py's "
          f"1-thread no-overlap bound for the GT step ({bound:.2f} ns)")
    print(f"load average during the runs: {os.getloadavg()[0]:.2f} (2 cores shared with "
          "other jobs: speedups need the 2nd core free)")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "args": vars(args),
                                               "best": results, "all_runs": runs}, indent=1,
                                              default=str))


if __name__ == "__main__":
    main()
