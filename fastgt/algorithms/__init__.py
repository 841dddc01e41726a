"""Algorithm registry: name -> spec. Every module of this package but ``base`` is one
algorithm and defines ``ALGORITHM`` (its update equation in the module's docstring): a new
module is registered by being here (docs/extending.md)."""

import importlib
import pkgutil

from ..errors import check_choice
from .base import Algorithm, Batch, Cell

#: GT first (the default), then the others by name
_ORDER = ("gt",)

ALGORITHMS = {a.name: a for a in sorted(
    (importlib.import_module(f"{__name__}.{m.name}").ALGORITHM
     for m in pkgutil.iter_modules(__path__) if m.name != "base"),
    key=lambda a: (a.name not in _ORDER, a.name))}

__all__ = ["ALGORITHMS", "Algorithm", "Batch", "Cell", "algorithm"]


def algorithm(name: str) -> Algorithm:
    check_choice("algorithm", name, tuple(ALGORITHMS))
    return ALGORITHMS[name]
