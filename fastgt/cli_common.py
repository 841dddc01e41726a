"""Pieces shared by the CLI modules: one-line user errors and topology options."""

from __future__ import annotations

import functools

import click

from .algorithms import ALGORITHMS
from .errors import FastGTError
from .problems import NOISES, PROBLEMS
from .topology.weights import WEIGHT_RULES

ALGORITHM_CHOICE = click.Choice(tuple(ALGORITHMS))
PROBLEM_CHOICE = click.Choice(tuple(PROBLEMS))
NOISE_CHOICE = click.Choice(tuple(NOISES))

TOPO_OPTIONS = [
    ("--n", int, "number of nodes"),
    ("--self-weight", float, "ring self weight w (neighbours get (1-w)/2)"),
    ("--alpha", float, "interp_ring: alpha W_ring + (1-alpha)/n 11^T"),
    ("--rows", int, "torus rows"),
    ("--cols", int, "torus columns"),
    ("--prob", float, "erdos_renyi edge probability"),
    ("--radius", float, "geometric graph radius"),
    ("--graph-seed", int, "seed of random graphs (erdos_renyi, geometric)"),
    ("--weights", click.Choice(WEIGHT_RULES), "weights of general graphs"),
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


def json_line(obj: dict) -> str:
    """Strict JSON: non-finite floats (unstable stepsizes, undefined metrics) become null."""
    import json
    import math

    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in obj.items()}
    return json.dumps(clean, allow_nan=False)


class UserError(click.ClickException):
    """Printed as one line, ``Error: <message>``, with exit code 2 (like click's usage errors)."""

    exit_code = 2


def user_errors(f):
    """Turn FastGTError into a one-line message and exit code 2."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except FastGTError as err:
            raise UserError(str(err)) from None

    return wrapper
