"""The paper's figures from sweep results: ``fastgt report DIR``.

Cells are grouped by topology family and noise model: ``interp_ring`` sweeps are the
constant-c panels (loss vs 1/p, 1/p^2, 1/p^3, 1/(p c^2)), ``ring`` sweeps with reduced self
weight the constant-p panels (vs 1/(p c^2), 1/(p c)); gaussian noise is Setup A,
structured noise Setup B. Each figure shows the seed mean with its 95% interval, the exact
stationary theory (fastgt.theory) as a line, and fitted log-log slopes; a Markdown table
collects the slopes.

The default metric is ``consensus`` = (1/n) sum ||x_i - xbar||^2, the topology-dependent
part of the node-level loss (on f_i = ||x||^2, loss_nodes = loss_avg + consensus, and
loss_avg = gamma sigma2 / (4 n (1 - gamma)) does not depend on the graph).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .analysis import aggregate, loglog_slope, parameter_columns
from .errors import FastGTError

#: x axes: name -> (label, function of p and c)
AXES = {
    "inv_p": ("1/p", lambda p, c: 1 / p),
    "inv_p2": ("1/p^2", lambda p, c: 1 / p**2),
    "inv_p3": ("1/p^3", lambda p, c: 1 / p**3),
    "inv_pc2": ("1/(p c^2)", lambda p, c: 1 / (p * c**2)),
    "inv_pc": ("1/(p c)", lambda p, c: 1 / (p * c)),
}
#: family -> (title, swept parameter, panels)
FIGURES = {
    "interp_ring": ("constant c (interpolated ring)", "alpha", ["inv_p", "inv_p2", "inv_p3", "inv_pc2"]),
    "ring": ("constant p (ring, reduced self weight)", "self_weight", ["inv_pc2", "inv_pc"]),
}
SETUPS = {"gaussian": "A", "structured": "B"}
#: the exponent the paper's bound O(gamma^2 sigma^2 / (p c^2)) implies for each axis
PAPER_BOUND = {"inv_p": 1.0, "inv_p2": 0.5, "inv_p3": 1 / 3, "inv_pc2": 1.0, "inv_pc": None}


def load_cells(path) -> pd.DataFrame:
    """Cells of DIR, or of every sweep directory directly under DIR."""
    from .storage import exists, load

    root = Path(path)
    dirs = [root] if (root / "cells").is_dir() else sorted(p for p in root.iterdir()
                                                           if (p / "cells").is_dir())
    if not dirs or not exists(str(dirs[0])):
        raise FastGTError(f"DIR={str(path)!r} is invalid: allowed a sweep directory (with cells/) "
                          "or a directory of sweep directories")
    return pd.concat([load(str(d), traces=False)[0] for d in dirs], ignore_index=True)


def theory_line(group: pd.DataFrame, param: str, metric: str, points: int = 40) -> pd.DataFrame:
    """Exact stationary ``metric`` along the swept parameter, with p and c (empty when the
    theory does not cover the cells' problem)."""
    from . import theory, topology

    first = group.iloc[0]
    lo, hi = group[param].min(), group[param].max()
    grid = np.unique(np.concatenate([np.linspace(lo, hi, points), group[param].unique()]))
    fixed = {"n": int(first["n"]), "lazy": bool(first.get("lazy", False) is True)}
    if first["topology"] == "interp_ring":
        fixed["self_weight"] = float(first["self_weight"])
    rows = []
    for v in grid:
        W = topology(first["topology"], **fixed, **{param: float(v)})
        sp = W.spectrum()
        try:
            st = theory.stationary(W, first["algorithm"], float(first["stepsize"]),
                                   float(first["sigma2"]), problem=first["problem"],
                                   noise=first["noise"], d=int(first["d"]))
        except FastGTError:
            return pd.DataFrame(columns=[param, "p", "c", metric])
        rows.append({param: v, "p": sp.p, "c": sp.c, metric: st[metric]})
    return pd.DataFrame(rows)


def _with_axes(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(**{k: f(df["p"], df["c"]) for k, (_, f) in AXES.items()})


def _groups(ok: pd.DataFrame):
    """(family, swept parameter, key of the other parameters, what varies, cells): one
    figure per combination of every parameter but the swept one and the seed."""
    for family, fam in ok.groupby("topology", sort=True):
        if family not in FIGURES:
            continue
        param = FIGURES[family][1]
        keys = [c for c in parameter_columns(fam) if c not in (param, "seed")]
        varying = [k for k in keys if fam[k].nunique(dropna=False) > 1
                   and k not in ("noise", "algorithm")]
        for vals, group in fam.groupby(keys, dropna=False, sort=True):
            key = dict(zip(keys, vals if isinstance(vals, tuple) else (vals,)))
            if key["noise"] in SETUPS:
                yield family, param, key, varying, group


def report(path, out=None, metric: str = "consensus") -> tuple[pd.DataFrame, list[Path]]:
    """Figures (PNG and PDF) and slopes.md for the paper sweeps under ``path``.

    Returns (slope table, written files)."""
    from matplotlib.figure import Figure

    cells = load_cells(path)
    out = Path(out or path)
    out.mkdir(parents=True, exist_ok=True)
    # the complete graph (p = 1) has no topology term (consensus is 0 up to rounding)
    ok = cells[(cells["status"] == "ok") & (cells["p"] < 1.0 - 1e-12)]
    rows, files = [], []
    for family, param, key, varying, group in _groups(ok):
        title, _, panels = FIGURES[family]
        noise, algo = key["noise"], key["algorithm"]
        agg = _with_axes(aggregate(group, values=[metric, "p", "c"], by=[param]).rename(
            columns={"p_mean": "p", "c_mean": "c"}))
        line = _with_axes(theory_line(group, param, metric))
        fig = Figure(figsize=(4.2 * len(panels), 3.6))
        axes = fig.subplots(1, len(panels), squeeze=False)
        for ax, axis in zip(axes[0], panels):
            label = AXES[axis][0]
            sim = loglog_slope(agg, axis, f"{metric}_mean")
            th = loglog_slope(line[line[param].isin(agg[param])], axis, metric)  # same points
            mean = agg[f"{metric}_mean"]
            err = np.vstack([mean - agg[f"{metric}_ci_low"], agg[f"{metric}_ci_high"] - mean])
            ax.errorbar(agg[axis], mean, yerr=np.nan_to_num(err), fmt="o", capsize=3,
                        label=f"simulated (slope {sim['slope']:.2f})")
            if len(line):
                order = np.argsort(line[axis].to_numpy())
                ax.plot(line[axis].to_numpy()[order], line[metric].to_numpy()[order], "-",
                        label=f"exact theory (slope {th['slope']:.2f})")
            ax.set(xscale="log", yscale="log", xlabel=label, ylabel=metric)
            ax.legend(fontsize=8)
            rows.append({"setup": SETUPS[noise], "figure": title, "algorithm": algo, "x": label,
                         "metric": metric, "slope_simulated": sim["slope"],
                         "slope_theory": th["slope"], "r2_simulated": sim["r2"],
                         "paper_bound_slope": PAPER_BOUND[axis], "points": int(sim["points"]),
                         **{k: key[k] for k in varying}})
        extra = ", ".join(f"{k}={key[k]}" for k in varying)
        fig.suptitle(f"Setup {SETUPS[noise]}, {algo.upper()}, {title}"
                     + (f" ({extra})" if extra else ""), fontsize=10)
        fig.tight_layout()
        stem = out / ("_".join([f"setup{SETUPS[noise]}", family, algo]
                               + [f"{k}{key[k]}" for k in varying]))
        for ext in ("png", "pdf"):
            fig.savefig(f"{stem}.{ext}", dpi=120)
            files.append(Path(f"{stem}.{ext}"))
    if not rows:
        raise FastGTError(f"DIR={str(path)!r} has no ok cells of the paper's sweeps "
                          "(interp_ring or ring, gaussian or structured noise)")
    table = pd.DataFrame(rows)
    md = out / "slopes.md"
    md.write_text(slopes_markdown(table))
    files.append(md)
    return table, files


def slopes_markdown(table: pd.DataFrame) -> str:
    head = ("| setup | figure | algorithm | x | slope (simulated) | slope (exact theory) | "
            "paper's bound |\n|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| {r.setup} | {r.figure} | {r.algorithm} | {r.x} | {r.slope_simulated:.3f} | "
        f"{r.slope_theory:.3f} | "
        f"{'-' if r.paper_bound_slope is None or pd.isna(r.paper_bound_slope) else f'{r.paper_bound_slope:.3g}'} |\n"
        for r in table.itertuples())
    return (f"Fitted log-log slopes of {table['metric'].iloc[0]} (seed means) against each "
            "axis.\n\n" + head + body)
