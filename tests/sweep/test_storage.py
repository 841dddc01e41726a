"""Storage: Parquet round trips (local and memory://), declared schema, provenance, claims,
cells written twice, compaction (and a kill during it), filtered loads, and directories of
the first layout (one file per cell)."""

import json
import socket
import subprocess
import sys
import uuid
import warnings

import numba
import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import fastgt
from fastgt import numerics
from fastgt.cli.results import compact as compact_cmd
from fastgt.procs import process_start
from fastgt.sweep import storage, tables
from fastgt.sweep.cellrun import run_cell, run_cells
from fastgt.sweep.grid import make_cell
from fastgt.sweep.storage import CELL_SCHEMA, TRACE_SCHEMA, Store, load

SMALL = {"topology": "ring", "n": 12, "self_weight": 0.25, "d": 3, "steps": 60,
         "record_every": 20, "seed": 4}


def _computed(params):
    cell = make_cell(params)
    row, trace, meta = run_cell(cell.params, threads=1)
    return cell, row, trace, meta


def _results(plist):
    """(id, params, row, trace, meta) of cells run in this process."""
    cells = [make_cell(p) for p in plist]
    return [(c.id, c.params, *res) for c, res in zip(cells, run_cells([c.params for c in cells]))]


def _visible(path):
    return sorted(p.name for p in path.iterdir() if not p.name.startswith("."))


def test_memory_round_trip_matches_a_direct_run():
    cell, row, trace, meta = _computed(SMALL)
    out = f"memory://rt-{uuid.uuid4().hex}"
    Store(out).write([(cell.id, cell.params, row, trace, meta)])
    cells, traces = load(out)

    W = fastgt.topology("ring", n=12, self_weight=0.25)
    ref = fastgt.run(algorithm="gt", topology=W, d=3, steps=60, record_every=20, seed=4)
    assert len(cells) == 1
    got = cells.iloc[0]
    assert got["id"] == cell.id and got["status"] == "ok" and got["threads"] == 1
    for k, v in cell.params.items():
        assert got[k] == v, k
    for m in fastgt.METRICS:
        np.testing.assert_array_equal(got[m], ref.summary[m])
        np.testing.assert_array_equal(got[f"final_{m}"], ref.summary[f"final_{m}"])
    eig = np.sort(np.linalg.eigvalsh(W.to_dense()))
    assert got["lambda2"] == pytest.approx(eig[-2], abs=1e-12)
    assert got["lambda_n"] == pytest.approx(eig[0], abs=1e-12)
    assert got["p"] == pytest.approx(1 - max(abs(eig[-2]), abs(eig[0])) ** 2, abs=1e-12)

    assert list(traces.columns) == TRACE_SCHEMA.names
    assert (traces["id"] == cell.id).all() and (traces["alpha"].isna()).all()
    cols = ["step", "comm_rounds", "grad_evals", *fastgt.METRICS]
    pd.testing.assert_frame_equal(traces[cols].reset_index(drop=True),
                                  ref.trace, check_dtype=False)


def test_one_part_per_write_with_provenance_per_cell_and_writer_per_file(tmp_path):
    results = _results([SMALL, {**SMALL, "seed": 5}, {**SMALL, "n": 8}])
    store = Store(tmp_path)
    sweep = {"workers": 3}
    name = store.write([(i, p, r, t, {**m, "sweep": sweep}) for i, p, r, t, m in results])
    assert _visible(tmp_path / "cells") == [f"{name}.parquet"] == _visible(tmp_path / "traces")
    for sub in ("cells", "traces"):
        md = pq.read_schema(tmp_path / sub / f"{name}.parquet").metadata
        assert json.loads(md[b"fastgt"])["writer"] == store.me  # one footer per file
    for cid, params, _, _, _ in results:
        prov = store.provenance(cid)
        assert prov["fastgt"] == fastgt.__version__
        assert prov["numba"] == numba.__version__ and prov["numpy"] == np.__version__
        assert prov["host"] == socket.gethostname() and "start_time" in prov
        assert prov["params"] == params and prov["sweep"] == sweep
        assert prov["run_config"]["n"] == params["n"]
    cells, traces = load(tmp_path)
    assert list(cells.id) == [r[0] for r in results]
    assert traces.groupby("id").size().to_dict() == {r[0]: 4 for r in results}
    with pytest.raises(fastgt.FastGTError, match="no result"):
        store.provenance("0" * 16)


def test_declared_schema_and_extra_columns_survive_reading(tmp_path):
    """A cell with a parameter outside the declared schema (e.g. written by a newer fastgt)
    keeps that column when read with the others, whichever part comes first: a schema
    that grows across parts loads with every column."""
    cell, row, trace, meta = _computed(SMALL)
    store = Store(tmp_path)
    store.write([("0000", {**cell.params, "k": 7}, row, trace, meta)])
    plain_name = store.write([("1111", cell.params, row, trace, meta)])
    store.write([("2222", {**cell.params, "k": 9, "tag": "x"}, row, trace, meta)])
    schema = pq.read_schema(tmp_path / "cells" / f"{plain_name}.parquet")
    assert schema.remove_metadata() == CELL_SCHEMA
    cells, traces = load(tmp_path)
    assert list(cells.columns[:len(CELL_SCHEMA)]) == CELL_SCHEMA.names
    assert cells.set_index("id")["k"].fillna(-1).to_dict() == {"0000": 7, "1111": -1, "2222": 9}
    assert cells.set_index("id")["tag"].to_dict()["2222"] == "x"
    assert set(traces.groupby("id")["k"].first().dropna()) == {7, 9}
    # plain pandas reads the directory too, ignoring temporaries and "_" files
    (tmp_path / "cells" / ".tmp-1-2-abcd-ab12").write_bytes(b"half a file")
    (tmp_path / "cells" / "_notes.parquet").write_bytes(b"not parquet")
    plain = pd.read_parquet(tmp_path / "cells")
    assert sorted(plain["id"]) == ["0000", "1111", "2222"]
    assert sorted(load(tmp_path)[0]["id"]) == ["0000", "1111", "2222"]
    store.compact()
    again, _ = load(tmp_path)
    assert again.set_index("id")["k"].fillna(-1).to_dict() == {"0000": 7, "1111": -1, "2222": 9}


def test_failed_cell_is_a_row_with_the_error(tmp_path):
    cell, row, trace, meta = _computed({"topology": "hypercube", "n": 12, "d": 2, "steps": 5})
    assert row["status"] == "failed" and trace is None
    assert "power of 2" in row["error"] and "\n" not in row["error"]
    Store(tmp_path).write([(cell.id, cell.params, row, trace, meta)])
    cells, traces = load(tmp_path)
    assert cells.loc[0, "status"] == "failed" and np.isnan(cells.loc[0, "loss_nodes"])
    assert traces.empty and list(traces.columns) == TRACE_SCHEMA.names
    assert "Traceback" in Store(tmp_path).provenance(cell.id)["traceback"]


def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    cell, row, trace, meta = _computed(SMALL)
    store = Store(tmp_path)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        store.write([(cell.id, cell.params, row, trace, meta)])
    assert list((tmp_path / "cells").iterdir()) == [] == list((tmp_path / "traces").iterdir())


def test_a_kill_between_traces_and_cells_loses_the_part_only(tmp_path, monkeypatch):
    """Traces written, cells not: the part's cells are not finished, their trace rows are
    not read; the clean-up removes them once their writer is dead, not before."""
    store = Store(tmp_path)
    (kept,) = _results([SMALL])
    store.write([kept])
    real = Store._put

    def traces_only(self, sub, name, table):
        if sub == "cells":
            raise KeyboardInterrupt
        real(self, sub, name, table)

    monkeypatch.setattr(Store, "_put", traces_only)
    with pytest.raises(KeyboardInterrupt):
        store.write(_results([{**SMALL, "seed": 9}]))
    monkeypatch.undo()
    assert len(_visible(tmp_path / "traces")) == 2 and len(_visible(tmp_path / "cells")) == 1
    cells, traces = load(tmp_path)
    assert list(cells.id) == [kept[0]] and set(traces.id) == {kept[0]}
    assert Store(tmp_path).clean() == 0  # its writer (this process) lives: kept
    orphan = [n for n in _visible(tmp_path / "traces") if n not in _visible(tmp_path / "cells")]
    path = tmp_path / "traces" / orphan[0]
    table = pq.read_table(path)
    dead = {"pid": _dead_pid(), "host": socket.gethostname(), "pid_start": "1"}
    pq.write_table(table.replace_schema_metadata({"fastgt": json.dumps({"writer": dead})}), path)
    assert Store(tmp_path).clean() == 1 and not path.exists()


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _forge_claim(store, token, ids, **info):
    with store.fs.open(f"{store.root}/claims/{token}", "wb") as f:
        f.write(json.dumps({**info, "ids": ids, "state": "running"}).encode())


@pytest.mark.parametrize("where", ["local", "memory"])
def test_claims_are_exclusive_per_cell(tmp_path, where):
    out = tmp_path if where == "local" else f"memory://claims-{uuid.uuid4().hex}"
    a, b = Store(out), Store(out)
    ta, got = a.claim(["c1", "c2"])
    assert got == ["c1", "c2"]
    tb, got = b.claim(["c2", "c3"])
    assert got == ["c3"]
    assert a.claim(["c1"]) == (None, [])
    assert b.claims()[ta]["ids"] == ["c1", "c2"] and b.claims()[tb]["state"] == "running"
    a.narrow(ta, ["c1"])
    assert b.claim(["c2"])[1] == ["c2"]
    a.release(ta)
    assert b.claim(["c1"])[1] == ["c1"]
    b.release_all()
    assert a.claims() == {}


def test_a_release_interrupted_leaves_the_claim_to_release_all(tmp_path, monkeypatch):
    """Ctrl-C inside release (a flush's, mid-sweep) before the claim's file is gone: the
    sweep's last release_all still removes it (a cell is never left claimed by a sweep
    that stopped)."""
    store = Store(tmp_path)
    token, _ = store.claim(["c1"])
    rm = store._rm

    def interrupted(path):
        monkeypatch.setattr(store, "_rm", rm)
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_rm", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.release(token)
    assert list(store.claims()) == [token]
    store.release_all()
    assert store.claims() == {}


def test_stale_claims_are_retaken_live_ones_are_not(tmp_path):
    store = Store(tmp_path)
    host = socket.gethostname()
    dead = _dead_pid()
    _forge_claim(store, "dead", ["d1", "d2"], pid=dead, host=host, pid_start="123")
    _forge_claim(store, "away", ["a1"], pid=dead, host=host + "-elsewhere", pid_start="123")
    (tmp_path / "claims" / "empty").write_bytes(b"")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        try:
            _forge_claim(store, "live", ["l1"], pid=live.pid, host=host,
                         pid_start=process_start(live.pid))
            _forge_claim(store, "reused", ["r1"], pid=live.pid, host=host, pid_start="1")
            assert store.claim(["l1", "r1"])[1] == ["r1"]  # same pid, other start: reused
        finally:
            live.kill()
    live.wait()
    assert store.claim(["d1", "d2", "empty", "l1"])[1] == ["d1", "d2", "empty", "l1"]
    assert store.claim(["a1"]) == (None, [])  # another host's claim is never judged from here
    assert set(store.claims()) == {"away", *store.held}


def test_stale_temporaries_are_removed(tmp_path):
    store = Store(tmp_path)
    tag = storage._host_tag(socket.gethostname())
    orphan = tmp_path / "cells" / f".tmp-{_dead_pid()}-1-{tag}-0123"
    mine = tmp_path / "traces" / f".tmp-{store.me['pid']}-{store.me['pid_start']}-{tag}-4567"
    away = tmp_path / "traces" / f".tmp-{_dead_pid()}-1-00000000-89ab"
    first_layout = tmp_path / "cells" / ".aaaa.0123.tmp"
    for path in (orphan, mine, away, first_layout):
        path.write_bytes(b"x")
    assert store.clean() == 2
    assert not orphan.exists() and not first_layout.exists() and mine.exists() and away.exists()


def test_integer_parameters_read_back_as_integers(tmp_path):
    """Cells of different families in one sweep: a torus has rows and cols, a ring has not;
    the columns stay integers (nullable Int64), and a seed beyond 2^53 keeps its digits."""
    store = Store(str(tmp_path))
    big = 2**62 + 1
    for params in ({"topology": "torus", "rows": 3, "cols": 4},
                   {"topology": "erdos_renyi", "n": 10, "prob": 0.5, "graph_seed": big}):
        cell = make_cell(params)
        store.write([(cell.id, cell.params, {"status": "ok"}, None, {})])
    cells, _ = load(str(tmp_path), traces=False)
    cells = cells.set_index("topology")
    for col in ("rows", "cols", "graph_seed", "n", "steps", "seed"):
        assert str(cells[col].dtype) == "Int64", col
    assert cells.loc["torus", "rows"] == 3 and pd.isna(cells.loc["erdos_renyi", "rows"])
    assert int(cells.loc["erdos_renyi", "graph_seed"]) == big


def test_loading_and_analysis_import_no_numba(tmp_path):
    """fastgt.load, fastgt.analysis, plots and report work without numba (nothing compiles)."""
    store = Store(str(tmp_path))
    cell = make_cell({"topology": "ring", "n": 8})
    store.write([(cell.id, cell.params, {"status": "ok", "loss_nodes": 1.0}, None, {})])
    code = ("import sys, fastgt\n"  # fastgt.analysis without importing it (a user trial)
            f"cells, _ = fastgt.load({str(tmp_path)!r}, traces=False)\n"
            "fastgt.analysis.aggregate(cells, values=['loss_nodes'])\n"
            "import fastgt.analysis.plots, fastgt.paper.report\n"
            "print(len(cells), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False"], out.stdout + out.stderr


# --------------------------------------------------------------------------- written twice


def _rewritten(tmp_path):
    """Six cells, then two of them written again with other results (as --force does)."""
    store = Store(tmp_path)
    first = _results([{**SMALL, "seed": s} for s in range(6)])
    store.write(first[:3])
    store.write(first[3:])
    again = [(i, p, {**r, "status": "failed", "loss_nodes": -1.0}, None, m)
             for i, p, r, _, m in first[1:5:3]]  # cells 1 and 4
    store.write(again)
    return store, first, {again[0][0], again[1][0]}


def test_the_newest_row_of_a_cell_written_twice_wins(tmp_path):
    store, first, redone = _rewritten(tmp_path)
    cells, traces = load(tmp_path)
    assert sorted(cells.id) == sorted(r[0] for r in first)  # each once
    assert set(cells[cells.status == "failed"].id) == redone
    assert (cells.set_index("id").loc[list(redone), "loss_nodes"] == -1.0).all()
    assert set(traces.id) == {r[0] for r in first} - redone  # the new rows have no trace
    ok, _ = load(tmp_path, where={"status": "ok"}, traces=False)  # the old rows said ok
    assert not set(ok.id) & redone and len(ok) == 4
    assert len(pd.read_parquet(tmp_path / "cells")) == 8  # plain pandas: until compacted
    assert store.compact() == (3, 1)
    assert len(pd.read_parquet(tmp_path / "cells")) == 6
    assert len(pd.read_parquet(tmp_path / "traces")) == 4 * 4
    after, after_traces = load(tmp_path)
    pd.testing.assert_frame_equal(after.sort_values("id").reset_index(drop=True),
                                  cells.sort_values("id").reset_index(drop=True))
    pd.testing.assert_frame_equal(
        after_traces.sort_values(["id", "step"]).reset_index(drop=True),
        traces.sort_values(["id", "step"]).reset_index(drop=True))
    assert store.compact() == (1, 1)  # nothing left to do


@pytest.mark.parametrize("stop_after", [1, 2, 3])
def test_a_kill_during_compaction_loses_and_duplicates_nothing(tmp_path, monkeypatch, stop_after):
    """Killed after the outputs were written and some inputs deleted: every cell reads
    exactly once, with its newest row and its own trace; the next compaction finishes."""
    store, _, _ = _rewritten(tmp_path)
    cells, traces = load(tmp_path)
    real, calls = Store._rm, []

    def dying(self, path):
        calls.append(path)
        if len(calls) > stop_after:
            raise KeyboardInterrupt
        return real(self, path)

    monkeypatch.setattr(Store, "_rm", dying)
    with pytest.raises(KeyboardInterrupt):
        store.compact()
    monkeypatch.undo()

    def same(a, b, keys):
        pd.testing.assert_frame_equal(a.sort_values(keys).reset_index(drop=True),
                                      b.sort_values(keys).reset_index(drop=True))

    mid_cells, mid_traces = load(tmp_path)
    same(mid_cells, cells, ["id"])
    same(mid_traces, traces, ["id", "step"])
    Store(tmp_path).compact()
    end_cells, end_traces = load(tmp_path)
    same(end_cells, cells, ["id"])
    same(end_traces, traces, ["id", "step"])
    assert len(_visible(tmp_path / "cells")) == 1 == len(_visible(tmp_path / "traces"))


@pytest.mark.parametrize("read", ["ids", "cells", "traces", "filtered"])
def test_reads_begin_again_when_a_compaction_replaces_their_files(tmp_path, monkeypatch, read):
    """Another process compacts DIR between a reader's listing and its reads (fastgt status,
    load or a new sweep beside a finishing one): the reader lists again and reads every
    row once, instead of a FileNotFoundError."""
    _rewritten(tmp_path)
    sub = "traces" if read == "traces" else "cells"
    where = {"seed": [1, 2, 3]} if read == "filtered" else None
    want = Store(tmp_path, create=False).read(sub, where=where)
    reader, real, listed = Store(tmp_path, create=False), Store.files, []

    def stale(self, sub="cells"):  # the reader's first listing outlives its files
        files = real(self, sub)
        if self is reader and not listed:
            listed.append(sub)
            Store(tmp_path, create=False).compact()
        return files

    monkeypatch.setattr(Store, "files", stale)
    if read == "ids":
        assert reader.ids() == set(want["id"])
    else:
        keys = ["id", "step"] if sub == "traces" else ["id"]
        got = reader.read(sub, where=where)
        pd.testing.assert_frame_equal(got.sort_values(keys).reset_index(drop=True),
                                      want.sort_values(keys).reset_index(drop=True))
    assert listed and len(_visible(tmp_path / "cells")) == 1  # it compacted under the read


def test_compact_takes_results_copied_without_their_claims(tmp_path):
    """cells/ and traces/ copied alone (status, load and grid take them): compact too."""
    import shutil

    _rewritten(tmp_path)
    shutil.rmtree(tmp_path / "claims")
    res = CliRunner().invoke(compact_cmd, [str(tmp_path)])
    assert res.exit_code == 0 and len(_visible(tmp_path / "cells")) == 1, res.output


# --------------------------------------------------------------------------- filtered loads


def test_filtered_loads_are_the_rows_of_a_full_load_and_a_pandas_filter(tmp_path):
    store = Store(tmp_path)
    plist = [{**SMALL, "seed": s, "stepsize": g} for s in range(4) for g in (0.01, 0.02)]
    results = _results(plist)
    store.write(results[:5])
    store.write(results[5:])
    cells, traces = load(tmp_path)
    picks = [({"seed": 2}, cells.seed == 2),
             ({"seed": [0, 3], "stepsize": 0.02}, cells.seed.isin([0, 3]) & (cells.stepsize == 0.02)),
             (pc.field("loss_nodes") < cells.loss_nodes.median(),
              cells.loss_nodes < cells.loss_nodes.median()),
             (pc.field("seed") == 99, cells.seed == 99)]  # none (a trial: a type error)
    for where, mask in picks:
        got, got_traces = load(tmp_path, where=where)
        want = cells[mask]
        pd.testing.assert_frame_equal(got.sort_values("id").reset_index(drop=True),
                                      want.sort_values("id").reset_index(drop=True))
        want_traces = traces[traces.id.isin(want.id)]
        pd.testing.assert_frame_equal(
            got_traces.sort_values(["id", "step"]).reset_index(drop=True),
            want_traces.sort_values(["id", "step"]).reset_index(drop=True))
    few, few_traces = load(tmp_path, columns=["seed", "loss_avg"], where={"seed": 1},
                           traces=["id", "step", "loss_avg"])
    assert list(few.columns) == ["seed", "loss_avg"] and len(few) == 2
    assert list(few_traces.columns) == ["id", "step", "loss_avg"] and len(few_traces) == 8
    for bad, says in (({"sede": 1}, "sede"), ("seed == 1", r"where='seed == 1' is invalid"),
                      ({"seed": "one"}, "where seed='one'")):
        with pytest.raises(fastgt.FastGTError, match=says):
            load(tmp_path, where=bad)


# --------------------------------------------------------------------------- first layout


def _first_layout(tmp_path, results):
    """A sweep directory as fastgt wrote it before parts: a file per cell and trace, named
    by the cell id, the provenance in each file's footer, claims per cell."""
    for sub in ("cells", "traces", "claims"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    for cid, params, row, trace, meta in results:
        footer = {"fastgt": json.dumps({**meta, "params": params})}
        if trace is not None:
            t = tables.trace_table([(cid, params, row, trace, meta)]).drop_columns(["numerics"])
            pq.write_table(t.replace_schema_metadata(footer),
                           tmp_path / "traces" / f"{cid}.parquet")
        c = tables.declared_table(tables.columns_of([{"id": cid, **params, **row}]), 1, CELL_SCHEMA)
        c = c.drop_columns(["provenance"]).replace_schema_metadata(footer)
        pq.write_table(c, tmp_path / "cells" / f"{cid}.parquet")


def test_first_layout_directories_are_read_kept_and_left_out(tmp_path):
    """A directory of the first layout (before parts) was written before the numerics
    column, by a fastgt whose numbers may differ from this one's: its files are read (ids,
    provenance), but its cells are left out of loads, with a warning, and a compaction
    moves them to DIR/older (kept, out of the loads' way)."""
    results = _results([{**SMALL, "seed": s} for s in range(3)])
    _first_layout(tmp_path, results[:2])
    store = Store(tmp_path)
    assert store.ids() == {results[0][0], results[1][0]} == store.older_ids()
    assert store.provenance(results[0][0])["params"] == results[0][1]
    with pytest.warns(fastgt.FastGTWarning, match=r": 2 cells computed by another fastgt "
                                                  r"\(another numerics version"):
        cells, traces = load(tmp_path)
    assert len(cells) == 0 and len(traces) == 0
    def reads():  # two stores, then one store's two reads (status --failed): said once
        for store_of_a_read in (Store(tmp_path), Store(tmp_path)):
            store_of_a_read.table("cells", ["id"])
        twice = Store(tmp_path)
        twice.table("cells", ["id", "status"])
        twice.table("cells", ["id", "error"])

    with pytest.warns(fastgt.FastGTWarning, match="another fastgt") as seen:
        reads()
    assert len(seen) == 3, [str(w.message) for w in seen]
    store.write(results[2:])
    with pytest.warns(fastgt.FastGTWarning, match=": 2 cells computed by another fastgt"):
        cells, traces = load(tmp_path)
    assert list(cells.id) == [results[2][0]] and len(traces) == 4
    compacted = CliRunner().invoke(compact_cmd, [str(tmp_path)])
    assert compacted.output.endswith(": 3 cell files -> 1; 2 cells of another fastgt's "
                                     "numbers moved to older/\n"), compacted.output
    assert store.older_ids() == set() and store.ids() == {results[2][0]}
    older = pq.read_table(tmp_path / "older" / "cells")
    assert sorted(older["id"].to_pylist()) == sorted(r[0] for r in results[:2])
    assert older["provenance"].null_count == 0  # the first layout's footers, as a column
    assert pq.read_table(tmp_path / "older" / "traces").num_rows == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cells, traces = load(tmp_path)
        assert list(cells.id) == [results[2][0]] and len(traces) == 4
        assert len(load(tmp_path, columns=[], traces=False)[0]) == 1  # (a KeyError once)


def test_a_change_of_one_problems_numbers_leaves_the_others_cells_alone(tmp_path, monkeypatch):
    """A problem whose numbers change alone takes the next version (numerics.PROBLEM_NUMERICS):
    its cells get new ids and its older rows are set apart, while the other problems' cells
    keep their ids and rows (a bump of the base version recomputed every sweep's cells)."""
    cells = [make_cell({"topology": "ring", "n": 8, "problem": p})
             for p in ("quadratic", "logistic")]
    trace = {"step": np.array([0, 10]), "loss_nodes": np.array([1.0, 0.5])}
    store = Store(tmp_path)
    store.write([(c.id, c.params, {"status": "ok", "loss_nodes": 0.5}, trace, {})
                 for c in cells])
    written = pq.read_table(tmp_path / "cells", columns=["problem", "numerics"]).to_pylist()
    assert sorted(map(tuple, (r.values() for r in written))) == [
        ("logistic", numerics.numerics_of("logistic")), ("quadratic", numerics.NUMERICS_VERSION)]
    assert store.older_ids() == set() and len(load(tmp_path)[1]) == 4
    monkeypatch.setitem(numerics.PROBLEM_NUMERICS, "logistic",
                        numerics.numerics_of("logistic") + 1)
    quadratic, logistic = cells
    assert make_cell(quadratic.params).id == quadratic.id
    assert make_cell(logistic.params).id != logistic.id
    assert Store(tmp_path).older_ids() == {logistic.id}
    with pytest.warns(fastgt.FastGTWarning, match=": 1 cell computed by another fastgt"):
        got, traces = load(tmp_path)
    assert list(got.id) == [quadratic.id] and set(traces.id) == {quadratic.id}


def test_status_reads_without_numba_or_pandas(tmp_path):
    """``fastgt status`` starts light: no numba, no pandas, no pyarrow.dataset (which
    imports pandas); ``fastgt compact`` says what it did."""
    _rewritten(tmp_path)
    compacted = CliRunner().invoke(compact_cmd, [str(tmp_path)])
    assert compacted.exit_code == 0 and "3 cell files -> 1" in compacted.output
    (old,) = _results([{**SMALL, "seed": 9}])  # and a row of another fastgt's numbers
    _first_layout(tmp_path, [(f"{old[0][:-1]}x", *old[1:])])
    code = ("import sys\nfrom fastgt.cli import main\n"
            f"sys.argv = ['fastgt', 'status', {str(tmp_path)!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
            "print(sorted(m for m in ('numba', 'pandas', 'pyarrow._dataset') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]", out.stdout + out.stderr
    assert "done      4 (ok 4, diverged 0)\nfailed    2" in out.stdout
    assert "1 cell computed by another fastgt" in out.stderr, out.stderr


def test_a_sweep_resumes_a_first_layout_directory(tmp_path, monkeypatch):
    """A sweep on a directory of the first layout, whose cells have the ids of numerics
    version 1, computes every cell anew, says so, and moves the old rows to DIR/older as it
    compacts; every row loaded is that of a direct run, without a warning."""
    from fastgt.sweep.executors import run_sweep

    plist = [{**SMALL, "seed": s} for s in range(3)]
    results = _results(plist)
    monkeypatch.setattr(numerics, "NUMERICS_VERSION", 1)
    old = [(make_cell(p).id, *r[1:]) for p, r in zip(plist, results)]
    monkeypatch.undo()
    assert not {r[0] for r in old} & {r[0] for r in results}
    _first_layout(tmp_path, old[:2])
    report = run_sweep([make_cell(p) for p in plist], str(tmp_path), workers=1, progress=False)
    assert report.status["ok"] == 3 and report.skipped == 0 and report.others == 0
    assert any("DIR held 2 cells computed by another fastgt" in n for n in report.notes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cells, traces = load(tmp_path)
    assert sorted(cells.id) == sorted(r[0] for r in results) and len(traces) == 12
    (part,) = _visible(tmp_path / "cells")  # the new rows in one part, the old apart
    assert part.startswith("part-") and len(_visible(tmp_path / "older" / "cells")) == 1
    for cid, _, row, _, _ in results:
        assert cells.set_index("id").loc[cid, "loss_nodes"] == row["loss_nodes"]


def test_a_rerun_with_nothing_to_do_compacts(tmp_path):
    """A killed sweep leaves parts; its rerun, finding every cell done, compacts them."""
    from fastgt.sweep.executors import run_sweep

    plist = [{**SMALL, "seed": s} for s in range(2)]
    store = Store(tmp_path)
    for result in _results(plist):
        store.write([result])
    assert len(_visible(tmp_path / "cells")) == 2
    report = run_sweep([make_cell(p) for p in plist], str(tmp_path), progress=False)
    assert report.skipped == 2 and sum(report.status.values()) == 0
    assert len(_visible(tmp_path / "cells")) == 1 == len(_visible(tmp_path / "traces"))
    assert len(load(tmp_path)[0]) == 2


def test_a_filter_that_cannot_apply_is_one_line(tmp_path):
    """Expressions naming no column, or comparing a column with a value of another type,
    are one-line FastGTErrors, not Arrow's schema dumps."""
    Store(tmp_path).write(_results([SMALL]))
    for where in (pc.field("nosuch") == 0, pc.field("alpha") == "x"):
        with pytest.raises(fastgt.FastGTError, match="cannot filter cells") as err:
            load(tmp_path, where=where)
        assert "\n" not in str(err.value)


def test_parameters_a_cell_holds_only_when_set_load_as_they_ran(tmp_path):
    """local_steps, allow_unstable and dtype are in a cell's parameters (and id) only when
    set. Results written without the column (cells that did not set them, from before the
    columns showed it) load with the value they ran with, and a filter on it finds them."""
    assert "local_steps" not in make_cell(SMALL).params
    out = tmp_path / "old"
    Store(out).write(_results([SMALL, {**SMALL, "local_steps": 2}]))  # columns null: old files
    assert pq.read_table(out / "cells").column("local_steps").null_count == 1
    cells = load(out, traces=False)[0].sort_values("local_steps")
    assert cells["local_steps"].tolist() == [1, 2] and str(cells["local_steps"].dtype) == "Int64"
    assert cells["dtype"].tolist() == ["float64"] * 2
    assert cells["allow_unstable"].tolist() == [False, False]
    for where, steps in (({"local_steps": 1}, [1]), ({"local_steps": [1, 2]}, [1, 2]),
                         ({"local_steps": 2}, [2]), ({"dtype": "float64"}, [1, 2])):
        got, traces = load(out, where=where)
        assert sorted(got["local_steps"]) == steps and set(traces["local_steps"]) == set(steps)


def test_a_table_valued_filter_matches_however_the_table_is_spelled(tmp_path):
    """topology_y is stored as a grid file's canonical JSON or as the command line typed
    it: a where= table (a dict, or JSON text in any key order and spacing) finds both."""
    store = Store(tmp_path)
    typed = '{"topology": "ring", "n": 12, "self_weight": 0.5}'  # as --param keeps it
    store.write(_results([{**SMALL, "topology_y": '{"n":12,"topology":"complete"}'},
                          {**SMALL, "topology_y": typed}]))
    for where, want in (({"topology": "complete", "n": 12}, "complete"),
                        ('{"topology": "complete", "n": 12}', "complete"),
                        ({"n": 12, "self_weight": 0.5, "topology": "ring"}, "ring"),
                        (typed, "ring"), ('{"self_weight":0.5,"n":12,"topology":"ring"}', "ring"),
                        ('{topology = "complete", n = 12}', "complete"),  # TOML text
                        ({"topology": "complete", "n": 12, "lazy": False}, "complete")):  # a default
        cells, _ = load(tmp_path, where={"topology_y": where}, traces=False)
        assert len(cells) == 1 and want in cells["topology_y"].iloc[0], where
    both = load(tmp_path, where={"topology_y": [{"topology": "complete", "n": 12}, typed]})[0]
    assert len(both) == 2
    store.write(_results([SMALL]))  # a cell without topology_y: None finds it, as before
    assert load(tmp_path, where={"topology_y": None})[0]["topology_y"].isna().tolist() == [True]
    assert len(load(tmp_path, where={"topology_y": np.array([typed, None])})[0]) == 2


def test_a_cell_that_ends_growing_is_said_in_its_row_and_the_report(tmp_path):
    """(A trial: fastgt.run warns of a run that ends growing, a sweep's workers kept it to
    themselves.) The cell stays ok; its growing column says why it may be diverging, and the
    sweep's report counts it."""
    from fastgt.sweep.executors import run_sweep

    grows = {"algorithm": "extra", "topology": "random_matching", "n": 16, "d": 10,
             "local_steps": 3, "steps": 200}
    report = run_sweep([make_cell(grows), make_cell(SMALL)], str(tmp_path), workers=1,
                       progress=False)
    assert report.status["ok"] == 2
    (note,) = [n for n in report.notes() if "grew" in n]
    assert note.startswith("  1 of the ok cells ended while loss_nodes grew")
    cells = load(tmp_path, traces=False)[0].set_index("algorithm")
    assert cells.loc["extra", "growing"].startswith("loss_nodes grew at each of the last 2 ")
    assert pd.isna(cells.loc["gt", "growing"])
