"""Every user-facing parameter, declared once: its type, allowed values, scope, default, help
text and command-line flag. Grid-spec validation (fastgt.sweep.grid), the result columns
(fastgt.sweep.storage), the CLI's options (fastgt.cli.common) and the keys a sweep batches over
(fastgt.sweep.cellrun) derive from :data:`PARAMS`; fastgt.run's own checks use the same check
functions, so every error reads the same wherever the value came from.

Scopes: ``run`` (fastgt.run's own: one per cell of a sweep), ``topology`` (a topology
family's, under its flat name: ``graph_seed``, ``matrix``) and ``problem`` (a problem's:
``problem_seed``). A ``per_cell`` parameter may differ between the cells that one compiled
loop advances together (fastgt.run_batch). Light to import: the algorithm, problem, noise
and family names are looked up when a value is checked.
"""

from __future__ import annotations

import inspect
import json
import os
import tomllib
from dataclasses import dataclass
from functools import partial

from .errors import FastGTError, bad, check_choice, check_family, check_float, check_int

REQUIRED = inspect.Parameter.empty
_KINDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Param:
    """One parameter. ``check(name, value)`` raises FastGTError naming what is allowed;
    ``choices`` (a function: the names are looked up lazily) lists a closed set; ``default``
    is REQUIRED, None (not set: the topology or problem decides) or a value."""

    name: str
    kind: type
    scope: str
    help: str
    check: object = None
    choices: object = None
    default: object = None
    per_cell: bool = False
    #: "table" or "list" (of tables): such a value, kept as canonical JSON text
    tables: str | None = None
    #: (other parameter, its values under which this one applies): elsewhere the cell
    #: ignores it (a default, since other values are refused) and its column is null
    applies: tuple | None = None

    def is_value(self, value) -> bool:
        """Whether a table (a list of tables) is one value of this parameter (not a grid
        axis)."""
        if self.tables == "table":
            return isinstance(value, dict)
        return self.tables == "list" and isinstance(value, list) and all(
            isinstance(v, dict) for v in value)

    @property
    def flag(self) -> str:
        """The command-line option: --self-weight for self_weight."""
        return "--" + self.name.replace("_", "-")

    def allowed(self) -> tuple | None:
        return None if self.choices is None else tuple(self.choices())

    def validate(self, name: str, value):
        """The canonical value (floats as float, a list of tables as sorted JSON text), or
        FastGTError naming what is allowed (a table's entries: check_tables)."""
        if self.tables and isinstance(value, str) and self.is_value(table_value(value)):
            check_tables(name, table_value(value))  # JSON text (the CLI's): kept as given
        if self.is_value(value):
            check_tables(name, value)
            value = canonical_table(value)
        if self.kind is str and isinstance(value, os.PathLike):  # a file's path (data=Path)
            value = os.fspath(value)
        ok = isinstance(value, self.kind) and not (self.kind is not bool and isinstance(value, bool))
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise bad(name, value, _KINDS[self.kind])
        if self.choices is not None:
            check_choice(name, value, self.allowed())
        if self.check is not None:
            self.check(name, value)
        return value


def _dtypes():
    from .config import DTYPES

    return DTYPES


def _algorithms():
    from .algorithms import ALGORITHMS

    return ALGORITHMS


def _families():
    from .topology import FAMILIES

    return FAMILIES


def _problems():
    from .problems import PROBLEMS

    return PROBLEMS


def _noises():
    from .problems import NOISES

    return NOISES


def _splits():
    from .data import SPLITS

    return SPLITS


def _weights():
    from .topology.weights import WEIGHT_RULES

    return WEIGHT_RULES


def _is_table(t) -> bool:
    return isinstance(t, dict) and isinstance(t.get("topology"), str)


def check_tables(name: str, value) -> None:
    """A topology table ({"topology": "ring", "n": 16, ...}), or a list of them, checked
    entry by entry where a grid file gives it, so that a mistake is named at its line: the
    family, a key it does not take, a scalar its parameter refuses, a required key left
    out. A cell keeps the table in one spelling, its family's defaults left out
    (grid.plain_tables); lists in it (inline edges, cycle's tables) are judged when the
    topology is built."""
    if isinstance(value, list):
        for t in value:
            check_tables(name, t)
        return
    check_family(name, value)
    if not _is_table(value):
        return  # not a topology table: the parameter's check says what is
    from .topology import TOPO_RENAME, family_params

    family = value["topology"]
    check_choice(f"{name}'s topology", family, tuple(_families()))
    defaults = {TOPO_RENAME.get(k, k): v for k, v in family_params(family).items()}
    for key, val in value.items():
        if key == "topology":
            continue
        if key not in defaults or key not in PARAMS:
            raise FastGTError(f"{name}: {key} does not apply to topology {family!r}: allowed "
                              f"{', '.join(defaults)}")
        if isinstance(val, (bool, int, float, str)):
            try:
                PARAMS[key].validate(key, val)
            except FastGTError as err:
                raise FastGTError(f"{name}: {err}") from None
    missing = [k for k, default in defaults.items() if default is REQUIRED and k not in value]
    if missing:
        raise FastGTError(f"{name}: topology {family!r} needs {', '.join(missing)}")


def canonical_table(value):
    """A table-valued parameter's value (a dict or list of them, or its JSON text in any
    spelling) as the canonical JSON a grid file's table is stored as; other text as is."""
    parsed = table_value(value) if isinstance(value, str) else value
    if isinstance(value, str) and parsed is None:
        return value
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"))


def table_value(text):
    """A table-valued parameter's text parsed: JSON, or a TOML inline value as a grid file
    writes it ({topology = "ring", n = 16}, a list of such); None when it is neither a table
    nor a list of them in TOML (other text stays text)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = tomllib.loads(f"v = {text}")["v"]
        json.dumps(value)  # no TOML date in a table
    except (tomllib.TOMLDecodeError, TypeError, ValueError):
        return None
    return value if isinstance(value, dict | list) else None


def _tables(name, text):
    """A list of topology tables, each naming a static family: {"topology": "ring", "n": 16}."""
    tables = table_value(text)
    if not (isinstance(tables, list) and tables and all(_is_table(t) for t in tables)):
        raise bad(name, text, 'a list of topology tables, e.g. [{topology = "ring", n = 16}, '
                  '{topology = "torus", n = 16}] in a grid file, \'[{"topology": "ring", "n": '
                  '16}, {"topology": "torus", "n": 16}]\' (JSON, or TOML) on the command line')


def _table(name, text):
    """One topology table: {"topology": "ring", "n": 16, "self_weight": 0.5}."""
    if not _is_table(table_value(text)):
        raise bad(name, text, 'a topology table, e.g. {topology = "ring", n = 16, '
                  'self_weight = 0.5} in a grid file, \'{"topology": "ring", "n": 16, '
                  '"self_weight": 0.5}\' (JSON, or TOML) on the command line')


def _int(lo, hi=None):
    return partial(check_int, lo=lo, hi=hi)


def _float(lo=None, hi=None, lo_open=False, hi_open=False):
    return partial(check_float, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open)


_DECLARED = [
    # ------------------------------------------------------------------ run
    Param("algorithm", str, "run", "the algorithm (gt: Gradient Tracking, the paper's; each "
          "one's update and costs: fastgt.algorithm(name))",
          choices=_algorithms, default="gt"),
    Param("topology", str, "run", "topology family, its parameters below (see fastgt topo)",
          choices=_families, default=REQUIRED),
    Param("problem", str, "run", "quadratic: Setup A/B (f_i = ||x||^2); consensus: f_i = "
          "1/2 ||x - mu_i||^2; hetero_quadratic: diagonal quadratics drawn per node; "
          "least_squares, logistic, nonconvex: on node-local data",
          choices=_problems, default="quadratic"),
    Param("noise", str, "run", "gaussian: Setup A; structured: Setup B; none (= full): exact "
          "gradients; minibatch: batch_size of a node's rows per gradient (problems with "
          "data), minibatch+gaussian: with Setup A's noise added",
          choices=_noises, default="gaussian"),
    Param("sigma2", float, "run", "noise variance: (1/n) sum E||noise_i||^2", _float(0.0),
          default=1.0, per_cell=True,
          applies=("noise", ("gaussian", "structured", "minibatch+gaussian"))),
    Param("d", int, "run", "dimension", _int(1), default=100),
    Param("stepsize", float, "run", "stepsize gamma (fastgt theory gives the stable ones)",
          _float(0.0, lo_open=True), default=0.01, per_cell=True),
    Param("steps", int, "run", "number of steps (>= 1)", _int(1), default=1000),
    Param("record_every", int, "run", "steps between two records of the metrics", _int(1),
          default=100),
    Param("seed", int, "run", "seed of the noise and of the initial point", _int(0, 2**63 - 1),
          default=0, per_cell=True),
    Param("local_steps", int, "run", "communicate on every k-th step only, W = I on the others "
          "(the paper's local steps; default 1)", _int(1)),
    Param("topology_y", str, "run", "gt, gt_atc: a second mixing matrix for the tracking "
          "variable y (the paper's different mixing for x and y), a topology table of the "
          "same n (on the command line JSON, '{\"topology\": \"ring\", \"n\": 16}', or "
          "TOML, '{topology = \"ring\", n = 16}')",
          _table, tables="table"),
    Param("allow_unstable", bool, "run", "run an algorithm on a topology outside its stability "
          "condition (d2: lambda_n(W) > -1/3, a static W, local_steps 1; extra: symmetric "
          "matrices) and let the divergence be recorded"),
    Param("dtype", str, "run", "element type of the state: float64 (default) or float32 (half "
          "the memory and traffic, float32 arithmetic; docs/engine.md)",
          choices=_dtypes),
    # ------------------------------------------------------------- topology
    Param("n", int, "topology", "number of nodes", _int(2)),
    Param("self_weight", float, "topology",
          "ring / interp_ring self weight w (neighbours get (1-w)/2)",
          _float(0.0, 1.0, hi_open=True), per_cell=True),
    Param("alpha", float, "topology", "interp_ring: alpha W_ring + (1-alpha)/n 11^T",
          _float(0.0, 1.0), per_cell=True),
    Param("rows", int, "topology", "torus rows", _int(1)),
    Param("cols", int, "topology", "torus columns", _int(1)),
    Param("prob", float, "topology", "erdos_renyi edge probability", _float(0.0, 1.0, lo_open=True)),
    Param("radius", float, "topology", "geometric graph radius", _float(0.0, lo_open=True)),
    Param("graph_seed", int, "topology", "seed of random graphs (erdos_renyi, geometric)",
          _int(0)),
    Param("weights", str, "topology", "weights of general graphs", choices=_weights),
    Param("lazy", bool, "topology", "use (W + I) / 2"),
    Param("edges", str, "topology", "from_edges: edge-list FILE (two integer columns, text or CSV)"),
    Param("matrix", str, "topology",
          "from_matrix: mixing-matrix FILE (.npy, .npz scipy sparse, .mtx)"),
    Param("matrices", str, "topology", "cycle: the mixing matrices applied in turn, a list of "
          "topology tables (on the command line JSON, "
          "'[{\"topology\": \"ring\", \"n\": 16}, {\"topology\": \"torus\", \"n\": 16}]', "
          "or TOML)",
          _tables, tables="list"),
    # -------------------------------------------------------------- problem
    Param("zeta", float, "problem",
          "heterogeneity of the drawn consensus / hetero_quadratic problems", _float(0.0)),
    Param("L", float, "problem", "hetero_quadratic: largest curvature", _float(0.0, lo_open=True)),
    Param("mu", float, "problem", "hetero_quadratic: smallest curvature",
          _float(0.0, lo_open=True)),
    Param("problem_seed", int, "problem", "seed of the drawn problem data (and of the split "
          "of a data set across the nodes)", _int(0)),
    Param("data", str, "problem", "least_squares, logistic, nonconvex: 'synthetic' or a data "
          "FILE (LIBSVM text, .npz with X and y, .parquet with a y or label column); a file "
          "fixes d"),
    Param("samples", int, "problem", "synthetic data: rows per node", _int(1),
          applies=("data", ("synthetic",))),
    Param("split", str, "problem", "how the data's rows are split across the nodes: iid, "
          "dirichlet (label skew, split_alpha), sorted (by label)", choices=_splits),
    Param("split_alpha", float, "problem", "dirichlet split: concentration (smaller: more skew)",
          _float(0.0, lo_open=True), applies=("split", ("dirichlet",))),
    Param("batch_size", int, "problem", "noise=minibatch: rows drawn (with replacement) per "
          "gradient", _int(1), applies=("noise", ("minibatch", "minibatch+gaussian"))),
    Param("reg", float, "problem", "regularization weight (l2 for least_squares and logistic, "
          "sum x^2/(1+x^2) for nonconvex)", _float(0.0)),
    Param("label_noise", float, "problem", "synthetic data: probability of a flipped label "
          "(logistic, nonconvex), noise std of the targets (least_squares)", _float(0.0),
          applies=("data", ("synthetic",))),
]

#: name -> Param, in declared order (the order of the result columns)
PARAMS = {p.name: p for p in _DECLARED}


def scoped(scope: str) -> dict:
    """The parameters of one scope, name -> Param."""
    return {k: p for k, p in PARAMS.items() if p.scope == scope}


#: parameters that may differ between the cells of one compiled loop (fastgt.run_batch)
PER_CELL = tuple(k for k, p in PARAMS.items() if p.per_cell)

#: run parameters a sweep's cell holds only when set, with the value a cell that does not
#: set them runs with: the result columns show it, and a cell's id leaves it out where it
#: is spelled out (grid.identity)
IMPLICIT = {"local_steps": 1, "allow_unstable": False, "dtype": "float64"}


#: parameters that apply to a cell only for some values of another (Param.applies)
CONDITIONAL = {k: p.applies for k, p in PARAMS.items() if p.applies}


def inapplicable(params: dict) -> list[str]:
    """The keys of a cell's complete parameters that it ignores (Param.applies): split_alpha
    without a dirichlet split, sigma2 with a noise that adds none, ...; their result columns
    are null."""
    return [k for k, (other, values) in CONDITIONAL.items()
            if k in params and other in params and params[other] not in values]


def from_file(params: dict) -> bool:
    """Whether a cell's data come from a file, which fixes its d (the d it holds is then
    the run's default, not the one that runs)."""
    return params.get("data", "synthetic") != "synthetic"


def is_implicit(key: str, value) -> bool:
    """Whether ``value`` is the value parameter ``key`` runs with when not set."""
    return key in IMPLICIT and type(value) is type(IMPLICIT[key]) and value == IMPLICIT[key]
