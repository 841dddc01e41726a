"""Grid specs: a TOML file -> validated cells, each with a stable id.

A spec has a ``[run]`` table of fixed parameters and ``[[grid]]`` tables whose list-valued
entries form a Cartesian product (several ``[[grid]]`` tables: the union of their products;
an entry of a ``[[grid]]`` table overrides the same key of ``[run]`` for that table's cells)::

    [run]
    topology = "interp_ring"
    n = 300
    steps = 3000

    [[grid]]
    alpha = [0.0, 0.5, 0.9]
    seed = [0, 1]

Cell parameters are flat: the run parameters of :func:`fastgt.run` (algorithm, problem, noise,
sigma2, d, stepsize, steps, record_every, seed), the topology family and its parameters (the
random-graph seed is ``graph_seed``) and the problem's scalar parameters (its seed is
``problem_seed``). Every mistake (unknown key, wrong type or range, a parameter that does not
apply to a cell's topology or problem, an empty list, a value only a build can judge) is a
one-line :class:`FastGTError` naming the file line and the allowed values, raised before
anything runs; a random graph that comes out disconnected for one graph_seed is a failed cell.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DegenerateGraphError, FastGTError, bad, close_names
from ..flat import (
    cell_problem,
    cell_topology,
    not_applicable,
    problem_flat_params,
    table_topology,
    topology_params,
)
from ..params import PARAMS, from_file, inapplicable, is_implicit, scoped, table_value
from ..problems.noise import check_noise_topology
from ..topology import FAMILIES
from .tables import cell_numerics

#: every family, from_edges and from_matrix with the path of a file (``edges``, ``matrix``)
GRID_FAMILIES = tuple(FAMILIES)


#: the parameters a grid file may set (fastgt.params: types, allowed values, defaults), by
#: scope; every one is a declared column of the results
RUN_PARAMS, TOPOLOGY_PARAMS, PROBLEM_PARAMS = (scoped(s) for s in ("run", "topology", "problem"))
#: defaults of the run parameters (those of fastgt.run); topology is required (the
#: parameters without one, params.IMPLICIT and topology_y, are in a cell only when set:
#: the ids of sweeps from before they existed stay)
RUN_DEFAULTS = {k: p.default for k, p in RUN_PARAMS.items()
                if k != "topology" and p.default is not None}


@dataclass(frozen=True)
class Cell:
    """One simulation of a sweep: complete canonical parameters and their stable id."""

    id: str
    params: dict = field(hash=False)


def canonical(params: dict) -> dict:
    """Complete a cell's flat parameters with defaults; check that each one applies.

    Raises FastGTError naming the first parameter that does not apply to the cell's
    topology or problem, or a required one that is missing.
    """
    if "topology" not in params:
        raise _keyed("topology", f"topology is required: allowed {', '.join(GRID_FAMILIES)}")
    out = {**RUN_DEFAULTS, **{k: v for k, v in params.items() if k in RUN_PARAMS}}
    topo = topology_params(out["topology"])
    prob = problem_flat_params(out["problem"])
    for key, val in params.items():
        if key in RUN_PARAMS:
            continue
        if key in topo or key in prob:
            out[key] = val
        else:
            raise _keyed(key, str(not_applicable(key, out["topology"], out["problem"])),
                         inapplicable=True)
    for key, default in {**topo, **prob}.items():
        if key not in out:
            if default is inspect.Parameter.empty:
                raise _keyed("topology", f"topology {out['topology']!r} needs {key}")
            if default is not None:
                out[key] = default
    return out


def _keyed(key: str, msg: str, inapplicable: bool = False) -> FastGTError:
    """The error, with the parameter at fault (``key``) and whether it is one that does not
    apply to the cell's topology or problem (``inapplicable``)."""
    err = FastGTError(msg)
    err.key, err.inapplicable = key, inapplicable
    return err


def cell_id(params: dict) -> str:
    """16 hex digits of sha256 over the cell's identity (sorted JSON) and the version of
    its numbers (tables.cell_numerics)."""
    blob = json.dumps({"numerics": cell_numerics(params), "params": identity(params)},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def identity(params: dict) -> dict:
    """What a cell's id hashes: its complete parameters (from make_cell: their topology
    tables plain already, plain_tables) less what is spelled out at the value the cell runs
    with anyway, so that writing it out makes the same cell: a parameter at its value when
    unset (params.IMPLICIT: local_steps = 1, dtype = "float64", ...), and d where a data
    file fixes it (the spec is refused where d differs from the file's)."""
    fixed = from_file(params)
    return {k: v for k, v in params.items()
            if not is_implicit(k, v) and not (k == "d" and fixed)}


def plain_tables(params: dict) -> dict:
    """``params`` with each topology table in one spelling, its family's defaults left out
    (without_defaults): a cell stores (and a load groups) one table one way, however a
    grid file or the command line wrote it."""
    return {k: without_defaults(v) if PARAMS[k].tables and isinstance(v, str) else v
            for k, v in params.items()}


def without_defaults(text: str) -> str:
    """A topology table's JSON or TOML text (or a list of them) as canonical JSON, less the
    entries at their family's default; other text (not a table) as it is."""
    def plain(table):
        if not (isinstance(table, dict) and table.get("topology") in FAMILIES):
            return table
        defaults = topology_params(table["topology"])
        return {k: v for k, v in table.items()
                if not (k in defaults and type(v) is type(defaults[k]) and v == defaults[k])}

    value = table_value(text)
    if value is None:
        return text
    value = [plain(t) for t in value] if isinstance(value, list) else plain(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def make_cell(params: dict) -> Cell:
    """A Cell from (possibly partial) flat parameters, validated and completed with defaults.

    Errors are FastGTError with attribute ``key``: the parameter at fault.
    """
    typed = {}
    for key, val in params.items():
        try:
            if key not in PARAMS:
                raise _unknown(key)
            typed[key] = PARAMS[key].validate(key, val)
        except FastGTError as err:
            err.key = key
            raise
    full = plain_tables(canonical(typed))
    return Cell(cell_id(full), full)


def _unknown(key: str) -> FastGTError:
    return FastGTError(f"unknown key {key!r}{close_names(key, PARAMS)}: allowed "
                       f"{', '.join(PARAMS)}")


# --------------------------------------------------------------------------- spec files


@dataclass
class GridSpec:
    """A parsed spec: fixed ``run`` parameters, ``grids`` (list of tables), and where each key
    was set (``where[(table, key)]``, table = "run" or the grid index) for error messages."""

    run: dict
    grids: list
    where: dict
    source: str = "<spec>"

    def cells(self) -> list[Cell]:
        """Validated cells (the union of every grid's product), duplicates removed, in order."""
        every, seen = [], {}  # every: (cell, the grid table it came from)
        for g, table in enumerate(self.grids or [{}]):
            axes = [(k, v if isinstance(v, list) else [v]) for k, v in table.items()]
            for combo in itertools.product(*(vals for _, vals in axes)):
                params = {**self.run, **{k: v for (k, _), v in zip(axes, combo)}}
                cell = self._cell(params, g)
                every.append((cell, g))
                seen.setdefault(cell.id, cell)
        # every cell as written: a duplicate by id may still spell a value that is wrong
        # (a d that is not its data file's)
        self._check_buildable(every)
        return list(seen.values())

    def _check_buildable(self, cells: list[tuple[Cell, int]]) -> None:
        """Build every distinct problem (on a tiny n, d) and topology of the cells once, so
        that values only a build can judge (mu > L, a hypercube's n, a ring's zero
        self_weight) are errors before anything runs. A random graph that comes out
        disconnected or bipartite is not: that is one instance (its graph_seed), and its
        cell is recorded as failed while the rest of the sweep runs. An algorithm refused on
        its topology (d2 with lambda_n < -1/3) is an error too, unless allow_unstable, and so
        is a topology_y that does not fit the cell (its algorithm, its n), a noise its
        problem or topology cannot take (minibatch without data, batch_size without
        minibatch, structured on a time-varying W), and a sigma2 its noise would ignore."""
        free = {"seed", "stepsize", "sigma2", "steps", "record_every", "noise", "algorithm", "d",
                "allow_unstable"}
        from ..engine import check_sigma2  # numba: only once a spec is judged

        built: dict = {}  # key -> its topology (None: a degenerate random graph)
        problems: dict = {}  # key -> its problem, built once
        checked, noises = set(), set()
        for cell, g in cells:
            key = tuple(sorted((k, v) for k, v in cell.params.items() if k not in free))
            ignored = inapplicable(cell.params)
            shown = ", ".join(f"{k}={v}" for k, v in key if k not in ignored)
            if key not in built:
                try:
                    problems[key] = self._problem(cell.params)
                    built[key] = cell_topology(cell.params)
                except FastGTError as err:
                    random = "graph_seed" in topology_params(cell.params["topology"])
                    if not (isinstance(err, DegenerateGraphError) and random):
                        raise FastGTError(f"{self.source}: cell with {shown}: {err}") from None
                    built[key] = None
            d, data = cell.params["d"], cell.params.get("data", "synthetic")
            # a d set for this cell (in the table it comes from, or [run]), not for another
            gave = (g, "d") in self.where
            if data != "synthetic" and d != problems[key].d and (gave or ("run", "d") in
                                                                  self.where):
                raise FastGTError(f"{self._loc('d', g if gave else None)}: d = {d} does not "
                                  f"apply to data = {data!r}: its d is the file's, "
                                  f"{problems[key].d} (leave d out)")
            noise = cell.params["noise"]
            if (key, noise) not in noises:
                noises.add((key, noise))
                try:
                    problems[key].for_noise(noise)
                    if built[key] is not None:
                        check_noise_topology(noise, built[key])
                except FastGTError as err:
                    raise FastGTError(f"{self.source}: cell with noise={noise}, {shown}: "
                                      f"{err}") from None
            try:
                check_sigma2(noise, cell.params["sigma2"])
            except FastGTError as err:
                raise FastGTError(f"{self._given('sigma2') or self.source}: cell with "
                                  f"noise={noise}: {err}") from None
            algorithm = cell.params["algorithm"]
            unstable = bool(cell.params.get("allow_unstable"))
            if built[key] is None or (key, algorithm, unstable) in checked:
                continue
            checked.add((key, algorithm, unstable))
            from ..algorithms import ALGORITHMS  # numba: only once a cell is judged
            from ..engine import checked_topology_y

            algo = ALGORITHMS[algorithm]
            where = self.source
            try:
                refusal = None if unstable else algo.refusal(built[key],
                                                             cell.params.get("local_steps") or 1)
                if refusal:
                    raise FastGTError(refusal)
                if cell.params.get("topology_y"):  # a mistake inside its table: its line
                    where = self._given("topology_y") or self.source
                    checked_topology_y(table_topology(cell.params["topology_y"]), algo,
                                       built[key].n)
            except FastGTError as err:
                raise FastGTError(f"{where}: cell with algorithm={algorithm}, {shown}: "
                                  f"{err}") from None

    def _given(self, key: str) -> str | None:
        """Where the spec sets ``key`` first ("spec.toml line 4", an option), or None."""
        for (_, k), where in self.where.items():
            if k == key:
                return _location(self.source, where)
        return None

    @staticmethod
    def _problem(params: dict):
        """A cell's problem, built on a tiny n and d; a data file's rows are split across
        the cell's nodes (its n, or the topology's), so that too few rows is an error now."""
        spec = cell_problem(params)
        n = 2
        if params.get("data", "synthetic") != "synthetic":
            n = params.get("n") or cell_topology(params).n
        return spec.build(n, 1)

    def _cell(self, params: dict, g: int) -> Cell:
        try:
            return make_cell(params)
        except FastGTError as err:
            # a [run] key reaches every [[grid]] table, those of another family too
            hint = (f" ({err.key} is set in [run], so in every [[grid]] table: set it in the "
                    "tables it applies to)"
                    if getattr(err, "inapplicable", False) and self.grids
                    and err.key in self.run and err.key not in self.grids[g] else "")
            raise FastGTError(f"{self._loc(err.key, g)}: {err}{hint}") from None

    def _loc(self, key: str, g: int | None) -> str:
        return _location(self.source, self.where.get((g, key)) or self.where.get(("run", key)))

    def to_toml(self) -> str:
        """The spec as TOML (what ``fastgt grid`` keeps as DIR/grid.toml)."""
        parts = ["[run]"] + [f"{k} = {_toml_value(v)}" for k, v in self.run.items()]
        for table in self.grids:
            parts += ["", "[[grid]]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
        return "\n".join(parts) + "\n"


def _toml_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def parse_spec(text: str, source: str = "<spec>", sets=(), params=()) -> GridSpec:
    """Parse and type-check a spec; ``sets`` ("key=value") fix a parameter in every cell,
    ``params`` ("key=v1,v2") make it a grid axis of every ``[[grid]]`` table. Both override
    the file."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise FastGTError(f"{source}: invalid TOML: {err}") from None
    lines = _key_lines(text)
    spec = GridSpec({}, [], {}, source)
    for top, val in data.items():
        if top == "run" and isinstance(val, dict):
            spec.run = _table(val, "run", lines, spec)
        elif top == "grid" and isinstance(val, list) and all(isinstance(t, dict) for t in val):
            spec.grids = [_table(t, g, lines, spec) for g, t in enumerate(val)]
        else:
            where = lines.get((None, top)) or lines.get(("table", top))
            raise FastGTError(f"{_location(source, where)}: unknown key {top!r}: allowed a "
                              "[run] table and [[grid]] tables")
    given = [(_split_option(flag, o)[0], flag) for flag, opts in
             (("--set", sets), ("--param", params)) for o in opts]
    keys = [k for k, _ in given]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:  # which one wins would be silent
        flags = " and ".join(dict.fromkeys(f for k, f in given if k == twice[0]))
        raise FastGTError(f"{twice[0]} is given twice ({flags}): allowed once")
    for opt in sets:
        key, val = _split_option("--set", opt)
        spec.run[key] = _typed(key, literal(val), "run", spec, f"--set {opt}")
        for table in spec.grids:
            table.pop(key, None)
    for opt in params:
        key, val = _split_option("--param", opt)
        spec.grids = spec.grids or [{}]
        for g, table in enumerate(spec.grids):
            table[key] = _typed(key, [literal(v) for v in split_values(val)], g, spec,
                                f"--param {opt}")
        spec.run.pop(key, None)
    if not spec.run and not spec.grids:
        raise FastGTError(f"{source}: no cells: give a [run] table and/or [[grid]] tables")
    return spec


def load_spec(path, sets=(), params=()) -> GridSpec:
    """Read a spec file (see :func:`parse_spec`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise FastGTError(f"spec file {str(p)!r} cannot be read: {err.strerror}") from None
    return parse_spec(text, str(path), sets, params)  # errors name the path as given


def _location(source: str, where: str | None) -> str:
    """"spec.toml line 7", "--set alpha=2" (command line options), or just the file."""
    if not where:
        return source
    return where if where.startswith("--") else f"{source} {where}"


def _split_option(flag: str, opt: str) -> tuple[str, str]:
    key, eq, val = opt.partition("=")
    if not eq or not key.strip() or not val.strip():
        raise bad(flag, opt, "key=value (e.g. --set stepsize=0.005, --param alpha=0.1,0.2)")
    return key.strip(), val.strip()


def split_values(text: str) -> list[str]:
    """--param's (and plot --where's) values: ``text`` split at the commas outside
    brackets, braces and quotes (a topology table or a list of them is one value:
    '{"topology": "ring", "n": 8}')."""
    out, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()]


def literal(text: str):
    """A TOML literal (0.5, 3, true, "x"; Python's True and False too), else the bare
    text as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return {"True": True, "False": False}.get(text, text)


def _table(table: dict, name, lines: dict, spec: GridSpec) -> dict:
    return {key: _typed(key, val, name, spec, lines.get((name, key))) for key, val in table.items()}


def _typed(key: str, val, table, spec: GridSpec, where: str | None):
    """Type-check one entry (a list only in grid tables, never empty); record where it was set."""
    spec.where[(table, key)] = where
    try:
        if key not in PARAMS:
            raise _unknown(key)
        tables = PARAMS[key].tables == "list"
        if isinstance(val, list) and not PARAMS[key].is_value(val):
            if tables and any(isinstance(v, dict) for v in val):  # one value, not an axis
                return _one(key, val)
            if table == "run":
                raise FastGTError(f"{key} is a list in [run]: lists go in [[grid]] tables "
                                  "(or use --param)")
            if not val:
                raise FastGTError(f"{key} = [] is an empty grid: give at least one value")
            return [_one(key, v) for v in val]
        return _one(key, val)
    except FastGTError as err:
        raise FastGTError(f"{_location(spec.source, where)}: {err}") from None


def _one(key: str, val):
    """One value of ``key`` checked: a table or list where the parameter takes none, or a
    list of tables holding something else, named as such."""
    if isinstance(val, dict | list) and not PARAMS[key].is_value(val):
        raise bad(key, val, "a list of topology tables, e.g. [{topology = \"ring\", n = 16}]"
                  if PARAMS[key].tables == "list" else
                  f"a single value or a list of {PARAMS[key].kind.__name__}")
    return PARAMS[key].validate(key, val)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"']+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')\s*=")


def _key_lines(text: str) -> dict:
    """(table, key) -> "line N" for every ``key =`` line; table is "run", a grid index, or None
    (top level). Headers are recorded as ("table", name)."""
    out: dict = {}
    table, grid_idx = None, -1
    for no, line in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(line):
            name = m.group(2).strip("\"'")
            if m.group(1) == "[[" and name == "grid":
                grid_idx += 1
                table = grid_idx
            else:
                table = "run" if name == "run" else ("other", name)
            out.setdefault(("table", name), f"line {no}")
        elif m := _KEY.match(line):
            out.setdefault((table, m.group(1).strip("\"'")), f"line {no}")
    return out
