"""Sweeps of many tiny cells: overhead per cell, storage size, load and status times.

    python bench/bench_cells.py                       # 4000 cells
    python bench/bench_cells.py --cells 100000        # the 10^5-cell target
    python bench/bench_cells.py --cells 4000 --baseline-src /tmp/old   # A/B: another checkout

The grid is GT on a ring of 16 nodes, d = 5, 200 steps, a record every 20 (11 trace rows
per cell): seeds x 10 stepsizes, run by the real command ``fastgt grid SPEC --out DIR
--workers W --quiet`` in a fresh process. Reported, per fastgt source (this checkout, and
``--baseline-src`` if given, each run the same way in the same session, interleaved):

- sweep wall s; start-up s (the same command on a 2-cell grid: process start, imports,
  worker spawn, loading the compiled kernels); simulation s = the cells' summed
  ``loop_time`` (the compiled loop only) / workers; the ratio wall / (simulation +
  start-up) (target <= 3); cells/s; overhead ms per cell = (workers x (wall - start-up)
  - summed loop time) / cells: every worker-second not spent in the loop;
- storage: bytes on disk of cells/ and traces/, and its ratio to the raw numbers (Arrow's
  in-memory size of the cell rows and of the traces' own columns: id, step, counters,
  metrics; target <= 3);
- load times (median of --repeats, each in a fresh process so that nothing is cached):
  ``fastgt.load(DIR, traces=False)`` (target < 2 s), ``fastgt.load(DIR)`` with every trace
  (< 10 s), a filtered load of 100 cells and their traces (< 0.5 s; the baseline has no
  filter: a full load and a pandas filter), ``pd.read_parquet(DIR/"cells")``, and the
  command ``fastgt status DIR`` (< 1 s, process start-up included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, markdown_table

SPEC = """\
[run]
algorithm = "gt"
topology = "ring"
n = 16
d = 5
steps = 200
record_every = 20

[[grid]]
seed = {seeds}
stepsize = [0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01]
"""

LOADS = {
    "load cells": "fastgt.load(D, traces=False)",
    "load all": "fastgt.load(D)",
    "load 100 cells": "fastgt.load(D, where={'seed': list(range(10))})",
    "read_parquet cells": "pd.read_parquet(D + '/cells')",
}
#: the first layout's fastgt.load has no filter: a full load and a pandas filter
OLD_FILTER = "c, tr = fastgt.load(D); c = c[c.seed < 10]; tr = tr[tr.id.isin(c.id)]"


def _env(src: str | None) -> dict:
    # PYTHONSAFEPATH: ``python -c`` would put the working directory (a checkout, maybe)
    # before PYTHONPATH
    env = dict(os.environ, NUMBA_NUM_THREADS="1", PYTHONSAFEPATH="1")
    if src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def _fastgt(src, *args, check=True) -> float:
    """Wall seconds of ``fastgt ARGS`` on the given source."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from fastgt.cli import main; main()", *args],
                          env=_env(src), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise SystemExit(f"fastgt {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - t


def _python(src, code: str, directory: Path) -> float:
    """The number ``code`` prints last, run in a fresh process with D = the directory."""
    prog = f"import time, fastgt, pandas as pd, pyarrow as pa\nD = {str(directory)!r}\n{code}"
    out = subprocess.run([sys.executable, "-c", prog], env=_env(src), capture_output=True,
                         text=True, check=True)
    return float(out.stdout.split()[-1])


def _timed(src, code: str, directory: Path) -> float:
    """Seconds of ``code`` in a fresh process, imports excluded."""
    return _python(src, f"t = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)",
                   directory)


#: raw bytes of the numbers: the cell rows (provenance aside) and the traces' own columns
RAW = """c, t = fastgt.load(D)
c = c.drop(columns=[k for k in ('provenance',) if k in c])
t = t[[k for k in ['id', 'step', 'comm_rounds', 'grad_evals', *fastgt.METRICS] if k in t]]
print(pa.Table.from_pandas(c).nbytes + pa.Table.from_pandas(t).nbytes)"""


def measure(src, spec: Path, small: Path, root: Path, workers: int, repeats: int) -> dict:
    out = root / "sweep"
    shutil.rmtree(out, ignore_errors=True)
    startup = statistics.median(
        _fastgt(src, "grid", str(small), "--out", str(root / f"small{i}"), "--workers",
                str(workers), "--quiet") for i in range(2))
    wall = _fastgt(src, "grid", str(spec), "--out", str(out), "--workers", str(workers),
                   "--quiet")
    loop = _python(src, "print(fastgt.load(D, traces=False)[0]['loop_time'].sum())", out)
    disk = sum(p.stat().st_size for sub in ("cells", "traces")
               for p in (out / sub).iterdir() if not p.name.startswith("."))
    raw = _python(src, RAW, out)
    r = {"wall": wall, "startup": startup, "loop": loop, "disk": disk, "raw": raw}
    for name, code in LOADS.items():
        if src is not None and name == "load 100 cells":
            code = OLD_FILTER
        r[name] = statistics.median(_timed(src, code, out) for _ in range(repeats))
    r["status"] = statistics.median(_fastgt(src, "status", str(out)) for _ in range(repeats))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=4000, help="a multiple of 10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each load (median)")
    ap.add_argument("--baseline-src", default=None,
                    help="directory holding another fastgt package (a checkout of an older "
                         "commit) to run beside this one")
    a = ap.parse_args()
    info = machine_info()
    print(f"# {a.cells} tiny cells (GT, ring n=16, d=5, 200 steps), {a.workers} workers; "
          f"{info['cpu']}, {info['cores']} cores, load avg {info['load_avg_start'][0]:.2f}",
          file=sys.stderr)
    sources = {"this checkout": None}
    if a.baseline_src:
        sources["baseline"] = a.baseline_src
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        spec, small = Path(tmp) / "spec.toml", Path(tmp) / "small.toml"
        spec.write_text(SPEC.format(seeds=list(range(a.cells // 10))))
        small.write_text(SPEC.format(seeds=[0]).replace(
            "[0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01]", "[0.001, 0.002]"))
        for name, src in sources.items():  # compile (gt only) once, before any timing
            _fastgt(src, "grid", str(small), "--out", str(Path(tmp) / f"warm{len(name)}"),
                    "--workers", "1", "--quiet")
        for name, src in sources.items():
            print(f"  {name} ...", file=sys.stderr)
            results[name] = measure(src, spec, small, Path(tmp) / name.replace(" ", "_"),
                                    a.workers, a.repeats)
    rows = []
    for name, r in results.items():
        sim = r["loop"] / a.workers
        over = (a.workers * (r["wall"] - r["startup"]) - r["loop"]) / a.cells * 1e3
        rows.append([name, f"{r['wall']:.1f}", f"{r['startup']:.1f}", f"{sim:.1f}",
                     f"{r['wall'] / (sim + r['startup']):.2f}", f"{a.cells / r['wall']:.0f}",
                     f"{over:.2f}", f"{r['disk'] / 1e6:.1f}", f"{r['disk'] / r['raw']:.2f}",
                     *(f"{r[k]:.2f}" for k in (*LOADS, "status"))])
    print(markdown_table(["fastgt", "sweep wall s", "start-up s", "simulation s",
                          "wall / (sim + start-up)", "cells/s", "overhead ms/cell", "disk MB",
                          "disk / raw", *(f"{k} s" for k in LOADS), "status s"], rows))
    if len(results) == 2:
        new, old = results["this checkout"], results["baseline"]
        print("\nratios baseline / this checkout: " + ", ".join(
            f"{k} {old[k] / new[k]:.1f}x" for k in ("wall", "disk", *LOADS, "status")))
    print(f"\n{info['cpu']}; load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
