"""Analysis of sweep results (pandas; no numba): seed aggregation, plateaus and their
stationarity, log-log slopes (stats), the time to a target and the best parameter by it
(speed), figures (plots) and the text that says what a figure shows (figtext).
``fastgt.load`` reads the results."""

from .speed import best_over, steps_to
from .stats import (
    HALVES_LEVEL,
    MIN_TIME_CONSTANTS,
    aggregate,
    loglog_slope,
    parameter_columns,
    plateau,
    plateau_checks,
)

__all__ = ["HALVES_LEVEL", "MIN_TIME_CONSTANTS", "aggregate", "best_over", "loglog_slope",
           "parameter_columns", "plateau", "plateau_checks", "steps_to"]
