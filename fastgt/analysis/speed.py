"""How fast runs reach a target, and the best value of a parameter by that measure: how
papers compare algorithms, each at its own best stepsize.

    cells, traces = fastgt.load("results/zeta")
    cells = cells.merge(steps_to(traces, 1e-6, metric="loss_avg"), on="id")
    best = best_over(cells, "stepsize", value="steps_to")   # per algorithm, zeta, ...
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import FastGTError, check_float, check_int
from .stats import parameter_columns

#: the costs a trace counts (fastgt.plots.TRACE_AXES): steps_to gives each at the target
COSTS = ("step", "comm_rounds", "grad_evals")


def steps_to(traces: pd.DataFrame, eps: float, metric: str = "loss_nodes",
             hold: int = 1) -> pd.DataFrame:
    """Per cell (``id``), the first record from which ``metric`` stays below ``eps`` to the
    end of the trace: ``steps_to``, and ``comm_rounds_to`` and ``grad_evals_to`` where the
    trace counts them. NaN when fewer than ``hold`` records at the end are below eps (a
    NaN metric, a diverged run, counts as not below): with noise, a plateau just above eps
    has last records that dip below it by chance, and hold = 5 asks for five in a row.
    Resolution: the records (record_every). A trace without ``id`` (one run's,
    ``fastgt.run(...).trace``) is one cell, of id "run"."""
    eps = check_float("eps", eps, 0.0, lo_open=True)
    hold = check_int("hold", hold, 1)
    if "id" not in traces.columns and "step" in traces.columns:
        traces = traces.assign(id="run")
    for col in ("id", "step", metric):
        if col not in traces.columns:
            raise FastGTError(f"column {col!r} is not in the traces: allowed "
                              f"{', '.join(traces.columns)}")
    costs = [c for c in COSTS if c in traces.columns]
    df = traces.sort_values(["id", "step"], kind="stable").reset_index(drop=True)
    pos = pd.Series(np.arange(len(df)), index=df.index)
    begin = pos.groupby(df["id"], sort=True).min()
    end = pos.groupby(df["id"], sort=True).max()
    above = ~(df[metric] < eps)  # NaN is not below
    last_above = pos[above].groupby(df["id"][above]).max().reindex(begin.index)
    at = (last_above + 1).fillna(begin).astype(np.int64)  # first record of the final run below
    reached = (end - at + 1 >= hold).to_numpy()
    rows = np.minimum(at.to_numpy(), len(df) - 1)
    out = pd.DataFrame({"id": begin.index})
    for c in costs:
        out["steps_to" if c == "step" else f"{c}_to"] = np.where(
            reached, df[c].to_numpy()[rows].astype(float), np.nan)
    return out


def best_over(cells: pd.DataFrame, param: str = "stepsize", value: str = "steps_to",
              by=None, over: str = "seed") -> pd.DataFrame:
    """Per configuration (``by``: every parameter but ``param`` and ``over``), the value of
    ``param`` with the smallest mean of ``value`` over ``over`` (the seeds), among those
    whose every cell has a value (reached the target); one row per configuration with
    ``param``, ``value``_mean and the number of cells averaged. Configurations where no
    value of ``param`` reached it are kept, with NaN."""
    for col in (param, value):
        if col not in cells.columns:
            raise FastGTError(f"column {col!r} is not in the cells: allowed "
                              f"{', '.join(cells.columns)}")
    by = [c for c in parameter_columns(cells) if c not in (param, over)] if by is None else (
        [by] if isinstance(by, str) else list(by))
    g = cells.groupby([*by, param], dropna=False, sort=True)[value]
    per = pd.DataFrame({f"{value}_mean": g.mean(), "cells": g.size(),
                        "complete": g.count() == g.size()}).reset_index()
    ok = per[per["complete"]].sort_values(f"{value}_mean", kind="stable")
    best = ok.groupby(by, dropna=False, sort=True).head(1) if by else ok.head(1)
    every = per[by].drop_duplicates() if by else pd.DataFrame(index=[0])
    out = every.merge(best.drop(columns="complete"), on=by, how="left") if by else best
    out["cells"] = out["cells"].astype("Int64")  # a count, <NA> where nothing reached it
    return out.reset_index(drop=True)
