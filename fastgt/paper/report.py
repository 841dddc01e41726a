"""The paper's figures from sweep results: ``fastgt report DIR``.

DIR is a sweep directory or a directory of sweep directories; every sweep is reported on
its own, never merged with another. Its cells are grouped by topology family and noise
model: ``interp_ring`` sweeps are the constant-c panels (loss vs 1/p, 1/p^2, 1/p^3,
1/(p c^2)), ``ring`` sweeps with reduced self weight the constant-p panels (vs 1/(p c^2),
1/(p c)); gaussian noise is Setup A, structured noise Setup B. A figure needs two values
or more of its swept parameter (alpha, self_weight): cells of one topology are left out.
Each figure shows the seed mean with its 95% interval, the exact stationary theory
(fastgt.theory) as a line, and fitted log-log slopes; a Markdown table, slopes.md,
collects the slopes. Files are named
``setup{A,B}_{family}_{algorithm}[_{other parameter}{value}].{png,pdf}``, with
``{sweep}_`` in front when DIR holds several sweeps.

Figures and slopes.md say what was run (sweep directory, n, d, steps, stepsize, sigma2)
and what the error bars are (95% CI over k seeds). Cells whose plateau was not measured at
stationarity (fastgt.analysis.plateau_checks) are drawn hollow, left out of the fits
unless ``include_transient``, and listed with the reason in slopes.md; so are the points a
log axis cannot show.

The default metric is ``consensus`` = (1/n) sum ||x_i - xbar||^2, the topology-dependent
part of the node-level loss (on f_i = ||x||^2, loss_nodes = loss_avg + consensus, and
loss_avg = gamma sigma2 / (4 n (1 - gamma)) does not depend on the graph).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.figtext import RUN_KEYS, declutter_ticks, describe_run, error_bars
from ..analysis.stats import (
    MIN_TIME_CONSTANTS,
    aggregate,
    loglog_slope,
    parameter_columns,
    plateau_checks,
)
from ..errors import FastGTError, check_choice
from ..metrics import TRACE_AXES

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
#: the metrics that bound is about (not tracking, and loss_avg does not depend on the graph)
BOUND_METRICS = ("consensus", "loss_nodes")


def sweep_dirs(path) -> list[Path]:
    """DIR itself when it is a sweep directory (with cells/), else the sweep directories
    directly under it (sorted by name)."""
    from ..sweep.storage import open_sweep, sweeps_under

    root = Path(path)
    if (root / "cells").is_dir():
        return [root]
    dirs = [Path(p) for p in sweeps_under(path)]
    if not dirs:
        open_sweep(path)  # raises, saying what DIR is instead
    return dirs


def load_sweep(directory, metric: str = "consensus", x: str = "step"
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells, traces) of one sweep directory: its ok cells with the plateau checks of
    ``metric`` (fastgt.analysis.plateau_checks: ``transient``, ``reason``, ...), and the
    traces' id, step, ``x`` and ``metric``."""
    from ..sweep.storage import Store

    store = Store(str(directory), create=False)
    cells = store.read("cells")
    cells = cells[cells["status"] == "ok"].reset_index(drop=True)
    traces = store.read("traces", columns=list(dict.fromkeys(["id", "step", x, metric])))
    return cells.join(plateau_checks(cells, traces, metric), on="id"), traces


def theory_line(group: pd.DataFrame, param: str, metric: str, points: int = 40) -> pd.DataFrame:
    """Exact stationary ``metric`` along the swept parameter, with p and c (empty when the
    theory does not cover the cells' problem)."""
    from ..theory import stationary
    from ..topology import topology

    if group.empty:
        return pd.DataFrame(columns=[param, "p", "c", metric])
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
            sigma2 = first["sigma2"]  # null where the noise adds none
            st = stationary(W, first["algorithm"], float(first["stepsize"]),
                            1.0 if pd.isna(sigma2) else float(sigma2), problem=first["problem"],
                            noise=first["noise"], d=int(first["d"]))
        except FastGTError:
            return pd.DataFrame(columns=[param, "p", "c", metric])
        rows.append({param: v, "p": sp.p, "c": sp.c, metric: st[metric]})
    return pd.DataFrame(rows)


def _with_axes(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(**{k: f(df["p"], df["c"]) for k, (_, f) in AXES.items()})


def _groups(ok: pd.DataFrame):
    """(family, swept parameter, key of the other parameters, what varies, cells): one
    figure per combination of every parameter but the swept one and the seed, whose cells
    have two values or more of the swept one (what varies: among those figures' cells)."""
    for family, fam in ok.groupby("topology", sort=True):
        if family not in FIGURES:
            continue
        param = FIGURES[family][1]
        # the paper's cells only: what varies among them names the figures (a noiseless
        # cell's null sigma2 must not)
        fam = fam[fam["noise"].isin(list(SETUPS)) & (fam["problem"] == "quadratic")]
        keys = [c for c in parameter_columns(fam) if c not in (param, "seed")]
        # a figure needs two topologies (values of param) to fit a slope to
        groups = [(vals, group) for vals, group in fam.groupby(keys, dropna=False, sort=True)
                  if group[param].nunique() > 1]
        if not groups:
            continue
        drawn = pd.concat([group for _, group in groups])
        varying = [k for k in keys if drawn[k].nunique(dropna=False) > 1
                   and k not in ("noise", "algorithm")]
        for vals, group in groups:
            yield family, param, dict(zip(keys, vals if isinstance(vals, tuple) else (vals,))), \
                varying, group


def report(path, out=None, metric: str = "consensus", include_transient: bool = False,
           curves: str | None = None) -> tuple[pd.DataFrame, list[Path]]:
    """Figures (PNG and PDF) and slopes.md for the paper sweeps under ``path``.

    Every sweep directory is reported on its own; when ``path`` holds several, file names
    start with the sweep's name. include_transient: fit the points of cells whose plateau
    was not stationary too (drawn hollow either way). curves: also draw, per figure, every
    trace of ``metric`` against "step", "comm_rounds" or "grad_evals" (the costs so far,
    per node), coloured by the swept parameter (files ``..._vs_<curves>.{png,pdf}``).
    Returns (slope table, written files).
    """
    from ..analysis.plots import curves as draw_curves

    if curves is not None:
        check_choice("curves", curves, TRACE_AXES)
    dirs = sweep_dirs(path)
    out = Path(out or path)
    out.mkdir(parents=True, exist_ok=True)
    rows, files, runs, notes = [], [], [], {"transient": [], "not drawn": []}
    for directory in dirs:
        sweep = directory.resolve().name
        shown, counts = [], []
        cells, traces = load_sweep(directory, metric, curves or "step")
        for family, param, key, varying, group in _groups(cells):
            fig, fig_rows, fig_notes, fig_counts = _figure(
                sweep, directory, family, param, key, varying, group, metric, include_transient)
            rows += fig_rows
            for kind in notes:
                notes[kind] += fig_notes[kind]
            shown.append(group)
            counts += fig_counts
            stem = out / "_".join(([sweep] if len(dirs) > 1 else [])
                                  + [f"setup{SETUPS[key['noise']]}", family, key["algorithm"]]
                                  + [_safe(f"{k}{_value(key[k])}") for k in varying])
            figures = {stem: fig}
            if curves is not None:
                # what was run, in the title: the cells' parameters beside their traces
                mine = traces[traces["id"].isin(group["id"])]
                keep = ["id", *[k for k in (param, *RUN_KEYS)
                                if k in group.columns and k not in mine.columns]]
                figures[Path(f"{stem}_vs_{curves}")] = draw_curves(
                    mine.merge(group[keep], on="id"), y=metric, hue=param, x=curves,
                    sweep=f"{sweep}, Setup {SETUPS[key['noise']]}")
            for path_stem, figure in figures.items():
                for ext in ("png", "pdf"):
                    figure.savefig(f"{path_stem}.{ext}", dpi=120)
                    files.append(Path(f"{path_stem}.{ext}"))
        if shown:
            ok, cells = len(cells), pd.concat(shown)
            left = (f"; {ok - len(cells)} other ok cells left out (not {PAPER_CELLS}: "
                    "fastgt plot draws any)" if ok > len(cells) else "")
            runs.append(f"sweep {sweep} ({directory}): {len(cells)} cells of "
                        f"{', '.join(sorted(cells['topology'].unique()))}; "
                        f"{describe_run(cells)}; {error_bars(counts)}{left}")
    if not rows:
        raise FastGTError(f"DIR={str(path)!r} has no ok cells of the paper's sweeps "
                          f"({PAPER_CELLS}; fastgt plot draws any sweep)")
    table = pd.DataFrame(rows)
    md = out / "slopes.md"
    md.write_text(slopes_markdown(table, runs, notes, include_transient))
    files.append(md)
    return table, files


#: the cells a report draws: the paper's sweeps
PAPER_CELLS = ("interp_ring or ring, gaussian or structured noise, the quadratic problem, "
               "two values or more of alpha or self_weight")


def _safe(text: str) -> str:
    """A file name's part: characters other than letters, digits and ._=- as _ (a
    topology_y table's JSON)."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")


def _value(v) -> str:
    """A parameter's value as a title or file name shows it: "none" where the cells do not
    set it (a topology_y of some cells only), not "nan"."""
    import pandas as pd

    return "none" if pd.isna(v) else str(v)


def _figure(sweep, directory, family, param, key, varying, group, metric, include_transient):
    """One figure: (Figure, slope rows, {"transient": [...], "not drawn": [...]} lines for
    slopes.md, the number of seeds behind each drawn point)."""
    from matplotlib.figure import Figure

    title, _, panels = FIGURES[family]
    setup, algo = SETUPS[key["noise"]], key["algorithm"]
    extra = ", ".join(f"{k}={_value(key[k])}" for k in varying)
    agg = _points(group, param, metric)
    drawn = agg["why"] == ""
    fitted = agg[drawn & (include_transient | ~agg["transient"])]
    line = _with_axes(theory_line(group[group[param].isin(agg.loc[drawn, param])], param,
                                  metric))
    fig = Figure(figsize=(4.2 * len(panels), 4.4), layout="constrained")
    rows = []
    for ax, axis in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        sim = loglog_slope(fitted, axis, f"{metric}_mean")
        th = loglog_slope(line[line[param].isin(fitted[param])], axis, metric)  # same points
        for hollow in (False, True):
            pts = agg[drawn & (agg["transient"] == hollow)]
            if pts.empty:
                continue
            m = pts[f"{metric}_mean"]
            err = np.vstack([m - pts[f"{metric}_ci_low"], pts[f"{metric}_ci_high"] - m])
            text = (f"transient ({'fitted' if include_transient else 'not fitted'})" if hollow
                    else f"simulated (slope {sim['slope']:.2f})")
            ax.errorbar(pts[axis], m, yerr=np.nan_to_num(err), fmt="o", color="C0",
                        mfc="none" if hollow else "C0", capsize=3, label=text)
        if len(line):
            order = np.argsort(line[axis].to_numpy())
            ax.plot(line[axis].to_numpy()[order], line[metric].to_numpy()[order], "-",
                    color="C1", label=f"exact theory (slope {th['slope']:.2f})")
        ax.set(xscale="log", yscale="log", xlabel=AXES[axis][0], ylabel=metric)
        ax.legend(fontsize=8)
        rows.append({"sweep": sweep, "setup": setup, "figure": title, "parameters": extra,
                     "algorithm": algo, "x": AXES[axis][0], "metric": metric,
                     "slope_simulated": sim["slope"], "slope_theory": th["slope"],
                     "r2_simulated": sim["r2"],
                     **({"paper_bound_slope": PAPER_BOUND[axis]} if metric in BOUND_METRICS
                        else {}),
                     "points": int(sim["points"]), "left_out": int(drawn.sum()) - len(fitted),
                     **{k: key[k] for k in varying}})
    counts = agg.loc[drawn, f"{metric}_count"].tolist()
    footer = [error_bars(counts)]
    if agg.loc[drawn, "transient"].any():
        footer.append("hollow: transient cells, "
                      + ("fitted" if include_transient else "left out of the fits")
                      + " (see slopes.md)")
    if not drawn.all():
        footer.append("not drawn: " + "; ".join(
            f"{param} = {r[param]:g}: {r['why']}"
            for r in agg[~drawn].to_dict("records")))
    width = int(4.2 * len(panels) * 14)
    fig.suptitle(_wrap(f"Setup {setup}, {algo.upper()}, {title}" + (f" ({extra})" if extra else "")
                       + f"\nsweep {sweep} ({directory}): {describe_run(group)}", width),
                 fontsize=10)
    fig.supxlabel(_wrap("; ".join(footer), int(width * 1.2)), fontsize=8)
    declutter_ticks(fig)
    where = f"{sweep}, Setup {setup}, {algo.upper()}" + (f", {extra}" if extra else "")
    return fig, rows, _notes(where, param, group, agg), counts


def _points(group: pd.DataFrame, param: str, metric: str) -> pd.DataFrame:
    """Seed means of ``metric`` (with p, c, the axes) per value of ``param``; ``transient``:
    some cell of the point is; ``why``: why log axes cannot show the point ("" if they can)."""
    agg = _with_axes(aggregate(group, values=[metric, "p", "c"], by=[param]).rename(
        columns={"p_mean": "p", "c_mean": "c"}))
    agg["transient"] = agg[param].map(group.groupby(param)["transient"].any()).astype(bool)
    mean = agg[f"{metric}_mean"]
    agg["why"] = [
        # the complete graph's consensus is exactly 0 in theory: what is left is rounding
        f"p = 1, the complete graph, whose consensus is 0 in theory ({m:.2g} is rounding "
        "error)" if metric == "consensus" and p >= 1.0 - 1e-12 else
        "" if m > 0 and np.isfinite(m) else f"{metric} = {m:.3g} has no logarithm"
        for m, p in zip(mean, agg["p"])]
    return agg


def _notes(where: str, param: str, group: pd.DataFrame, agg: pd.DataFrame) -> dict:
    """slopes.md lines: the transient cells of drawn points, and the points not drawn."""
    drawn = agg.loc[agg["why"] == "", param]
    bad = group[group["transient"] & group[param].isin(drawn)].sort_values([param, "seed"])
    return {"transient": [f"{where}: {param} = {r[param]:g}, seed {r['seed']}: {r['reason']}"
                          for r in bad.to_dict("records")],
            "not drawn": [f"{where}: {param} = {r[param]:g} ({r['cells']} cell"
                          f"{'s' if r['cells'] != 1 else ''}): {r['why']}"
                          for r in agg[agg["why"] != ""].to_dict("records")]}


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
                     for line in text.split("\n"))


def slopes_markdown(table: pd.DataFrame, runs=(), notes=None,
                    include_transient: bool = False) -> str:
    """slopes.md: what was run (``runs``: one line per sweep), the slope table, then the
    transient cells and the points not drawn (``notes``: lines of each kind)."""
    notes = notes or {}
    metric = table["metric"].iloc[0]
    bound = "paper_bound_slope" in table.columns
    cols = ["sweep", "setup", "figure", "algorithm", "x", "slope (simulated)",
            "slope (exact theory)"] + (["paper's bound"] if bound else []) + ["points"]
    lines = [f"# Log-log slopes of {metric}", "",
             f"Each point is the mean over seeds of the cells' plateaus of {metric} (the mean of "
             "a cell's records over the last half of its steps); slopes are least-squares fits "
             "of log(mean) against log(x), the exact theory's at the same points. Cells whose "
             "plateau was not stationary are drawn hollow and "
             + ("fitted too (--include-transient)." if include_transient else
                "left out of the fits (`--include-transient` keeps them)."), "",
             *(f"- {r}" for r in runs), "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.to_dict("records"):
        figure = r["figure"] + (f", {r['parameters']}" if r["parameters"] else "")
        cells = [r["sweep"], r["setup"], figure, r["algorithm"], r["x"],
                 f"{r['slope_simulated']:.3f}", f"{r['slope_theory']:.3f}"]
        if bound:
            b = r["paper_bound_slope"]
            cells.append("-" if b is None or pd.isna(b) else f"{b:.3g}")
        cells.append(f"{r['points']}" + (f" of {r['points'] + r['left_out']}" if r["left_out"]
                                         else ""))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Transient cells" + (" (hollow markers, fitted)" if include_transient
                                          else " (hollow markers, left out of the fits)"), ""]
    lines += [f"- {n}" for n in notes.get("transient", [])] or [
        f"None: every plateau window started {MIN_TIME_CONSTANTS:g} or more time constants "
        + "into its run, and its two halves agree."]
    lines += ["", "## Points not drawn (a log axis cannot show them)", ""]
    lines += [f"- {n}" for n in notes.get("not drawn", [])] or ["None."]
    return "\n".join(lines) + "\n"
