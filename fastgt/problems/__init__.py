"""Problems: ``problem(name, **params)`` -> a spec, built on (n, d) by the runner.

Registry: every module of this package but those serving them (``_SERVING``: base, noise,
the finite-sum family ``samples`` and its solver ``optimum``; and names starting with
``_``)
defines ``PROBLEMS``, name -> builder ``f(n, d, **params) -> Problem``: a new module is
registered by being here (docs/extending.md)."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import pkgutil
from dataclasses import dataclass, field

from ..data import file_stamp
from ..errors import FastGTError, bad, check_choice
from .base import SAMPLED, Problem
from .noise import NOISES, Noise, make_noise, noise_matrix
from .quadratic import DiagonalQuadratic

_SERVING = ("base", "noise", "samples", "optimum")
#: the paper's problems first (quadratic, the default), then the others by name
_ORDER = ("quadratic", "consensus", "hetero_quadratic", "least_squares", "logistic",
          "nonconvex")


def _discover() -> dict:
    found = {}
    for m in pkgutil.iter_modules(__path__):
        if m.name in _SERVING or m.name.startswith("_"):
            continue
        for name, build in importlib.import_module(f"{__name__}.{m.name}").PROBLEMS.items():
            if name in found:
                raise ImportError(f"two problem modules define {name!r}")
            found[name] = build
    rank = {k: i for i, k in enumerate(_ORDER)}
    return {k: found[k] for k in sorted(found, key=lambda k: (rank.get(k, len(rank)), k))}


PROBLEMS = _discover()
#: a problem's parameter name -> its flat name (fastgt.run, grid files, the CLI): the
#: problem's own seed is problem_seed (topology.TOPO_RENAME for the families)
PROBLEM_RENAME = {"seed": "problem_seed"}

__all__ = [
    "NOISES",
    "PROBLEMS",
    "PROBLEM_RENAME",
    "SAMPLED",
    "DiagonalQuadratic",
    "Noise",
    "Problem",
    "ProblemSpec",
    "make_noise",
    "noise_matrix",
    "problem",
    "problem_params",
]


def problem_params(name: str) -> dict:
    """Parameter names of a problem (besides n and d) -> defaults."""
    check_choice("problem", name, tuple(PROBLEMS))
    return dict(_defaults(PROBLEMS[name]))


@functools.cache
def _defaults(build) -> dict:
    """A problem builder's signature defaults (inspect.signature once per builder: sweeps
    ask per cell; keyed by the builder, not its name, which a test or plugin may rebind);
    callers get copies."""
    sig = inspect.signature(build)
    return {k: p.default for k, p in sig.parameters.items() if k not in ("n", "d")}


@dataclass(frozen=True)
class ProblemSpec:
    """A problem family with its parameters; ``build(n, d)`` gives the instance.

    Drawn data (consensus mu, hetero_quadratic a and b) come from the problem's own
    ``seed`` parameter (default 0), not the run seed: seeds of a sweep share one instance.
    """

    name: str
    params: dict = field(default_factory=dict)

    def build(self, n: int, d: int) -> Problem:
        """The instance; the last few built are kept (a problem with data reads, splits
        and solves once per process, however many runs use it)."""
        builder = PROBLEMS[self.name]
        try:  # a parameter naming a file (data=): with its size and time (a file rewritten
            # in place is read again)
            stamps = [file_stamp(v) for v in self.params.values() if isinstance(v, str)]
            key = (builder, json.dumps([self.params, n, d, stamps], sort_keys=True))
        except TypeError:  # array parameters: built each time (cheap: drawn quadratics)
            return builder(n, d, **self.params)
        if key not in _BUILT:
            if len(_BUILT) >= _KEEP:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = builder(n, d, **self.params)
        return _BUILT[key]


#: instances built, by (builder, parameters, n, d, files' stamps), oldest first
_BUILT: dict = {}
_KEEP = 4


def problem(name: str | ProblemSpec = "quadratic", **params) -> ProblemSpec:
    """A problem family with its parameters (docs/definitions.md); ``.build(n, d)`` gives
    the instance. ``quadratic`` (Setup A), ``consensus`` (mu= or zeta=, seed=),
    ``hetero_quadratic`` (a=, b= or L=, mu=, zeta=, seed=), and on node-local data
    ``least_squares``, ``logistic`` and ``nonconvex`` (data= "synthetic" or a LIBSVM, .npz
    or .parquet file's path, samples=, split= "iid", "dirichlet" or "sorted",
    split_alpha=, batch_size=, reg=, label_noise=, seed=). ``seed`` is the problem's own
    (its drawn data, split and shuffle; ``problem_seed`` to fastgt.run, the CLI and
    grids); ``fastgt.problems.problem_params(name)`` lists a family's parameters and
    defaults."""
    if isinstance(name, ProblemSpec):
        return name
    allowed = problem_params(name)
    for k, v in params.items():
        if k in ("n", "d"):
            raise FastGTError(f"{k} is the run's, not a parameter of problem {name!r}: give it "
                              f"to fastgt.run or the grid ({k}={v!r}); allowed here "
                              f"{', '.join(allowed) or 'no parameters'}")
        python = {flat: py for py, flat in PROBLEM_RENAME.items()}.get(k)
        if python in allowed:  # the flat name (problem_seed) where the problem's is asked
            raise FastGTError(f"{k} is fastgt.run's, the grids' and the CLI's name for the "
                              f"problem's {python}: here {python}={v!r}")
        if k not in allowed:
            raise bad(k, v, f"parameters of problem {name!r}: {', '.join(allowed) or 'none'}")
    # a file's path as text (data=Path(...)): checked, stamped and recorded as the CLI's
    return ProblemSpec(name, {k: os.fspath(v) if isinstance(v, os.PathLike) else v
                              for k, v in params.items()})
