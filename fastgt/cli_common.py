"""Pieces shared by the CLI modules: one-line user errors and topology options."""

from __future__ import annotations

import functools

import click

from .errors import FastGTError

TOPO_OPTIONS = [
    ("--n", int, "number of nodes"),
    ("--self-weight", float, "ring self weight w (neighbours get (1-w)/2)"),
    ("--alpha", float, "interp_ring: alpha W_ring + (1-alpha)/n 11^T"),
    ("--rows", int, "torus rows"),
    ("--cols", int, "torus columns"),
    ("--prob", float, "erdos_renyi edge probability"),
    ("--radius", float, "geometric graph radius"),
    ("--graph-seed", int, "seed of random graphs (erdos_renyi, geometric)"),
    ("--weights", click.Choice(["metropolis", "max_degree"]), "weights of general graphs"),
]


def topo_options(f):
    """Topology parameters as options named like the Python ones (unset ones are not passed)."""
    for flag, typ, helptext in reversed(TOPO_OPTIONS):
        f = click.option(flag, type=typ, default=None, help=helptext)(f)
    return click.option("--lazy", is_flag=True, default=False, help="use (W + I) / 2")(f)


def topo_params(kw: dict) -> dict:
    params = {}
    for flag, _, _ in TOPO_OPTIONS:
        key = flag[2:].replace("-", "_")
        val = kw.pop(key, None)
        if val is not None:
            params["seed" if key == "graph_seed" else key] = val
    if kw.pop("lazy", False):
        params["lazy"] = True
    return params


def user_errors(f):
    """Turn FastGTError into a one-line message and exit code 2."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except FastGTError as err:
            raise click.UsageError(str(err)) from None

    return wrapper
