"""``run(...)`` and ``run_batch(...)``: fastgt's simulation API. Arguments are checked
before anything compiles, then the compile cache is warmed once per machine (announced,
fastgt.warmup), then the engine runs (fastgt.engine). No file I/O."""

from __future__ import annotations

from .algorithms.base import least_state
from .engine import CELL_KEYS, RunResult, execute, prepare
from .errors import FastGTError
from .flat import build, flat_nodes, table_topology
from .memory import check_memory
from .metrics import METRICS
from .topology import MixingMatrix
from .warmup import ensure_warm

__all__ = ["CELL_KEYS", "METRICS", "RunResult", "run", "run_batch"]


def run(algorithm: str = "gt", topology: MixingMatrix | str | None = None, problem="quadratic",
        noise: str = "gaussian", sigma2: float | None = None, d: int | None = None,
        stepsize: float = 0.01,
        steps: int = 1000, record_every: int = 100, seed: int = 0, x0=None,
        threads: int | None = None, progress=None, local_steps: int = 1,
        allow_unstable: bool = False, topology_y=None, dtype: str = "float64",
        **params) -> RunResult:
    """Simulate ``algorithm`` (a name of fastgt.algorithms.ALGORITHMS: gt, centralized, d2,
    dsgd, extra, gt_atc) on mixing matrix ``topology``.

    topology: a MixingMatrix (``fastgt.topology(...)``) or a family name with its parameters
    in the flat form that grid files and the CLI take (``topology="ring", n=30,
    self_weight=0.2``; a random graph's seed is ``graph_seed``). problem: a name (its
    parameters flat as well: ``zeta=``, ``problem_seed=``) or ``fastgt.problem(...)``.
    noise: "gaussian" (Setup A), "structured" (Setup B) or "none", with
    (1/n) sum_i E||noise_i||^2 = sigma2 (default 1; refused other than 1 with a noise
    that adds none: none, full, minibatch). x0: (n, d) initial iterates (default i.i.d.
    N(0, 1) from ``seed``). d: the dimension, default 100; a problem with a data file has
    the file's (a d given beside it that differs is refused). threads: numba threads
    (default: all, or 1 for runs below ``config.SMALL_RUN`` node-dimensions, where a second
    thread slows each step down; the numbers never depend on it). progress: optional
    callable(steps_done), called at every record and between (about every 0.2 s).
    local_steps: communicate on every k-th step only (t + 1 divisible by k), mixing with
    the identity on the others (the paper's local-step relaxation).
    allow_unstable: run even on a topology outside the algorithm's stability condition
    (d2 needs lambda_n(W) > -1/3, a static W and local_steps 1, extra symmetric matrices
    at every step; refused otherwise), recording the divergence.
    topology_y (gt, gt_atc): a second, static mixing matrix of the same n for the tracking
    variable y (the paper's different mixing for x and y): a MixingMatrix or a topology
    table, ``{"topology": "ring", "n": 30, "self_weight": 0.5}``.
    dtype: "float64" or "float32", the element type of the state (X, Y, G, ...) and of the
    problem's per-step arrays (rounded to it: the run is on the rounded problem): float32
    halves their memory and traffic, the kernels compute in float32 (a data problem's
    gradients in float64, rounded once), and ``state`` holds float32 arrays (docs/engine.md).
    A parameter that neither the topology nor the problem takes is refused by name.
    """
    if topology is None:
        raise FastGTError("topology is required: allowed a family name with its parameters "
                          "(topology='ring', n=30) or a built one (fastgt.topology('ring', "
                          "n=30))")
    if params or isinstance(topology, str):
        if isinstance(topology, str):
            check_state_fits(params, d, dtype)
        topology, problem = build(topology, problem, params)
    if topology_y is not None:
        topology_y = table_topology(topology_y)
    cell = {"topology": topology, "stepsize": stepsize, "sigma2": sigma2, "seed": seed, "x0": x0}
    return run_batch([cell], algorithm=algorithm, problem=problem, noise=noise, d=d, steps=steps,
                     record_every=record_every, threads=threads, progress=progress,
                     local_steps=local_steps, allow_unstable=allow_unstable,
                     topology_y=topology_y, dtype=dtype)[0]


def check_state_fits(params: dict, d: int | None, dtype: str) -> None:
    """Before a family's graph is built (its arrays alone, at n = 10^8, take a minute and
    gigabytes to fill): MemoryError if even the least state of n nodes (flat ``params``) of
    dimension d (1 if not known) would not fit in the memory available."""
    n = flat_nodes(params)
    if n is not None:
        check_memory(least_state(n, d if isinstance(d, int) and d > 0 else 1, dtype))


def run_batch(cells: list[dict], algorithm: str = "gt", problem="quadratic",
              noise: str = "gaussian", d: int | None = None, steps: int = 1000,
              record_every: int = 100,
              threads: int | None = None, progress=None, parallel: str = "auto",
              local_steps: int = 1, allow_unstable: bool = False,
              topology_y=None, dtype: str = "float64", **unknown) -> list[RunResult]:
    """Several runs advanced together by one compiled loop; results equal ``run``'s bit for bit.

    Each cell is a dict with ``topology`` (a MixingMatrix or TimeVarying) and optionally
    ``stepsize``, ``sigma2``, ``seed``, ``x0`` (defaults as in ``run``); all topologies must
    share one sparsity pattern (e.g. interp_ring with several alphas, rings with several self
    weights); ``topology_y`` and ``dtype`` (as in ``run``) are shared by all.
    parallel: "cells" (each thread advances whole cells: no per-step barrier), "blocks"
    (every step split over row blocks) or "auto" (cells when there are at least as many
    cells as threads). The choice changes the speed, never the numbers.
    """
    if unknown:  # a one-line error, not Python's TypeError
        key = next(iter(unknown))
        where = (f"a cell's: give it in each cell dict (keys {', '.join(CELL_KEYS)})"
                 if key in CELL_KEYS else "no parameter of run_batch")
        raise FastGTError(f"{key} is {where}")
    plan = prepare(cells, algorithm, problem, noise, d, steps, record_every, parallel,
                   local_steps, allow_unstable,
                   None if topology_y is None else table_topology(topology_y), dtype)
    # after the checks: a typo never waits for a compile
    ensure_warm((plan.algo.name,), plan.problem.kernels, plan.shared["dtype"])
    return execute(plan, threads, progress)
