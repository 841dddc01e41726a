"""Analysis of sweep results with pandas: seed aggregation, plateaus, log-log slopes.

Typical use::

    cells, traces = fastgt.load("results/demo")
    agg = aggregate(cells, values=["loss_nodes"])           # mean and 95% t-interval over seeds
    fit = loglog_slope(cells.assign(inv_p=1 / cells.p), "inv_p", "loss_nodes", by="algorithm")
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .grid import PARAMS


def parameter_columns(df: pd.DataFrame) -> list[str]:
    """The grid parameters among the columns of ``df`` (in declared order), set in some row."""
    return [c for c in PARAMS if c in df.columns and df[c].notna().any()]


def aggregate(cells: pd.DataFrame, values=("loss_nodes",), over: str = "seed", by=None,
              level: float = 0.95, status=("ok",)) -> pd.DataFrame:
    """Mean over ``over`` (the seeds) of each column in ``values``, with a t-based interval.

    by: grouping columns (default: every parameter except ``over``); status: keep only rows
    with these statuses (None: all). For each value v the result has ``v_mean``, ``v_std``,
    ``v_count`` (non-NaN rows), ``v_ci_low``, ``v_ci_high``: mean -/+ t_{(1+level)/2, count-1}
    std / sqrt(count) (NaN when count < 2).
    """
    from scipy.stats import t as student_t

    values = [values] if isinstance(values, str) else list(values)
    df = cells if status is None else cells[cells["status"].isin(status)]
    by = [c for c in parameter_columns(df) if c != over] if by is None else (
        [by] if isinstance(by, str) else list(by))
    grouped = df.groupby(by, dropna=False, sort=True)
    out = grouped.size().rename("cells").to_frame()
    for v in values:
        stats = grouped[v].agg(["mean", "std", "count"])
        half = student_t.ppf(0.5 + level / 2, stats["count"] - 1) * stats["std"] / np.sqrt(
            stats["count"])
        half = half.where(stats["count"] >= 2)
        out[f"{v}_mean"] = stats["mean"]
        out[f"{v}_std"] = stats["std"]
        out[f"{v}_count"] = stats["count"]
        out[f"{v}_ci_low"] = stats["mean"] - half
        out[f"{v}_ci_high"] = stats["mean"] + half
    return out.reset_index()


def plateau(trace: pd.DataFrame, metric: str = "loss_nodes", tail: float = 0.5):
    """Plateau of ``metric``: its mean over the records in the last ``tail`` fraction of the
    steps (step >= (1 - tail) * last step). A frame with an ``id`` column (several cells, as
    from :func:`fastgt.load`) gives a Series indexed by id."""
    from .errors import check_float

    tail = check_float("tail", tail, 0.0, 1.0, lo_open=True)
    if "id" in trace.columns:
        return trace.groupby("id", sort=True).apply(
            lambda g: plateau(g, metric, tail), include_groups=False
        ).rename(metric)
    last = trace["step"].max()
    return float(trace.loc[trace["step"] >= (1 - tail) * last, metric].mean())


def loglog_slope(df: pd.DataFrame, x: str, y: str, by=None):
    """Least-squares fit log y = intercept + slope log x over the rows with x, y > 0.

    Returns a Series (slope, intercept, r2, points); with ``by``, a DataFrame, one row per group.
    """
    if by is not None:
        return df.groupby(by, sort=True).apply(lambda g: loglog_slope(g, x, y),
                                               include_groups=False)
    xs, ys = df[x].to_numpy(float), df[y].to_numpy(float)
    keep = (xs > 0) & (ys > 0) & np.isfinite(xs) & np.isfinite(ys)
    lx, ly = np.log(xs[keep]), np.log(ys[keep])
    n = len(lx)
    if n < 2 or np.ptp(lx) == 0:
        return pd.Series({"slope": math.nan, "intercept": math.nan, "r2": math.nan, "points": n})
    dx, dy = lx - lx.mean(), ly - ly.mean()
    slope = float(dx @ dy / (dx @ dx))
    intercept = float(ly.mean() - slope * lx.mean())
    resid = ly - intercept - slope * lx
    r2 = 1.0 - float(resid @ resid) / float(dy @ dy) if dy @ dy > 0 else 1.0
    return pd.Series({"slope": slope, "intercept": intercept, "r2": r2, "points": n})
