"""Tasks of a sweep (fastgt.sweep.tasks): cells batched up to max_batch, fewer when their
estimated run time would pass the bound; estimates calibrated by measured times."""

import math

import numpy as np
import pytest

from fastgt.errors import FastGTError
from fastgt.sweep.cellrun import batch_key
from fastgt.sweep.grid import make_cell
from fastgt.sweep.tasks import BATCH_ELEMENTS, Planner, estimate

LIMIT = 4.0


def _cells(count: int, **params) -> list:
    base = {"topology": "ring", "n": 12, "d": 2, "steps": 20}
    return [make_cell({**base, **params, "seed": s}) for s in range(count)]


def _drain(planner: Planner) -> list[list]:
    tasks = []
    while planner:
        tasks.append(planner.next_task())
    return tasks


def test_tasks_stay_within_the_bound_whatever_the_cell_size():
    tiny = _cells(40)
    mid = _cells(40, topology="interp_ring", alpha=0.5, n=300, d=100, steps=5000)
    huge = _cells(3, n=100_000, d=100, steps=10_000)
    planner = Planner(tiny + mid + huge, slots=2, max_batch=16, seconds=LIMIT)
    assert len(planner) == 83
    tasks = _drain(planner)
    assert sorted(c.id for t in tasks for c in t) == sorted(c.id for c in tiny + mid + huge)
    for task in tasks:
        assert len({batch_key(c.params) for c in task}) == 1
        assert len(task) == 1 or sum(planner.seconds(c) for c in task) <= LIMIT
    assert [t[0] for t in tasks[:3]] == [tiny[0], mid[0], huge[0]]  # each graph first
    sizes = {}
    for task in tasks:
        sizes.setdefault(task[0].params["n"], []).append(len(task))
    assert sizes[12] == [16, 16, 8]  # tiny cells: max_batch, then the rest
    per_mid = estimate(mid[0].params)
    assert 0.2 < per_mid < LIMIT / 2  # several fit in a task, not 16
    fit = int(LIMIT // per_mid)
    assert sizes[300] == [fit] * (40 // fit) + [40 % fit] * (40 % fit > 0)
    assert sizes[100_000] == [1, 1, 1] and estimate(huge[0].params) > LIMIT


def test_workers_starting_together_take_different_graphs():
    """Each graph's first task goes out before any graph's second (each worker's first task
    decomposes a graph of its own: its spectrum is then kept for the others); groups of one
    graph (two algorithms) follow one another; every cell goes out once."""
    geo = [_cells(4, topology="geometric", n=50, radius=0.3, graph_seed=g, algorithm=a)
           for g in (0, 1, 2) for a in ("gt", "dsgd")]
    planner = Planner([c for group in geo for c in group], slots=2, seconds=LIMIT)
    tasks = _drain(planner)
    graphs = [t[0].params["graph_seed"] for t in tasks]
    assert graphs[:3] == [0, 1, 2] and len(tasks) == 12
    assert sorted(c.id for t in tasks for c in t) == sorted(c.id for g in geo for c in g)
    assert [t[0].params["algorithm"] for t in tasks[3:7]] == ["gt", "dsgd", "dsgd", "gt"]


def test_every_slot_gets_a_share_and_max_batch_caps_it():
    assert [len(t) for t in _drain(Planner(_cells(12), slots=2))] == [6, 6]
    assert [len(t) for t in _drain(Planner(_cells(5), slots=2, max_batch=2))] == [2, 2, 1]


def test_big_cells_are_batched_only_as_far_as_their_states_stay_small():
    """Cells of short runs fit many to a task by time, but their states together stay
    within BATCH_ELEMENTS (a user trial's 64 cells of n = 5 10^4 held 1.7 GB); cells
    bigger than that alone run one to a task."""
    mid = _cells(20, n=50_000, d=10, steps=2)
    assert estimate(mid[0].params) * 64 < LIMIT  # time alone would batch them all
    sizes = [len(t) for t in _drain(Planner(mid, slots=1, seconds=LIMIT))]
    assert BATCH_ELEMENTS // (50_000 * 10) == 4 and sizes == [4] * 5
    big = _cells(3, n=1_000_000, d=4, steps=1)
    assert [len(t) for t in _drain(Planner(big, slots=1, seconds=LIMIT))] == [1, 1, 1]
    small = _cells(100, n=300, d=100, steps=2)  # bench/bench_batch.py's size: still batched
    assert [len(t) for t in _drain(Planner(small, slots=1, seconds=LIMIT))] == [64, 36]


def test_measured_times_calibrate_the_estimates():
    """A task that took 4x its estimate shrinks the next tasks of its group, and of groups
    not measured yet; a group measured on its own keeps its own ratio; the latest task of a
    group counts."""
    gt = _cells(40, n=300, d=100, steps=5000)
    dsgd = _cells(40, n=300, d=100, steps=5000, algorithm="dsgd")
    planner = Planner(gt + dsgd, slots=2, seconds=LIMIT)
    first = planner.next_task()
    assert len(first) == int(LIMIT // estimate(gt[0].params)) > 1
    planner.observe(first, [{"status": "ok", "wall_time": 4 * estimate(c.params),
                             "steps_done": 5000} for c in first])
    assert math.isclose(planner.seconds(gt[0]), 4 * estimate(gt[0].params))
    assert math.isclose(planner.seconds(dsgd[0]), 4 * estimate(dsgd[0].params))
    assert len(planner.next_task()) == max(1, int(LIMIT // planner.seconds(gt[0]))) < len(first)
    # cells that did not run (failed, or a worker died) teach nothing
    planner.observe(dsgd[:2], [{"status": "failed", "wall_time": math.nan}] * 2)
    assert math.isclose(planner.seconds(dsgd[0]), 4 * estimate(dsgd[0].params))
    # a diverged task stopped early: its time is compared with the steps it ran
    planner.observe(dsgd[:2], [{"status": "diverged", "wall_time": estimate(c.params, steps=100),
                                "steps_done": 100} for c in dsgd[:2]])
    assert math.isclose(planner.seconds(dsgd[0]), estimate(dsgd[0].params))
    assert math.isclose(planner.seconds(gt[0]), 4 * estimate(gt[0].params))
    planner.observe(gt[:1], [{"status": "ok", "wall_time": 2 * estimate(gt[0].params),
                              "steps_done": 5000}])
    assert math.isclose(planner.seconds(gt[0]), 2 * estimate(gt[0].params))


def test_a_graph_from_a_file_has_an_estimate(tmp_path):
    """from_edges / from_matrix cells name no n: the estimate assumes UNKNOWN_N nodes."""
    from fastgt.sweep.tasks import UNKNOWN_N

    cell = make_cell({"topology": "from_edges", "edges": str(tmp_path / "g.txt"), "d": 4})
    ring = make_cell({"topology": "ring", "n": UNKNOWN_N, "d": 4})
    assert estimate(cell.params) == estimate(ring.params)


def test_a_small_cell_alone_runs_on_one_thread_whatever_the_workers_have(tmp_path):
    """--threads-per-worker 2 is for big cells: a cell under SMALL_RUN node-dimensions runs
    on one thread, as fastgt.run puts it (a user trial: tiny cells on two threads, slower),
    a data file's cell by the file's d (a review: the grid's default d counted); the
    numbers are those of any thread count."""
    from fastgt.config import SMALL_RUN
    from fastgt.sweep.cellrun import run_cells

    rng = np.random.default_rng(0)
    wide = tmp_path / "wide.svm"  # 200 rows, d = 3000: n d = 6e5 on 200 nodes
    wide.write_text("".join(
        f"{rng.normal():.3f} " + " ".join(f"{j}:{rng.normal():.3f}" for j in
                                          sorted(rng.choice(np.arange(1, 3000), 4, False)))
        + " 3000:1\n" for _ in range(200)))
    small = make_cell({"topology": "ring", "n": 12, "d": 2, "steps": 4, "record_every": 2})
    big = make_cell({"topology": "ring", "n": SMALL_RUN // 50, "d": 50, "steps": 4,
                     "record_every": 2})
    data = make_cell({"topology": "ring", "n": 200, "problem": "least_squares",
                      "data": str(wide), "noise": "full", "steps": 2, "record_every": 2})
    for cell, threads in ((small, 1), (big, 2), (data, 2)):
        (row, _, _), = run_cells([cell.params], threads=2)
        (ref, _, _), = run_cells([cell.params], threads=1)
        assert row["status"] == "ok" and row["threads"] == threads, row["error"]
        assert row["final_loss_nodes"] == ref["final_loss_nodes"]


def test_workers_whose_cells_would_pass_the_memory_together_are_refused(tmp_path,
                                                                         monkeypatch):
    """Each cell's least state (2 n x 104 padded doubles) fits alone; --workers 3 would
    hold the three largest at once. Refused before any work, naming --workers and the
    largest count that fits; exit 2."""
    from click.testing import CliRunner

    from fastgt import memory
    from fastgt.cli.sweep import grid as grid_cmd
    from fastgt.sweep.tasks import check_memory_at_once

    one = 2 * 1000 * 104 * 8  # n = 1000, d = 100, float64
    monkeypatch.setattr(memory, "MEMORY_CHECKED", 0)
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * one + one // 2)
    spec = tmp_path / "spec.toml"
    spec.write_text('[run]\ntopology = "ring"\nn = 1000\nd = 100\nsteps = 5\n\n'
                    '[[grid]]\nseed = [0, 1, 2, 3]\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--workers", "3"])
    assert res.exit_code == 2, res.output
    assert res.output.splitlines()[-1] == (
        "Error: --workers 3 would run the 3 largest cells at once, 4.8 MiB of state or more, "
        "where 4.0 MiB are available: allowed --workers 2 or fewer for these cells")
    assert not out.exists()
    cells = _cells(4, n=1000, d=100)
    check_memory_at_once(cells, 2)  # two fit
    check_memory_at_once(cells[:1], 3)  # one cell runs alone
    check_memory_at_once(_cells(4, n=1000, d=100, dtype="float32"), 4)  # half the bytes
    with pytest.raises(FastGTError, match=r"run the 4 largest .* allowed workers=2 or "):
        check_memory_at_once(cells, 4)
    # a cell too big alone is left to its own check: the others still run 2 at once
    check_memory_at_once([*cells[:2], *_cells(1, n=10**5, d=100)], 2)
    # a data file's d is the file's: its cells count as 0, as a graph file's
    check_memory_at_once(_cells(3, n=1000, problem="logistic", data="rows.npz"), 3)
    monkeypatch.setattr(memory, "available_memory", lambda: one // 2)  # none fits alone
    check_memory_at_once(cells, 2)
