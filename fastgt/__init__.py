"""fastgt: fast simulation of Gradient Tracking, D-SGD and relatives over sparse graphs."""

__version__ = "0.1.0"

from . import theory  # noqa: E402
from .errors import FastGTError  # noqa: E402
from .problems import problem  # noqa: E402
from .runner import METRICS, RunResult, run, run_batch  # noqa: E402
from .topology import MixingMatrix, topology  # noqa: E402

__all__ = ["__version__", "FastGTError", "METRICS", "MixingMatrix", "RunResult", "problem",
           "run", "run_batch", "theory", "topology"]
