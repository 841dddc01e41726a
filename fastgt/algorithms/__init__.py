"""Algorithm registry: name -> spec. Every module of this package but ``base`` (and names
starting with ``_``) is one algorithm and defines ``ALGORITHM`` (its update equation in
the module's docstring): a new module is registered by being here (docs/extending.md)."""

import importlib
import pkgutil

from ..errors import check_choice
from .base import Algorithm, Batch, Cell

#: GT first (the default), then the others by name
_ORDER = ("gt",)



def _discover() -> dict:
    found = {}
    for m in pkgutil.iter_modules(__path__):
        if m.name == "base" or m.name.startswith("_"):
            continue
        spec = importlib.import_module(f"{__name__}.{m.name}").ALGORITHM
        if spec.name in found:
            raise ImportError(f"two algorithm modules are named {spec.name!r}")
        found[spec.name] = spec
    return {k: found[k] for k in sorted(found, key=lambda k: (k not in _ORDER, k))}


ALGORITHMS = _discover()

__all__ = ["ALGORITHMS", "Algorithm", "Batch", "Cell", "algorithm"]


def algorithm(name: str) -> Algorithm:
    check_choice("algorithm", name, tuple(ALGORITHMS))
    return ALGORITHMS[name]
