"""Pieces shared by the CLI modules that run things: options derived from the declared
parameters (fastgt.params), the topology options. (Exit codes and one-line errors, which
every command needs, are in exits.py: light to import.)"""

from __future__ import annotations

import click

from ..params import PARAMS, REQUIRED, scoped
from ..topology import FAMILIES

TOPOLOGY_CHOICE = click.Choice(tuple(FAMILIES))
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
