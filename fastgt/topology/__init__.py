"""Communication topologies: ``topology(name, **params) -> MixingMatrix`` (static) or
``TimeVarying`` (one_peer_exponential, random_matching, cycle: topology/varying.py)."""

from __future__ import annotations

import functools
import inspect

from ..errors import FastGTError, bad, check_choice, check_family
from .families import STATIC
from .mixing import TOPO_RENAME, MixingMatrix, validate
from .spectrum import Spectrum
from .varying import VARYING, PeriodSpectrum, TimeVarying

__all__ = ["FAMILIES", "TOPO_RENAME", "VARYING", "MixingMatrix", "PeriodSpectrum", "Spectrum",
           "TimeVarying", "family_params", "topology", "validate"]

#: every family by name: the static ones, then the time-varying ones
FAMILIES = {**STATIC, **VARYING}


def family_params(name: str) -> dict:
    """A family's parameters (plus ``lazy``) -> default, ``inspect.Parameter.empty`` if required."""
    check_choice("topology", name, tuple(FAMILIES))
    return {**_defaults(name), "lazy": False}


@functools.cache
def _defaults(name: str) -> dict:
    """A family's signature defaults (inspect.signature once per family: sweeps ask per
    cell); callers get copies."""
    return {k: p.default for k, p in inspect.signature(FAMILIES[name]).parameters.items()}


def topology(name: str, **params) -> MixingMatrix | TimeVarying:
    """Build and validate a mixing matrix, or a time-varying topology.

    Families: ring(n, self_weight=1/3), interp_ring(n, alpha, self_weight=1/3),
    torus(rows, cols | n), complete(n), star(n), hypercube(n), exponential(n),
    erdos_renyi(n, prob, seed=0), geometric(n, radius, seed=0), from_edges(edges, n=None),
    from_matrix(W). General graphs take ``weights="metropolis"|"max_degree"``.
    Time-varying: one_peer_exponential(n), random_matching(n) (drawn every step from the
    run's seed), cycle(matrices) (a list applied in turn: built topologies, arrays, or
    topology tables such as {"topology": "ring", "n": 16}).
    Any family takes ``lazy=True`` for (W + I) / 2.
    """
    if isinstance(name, (MixingMatrix, TimeVarying)):  # already built and validated
        lazy = _lazy(params)
        if params:
            key = min(params)
            raise bad(key, params[key], "no parameters except lazy with a built topology")
        return _checked(name.lazy()) if lazy else name
    return _checked(_built(name, dict(params)))


def _lazy(params: dict) -> bool:
    lazy = params.pop("lazy", False)
    if not isinstance(lazy, bool):
        raise bad("lazy", lazy, "true or false")
    return lazy


def _built(name: str, params: dict) -> MixingMatrix | TimeVarying:
    """Family ``name`` from its parameters (and lazy), not yet validated."""
    lazy = _lazy(params)
    allowed = family_params(name)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise bad(unknown[0], params[unknown[0]],
                  f"parameters of {name!r}: {', '.join(sorted(allowed))}")
    missing = [k for k, d in allowed.items() if d is inspect.Parameter.empty and k not in params]
    if missing:  # W is matrix in grid files and --matrix in the shell (flat names)
        raise FastGTError(f"topology {name!r} needs " + ", ".join(
            f"{k} (flat name {TOPO_RENAME[k]}: --{TOPO_RENAME[k].replace('_', '-')} in the "
            "shell)" if k in TOPO_RENAME else k for k in missing))
    if isinstance(params.get("matrices"), list):  # cycle: topology tables built here
        params["matrices"] = [_table(m) for m in params["matrices"]]
    mm = FAMILIES[name](**params)
    return mm.lazy() if lazy else mm


def _table(m):
    """A cycle step given as a topology table ({"topology": "ring", "n": 16, ...}, under
    this function's parameter names or the flat ones, graph_seed and matrix, as everywhere
    else tables are written) built but not validated alone: a step need not be connected
    nor contract (two alternating matchings), cycle checks each as a step and their
    product; anything else as it is."""
    check_family("matrices", m)
    if isinstance(m, dict):
        python = {flat: k for k, flat in TOPO_RENAME.items()}
        return _built(m["topology"],
                      {python.get(k, k): v for k, v in m.items() if k != "topology"})
    return m


def _checked(W):
    return validate(W) if W.static else W.validated()
