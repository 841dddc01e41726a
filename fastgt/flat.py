"""The flat parameter form: a run's own parameters side by side with those of its topology
family and problem (``n=``, ``alpha=``, ``graph_seed=``, ``zeta=``, ``problem_seed=``), as
grid files, the CLI and ``fastgt.run(topology="ring", n=30, ...)`` take them.

A family's or problem's own ``seed`` is ``graph_seed`` / ``problem_seed`` in the flat form
(the run has its own ``seed``), and from_matrix's ``W`` is ``matrix``. cycle's ``matrices``
may hold topology tables (``{"topology": "ring", "n": 16}``, or their JSON text: a grid
file's form), which fastgt.topology builds.
"""

from __future__ import annotations

from .errors import FastGTError, bad, check_family, close_names
from .params import PARAMS, table_value
from .problems import PROBLEM_RENAME, PROBLEMS, ProblemSpec, problem, problem_params
from .topology import FAMILIES, TOPO_RENAME, MixingMatrix, TimeVarying, family_params, topology


def topology_params(name: str) -> dict:
    """Flat names of the parameters of topology family ``name`` -> default (``empty`` if
    required)."""
    return {TOPO_RENAME.get(k, k): v for k, v in family_params(name).items()}


def problem_flat_params(name: str) -> dict:
    """Flat names of the scalar parameters of problem ``name`` -> default (arrays excluded)."""
    return {PROBLEM_RENAME.get(k, k): v for k, v in problem_params(name).items()
            if isinstance(v, (int, float, str, bool))}


def any_problem_params() -> set[str]:
    """Flat names that some problem takes."""
    return {k for name in PROBLEMS for k in problem_flat_params(name)}


def not_applicable(key: str, topo_name: str | None, prob_name: str | None) -> FastGTError:
    """The error for a flat parameter that neither the topology nor the problem takes (a
    name that no family, problem nor fastgt.run takes: a typo, with the closest names)."""
    families = {k for f in FAMILIES for k in topology_params(f)}
    hint = ""
    if key not in families | any_problem_params():
        hint = close_names(key, [*PARAMS, *families])
        if topo_name is None:
            return FastGTError(f"{key} is no parameter of fastgt.run, of a topology family or "
                               f"of a problem{hint}: allowed {', '.join(PARAMS)}")
    if key in any_problem_params() and prob_name is not None:
        allowed = ", ".join(problem_flat_params(prob_name)) or "no parameters"
        takers = [p for p in PROBLEMS if key in problem_flat_params(p)]
        return FastGTError(f"{key} does not apply to problem {prob_name!r}: allowed {allowed} "
                           f"({key} is a parameter of problem{'s' * (len(takers) > 1)} "
                           f"{', '.join(takers)})")
    if topo_name is None:
        return FastGTError(f"{key} does not apply to a built topology: pass the family's "
                           f"name and its parameters instead (e.g. topology='ring', n=30)")
    allowed = ", ".join(topology_params(topo_name))
    if prob_name is not None and key not in families:
        taken = ", ".join(problem_flat_params(prob_name)) or "none"
        return FastGTError(f"{key} is no parameter of fastgt.run, of topology {topo_name!r} "
                           f"(allowed {allowed}) nor of problem {prob_name!r} (allowed "
                           f"{taken}){hint}")
    return FastGTError(f"{key} does not apply to topology {topo_name!r}: allowed {allowed}")


def split(topo_name: str | None, prob_name: str | None, params: dict) -> tuple[dict, dict]:
    """(topology kwargs, problem kwargs) under their Python names; topo_name None: the
    topology is built already and takes none; prob_name None: no problem parameters."""
    topo = {} if topo_name is None else topology_params(topo_name)
    prob = {} if prob_name is None else problem_flat_params(prob_name)
    to_topo = {v: k for k, v in TOPO_RENAME.items()}
    to_prob = {v: k for k, v in PROBLEM_RENAME.items()}
    tkw, pkw = {}, {}
    for key, val in params.items():
        if key in PARAMS and isinstance(val, (bool, int, float, str)):
            val = PARAMS[key].validate(key, val)  # under its flat name (problem_seed=-1)
        if key in topo:
            tkw[to_topo.get(key, key)] = val
        elif key in prob:
            pkw[to_prob.get(key, key)] = val
        else:
            raise not_applicable(key, topo_name, prob_name)
    return tkw, pkw


def build(topo, prob, params: dict) -> tuple[MixingMatrix, ProblemSpec]:
    """The mixing matrix and problem spec of flat ``params``.

    topo: a family name or a built MixingMatrix (which takes no parameters); prob: a problem
    name or spec (a spec takes no parameters)."""
    topo_name = topo if isinstance(topo, str) else None
    if topo_name is None and not isinstance(topo, (MixingMatrix, TimeVarying)):
        raise bad("topology", topo, "a family's name (e.g. 'ring') or a built topology, "
                  "e.g. fastgt.topology('ring', n=300)")
    spec = problem(prob) if not isinstance(prob, str) else None  # a spec, or the standard error
    tkw, pkw = split(topo_name, prob if spec is None else spec.name, params)
    if pkw and spec is not None:
        key = next(iter(pkw))
        raise FastGTError(f"{PROBLEM_RENAME.get(key, key)} does not apply to a built problem "
                          "spec: pass the problem's name and its parameters instead")
    W = topo if topo_name is None else topology(topo_name, **_tables(tkw))
    return W, spec if spec is not None else problem(prob, **pkw)


def flat_topology(name: str, params: dict, memo: dict | None = None) -> MixingMatrix:
    """The mixing matrix of family ``name`` from flat parameters (graph_seed=, matrix=).
    memo: matrices built before, by family and parameters (cells of a sweep often share
    one, and with it its spectrum)."""
    tkw = split(name, None, params)[0]
    if memo is None:
        return topology(name, **_tables(tkw))
    key = (name, tuple(sorted(tkw.items())))
    if key not in memo:
        memo[key] = topology(name, **_tables(tkw))
    return memo[key]


def table_topology(table, memo: dict | None = None):
    """A topology from one table ({"topology": "ring", "n": 16, ...} in the flat form, or
    its JSON or TOML text), or a built one as it is (topology_y, cycle's matrices)."""
    if isinstance(table, str):
        PARAMS["topology_y"].validate("topology_y", table)
        table = table_value(table)
    if not isinstance(table, dict):
        return table
    check_family("topology_y", table)
    rest = {k: v for k, v in table.items() if k != "topology"}
    return flat_topology(table["topology"], rest, memo)


def _tables(tkw: dict) -> dict:
    """tkw with cycle's ``matrices`` as topology takes them: the JSON or TOML text of a list
    of topology tables (a grid's form) parsed; topology builds each table (not validated
    alone: a step of a cycle need not contract), built matrices and arrays pass."""
    mats = tkw.get("matrices")
    if not isinstance(mats, str):
        return tkw
    PARAMS["matrices"].validate("matrices", mats)
    return {**tkw, "matrices": table_value(mats)}


def flat_problem(name: str, params: dict) -> ProblemSpec:
    """The problem spec of problem ``name`` from flat parameters (problem_seed=)."""
    return problem(name, **split(None, name, params)[1])


def cell_graph(params: dict) -> tuple[str, dict]:
    """A sweep cell's topology family and its flat parameters, from the cell's canonical
    parameters (those of fastgt.sweep.grid, which hold the run's own too)."""
    name = params["topology"]
    return name, {k: params[k] for k in topology_params(name) if k in params}


def cell_topology(params: dict, memo: dict | None = None) -> MixingMatrix:
    """A sweep cell's mixing matrix; memo as in flat_topology."""
    return flat_topology(*cell_graph(params), memo)


def flat_nodes(params: dict) -> int | None:
    """The nodes n that flat parameters give (n, or rows x cols), None if they do not (a
    graph from a file)."""
    n = params.get("n") or params.get("rows", 0) * params.get("cols", 0)
    return n if isinstance(n, int) and n > 0 else None


def cell_problem(params: dict) -> ProblemSpec:
    """A sweep cell's problem spec, from its canonical parameters."""
    name = params["problem"]
    return flat_problem(name, {k: params[k] for k in problem_flat_params(name) if k in params})
