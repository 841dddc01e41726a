"""The algorithms side by side: five sweeps (scripts/showcase/*.toml) and their figures.

    python scripts/showcase.py [--out results/showcase] [--workers 2] [--quick]

(a) zeta.toml: GT, D-SGD, D², EXTRA, ATC-GT and the centralized baseline on hetero_quadratic
    as the heterogeneity zeta grows, each at its best stepsize: the one that first brings
    loss_nodes below EPS to stay (fastgt.analysis.steps_to, best_over; mean over seeds),
    and the plateau of loss_nodes at the smallest stepsize;
(b) d2_fails.toml: a ring with lambda_n = -0.8, where D² diverges and GT does not;
(c) local_steps.toml: GT with local steps k = 1, 2, 5, 10, loss against communication rounds;
(d) one_peer.toml: the one-peer exponential graph against the static exponential graph and
    the ring at n = 1024, against steps and against messages sent per node;
(e) logistic.toml: GT, D-SGD and D² on logistic regression over a ring of 32 nodes with
    Dirichlet label skew alpha = 0.1, 1, 10 (minibatches of 8): loss against communication
    rounds (one per step for all three), accuracy, and each split's heterogeneity zeta2.

Each sweep is an ordinary ``fastgt grid`` directory under --out (a rerun resumes); the
figures are OUT/showcase_{a,b,c,d,e}.png and the numbers behind (a) and (e) OUT/showcase.md. --quick
runs smaller versions (fewer steps, stepsizes and zetas: a smoke test, seconds).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgt
from fastgt.analysis import best_over, steps_to
from fastgt.sweep.executors import run_sweep
from fastgt.sweep.grid import load_spec

SPECS = Path(__file__).with_name("showcase")
EPS = 1e-4  # (a): the accuracy in loss_nodes each algorithm's best stepsize reaches first
#: --quick: (--set values, --param axes) of each sweep
QUICK = {"zeta": (["steps=3000"], ["stepsize=0.025,0.1", "zeta=0,1,10", "seed=0"]),
         "d2_fails": (["steps=600"], []), "local_steps": (["steps=4000", "record_every=100"], []),
         "one_peer": (["steps=600", "n=256"], []),
         "logistic": (["steps=2000"], [])}


def sweep(name: str, out: Path, workers: int, quick: bool):
    sets, params = QUICK[name] if quick else ((), ())
    spec = load_spec(SPECS / f"{name}.toml", sets=sets, params=params)
    report = run_sweep(spec.cells(), out / name, workers=workers, spec_text=spec.to_toml(),
                       progress=False)
    print(f"{name}: {report.line()}")
    return fastgt.load(out / name)


def save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure_a(cells, traces, path: Path) -> str:
    cells = cells.merge(steps_to(traces, EPS), on="id", how="left")  # a failed cell: NaN
    best = best_over(cells, "stepsize", value="steps_to", by=["algorithm", "zeta"])
    floor = cells[cells["stepsize"] == cells["stepsize"].min()].groupby(
        ["algorithm", "zeta"])["loss_nodes"].mean().unstack("algorithm")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for algorithm, g in best.groupby("algorithm"):
        g = g.sort_values("zeta")
        axes[0].plot(g["zeta"], g["steps_to_mean"], marker="o", label=algorithm)
        axes[1].plot(floor.index, floor[algorithm], marker="o", label=algorithm)
    for ax in axes:
        ax.set_xscale("symlog", linthresh=0.3)
        ax.set_xlabel("heterogeneity zeta")
    axes[0].set_ylabel(f"steps to loss_nodes < {EPS:g}, best stepsize")
    axes[1].set_ylabel(f"loss_nodes plateau, stepsize {cells['stepsize'].min():g}")
    axes[1].set_yscale("log")
    axes[0].set_title("a missing point: no stepsize reached it", fontsize=9)
    axes[1].legend(fontsize=8)
    fig.suptitle("hetero_quadratic, ring n=32 (self weight 1/2), Setup A, sigma2 = 0.01",
                 fontsize=10)
    save(fig, path)
    table = best.pivot(index="zeta", columns="algorithm", values="steps_to_mean")
    steps = best.pivot(index="zeta", columns="algorithm", values="stepsize")
    lines = [(f"Steps to loss_nodes < {EPS:g} at each algorithm's best stepsize (mean over "
              "seeds; -: no stepsize of the grid reached it), and the plateau of loss_nodes "
              f"at stepsize {cells['stepsize'].min():g}."), "",
             "| zeta | " + " | ".join(table.columns) + " |",
             "|---|" + "---|" * len(table.columns)]
    for z, row in table.iterrows():
        lines.append(f"| {z:g} | " + " | ".join(
            "-" if math.isnan(v) else f"{v:.0f} (gamma {steps.loc[z, a]:g}; plateau "
            f"{floor.loc[z, a]:.2g})" for a, v in row.items()) + " |")
    return "\n".join(lines)


def figure_curves(traces, path: Path, hue: str, x: str, title: str, logx=False) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, g in traces.groupby(hue):
        g = g.sort_values("step")
        g = g[g[x] > 0] if logx else g  # a log axis has no 0: no flat start drawn to it
        ax.plot(g[x], g["loss_nodes"], label=f"{hue}={key}")
    ax.set_yscale("log")
    ax.set_xscale("log" if logx else "linear")
    ax.set_xlabel(x)
    ax.set_ylabel("loss_nodes")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    save(fig, path)


def figure_d(traces, n: int, path: Path) -> None:
    """Against steps, and against messages sent per node (communication rounds times the
    neighbours a node sends to: one for the one-peer graph)."""
    degree = {"one_peer_exponential": 1, "ring": 2,
              "exponential": fastgt.topology("exponential", n=n).nnz // n - 1}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for topo, g in traces.groupby("topology"):
        g = g.sort_values("step")
        label = f"{topo} ({degree[topo]} neighbour{'s' if degree[topo] > 1 else ''})"
        axes[0].plot(g["step"], g["loss_nodes"], label=label)
        sent = g[g["comm_rounds"] > 0]  # a log axis has no 0: no flat start drawn to it
        axes[1].plot(sent["comm_rounds"] * degree[topo], sent["loss_nodes"], label=label)
    axes[0].set_xlabel("step")
    axes[1].set_xlabel("messages sent per node")
    axes[1].set_xscale("log")
    axes[0].set_ylabel("loss_nodes")
    for ax in axes:
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"GT, hetero_quadratic, exact gradients, n = {n}", fontsize=10)
    save(fig, path)


def figure_e(cells, traces, path: Path) -> str:
    """loss_nodes against communication rounds, one panel per split_alpha; the table of
    zeta2 and of the final loss and accuracy."""
    alphas = sorted(cells["split_alpha"].unique())
    fig, axes = plt.subplots(1, len(alphas), figsize=(4 * len(alphas), 3.6), sharey=True)
    for ax, alpha in zip(axes, alphas):
        for algorithm, g in traces[traces["split_alpha"] == alpha].groupby("algorithm"):
            g = g.sort_values("step")
            ax.plot(g["comm_rounds"], g["loss_nodes"], label=algorithm)
        zeta2 = cells.loc[cells["split_alpha"] == alpha, "zeta2"].iloc[0]
        ax.set_title(f"split_alpha = {alpha:g} (zeta2 = {zeta2:.3g})", fontsize=9)
        ax.set_yscale("log")
        ax.set_xlabel("communication rounds (= steps)")
    axes[0].set_ylabel("loss_nodes")
    axes[0].legend(fontsize=8)
    fig.suptitle("logistic regression, ring n = 32, Dirichlet label skew, minibatches of 8",
                 fontsize=10)
    save(fig, path)
    lines = ["| split_alpha | zeta2 | " + " | ".join(
        f"{a}: loss_nodes, accuracy" for a in sorted(cells["algorithm"].unique())) + " |",
        "|---|---|" + "---|" * cells["algorithm"].nunique()]
    for alpha, g in cells.groupby("split_alpha"):
        g = g.set_index("algorithm").sort_index()
        lines.append(f"| {alpha:g} | {g['zeta2'].iloc[0]:.3g} | " + " | ".join(
            f"{r.loss_nodes:.2e}, {r.accuracy:.3f}" for r in g.itertuples()) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/showcase"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="fewer steps: a smoke test")
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    cells, traces = sweep("zeta", out, args.workers, args.quick)
    table = figure_a(cells, traces, out / "showcase_a.png")
    _, traces = sweep("d2_fails", out, args.workers, args.quick)
    figure_curves(traces, out / "showcase_b.png", "algorithm", "step",
                  "ring n=32, self weight 0.1 (lambda_n = -0.8), exact gradients")
    _, traces = sweep("local_steps", out, args.workers, args.quick)
    figure_curves(traces, out / "showcase_c.png", "local_steps", "comm_rounds",
                  "GT with local steps, hetero_quadratic, ring n=32", logx=True)
    cells, traces = sweep("one_peer", out, args.workers, args.quick)
    figure_d(traces, int(cells["n"].iloc[0]), out / "showcase_d.png")
    cells, traces = sweep("logistic", out, args.workers, args.quick)
    table_e = figure_e(cells, traces, out / "showcase_e.png")
    (out / "showcase.md").write_text(
        "# (a) heterogeneity: every algorithm at its best stepsize\n\n" + table + "\n\n"
        "# (e) logistic regression with label skew (plateaus)\n\n" + table_e + "\n")
    print(f"figures: {', '.join(str(out / f'showcase_{k}.png') for k in 'abcde')}")
    print(table)
    print(table_e)


if __name__ == "__main__":
    main()
