"""The command line, ``fastgt ...``: the group (group.py) imports a command's module when
the command runs; core: topo, run, table3, report, warmup; sweep: grid, plot; results:
status, compact; theory. Shared pieces: exits (codes, one-line errors), common (options
from the declared parameters)."""

from .group import main

__all__ = ["main"]
