"""Arrow tables of a sweep's results: the declared schemas of cells and traces, building
them from finished cells, unifying and filtering them (no file access here: storage.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import FastGTError, FastGTWarning, caller_level
from ..metrics import METRICS, PROBLEM_COLUMNS
from ..numerics import PROBLEM_NUMERICS, numerics_of
from ..params import CONDITIONAL, IMPLICIT, PARAMS, is_implicit
from ..theory import THEORY_COLUMNS

_ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}
_PARAM_FIELDS = [pa.field(k, _ARROW[p.kind]) for k, p in PARAMS.items()]
_F64 = pa.float64()

#: declared columns of DIR/cells (extra columns of a file are appended)
CELL_SCHEMA = pa.schema(
    [pa.field("id", pa.string()), pa.field("status", pa.string()), *_PARAM_FIELDS]
    + [pa.field(k, _F64) for k in ("lambda2", "lambda_n", "p", "c", "p_eff")]
    + [pa.field(k, _F64) for k in PROBLEM_COLUMNS]
    + [pa.field(m, _F64) for m in METRICS]
    + [pa.field(f"final_{m}", _F64) for m in METRICS]
    + [pa.field(k, _F64) for k in THEORY_COLUMNS]
    + [pa.field("diverged_step", pa.int64()), pa.field("steps_done", pa.int64()),
       pa.field("wall_time", _F64), pa.field("loop_time", _F64), pa.field("steps_per_s", _F64),
       pa.field("threads", pa.int64()), pa.field("error", pa.string()),
       pa.field("rounding_limited", pa.string()), pa.field("growing", pa.string()),
       pa.field("provenance", pa.string()), pa.field("numerics", pa.int64())])
#: declared columns of DIR/traces
TRACE_SCHEMA = pa.schema([pa.field("id", pa.string()), *_PARAM_FIELDS,
                          pa.field("step", pa.int64()), pa.field("comm_rounds", pa.int64()),
                          pa.field("grad_evals", pa.int64()),
                          *[pa.field(m, _F64) for m in METRICS], pa.field("numerics", pa.int64())])


def to_pandas(table: pa.Table):
    """A table as a DataFrame, integer columns as pandas' nullable Int64: a parameter that
    only some cells have (rows, graph_seed, ...) would otherwise come back as float64, and
    seeds beyond 2^53 would lose digits on the way; params.IMPLICIT's columns with the
    value their cells ran with where a file has none. (pandas imported here only: status
    and compact read without it.)"""
    import pandas as pd

    df = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    for key, value in IMPLICIT.items():  # files written before the columns showed it
        if key in df.columns and df[key].isna().any():
            kind = pd.Int64Dtype() if type(value) is int else type(value)
            df[key] = df[key].astype(object).where(df[key].notna(), value).astype(kind)
    return df


def null_inapplicable(table: pa.Table) -> pa.Table:
    """The table with each parameter's column null where its cell ignores it
    (params.CONDITIONAL: split_alpha without a dirichlet split, ...), as files written
    before that rule show the default there."""
    for key, (other, values) in CONDITIONAL.items():
        if key in table.column_names and other in table.column_names:
            col = table[key]
            applies = pc.fill_null(pc.is_in(table[other], pa.array(values)), False)
            table = table.set_column(table.column_names.index(key), key,
                                     pc.if_else(applies, col, pa.nulls(len(table), col.type)))
    return table


def by_version(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(the rows of this fastgt's numbers, the others): column numerics = the version of
    the row's problem (numerics.numerics_of; a table without the problem column, or a
    null, is the default problem's); a null numerics, or a table without the column, is a
    row written before it. No Python value goes to pyarrow (that imports pandas:
    ``fastgt status`` stays light)."""
    if "numerics" not in table.column_names:
        return table.slice(0, 0), table
    col = table["numerics"]
    keep = pc.and_kleene(pc.is_valid(col), pc.equal(col, _versions(table)))  # null: False
    if pc.all(keep).as_py():  # the usual case: no copy of a big table
        return table, table.slice(0, 0)
    return table.filter(keep), table.filter(pc.invert(keep))


def cell_numerics(params: dict) -> int:
    """The version of the numbers a cell of ``params`` gives (numerics.numerics_of)."""
    return numerics_of(params.get("problem", PARAMS["problem"].default))


def _versions(table: pa.Table) -> pa.Array:
    """The version each row of ``table`` should have, by its problem."""
    base = _int64s(np.full(len(table), numerics_of(PARAMS["problem"].default)))
    if "problem" not in table.column_names:
        return base
    index = pc.index_in(table["problem"], value_set=_strings(list(PROBLEM_NUMERICS)))
    own = pc.take(_int64s(np.array(list(PROBLEM_NUMERICS.values()))), index)  # null: none
    return pc.coalesce(own, base)


def _int64s(values: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.int64(), len(values), [
        None, pa.py_buffer(np.ascontiguousarray(values, dtype="<i8").tobytes())])


def _strings(values: list[str]) -> pa.Array:
    data = [v.encode() for v in values]
    offsets = np.cumsum([0, *map(len, data)], dtype="<i4")
    return pa.Array.from_buffers(pa.string(), len(values), [
        None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))])


def older_left_out(where: str, n: int) -> None:
    """The FastGTWarning of ``n`` cells of another fastgt's numbers left out of a read."""
    warnings.warn(f"{where}: {n} {'cell' if n == 1 else 'cells'} computed by another fastgt "
                  "(another numerics version: their numbers can differ from this "
                  "one's) left out; a rerun of their sweep computes them anew, and "
                  "`fastgt compact` moves them to older/", FastGTWarning,
                  stacklevel=caller_level())


def columns_of(rows: list[dict]) -> dict:
    names = dict.fromkeys(k for r in rows for k in r)
    return {k: [r.get(k) for r in rows] for k in names}


def declared_table(cols: dict, nrows: int, declared: pa.Schema) -> pa.Table:
    """Declared columns in order (missing ones null), then any extra columns."""
    arrays, fields = [], []
    for f in declared:
        vals = cols.get(f.name)
        if vals is None:
            arrays.append(pa.nulls(nrows, f.type))
        else:
            arrays.append(vals.cast(f.type) if isinstance(vals, pa.Array)
                          else pa.array(vals, type=f.type))
        fields.append(f)
    for name in sorted(set(cols) - set(declared.names)):
        arr = cols[name] if isinstance(cols[name], pa.Array) else pa.array(cols[name])
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def trace_table(results: list) -> pa.Table | None:
    """The trace rows of finished cells: each cell's id and parameters repeated on its
    rows (taken from one array per parameter, not built row by row)."""
    traced = [(cid, params, trace) for cid, params, _, trace, _ in results
              if trace is not None and len(trace["step"])]
    if not traced:
        return None
    counts = np.array([len(t["step"]) for _, _, t in traced])
    take = pa.array(np.repeat(np.arange(len(traced)), counts))
    per_cell = columns_of([{"id": cid, **params, "numerics": cell_numerics(params)}
                           for cid, params, _ in traced])
    cols = {k: _array(k, v, TRACE_SCHEMA).take(take) for k, v in per_cell.items()}
    for c in traced[0][2]:
        cols[c] = np.concatenate([np.asarray(t[c]) for _, _, t in traced])
    return declared_table(cols, int(counts.sum()), TRACE_SCHEMA)


def _array(name: str, values: list, declared: pa.Schema) -> pa.Array:
    i = declared.get_field_index(name)
    return pa.array(values, type=declared.field(i).type if i >= 0 else None)


def unified(schemas: list) -> pa.Schema:
    return pa.unify_schemas(schemas, promote_options="permissive").remove_metadata()


def newest(table: pa.Table, stem: str, latest: dict) -> pa.Table:
    """The rows of ``table`` (read from file ``stem``) whose cell's newest file it is."""
    keep = [latest.get(i) == stem for i in table["id"].to_pylist()]
    return table.filter(pa.array(keep, type=pa.bool_()))


def check_columns(columns, schema: pa.Schema, sub: str) -> None:
    missing = [c for c in columns or () if c not in schema.names]
    if missing:
        raise FastGTError(f"{missing[0]!r} is not a column of {sub}: allowed "
                          f"{', '.join(schema.names)}")


def select(table: pa.Table, columns, sub: str) -> pa.Table:
    check_columns(columns, table.schema, sub)
    return table if columns is None else table.select(list(columns))


def expression(where, schema: pa.Schema, sub: str):
    """A filter: None, a pyarrow.compute.Expression, or {column: value | list of values}."""
    if where is None or isinstance(where, pc.Expression):
        return where
    if not isinstance(where, dict):
        raise FastGTError(f"where={where!r} is invalid: allowed a dict {{column: value or "
                          "list of values} or a pyarrow.compute expression")
    check_columns(list(where), schema, sub)
    expr = None
    for k, v in where.items():
        typ = schema.field(k).type
        values = list(v) if isinstance(v, list | tuple | set | np.ndarray) else [v]
        term = pc.field(k).isin(pa.array([_scalar(k, x, typ).as_py() for x in values], typ))
        if any(is_implicit(k, x) for x in values):  # a file from before its column showed it
            term = term | pc.field(k).is_null()
        if k in CONDITIONAL and CONDITIONAL[k][0] in schema.names:  # files from before its
            term = term & pc.field(CONDITIONAL[k][0]).isin(CONDITIONAL[k][1])  # nulls
        expr = term if expr is None else expr & term
    return expr


def _scalar(column: str, value, typ: pa.DataType) -> pa.Scalar:
    """``value`` as a scalar of the column's type, or a one-line error."""
    try:
        return pa.scalar(value).cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise FastGTError(f"where {column}={value!r} is invalid: allowed a value of type "
                          f"{typ} (the column's)") from None
