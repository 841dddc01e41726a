"""Text that says what a figure or table shows: what was run, what the error bars are; and
tick labels that do not overlap."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import Formatter

from ..params import CONDITIONAL

#: the run parameters every report and summary figure names (problem and data where they
#: are not the defaults, QUIET)
RUN_KEYS = ("n", "d", "steps", "stepsize", "sigma2", "problem", "data")

#: text parameters left unsaid at these values, their defaults (fastgt.problems has data's,
#: and imports numba: a test keeps the two the same)
QUIET = {"problem": "quadratic", "data": "synthetic"}


def describe_run(cells: pd.DataFrame, keys=RUN_KEYS) -> str:
    """"n = 60, d = 20, steps = 8000, stepsize = 0.001, sigma2 = 1" for the ``keys`` the cells
    have (several values: "stepsize = 0.01 or 0.02"), each from the cells it applies to
    (params.CONDITIONAL: sigma2 only where a cell's noise adds it); a text parameter only
    where it is not its default ("problem = logistic, data = a.svm")."""
    parts = []
    for k in keys:
        if k not in cells.columns:
            continue
        col = cells[k]
        if k in CONDITIONAL and CONDITIONAL[k][0] in cells.columns:
            col = col.where(cells[CONDITIONAL[k][0]].isin(CONDITIONAL[k][1]))
        vals = sorted(col.dropna().unique(), key=str)
        if vals and isinstance(vals[0], str):
            if vals != [QUIET.get(k)]:
                parts.append(f"{k} = " + " or ".join(vals))
        elif vals:
            parts.append(f"{k} = " + " or ".join(f"{v:g}" for v in sorted(vals)))
    return ", ".join(parts)


def error_bars(counts, level: float = 0.95, unit: str = "seed") -> str:
    """What the error bars of the means are, given the number of ``unit``s (seeds, or cells
    when more than the seed varies) behind each point."""
    counts = [int(c) for c in counts]
    if not counts or max(counts) < 2:
        return f"one {unit} per point: no error bars"
    lo, hi = min(counts), max(counts)
    many = f"{hi}" if lo == hi else f"{max(lo, 2)}-{hi}"
    text = f"error bars: {level:.0%} CI over {many} {unit}s (Student t)"
    return text + (f"; points of one {unit} have none" if lo < 2 else "")


class _Only(Formatter):
    """Another formatter's tick labels, blank except at the kept tick values."""

    def __init__(self, inner: Formatter, kept):
        self.inner, self.kept = inner, np.asarray(kept, dtype=float)

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def set_locs(self, locs):
        self.inner.set_locs(locs)

    def __call__(self, x, pos=None):
        keep = np.isclose(self.kept, x, rtol=1e-9, atol=0.0).any()
        return self.inner(x, pos) if keep else ""

    def get_offset(self):
        return self.inner.get_offset()

    def format_data_short(self, value):
        return self.inner.format_data_short(value)


def declutter_ticks(fig, pad: float = 2.0) -> None:
    """Blank the tick labels that would overlap others (or come within ``pad`` pixels).

    Lays the figure out (``draw_without_rendering``), then on each axis keeps labels in
    order of priority, major ticks before minor ones, each only if it clears every label
    kept so far; the others are blanked by formatters, so later draws (savefig at any dpi)
    show the same labels. Log axes spanning few decades label their minor ticks (2, 3, 4,
    6 x 10^k), which on narrow panels run into each other.
    """
    fig.draw_without_rendering()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            kept_boxes, kept, dropped = [], {False: [], True: []}, False
            for minor in (False, True):
                for loc, box in _labels(axis, minor):
                    box = box.padded(pad)
                    if any(box.overlaps(k) for k in kept_boxes):
                        dropped = True
                        continue
                    kept_boxes.append(box)
                    kept[minor].append(loc)
            if dropped:
                axis.set_major_formatter(_Only(axis.get_major_formatter(), kept[False]))
                axis.set_minor_formatter(_Only(axis.get_minor_formatter(), kept[True]))


def _labels(axis, minor: bool):
    """(tick value, label extent) of the non-empty labels drawn inside the view."""
    locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
    ticks = axis.get_minor_ticks(len(locs)) if minor else axis.get_major_ticks(len(locs))
    lo, hi = sorted(axis.get_view_interval())
    span = 1e-9 * (hi - lo)
    for loc, tick in zip(locs, ticks):
        label = tick.label1
        if lo - span <= loc <= hi + span and label.get_visible() and label.get_text():
            yield loc, label.get_window_extent()
