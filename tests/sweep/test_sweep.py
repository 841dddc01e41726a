"""Sweeps end to end: failures recorded, SIGKILL + resume, Ctrl-C, concurrent sweeps on one DIR.

Each cell is a GT run on a ring (n = 30, d = 4); results are compared with direct fastgt.run
calls (runs are bit-identical for the same seed whatever the process or thread count).
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import fastgt
from fastgt.cli.results import status as status_cmd
from fastgt.cli.sweep import grid as grid_cmd
from fastgt.sweep.backends import LocalBackend
from fastgt.sweep.grid import load_spec, make_cell
from fastgt.sweep.storage import load

#: the command line, Ctrl-C raising KeyboardInterrupt as from a terminal (a shell running
#: these tests in the background, ``cmd &``, passes SIGINT on ignored, and Python keeps it so)
CLI = [sys.executable, "-c", ("import signal; signal.signal(signal.SIGINT, "
       "signal.default_int_handler); from fastgt.cli import main; main()")]
SUMMARY = re.compile(r"(\d+) cells: (\d+) ok, (\d+) diverged, (\d+) failed, (\d+) skipped "
                     r"\(done before\), (\d+) running elsewhere")


def _summary(text: str) -> dict:
    m = SUMMARY.search(text)
    assert m, text
    return dict(zip(("cells", "ok", "diverged", "failed", "skipped", "busy"), map(int, m.groups())))


def _spec(tmp_path, steps: int, seeds: int, extra: str = ""):
    path = tmp_path / "spec.toml"
    path.write_text(f'[run]\ntopology = "ring"\nn = 30\nd = 4\nsteps = {steps}\n'
                    f"record_every = {steps // 20}\n\n[[grid]]\nseed = {list(range(seeds))}\n"
                    + extra)
    return path


def _direct(seed: int, steps: int, **kw):
    return fastgt.run(algorithm="gt", topology=fastgt.topology("ring", n=30), d=4, steps=steps,
                      record_every=steps // 20, seed=seed, **kw)


def _assert_equal_to_direct(cells, traces, cell_id, steps):
    row = cells.set_index("id").loc[cell_id]
    ref = _direct(int(row["seed"]), steps)
    for m in fastgt.METRICS:
        np.testing.assert_array_equal(row[m], ref.summary[m])
    tr = traces[traces["id"] == cell_id].sort_values("step")
    pd.testing.assert_frame_equal(tr[list(ref.trace.columns)].reset_index(drop=True),
                                  ref.trace, check_dtype=False)


def _files(out, sub):
    return sorted(os.listdir(out / sub))


def _visible(out, sub):
    return [n for n in _files(out, sub) if not n.startswith(".")]


def _done(out) -> set:
    """Ids of the cells finished in DIR (their rows written)."""
    if not (out / "cells").exists():
        return set()
    return fastgt.sweep.storage.Store(out, create=False).ids()


def _started(out, cell_id) -> float:
    """When the sweep that computed the cell started."""
    store = fastgt.sweep.storage.Store(out, create=False)
    return store.provenance(cell_id)["sweep"]["started"]


def _all_readable(out):
    for sub in ("cells", "traces"):
        for name in _files(out, sub):
            if not name.startswith("."):
                assert pq.read_table(out / sub / name).num_rows >= 1


def test_failed_and_diverged_cells_are_recorded_and_resumed(tmp_path):
    # d = 10^12 passes every check but cannot be allocated: the cell fails while running
    spec = _spec(tmp_path, 200, 2, extra="\n[[grid]]\nd = 1000000000000\n"
                                          "\n[[grid]]\nstepsize = 1.5\n")
    out = tmp_path / "out"
    args = [str(spec), "--out", str(out), "--quiet"]
    res = CliRunner().invoke(grid_cmd, [*args, "--workers", "2"])
    assert res.exit_code == 3, res.output  # some cells failed or diverged
    assert _summary(res.output) == {"cells": 4, "ok": 2, "diverged": 1, "failed": 1,
                                    "skipped": 0, "busy": 0}
    cells, _ = load(out)
    failed = cells[cells.status == "failed"].iloc[0]
    assert failed["d"] == 10**12 and "MemoryError" in failed["error"]
    div = cells[cells.status == "diverged"].iloc[0]
    assert div["stepsize"] == 1.5 and 0 < div["diverged_step"] <= 200
    assert (out / "grid.toml").read_text() == load_spec(spec).to_toml()
    st = CliRunner().invoke(status_cmd, [str(out), "--failed"])
    assert "done      3 (ok 2, diverged 1)" in st.output and "failed    1" in st.output
    assert "missing   0 (of 4 cells" in st.output and "MemoryError" in st.output

    res = CliRunner().invoke(grid_cmd, [*args, "--workers", "1"])  # nothing left to do
    assert res.exit_code == 0 and _summary(res.output)["skipped"] == 4
    assert "  1 of the skipped cells had failed: --retry-failed computes them again" in \
        res.output.splitlines()
    res = CliRunner().invoke(grid_cmd, [*args, "--workers", "1", "--retry-failed"])
    assert res.exit_code == 3 and _summary(res.output)["failed"] == 1, res.output
    assert _summary(res.output)["skipped"] == 3 and "had failed" not in res.output
    # a grid of part of the cells: the others are said to be there
    one = tmp_path / "one.toml"
    one.write_text(spec.read_text().split("[[grid]]")[0] + "[[grid]]\nseed = [0]\n")
    res = CliRunner().invoke(grid_cmd, [str(one), "--out", str(out), "--quiet"])
    assert res.exit_code == 0 and "  DIR also holds 3 cells of other grids" in res.output, \
        res.output
    # fastgt status counts grid.toml's (now one.toml's) cells, the others apart
    st = CliRunner().invoke(status_cmd, [str(out), "--failed"]).output.splitlines()
    assert st[:2] == ["done      1 (ok 1, diverged 0)", "failed    0"], st
    assert "other     3 results not in grid.toml (ok 1, diverged 1, failed 1)" in st, st
    assert sum(line.endswith("(not in grid.toml)") for line in st) == 2, st
    before = {i: _started(out, i) for i in cells.id}
    res = CliRunner().invoke(grid_cmd, [*args, "--workers", "1", "--force"])
    assert _summary(res.output)["ok"] == 2 and res.exit_code == 3
    assert all(_started(out, i) > before[i] for i in before)
    again, _ = load(out)
    assert sorted(again.id) == sorted(cells.id)  # replaced, each cell once
    assert len(_visible(out, "cells")) == 1 == len(_visible(out, "traces"))  # compacted


def test_a_disconnected_random_graph_fails_its_cell_only(tmp_path):
    """erdos_renyi(n=12, prob=0.3) is disconnected for graph_seed 2 of 0..3: that cell is
    recorded as failed with its message, the other three run."""
    spec = tmp_path / "spec.toml"
    spec.write_text('[run]\ntopology = "erdos_renyi"\nn = 12\nprob = 0.3\nd = 2\n'
                    'steps = 20\nrecord_every = 10\n[[grid]]\ngraph_seed = [0, 1, 2, 3]\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--workers", "1",
                                        "--quiet"])
    assert res.exit_code != 0 and _summary(res.output)["ok"] == 3, res.output
    cells, _ = load(out)
    bad = cells[cells.status == "failed"]
    assert list(bad.graph_seed) == [2] and "disconnected" in bad.error.iloc[0]
    st = CliRunner().invoke(status_cmd, [str(out), "--failed"])
    assert "done      3 (ok 3, diverged 0)" in st.output and "failed    1" in st.output
    assert f"{bad.id.iloc[0]}  failed  graph_seed=2  DegenerateGraphError: graph is disconnected" \
        in st.output  # the parameter that varies: which cell it is
    from fastgt.cli.sweep import plot as plot_cmd

    drawn = CliRunner().invoke(plot_cmd, [str(out), "--curves", "-o", str(out / "c.png")])
    assert drawn.exit_code == 0, drawn.output  # the failed cell has no trace: said so
    assert f"1 cell failed, without a trace (fastgt status {out} --failed" in drawn.output


def _start(spec, out, workers, **kw):
    """A sweep in the background, one cell per task (--max-batch 1), each written as it
    finishes (--flush-seconds 0), so that cells finish one at a time and a kill lands
    between them."""
    return subprocess.Popen([*CLI, "grid", str(spec), "--out", str(out), "--workers",
                             str(workers), "--max-batch", "1", "--flush-seconds", "0",
                             "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def _wait_for_files(out, count, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if len(_done(out)) >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {count} cells after {timeout} s")


STEPS = 100_000  # ~0.5 s per cell on one thread


def _sweep_until(tmp_path, cells: int, written: int):
    """(spec, out, process) of a 2-worker background sweep once ``written`` cells exist."""
    spec = _spec(tmp_path, STEPS, cells)
    out = tmp_path / "out"
    proc = _start(spec, out, 2)
    _wait_for_files(out, written, proc)
    return spec, out, proc


def test_sigkill_loses_only_cells_in_flight_and_rerun_completes(tmp_path):
    spec, out, proc = _sweep_until(tmp_path, 12, 4)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)  # orphaned workers die with their process group
    _all_readable(out)
    first = _done(out)
    assert 4 <= len(first) < 12
    started = {i: _started(out, i) for i in first}

    rerun = subprocess.run([*CLI, "grid", str(spec), "--out", str(out), "--workers", "2",
                            "--quiet"], capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr
    s = _summary(rerun.stdout)
    assert s["skipped"] == len(first) and s["ok"] == 12 - len(first) and s["busy"] == 0
    ids = {c.id for c in load_spec(spec).cells()}
    for sub in ("cells", "traces"):  # compacted into one pair, no temporaries left
        assert len(_files(out, sub)) == 1 and _files(out, sub)[0].startswith("part-")
    assert _visible(out, "claims") == []
    assert all(_started(out, i) == t for i, t in started.items())  # not computed again
    assert len(pd.read_parquet(out / "cells")) == 12  # each cell once, for pandas too
    cells, traces = load(out)
    assert sorted(cells.id) == sorted(ids) and (cells.status == "ok").all()
    assert len(traces) == 12 * 21
    before, after = min(first), min(ids - first)
    for cell_id in (before, after):
        _assert_equal_to_direct(cells, traces, cell_id, STEPS)


SWEEP = """
import sys
from fastgt.sweep.executors import run_sweep
from fastgt.sweep.grid import load_spec

run_sweep(load_spec(sys.argv[1]).cells(), sys.argv[2], workers=2, progress=False,
          task_seconds=float(sys.argv[3]), flush_seconds=0)
"""


def test_sigkill_of_batched_cells_loses_at_most_one_bounded_task_per_worker(tmp_path):
    """40 batchable cells of ~0.2 s (default max_batch 64) with tasks bounded to 0.5 s of
    estimated work: they go a few to a task (not 20, a worker's share, at once), reach the disk task by task,
    and a SIGKILL loses at most one task per worker (running), the task being written and
    one queued task."""
    steps = 40_000
    spec = _spec(tmp_path, steps, 40)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", SWEEP, str(spec), str(out), "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    _wait_for_files(out, 6, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _all_readable(out)
    store = fastgt.sweep.storage.Store(out, create=False)
    done = store.ids()
    batches = [store.provenance(i)["batch"] for i in done]
    assert 1 <= max(batches) < 16  # bounded by time, not by max_batch
    cells, traces = load(out)
    # a task takes floor(0.5 s / a cell's estimate) cells: uncalibrated at first, then
    # calibrated to the measured wall time per cell of a finished task; none exceeds this cap
    from fastgt.sweep.tasks import estimate

    first = load_spec(spec).cells()[0].params
    cap = max(1, int(0.5 // estimate(first)), int(0.5 // cells["wall_time"].min()))
    lost = {i: v["state"] for v in store.claims().values() for i in v["ids"] if i not in done}
    running = sum(state == "running" for state in lost.values())
    # lost: a running task per worker, the task whose results were being written when the
    # kill came (its successor was already marked running), and the queued task
    assert cap < 16 and running <= 3 * cap and len(lost) - running <= cap, (cap, lost)
    # a kill between a part's traces and its cells leaves traces without cells: not read
    assert len(cells) == len(done) < 40 and len(traces) == 21 * len(done)
    assert set(traces["id"]) == done
    _assert_equal_to_direct(cells, traces, min(done), steps)


def test_ctrl_c_stops_cleanly(tmp_path):
    # 40 cells: on a busy machine 8 could all finish between the first file and the signal
    _, out, proc = _sweep_until(tmp_path, 40, 1)
    os.kill(proc.pid, signal.SIGINT)
    so, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err, (proc.returncode, so, err)
    assert "leaked" not in err, err  # the killed workers' semaphores: resource_tracker's warning
    assert _visible(out, "claims") == []
    assert not [n for sub in ("cells", "traces") for n in _files(out, sub) if n.startswith(".t")]
    _all_readable(out)
    # the workers are gone: nothing is written after the driver exited
    n = len(_done(out))
    time.sleep(1.5)
    assert len(_done(out)) == n < 40, n
    # and the driver said how many it kept: every cell in DIR, a fresh one
    kept = re.search(r"interrupted: the (\d+) cells finished here are kept", err)
    assert kept and int(kept.group(1)) == n, err


def _forkserver_of(pid: int) -> bool:
    """Whether process ``pid`` has started its multiprocessing forkserver (Linux's /proc)."""
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and \
                    b"forkserver" in (entry / "cmdline").read_bytes():
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_while_the_workers_start_prints_one_line(tmp_path, signum, code):
    """Ctrl-C to the whole process group, as a terminal sends it, or SIGTERM to the driver,
    while the worker server imports fastgt: the driver's one line, no traceback from the
    server (it ignored SIGINT only once its imports were done) nor from a worker whose
    start was cut short (the starts finish first)."""
    proc = _start(_spec(tmp_path, STEPS, 4), tmp_path / "out", 2)
    t0 = time.time()
    while not _forkserver_of(proc.pid) and proc.poll() is None and time.time() - t0 < 60:
        time.sleep(0.002)
    time.sleep(0.02)  # its imports take about a second
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == code and err.splitlines() == [
        "interrupted before any cell finished here; rerun the command to complete"], err


def test_concurrent_sweeps_never_compute_a_cell_twice(tmp_path):
    spec = _spec(tmp_path, STEPS // 2, 10)
    out = tmp_path / "out"
    procs = [_start(spec, out, 1) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (so, se) in zip(procs, outputs):
        assert p.returncode == 0, se
    sums = [_summary(so) for so, _ in outputs]
    assert sums[0]["ok"] + sums[1]["ok"] == 10  # every cell computed exactly once
    for s in sums:
        assert s["ok"] + s["skipped"] + s["busy"] == 10
    ids = {c.id for c in load_spec(spec).cells()}
    assert len(pd.read_parquet(out / "cells")) == 10  # no row twice, even before a load
    cells, traces = load(out)
    assert set(cells.id) == ids and len(cells) == 10 and len(traces) == 10 * 21
    _assert_equal_to_direct(cells, traces, min(ids), STEPS // 2)


def test_killing_only_the_driver_leaves_no_orphan_worker(tmp_path):
    spec = _spec(tmp_path, STEPS * 3, 8)
    out = tmp_path / "out"
    proc = _start(spec, out, 2)
    _wait_for_files(out, 1, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    t0 = time.time()
    while time.time() - t0 < 20:  # workers watch the driver (once a second) and exit
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("processes of the killed sweep are still alive")
    proc.communicate(timeout=10)  # nobody holds its pipes any more


def test_a_dying_worker_loses_its_task_and_the_pool_is_replaced():
    from fastgt.sweep.backends import LostTask

    backend = LocalBackend(1, 1)
    try:
        with pytest.raises(LostTask, match="worker process died"):
            backend.result(backend.pool.submit(os._exit, 3), 1)
        params = make_cell({"topology": "ring", "n": 12, "d": 2, "steps": 20}).params
        [(row, trace, _)] = backend.result(backend.submit([params], 1), 1)
        assert row["status"] == "ok" and len(trace["step"]) == 2
    finally:
        backend.close()


def test_compatible_cells_share_a_compiled_loop(tmp_path):
    """Cells differing only in seed / stepsize / alpha run as one batch per worker, with the
    numbers of separate runs; an incompatible cell in the same sweep runs on its own."""
    from fastgt.sweep.cellrun import run_cell
    from fastgt.sweep.executors import run_sweep
    from fastgt.sweep.grid import parse_spec

    spec = parse_spec("""
[run]
topology = "interp_ring"
n = 16
d = 3
steps = 60
record_every = 20
[[grid]]
alpha = [0.3, 0.8]
seed = [0, 1, 2]
stepsize = [0.01, 0.02]
[[grid]]
topology = "torus"
rows = 4
cols = 4
seed = [5]
""")
    cells = spec.cells()
    report = run_sweep(cells, str(tmp_path), workers=2, progress=False)
    assert report.status["ok"] == len(cells) == 13
    df, _ = fastgt.load(str(tmp_path), traces=False)
    batches = {}
    for cell in cells:
        meta = fastgt.sweep.storage.Store(str(tmp_path), create=False).provenance(cell.id)
        batches.setdefault(cell.params["topology"], set()).add(meta["batch"])
        row = df.set_index("id").loc[cell.id]
        ref, _, _ = run_cell(cell.params)
        assert row["loss_nodes"] == ref["loss_nodes"] and row["final_consensus"] == ref["final_consensus"]
    assert batches == {"interp_ring": {6}, "torus": {1}}  # 12 cells over 2 workers; 1 alone


def test_max_batch_one_runs_cells_one_by_one(tmp_path):
    from fastgt.sweep.executors import run_sweep
    from fastgt.sweep.grid import parse_spec

    cells = parse_spec('[run]\ntopology = "ring"\nn = 12\nd = 2\nsteps = 20\n'
                       '[[grid]]\nseed = [0, 1, 2, 3]\n').cells()
    run_sweep(cells, str(tmp_path), workers=2, progress=False, max_batch=1)
    store = fastgt.sweep.storage.Store(str(tmp_path), create=False)
    assert {store.provenance(c.id)["batch"] for c in cells} == {1}
    with pytest.raises(fastgt.FastGTError, match="max_batch"):
        run_sweep(cells, str(tmp_path / "x"), workers=1, progress=False, max_batch=0)


def test_a_graph_without_a_closed_form_is_decomposed_once_and_kept_in_dir(tmp_path):
    """Cells of one geometric graph in tasks of one cell each, over two workers: its
    eigenvalues (spectrum and theory alike) are kept in DIR, once, and every cell's columns
    are those of a direct computation; a later sweep's workers read them, not derive them
    again (the file is not rewritten). A user trial: each cell decomposed the graph again,
    minutes a cell at n = 4 10^4."""
    from fastgt.sweep.executors import run_sweep
    from fastgt.sweep.grid import parse_spec

    spec = ('[run]\ntopology = "geometric"\nn = 40\nradius = 0.4\nd = 2\nsteps = 20\n'
            'record_every = 10\n[[grid]]\nseed = [{}]\n')
    run_sweep(parse_spec(spec.format("0, 1, 2, 3")).cells(), str(tmp_path), workers=2,
              progress=False, max_batch=1)
    W = fastgt.topology("geometric", n=40, radius=0.4)
    kept = list((tmp_path / "eigenvalues").glob("*.npy"))
    assert [f.stem for f in kept] == [W.fingerprint()]
    stamp = (kept[0].stat().st_ino, kept[0].stat().st_mtime_ns)
    run_sweep(parse_spec(spec.format("4, 5")).cells(), str(tmp_path), workers=2,
              progress=False, max_batch=1)
    assert (kept[0].stat().st_ino, kept[0].stat().st_mtime_ns) == stamp
    df = load(str(tmp_path), traces=False)[0]
    assert len(df) == 6 and (df["status"] == "ok").all()
    assert (df["lambda2"] == W.spectrum().lambda2).all()
    row = df.iloc[0]
    ref = fastgt.theory.theory_columns(W, "gt", row["stepsize"], row["sigma2"], "quadratic",
                                       row["noise"], 2, record_every=10)
    assert np.isfinite(ref["theory_loss_nodes"])
    assert (df["theory_loss_nodes"] == ref["theory_loss_nodes"]).all()


def test_the_checks_of_a_grid_keep_and_read_their_spectra_in_dir(tmp_path, monkeypatch):
    """d2's check needs lambda_n of each graph: the driver derives it once while it judges
    the spec and keeps it in DIR as the sweep starts, before any task (minutes at n = 5 10^5
    on a random graph, which every first worker derived again); a spec refused, and a dry
    run, write nothing; a dry run reads what DIR keeps."""
    from fastgt.sweep import executors

    text = ('[run]\nalgorithm = "d2"\ntopology = "geometric"\nn = 40\nradius = 0.4\n'
            'lazy = true\nd = 2\nsteps = 20\n[[grid]]\nseed = [0, 1]\n')
    spec = tmp_path / "spec.toml"
    key = fastgt.topology("geometric", n=40, radius=0.4, lazy=True).fingerprint()
    out = tmp_path / "out"
    spec.write_text(text + '[[grid]]\ntopology = "hypercube"\nn = 6\n')  # refused
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out)])
    assert res.exit_code == 2 and "hypercube" in res.output, res.output
    spec.write_text(text)
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--dry-run"])
    assert res.exit_code == 0 and "2 cells, 0 done" in res.output, res.output
    assert not out.exists()
    seen = []

    class Watching(_OneSlot):
        def submit(self, plist, threads, derived_dir):
            seen.append(sorted(f.name for f in (out / "eigenvalues").glob("*.npy")))
            return super().submit(plist, threads, derived_dir)

    monkeypatch.setattr(executors, "make_backend", lambda *args: Watching(str(out)))
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0] == [f"{key}.npy"]
    # a kept lambda_n below -1/3 (planted): the dry run judges d2 by it
    np.save(out / "eigenvalues" / f"{key}.npy", np.linspace(-0.5, 1.0, 40))
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--dry-run"])
    assert res.exit_code == 2 and "lambda_n = -0.5;" in res.output, res.output


class _OneSlot:
    """A backend with one worker and room for one queued task that runs each task when the
    driver waits for it, noting first the state of every claim and what ``fastgt status``
    says."""

    slots, capacity = 1, 2

    def __init__(self, out):
        self.out, self.tasks, self.states, self.status = out, [], [], []

    def submit(self, plist, threads, derived_dir):
        self.tasks.append(plist)
        return len(self.tasks) - 1

    def wait_any(self, futures, timeout=None):
        claims = fastgt.sweep.storage.Store(self.out, create=False).claims()
        self.states.append({tuple(v["ids"]): v["state"] for v in claims.values()})
        self.status.append(CliRunner().invoke(status_cmd, [self.out]).output)
        return [futures[0]]

    def result(self, fut, count):
        from fastgt.sweep.cellrun import run_cells

        return run_cells(self.tasks[fut])

    def close(self, terminate=False):
        pass


THREE = '[run]\ntopology = "ring"\nn = 12\nd = 2\nsteps = 20\n[[grid]]\nseed = [0, 1, 2]\n'


def _scripted_sweep(monkeypatch, backend, text=THREE, **kw):
    """run_sweep of the cells of spec ``text`` on a scripted backend, one cell a task."""
    from fastgt.sweep import executors
    from fastgt.sweep.grid import parse_spec

    cells = parse_spec(text).cells()
    monkeypatch.setattr(executors, "make_backend", lambda *args: backend)
    return cells, executors.run_sweep(cells, backend.out, progress=False, max_batch=1, **kw)


def test_claims_and_status_tell_queued_from_running_cells(tmp_path, monkeypatch):
    """Of the tasks in flight the first ``slots`` are running, the others queued; when a
    task ends the next one is marked running. ``fastgt status`` counts both."""
    backend = _OneSlot(str(tmp_path))
    cells, report = _scripted_sweep(monkeypatch, backend, flush_seconds=0)
    assert report.status["ok"] == 3
    a, b, c = ((cell.id,) for cell in cells)
    assert backend.states == [{a: "running", b: "queued"}, {b: "running", c: "queued"},
                              {c: "running"}]
    for out, (running, queued) in zip(backend.status, [(1, 1), (1, 1), (1, 0)]):
        assert f"running   {running}\nqueued    {queued}\n" in out, out


def test_the_progress_bar_shows_the_queued_cells(tmp_path, monkeypatch):
    """The bar's running and queued counts are those after the next tasks were submitted
    (a user trial: queued was always 0, counted between a task's end and the next
    submission), and the last ones none."""
    import tqdm

    from fastgt.sweep import executors
    from fastgt.sweep.grid import parse_spec

    shown = []

    class Bar:
        def __init__(self, **kw):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, k):
            pass

        def set_postfix(self, **kw):
            shown.append((kw["running"], kw["queued"]))

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    backend = _OneSlot(str(tmp_path))
    monkeypatch.setattr(executors, "make_backend", lambda *args: backend)
    executors.run_sweep(parse_spec(THREE).cells(), backend.out, max_batch=1)
    assert shown == [(1, 1), (1, 0), (0, 0)]  # each change once


class _LostSignal(_OneSlot):
    """A backend in whose wait a SIGTERM's exception is lost (as in a gc callback, which
    Python only prints) and nothing finishes: the driver must stop all the same."""

    def wait_any(self, futures, timeout=None):
        from fastgt.cli.sweep import Terminated
        from fastgt.sweep.signals import stop

        self.waits = [*getattr(self, "waits", []), timeout]
        assert len(self.waits) < 3, "the lost stop was never raised"
        try:
            stop(Terminated())
        except Terminated:
            pass
        return set()


def test_a_stop_whose_exception_was_lost_still_stops_the_sweep(tmp_path, monkeypatch):
    from fastgt.cli.sweep import Terminated
    from fastgt.sweep.executors import POLL

    backend = _LostSignal(str(tmp_path))
    with pytest.raises(Terminated) as stopped:
        _scripted_sweep(monkeypatch, backend)
    assert backend.waits == [POLL]  # a bounded wait, then the stop
    assert stopped.value.sweep_report.status["ok"] == 0
    assert fastgt.sweep.storage.Store(str(tmp_path), create=False).claims() == {}


class _SecondStop(_OneSlot):
    """Task 0 finishes, then a Ctrl-C; and another while the workers are stopped."""

    def wait_any(self, futures, timeout=None):
        if 0 in futures:
            return [0]
        raise KeyboardInterrupt

    def close(self, terminate=False):
        if terminate:
            raise KeyboardInterrupt


def test_a_second_stop_during_the_clean_up_keeps_the_finished_cells_and_their_count(
        tmp_path, monkeypatch):
    backend = _SecondStop(str(tmp_path))
    with pytest.raises(KeyboardInterrupt) as stopped:
        _scripted_sweep(monkeypatch, backend)
    assert stopped.value.sweep_report.status["ok"] == 1
    store = fastgt.sweep.storage.Store(str(tmp_path), create=False)
    assert len(store.ids()) == 1 and store.claims() == {}


@pytest.mark.parametrize("block", ["signals_polled", "signals_deferred"])
def test_an_ignored_ctrl_c_does_not_swallow_a_sigterm(block):
    """A sweep's worker ignores Ctrl-C: a Ctrl-C to the process group during a cell must
    not count as the first of two signals, or the driver's SIGTERM that follows is taken
    for the second, handed to Ctrl-C's handler (ignore) and lost, and the driver waits for
    the worker forever. The SIGTERM ends the process."""
    code = (f"import os, signal, time\nfrom fastgt.runtime import {block}\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            f"with {block}():\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(0.2)\n"
            "print('survived')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == -signal.SIGTERM and "survived" not in res.stdout, res


def test_two_signals_in_a_block_both_reach_their_handlers_even_when_one_raises():
    from fastgt.runtime import signals_deferred

    seen = []
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGTERM, lambda s, f: seen.append("term"))
        signal.signal(signal.SIGINT, lambda s, f: seen.append("int"))
        with signals_deferred():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)  # the second: both handed over at once
            seen.append("block")
        assert seen == ["int", "term", "block"]
        seen.clear()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C's raises
        with pytest.raises(KeyboardInterrupt), signals_deferred():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
        assert seen == ["term"]  # handed over after Ctrl-C's raised
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def test_signals_in_a_deferred_block_are_handled_at_its_end_or_at_once_when_repeated():
    from fastgt.runtime import signals_deferred

    # the block failed: the signal still acts
    with pytest.raises(KeyboardInterrupt) as stop, signals_deferred():
        signal.raise_signal(signal.SIGINT)
        raise OSError("the block failed")
    assert isinstance(stop.value.__context__, OSError)
    reached = []
    with pytest.raises(KeyboardInterrupt), signals_deferred():  # a second Ctrl-C: at once
        signal.raise_signal(signal.SIGINT)
        reached.append(1)
        signal.raise_signal(signal.SIGINT)
        reached.append(2)
    assert reached == [1] and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_sweep_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path, monkeypatch):
    """A background job (`fastgt grid ... &` in a script) starts with SIGINT ignored: the
    terminal's Ctrl-C is not its to obey. SIGTERM still stops it."""
    seen = {}

    def run_sweep(*args, **kwargs):
        seen.update({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)})
        return fastgt.sweep.report.SweepReport()

    monkeypatch.setattr("fastgt.sweep.executors.run_sweep", run_sweep)
    spec = tmp_path / "g.toml"
    spec.write_text(THREE)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "o"), "--quiet"])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # restored as it was
    finally:
        signal.signal(signal.SIGINT, previous)
    assert res.exit_code == 0, res.output
    assert seen[signal.SIGINT] is signal.SIG_IGN and seen[signal.SIGTERM] is not signal.SIG_DFL


def test_a_closed_pool_closes_again():
    backend = LocalBackend(1, 1)
    backend.close()
    backend.close(terminate=True)  # as after a failed restart: no AttributeError
    with pytest.raises(RuntimeError, match="after shutdown"):
        backend.pool.submit(print)


def test_dask_tells_a_lost_task_from_a_failing_one():
    from fastgt.sweep.backends import DaskBackend, LostTask

    class KilledWorker(Exception):
        pass

    class Done:
        def __init__(self, err):
            self.err = err

        def result(self):
            raise self.err

    backend = object.__new__(DaskBackend)  # no cluster: result() only
    backend.futures = set()
    with pytest.raises(LostTask, match="dask task lost: KilledWorker: gone"):
        backend.result(Done(KilledWorker("gone")), 2)
    rows = backend.result(Done(ValueError("bad\nvalue")), 2)
    assert [r["status"] for r, _, _ in rows] == ["failed"] * 2
    assert rows[0][0]["error"] == "dask task: ValueError: bad value"


class _Scripted(_OneSlot):
    """Two slots; task 0 is done at once, task 1 (its worker killed) is lost, task 2 ends
    only after the driver has waited for it once without anything done, and then finds
    task 0's cells on disk: a wait is bounded by the flush interval, not by the tasks."""

    slots, capacity = 2, 3

    def __init__(self, out):
        super().__init__(out)
        self.waits = []

    def wait_any(self, futures, timeout=None):
        self.waits.append(timeout)
        if 0 in futures or 1 in futures:
            return [f for f in futures if f in (0, 1)]
        if len(self.waits) == 2:  # nothing done yet: the driver must not wait for ever
            assert timeout is not None and timeout <= 0.2, timeout
            time.sleep(timeout)
            return set()
        return futures

    def result(self, fut, count):
        from fastgt.sweep.backends import LostTask

        if fut == 1:
            raise LostTask("worker process died: killed")
        if fut == 2:  # written while the driver waited for this task
            self.on_disk = fastgt.sweep.storage.Store(self.out, create=False).ids()
        return super().result(fut, count)


def test_a_lost_task_is_not_recorded_and_finished_cells_do_not_wait_for_others(tmp_path,
                                                                               monkeypatch):
    from fastgt.sweep import executors

    backend = _Scripted(str(tmp_path))
    cells, report = _scripted_sweep(monkeypatch, backend, flush_seconds=0.2)
    first, lost, last = (c.id for c in cells)
    assert backend.on_disk == {first}
    assert (report.status["ok"], report.lost, report.failed) == (2, 1, 0)
    assert "1 lost (their worker died)" in report.line()
    store = fastgt.sweep.storage.Store(str(tmp_path), create=False)
    assert store.ids() == {first, last} and store.claims() == {}
    # a rerun computes the lost cell (nothing was recorded for it)
    monkeypatch.undo()
    again = executors.run_sweep(cells, str(tmp_path), progress=False, workers=1)
    assert (again.skipped, again.status["ok"]) == (2, 1) and store.ids() == {first, lost, last}
    # fastgt grid says so, exit code 3
    spec = tmp_path / "g.toml"
    spec.write_text(THREE)
    backend = _Scripted(str(tmp_path / "cli"))
    monkeypatch.setattr(executors, "make_backend", lambda *args: backend)
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "cli"), "--quiet",
                                        "--max-batch", "1", "--flush-seconds", "0.2"])
    assert res.exit_code == 3 and res.output.splitlines()[-1] == (
        f"Error: 1 cells were lost (worker process died: killed; e.g. cell {lost}): rerun "
        "the command to compute them"), res.output


def test_workers_import_the_drivers_fastgt_not_the_working_directorys(tmp_path):
    """A sweep started in a directory holding another ``fastgt`` (a source checkout beside
    an installed copy) runs its workers on the driver's own package: the forkserver's
    ``python -c`` would otherwise put the working directory first on sys.path."""
    decoy = tmp_path / "checkout"
    (decoy / "fastgt").mkdir(parents=True)
    (decoy / "fastgt" / "__init__.py").write_text("")
    (decoy / "fastgt" / "cellrun.py").write_text(  # imports fine, so the forkserver keeps it
        "def fail(*args):\n    raise RuntimeError('the decoy fastgt')\n\n"
        "ping = worker_init = run_cells = fail\n")
    spec = _spec(tmp_path, 200, 2)
    # a script elsewhere, as an installed entry point: the driver imports the real package
    script = tmp_path / "entry.py"
    script.write_text("from fastgt.cli import main\n\nif __name__ == '__main__':\n    main()\n")
    proc = subprocess.run([sys.executable, str(script), "grid", str(spec), "--out",
                           str(tmp_path / "out"), "--workers", "2", "--max-batch", "1", "--quiet"],
                          cwd=decoy, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _summary(proc.stdout + proc.stderr)["ok"] == 2


def test_time_varying_topologies_in_a_grid(tmp_path):
    """One-peer, random matchings and a cycle given as topology tables: cells equal to
    direct runs, p_eff beside the spectrum, theory columns empty with the reason said once,
    and a list of lists of tables as a grid axis."""
    spec = tmp_path / "tv.toml"
    spec.write_text(
        '[run]\nd = 3\nsteps = 40\nrecord_every = 10\nstepsize = 0.05\n\n'
        '[[grid]]\ntopology = ["one_peer_exponential", "random_matching"]\nn = 16\n'
        'seed = [0, 1]\n\n'
        '[[grid]]\ntopology = "cycle"\n'
        'matrices = [[{topology = "ring", n = 16}, {topology = "torus", rows = 4, cols = 4}],\n'
        '            [{topology = "complete", n = 16}]]\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--workers", "1",
                                        "--quiet"])
    assert res.exit_code == 0, res.output
    assert res.output.count("theory_* columns stay empty") == 1
    assert "one_peer_exponential, random_matching" in res.output  # cycle too, in the list
    cells, _ = load(out)
    assert len(cells) == 6 and (cells["status"] == "ok").all()
    assert cells["theory_loss_nodes"].isna().all()
    one_peer = cells[cells["topology"] == "one_peer_exponential"]
    assert (one_peer["p_eff"] == 1.0).all() and one_peer["lambda2"].isna().all()
    row = cells[cells["topology"] == "random_matching"].set_index("seed").loc[1]
    direct = fastgt.run(topology="random_matching", n=16, d=3, steps=40, record_every=10,
                        stepsize=0.05, seed=1)
    assert row["loss_nodes"] == direct.summary["loss_nodes"]
    cyc = cells[cells["topology"] == "cycle"]
    assert sorted(cyc["p_eff"].round(12)) == sorted(
        [round(fastgt.topology("cycle", matrices=m).spectrum().p_eff, 12) for m in (
            [fastgt.topology("ring", n=16), fastgt.topology("torus", rows=4, cols=4)],
            [fastgt.topology("complete", n=16)])])
    direct = fastgt.run(topology="cycle", matrices=[{"topology": "complete", "n": 16}], d=3,
                        steps=40, record_every=10, stepsize=0.05)
    row = cyc[cyc["p_eff"] == 1.0].iloc[0]
    assert row["loss_nodes"] == direct.summary["loss_nodes"]


def test_bad_executor_options_and_a_backend_that_fails_leave_out_untouched(tmp_path,
                                                                           monkeypatch):
    """A scheduler that is no address, workers=0: one line, exit 2, before the spec is read
    (no note printed) and before --out exists. A backend that fails to start (an
    unreachable scheduler) leaves an existing sweep's directory as it was."""
    spec = tmp_path / "g.toml"
    spec.write_text('[run]\ntopology = "ring"\nn = 6\nd = 2\nsteps = 4\n[[grid]]\nseed = [0, 1]\n')
    out = tmp_path / "out"
    for opts, fragment in ((["--executor", "dask", "--scheduler", "foo"],
                            "--scheduler 'foo' is invalid: allowed 'local'"),
                           (["--workers", "0"], "--workers 0 is invalid")):
        res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), *opts, "--quiet"])
        assert res.exit_code == 2 and res.output.startswith("Error: ")
        assert fragment in res.output and len(res.output.strip().splitlines()) == 1
        assert not out.exists()
    ok = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--workers", "1", "--quiet"])
    assert ok.exit_code == 0, ok.output
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    spec.write_text(spec.read_text().replace("[0, 1]", "[0, 1, 2]"))  # a cell to do

    def unreachable(*args, **kwargs):
        raise fastgt.FastGTError("scheduler='tcp://127.0.0.1:1' is unreachable")

    monkeypatch.setattr("fastgt.sweep.executors.make_backend", unreachable)
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--quiet"])
    assert res.exit_code == 2 and "unreachable" in res.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_ctrl_c_while_the_spec_is_read_exits_130(tmp_path, monkeypatch):
    """An interrupt before the sweep's own handler (here: while the spec is read) exits
    130 with one line, as a sweep's Ctrl-C does (click alone would say 'Aborted!', 1)."""
    from fastgt.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("fastgt.sweep.grid.load_spec", interrupted)
    spec = tmp_path / "g.toml"
    spec.write_text('[run]\ntopology = "ring"\nn = 6\n')
    res = CliRunner().invoke(main, ["grid", str(spec), "--out", str(tmp_path / "o")])
    assert res.exit_code == 130 and res.output.strip() == "interrupted"
