"""Sweep results on disk (a local path or any fsspec URI: s3://..., memory://...).

Layout of an output directory DIR::

    DIR/grid.toml               the spec of the last ``fastgt grid`` run on DIR
    DIR/cells/<id>.parquet      one row per cell: parameters, spectrum, plateaus, status, timings
    DIR/traces/<id>.parquet     the cell's trace rows (step, metrics) with its id and parameters
    DIR/claims/<id>             a cell being computed: {"pid", "host", ..., "state"} of the
                                sweep doing it, state "queued" or "running"

Every file is written under a temporary name starting with "." and renamed into place, so
readers (which skip names starting with "." or "_", as pyarrow does) never see a partial
file; the trace is written before the cell row, so a cell file means a finished cell.
Schemas are declared (:data:`CELL_SCHEMA`, :data:`TRACE_SCHEMA`); columns a file has beyond
them (e.g. parameters of a newer topology family) are appended, and :func:`load` unifies the
schemas of all files. The footer's key-value metadata ``fastgt`` holds the provenance (JSON):
versions, host, start time, the cell's full parameters and the sweep's settings.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import secrets
import socket
import time

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from ..errors import FastGTError
from ..metrics import METRICS, PROBLEM_COLUMNS
from ..params import PARAMS
from ..procs import process_start
from ..theory import THEORY_COLUMNS

_ARROW = {int: pa.int64(), float: pa.float64(), str: pa.string(), bool: pa.bool_()}
_PARAM_FIELDS = [pa.field(k, _ARROW[p.kind]) for k, p in PARAMS.items()]
_F64 = pa.float64()

#: declared columns of DIR/cells/*.parquet (extra columns of a file are appended)
CELL_SCHEMA = pa.schema(
    [pa.field("id", pa.string()), pa.field("status", pa.string()), *_PARAM_FIELDS]
    + [pa.field(k, _F64) for k in ("lambda2", "lambda_n", "p", "c", "p_eff")]
    + [pa.field(k, _F64) for k in PROBLEM_COLUMNS]
    + [pa.field(m, _F64) for m in METRICS]
    + [pa.field(f"final_{m}", _F64) for m in METRICS]
    + [pa.field(k, _F64) for k in THEORY_COLUMNS]
    + [pa.field("diverged_step", pa.int64()), pa.field("steps_done", pa.int64()),
       pa.field("wall_time", _F64), pa.field("loop_time", _F64), pa.field("steps_per_s", _F64),
       pa.field("threads", pa.int64()), pa.field("error", pa.string())])
#: declared columns of DIR/traces/*.parquet
TRACE_SCHEMA = pa.schema([pa.field("id", pa.string()), *_PARAM_FIELDS,
                          pa.field("step", pa.int64()), pa.field("comm_rounds", pa.int64()),
                          pa.field("grad_evals", pa.int64()),
                          *[pa.field(m, _F64) for m in METRICS]])
#: integer columns read back as pandas' nullable Int64: a parameter that only some cells
#: have (rows, graph_seed, ...) would otherwise come back as float64, and seeds beyond 2^53
#: would lose digits on the way
_NULLABLE = {pa.int64(): pd.Int64Dtype()}
META_KEY = "fastgt"
SUBDIRS = ("cells", "traces", "claims")


def _filesystem(out):
    import fsspec

    fs, root = fsspec.core.url_to_fs(str(out))
    return fs, root.rstrip("/") or "/"


def _visible(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".parquet") and not base.startswith((".", "_"))


class Store:
    """One output directory: atomic result writes, claims for concurrent sweeps, resume."""

    def __init__(self, out, create: bool = True):
        self.fs, self.root = _filesystem(out)
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                                else (self.fs.protocol,))
        for sub in SUBDIRS if create else ():
            self.fs.makedirs(f"{self.root}/{sub}", exist_ok=True)
        self.held: set[str] = set()
        self.me = {"pid": os.getpid(), "host": socket.gethostname(),
                   "pid_start": process_start(os.getpid())}

    def url(self, sub: str) -> str:
        """DIR/<sub> as a URI the workers can open (the protocol kept)."""
        return self.fs.unstrip_protocol(f"{self.root}/{sub}")

    def path(self, sub: str, cell_id: str) -> str:
        return f"{self.root}/{sub}/{cell_id}" + ("" if sub == "claims" else ".parquet")

    # ---------------------------------------------------------------- results

    def ids(self, sub: str = "cells") -> set[str]:
        """Ids of the finished cells (files in place, temporaries ignored)."""
        return {n.rsplit("/", 1)[-1][:-8] for n in self._ls(sub) if _visible(n)}

    def exists(self, cell_id: str) -> bool:
        return self.fs.exists(self.path("cells", cell_id))

    def write(self, cell_id: str, params: dict, row: dict, trace: pd.DataFrame | None,
              meta: dict) -> None:
        """Write the trace (if any), then the cell row, each atomically."""
        meta = {**meta, "params": params}
        if trace is not None:
            cols = {"id": [cell_id] * len(trace),
                    **{k: [v] * len(trace) for k, v in params.items()},
                    **{c: trace[c].to_numpy() for c in trace.columns}}
            self._put("traces", cell_id, _table(cols, len(trace), TRACE_SCHEMA, meta))
        cols = {k: [v] for k, v in {"id": cell_id, **params, **row}.items()}
        self._put("cells", cell_id, _table(cols, 1, CELL_SCHEMA, meta))

    def _put(self, sub: str, cell_id: str, table: pa.Table) -> None:
        self._replace(self.path(sub, cell_id), cell_id, lambda f: pq.write_table(table, f))

    def _replace(self, path: str, name: str, write) -> None:
        """Create or replace ``path`` atomically: ``write(file)`` fills a temporary
        ``.<name>.<random>.tmp`` beside it, which is then renamed into place."""
        tmp = f"{path.rsplit('/', 1)[0]}/.{name}.{secrets.token_hex(4)}.tmp"
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
        self._replace(f"{self.root}/{name}", name, lambda f: f.write(text.encode()))

    def get_text(self, name: str) -> str | None:
        try:
            return self.fs.cat_file(f"{self.root}/{name}").decode()
        except FileNotFoundError:
            return None

    def provenance(self, cell_id: str) -> dict:
        """The footer metadata of a cell file (versions, host, times, parameters, sweep)."""
        with self.fs.open(self.path("cells", cell_id), "rb") as f:
            meta = pq.read_schema(f).metadata or {}
        return json.loads(meta.get(META_KEY.encode(), b"{}"))

    def remove_stale_temporaries(self) -> int:
        """Delete temporaries of cells nobody computes any more (left by a killed sweep)."""
        removed = 0
        for sub in SUBDIRS:
            for name in self._ls(sub):
                base = name.rsplit("/", 1)[-1]
                if not (base.startswith(".") and base.endswith(".tmp")):
                    continue
                claim = self.read_claim(base[1:].split(".", 1)[0])
                if claim is None or self.stale(claim):
                    with contextlib.suppress(FileNotFoundError):
                        self.fs.rm(name)
                        removed += 1
        return removed

    def _ls(self, sub: str) -> list[str]:
        try:
            return self.fs.ls(f"{self.root}/{sub}", detail=False)
        except FileNotFoundError:
            return []

    def read(self, sub: str = "cells", columns=None) -> pd.DataFrame:
        """All finished files of DIR/<sub> as one DataFrame, schemas unified (none dropped)."""
        files = sorted(n for n in self._ls(sub) if _visible(n))
        declared = CELL_SCHEMA if sub == "cells" else TRACE_SCHEMA
        if not files:
            return declared.empty_table().to_pandas(types_mapper=_NULLABLE.get)
        frags = pads.dataset(files, filesystem=self.fs, format="parquet").get_fragments()
        schema = pa.unify_schemas([declared] + [f.physical_schema for f in frags],
                                  promote_options="permissive")
        missing = [c for c in columns or () if c not in schema.names]
        if missing:
            raise FastGTError(f"column {missing[0]!r} is not in {sub}: allowed "
                              f"{', '.join(schema.names)}")
        table = pads.dataset(files, schema=schema.remove_metadata(), filesystem=self.fs,
                             format="parquet").to_table(columns=columns)
        return table.to_pandas(types_mapper=_NULLABLE.get)

    # ---------------------------------------------------------------- claims

    def claim(self, cell_id: str, state: str = "running") -> bool:
        """Take the cell for this process, its claim saying ``state`` ("queued" or
        "running"); False if a live sweep holds it.

        A claim is created exclusively (O_EXCL on local disks). A claim of a dead process on
        this host is stale and taken over, under a lock so that two reruns cannot both win.
        """
        path = self.path("claims", cell_id)
        payload = self._claim_payload(state)
        if self._create(path, payload):
            self.held.add(cell_id)
            return True
        info = self.read_claim(cell_id)
        if info is not None and not self.stale(info):
            return False
        with self._reclaim_lock():
            if self.read_claim(cell_id) != info:
                return False
            if info is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.fs.rm(path)
            if self._create(path, payload):
                self.held.add(cell_id)
                return True
        return False

    def mark(self, cell_id: str, state: str) -> None:
        """Change the state of a claim this process holds (atomically: readers see the old
        claim or the new one)."""
        if cell_id in self.held:
            payload = self._claim_payload(state)
            self._replace(self.path("claims", cell_id), cell_id, lambda f: f.write(payload))

    def _claim_payload(self, state: str) -> bytes:
        return json.dumps({**self.me, "time": time.time(), "state": state}).encode()

    def release(self, cell_id: str) -> None:
        if cell_id in self.held:
            self.held.discard(cell_id)
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self.path("claims", cell_id))

    def release_all(self) -> None:
        for cell_id in list(self.held):
            self.release(cell_id)

    def read_claim(self, cell_id: str, retry: bool = True) -> dict | None:
        """The claim's content; None if there is no claim; {} if unreadable (a crash between
        creating and filling it: re-read once after a pause, the writer may be mid-way)."""
        try:
            info = json.loads(self.fs.cat_file(self.path("claims", cell_id)) or b"null")
        except FileNotFoundError:
            return None
        except ValueError:
            info = None
        if isinstance(info, dict):
            return info
        if retry:
            time.sleep(0.2)
            return self.read_claim(cell_id, retry=False)
        return {}

    def stale(self, info: dict) -> bool:
        """A claim whose process is gone: same host, and its pid is dead or reused."""
        if not info:
            return True
        return info.get("host") == self.me["host"] and (
            process_start(info.get("pid", -1)) != info.get("pid_start"))

    def claims(self) -> dict[str, dict]:
        """Every claim: id -> content."""
        out = {}
        for name in self._ls("claims"):
            base = name.rsplit("/", 1)[-1]
            if not base.startswith("."):
                out[base] = self.read_claim(base) or {}
        return out

    def _create(self, path: str, payload: bytes) -> bool:
        try:
            with self.fs.open(path, "xb") as f:
                f.write(payload)
            return True
        except FileExistsError:
            return False
        except (ValueError, NotImplementedError):  # no exclusive create: write, then check
            if self.fs.exists(path):
                return False
            with self.fs.open(path, "wb") as f:
                f.write(payload)
            time.sleep(0.5)
            return self.fs.cat_file(path) == payload

    @contextlib.contextmanager
    def _reclaim_lock(self):
        if not self.local:
            yield
            return
        import fcntl

        with open(f"{self.root}/claims/.lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def _table(cols: dict, nrows: int, declared: pa.Schema, meta: dict) -> pa.Table:
    """Declared columns in order (missing ones null), then any extra columns."""
    arrays, fields = [], []
    for f in declared:
        vals = cols.get(f.name)
        arrays.append(pa.array([None] * nrows if vals is None else vals, type=f.type))
        fields.append(f)
    for name in sorted(set(cols) - set(declared.names)):
        arr = pa.array(cols[name])
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    schema = pa.schema(fields, metadata={META_KEY: json.dumps(meta, default=str)})
    return pa.Table.from_arrays(arrays, schema=schema)


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
        raise FastGTError(f"{shown} is not a sweep directory but holds {len(subs)} sweeps: "
                          f"{names} (give one of them, e.g. {subs[0]})")
    raise FastGTError(f"{shown} is a directory without cells/, not a sweep directory: allowed "
                      "a directory made by fastgt grid")


def load(out, traces: bool = True) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(cells, traces) DataFrames of a sweep directory or URI (traces None if not wanted);
    anything else (a file, a directory of sweeps) is a FastGTError saying what it is.
    Integer columns are pandas' nullable Int64 (a parameter some cells lack is <NA>)."""
    store = open_sweep(out, "out")
    return store.read("cells"), (store.read("traces") if traces else None)
