"""Pieces shared by the CLI modules: exit codes, one-line errors, output options and the
topology options."""

from __future__ import annotations

import functools

import click

from ..errors import FastGTError, WriteFailed
from ..params import PARAMS, REQUIRED, scoped
from ..topology import FAMILIES

#: exit codes of every command (documented in ``fastgt --help``)
EXIT_OK, EXIT_WRITE, EXIT_USAGE, EXIT_RESULT = 0, 1, 2, 3
EXIT_CODES = f"""Exit codes: {EXIT_OK} ok; {EXIT_WRITE} an output could not be written after the
work (a full disk: the message says what was kept); {EXIT_USAGE} bad input (one line naming
the option, before any work); {EXIT_RESULT} the simulation diverged (run), the stepsize is
unstable (theory), or some cells failed or diverged (grid, after finishing the others);
130 / 143 a sweep stopped by Ctrl-C / SIGTERM (finished cells are kept)."""

TOPOLOGY_CHOICE = click.Choice(tuple(FAMILIES))
#: figure formats of ``--out`` (matplotlib's Agg and vector backends)
FIGURE_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def param_option(name: str, **overrides):
    """The click option of a declared parameter (fastgt.params): its flag (--self-weight),
    type, closed choices, help text and default; ``overrides`` replace any of them. A
    parameter without a default (a topology's or problem's) is None when not given."""
    p = PARAMS[name]
    if p.kind is bool:
        kw = {"is_flag": True, "default": False}
    else:
        typ = click.Choice(p.allowed()) if p.choices is not None else p.kind
        kw = {"type": typ, "default": None if p.default is REQUIRED else p.default}
    return click.option(p.flag, name, **{**kw, "help": p.help, **overrides})


def scope_options(scope: str, skip=()):
    """Options for every declared parameter of ``scope`` (but ``skip``), in declared order."""
    names = [k for k in scoped(scope) if k not in skip]

    def decorate(f):
        for name in reversed(names):
            f = param_option(name)(f)
        return f

    return decorate


def topo_options(f):
    """The topology parameters, as options named like the flat ones (--graph-seed)."""
    return scope_options("topology")(f)


def flat_params(kw: dict, scope: str) -> dict:
    """The parameters of ``scope`` the user set (an option left at None, a flag left off),
    popped from a command's keyword arguments."""
    out = {}
    for key in scoped(scope):
        val = kw.pop(key, None)
        if val is not None and val is not False:
            out[key] = val
    return out


def topo_params(kw: dict) -> dict:
    """The flat topology parameters the user set, popped from a command's keyword arguments."""
    return flat_params(kw, "topology")


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
