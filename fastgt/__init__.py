"""fastgt: fast simulation of Gradient Tracking, D-SGD and relatives over sparse graphs.

``import fastgt`` loads no compiled code: the simulation API (``run``, ``run_batch``,
``problem``, ``RunResult``) is imported on first use, so that ``fastgt.load``,
``fastgt.analysis`` and ``fastgt.theory`` work without numba.
"""

__version__ = "0.1.0"

from . import theory
from .errors import FastGTError, FastGTWarning
from .metrics import METRICS
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

#: attribute -> module that defines it, imported on first access (they load the kernels)
_LAZY = {"RunResult": "runner", "run": "runner", "run_batch": "runner", "problem": "problems"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fastgt' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def load(out, traces: bool = True):
    """(cells, traces) DataFrames of a sweep directory or URI (see fastgt.storage.load);
    anything else (a file, a directory of sweeps) is a FastGTError saying what it is.

    Imported lazily so that ``import fastgt`` does not pull in pyarrow."""
    from .storage import load as _load

    return _load(out, traces)
