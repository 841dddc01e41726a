"""Pieces shared by the CLI modules: exit codes, one-line errors, output options and the
topology options."""

from __future__ import annotations

import functools

import click

from .algorithms import ALGORITHMS
from .errors import FastGTError, WriteFailed
from .problems import NOISES, PROBLEMS
from .topology import FAMILIES
from .topology.weights import WEIGHT_RULES

#: exit codes of every command (documented in ``fastgt --help``)
EXIT_OK, EXIT_WRITE, EXIT_USAGE, EXIT_RESULT = 0, 1, 2, 3
EXIT_CODES = f"""Exit codes: {EXIT_OK} ok; {EXIT_WRITE} an output could not be written after the
work (a full disk: the message says what was kept); {EXIT_USAGE} bad input (one line naming
the option, before any work); {EXIT_RESULT} the simulation diverged (run), the stepsize is
unstable (theory), or some cells failed or diverged (grid, after finishing the others);
130 / 143 a sweep stopped by Ctrl-C / SIGTERM (finished cells are kept)."""

ALGORITHM_CHOICE = click.Choice(tuple(ALGORITHMS))
PROBLEM_CHOICE = click.Choice(tuple(PROBLEMS))
NOISE_CHOICE = click.Choice(tuple(NOISES))
TOPOLOGY_CHOICE = click.Choice(tuple(FAMILIES))
#: figure formats of ``--out`` (matplotlib's Agg and vector backends)
FIGURE_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")

#: topology options, named like the flat parameters (fastgt.flat): --graph-seed is graph_seed
TOPO_OPTIONS = [
    ("--n", int, "number of nodes"),
    ("--self-weight", float, "ring / interp_ring self weight w (neighbours get (1-w)/2)"),
    ("--alpha", float, "interp_ring: alpha W_ring + (1-alpha)/n 11^T"),
    ("--rows", int, "torus rows"),
    ("--cols", int, "torus columns"),
    ("--prob", float, "erdos_renyi edge probability"),
    ("--radius", float, "geometric graph radius"),
    ("--graph-seed", int, "seed of random graphs (erdos_renyi, geometric)"),
    ("--weights", click.Choice(WEIGHT_RULES), "weights of general graphs"),
    ("--edges", str, "from_edges: edge-list FILE (two integer columns, text or CSV)"),
    ("--matrix", str, "from_matrix: mixing-matrix FILE (.npy, .npz scipy sparse, .mtx)"),
]


def topo_options(f):
    """Topology parameters as options named like the flat ones (unset ones are not passed)."""
    for flag, typ, helptext in reversed(TOPO_OPTIONS):
        f = click.option(flag, type=typ, default=None, help=helptext)(f)
    return click.option("--lazy", is_flag=True, default=False, help="use (W + I) / 2")(f)


def topo_params(kw: dict) -> dict:
    """The flat topology parameters the user set, popped from a command's keyword arguments."""
    params = {}
    for flag, _, _ in TOPO_OPTIONS:
        key = flag[2:].replace("-", "_")
        val = kw.pop(key, None)
        if val is not None:
            params[key] = val
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

    exit_code = EXIT_USAGE


class WriteError(click.ClickException):
    """An output that failed after the work: one line, exit code 1."""

    exit_code = EXIT_WRITE


class ResultError(click.ClickException):
    """A result that is not a success (diverged, unstable, failed cells): one line, exit 3."""

    exit_code = EXIT_RESULT


def user_errors(f):
    """Turn FastGTError into a one-line message and exit code 2, WriteFailed into one line
    and exit code 1."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except FastGTError as err:
            raise UserError(str(err)) from None
        except WriteFailed as err:
            raise WriteError(str(err)) from None

    return wrapper
