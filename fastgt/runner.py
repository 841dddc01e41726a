"""``run(...)``: one simulation, metrics recorded every ``record_every`` steps. No file I/O."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .algorithms import Context, algorithm as get_algorithm
from .config import DIVERGE_FACTOR
from .errors import bad, check_float, check_int
from .kernels.metrics import quadratic_metrics
from .problems import make_noise, problem as get_problem
from .runtime import numba_threads
from .topology import MixingMatrix

METRICS = ("loss_avg", "loss_nodes", "consensus", "grad_norm2", "tracking")


@dataclass(eq=False)
class RunResult:
    """``trace``: one row per record (step + METRICS); ``summary``: finals, plateaus, status.

    ``state`` holds the final arrays (X, and Y, G for GT) for inspection or restarts.
    """

    trace: pd.DataFrame
    summary: dict
    config: dict
    state: dict = field(repr=False, default_factory=dict)

    def __repr__(self) -> str:
        s = self.summary
        return (f"RunResult({self.config['algorithm']} on {self.config['topology']}, status={s['status']}, "
                f"steps={s['steps_done']}, loss_nodes={s['loss_nodes']:.4g}, {s['steps_per_s']:.0f} steps/s)")


def run(algorithm: str = "gt", topology: MixingMatrix | None = None, problem="quadratic",
        noise: str = "gaussian", sigma2: float = 1.0, d: int = 100, stepsize: float = 0.01,
        steps: int = 1000, record_every: int = 100, seed: int = 0, x0=None,
        threads: int | None = None, progress=None) -> RunResult:
    """Simulate ``algorithm`` ("gt" | "dsgd") on mixing matrix ``topology``.

    problem: a name or ``fastgt.problem(...)``; noise: "gaussian" (Setup A), "structured"
    (Setup B) or "none", with (1/n) sum_i E||noise_i||^2 = sigma2. x0: (n, d) initial
    iterates (default i.i.d. N(0, 1) from ``seed``). threads: numba threads (default: all).
    progress: optional callable(steps_done) after each record.
    """
    t_start = time.perf_counter()
    algo = get_algorithm(algorithm)
    if not isinstance(topology, MixingMatrix):
        raise bad("topology", topology, "a MixingMatrix, e.g. fastgt.topology('ring', n=300)")
    d = check_int("d", d, 1)
    stepsize = check_float("stepsize", stepsize, 0.0, lo_open=True)
    steps = check_int("steps", steps, 0)
    record_every = check_int("record_every", record_every, 1)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    spec = get_problem(problem)
    prob = spec.build(topology.n, d)
    nz = make_noise(noise, sigma2, d, topology)
    config = {"algorithm": algo.name, "topology": topology.name, **topology.params,
              "problem": spec.name, **{f"problem_{k}": v for k, v in spec.params.items()
                                       if np.isscalar(v)},
              "noise": noise, "sigma2": float(sigma2), "d": d, "stepsize": stepsize,
              "steps": steps, "record_every": record_every, "seed": seed}

    with numba_threads(threads) as nthreads:
        ctx = Context(topology, prob, nz, stepsize, seed)
        st = algo.init(ctx, x0)
        rec = _Recorder(algo, ctx, prob, st)
        t_loop = time.perf_counter()
        t = 0
        while t < steps and rec.status == "ok":
            k = min(record_every - t % record_every, steps - t)
            algo.advance(ctx, st, t, k)
            t += k
            rec.record(t)
            if progress is not None:
                progress(t)
        loop_time = time.perf_counter() - t_loop

    trace = pd.DataFrame(np.array(rec.rows).reshape(-1, 1 + len(METRICS)), columns=("step",) + METRICS)
    trace["step"] = trace["step"].astype(np.int64)
    summary = _summarize(trace, rec, t, loop_time, time.perf_counter() - t_start, nthreads)
    config["threads"] = nthreads
    X, Y = algo.iterates(st)
    state = {"X": X} if Y is None else {"X": X, "Y": Y, "G": st["G"]}
    return RunResult(trace, summary, config, state)


class _Recorder:
    def __init__(self, algo, ctx, prob, st):
        self.algo, self.ctx, self.st = algo, ctx, st
        self.abar, self.xstar = prob.abar, prob.xstar
        self.out = np.empty(len(METRICS))
        self.rows: list[float] = []
        self.status, self.diverged_step = "ok", None
        self.record(0)
        self.limit = DIVERGE_FACTOR * max(1.0, self.out[1])

    def record(self, t: int) -> None:
        X, Y = self.algo.iterates(self.st)
        has_y = Y is not None
        quadratic_metrics(X, Y if has_y else X, has_y, self.abar, self.xstar, self.ctx.part, self.out)
        self.rows.append(float(t))
        self.rows.extend(self.out.tolist())
        vals = self.out[:4] if not has_y else self.out
        if t > 0 and (not np.all(np.isfinite(vals)) or self.out[1] > self.limit):
            self.status, self.diverged_step = "diverged", t


def _summarize(trace: pd.DataFrame, rec: _Recorder, steps_done: int, loop_time: float,
               wall: float, threads: int) -> dict:
    s = {"status": rec.status, "diverged_step": rec.diverged_step, "steps_done": steps_done,
         "records": len(trace), "wall_time": wall, "loop_time": loop_time,
         "steps_per_s": steps_done / loop_time if loop_time > 0 else math.nan, "threads": threads}
    half = trace.iloc[len(trace) // 2:]
    for m in METRICS:
        s[f"final_{m}"] = float(trace[m].iloc[-1])
        s[m] = float(half[m].mean()) if rec.status == "ok" else math.nan
    return s


