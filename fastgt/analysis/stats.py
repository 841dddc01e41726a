"""Analysis of sweep results with pandas: seed aggregation, plateaus and whether they were
measured at stationarity, log-log slopes.

Typical use::

    cells, traces = fastgt.load("results/demo")
    agg = aggregate(cells, values=["loss_nodes"])           # mean and 95% t-interval over seeds
    fit = loglog_slope(cells.assign(inv_p=1 / cells.p), "inv_p", "loss_nodes", by="algorithm")
    checks = plateau_checks(cells, traces, "consensus")     # transient cells and why
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..params import PARAMS


def parameter_columns(df: pd.DataFrame) -> list[str]:
    """The grid parameters among the columns of ``df`` (in declared order), set in some row."""
    return [c for c in PARAMS if c in df.columns and df[c].notna().any()]


def aggregate(cells: pd.DataFrame, values=("loss_nodes",), over: str = "seed", by=None,
              level: float = 0.95, status=("ok",)) -> pd.DataFrame:
    """Mean over ``over`` (the seeds) of each column in ``values``, with a t-based interval.

    by: grouping columns (default: every parameter except ``over``); status: keep only rows
    with these statuses (None: all). The result has a row per group: its ``by`` columns,
    ``cells`` (the group's rows), and for each value v ``v_mean``, ``v_std``, ``v_count``
    (non-NaN rows), ``v_ci_low``, ``v_ci_high``: mean -/+ t_{(1+level)/2, count-1} std /
    sqrt(count) (NaN when count < 2).
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
    from ..errors import check_float

    tail = check_float("tail", tail, 0.0, 1.0, lo_open=True)
    if "id" in trace.columns:
        return trace.groupby("id", sort=True).apply(
            lambda g: plateau(g, metric, tail), include_groups=False
        ).rename(metric)
    last = trace["step"].max()
    return float(trace.loc[trace["step"] >= (1 - tail) * last, metric].mean())


#: a plateau window must start at least this many time constants 1/(1 - theory_rate) after
#: the start of the run (derivation: docs/paper.md, "Stationary plateaus")
MIN_TIME_CONSTANTS = 5.0
#: two-sided level of the test that the two halves of a plateau window agree
HALVES_LEVEL = 1e-3


def plateau_checks(cells: pd.DataFrame, traces: pd.DataFrame, metric: str = "loss_nodes"
                   ) -> pd.DataFrame:
    """Whether each cell's plateau of ``metric`` was measured at stationarity.

    cells: rows with ``id``, ``steps``, ``theory_rate`` (and ``local_steps``,
    ``record_every``); traces: ``id``, ``step``, ``metric``. A plateau is the mean of the
    last half of a cell's records (fastgt.run; with local steps, of those every
    record_every steps), the window starting at step t0. Two checks (derivation: docs/paper.md, "Stationary plateaus"):

    - time constants: the noiseless error decays like r^t, r = theory_rate, its second
      moment like r^(2t) <= exp(-2 t (1 - r)); elapsed = t0 (1 - r) must reach
      ``MIN_TIME_CONSTANTS`` (skipped where r is NaN).
    - halves: the means of the window's first and second half must agree within a
      t-test at level ``HALVES_LEVEL``, with each half's records counted as
      N (1 - q) / (1 + q) effective samples (at least 1), q = the larger of r^(2 spacing)
      and the records' lag-1 autocorrelation: the longer correlation time of the two.

    Returns a DataFrame indexed by id: ``time_constant`` (1/(1 - r) steps),
    ``window_start``, ``elapsed``, ``half1``, ``half2``, ``halves_t``, ``halves_limit``,
    ``transient`` (bool) and ``reason`` ("" for stationary cells; "it diverged: no
    plateau" for a cell whose ``status``, if given, is not ok).
    """
    by_id = {k: g.sort_values("step") for k, g in traces.groupby("id", sort=False)}
    cols = ["id", "steps", "theory_rate"] + [k for k in ("local_steps", "record_every",
                                                         "status") if k in cells.columns]
    rows = [{"id": c["id"], **(_stationarity(int(c["steps"]), float(c["theory_rate"]),
                                             _plateau_records(by_id.get(c["id"]), c), metric)
                               if c.get("status", "ok") == "ok" else _no_plateau(c["status"]))}
            for c in cells[cols].to_dict("records")]
    return pd.DataFrame(rows, columns=["id", "time_constant", "window_start", "elapsed",
                                       "half1", "half2", "halves_t", "halves_limit",
                                       "transient", "reason"]).set_index("id")


def _no_plateau(status: str) -> dict:
    """A cell that diverged or failed: no plateau to check (its time constants and halves
    would describe a run cut short)."""
    nan = math.nan
    return {"time_constant": nan, "window_start": nan, "elapsed": nan, "half1": nan,
            "half2": nan, "halves_t": nan, "halves_limit": nan, "transient": True,
            "reason": f"it {status}: no plateau"}


def _plateau_records(trace, cell: dict):
    """The records a plateau averages (engine._summarize): with local steps, those every
    record_every steps, if two or more."""
    k, every = cell.get("local_steps"), cell.get("record_every")
    if trace is None or pd.isna(k) or k <= 1 or pd.isna(every):
        return trace
    on = trace[trace["step"] % every == 0]
    return on if len(on) >= 2 else trace


def _stationarity(steps: int, rate: float, trace, metric: str) -> dict:
    tau = 1.0 / (1.0 - rate) if 0.0 <= rate < 1.0 else (math.inf if rate >= 1.0 else math.nan)
    if trace is None or len(trace) < 2:
        t0, halves = steps / 2, (math.nan,) * 4
    else:
        step = trace["step"].to_numpy()
        t0 = int(step[len(step) // 2])
        window = slice(len(step) // 2, None)
        halves = _halves(step[window], trace[metric].to_numpy(float)[window], rate)
    elapsed = t0 / tau
    reasons = []
    if elapsed < MIN_TIME_CONSTANTS:
        reasons.append(f"ran {steps} steps = {steps / tau:.2g} time constants (1/(1 - r) = "
                       f"{tau:.0f} steps, r = {rate:.6g}): its plateau window started after "
                       f"{elapsed:.2g} of them, fewer than {MIN_TIME_CONSTANTS:g}")
    h1, h2, t, limit = halves
    if t > limit:
        reasons.append(f"the two halves of its plateau window disagree: {h1:.3g} then "
                       f"{h2:.3g}, {t:.1f} standard errors apart (limit {limit:.1f})")
    return {"time_constant": tau, "window_start": t0, "elapsed": elapsed, "half1": h1,
            "half2": h2, "halves_t": t, "halves_limit": limit, "transient": bool(reasons),
            "reason": "; ".join(reasons)}


def _halves(step: np.ndarray, values: np.ndarray, rate: float) -> tuple:
    """(mean of the first half, of the second, |difference| / standard error, t limit)."""
    from scipy.stats import t as student_t

    n = len(values)
    if n < 4 or not np.isfinite(values).all():
        return (math.nan,) * 4
    a, b = values[: n // 2], values[n // 2:]
    resid = np.concatenate([a - a.mean(), b - b.mean()])
    ss = float(resid @ resid)
    q = float(resid[:-1] @ resid[1:]) / ss if ss > 0 else 0.0
    if math.isfinite(rate):
        q = max(q, min(rate, 1.0) ** (2 * float(np.median(np.diff(step)))))
    q = min(max(q, 0.0), 1.0)
    neff = [max(1.0, len(h) * (1 - q) / (1 + q)) for h in (a, b)]
    se = math.sqrt(a.var(ddof=1) / neff[0] + b.var(ddof=1) / neff[1])
    diff = abs(a.mean() - b.mean())
    t = diff / se if se > 0 else (0.0 if diff == 0 else math.inf)
    limit = float(student_t.ppf(1 - HALVES_LEVEL / 2, max(1.0, neff[0] + neff[1] - 2)))
    return float(a.mean()), float(b.mean()), t, limit


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
