"""The command line, ``fastgt ...``: one module per command group (main: topo, run, table3,
report, warmup; sweep: grid, status, plot; theory), shared pieces in common."""

from .main import main

__all__ = ["main"]
