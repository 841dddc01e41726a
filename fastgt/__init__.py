"""fastgt: fast simulation of Gradient Tracking, D-SGD and relatives over sparse graphs."""

__version__ = "0.1.0"

from . import theory
from .errors import FastGTError, FastGTWarning
from .problems import problem
from .runner import METRICS, RunResult, run, run_batch
from .topology import MixingMatrix, topology

__all__ = [
    "METRICS",
    "FastGTError",
    "FastGTWarning",
    "MixingMatrix",
    "RunResult",
    "__version__",
    "load",
    "problem",
    "run",
    "run_batch",
    "theory",
    "topology",
]


def load(out, traces: bool = True):
    """(cells, traces) DataFrames of a sweep directory or URI (see fastgt.storage.load);
    anything else (a file, a directory of sweeps) is a FastGTError saying what it is.

    Imported lazily so that ``import fastgt`` does not pull in pyarrow."""
    from .storage import load as _load

    return _load(out, traces)
