"""Time-varying topologies against the ring: cost per node-dimension-step of one step.

    python bench/bench_varying.py [--n 300,3000,30000] [--d 100,10] [--algorithms gt,dsgd]
                                  [--threads 1,2] [--repeats 7] [--noise none] [--offsets]
                                  [--quick]

For each algorithm, n, d and thread count, fastgt.run on the ring (3 entries per row), the
one-peer exponential graph (1 neighbour: rows of 2 entries, run as 3 with a zero weight)
and random matchings (drawn by every row at every step: kernels/matching.py), Setup A (or
``--noise none``: no generator, the steps as memory-bound as they get), interleaved
repeats in one process per thread count (a burst of load hits all three). Reports ns per
node-dimension-step (median, min), the ratio of each to the ring's in the same run (the
issue's target: no slower than the ring, ratio <= 1), and the machine's no-overlap bound
(bench/limits.py: memory traffic and flops of the ring's step). ``--offsets``: also each
step of the one-peer graph alone (offset o = 1, 2, 4, ...: a period of that one step,
which alone need not contract), against the ring: where row order reads partners from
memory, and what chain order (algorithms.base.chain) makes of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common

TOPOLOGIES = ("ring", "one_peer_exponential", "random_matching")


def child(args) -> None:
    """One thread count: every case, printed as JSON lines."""
    import fastgt
    from fastgt.topology.varying import TimeVarying

    for algorithm in args.algorithms:
        for n in args.n:
            for d in args.d:
                Ws = {name: fastgt.topology(name, n=n) for name in TOPOLOGIES}
                if args.offsets == ["yes"]:
                    for m in Ws["one_peer_exponential"].period:
                        o = int((m.indices[m.indptr[0]:m.indptr[1]] % n).max())  # row 0's partner
                        Ws[f"o={o}"] = TimeVarying((m,), "one_peer_step", {"offset": o})

                def advance(k, W=None, algorithm=algorithm, d=d):
                    # noiseless at 1e-6: iterates that decay to subnormal numbers would
                    # cost 10-100x per operation (bench_steps.py: the same cost per step)
                    res = fastgt.run(algorithm=algorithm, topology=W, d=d, steps=k,
                                     record_every=k, threads=args.threads_now,
                                     stepsize=0.01 if args.noise[0] == "gaussian" else 1e-6,
                                     noise=args.noise[0])
                    return res.summary["loop_time"]

                runs = {name: (lambda k, W=W: advance(k, W)) for name, W in Ws.items()}
                for a in runs.values():
                    a(2)  # compiles on first use: not in the calibration
                steps = {name: common.steps_for(a, args.target_s) for name, a in runs.items()}
                secs, _ = common.interleaved_timings(
                    {name: (lambda k, a=a: a(k)) for name, a in runs.items()}, steps,
                    args.repeats)
                per = n * d * 1e-9
                print(json.dumps({"algorithm": algorithm, "n": n, "d": d,
                                  "threads": args.threads_now,
                                  "ns": {k: common.summarize(v, per) for k, v in secs.items()},
                                  "bound": common.bound_in_child(algorithm, n, d,
                                                                 args.threads_now)}),
                      flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.case_options(ap, n=[300, 3000, 30000], d=[100, 10], algorithms=["gt", "dsgd"],
                        repeats=7, target_s=0.1)
    # both as lists: child_cases passes list options on to the measuring child
    ap.add_argument("--noise", type=lambda s: s.split(","), default=["gaussian"],
                    help="gaussian (Setup A, default) or none (memory-bound steps)")
    ap.add_argument("--offsets", nargs="?", const=["yes"], default=["no"],
                    type=lambda s: s.split(","),
                    help="also each step of the one-peer graph alone, against the ring")
    ap.add_argument("--quick", action="store_true", help="n=300, d=100, 3 repeats, 1 thread")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d, args.repeats, args.threads = [300], [100], 3, [1]
    if args.threads_now:
        child(args)
        return
    machine = common.machine_info()
    rows, steps = [], []
    lists = ("noise", "offsets")
    for threads, case in common.threaded_cases(__file__, args, lists):
        ring = case["ns"]["ring"]["median"]
        cells = [case["algorithm"], str(case["n"]), str(case["d"]), str(threads),
                 f"{case['bound']:.2f}"]
        for name in TOPOLOGIES:
            ns = case["ns"][name]
            cells.append(f"{ns['median']:.2f} ({ns['min']:.2f})")
            if name != "ring":
                cells.append(f"{ns['median'] / ring:.2f}")
        rows.append(cells)
        steps += [[case["algorithm"], str(case["n"]), str(case["d"]), str(threads),
                   name[2:], f"{ns['median']:.2f}", f"{ns['median'] / ring:.2f}"]
                  for name, ns in case["ns"].items() if name.startswith("o=")]
    print(common.machine_line(machine))
    print(common.markdown_table(
        ["algo", "n", "d", "threads", "bound ns", "ring ns", "one-peer ns", "one-peer/ring",
         "matching ns", "matching/ring"], rows))
    print(f"\nns = nanoseconds per node-dimension-step of fastgt.run's loop (noise "
          f"{args.noise[0]}), median "
          f"(min) of {args.repeats} interleaved repeats; ratios of medians against the ring in "
          "the same process; bound: bench/limits.py's no-overlap bound of the ring's step.")
    if steps:
        print()
        print(common.markdown_table(["algo", "n", "d", "threads", "offset", "ns",
                                     "step / ring"], steps))
        print("\nEach step of the one-peer graph alone (its rows mix row i + offset): "
              "medians as above.")


if __name__ == "__main__":
    main()
