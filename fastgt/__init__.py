"""fastgt: fast simulation of Gradient Tracking, D-SGD and relatives over sparse graphs.

``import fastgt`` loads no compiled code: the simulation API (``run``, ``run_batch``,
``problem``, ``algorithm``, ``RunResult``) and ``load`` are imported on first use, so that
``fastgt.load``, ``fastgt.analysis`` and ``fastgt.theory`` work without numba.
"""

from . import theory
from ._version import __version__
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
    "algorithm",
    "analysis",
    "load",
    "problem",
    "run",
    "run_batch",
    "theory",
    "topology",
]

#: attribute -> module that defines it, imported on first access: the simulation API loads
#: the kernels, fastgt.load (sweep.storage.load) pyarrow and pandas
_LAZY = {"RunResult": "runner", "run": "runner", "run_batch": "runner", "problem": "problems",
         "algorithm": "algorithms", "load": "sweep.storage"}


#: subpackages imported on first access (fastgt.analysis.steps_to after a plain
#: ``import fastgt``, as fastgt.theory)
_SUBPACKAGES = ("analysis",)


def __getattr__(name: str):
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)  # binds itself as our attribute
    if name not in _LAZY:
        raise AttributeError(f"module 'fastgt' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
