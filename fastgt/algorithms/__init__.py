"""Algorithm registry: name -> spec (update equation in each module's docstring)."""

from ..errors import check_choice
from .base import Algorithm, Batch, Cell
from .dsgd import DSGD
from .gt import GT

ALGORITHMS = {a.name: a for a in (GT, DSGD)}

__all__ = ["ALGORITHMS", "Algorithm", "Batch", "Cell", "algorithm"]


def algorithm(name: str) -> Algorithm:
    check_choice("algorithm", name, tuple(ALGORITHMS))
    return ALGORITHMS[name]
