"""Problems: ``problem(name, **params)`` -> a spec, built on (n, d) by the runner."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from ..errors import bad, check_choice
from .consensus import consensus
from .noise import NOISES, Noise, make_noise, noise_matrix
from .quadratic import DiagonalQuadratic, hetero_quadratic, quadratic

PROBLEMS = {"quadratic": quadratic, "consensus": consensus, "hetero_quadratic": hetero_quadratic}

__all__ = [
    "NOISES",
    "PROBLEMS",
    "DiagonalQuadratic",
    "Noise",
    "ProblemSpec",
    "make_noise",
    "noise_matrix",
    "problem",
    "problem_params",
]


def problem_params(name: str) -> dict:
    """Parameter names of a problem (besides n and d) -> defaults."""
    check_choice("problem", name, tuple(PROBLEMS))
    sig = inspect.signature(PROBLEMS[name])
    return {k: p.default for k, p in sig.parameters.items() if k not in ("n", "d")}


@dataclass(frozen=True)
class ProblemSpec:
    """A problem family with its parameters; ``build(n, d)`` gives the instance.

    Drawn data (consensus mu, hetero_quadratic a and b) come from the problem's own
    ``seed`` parameter (default 0), not the run seed: seeds of a sweep share one instance.
    """

    name: str
    params: dict = field(default_factory=dict)

    def build(self, n: int, d: int) -> DiagonalQuadratic:
        return PROBLEMS[self.name](n, d, **self.params)


def problem(name: str | ProblemSpec = "quadratic", **params) -> ProblemSpec:
    """``quadratic`` (Setup A), ``consensus`` (mu= or zeta=, seed=),
    ``hetero_quadratic`` (a=, b= or L=, mu=, zeta=, seed=)."""
    if isinstance(name, ProblemSpec):
        return name
    allowed = problem_params(name)
    for k, v in params.items():
        if k not in allowed:
            raise bad(k, v, f"parameters of problem {name!r}: {', '.join(allowed) or 'none'}")
    return ProblemSpec(name, dict(params))
