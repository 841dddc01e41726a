"""Figures of sweep results (matplotlib, Agg canvas: no display, no global pyplot state).

Each function returns a ``matplotlib.figure.Figure``; ``fig.savefig("x.png")`` writes it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..errors import FastGTError, check_choice
from ..metrics import TRACE_AXES
from ..params import CONDITIONAL, PARAMS
from .figtext import RUN_KEYS, declutter_ticks, describe_run, error_bars
from .stats import aggregate, parameter_columns


def _figure():
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _check_columns(df: pd.DataFrame, **named) -> None:
    """Each named argument (x=, y=, hue=) a column of ``df``, or a one-line error naming it."""
    for name, c in named.items():
        if c is not None and c not in df.columns:
            raise FastGTError(f"{name}={c!r} is not a column of the results: allowed "
                              f"{', '.join(df.columns)}")


#: a numeric hue of at most this many values is shown by a legend, not a colour bar
FEW = 10


def _wide_positive(values) -> bool:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return bool(len(v)) and (v > 0).all() and v.max() >= 10 * v.min()


def summary(cells: pd.DataFrame, x: str, y: str = "loss_nodes", hue: str | None = None,
            logx: bool | None = None, logy: bool | None = None, level: float = 0.95,
            sweep: str | None = None) -> Figure:
    """Mean of ``y`` over seeds (error bars: the ``level`` t-interval) against ``x``, one line
    per value of ``hue``. Parameters besides x, hue and seed that vary are averaged too
    (named in the title). logx=None: log scale when x > 0 spans a factor 10 or more.
    The title says what was run (``sweep``, the results' directory, when given; n, d,
    steps, stepsize, sigma2) and what the error bars are (the seeds behind each point)."""
    _check_columns(cells, x=x, y=y, hue=hue)
    if hue == x:
        raise FastGTError(f"hue={hue!r} is the x axis: allowed another parameter, or none")
    unset = int(cells[x].isna().sum())  # cells x does not apply to (split_alpha of iid ones)
    if len(cells) and unset == len(cells):
        raise FastGTError(f"x={x!r} has no value in these cells: it does not apply to them")
    cells = cells[cells[x].notna()]
    # aggregate keeps the ok cells: the others are counted in the title, and what varies
    # among them only is not what the points average
    bad = (cells["status"].value_counts().drop("ok", errors="ignore") if "status" in cells
           else pd.Series(dtype=int))
    cells = cells[cells["status"] == "ok"] if "status" in cells else cells
    by = [x] + ([hue] if hue else [])
    others = averaged(cells, by)
    agg = aggregate(cells, values=[y], by=by, level=level)
    if agg.empty or not agg[f"{y}_mean"].notna().any():
        raise FastGTError(f"no cell with status ok has a value of {y!r}")
    fig, ax = _figure()
    # values without an order (algorithm, split, lazy) at evenly spaced ticks named by them
    named = not pd.api.types.is_numeric_dtype(agg[x]) or pd.api.types.is_bool_dtype(agg[x])
    ticks = {v: i for i, v in enumerate(sorted(agg[x].unique(), key=str))} if named else None
    for key, g in (agg.groupby(hue, dropna=False, sort=True) if hue else [(None, agg)]):
        g = g.sort_values(x, key=(lambda col: col.map(ticks)) if named else None)
        m = g[f"{y}_mean"].to_numpy()
        err = np.vstack([m - g[f"{y}_ci_low"].to_numpy(), g[f"{y}_ci_high"].to_numpy() - m])
        at = g[x].map(ticks).to_numpy() if named else g[x].to_numpy()
        grey = {"color": "0.5"} if hue and pd.isna(key) else {}  # as in curves
        ax.errorbar(at, m, yerr=np.nan_to_num(err), marker="o", capsize=3,
                    label=None if hue is None else _label(key), **grey)
    if named:
        ax.set_xticks(list(ticks.values()), [str(v) for v in ticks])
        ax.set_xlim(-0.5, len(ticks) - 0.5)
    else:
        ax.set_xscale("log" if (_wide_positive(agg[x]) if logx is None else logx) else "linear")
    ax.set_yscale("log" if _log_y(y, logy) else "linear")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    run = describe_run(cells, [k for k in RUN_KEYS if k not in (*by, *others)])
    if "seed" in by and not others:
        title = "one cell per point"
    elif others:  # the points average cells of other parameters: bars over cells, not seeds
        seeds = ("seed" not in by and "seed" in cells.columns
                 and cells["seed"].nunique(dropna=False) > 1)
        over = ", ".join((["seed"] if seeds else []) + others)
        title = f"mean over {over}; {error_bars(agg[f'{y}_count'], level, unit='cell')}"
    else:
        title = f"mean over seeds; {error_bars(agg[f'{y}_count'], level)}"
    if unset:
        title += f"; {unset} cells without {x} left out"
    if len(bad):  # of the cells with x, as the terminal's count
        title += "; left out: " + ", ".join(f"{n} {s}" for s, n in bad.items())
    ax.set_title(_title(sweep, run, title), fontsize=9)
    if hue:
        ax.legend(title=hue, fontsize=8)
    declutter_ticks(fig)
    return fig


def averaged(cells: pd.DataFrame, by: list) -> list:
    """The parameters a point averages over: those that vary among its own cells. Set in
    some and null in others counts, unless what owns the parameter varies there too and
    says why (a topology family's parameters, a problem's, sigma2 beside the noise)."""
    points = cells.groupby(by, dropna=False)
    out = []
    for c in parameter_columns(cells):
        if c in (*by, "seed"):
            continue
        mixed = points[c].nunique(dropna=False).gt(1)
        if not mixed.any():
            continue
        owner = (CONDITIONAL[c][0] if c in CONDITIONAL else
                 PARAMS[c].scope if c in PARAMS and PARAMS[c].scope != "run" else None)
        explained = (points[owner].nunique(dropna=False).gt(1) if owner in cells.columns
                     else False)
        if (points[c].nunique().gt(1) | (mixed & ~explained)).any():
            out.append(c)
    return out


def _log_y(y: str, logy: bool | None) -> bool:
    """Log scale unless asked otherwise, but for a share (accuracy, in [0, 1])."""
    return y not in LINEAR if logy is None else logy


#: metrics drawn on a linear axis unless asked otherwise
LINEAR = ("accuracy",)


def _title(sweep: str | None, run: str, what: str) -> str:
    """What was run (wrapped: a data file's long path) over what is drawn."""
    import textwrap

    head = "; ".join(t for t in (f"sweep {sweep}" if sweep else "", run) if t)
    return "\n".join([*textwrap.wrap(head, 90, break_on_hyphens=False), what])


def _label(value) -> str:
    """A legend's entry for a parameter's value; "not set" where it has none (topology_y
    of the cells without one, split_alpha of those it does not apply to)."""
    return "not set" if pd.isna(value) else f"{value}"


def curves(traces: pd.DataFrame, y: str = "loss_nodes", hue: str | None = None,
           logx: bool = False, logy: bool | None = None, sweep: str | None = None,
           x: str = "step") -> Figure:
    """Every trace of ``y`` against ``x`` (TRACE_AXES: the step, or the communication rounds
    or gradient evaluations so far), coloured by ``hue`` (a colour bar for numeric
    parameters, a legend otherwise). The title says what was run, as summary's does, and
    how many traces are drawn (one per cell: no error bars)."""
    check_choice("x", x, TRACE_AXES)
    _check_columns(traces, id="id", step="step", x=x, y=y, hue=hue)
    if not traces[y].notna().any():  # e.g. tracking of algorithms without a tracker
        raise FastGTError(f"no trace of these cells has a value of {y!r}")
    fig, ax = _figure()
    keys = traces[hue] if hue else pd.Series(0, index=traces.index)
    # a colour bar for a numeric hue of many values; a legend for text, bools and a few
    # values (batch_size 1, 8: no ticks at 1.5 and 2.5; alpha 0.9, 0.99, 0.999: one colour
    # on a colour bar's scale)
    few = keys.nunique() <= FEW
    numeric = (hue is not None and pd.api.types.is_numeric_dtype(keys) and not few
               and not pd.api.types.is_bool_dtype(keys) and keys.nunique() > 1)
    if numeric:
        from matplotlib import colormaps
        from matplotlib.colors import LogNorm, Normalize

        # a positive parameter spanning 10x or more (split_alpha, stepsize) in log scale
        norm = (LogNorm if _wide_positive(keys) else Normalize)(keys.min(), keys.max())
        cmap = colormaps["viridis"]
    else:
        # in summary's order (sorted values): a hue keeps its colour in both kinds of plot
        values = sorted(keys.dropna().unique(), key=lambda v: (type(v).__name__, v))
        palette = {k: f"C{i % 10}" for i, k in enumerate(values)}
    labelled = set()
    for cell_id, g in traces.groupby("id", sort=True):
        g = g.sort_values("step")
        key = keys.loc[g.index[0]]
        g = g[g[x] > 0] if logx else g  # a log axis has no 0 (a flat start was drawn to it)
        unset = pd.isna(key)  # grey, in the legend (a colour bar has no place for it)
        color = "0.5" if unset else cmap(norm(key)) if numeric else palette[key]
        label = None if hue is None or (numeric and not unset) or _label(key) in labelled \
            else _label(key)
        labelled.add(label)
        ax.plot(g[x], g[y], color=color, lw=1, alpha=0.8, label=label)
    if logx and not any(len(line.get_xdata()) for line in ax.lines):
        raise FastGTError(f"no record of these traces has {x} > 0: a log x axis cannot show "
                          "them (allowed: a linear one)")
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if _log_y(y, logy) else "linear")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    run = describe_run(traces, [k for k in RUN_KEYS if k != hue])
    title = f"{traces['id'].nunique()} cells, one trace each (no error bars)"
    ax.set_title(_title(sweep, run, title), fontsize=9)
    if numeric:
        from matplotlib.cm import ScalarMappable

        fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=hue)
    if hue and (not numeric or "not set" in labelled):  # in the palette's order, as summary's
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        order = [] if numeric else [_label(k) for k in palette]
        names = [n for n in order if n in handles] + [n for n in handles if n not in order]
        ax.legend([handles[n] for n in names], names, title=hue, fontsize=8)
    declutter_ticks(fig)
    return fig
