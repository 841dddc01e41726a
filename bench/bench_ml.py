"""GT on logistic regression with minibatch gradients: fastgt vs numpy (dense data) and
scipy (sparse data), in the same run.

    python bench/bench_ml.py                 # n = 100, 1000; d = 50, 500; batch 1, 8, 64
    python bench/bench_ml.py --quick         # smoke test: n = 100, d = 50, batch 8
    python bench/bench_ml.py --n 1000 --d 500 --batch 64 --data sparse --json ml.json
    python bench/bench_ml.py --against REF [--pairs 5] [--data dense]   # A/B, bits checked

One GT step on a ring (self weight 1/3) with ``samples`` = 100 rows per node (iid split),
each node's gradient on ``batch`` rows drawn with replacement:

- fastgt: the GT kernel on a one-cell Batch (no metrics), minibatch indices drawn in the
  kernel from the counter-based streams;
- numpy (dense data): the rows gathered as an (n, batch, d) array, margins and gradients
  by einsum, W by scipy CSR (the mixing is a small part);
- scipy (sparse data): the drawn rows as a CSR slice, margins by one gather and bincount,
  gradients by a sparse (n x n batch) @ (n batch x d) product.

Each baseline is first checked against fastgt on exact gradients (every row, noise
"full"): the iterates must agree to 1e-10 after a few steps. Reported: ns per node and
step, ns per (node x sample x feature) with feature = d (dense) or the mean nonzeros of a
row (sparse), the speed-up over the baseline, and the bound of reading the sampled rows
(8 bytes a value dense, 12 sparse: value and index) at the machine's triad bandwidth
(bench/limits.py), when the data do not fit in the last-level cache.

--against REF (A/B mode): this checkout's fastgt (A, working tree included) against git
revision REF's (B, its fastgt/ extracted to a temporary directory), fastgt's GT step alone
(no baseline), in ``--pairs`` pairs of child processes taking turns (A, B, A, B, ...; one
warm-up child each first, which compiles a copy's kernels once). Reported per case: the
medians of ns per node, the median and range of the pairwise ratios A/B, and whether
every child's sha256 of the iterate after CHECK_STEPS minibatch steps agrees (the bits).
Its children drive fastgt's engine directly (FastgtGT: a one-cell Batch, no metrics), so
REF must have this checkout's internal API (Batch, Cell, the algorithms' init and
advance): recent commits, not any.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sps
from scipy.special import expit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import limits

SAMPLES, REG, GAMMA, DENSITY, CHECK_STEPS = 100, 0.01, 0.5, 0.1, 3


def problem_spec(kind: str, n: int, d: int, batch: int, tmp: str):
    """logistic on synthetic dense data, or on sparse data written to an .npz (DENSITY of
    the entries nonzero, N(0, 1/(DENSITY d)) values: rows of about unit norm)."""
    import fastgt

    if kind == "dense":
        return fastgt.problem("logistic", samples=SAMPLES, batch_size=batch, reg=REG)
    path = os.path.join(tmp, f"sparse_{n}_{d}.npz")
    if not os.path.exists(path):
        g = np.random.default_rng(1)
        X = sps.random(n * SAMPLES, d, density=DENSITY, format="csr", random_state=g,
                       data_rvs=lambda k: g.normal(0, 1 / np.sqrt(DENSITY * d), size=k))
        y = np.where(X @ g.normal(size=d) > 0, 1.0, -1.0)
        sps.save_npz(path, X)
        with np.load(path) as z:
            np.savez(path, **z, y=y)
    return fastgt.problem("logistic", data=path, batch_size=batch, reg=REG)


class FastgtGT:
    def __init__(self, inst, W, x0, full: bool):
        from fastgt.algorithms import ALGORITHMS, Batch, Cell
        from fastgt.problems import make_noise

        inst = inst.sampled(0 if full else inst.batch_size)
        self.algo = ALGORITHMS["gt"]
        self.batch = Batch([Cell(W, make_noise("none", 0.0, inst.d, W), GAMMA, 0, x0)], inst)
        self.arrays = self.algo.init(self.batch)
        self.t = self.cur = 0

    def advance(self, k: int) -> None:
        self.cur = self.algo.advance(self.batch, self.arrays, self.cur, self.t, k, False)
        self.t += k

    def iterate(self):
        return self.batch.real(self.algo.iterates(self.batch, self.arrays, self.cur, 0)[0])


class BaselineGT:
    """GT with the gradient of ``grads(X, idx)``; idx (n, batch) row numbers within each
    node (all rows when full). Same state and order as fastgt's GT: X' = W (X - gamma Y),
    G' = grads(X'), Y' = W Y + G' - G."""

    def __init__(self, inst, W, x0, full: bool, seed=0):
        self.inst, self.full = inst, full
        self.Wsp = W.sparse_part().tocsr()
        self.beta = W.mean_weight
        self.rng = np.random.default_rng(seed)
        self.lo = inst.offsets[:-1]
        self.X = x0.copy()
        self.G = self.grads(self.X, self._idx())
        self.Y = self.G.copy()

    def _idx(self):
        m = int(self.inst.sizes[0])
        if self.full:
            return np.broadcast_to(np.arange(m), (self.inst.n, m))
        return self.rng.integers(0, m, size=(self.inst.n, self.inst.batch_size))

    def mix(self, S):
        M = self.Wsp @ S
        if self.beta:
            M += self.beta * S.mean(axis=0)
        return M

    def advance(self, k: int) -> None:
        for _ in range(k):
            Xn = self.mix(self.X - GAMMA * self.Y)
            Gn = self.grads(Xn, self._idx())
            self.Y = self.mix(self.Y) + Gn - self.G
            self.X, self.G = Xn, Gn


class NumpyGT(BaselineGT):
    name = "numpy"

    def __init__(self, inst, W, x0, full):
        m = int(inst.sizes[0])
        self.A3 = inst.A.reshape(inst.n, m, inst.d)
        self.y2 = inst.y.reshape(inst.n, m)
        super().__init__(inst, W, x0, full)

    def grads(self, X, idx):
        node = np.arange(self.inst.n)[:, None]
        rows, y = self.A3[node, idx], self.y2[node, idx]  # (n, B, d), (n, B)
        z = np.einsum("nbd,nd->nb", rows, X)
        c = -y * expit(-y * z) / idx.shape[1]
        return np.einsum("nb,nbd->nd", c, rows) + REG * X


class ScipyGT(BaselineGT):
    name = "scipy"

    def grads(self, X, idx):
        n, B = idx.shape
        flat = (self.lo[:, None] + idx).ravel()
        R = self.inst.A[flat]  # CSR (n B, d)
        y = self.inst.y[flat]
        owner = np.repeat(np.arange(n * B), np.diff(R.indptr))
        z = np.bincount(owner, weights=R.data * X[owner // B, R.indices], minlength=n * B)
        c = -y * expit(-y * z) / B
        S = sps.csr_matrix((c, np.arange(n * B), np.arange(0, n * B + 1, B)), shape=(n, n * B))
        return (S @ R).toarray() + REG * X


def check(inst, W, x0, base_cls) -> float:
    """Max relative difference of the iterates after CHECK_STEPS exact-gradient steps."""
    a, b = FastgtGT(inst, W, x0, full=True), base_cls(inst, W, x0, full=True)
    a.advance(CHECK_STEPS)
    b.advance(CHECK_STEPS)
    err = np.max(np.abs(a.iterate() - b.X)) / np.max(np.abs(b.X))
    if not err < 1e-10:
        raise SystemExit(f"{base_cls.name} disagrees with fastgt: {err:.3g}")
    return float(err)


def cases(args, tmp: str):
    """(kind, n, d, batch, instance, W, x0) of every case the options name."""
    import fastgt

    for kind in args.data.split(","):
        for n in common.int_list(args.n):
            for d in common.int_list(args.d):
                for B in common.int_list(args.batch):
                    inst = problem_spec(kind, n, d, B, tmp).build(n, d)
                    x0 = np.random.default_rng(0).normal(size=(n, d))
                    yield kind, n, d, B, inst, fastgt.topology("ring", n=n), x0


def ab_child(args, out: str) -> None:
    """One A/B child, on whichever fastgt PYTHONPATH gives: per case the sha256 of the
    iterate after CHECK_STEPS minibatch steps, and ns per node of GT's step (median of
    args.repeats blocks of about args.target seconds)."""
    import fastgt

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, n, d, B, inst, W, x0 in cases(args, tmp):
            bits = FastgtGT(inst, W, x0, False)
            bits.advance(CHECK_STEPS)
            run = FastgtGT(inst, W, x0, False)
            k = common.steps_for(run.advance, args.target)
            secs = common.seconds(lambda run=run, k=k: run.advance(k), args.repeats)
            rows.append({"case": [kind, n, d, B],
                         "sha": hashlib.sha256(bits.iterate().tobytes()).hexdigest()[:16],
                         "ns": statistics.median(secs) / k / n * 1e9})
    Path(out).write_text(json.dumps({"fastgt": str(Path(fastgt.__file__).parents[1]),
                                     "rows": rows}))


def against(args) -> tuple[str, dict]:
    """This checkout's fastgt (A) against args.against's (B): the report's text and its
    JSON data."""
    repo = Path(__file__).resolve().parents[1]
    sha, who = common.versions(repo, args.against)
    argv = sys.argv[1:]
    got = {"A": [], "B": []}
    with common.materialised(repo, sha) as ref, tempfile.TemporaryDirectory() as tmp:
        roots = {"A": repo, "B": ref}
        for i in range(args.pairs + 1):  # the first pair warms up (compiles), untimed
            for v in "AB":
                out = Path(tmp) / f"{v}{i}.json"
                env = os.environ | common.version_env(roots[v]) | {"NUMBA_NUM_THREADS": "1"}
                subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv,
                                "--ab-child", str(out)], env=env, check=True)
                ch = common.checked_child(v, roots[v], json.loads(out.read_text()))
                if i:
                    got[v].append(ch["rows"])
            print(f"pair {i}/{args.pairs} done" + (" (warm-up)" if not i else ""),
                  file=sys.stderr, flush=True)
    table, rows = [], []
    for c, case in enumerate(got["A"][0]):
        ns = {v: [run[c]["ns"] for run in got[v]] for v in "AB"}
        ratios = [a / b for a, b in zip(ns["A"], ns["B"])]
        shas = {run[c]["sha"] for v in "AB" for run in got[v]}
        rows.append({"case": case["case"], "ns_per_node": ns, "ratios": ratios,
                     "bits_same": len(shas) == 1})
        table.append([*map(str, case["case"]), f"{statistics.median(ns['A']):.0f}",
                      f"{statistics.median(ns['B']):.0f}", f"{statistics.median(ratios):.3f}",
                      f"{min(ratios):.2f}-{max(ratios):.2f}",
                      "same" if len(shas) == 1 else "DIFFER"])
    text = (f"CPU: {common.cpu_model()}, 1 thread. A = {who['A']}; B = {who['B']}; "
            f"{args.pairs} pairs of child processes after a warm-up pair.\n\n"
            + common.markdown_table(["data", "n", "d", "batch", "A ns/node", "B ns/node",
                                     "A/B", "A/B min-max", "bits"], table)
            + "\n\nns/node: fastgt's GT step per node, median over the pairs of each "
            "child's median; A/B: the median of the pairwise ratios, then their range; bits: "
            f"sha256 of the iterate after {CHECK_STEPS} minibatch steps in every child.")
    return text, {"machine": common.machine_info(), "against": {"sha": sha, **who},
                  "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="100,1000")
    ap.add_argument("--d", default="50,500")
    ap.add_argument("--batch", default="1,8,64")
    ap.add_argument("--data", default="dense,sparse")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", type=float, default=0.2, help="seconds per timed block")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--against", metavar="REF",
                    help="A/B mode: this checkout's fastgt against git revision REF's")
    ap.add_argument("--pairs", type=int, default=5, help="--against: timed pairs (default 5)")
    ap.add_argument("--ab-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n, args.d, args.batch, args.repeats, args.target = "100", "50", "8", 3, 0.05
    if set(args.data.split(",")) - {"dense", "sparse"}:
        ap.error("--data: allowed values dense, sparse (comma-separated)")
    if args.pairs < 1:
        ap.error("--pairs: allowed values >= 1")
    if args.ab_child:
        return ab_child(args, args.ab_child)
    if args.against:
        text, data = against(args)
        print(text)
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1))
        return None
    import numba

    import fastgt  # noqa: F401 (its numba settings, before numba's threads start)

    numba.set_num_threads(1)
    lim = limits.measure(1)
    rows, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, n, d, B, inst, W, x0 in cases(args, tmp):
            base_cls = NumpyGT if kind == "dense" else ScipyGT
            err = check(inst, W, x0, base_cls)
            runs = {"fastgt": FastgtGT(inst, W, x0, False),
                    base_cls.name: base_cls(inst, W, x0, False)}
            adv = {k: r.advance for k, r in runs.items()}
            steps = {k: common.steps_for(a, args.target) for k, a in adv.items()}
            secs, _ = common.interleaved_timings(adv, steps, args.repeats)
            feat = d if kind == "dense" else inst.A.nnz / inst.A.shape[0]
            per_node = {k: common.summarize(v, n / 1e9) for k, v in secs.items()}
            f, b = per_node["fastgt"]["median"], per_node[base_cls.name]["median"]
            data_bytes = (inst.A.nbytes if kind == "dense"
                          else inst.A.data.nbytes + inst.A.indices.nbytes)
            read = B * feat * (8 if kind == "dense" else 12) / lim["triad_GBps"]
            bound = read if data_bytes > limits.LLC_BYTES else None
            rows.append([kind, str(n), str(d), str(B), f"{f:.0f}",
                         f"{b:.0f}", f"{b / f:.1f}", f"{f / (B * feat):.2f}",
                         "-" if bound is None else f"{bound / (B * feat):.2f}"])
            raw.append({"data": kind, "n": n, "d": d, "batch": B,
                        "features_per_row": feat, "check_err": err,
                        "ns_per_node": per_node, "read_bound_ns": bound})
            print(f"done {kind} n={n} d={d} B={B}", file=sys.stderr)
    print(f"CPU: {common.cpu_model()}, 1 thread, triad {lim['triad_GBps']:.1f} GB/s\n")
    print(common.markdown_table(
        ["data", "n", "d", "batch", "fastgt ns/node", "baseline ns/node", "speed-up",
         "fastgt ns/(node x sample x feature)", "read bound ns/(node x sample x feature)"],
        rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": common.machine_info(), "limits": lim, "rows": raw}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
