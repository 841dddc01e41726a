"""Helpers shared by the benchmark scripts: machine facts, repeated timings, Markdown
tables, and the A/B runs against another commit (versions, materialised, version_env,
checked_child)."""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def int_list(text: str) -> list[int]:
    """A command-line list of integers: "300,3000" -> [300, 3000]."""
    return [int(v) for v in text.split(",") if v.strip()]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    """Host facts that do not need numba (the parent process never imports it)."""
    import numpy as np
    import scipy

    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_avg_start": os.getloadavg(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
    }


def numba_info() -> dict:
    """numba version and threading layer (call after a parallel kernel ran). numba's own
    API only, not fastgt's: it serves children running any revision of fastgt."""
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran yet
        layer = "not initialised"
    return {"numba": numba.__version__, "threading_layer": layer,
            "numba_threads": numba.get_num_threads()}


def steps_for(advance, target_s: float, probe_s: float = 0.02) -> int:
    """How many steps ``advance(k)`` needs to take about ``target_s`` seconds (>= 1).

    Doubles k from 1 until a call takes ``probe_s``, then scales; the probe calls also warm
    caches and allocators. ``advance`` may return the seconds its steps took by its own
    clock (e.g. a run's loop time, without its set-up); otherwise its wall time counts.
    """
    k = 1
    while True:
        t = time.perf_counter()
        took = advance(k)
        dt = time.perf_counter() - t if took is None else took
        if dt >= probe_s:
            return max(1, round(k * target_s / dt))
        k *= 2


def seconds(fn, repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` calls of fn(), after one untimed call (compilation,
    first touch)."""
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def interleaved_timings(advances: dict, steps: dict, repeats: int, settle_s: float = 0.0):
    """Seconds per step of each ``advances[name](steps[name])``, ``repeats`` times each.

    The engines take turns within every repeat, so a burst of load from other processes on a
    shared machine hits all of them rather than one. ``settle_s``: pause before each timed
    block, so that idle worker threads of the previous engine (OpenBLAS busy-waits for about
    0.1 s after a multithreaded GEMM) stop spinning first. Returns (name -> list of s/step,
    name -> list of CPU share = process CPU time / wall time of each block).
    """
    secs = {name: [] for name in advances}
    share = {name: [] for name in advances}
    for _ in range(repeats):
        for name, advance in advances.items():
            if settle_s:
                time.sleep(settle_s)
            c, t = time.process_time(), time.perf_counter()
            advance(steps[name])
            wall = time.perf_counter() - t
            secs[name].append(wall / steps[name])
            share[name].append((time.process_time() - c) / wall)
    return secs, share


def summarize(samples: list[float], per: float) -> dict:
    """Median and min of the samples divided by ``per`` (e.g. seconds -> ns per element)."""
    return {"median": statistics.median(samples) / per, "min": min(samples) / per,
            "repeats": len(samples)}


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub Markdown table, numeric-looking columns right-aligned."""
    def numeric(col):
        cells = [r[col] for r in rows if r[col]]
        return bool(cells) and all(c[:1].isdigit() for c in cells)

    align = ["---:" if numeric(i) else ":---" for i in range(len(header))]
    lines = [header, align, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def case_options(ap, n: list[int], d: list[int], algorithms: list[str], repeats: int,
                 target_s: float) -> None:
    """The options of a script that measures cases per thread count in children
    (child_cases): --n, --d, --algorithms, --threads, --repeats, --target-s, --threads-now."""
    import argparse

    ap.add_argument("--n", type=int_list, default=n)
    ap.add_argument("--d", type=int_list, default=d)
    ap.add_argument("--algorithms", type=lambda s: s.split(","), default=algorithms)
    ap.add_argument("--threads", type=int_list, default=[1, 2])
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--target-s", type=float, default=target_s, help="seconds per timed block")
    ap.add_argument("--threads-now", type=int, help=argparse.SUPPRESS)


def machine_line(machine: dict) -> str:
    """A table's first line: the CPU (machine_info), Python, numpy and the load at start."""
    return (f"CPU: {machine['cpu']} ({machine['cores']} cores, {machine['usable_cores']} "
            f"usable); Python {machine['python']}, numpy {machine['numpy']}; load avg at start "
            f"{machine['load_avg_start'][0]:.2f}\n")


def threaded_cases(script: str, args, lists=()):
    """(threads, case) for each thread count of ``args.threads`` and each case a child of
    ``script`` with that many threads measured (child_cases)."""
    for threads in args.threads:
        for case in child_cases(script, threads, args, lists):
            yield threads, case


def child_cases(script: str, threads: int, args, lists=()) -> list[dict]:
    """The cases a bench script measures in a child of its own with ``threads`` numba
    threads (``script --threads-now THREADS`` and the case_options of ``args``, with the
    list-valued options named in ``lists`` too; one JSON line per case)."""
    options = ["--repeats", str(args.repeats), "--target-s", str(args.target_s)]
    for name in ("n", "d", "algorithms", *lists):
        options += [f"--{name}", ",".join(map(str, getattr(args, name)))]
    env = os.environ | {"NUMBA_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, script, "--threads-now", str(threads), *options],
                         env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def bound_in_child(algorithm: str, n: int, d: int, threads: int) -> float:
    """bench/limits.py's no-overlap bound (ns per node-dimension-step) measured in a fresh
    process with ``threads`` numba threads, for scripts whose own process must not load
    numba's thread pool (or must not be disturbed by it)."""
    code = ("import json, limits; "
            f"print(json.dumps(limits.bound(limits.measure({threads}), {algorithm!r}, {n}, {d})))")
    env = os.environ | {"NUMBA_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent, env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["bound_serial"]


def git(repo: Path, *cmd: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *cmd], check=True, capture_output=True,
                          text=True).stdout.strip()


def versions(repo: Path, ref: str) -> tuple[str, dict]:
    """An A/B run's two versions of fastgt: ``ref``'s commit (B) and a line on each, A
    being ``repo``'s working tree (uncommitted changes included)."""
    try:
        sha = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"--against {ref}: not a commit of {repo}") from None
    dirty = git(repo, "status", "--porcelain", "--", "fastgt")
    head = git(repo, "rev-parse", "--short=12", "HEAD")
    return sha, {"A": f"{repo}/fastgt (working tree at {head}"
                      f"{', with uncommitted changes' if dirty else ''})",
                 "B": f"{ref} = {sha[:12]}"}


def version_env(root: Path) -> dict:
    """The environment a child needs to import the fastgt under ``root`` (and no other: not
    the script's directory nor an installed copy)."""
    return {"PYTHONPATH": str(root), "PYTHONSAFEPATH": "1"}


def checked_child(version: str, root: Path, child: dict) -> dict:
    """A child's JSON, once its "fastgt" (the root it imported fastgt from) is ``root``."""
    if Path(child["fastgt"]).resolve() != Path(root).resolve():
        raise SystemExit(f"{version} child imported fastgt from {child['fastgt']}, not {root}")
    return child


@contextmanager
def materialised(repo: Path, sha: str):
    """Commit ``sha``'s fastgt/ package extracted under the temp directory: its root.

    The path depends only on the commit, so numba's cache (which keys a copy's kernels by
    their directory's path) finds them again on the next run: REF's kernels compile once,
    not at every run. Concurrent runs on one commit share the copy: each holds a shared
    lock on ``<root>.lock`` (an empty file, left behind) and the last one out removes it.
    """
    root = Path(tempfile.gettempdir()) / f"fastgt-against-{os.getuid()}-{sha[:12]}"
    with open(f"{root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        if not root.exists():
            fcntl.flock(lock, fcntl.LOCK_EX)  # one run extracts, the others wait for it
            if not root.exists():
                tmp = tempfile.mkdtemp(prefix=root.name + "-", dir=root.parent)
                archive = subprocess.run(["git", "-C", str(repo), "archive", sha, "fastgt"],
                                         check=True, capture_output=True).stdout
                subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
                os.rename(tmp, root)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield root
        finally:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(root)
            except BlockingIOError:
                pass  # another run still uses the copy
