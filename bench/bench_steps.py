"""Time GT and D-SGD steps of fastgt against numpy-dense, scipy-sparse and jax, in the same run.

    python bench/bench_steps.py [--quick] [--json out.json] [--threads 1,2] [--n 300,3000]
                                [--setups A,B,0] [--no-paper]
    python bench/bench_steps.py --against REF [--pairs 5] [--quick] [--json out.json]
                                [--threads 1,2] [--n ...] [--setups A,B,0]
    python bench/bench_steps.py --against HEAD --b-env FASTGT_VECTOR_BITS=256 [...]

f_i = ||x||^2 with the paper's Setup A (i.i.d. Gaussian gradient noise), Setup B
(structured noise) or, --setups 0, no noise (exact gradients), d = 100, on ring, interp_ring
(alpha 0.5) and a near-square torus (--topologies: also an exponential graph, a hypercube,
a random graph of mean degree 2 ln n), for every n and thread count asked. The jax
baseline (bench/baselines_jax.py) runs when jax imports (pip install -e '.[bench]'), else
it is skipped with a note. Each thread count runs in a fresh child process with
NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS and XLA_FLAGS set, so numba, BLAS and XLA are all
limited; the parent gathers the children's JSON and prints
one Markdown table (ns per node-dimension-step, median and min of interleaved repeats,
speedup ratios of medians) and, with --json, writes the same data as JSON. Before timing,
every case checks that the baselines and fastgt give the same noiseless iterates (to
1e-10). The last rows time the paper-size job (GT, ring n = 300, 20000 steps, metrics
every 100) end to end.

--against REF (A/B mode): this checkout's fastgt (A, working tree included) against git
revision REF's (B, its fastgt/ extracted to a temporary directory), through the public
API only (fastgt.topology, fastgt.run), each in its own child process (PYTHONPATH = the
version's root, PYTHONSAFEPATH=1). Per thread count: one warm-up child per version
(compiles a copy's kernels on first use, into FASTGT_CACHE_DIR if set; calibrates the step
counts, the same for A and B), then --pairs pairs of children taking turns (A, B, A, B, ...),
each timing every case (default n: 300 and 3000 on 1 thread, 30000 on more: the rows of
the redesign's 3% budget). Per case: medians of A and B, median and min-max of the
pairwise ratios A/B, a verdict against the budget, and whether every child's checksum of
a seeded 5-step run (records and final state) agrees to the bit. See ab_child for the
timing and bench/README.md. --b-env VAR=VALUE (repeatable) puts VAR=VALUE in B's children's
environment: with --against HEAD and a clean tree, one commit at two settings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines
import common

D = 100
GAMMA = 0.01
#: the stepsize of noiseless steps (setup 0): at GAMMA their iterates decay as
#: (1 - 2 GAMMA)^t and reach subnormal numbers, whose arithmetic is 10-100x slower, after
#: ~35000 steps, well within a timing at n = 300 (measured: D-SGD's median 41 ns per element
#: against 0.42 before); XLA flushes subnormals to zero, numba's code does not. A step
#: costs the same at any stepsize
NOISELESS_GAMMA = 1e-6
SIGMA2 = 1.0
ALGOS = tuple(baselines.ALGORITHMS)  # every algorithm (--algorithms to choose)
AB_ALGOS = ("gt", "dsgd")  # --against's default: the revisions compared may predate the others
TOPOLOGIES = ("ring", "interp_ring", "torus")  # the tables' (--topologies to choose)
#: --topologies may also name these, whose rows are longer than the 5 entries mix_row mixes
#: in one pass (mixing.FUSED_MAX; the further ones a pass each) from n = 32: an exponential
#: graph, a hypercube (n a power of 2), a random graph of mean degree 2 ln n (the first
#: seed from 1 that makes it connected)
LONG_ROWS = ("exponential", "hypercube", "erdos_renyi")
BASELINES = tuple(baselines.MIXERS)  # numpy-dense, scipy-sparse: the targets' baselines
JAX = "jax"  # bench/baselines_jax.py, a third baseline when jax imports
ENGINES = ("fastgt", *BASELINES, JAX)
TARGETS = {300: (10.0, 5.0), 3000: (50.0, 5.0)}  # 1 thread: min speedup vs (dense, sparse)
#: several threads, n >= PARALLEL_N: at most PARALLEL_BOUND x the no-overlap bound and at
#: least PARALLEL_SPEEDUP x faster than the same case on 1 thread
PARALLEL_N, PARALLEL_BOUND, PARALLEL_SPEEDUP = 30000, 2.0, 1.7
DENSE_MAX = 5000  # numpy-dense needs an n x n W: skipped beyond (7.2 GB at n = 30000)
CHECK_STEPS, CHECK_TOL = 5, 1e-10
NOISES = {"A": "gaussian", "B": "structured", "0": "none"}  # the paper's Setups A, B; noiseless
#: the setups' noise variance (noiseless: 0) and normals drawn per element (limits.bound)
VARIANCE = {"A": SIGMA2, "B": SIGMA2, "0": 0.0}
PAPER = {"algorithm": "gt", "topology": "ring", "n": 300, "record_every": 100}
SETTLE_S = 0.15  # pause before each timed block when threads > 1 (see common.interleaved_timings)


def settings(quick: bool) -> dict:
    """Repeats, seconds per repeat, paper-job steps and the baselines' paper-job budget (s)."""
    if quick:
        return {"repeats": 3, "target_s": 0.03, "paper_steps": 2000, "paper_budget_s": 5.0}
    return {"repeats": 5, "target_s": 0.2, "paper_steps": 20000, "paper_budget_s": 60.0}


# ----------------------------------------------------------------------------- cases
def torus_shape(n: int) -> tuple[int, int]:
    """rows x cols = n with rows the largest divisor <= sqrt(n) (300 -> 15 x 20)."""
    rows = next(r for r in range(math.isqrt(n), 0, -1) if n % r == 0)
    return rows, n // rows


def build_topology(name: str, n: int):
    import fastgt

    if name == "interp_ring":
        return fastgt.topology("interp_ring", n=n, alpha=0.5)
    if name == "torus":
        rows, cols = torus_shape(n)
        return fastgt.topology("torus", rows=rows, cols=cols)
    if name == "erdos_renyi":
        for seed in range(1, 100):
            try:
                return fastgt.topology("erdos_renyi", n=n, prob=2 * math.log(n) / n, seed=seed)
            except fastgt.errors.DegenerateGraphError:  # disconnected: the next seed
                continue
        raise SystemExit(f"no connected erdos_renyi graph of n = {n} in 99 seeds")
    return fastgt.topology(name, n=n)


def topology_label(name: str, n: int) -> str:
    if name == "interp_ring":
        return "interp_ring a=0.5"
    if name == "torus":
        return "torus {}x{}".format(*torus_shape(n))
    if name == "erdos_renyi":
        return "erdos_renyi 2ln n"
    return name


class FastgtRun:
    """fastgt's own algorithm spec driven directly (no metrics): ``advance(k)`` runs k steps."""

    def __init__(self, algorithm: str, W, x0: np.ndarray, gamma: float, sigma2: float, seed=0,
                 setup: str = "A", dtype: str = "float64"):
        import fastgt
        from fastgt.algorithms import ALGORITHMS, Batch, Cell
        from fastgt.problems import make_noise

        prob = fastgt.problem("quadratic").build(W.n, x0.shape[1])
        noise = make_noise(NOISES[setup], sigma2, x0.shape[1], W)
        self.algo = ALGORITHMS[algorithm]
        self.batch = Batch([Cell(W, noise, gamma, seed, x0)], prob, self.algo.mixing,
                           dtype=dtype)
        self.arrays = self.algo.init(self.batch)
        self.t, self.cur = 0, 0

    def advance(self, steps: int) -> None:
        self.cur = self.algo.advance(self.batch, self.arrays, self.cur, self.t, steps, False)
        self.t += steps

    def iterates(self):
        return tuple(None if a is None else self.batch.real(a)
                     for a in self.algo.iterates(self.batch, self.arrays, self.cur, 0))


def jax_missing() -> str | None:
    """Why the jax baseline cannot run here (its import failed), or None when it can."""
    try:
        import baselines_jax  # noqa: F401
    except (ImportError, RuntimeError) as e:  # not installed; jax / jaxlib mismatched
        return f"{type(e).__name__}: {e}"
    return None


def jax_version() -> str | None:
    if jax_missing():
        return None
    import jax

    return jax.__version__


def baseline_module(engine: str):
    """The module whose ``make`` builds ``engine``'s runs."""
    if engine == JAX:
        import baselines_jax

        return baselines_jax
    return baselines


def make_mixers(W, engines) -> dict:
    """Each baseline's mixer for W: numpy-dense up to DENSE_MAX nodes, jax on the topologies
    it has a roll stencil for (circulant: ring, interp_ring, torus)."""
    mixers = {}
    for e in engines:
        if e == "numpy-dense" and W.n > DENSE_MAX:
            continue
        try:
            mixers[e] = baseline_module(e).MIXERS[e](W)
        except ValueError:  # jax: no stencil for W
            pass
    return mixers


def stepsize(setup: str) -> float:
    return NOISELESS_GAMMA if setup == "0" else GAMMA


def make_run(engine: str, algorithm: str, W, mixers: dict, x0, sigma2: float, setup="A"):
    if engine == "fastgt":
        return FastgtRun(algorithm, W, x0, stepsize(setup), sigma2, setup=setup)
    structured = None
    if setup == "B":
        from fastgt.problems import make_noise

        nz = make_noise("structured", sigma2, x0.shape[1], W)
        structured = (nz.uv, nz.dv)
    return baseline_module(engine).make(algorithm, mixers[engine], x0, stepsize(setup),
                                        sigma2, structured=structured)


def refused(algorithm: str, W) -> bool:
    """Whether fastgt.run refuses the algorithm on W (its stability condition)."""
    from fastgt.algorithms import ALGORITHMS

    return ALGORITHMS[algorithm].refusal(W) is not None


def check_same(algorithm: str, W, mixers: dict) -> float:
    """Noiseless runs from one x0 must agree: returns the largest |difference| of X (and Y)."""
    x0 = np.random.default_rng(12345).standard_normal((W.n, D))
    ref = make_run("fastgt", algorithm, W, mixers, x0, 0.0)
    ref.advance(CHECK_STEPS)
    worst = 0.0
    for engine in mixers:
        run = make_run(engine, algorithm, W, mixers, x0, 0.0)
        run.advance(CHECK_STEPS)
        for a, b in zip(ref.iterates(), run.iterates()):
            if a is not None:
                worst = max(worst, float(np.max(np.abs(a - b))))
        if not worst <= CHECK_TOL:
            raise SystemExit(f"sanity check failed: {engine} {algorithm} on {W.describe()} "
                             f"differs from fastgt by {worst:.3g} after {CHECK_STEPS} steps")
    return worst


def time_case(algorithm: str, W, mixers: dict, cfg: dict, setup: str) -> dict:
    """Interleaved repeats of every engine on one case; ns per node-dim-step and ratios."""
    x0 = np.random.default_rng(1).standard_normal((W.n, D))
    runs = {e: make_run(e, algorithm, W, mixers, x0, VARIANCE[setup], setup)
            for e in ("fastgt", *mixers)}
    advances = {e: r.advance for e, r in runs.items()}
    steps = {e: common.steps_for(a, cfg["target_s"]) for e, a in advances.items()}
    samples, share = common.interleaved_timings(advances, steps, cfg["repeats"], cfg["settle_s"])
    for e, r in runs.items():
        if not np.all(np.isfinite(r.iterates()[0])):
            raise SystemExit(f"{e} {algorithm} on {W.describe()} diverged while timing")
    per = W.n * D * 1e-9  # seconds per step -> ns per node-dimension-step
    ns = {e: common.summarize(s, per) | {"steps": steps[e], "cpu_share": float(np.median(share[e]))}
          for e, s in samples.items()}
    return {"ns": ns, "speedup": {b: ns[b]["median"] / ns["fastgt"]["median"] for b in mixers},
            "speedup_of_mins": {b: ns[b]["min"] / ns["fastgt"]["min"] for b in mixers}}


# ------------------------------------------------------------------------- paper job
def baseline_job(run, steps: int, every: int, budget_s: float) -> dict:
    """Run ``steps`` steps recording metrics every ``every``. Once, at the first record past
    5% of the steps: if the predicted total exceeds ``budget_s``, stop and extrapolate."""
    records = [baselines.metrics(*run.iterates())]
    t0 = time.perf_counter()
    done, decided = 0, False
    while done < steps:
        k = min(every, steps - done)
        run.advance(k)
        done += k
        records.append(baselines.metrics(*run.iterates()))
        elapsed = time.perf_counter() - t0
        if not decided and done >= steps / 20:
            decided = True
            if done < steps and elapsed * steps / done > budget_s:
                break
    seconds = elapsed * steps / done
    half = records[len(records) // 2:]
    return {"seconds": seconds, "steps_run": done, "extrapolated": done < steps,
            "loss_nodes": float(np.mean([r[1] for r in half]))}


def paper_job(cfg: dict, engines: tuple) -> dict:
    """The paper-size GT job, once per engine: fastgt.run vs baseline loops with metrics."""
    import fastgt

    n, steps, every = PAPER["n"], cfg["paper_steps"], PAPER["record_every"]
    W = build_topology(PAPER["topology"], n)
    time.sleep(cfg["settle_s"])
    import numba

    res = fastgt.run(algorithm=PAPER["algorithm"], topology=W, d=D, stepsize=GAMMA, sigma2=SIGMA2,
                     steps=steps, record_every=every, seed=0, threads=numba.get_num_threads())
    out = {"fastgt": {"seconds": res.summary["loop_time"], "wall_s": res.summary["wall_time"],
                      "steps_run": steps, "extrapolated": False,
                      "loss_nodes": res.summary["loss_nodes"]}}
    x0 = np.random.default_rng(0).standard_normal((n, D))
    mixers = make_mixers(W, engines)
    for engine in mixers:
        run = make_run(engine, PAPER["algorithm"], W, mixers, x0, SIGMA2)  # jax: compiles here
        time.sleep(cfg["settle_s"])
        out[engine] = baseline_job(run, steps, every, cfg["paper_budget_s"])
    for v in out.values():
        v["ns"] = v["seconds"] / (steps * n * D) * 1e9
    return {"steps": steps, "engines": out,
            "speedup": {b: out[b]["seconds"] / out["fastgt"]["seconds"] for b in mixers}}


# ----------------------------------------------------------------------------- child
def child(args, threads: int, out_path: str) -> None:
    """Everything measured at one thread count; JSON to ``out_path``, progress to stderr."""
    import limits
    import numba

    from fastgt.warmup import warmup

    if numba.config.NUMBA_NUM_THREADS != threads:
        raise SystemExit(f"child expected NUMBA_NUM_THREADS={threads}")
    cfg = settings(args.quick) | {"settle_s": SETTLE_S if threads > 1 else 0.0}
    warm = warmup()
    lim = limits.measure(threads)
    engines = BASELINES if jax_missing() else (*BASELINES, JAX)
    if JAX in engines:
        confine_jax(threads)
    result = {"threads": threads, "warmup_s": warm, **common.numba_info(), "limits": lim,
              "baselines": engines, "jax": jax_version(), "cases": []}
    for n in args.n:
        for topo in args.topologies:
            W = build_topology(topo, n)
            mixers = make_mixers(W, engines)
            for algo in args.algorithms:
                if refused(algo, W):  # D² on a torus: fastgt would refuse the run
                    continue
                diff = check_same(algo, W, mixers)
                for setup in args.setups:
                    case = time_case(algo, W, mixers, cfg, setup)
                    normals = {"A": 1.0, "B": 1.0 / n, "0": 0.0}[setup]
                    bound = limits.bound(lim, algo, n, D, normals, stores_g=setup == "A")
                    ratio = (case["ns"]["fastgt"]["median"] / bound["bound_serial"]
                             if bound["bound_serial"] > 0.01 else None)
                    case["bound"] = bound | {"ratio": ratio}
                    result["cases"].append({"algorithm": algo, "setup": setup, "topology": topo,
                                            "n": n, "label": topology_label(topo, n),
                                            "check_max_diff": diff, **case})
                    med = {e: f"{v['median']:.1f}" for e, v in case["ns"].items()}
                    print(f"[{threads} thr] {algo:4} {setup} {topology_label(topo, n):18} "
                          f"n={n:5}: ns/elem {med}", file=sys.stderr, flush=True)
    if not args.no_paper:
        result["paper_job"] = paper_job(cfg, engines)
        print(f"[{threads} thr] paper job done", file=sys.stderr, flush=True)
    result["load_avg_end"] = os.getloadavg()
    Path(out_path).write_text(json.dumps(result, indent=1))


def confine_jax(threads: int) -> None:
    """Keep jax's computations on ``threads`` CPUs. XLA's CPU client ignores XLA_FLAGS'
    thread counts (jax 0.10: a 1-thread child's jax blocks ran at CPU share 1.9): its thread
    pools take one thread per CPU the process may use when the client is created. So create
    it while the process may use only ``threads`` CPUs (the last ones), then lift that
    restriction: XLA's threads stay on those CPUs, numba's and BLAS's are not affected."""
    mask = os.sched_getaffinity(0)
    if threads >= len(mask):
        return
    import jax

    os.sched_setaffinity(0, set(sorted(mask)[-threads:]))
    try:
        jax.devices()  # creates the CPU client and its threads
    finally:
        os.sched_setaffinity(0, mask)


def xla_flags(threads: int) -> str:
    """XLA_FLAGS for a child of ``threads`` threads (after any flags set): one thread keeps
    Eigen's matrix kernels on the calling thread; XLA has no flag for a thread count (a
    bare ``intra_op_parallelism_threads=2``, a TensorFlow option, made XLA abort reading it
    as a file name), so confine_jax sets the CPUs its thread pools use."""
    mine = "--xla_cpu_multi_thread_eigen=false" if threads == 1 else ""
    return f"{os.environ.get('XLA_FLAGS', '')} {mine}".strip()


def run_child(threads: int, argv: list[str], env: dict | None = None) -> dict:
    """This script run as a child with ``threads`` threads (and ``env`` on top): its JSON."""
    from fastgt.sweep.cellrun import THREAD_ENV

    env = (os.environ | {v: str(threads) for v in THREAD_ENV} | {"XLA_FLAGS": xla_flags(threads)}
           | (env or {}))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--child", str(threads),
               "--child-out", str(out)]
        subprocess.run(cmd, env=env, check=True)
        return json.loads(out.read_text())


# ----------------------------------------------------------------------------- report
def fmt_ns(v: dict) -> str:
    return f"{v['median']:.2f} ({v['min']:.2f})"


def case_key(case: dict) -> tuple:
    return case["algorithm"], case["setup"], case["label"], case["n"]


def target_note(case: dict, threads: int, one_thread: dict) -> str:
    """The project's targets for this row: "met", "missed: ..." or "" (none apply).
    one_thread: ns medians of the 1-thread child, by case_key."""
    if threads == 1:
        target = TARGETS.get(case["n"])
        if target is None:
            return ""
        missed = [f"{b} {case['speedup'][b]:.1f}<{t:g}" for b, t in zip(BASELINES, target)
                  if b in case["speedup"] and case["speedup"][b] < t]
    else:
        base = one_thread.get(case_key(case))
        if case["n"] < PARALLEL_N or base is None:
            return ""
        ratio, speedup = case["bound"]["ratio"], base / case["ns"]["fastgt"]["median"]
        missed = ([f"/ bound {ratio:.2f}>{PARALLEL_BOUND:g}"]
                  if ratio is not None and ratio > PARALLEL_BOUND else [])
        missed += ([f"vs 1 thread {speedup:.2f}<{PARALLEL_SPEEDUP:g}"]
                   if speedup < PARALLEL_SPEEDUP else [])
    return "missed: " + ", ".join(missed) if missed else "met"


def thread_speedup(case: dict, threads: int, one_thread: dict, one_bound: dict) -> str:
    """fastgt's speedup over its 1-thread median and, in brackets, the machine's: the
    1-thread child's no-overlap bound over this child's (what bandwidth and generator
    throughput allow; below PARALLEL_SPEEDUP the target cannot be met on this machine)."""
    base = one_thread.get(case_key(case))
    if threads == 1 or base is None:
        return "-"
    out = f"{base / case['ns']['fastgt']['median']:.2f}x"
    b1, b = one_bound.get(case_key(case), 0.0), case["bound"]["bound_serial"]
    return out + (f" (bound {b1 / b:.2f}x)" if b1 > 0.01 and b > 0.01 else "")


def shown_baselines(children: list[dict]) -> list[str]:
    """The baselines that ran in some child (jax only when it imported)."""
    ran = {b for ch in children for b in ch.get("baselines", BASELINES)}
    return [b for b in ENGINES[1:] if b in ran]


def report(children: list[dict]) -> tuple[list[dict], str]:
    """Flat rows (for JSON) and the Markdown table."""
    rows, cells = [], []
    shown = shown_baselines(children)
    engines = ("fastgt", *shown)
    one_thread = {case_key(c): c["ns"]["fastgt"]["median"]
                  for ch in children if ch["threads"] == 1 for c in ch["cases"]}
    one_bound = {case_key(c): c["bound"]["bound_serial"]
                 for ch in children if ch["threads"] == 1 for c in ch["cases"]}
    for ch in children:
        for c in ch["cases"]:
            note = target_note(c, ch["threads"], one_thread)
            rows.append({"threads": ch["threads"], **c, "target": note})
            cells.append([c["algorithm"], c["setup"], c["label"], str(c["n"]), str(ch["threads"]),
                          *(fmt_ns(c["ns"][e]) if e in c["ns"] else "-" for e in engines),
                          *(("-", "-") if c["bound"]["ratio"] is None else
                            (f"{c['bound']['bound_serial']:.2f}", f"{c['bound']['ratio']:.2f}")),
                          *(f"{c['speedup'][b]:.1f}x" if b in c["speedup"] else "-"
                            for b in shown),
                          thread_speedup(c, ch["threads"], one_thread, one_bound),
                          f"{min(v['cpu_share'] for v in c['ns'].values()):.2f}", note])
    for ch in children:
        job = ch.get("paper_job")
        if job is None:
            continue
        eng = job["engines"]
        rows.append({"threads": ch["threads"], "paper_job": job})
        cells.append([PAPER["algorithm"], "A", f"ring, job {job['steps']} steps*", str(PAPER["n"]),
                      str(ch["threads"]),
                      *(f"{eng[e]['ns']:.2f}" + ("~" if eng[e]["extrapolated"] else "")
                        if e in eng else "-" for e in engines), "", "",
                      *(f"{job['speedup'][b]:.1f}x" if b in eng else "-" for b in shown),
                      "", "", ""])
    header = ["algo", "setup", "topology", "n", "threads", *(f"{e} ns" for e in engines),
              "bound ns", "fastgt / bound", *(f"vs {b}" for b in shown), "vs 1 thread",
              "CPU share", "target"]
    return rows, common.markdown_table(header, cells)


def footnotes(children: list[dict]) -> str:
    lines = ["", ("ns = nanoseconds per node-dimension-step (step time / (n d)), d = 100: "
                  "median (min) of interleaved repeats; ratios = baseline median / fastgt median."),
             ("bound = the machine's no-overlap lower bound for the step (bench/limits.py: "
              "memory traffic at triad bandwidth + one normal variate; memory dropped when the "
              "state fits in cache), measured in the same child; fastgt / bound = how far "
              "fastgt's median is from it."),
             ("CPU share = lowest over the engines of the median (process CPU time / wall time) "
              "of a timed block: below ~0.9 the process was descheduled (machine loaded), "
              "so that row is noisy."),
             (f"vs 1 thread = fastgt's 1-thread median / this row's median. Targets: at 1 thread "
              f"n=300 >= {TARGETS[300][0]:g}x dense, >= {TARGETS[300][1]:g}x sparse; n=3000 >= "
              f"{TARGETS[3000][0]:g}x / >= {TARGETS[3000][1]:g}x; on more threads at n >= "
              f"{PARALLEL_N} fastgt / bound <= {PARALLEL_BOUND:g} and vs 1 thread >= "
              f"{PARALLEL_SPEEDUP:g}x.")]
    if JAX in shown_baselines(children):
        lines.append("jax = bench/baselines_jax.py: jax.jit + lax.scan over steps, float64, W as "
                     "jnp.roll stencils (+ mean term), jax.random noise; compiled before timing; "
                     "XLA's threads kept on as many CPUs as the child's thread count (see "
                     "confine_jax). No target applies to it.")
    for ch in children:
        job = ch.get("paper_job")
        if job is None:
            continue
        secs = ", ".join(f"{e} {v['seconds']:.1f} s" + (
            f" (extrapolated from {v['steps_run']} steps)" if v["extrapolated"] else "")
            for e, v in job["engines"].items())
        plateau = ", ".join(f"{e} {v['loss_nodes']:.4g}" for e, v in job["engines"].items()
                            if not v["extrapolated"])
        lines.append(f"* {ch['threads']} thread(s), one run each of the GT job (ring n=300, "
                     f"{job['steps']} steps, metrics every {PAPER['record_every']}): {secs}; "
                     f"plateau loss_nodes {plateau}.")
    if any(e["extrapolated"] for ch in children if "paper_job" in ch
           for e in ch["paper_job"]["engines"].values()):
        lines.append("~ extrapolated linearly from the first part of the job (over budget).")
    return "\n".join(lines)


def header_lines(machine: dict, children: list[dict]) -> str:
    ch = children[0]
    loads = ", ".join(f"{c['threads']} thr: {c['load_avg_end'][0]:.2f}" for c in children)
    return (f"CPU: {machine['cpu']} ({machine['cores']} cores, {machine['usable_cores']} usable); "
            f"numba {ch['numba']} ({ch['threading_layer']}), numpy {machine['numpy']} "
            f"({machine['blas']}), scipy {machine['scipy']}"
            + (f", jax {ch['jax']}" if ch.get("jax") else "") + f", Python {machine['python']}; "
            f"load avg at start {machine['load_avg_start'][0]:.2f}, after each child: {loads}\n")


# ------------------------------------------------------------ A/B against a git revision
BUDGET = 0.03  # the engine redesign may be at most 3% slower than the revision it replaces


def ab_settings(quick: bool) -> dict:
    """Timed runs of k and k // 10 steps per case and child, and the seconds of k steps."""
    return {"repeats": 3, "target_s": 0.02 if quick else 0.1}


def ab_sizes(args, threads: int) -> list[int]:
    """n of an A/B child: --n, else the budget's rows (1 thread: 300 and 3000; more:
    PARALLEL_N), the first only with --quick."""
    if args.n:
        return args.n
    sizes = [300, 3000] if threads == 1 else [PARALLEL_N]
    return sizes[:1] if args.quick else sizes


def case_id(case: dict) -> str:
    return " ".join(map(str, case_key(case)))


def ab_run(case: dict, W, steps: int, threads: int, record_every: int, d: int,
           dtype: str = "float64"):
    import fastgt

    setup = case["setup"]
    # no sigma2 without noise: fastgt refuses one that would be ignored (and the revision
    # compared may predate sigma2=None); dtype only for float32 (so float64 runs any revision)
    sigma2 = {} if setup == "0" else {"sigma2": VARIANCE[setup]}
    other = {} if dtype == "float64" else {"dtype": dtype}
    return fastgt.run(algorithm=case["algorithm"], topology=W, noise=NOISES[setup], d=d,
                      stepsize=stepsize(setup), steps=steps, record_every=record_every,
                      seed=0, threads=threads, **sigma2, **other)


def checksum(case: dict, W, threads: int, d: int, dtype: str) -> str:
    """sha256 of a seeded CHECK_STEPS-step run: its records (metrics at every step) and
    final state arrays, bit for bit."""
    res = ab_run(case, W, CHECK_STEPS, threads, 1, d, dtype)
    h = hashlib.sha256(np.ascontiguousarray(res.records).tobytes())
    for name in sorted(res.state):
        h.update(name.encode() + np.ascontiguousarray(res.state[name]).tobytes())
    return h.hexdigest()[:16]


def ab_child(args, threads: int, out_path: str) -> None:
    """One A/B child, on whichever fastgt PYTHONPATH gives (public API only): the checksum
    of every case, then either the calibrated step counts (warm-up child, no --ab-steps)
    or each case's ns per node-dimension-step at the given counts.

    Per-step cost = (min loop_time(k) - min loop_time(k // 10)) / (k - k // 10), the mins
    over ab_settings' repeats (interference only ever slows a run down), loop_time being
    fastgt.run's own clock around its step loop (record_every = k: metrics at the end
    only), k >= 10 so that the difference spans >= 9 steps. Why, measured at n = 30000
    over 7 repeats (spread = (max - min) / median): run()'s wall time carries the set-up
    (x0 draw, allocation: 40-90 ms, jittering by tens of ms), and the difference of two
    walls spread 0.12-0.21; loop_time / k spread 0.07-0.14 but keeps the loop's fixed cost
    (the final metrics record: +2.4% for D-SGD at k = 30); the difference of two loop
    times spread 0.07-0.18 and cancels that fixed cost, whatever a revision does once per
    run inside or outside its loop."""
    import fastgt

    steps = json.loads(Path(args.ab_steps).read_text()) if args.ab_steps else None
    cases = []
    for n in ab_sizes(args, threads):
        for topo in args.topologies:
            W = build_topology(topo, n)
            cases += [({"algorithm": a, "setup": s, "topology": topo, "n": n,
                        "label": topology_label(topo, n)}, W) for a in args.algorithms
                      for s in args.setups if not refused(a, W)]  # D² on a torus
    t = time.perf_counter()
    for case, W in cases:
        case["checksum"] = checksum(case, W, threads, args.d, args.dtype)
    result = {"threads": threads, "fastgt": str(Path(fastgt.__file__).resolve().parents[1]),
              "checksum_s": time.perf_counter() - t, **common.numba_info()}
    cfg = ab_settings(args.quick)
    for case, W in cases:
        def loop_time(k, case=case, W=W):
            return ab_run(case, W, k, threads, k, args.d, args.dtype).summary["loop_time"]

        if steps is None:
            case["steps"] = max(10, common.steps_for(loop_time, cfg["target_s"]))
            continue
        k = case["steps"] = steps[case_id(case)]
        short = max(1, k // 10)
        took = [(loop_time(k), loop_time(short)) for _ in range(cfg["repeats"])]
        case["ns"] = ((min(t[0] for t in took) - min(t[1] for t in took)) / (k - short)
                      / (case["n"] * args.d) * 1e9)
    result |= {"cases": [c for c, _ in cases], "load_avg_end": os.getloadavg()}
    Path(out_path).write_text(json.dumps(result, indent=1))


def against(args, argv: list[str], machine: dict) -> tuple[str, dict]:
    """Time this checkout's fastgt (A) against revision ``args.against``'s (B): per thread
    count one warm-up child per version, then ``args.pairs`` pairs of children taking turns
    strictly (A, B, A, B, ...: a burst of load that spans two children slows one of each,
    so it moves two pairs' ratios in opposite directions, which the median absorbs; with
    A B, B A, ... it slowed A twice in a null run and moved the median by 4%). The
    report's text and the JSON data."""
    repo = Path(__file__).resolve().parents[1]
    sha, who = common.versions(repo, args.against)
    b_env = dict(kv.split("=", 1) for kv in args.b_env)
    if b_env:
        who["B"] += " with " + " ".join(args.b_env)
    children = []
    with common.materialised(repo, sha) as ref_root, tempfile.TemporaryDirectory() as tmp:
        roots = {"A": repo, "B": ref_root}

        def child_of(version: str, threads: int, *extra: str, pair=None) -> dict:
            env = common.version_env(roots[version]) | (b_env if version == "B" else {})
            ch = common.checked_child(version, roots[version],
                                      run_child(threads, [*argv, *extra], env))
            children.append(ch | {"version": version, "pair": pair})
            return children[-1]

        for k in args.threads:
            print(f"[{k} thr] warm-up, A then B: checksums and step counts (a copy's first use "
                  "compiles its kernels, 10-30 s)", file=sys.stderr, flush=True)
            warm = [child_of(v, k) for v in "AB"]
            pairs = list(zip(warm[0]["cases"], warm[1]["cases"]))
            steps = {case_id(a): max(a["steps"], b["steps"]) for a, b in pairs}
            differ = [case_id(a) for a, b in pairs if a["checksum"] != b["checksum"]]
            print(f"[{k} thr] warm: A {warm[0]['checksum_s']:.1f} s, B "
                  f"{warm[1]['checksum_s']:.1f} s; " + (
                      f"bits DIFFER on {len(differ)} of {len(pairs)} cases: {'; '.join(differ)}"
                      if differ else f"A and B agree to the bit on all {len(pairs)} cases"),
                  file=sys.stderr, flush=True)
            path = Path(tmp) / f"steps-{k}.json"
            path.write_text(json.dumps(steps))
            for i in range(args.pairs):
                for v in "AB":
                    child_of(v, k, "--ab-steps", str(path), pair=i)
                print(f"[{k} thr] pair {i + 1}/{args.pairs} done", file=sys.stderr, flush=True)
    rows, table, differ = ab_report(children)
    warm_s = {v: [ch["checksum_s"] for ch in children if ch["version"] == v and ch["pair"] is None]
              for v in "AB"}
    last = [[ch for ch in children if ch["threads"] == k][-1] for k in args.threads]
    head = (header_lines(machine, last)
            + f"A = {who['A']}; B = {who['B']}. Per thread count one warm-up child per version "
            "(kernels compiled on a copy's first use, then loaded from the cache; checksums took "
            + ", ".join(f"{v} {max(s):.1f} s" for v, s in warm_s.items())
            + f"), then {args.pairs} interleaved pairs of child processes.\n")
    cfg = ab_settings(args.quick)
    notes = ["", (f"ns = nanoseconds per node-dimension-step, d = {args.d}, {args.dtype} "
                  "states, of fastgt.run: (min "
                  "loop_time(k) - min loop_time(k/10)) / (0.9 k) over "
                  f"{cfg['repeats']} runs of each in a child, k calibrated to ~{cfg['target_s']:g} "
                  "s and the same for A and B; median (min) over the pairs."),
             ("A/B = median of the pairwise ratios (pair i: A's child i / B's child i), then their "
              f"min-max; verdict ok when the median is <= {1 + BUDGET:g} (the redesign's budget), "
              f"noisy when the pairs' ratios spread over more than {2 * BUDGET:g}."),
             (f"bits = sha256 of a seeded {CHECK_STEPS}-step run (records and final state) in "
              "every child: same when all of A's and B's children agree.")]
    if differ:
        notes.append("BITS DIFFER between A and B on: " + "; ".join(differ))
    data = {"machine": machine, "against": {"ref": args.against, "sha": sha, **who},
            "settings": cfg | {"pairs": args.pairs, "budget": BUDGET},
            "d": args.d, "gamma": GAMMA, "sigma2": SIGMA2, "children": children, "rows": rows,
            "table": table}
    return head + "\n" + table + "\n" + "\n".join(notes), data


def ab_report(children: list[dict]) -> tuple[list[dict], str, list[str]]:
    """Flat rows (for JSON), the Markdown table and the cases whose bits differ."""
    rows, cells, differ = [], [], []
    for k in dict.fromkeys(ch["threads"] for ch in children):
        mine = [ch for ch in children if ch["threads"] == k]
        for case in mine[-1]["cases"]:  # a timed child's: its steps are the ones used
            key = case_key(case)
            got = [(ch["version"], ch["pair"], c) for ch in mine for c in ch["cases"]
                   if case_key(c) == key]
            ns = {v: [c["ns"] for w, i, c in got if w == v and i is not None] for v in "AB"}
            sums = {v: sorted({c["checksum"] for w, _, c in got if w == v}) for v in "AB"}
            same = len(set(sums["A"]) | set(sums["B"])) == 1
            ratios = [a / b for a, b in zip(ns["A"], ns["B"])]
            med = statistics.median(ratios)
            verdict = "ok" if med <= 1 + BUDGET else f"over: +{100 * (med - 1):.1f}%"
            if max(ratios) - min(ratios) > 2 * BUDGET:
                verdict += ", noisy"
            if not same:
                differ.append(f"{k} thr {case_id(case)}")
                verdict += ", bits differ"
            summary = {v: common.summarize(ns[v], 1.0) for v in "AB"}
            rows.append({"threads": k, **{f: case[f] for f in ("algorithm", "setup", "topology",
                                                              "n", "label", "steps")},
                         "ns": summary, "ratios": ratios, "ratio_median": med,
                         "ratio_of_mins": summary["A"]["min"] / summary["B"]["min"],
                         "checksums": sums, "bits_same": same, "verdict": verdict})
            cells.append([case["algorithm"], case["setup"], case["label"], str(case["n"]), str(k),
                          fmt_ns(summary["A"]), fmt_ns(summary["B"]), f"{med:.3f}",
                          f"{min(ratios):.3f}-{max(ratios):.3f}", "same" if same else "DIFFER",
                          verdict])
    header = ["algo", "setup", "topology", "n", "threads", "A ns", "B ns", "A/B", "A/B min-max",
              "bits", "verdict"]
    return rows, common.markdown_table(header, cells), differ


# ------------------------------------------------------------------------------- cli
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smoke version (~2 min, < 1 without jax): fewer, shorter repeats, "
                   "n=300 unless --n")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument("--threads", type=common.int_list, default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--n", type=common.int_list, default=None, help="node counts (default 300,3000)")
    p.add_argument("--no-paper", action="store_true", help="skip the paper-size job")
    p.add_argument("--setups", type=lambda v: [x.strip().upper() for x in v.split(",") if x.strip()],
                   default=["A", "B"], help="noise setups: A (i.i.d. gaussian), B (structured), "
                   "0 (noiseless); default A,B")
    p.add_argument("--against", metavar="REF",
                   help="A/B mode: this checkout's fastgt against git revision REF's, "
                   "interleaved child processes (default n: 300,3000 on 1 thread, "
                   f"{PARALLEL_N} on more)")
    p.add_argument("--b-env", action="append", default=[], metavar="VAR=VALUE",
                   help="--against: B's children run with VAR=VALUE in their environment "
                        "(repeatable), e.g. --against HEAD --b-env FASTGT_VECTOR_BITS=256")
    p.add_argument("--d", type=int, default=D,
                   help=f"--against: the problem's dimension (default {D}; the tables against "
                        f"the baselines are at d = {D})")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="--against: the states' element type (default float64)")
    p.add_argument("--pairs", type=int, default=5,
                   help="--against: pairs of A and B children per thread count (default 5)")
    p.add_argument("--algorithms", type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
                   default=None, help=f"algorithms (default {','.join(ALGOS)}; with --against "
                   f"{','.join(AB_ALGOS)})")
    p.add_argument("--topologies", type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
                   default=list(TOPOLOGIES), help=f"topologies (default {','.join(TOPOLOGIES)}; "
                   f"also {', '.join(LONG_ROWS)}: longer rows)")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--ab-steps", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.n is None and not args.against:
        args.n = [300] if args.quick else [300, 3000]
    if (args.n is not None and (not args.n or min(args.n) < 4)) or not args.threads \
            or min(args.threads) < 1 or args.pairs < 1:
        p.error("--n needs values >= 4, --threads and --pairs values >= 1")
    if args.algorithms is None:
        args.algorithms = list(AB_ALGOS if args.against else ALGOS)
    if not args.algorithms or set(args.algorithms) - set(ALGOS):
        p.error(f"--algorithms: allowed values {', '.join(ALGOS)}")
    if not args.topologies or set(args.topologies) - set(TOPOLOGIES + LONG_ROWS):
        p.error(f"--topologies: allowed values {', '.join(TOPOLOGIES + LONG_ROWS)}")
    if "hypercube" in args.topologies and any(n & (n - 1) for n in args.n or [300]):
        p.error("--topologies hypercube needs --n of powers of 2 (the default n are not)")
    if args.d != D and not args.against:
        p.error(f"--d: allowed with --against REF only (the tables are at d = {D})")
    if args.d < 1:
        p.error("--d: allowed values >= 1")
    if args.dtype != "float64" and not args.against:
        p.error("--dtype: allowed with --against REF only (the tables are float64)")
    if args.b_env and not args.against:
        p.error("--b-env: allowed with --against REF only (B is REF's copy)")
    if any(not kv.split("=", 1)[0] or "=" not in kv for kv in args.b_env):
        p.error("--b-env: allowed values VAR=VALUE")
    if not args.setups or set(args.setups) - set(NOISES):
        p.error(f"--setups: allowed values {', '.join(NOISES)}")
    return args


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.child is not None:
        (ab_child if args.against else child)(args, args.child, args.child_out)
        return
    machine = common.machine_info()
    if args.against:
        text, data = against(args, argv, machine)
    else:
        if (why := jax_missing()) is not None:
            print(f"JAX baseline skipped ({why}); install it with: pip install -e '.[bench]'",
                  file=sys.stderr, flush=True)
        children = [run_child(k, argv) for k in args.threads]
        rows, table = report(children)
        text = header_lines(machine, children) + "\n" + table + "\n" + footnotes(children)
        data = {"machine": machine, "settings": settings(args.quick), "d": D, "gamma": GAMMA,
                "sigma2": SIGMA2, "children": children, "rows": rows, "table": table}
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
