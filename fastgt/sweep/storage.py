"""Sweep results on disk (a local path or any fsspec URI: s3://..., memory://...).

Layout of an output directory DIR::

    DIR/grid.toml                   the spec of the last ``fastgt grid`` run on DIR
    DIR/cells/part-<T>-<R>.parquet  cell rows (parameters, spectrum, plateaus, status,
                                    timings, provenance) of one flush of a sweep, or of
                                    a compaction of several
    DIR/traces/part-<T>-<R>.parquet the trace rows (step, metrics, id, parameters) of the
                                    same cells: a part's two files share their name
    DIR/claims/<R>                  a task being computed: {"pid", "host", ..., "state",
                                    "ids"} of the sweep doing it, state "queued" or "running"
    DIR/optimum/<key>.npy           optima of problems with data (fastgt/derived.py)
    DIR/spectrum/<key>.npy          Lanczos spectra and dense eigenvalues of graphs
    DIR/eigenvalues/<key>.npy       without closed forms (fastgt/derived.py)

T is the writer's clock in ns (19 digits, zero-padded): names sort by age. Files of the
first layout, ``cells/<id>.parquet`` with one row (and ``traces/<id>.parquet``), are read
alike, as older than any part.

Every file is written under a temporary name starting with "." and renamed into place, so
readers (which skip names starting with "." or "_", as pyarrow does) never see a partial
file; a part's traces are written before its cells, so a cells file means finished cells.
A cell written again (``--force``, ``--retry-failed``) has rows in two parts until the
sweep compacts them: the readers here keep the newest (:meth:`Store.latest`), and its
trace rows are those of the part its row is in. Schemas are declared (:data:`CELL_SCHEMA`,
:data:`TRACE_SCHEMA`); columns beyond them (e.g. parameters of a newer topology family)
are appended, and readers unify the schemas of all files. Provenance is one JSON string
per cell (column ``provenance``: versions, host, pid, start time, parameters, the run's
config, the sweep's settings) and one footer per file (key ``fastgt``: the writer).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import posixpath
import secrets
import socket
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import FastGTError
from ..params import CONDITIONAL, PARAMS, canonical_table
from ..procs import process_start
from .claims import Claims
from .tables import (
    CELL_SCHEMA,
    TRACE_SCHEMA,
    by_version,
    cell_numerics,
    check_columns,
    columns_of,
    declared_table,
    expression,
    newest,
    null_inapplicable,
    older_left_out,
    select,
    to_pandas,
    trace_table,
    unified,
)

META_KEY = "fastgt"
SUBDIRS = ("cells", "traces", "claims")
PART = "part-"
#: rows per row group: filters skip groups by their statistics (small groups for the cell
#: rows, which carry long provenance strings: a filter on 10^5 cells reads 0.02 s, not 0.13)
ROW_GROUP = {"cells": 16384, "traces": 65536}
#: a directory of at most this many files is read file by file when unfiltered
FEW_FILES = 256
#: trace rows per compacted file (bounds the memory of a compaction)
COMPACT_ROWS = 2_000_000
_WRITE = {"compression": "zstd"}


def _filesystem(out):
    import fsspec

    fs, root = fsspec.core.url_to_fs(str(out))
    return fs, root.rstrip("/") or "/"


def _visible(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".parquet") and not base.startswith((".", "_"))


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-len(".parquet")]


def _age(stem: str) -> tuple:
    """Sort key of a file: parts by their time, first-layout files (one cell) before all."""
    if stem.startswith(PART):
        return int(stem[len(PART):len(PART) + 19]), stem
    return 0, stem


def _twice(index: dict, latest: dict) -> bool:
    """Whether some cell has rows in two files (written again, not yet compacted)."""
    return sum(map(len, index.values())) != len(latest)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _host_tag(host: str) -> str:
    return hashlib.sha1(host.encode()).hexdigest()[:8]


#: reads of a directory begun again when a file vanished under them, and the pause before
#: the first (doubled each time)
RELISTS, RELIST_PAUSE = 6, 0.02


def _relisting(read):
    """A read of DIR's files begun again from a fresh listing when one of them vanished
    while it ran: another process's compaction replaced it (its rows are in a newer file,
    written before any input is deleted)."""

    @functools.wraps(read)
    def again(self, *args, **kwargs):
        if self._retrying:  # inside another such read: that one begins again
            return read(self, *args, **kwargs)
        self._retrying = True
        try:
            for attempt in range(RELISTS - 1):
                try:
                    return read(self, *args, **kwargs)
                except OSError as err:  # pyarrow's own reads say so in the message only
                    if not (isinstance(err, FileNotFoundError) or "No such file" in str(err)):
                        raise
                    time.sleep(RELIST_PAUSE * 2 ** attempt)
                    self.fs.invalidate_cache()  # a remote store's cached listing
            return read(self, *args, **kwargs)
        finally:
            self._retrying = False

    return again


class Store(Claims):
    """One output directory: atomic result writes, claims for concurrent sweeps (claims.py),
    resume."""

    def __init__(self, out, create: bool = True):
        self.fs, self.root = _filesystem(out)
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                                else (self.fs.protocol,))
        for sub in SUBDIRS if create else ():
            self.fs.makedirs(f"{self.root}/{sub}", exist_ok=True)
        self.held: dict[str, list[str]] = {}  # claim token -> its cell ids
        self.me = {"pid": os.getpid(), "host": socket.gethostname(),
                   "pid_start": process_start(os.getpid())}
        self._ids: dict[str, list[str]] = {}  # cells file stem -> its ids (files never change)
        self._latest: dict[str, str] = {}  # latest(), as of the stems in _latest_of
        self._latest_of: dict[str, None] = {}
        self._retrying = False  # inside a read that begins again (_relisting)
        self._held: dict = {}  # _spellings: key -> (cells files, the texts they hold)
        self._said_older = False  # a read left out cells of another fastgt's numbers
        self.moved = 0  # cells of another fastgt's numbers the last compact() moved

    def url(self, sub: str) -> str:
        """DIR/<sub> as a URI the workers can open (the protocol kept)."""
        return self.fs.unstrip_protocol(f"{self.root}/{sub}")

    # ---------------------------------------------------------------- index

    def _ls(self, sub: str) -> list[str]:
        try:
            return self.fs.ls(f"{self.root}/{sub}", detail=False)
        except FileNotFoundError:
            return []

    def files(self, sub: str = "cells") -> dict[str, str]:
        """Visible files of DIR/<sub>, stem -> path, oldest first."""
        found = {_stem(p): p for p in self._ls(sub) if _visible(p)}
        return {s: found[s] for s in sorted(found, key=_age)}

    @_relisting
    def index(self) -> dict[str, list[str]]:
        """Cells file stem -> the ids of its rows, oldest file first (a part's ids are read
        once: its id column; a first-layout file's id is its name)."""
        files = self.files("cells")
        for stale in set(self._ids) - set(files):
            del self._ids[stale]
        for stem, path in files.items():
            if stem not in self._ids:
                self._ids[stem] = (self._read_ids(path) if stem.startswith(PART)
                                   else [stem])
        return {s: self._ids[s] for s in files}

    def _read_ids(self, path: str) -> list[str]:
        with self._parquet(path) as f:
            return f.read(columns=["id"])["id"].to_pylist()

    def latest(self, index: dict | None = None) -> dict[str, str]:
        """Finished cell id -> the stem of the newest file holding its row. Kept between
        calls: files added after those seen, all newer, only update it."""
        index = self.index() if index is None else index
        seen, added = self._latest_of, index.keys() - self._latest_of.keys()
        if not (seen.keys() <= index.keys() and (
                not added or not seen or min(map(_age, added)) > max(map(_age, seen)))):
            self._latest, seen = {}, {}
        for stem, ids in index.items():  # oldest first: a newer file's rows win
            if stem not in seen:
                self._latest.update(dict.fromkeys(ids, stem))
        self._latest_of = dict.fromkeys(index)
        return self._latest

    def ids(self) -> set[str]:
        """Ids of the finished cells (rows in files in place; temporaries ignored)."""
        return set(self.latest())

    def finished(self, ids) -> dict[str, int]:
        """Those of ``ids`` that have a result -> when its newest row was written
        (time.time_ns; 0 for first-layout files)."""
        latest = self.latest()
        return {i: _age(latest[i])[0] for i in ids if i in latest}

    # ---------------------------------------------------------------- writing

    def write(self, results: list) -> str | None:
        """Write finished cells as one part: ``results`` = [(id, params, row, trace, meta)]
        (trace: {column: array} or a DataFrame, or None; meta: the cell's provenance, whose
        "params", if any, are the provenance's instead of ``params``);
        traces first, then cells, each atomically. Returns the part's name (None if
        ``results`` is empty)."""
        if not results:
            return None
        name = f"{PART}{time.time_ns():019d}-{secrets.token_hex(4)}"
        traces = trace_table(results)
        if traces is not None:
            self._put("traces", name, traces)
        rows = [{"id": cid, **params, **row,
                 "provenance": json.dumps({"params": params, **meta}, default=str),
                 "numerics": cell_numerics(params)}
                for cid, params, row, _, meta in results]
        self._put("cells", name, declared_table(columns_of(rows), len(rows), CELL_SCHEMA))
        self._ids[name] = [r[0] for r in results]
        return name

    def _put(self, folder: str, name: str, table: pa.Table) -> None:
        """``table`` as DIR/<folder>/<name>.parquet (folder: cells, traces, or older/cells,
        older/traces: rows of another fastgt's numbers, moved there by compaction)."""
        table = table.replace_schema_metadata({META_KEY: json.dumps({"writer": self.me})})
        self.fs.makedirs(f"{self.root}/{folder}", exist_ok=True)
        self._replace(f"{self.root}/{folder}/{name}.parquet", lambda f: pq.write_table(
            table, f, row_group_size=ROW_GROUP[folder.rsplit("/", 1)[-1]], **_WRITE))

    def _temporary(self, folder: str) -> str:
        """A temporary's name: its writer (pid, start, host) in it, for the clean-up."""
        me = self.me
        return (f"{folder}/.tmp-{me['pid']}-{me['pid_start']}-{_host_tag(me['host'])}-"
                f"{secrets.token_hex(4)}")

    def _replace(self, path: str, write) -> None:
        """Create or replace ``path`` atomically: ``write(file)`` fills a temporary beside
        it, which is then renamed into place."""
        tmp = self._temporary(path.rsplit("/", 1)[0])
        try:
            with self.fs.open(tmp, "wb") as f:
                write(f)
            self.fs.mv(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(tmp)
            raise

    def put_text(self, name: str, text: str) -> None:
        """Write DIR/<name> atomically (used for grid.toml)."""
        self._replace(f"{self.root}/{name}", lambda f: f.write(text.encode()))

    def put_spec(self, text: str, ids: list[str]) -> None:
        """DIR/grid.toml, and DIR/grid.ids: the ids of its cells after a digest of the
        text (``fastgt status`` reads them instead of expanding the spec, which takes
        seconds at 10^5 cells)."""
        self.put_text("grid.toml", text)
        self.put_text("grid.ids", "\n".join([_digest(text), *ids]) + "\n")

    def spec(self) -> tuple[str | None, list[str] | None]:
        """(DIR/grid.toml's text, its cells' ids if DIR/grid.ids is of that text)."""
        text, ids = self.get_text("grid.toml"), self.get_text("grid.ids")
        lines = (ids or "").split()
        if text is None or not lines or lines[0] != _digest(text):
            return text, None
        return text, lines[1:]

    def get_text(self, name: str) -> str | None:
        try:
            return self.fs.cat_file(f"{self.root}/{name}").decode()
        except FileNotFoundError:
            return None

    @_relisting
    def provenance(self, cell_id: str) -> dict:
        """A finished cell's provenance (versions, host, times, parameters, sweep)."""
        stem = self.latest().get(cell_id)
        if stem is None:
            raise FastGTError(f"cell {cell_id!r} has no result in {self.root}")
        files = self.files("cells")
        if stem not in files:  # compacted since latest() listed it
            raise FileNotFoundError(f"{self.root}/cells/{stem}.parquet")
        with self._parquet(files[stem]) as f:
            if stem.startswith(PART):  # its row's group only: a compacted file holds 10^5
                i = f.read(columns=["id"])["id"].to_pylist().index(cell_id)
                for g in range(f.num_row_groups):
                    rows = f.metadata.row_group(g).num_rows
                    if i < rows:
                        text = f.read_row_group(g, columns=["provenance"])["provenance"][i]
                        return json.loads(text.as_py() or "{}")
                    i -= rows
            meta = f.schema_arrow.metadata or {}  # first layout: the file's footer
        return json.loads(meta.get(META_KEY.encode(), b"{}"))

    # ---------------------------------------------------------------- clean-up

    def clean(self) -> int:
        """Delete what killed sweeps left: temporaries of dead writers, and trace files
        without their cells file (a flush killed between the two) whose writer is dead.
        Returns the number of files removed."""
        removed = 0
        for sub in SUBDIRS:
            for path in self._ls(sub):
                if self._left_over(path.rsplit("/", 1)[-1]):
                    removed += self._rm(path)
        cells = self.files("cells")
        for stem, path in self.files("traces").items():
            if stem not in cells and stem.startswith(PART) and self.stale(self._writer(path)):
                removed += self._rm(path)
        return removed

    def _left_over(self, base: str) -> bool:
        """A temporary of a dead writer (or of the first layout's sweeps, which named
        their temporaries ``.<id>.<random>.tmp``)."""
        if base.startswith(".tmp-"):
            return self._dead_writer(base)
        return base.startswith(".") and base.endswith(".tmp")

    def _dead_writer(self, base: str) -> bool:
        try:
            _, pid, start, tag, _ = base.split("-", 4)
        except ValueError:
            return True
        return tag == _host_tag(self.me["host"]) and str(process_start(int(pid))) != start

    def _writer(self, path: str) -> dict:
        with self._parquet(path) as f:
            meta = f.schema_arrow.metadata or {}
        return json.loads(meta.get(META_KEY.encode(), b"{}")).get("writer", {})

    @contextlib.contextmanager
    def _parquet(self, path: str):
        """The Parquet file at ``path``: opened by pyarrow itself on a local disk, through
        fsspec elsewhere. Arrow reads a Python file object with its I/O threads, one of
        which now and then aborted the interpreter at exit ("terminate called without an
        active exception", exit 134; apache/arrow#34314): fastgt status did, 1 run in 60-300."""
        if self.local:
            with pq.ParquetFile(path) as f:
                yield f
        else:
            with self.fs.open(path, "rb") as raw, pq.ParquetFile(raw) as f:
                yield f

    def _rm(self, path: str) -> int:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(path)
            return 1
        return 0

    # ---------------------------------------------------------------- reading

    def read(self, sub: str = "cells", columns=None, where=None):
        """The finished rows of DIR/<sub> as one DataFrame, schemas unified (no column
        dropped), the newest row of a cell written twice. ``columns``: those to read;
        ``where``: a filter pushed down to the files, {column: value or list of values}
        or a pyarrow.compute expression."""
        return to_pandas(self.table(sub, columns, where))

    @_relisting
    def table(self, sub: str = "cells", columns=None, where=None) -> pa.Table:
        """``read``'s rows as a pyarrow Table. Without a filter, a directory of few files is
        read file by file (pyarrow.parquet only: no pyarrow.dataset, which imports pandas);
        otherwise through pyarrow.dataset, the filter pushed down. A parameter's column is
        null where the cell ignores it (params.CONDITIONAL; files written before that
        rule hold its default there), so its condition's column is read along."""
        if isinstance(where, dict):  # a table as DIR's cells spell it (as typed, or not)
            where = {k: self._spellings(k, v) if k in PARAMS and PARAMS[k].tables else v
                     for k, v in where.items()}
        cols = None if columns is None else list(columns)
        extra = [] if cols is None else [
            o for o in dict.fromkeys([*(CONDITIONAL[k][0] for k in cols if k in CONDITIONAL),
                                      "numerics", "problem"]) if o not in cols]
        out, older = by_version(null_inapplicable(self._table(sub, None if cols is None else
                                                              [*cols, *extra], where)))
        if len(older) and sub == "cells" and not self._said_older:  # once per Store (a read)
            self._said_older = True
            older_left_out(self.root, len(older))
        return out.select(cols) if extra else out

    def _spellings(self, key: str, value) -> list:
        """The texts DIR's cells hold for the tables ``value`` names (a table, or a list of
        them; None: cells without one): stored as a grid file's canonical JSON or as the
        command line typed it, with or without their family's defaults spelled out, they
        match by their canonical form without those (the cells' identity: grid.identity).
        The texts held are read once per set of files (a load's cells and traces ask
        alike)."""
        value = value.tolist() if hasattr(value, "tolist") else value  # a numpy array
        many = isinstance(value, list | tuple | set) and not PARAMS[key].is_value(value)
        values = list(value) if many else [value]
        from .grid import without_defaults  # one table however its defaults are spelled

        wanted = {without_defaults(canonical_table(v)) for v in values if v is not None}
        files = self.files("cells")
        stems, held = self._held.get(key, ((), []))
        if stems != tuple(files):
            held = set()
            for path in files.values():
                with self._parquet(path) as f:
                    if key in f.schema_arrow.names:
                        held |= set(f.read(columns=[key])[key].unique().to_pylist())
            self._held[key] = tuple(files), held
        found = [h for h in held if h is not None and without_defaults(h) in wanted]
        return found + ([None] if None in values else [])

    def _table(self, sub: str, columns, where) -> pa.Table:
        files = self.files(sub)
        declared = CELL_SCHEMA if sub == "cells" else TRACE_SCHEMA
        if not files:
            return select(declared.empty_table(), columns, sub)
        index = self.index()
        latest = self.latest(index)
        clean = not _twice(index, latest) and (sub == "cells" or set(files) <= set(index))
        cols = None if columns is None else list(columns)
        if where is None and len(files) <= FEW_FILES:
            return self._by_file(files, declared, cols, None if clean else latest, sub)
        import pyarrow.dataset as pads

        fs = None if self.local else self.fs  # local: pyarrow's own files (_parquet)
        frags = list(pads.dataset(list(files.values()), filesystem=fs,
                                  format="parquet").get_fragments())
        schema = unified([declared] + [f.physical_schema for f in frags])
        check_columns(cols, schema, sub)
        expr = expression(where, schema, sub)
        try:
            if clean:
                return pads.dataset(list(files.values()), schema=schema, filesystem=fs,
                                    format="parquet").to_table(columns=cols, filter=expr)
            # a cell in two files, or traces without their cells: keep the rows of each
            # cell's newest file
            need = None if cols is None else list(dict.fromkeys([*cols, "id"]))
            parts = [newest(f.to_table(schema=schema, columns=need, filter=expr),
                            _stem(f.path), latest) for f in frags]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise FastGTError(f"where={where} cannot filter {sub}: {first}") from None
        out = pa.concat_tables(parts)
        return out if cols is None else out.select(cols)

    def _by_file(self, files: dict, declared: pa.Schema, cols, latest, sub: str) -> pa.Table:
        """Every file read whole (its ``cols``), schemas unified; ``latest``: keep only
        the rows of each cell's newest file (None: no cell is in two files)."""
        tables, schemas = [], []
        for stem, path in files.items():
            with self._parquet(path) as pf:
                have = pf.schema_arrow
                need = None if cols is None else [
                    c for c in dict.fromkeys([*cols, "id"]) if c in have.names]
                t = pf.read(columns=need)
            schemas.append(have)
            tables.append(t if latest is None else newest(t, stem, latest))
        schema = unified([declared, *schemas])
        check_columns(cols, schema, sub)
        if cols is not None:
            schema = pa.schema([schema.field(c) for c in cols])
        out = pa.concat_tables([t.replace_schema_metadata(None) for t in tables],
                               promote_options="permissive")
        return pa.Table.from_arrays(
            [out[f.name].cast(f.type) if f.name in out.column_names
             else pa.nulls(out.num_rows, f.type) for f in schema], schema=schema)

    # ---------------------------------------------------------------- compaction

    def compact(self) -> tuple[int, int]:
        """Rewrite the finished rows into few large files (COMPACT_ROWS trace rows each,
        rows of a cell written twice reduced to the newest), then delete the files they
        came from; returns (files before, files after) of cells/. Each output is written
        atomically before any input is deleted, traces before cells, named to sort just
        after its newest input, and inputs lose their traces before their cells, so a kill
        at any point leaves every cell readable exactly once, with its trace;
        another compaction running on DIR (a lock on local disks) makes this one a no-op.
        Rows of another fastgt's numbers (tables.by_version) go to DIR/older/, out of the
        loads' way and kept: ``moved`` counts the cells it moved."""
        self.moved = 0
        with self._lock("compact", wait=False) as got:
            cells_files, trace_files = self.files("cells"), self.files("traces")
            before = len(cells_files)
            index = self.index()
            latest = self.latest(index)
            tidy = (before <= 1 and all(s.startswith(PART) for s in index)
                    and not _twice(index, latest) and set(trace_files) <= set(index)
                    and not self._older(cells_files))
            if not got or tidy:
                return before, before
            for chunk in self._chunks(list(index), trace_files):
                self._compact_chunk(chunk, cells_files, trace_files, latest)
            for stem in set(trace_files) - set(cells_files):
                if stem.startswith(PART) and self.stale(self._writer(trace_files[stem])):
                    self._rm(trace_files[stem])  # a flush killed before its cells
            return before, len(self.files("cells"))

    def older_ids(self) -> set[str]:
        """The cells of DIR/cells whose rows hold another fastgt's numbers (by_version)."""
        return set(by_version(self._table("cells", ["id", "numerics", "problem"], None))[1]["id"]
                   .to_pylist())

    def _older(self, files: dict) -> bool:
        """Whether cells ``files`` hold rows of another fastgt's numbers (to move)."""
        for path in files.values():
            with self._parquet(path) as f:
                names = f.schema_arrow.names
                if len(by_version(f.read(columns=[c for c in ["numerics", "problem"]
                                                  if c in names]))[1]):
                    return True
        return False

    def _chunks(self, stems: list[str], trace_files: dict) -> list[list[str]]:
        chunks, rows = [[]], 0
        for stem in stems:
            n = 0
            if stem in trace_files:
                with self._parquet(trace_files[stem]) as f:
                    n = f.metadata.num_rows
            if chunks[-1] and rows + n > COMPACT_ROWS:
                chunks.append([])
                rows = 0
            chunks[-1].append(stem)
            rows += n
        return chunks

    def _compact_chunk(self, chunk, cells_files, trace_files, latest) -> None:
        # named after its newest input, and sorting after it ("z" after any hex digit):
        # while both exist, the output's rows are the newest
        name = f"{PART}{max(_age(s)[0] for s in chunk):019d}-z{secrets.token_hex(4)}"
        for sub, files in (("traces", trace_files), ("cells", cells_files)):
            tables, older = [], []
            for stem in chunk:
                if stem not in files:
                    continue
                with self._parquet(files[stem]) as f:
                    t, footer = f.read(), f.schema_arrow.metadata or {}
                t = newest(t, stem, latest).replace_schema_metadata(None)
                if sub == "cells" and not stem.startswith(PART):  # first layout: footer
                    t = _with_provenance(t, footer)
                # another fastgt's numbers (rows of another version, or written before
                # the column): to DIR/older, kept apart
                t, gone = by_version(t)
                tables.append(t)
                older.append(gone)
            if sub == "cells":
                self.moved += sum(len(t) for t in older)
            for folder, parts in ((f"older/{sub}", older), (sub, tables)):
                if parts and sum(len(t) for t in parts):
                    self._put(folder, name, pa.concat_tables(parts, promote_options="permissive"))
        for sub, files in (("traces", trace_files), ("cells", cells_files)):
            for stem in chunk:  # an input's cells outlive its traces: never a cell without
                if stem in files:
                    self._rm(files[stem])
                self._ids.pop(stem, None)


def _with_provenance(table: pa.Table, footer: dict) -> pa.Table:
    """A first-layout cell table with its file's footer's provenance as the provenance
    column."""
    meta = footer.get(META_KEY.encode(), b"{}").decode()
    col = pa.array([meta] * table.num_rows, type=pa.string())
    if "provenance" in table.column_names:
        return table.set_column(table.column_names.index("provenance"), "provenance", col)
    return table.append_column("provenance", col)


# --------------------------------------------------------------------------- reading


def exists(out) -> bool:
    """Whether the output directory (path or URI) exists."""
    fs, root = _filesystem(out)
    return fs.exists(root)


def sweeps_under(out) -> list[str]:
    """The sweep directories (with cells/) directly under ``out``, as ``out/name``, sorted;
    [] when there is none or ``out`` is not a directory."""
    fs, root = _filesystem(out)
    if not fs.isdir(root):
        return []
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)
                   if fs.isdir(f"{p.rstrip('/')}/cells"))
    return [f"{str(out).rstrip('/')}/{name}" for name in names]


def open_sweep(out, param: str = "DIR") -> Store:
    """The Store of an existing sweep directory (one with cells/), or a one-line FastGTError
    saying what ``out`` is instead: missing, a file, or a directory that is no sweep (listing
    the sweep directories directly under it, if any)."""
    fs, root = _filesystem(out)
    shown = f"{param}={str(out)!r}"
    if fs.isdir(f"{root}/cells"):
        return Store(out, create=False)
    if not fs.exists(root):
        raise FastGTError(f"{shown} does not exist: allowed a sweep directory (made by fastgt grid)")
    if not fs.isdir(root):
        folder = posixpath.dirname(root)
        hint = (f" (it is a result file of the sweep {posixpath.dirname(folder)!r})"
                if posixpath.basename(folder) in ("cells", "traces") else "")
        raise FastGTError(f"{shown} is a file, not a sweep directory{hint}: allowed a "
                          "directory made by fastgt grid")
    subs = sweeps_under(out)
    if subs:
        names = ", ".join(p.rsplit("/", 1)[-1] for p in subs)
        noun = "sweep" if len(subs) == 1 else "sweeps"
        raise FastGTError(f"{shown} is not a sweep directory but holds {len(subs)} {noun}: "
                          f"{names} (give one of them, e.g. {subs[0]})")
    raise FastGTError(f"{shown} is a directory without cells/, not a sweep directory: allowed "
                      "a directory made by fastgt grid")


def load(out, traces=True, columns=None, where=None) -> tuple:
    """(cells, traces) DataFrames of a sweep directory or URI; anything else (a file, a
    directory of sweeps) is a FastGTError saying what it is. Integer columns are pandas'
    nullable Int64 (a parameter some cells lack is <NA>).

    columns: the cells' columns to read (default all); where: keep only the matching cells,
    {column: value or list of values} or a pyarrow.compute expression, pushed down to the
    files (a question about a few cells reads little); traces: True (every column), a list
    of trace columns, or False (None returned). The traces are those of the cells kept."""
    store = open_sweep(out, "DIR")
    if where is None:
        cells = store.read("cells", columns)
        if traces is False:
            return cells, None
        return cells, store.read("traces", None if traces is True else traces)
    need = None if columns is None else list(dict.fromkeys(["id", *columns]))
    table = store.table("cells", need, where)
    cells = table.select(list(columns)) if columns is not None else table
    cells = to_pandas(cells)
    if traces is False:
        return cells, None
    tcols = None if traces is True else list(traces)
    if isinstance(where, dict) and set(where) <= {"id", *PARAMS}:
        twhere = where  # a cell's parameters are on its trace rows too: pushed down alike
    else:
        twhere = pc.field("id").isin(table["id"].combine_chunks().cast(pa.string()))
    return cells, store.read("traces", tcols, twhere)
