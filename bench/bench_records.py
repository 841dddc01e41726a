"""What a record costs on a problem with data: fastgt's metrics against the numpy one-liner
of the same f, and in GT steps, in the same run.

    python bench/bench_records.py                       # least_squares, logistic; n = 100, 1000; d = 100
    python bench/bench_records.py --n 1000 --problems logistic --repeats 7

A record (``Problem.metrics``: loss_avg, loss_nodes, consensus, grad_norm2, tracking) is
dominated by ``loss_nodes`` = (1/n) sum_i f(x_i) - f*: every node's iterate against the
whole data set, n x rows x d multiply-adds and n x rows losses. The baseline computes the
same n values of f as a researcher would, ``np.logaddexp(0, -y * (X @ A.T)) @ w`` (or the
squares), checked to agree with fastgt's f to 1e-12 first; ``steps`` is a record's cost
in GT steps at batch size 8 on the ring (bench_ml.py's fastgt step). 100 rows per node,
synthetic dense data; the machine's threads (records use BLAS and numpy, not the kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from bench_ml import FastgtGT

SAMPLES, BATCH = 100, 8


def one_liner(inst):
    """f at each row of X, as numpy's logaddexp (or squares) over all margins at once."""
    w = inst.weights

    def f(X):
        Z = X @ inst.A.T
        loss = (0.5 * (Z - inst.y) ** 2 if inst.loss_code == 0
                else np.logaddexp(0.0, -inst.y * Z))
        return loss @ w + inst._reg_value(X)

    return f


def measure(name: str, n: int, d: int, repeats: int) -> dict:
    """One problem and size: a record's, the one-liner's and a GT step's seconds."""
    import fastgt

    inst = fastgt.problem(name, samples=SAMPLES, batch_size=BATCH).build(n, d)
    X = inst.xstar + 0.1 * np.random.default_rng(1).normal(size=(n, d))  # x* solved here
    base = one_liner(inst)
    err = np.max(np.abs(base(X) - inst.f(X)) / np.abs(base(X)))
    if not err < 1e-12:
        raise SystemExit(f"the one-liner disagrees with fastgt's f: {err:.3g}")
    fill, out = inst.metrics(lambda M, dtype=np.float64: M), np.empty(5)
    # one after the other, each its own repeats: a record's BLAS threads would spin into
    # the other's timing if interleaved (common.interleaved_timings)
    rec = common.seconds(lambda: fill(X, X, True, None, out), repeats)
    one = common.seconds(lambda: base(X), repeats)
    gt = FastgtGT(inst, fastgt.topology("ring", n=n), X, full=False)
    k = common.steps_for(gt.advance, 0.2)
    step = [s / k for s in common.seconds(lambda: gt.advance(k), repeats)]
    return {"problem": name, "n": n, "d": d, "record_s": rec, "one_liner_s": one,
            "step_s": step, "check": float(err)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="100,1000")
    ap.add_argument("--d", default="100")
    ap.add_argument("--problems", default="least_squares,logistic")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()

    rows, raw = [], []
    for name in args.problems.split(","):
        for n in common.int_list(args.n):
            for d in common.int_list(args.d):
                m = measure(name, n, d, args.repeats)
                r, o, s = (statistics.median(m[k]) for k in ("record_s", "one_liner_s",
                                                               "step_s"))
                raw.append(m)
                rows.append([name, str(n), str(d), f"{r:.3f}", f"{o:.3f}", f"{o / r:.1f}",
                             f"{r / s:.0f}"])
                print(f"done {name} n={n} d={d}", file=sys.stderr)
    machine = common.machine_info()
    print(common.machine_line(machine) + "\n")
    print(common.markdown_table(["problem", "n", "d", "record s", "one-liner f s",
                                 "vs one-liner", "steps"], rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": machine, "rows": raw}, fh, indent=1)


if __name__ == "__main__":
    main()
