"""Storage: Parquet round trips (local and memory://), declared schema, provenance, claims."""

import json
import socket
import subprocess
import sys
import uuid

import numba
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import fastgt
from fastgt.procs import process_start
from fastgt.sweep.cellrun import run_cell
from fastgt.sweep.grid import make_cell
from fastgt.sweep.storage import CELL_SCHEMA, TRACE_SCHEMA, Store, load

SMALL = {"topology": "ring", "n": 12, "self_weight": 0.25, "d": 3, "steps": 60,
         "record_every": 20, "seed": 4}


def _computed(params):
    cell = make_cell(params)
    row, trace, meta = run_cell(cell.params, threads=1)
    return cell, row, trace, meta


def test_memory_round_trip_matches_a_direct_run():
    cell, row, trace, meta = _computed(SMALL)
    out = f"memory://rt-{uuid.uuid4().hex}"
    Store(out).write(cell.id, cell.params, row, trace, meta)
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


def test_provenance_in_the_footer(tmp_path):
    cell, row, trace, meta = _computed(SMALL)
    store = Store(tmp_path)
    store.write(cell.id, cell.params, row, trace, {**meta, "sweep": {"workers": 3}})
    for sub in ("cells", "traces"):
        md = pq.read_schema(tmp_path / sub / f"{cell.id}.parquet").metadata
        prov = json.loads(md[b"fastgt"])
        assert prov["fastgt"] == fastgt.__version__
        assert prov["numba"] == numba.__version__ and prov["numpy"] == np.__version__
        assert prov["host"] == socket.gethostname()
        assert prov["params"] == cell.params and prov["sweep"] == {"workers": 3}
        assert prov["run_config"]["n"] == 12 and "start_time" in prov
    assert store.provenance(cell.id)["params"] == cell.params


def test_declared_schema_and_extra_columns_survive_reading(tmp_path):
    """A cell with a parameter outside the declared schema (e.g. written by a newer fastgt)
    keeps that column when read with the others, whichever file comes first."""
    cell, row, trace, meta = _computed(SMALL)
    store = Store(tmp_path)
    for cid, extra in (("0000", {"k": 7}), ("1111", {}), ("2222", {"k": 9, "tag": "x"})):
        store.write(cid, {**cell.params, **extra}, row, trace, meta)
    schema = pq.read_schema(tmp_path / "cells" / "1111.parquet")
    assert schema.remove_metadata() == CELL_SCHEMA
    cells, traces = load(tmp_path)
    assert list(cells.columns[:len(CELL_SCHEMA)]) == CELL_SCHEMA.names
    assert cells.set_index("id")["k"].fillna(-1).to_dict() == {"0000": 7, "1111": -1, "2222": 9}
    assert cells.set_index("id")["tag"].to_dict()["2222"] == "x"
    assert set(traces.groupby("id")["k"].first().dropna()) == {7, 9}
    # plain pandas reads the directory too, ignoring temporaries and "_" files
    (tmp_path / "cells" / ".0000.ab12.tmp").write_bytes(b"half a file")
    (tmp_path / "cells" / "_notes.parquet").write_bytes(b"not parquet")
    plain = pd.read_parquet(tmp_path / "cells")
    assert sorted(plain["id"]) == ["0000", "1111", "2222"]
    assert sorted(load(tmp_path)[0]["id"]) == ["0000", "1111", "2222"]


def test_failed_cell_is_a_row_with_the_error(tmp_path):
    cell, row, trace, meta = _computed({"topology": "hypercube", "n": 12, "d": 2, "steps": 5})
    assert row["status"] == "failed" and trace is None
    assert "power of 2" in row["error"] and "\n" not in row["error"]
    Store(tmp_path).write(cell.id, cell.params, row, trace, meta)
    cells, traces = load(tmp_path)
    assert cells.loc[0, "status"] == "failed" and np.isnan(cells.loc[0, "loss_nodes"])
    assert traces.empty and list(traces.columns) == TRACE_SCHEMA.names


def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    cell, row, trace, meta = _computed(SMALL)
    store = Store(tmp_path)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError):
        store.write(cell.id, cell.params, row, trace, meta)
    assert list((tmp_path / "cells").iterdir()) == [] == list((tmp_path / "traces").iterdir())


def _forge_claim(store, cell_id, **info):
    with store.fs.open(store.path("claims", cell_id), "wb") as f:
        f.write(json.dumps(info).encode())


@pytest.mark.parametrize("where", ["local", "memory"])
def test_claims_are_exclusive(tmp_path, where):
    out = tmp_path if where == "local" else f"memory://claims-{uuid.uuid4().hex}"
    a, b = Store(out), Store(out)
    assert a.claim("c1") and not b.claim("c1") and not a.claim("c1")
    a.release("c1")
    assert b.claim("c1")
    b.release_all()
    assert a.claims() == {}


def test_stale_claims_are_retaken_live_ones_are_not(tmp_path):
    store = Store(tmp_path)
    host = socket.gethostname()
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(done.stdout)
    _forge_claim(store, "dead", pid=dead, host=host, pid_start="123")
    _forge_claim(store, "away", pid=dead, host=host + "-elsewhere", pid_start="123")
    _forge_claim(store, "empty")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        try:
            _forge_claim(store, "live", pid=live.pid, host=host, pid_start=process_start(live.pid))
            _forge_claim(store, "reused", pid=live.pid, host=host, pid_start="1")
            assert not store.claim("live")
            assert store.claim("reused")  # same pid, other start time: pid was reused
        finally:
            live.kill()
    live.wait()
    assert store.claim("dead") and store.claim("empty") and store.claim("live")
    assert not store.claim("away")  # another host's claim is never judged from here
    assert json.loads((tmp_path / "claims" / "dead").read_text())["pid"] == store.me["pid"]


def test_stale_temporaries_are_removed(tmp_path):
    store = Store(tmp_path)
    orphan = tmp_path / "cells" / ".aaaa.0123.tmp"
    busy = tmp_path / "traces" / ".bbbb.4567.tmp"
    orphan.write_bytes(b"x")
    busy.write_bytes(b"x")
    assert store.claim("bbbb")
    assert store.remove_stale_temporaries() == 1
    assert not orphan.exists() and busy.exists()


def test_integer_parameters_read_back_as_integers(tmp_path):
    """Cells of different families in one sweep: a torus has rows and cols, a ring has not;
    the columns stay integers (nullable Int64), and a seed beyond 2^53 keeps its digits."""
    store = Store(str(tmp_path))
    big = 2**62 + 1
    for params in ({"topology": "torus", "rows": 3, "cols": 4},
                   {"topology": "erdos_renyi", "n": 10, "prob": 0.5, "graph_seed": big}):
        cell = make_cell(params)
        store.write(cell.id, cell.params, {"status": "ok"}, None, {})
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
    store.write(cell.id, cell.params, {"status": "ok", "loss_nodes": 1.0}, None, {})
    code = ("import sys, fastgt, fastgt.analysis, fastgt.analysis.plots, fastgt.paper.report\n"
            f"cells, _ = fastgt.load({str(tmp_path)!r}, traces=False)\n"
            "fastgt.analysis.aggregate(cells, values=['loss_nodes'])\n"
            "print(len(cells), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False"], out.stdout + out.stderr
