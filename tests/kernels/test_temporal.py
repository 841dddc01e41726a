"""Temporal blocking (kernels/temporal.py): passes of several steps give the bits of step
by step, and the plan takes it only where it holds."""

import dataclasses

import numpy as np
import pytest

import fastgt
from fastgt import memory
from fastgt.algorithms import ALGORITHMS, Batch, Cell
from fastgt.kernels import temporal
from fastgt.kernels.temporal import Plan, bandwidth, reach
from fastgt.problems import make_noise
from fastgt.runtime import numba_threads

#: the algorithms whose steps may run in passes (ATC-GT's two phases, centralized's mean
#: term: step by step), read from their declarations
SINGLE_PHASE = [a for a, s in ALGORITHMS.items()
                if s.temporal and s.phases == 1 and s.mixing is None]
#: topologies, and plans forced on each (plan's ``temporal``) with the threads and whether
#: cells run in parallel: a ring in blocks of 1 to 4 rows (regions and triangles wrap
#: around it), a torus in blocks of whole grid rows, a torus as a grid (blocks of 1 to 3
#: nodes of a grid row, in 1 to 3 regions along a row: every phase of a pass; one region
#: along the rows and two across them; regions in turn on one thread per cell)
TOPOLOGIES = {
    "ring": (("ring", {"n": 40, "self_weight": 0.2}),
             [((3, 1), 1, False), ((2, 4), 2, False), ((7, 1), 2, False), ((3, 2), 2, True)]),
    "torus": (("torus", {"rows": 16, "cols": 4}),
              [((3, 1), 1, False), ((2, 4), 2, False), ((7, 1), 2, False), ((3, 2), 2, True)]),
    "grid": (("torus", {"rows": 10, "cols": 24}),
             [((2, 4, 2), 1, False), ((3, 4, 2), 2, False), ((2, 8, 1), 2, False),
              ((3, 2, 3), 2, True), ((2, 8, 1), 2, True), ((2, 4, 4), 2, False)]),
}


def _batch(W, noise, temporal_, problem="hetero_quadratic", local=1, dtype="float64", d=5):
    kw = {"zeta": 1.0} if problem == "hetero_quadratic" else {}
    if problem == "logistic":
        kw, noise = {"samples": 6, "batch_size": 2}, "minibatch"
    prob = fastgt.problem(problem, **kw).build(W.n, d)
    cells = [Cell(W, make_noise(noise, 1.0, prob.d, W), 0.02, 3),
             Cell(W, make_noise(noise, 0.5, prob.d, W), 0.05, 8)]
    return Batch(cells, prob, local_steps=local, temporal=temporal_, dtype=dtype)


def _advance(algorithm, batch, chunks, by_cells=False, threads=1):
    """Every state array after advancing the batch through ``chunks`` kernel calls."""
    algo = ALGORITHMS.get(algorithm, algorithm)  # a name, or an Algorithm
    arrays = algo.init(batch)
    cur, t = 0, 0
    with numba_threads(threads):
        for k in chunks:
            cur = algo.advance(batch, arrays, cur, t, k, by_cells)
            t += k
    return cur, [np.array(a) for a in arrays]


def _same(a, b):
    return a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))


@pytest.mark.parametrize("noise", ["none", "gaussian", "structured"])
@pytest.mark.parametrize("topology", list(TOPOLOGIES))
@pytest.mark.parametrize("algorithm", SINGLE_PHASE)
def test_passes_give_the_bits_of_step_by_step(algorithm, topology, noise):
    """Passes of 2, 3 and 7 steps, chunked by the metrics' records into calls of 4, 1 and
    6 steps (a pass cut short by its call), local steps, 1 and 2 threads, cells in
    parallel: every array equals step by step's, bit for bit."""
    (name, params), variants = TOPOLOGIES[topology]
    W = fastgt.topology(name, **params)
    for local in (1, 3):
        ref = _advance(algorithm, _batch(W, noise, False, local=local), (4, 1, 6))
        for forced, threads, by_cells in variants:
            batch = _batch(W, noise, forced, local=local)
            assert batch.plan.levels == forced[0]  # the passes do run
            assert (batch.plan.width > 1) == (topology == "grid")
            got = _advance(algorithm, batch, (4, 1, 6), by_cells, threads)
            assert _same(got, ref), (local, forced, threads, by_cells)


@pytest.mark.parametrize("algorithm", SINGLE_PHASE)
@pytest.mark.parametrize("problem,dtype", [("quadratic", "float64"), ("quadratic", "float32"),
                                           ("hetero_quadratic", "float32"),
                                           ("logistic", "float64")])
def test_passes_keep_the_bits_of_other_problems_and_float32(algorithm, problem, dtype):
    W = fastgt.topology("ring", n=36)
    ref = _advance(algorithm, _batch(W, "gaussian", False, problem, dtype=dtype), (5, 4))
    batch = _batch(W, "gaussian", (4, 2), problem, dtype=dtype)
    assert batch.plan.levels == 4
    assert _same(_advance(algorithm, batch, (5, 4), threads=2), ref)


def test_a_wrong_order_is_caught():
    """The test above can fail: passes that ignore the neighbours' reach (each level's
    block computed before the next block of the level below) give other numbers."""
    W = fastgt.topology("ring", n=40)
    ref = _advance("dsgd", _batch(W, "none", False), (6,))
    batch = _batch(W, "none", (3, 2))
    batch.plan = Plan(batch.plan.levels, batch.plan.blocks, reach=0)
    assert not _same(_advance("dsgd", batch, (6,)), ref)
    torus = fastgt.topology("torus", rows=10, cols=24)
    ref = _advance("dsgd", _batch(torus, "none", False), (6,))
    batch = _batch(torus, "none", (3, 4, 2))
    batch.plan = Plan(batch.plan.levels, batch.plan.blocks, batch.plan.width, 1, 0,
                      batch.plan.regions)  # no reach along the grid rows
    assert not _same(_advance("dsgd", batch, (6,)), ref)


def test_an_algorithm_may_keep_to_step_by_step():
    """Algorithm.temporal False, or two phases: its batches plan no passes (``passes``),
    and a batch planned with passes (here in a wrong order) still runs it step by step."""
    assert ALGORITHMS["gt"].passes is None and ALGORITHMS["gt_atc"].passes is False
    W = fastgt.topology("ring", n=40)
    ref = _advance("dsgd", _batch(W, "none", False), (6,))
    batch = _batch(W, "none", (3, 2))
    batch.plan = Plan(batch.plan.levels, batch.plan.blocks, reach=0)
    stepwise = dataclasses.replace(ALGORITHMS["dsgd"], temporal=False)
    assert stepwise.passes is False
    assert _same(_advance(stepwise, batch, (6,)), ref)


def test_plan_is_step_by_step_where_passes_do_not_hold():
    """A mean term (interp_ring), a drawn matching, a bandwidth that leaves too few blocks
    (the one-peer exponential graph's far neighbours), a small state: step by step."""
    d = 5
    for W in (fastgt.topology("interp_ring", n=40, alpha=0.6),
              fastgt.topology("random_matching", n=40),
              fastgt.topology("one_peer_exponential", n=64)):
        batch = _batch(W, "none", (3, 1), problem="quadratic", d=d)
        assert batch.plan == Plan(1, int(fastgt.kernels.mixing.n_blocks(W.n)))
    # by itself: rings of 512-byte rows (d = 64) from MIN_BYTES a state array, of 64-byte
    # rows (d = 8) from SHORT_BYTES, a torus in whole grid rows (64 columns, half a block's
    # rows) from BAND_BYTES, a torus in a grid from wide_bytes()
    for d, size in ((64, temporal.MIN_BYTES), (8, temporal.SHORT_BYTES)):
        row = 8 * d
        ring = fastgt.topology("ring", n=size // row)
        assert _batch(ring, "none", None, problem="quadratic", d=d).plan == Plan(
            temporal.LEVELS, ring.n // (temporal.BLOCK_BYTES // row))
        below = fastgt.topology("ring", n=size // row - 8)
        assert _batch(below, "none", None, problem="quadratic", d=d).plan.levels == 1
    for rows, levels in ((temporal.BAND_BYTES // 512 // 64, temporal.LEVELS),
                         (temporal.BAND_BYTES // 512 // 64 - 1, 1)):
        torus = fastgt.topology("torus", rows=rows, cols=64)
        plan_ = _batch(torus, "none", None, problem="quadratic", d=64).plan
        assert plan_.levels == levels and plan_.width == 1
    cols = 2 * temporal.BLOCK_BYTES // 512  # grid rows longer than a block's rows
    for rows, levels in ((temporal.wide_bytes() // 512 // cols, temporal.LEVELS),
                         (temporal.wide_bytes() // 512 // cols - 1, 1)):
        torus = fastgt.topology("torus", rows=rows, cols=cols)
        plan_ = _batch(torus, "none", None, problem="quadratic", d=64).plan
        assert plan_.levels == levels and plan_.width == (1 if levels == 1 else cols // 16)
    ring = fastgt.topology("ring", n=64)
    with pytest.raises(ValueError, match="levels"):
        _batch(ring, "none", (temporal.LEVELS_MAX + 1, 4))


def test_grids_go_in_passes_beyond_the_last_level_cache(tmp_path, monkeypatch):
    """A torus as a grid goes in passes from half the last-level cache a state array (read
    from sysfs: the highest level's size), within BAND_BYTES to WIDE_BYTES; WIDE_BYTES
    where the size is not known."""
    def caches(*entries):
        memory.llc_bytes.cache_clear()
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        for k, (level, size) in enumerate(entries):
            (folder / f"index{k}").mkdir(parents=True)
            (folder / f"index{k}" / "level").write_text(f"{level}\n")
            (folder / f"index{k}" / "size").write_text(f"{size}\n")
        monkeypatch.setattr(memory, "CACHES", folder)
        return memory.llc_bytes(), temporal.wide_bytes()

    monkeypatch.setattr(temporal, "WIDE_BYTES", 128 << 20)
    monkeypatch.setattr(temporal, "BAND_BYTES", 8 << 20)
    try:
        assert caches((1, "48K"), (1, "32K"), (2, "1024K"), (3, "32768K")) == (32 << 20,
                                                                            16 << 20)
        assert memory.cache_sizes() == {1: 32 << 10, 2: 1 << 20, 3: 32 << 20}  # by level
        assert caches((3, "4M"), (2, "2048K")) == (4 << 20, 8 << 20)  # BAND_BYTES at least
        assert caches((2, "2M"), (3, "1G")) == (1 << 30, 128 << 20)  # WIDE_BYTES at most
        assert caches((1, "48K"), (3, "garbled")) == (48 << 10, 8 << 20)
        assert caches() == (None, 128 << 20)  # nothing said
    finally:
        memory.llc_bytes.cache_clear()


def test_bandwidth_and_reach():
    """The torus's rows reach a grid row away (cols); blocks hold at least that many rows
    but the last, whose shortfall the reach makes up: checked against every row's owner."""
    W = fastgt.topology("torus", rows=6, cols=7)
    batch = _batch(W, "none", False)
    assert bandwidth(batch.mix, W.n) == 7
    assert bandwidth(_batch(fastgt.topology("ring", n=30), "none", False).mix, 30) == 1
    for n in range(2, 60):
        for blocks in range(1, n + 1):
            size = -(-n // blocks)
            if (blocks - 1) * size >= n:
                continue  # an empty last block: plan never makes one
            owner = np.minimum(np.arange(n) // size, blocks - 1)
            for bw in range(5):
                far = max(min((owner[(i + s) % n] - owner[i]) % blocks,
                              (owner[i] - owner[(i + s) % n]) % blocks)
                          for i in range(n) for s in range(-bw, bw + 1))
                assert reach(n, blocks, bw) >= far, (n, blocks, bw)


def test_a_torus_is_a_grid():
    """A torus whose grid rows exceed the blocks' rows goes in blocks of a few nodes of a
    grid row (the largest divisor of cols up to ``nodes``), regions along the rows of
    about ``rows`` nodes and at least 2 levels blocks; a ring is no grid, nor is a torus
    too narrow for the levels or whose cols has no divisor near ``nodes``."""
    W = fastgt.topology("torus", rows=10, cols=24)
    assert _batch(W, "none", (2, 8, 5)).plan == Plan(2, 60, width=6, reach=1, across=1,
                                                     regions=1)
    assert _batch(W, "none", (2, 8, 3)).plan == Plan(2, 80, width=8, reach=1, across=1,
                                                     regions=2)
    assert _batch(W, "none", (3, 4, 1)).plan.regions == 4  # 24 // (2 3): 6 nodes a region
    assert _batch(W, "none", (7, 4, 6)).plan.width == 1  # too narrow: whole grid rows
    prime = fastgt.topology("torus", rows=10, cols=23)  # blocks of 1 node, not 6: rows
    assert _batch(prime, "none", (2, 4, 6)).plan == Plan(2, 10, reach=1)
    ring = fastgt.topology("ring", n=40)
    assert _batch(ring, "none", (2, 1, 4)).plan == Plan(2, 40)


def _passes_everywhere(monkeypatch):
    """The thresholds of temporal passes lowered: small states go in passes too."""
    for name in ("MIN_BYTES", "BAND_BYTES", "WIDE_BYTES", "SHORT_BYTES", "BLOCK_BYTES",
                 "GRID_BLOCK_BYTES"):
        monkeypatch.setattr(temporal, name, 64)


def test_run_takes_the_plan_by_itself(monkeypatch):
    """fastgt.run on a state above the thresholds (lowered here) runs in passes (a torus: as a
    grid, in regions), with the trace and final state of step by step."""
    kw = {"topology": fastgt.topology("torus", rows=10, cols=16), "problem": "hetero_quadratic",
          "noise": "structured", "d": 8, "steps": 23, "record_every": 5, "seed": 2}
    ref = fastgt.run(**kw)
    _passes_everywhere(monkeypatch)
    seen = []  # (n, plan) of every batch (a first run's compile may make others: warm-up)
    real_plan = temporal.plan
    monkeypatch.setattr(fastgt.algorithms.base, "plan",
                        lambda mix, n, *a: seen.append((n, real_plan(mix, n, *a))) or seen[-1][1])
    got = fastgt.run(**kw)
    assert [p for n, p in seen if n == 160] == [
        Plan(temporal.LEVELS, 160, width=16, reach=1, across=1, regions=2)]
    assert np.array_equal(got.trace.to_numpy(), ref.trace.to_numpy(), equal_nan=True)
    for key in ref.state:
        assert np.array_equal(got.state[key], ref.state[key])
    seen.clear()
    fastgt.run(**dict(kw, algorithm="gt_atc", steps=2))  # two phases: no blocks of a plan
    assert [p for n, p in seen if n == 160] == [Plan(1, int(fastgt.kernels.mixing.n_blocks(160)))]


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_a_run_returns_to_python_between_short_kernel_calls(algorithm, monkeypatch):
    """A run recorded once (record_every = steps) still returns to Python every CALL_S
    seconds or so: Ctrl-C and the progress bar waited for its end (a user trial). With
    CALL_S tiny every call is one step, or one pass where the run goes in passes; with
    CALL_S huge the calls grow GROWTH-fold; the trace and state are the bits of calls of
    whole records (D-SGD writes X only at a call that ends at a record)."""
    from fastgt import engine

    kw = {"topology": fastgt.topology("torus", rows=10, cols=16), "problem": "hetero_quadratic",
          "noise": "gaussian", "d": 8, "steps": 40, "record_every": 40, "seed": 2,
          "algorithm": algorithm}

    class Whole(engine._Calls):  # the calls before: one per record
        def next(self, left):
            return left

    with monkeypatch.context() as m:
        m.setattr(engine, "_Calls", Whole)
        seen = []
        ref = fastgt.run(**kw, progress=seen.append)
        assert seen == [40]
    for call_s, step_by_step, want in ((1e-12, True, list(range(1, 41))),
                                       (1e9, True, [1, 9, 40]),
                                       (1e-12, False, list(range(temporal.LEVELS, 40,
                                                                 temporal.LEVELS)) + [40])):
        monkeypatch.setattr(engine, "CALL_S", call_s)
        if not step_by_step:
            _passes_everywhere(monkeypatch)
        seen.clear()
        got = fastgt.run(**kw, progress=seen.append)
        assert seen == want
        assert np.array_equal(got.trace.to_numpy(), ref.trace.to_numpy(), equal_nan=True)
        for key in ref.state:
            assert np.array_equal(got.state[key], ref.state[key])


#: a run long enough that a Ctrl-C lands in it, short enough to end should it be lost (a
#: lost one ran its 10^8 steps for hours in CI)
LONG = {"topology": "ring", "n": 2000, "d": 50, "steps": 10**5, "record_every": 10**5,
        "noise": "none", "threads": 1}


def test_a_ctrl_c_during_a_kernel_call_stops_the_run_after_it():
    """A SIGINT that lands while a kernel call runs (or while numba unpacks its arguments:
    a review saw a TypeError traceback in 1 of 19 Ctrl-Cs) is raised as KeyboardInterrupt
    once the call ends, between calls. The timer starts at the first call's end: the
    kernels are compiled (or loaded) by then, whatever the cache held."""
    import os
    import signal
    import threading

    seen, timers = [], []

    def progress(t):
        seen.append(t)
        if not timers:
            timers.append(threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)))
            timers[0].start()

    try:
        with pytest.raises(KeyboardInterrupt):
            fastgt.run(**LONG, progress=progress)
    finally:
        for timer in timers:
            timer.cancel()
    assert 1 < len(seen) and seen[-1] < LONG["steps"]  # stopped between calls


def test_a_ctrl_c_handled_inside_a_finalizer_still_stops_the_run():
    """Python runs a signal's handler at its next check, which may fall inside a finalizer
    (a __del__, a gc callback): a KeyboardInterrupt raised there is printed and lost, and
    the run went on to its end. A run records the signal instead and raises it between
    two kernel calls, in its own frame."""
    import signal

    class Dies:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # its handler runs before the next line
            self.after = True

    seen = []

    def progress(t):
        seen.append(t)
        if len(seen) == 1:
            Dies()  # collected at once, between two calls

    with pytest.raises(KeyboardInterrupt):
        fastgt.run(**LONG, progress=progress)
    assert len(seen) == 1


def test_sigterm_with_its_default_action_ends_a_run(tmp_path):
    """The run records SIGTERM too and hands it over between calls: with the default
    action (no handler of Python's), the process ends as it would have, 143."""
    import subprocess
    import sys

    code = ("import os, signal, threading, fastgt\n"
            "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
            "sent = []\n"
            "def progress(t):\n"
            "    print(t, flush=True)\n"
            "    if not sent:\n"
            "        sent.append(os.kill(os.getpid(), signal.SIGTERM))\n"
            f"fastgt.run(**{LONG!r}, progress=progress)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == -15, proc.stderr
    assert len(proc.stdout.split()) == 1  # at the first call's end
