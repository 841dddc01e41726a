"""The command line as a new user meets it: outputs checked before any work, one-line errors
with the documented exit codes, every option described, files as topologies.

In-process (click's CliRunner) unless the point is the process itself."""

import inspect
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import fastgt
from fastgt.cli import main
from fastgt.sweep.storage import Store

pytestmark = pytest.mark.usefixtures("one_numba_thread")

TINY = ["--n", "8", "--d", "3", "--steps", "20", "--record-every", "5", "--quiet"]
SPEC = '[run]\ntopology = "ring"\nn = 8\nd = 3\nsteps = 20\nrecord_every = 5\n'


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error(res, code: int, *fragments: str) -> str:
    """The result has exit code ``code`` and exactly one error line, holding ``fragments``."""
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, res.output
    for f in fragments:
        assert f in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def no_simulation(monkeypatch):
    """Any simulation started fails the test: errors must come before the work."""
    def refuse(*args, **kwargs):
        raise AssertionError("a simulation started")

    monkeypatch.setattr("fastgt.runner.run_batch", refuse)
    monkeypatch.setattr("fastgt.sweep.executors.run_sweep", refuse)
    monkeypatch.setattr("fastgt.paper.report.report", refuse)


@pytest.fixture
def sweep(tmp_path):
    """A finished sweep directory of 2 cells (written directly, no worker processes)."""
    from fastgt.sweep.grid import parse_spec

    out = tmp_path / "sweeps" / "one"
    store = Store(str(out))
    for cell in parse_spec(SPEC + "[[grid]]\nseed = [0, 1]\n").cells():
        steps = np.arange(0, 21, 5)
        trace = pd.DataFrame({"step": steps, **{m: 1.0 + steps for m in fastgt.METRICS}})
        store.write([(cell.id, cell.params,
                      {"status": "ok", **{m: 1.0 for m in fastgt.METRICS}}, trace, {})])
    return out


# ------------------------------------------------------------------ outputs before work

def _through_a_file(tmp_path):
    f = tmp_path / "plain.txt"
    f.write_text("x")
    return f


@pytest.mark.parametrize("place,fragment", [
    (lambda tmp: tmp / "missing" / "t.parquet", "does not exist"),
    (lambda tmp: _through_a_file(tmp) / "t.parquet", "is not a directory"),
    (lambda tmp: tmp, "is a directory"),
    (lambda tmp: Path("/proc/t.parquet"), "cannot be written"),
])
def test_run_out_is_checked_before_simulating(tmp_path, no_simulation, place, fragment):
    one_error(invoke("run", *TINY, "--out", place(tmp_path)), 2, "--out", fragment)


@pytest.mark.parametrize("args,fragment", [
    (["plot", "{sweep}", "--x", "seed", "--out", "{tmp}/missing/p.png"], "does not exist"),
    (["plot", "{sweep}", "--x", "seed", "--out", "/proc/p.png"], "cannot be written"),
    (["plot", "{sweep}", "--x", "seed", "-o", "{tmp}/p.gif"], "unknown format .gif: allowed .png"),
    (["plot", "{sweep}", "--x", "seed", "-o", "{tmp}/p"], "unknown format (no suffix)"),
    (["report", "{sweep}", "--out", "/proc/r"], "cannot be written"),
    (["report", "{sweep}", "--out", "{file}/r"], "goes through the file"),
    (["grid", "{spec}", "--out", "/proc/g"], "cannot be written"),
    (["grid", "{spec}", "--out", "{file}/g"], "goes through the file"),
    (["grid", "{spec}", "--out", "{file}"], "is a file: allowed a directory"),
])
def test_outputs_are_checked_before_any_work(tmp_path, sweep, no_simulation, args, fragment):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    names = {"sweep": sweep, "tmp": tmp_path, "spec": spec, "file": _through_a_file(tmp_path)}
    res = invoke(*[a.format(**names) for a in args])
    one_error(res, 2, "--out", fragment)
    assert not list(tmp_path.glob("**/.fastgt-probe-*"))  # the probe leaves nothing behind


def test_run_out_to_a_missing_directory_fails_fast_in_a_fresh_process(tmp_path):
    """The real process, with an empty compile cache: exit 2 within 2 s, nothing compiled
    (a simulation would first compile for 10-30 s and fill the cache)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, FASTGT_CACHE_DIR=str(cache))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from fastgt.cli import main; main()", "run",
                           "--out", str(tmp_path / "missing" / "t.parquet")],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    elapsed = time.perf_counter() - t
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "--out" in proc.stderr
    assert "compiling" not in proc.stderr
    assert not any(cache.rglob("*.nbi")) and not any(cache.rglob("fastgt-warm*"))
    assert elapsed < 2.0, elapsed


def test_run_writes_its_trace_before_a_closed_pipe_ends_the_output(tmp_path):
    """`fastgt run --out F | head -0`: the summary's pipe is closed before the run ends;
    the trace was written before the summary, and the exit is quiet (1, click's
    convention for a closed pipe: fastgt --help)."""
    out = tmp_path / "t.parquet"
    proc = subprocess.Popen([sys.executable, "-c", "from fastgt.cli import main; main()", "run",
                             *TINY, "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # as head does, long before the run's first line
    err = [line for line in proc.stderr.read().splitlines()
           if not line.startswith("fastgt: compiling")]  # a cold cache says it compiles
    assert proc.wait(timeout=120) == 1 and err == [], err
    assert len(pd.read_parquet(out)) == 5  # records at steps 0, 5, ..., 20


def test_run_out_csv_by_suffix_and_to_standard_output(tmp_path):
    """--out t.csv writes CSV, --out - CSV to standard output with the summary on standard
    error (a real process: the two streams apart), and an unknown suffix is refused before
    the run; each trace equal to the Python API's."""
    ref = fastgt.run(topology="ring", n=8, d=3, steps=20, record_every=5).trace
    res = invoke("run", *TINY, "--out", tmp_path / "t.csv")
    assert res.exit_code == 0, res.output
    exact = {"check_dtype": False, "check_exact": True}
    back = pd.read_csv(tmp_path / "t.csv", engine="pyarrow")
    pd.testing.assert_frame_equal(back, ref, **exact)
    proc = subprocess.run([sys.executable, "-c", "from fastgt.cli import main; main()", "run",
                           *TINY, "--out", "-"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    from io import StringIO

    back = pd.read_csv(StringIO(proc.stdout), engine="pyarrow")
    pd.testing.assert_frame_equal(back, ref, **exact)
    assert "loss_nodes" in proc.stderr and not (tmp_path / "-").exists()
    one_error(invoke("run", *TINY, "--out", tmp_path / "t.txt"), 2,
              "--out", "unknown format .txt: allowed .parquet, .pq, .csv (no suffix: parquet)")
    for bare in ("bare", "trace_gamma0.01"):  # no suffix, or a number's: Parquet
        assert invoke("run", *TINY, "--out", tmp_path / bare).exit_code == 0
        assert len(pd.read_parquet(tmp_path / bare)) == 5


def test_a_diverged_run_with_a_closed_pipe_still_exits_3_and_says_so():
    """`fastgt run ... | head -0` of a run that diverges: its exit code and message are the
    divergence's (they were lost to the closed pipe's exit 1 in half the runs), and so with
    the trace on standard output (--out -: the summary goes to standard error then)."""
    for extra in ([], ["--out", "-"]):
        proc = subprocess.Popen([sys.executable, "-c", "from fastgt.cli import main; main()",
                                 "run", *TINY[:4], "--steps", "500", "--record-every", "1",
                                 "--stepsize", "10", "--quiet", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdout.close()
        err = [line for line in proc.stderr.read().splitlines()
               if not line.startswith("fastgt: compiling")]
        assert proc.wait(timeout=120) == 3, err
        errors = [line for line in err if line.startswith("Error:")]
        assert len(errors) == 1 and "diverged at step" in errors[0], err
        assert not any("Traceback" in line for line in err), err


def test_run_summary_leaves_out_metrics_that_do_not_apply():
    res = invoke("run", *TINY, "--algorithm", "dsgd")
    table = dict(r.split(None, 1) for r in res.output.splitlines())
    assert res.exit_code == 0 and table["d"] == "3" and "loss_nodes" in table
    assert not {"tracking", "final_tracking", "accuracy", "final_accuracy"} & set(table)
    assert "tracking" in dict(r.split(None, 1) for r in invoke("run", *TINY).output.splitlines())
    # what the unprefixed metrics are, said under them
    note = "note: the metrics without final_ are plateaus, the mean of the records in the " \
        "last half of the run"
    assert res.output.splitlines()[-1] == note + " (`fastgt theory`: the exact floors, and " \
        "the steps a plateau needs)"
    logistic = invoke("run", "--n", "4", "--steps", "4", "--problem", "logistic", "--samples",
                      "5", "--d", "3", "--noise", "full", "--quiet")  # no theory covers it
    assert logistic.output.splitlines()[-1] == note, logistic.output


def test_out_through_a_link_or_to_a_pipe_keeps_them(tmp_path):
    """--out names a symbolic link: its target is written, the link stays; a pipe: written
    through, and still a pipe (the writer was given the name and replaced such files)."""
    import stat
    import threading

    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "t.parquet"
    target.write_bytes(b"old")
    link = tmp_path / "link.parquet"
    link.symlink_to(target)
    assert invoke("run", *TINY, "--out", link).exit_code == 0
    assert link.is_symlink() and len(pd.read_parquet(target)) == 5
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    res = invoke("run", *TINY, "--out", fifo)
    reader.join(timeout=60)
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and got[0][:4] == b"PAR1"


def test_a_full_disk_keeps_the_trace_and_says_where(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    res = invoke("run", *TINY, "--out", "/dev/full")
    line = one_error(res, 1, "--out '/dev/full' could not be written", "No space left",
                     "saved to")
    spare = Path(re.search(r"saved to '([^']+)'", line).group(1))
    try:
        kept = pd.read_parquet(spare)
    finally:
        spare.unlink()
    ref = fastgt.run(topology="ring", n=8, d=3, steps=20, record_every=5)
    pd.testing.assert_frame_equal(kept, ref.trace)
    assert "loss_nodes" in res.output  # the summary was printed before the write


def test_run_out_replaces_a_file_atomically(tmp_path):
    out = tmp_path / "t.parquet"
    out.write_text("old")
    res = invoke("run", *TINY, "--out", out)
    assert res.exit_code == 0, res.output
    assert len(pd.read_parquet(out)) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]  # no temporary left
    import json

    import pyarrow.parquet as pq

    about = json.loads(pq.read_schema(out).metadata[b"fastgt"])  # the file says what ran
    assert about["config"]["topology"] == "ring" and about["config"]["d"] == 3
    assert about["summary"]["status"] == "ok" and "batch" not in res.output
    strict = json.loads(pq.read_schema(out).metadata[b"fastgt"],
                        parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert strict["summary"]["final_accuracy"] is None  # NaN: no classes


def test_a_failed_write_of_a_sweep_is_one_line_exit_1(tmp_path, monkeypatch):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Store, "write", full)
    res = invoke("grid", spec, "--out", tmp_path / "g", "--workers", "1", "--quiet")
    one_error(res, 1, "could not be written", "No space left", "written before are kept")


# ------------------------------------------------------------------------- exit codes

def test_exit_codes_are_documented():
    text = invoke("--help").output
    for code, meaning in (("0", "ok"), ("1", "could not be written"), ("2", "bad input"),
                          ("3", "diverged")):
        assert re.search(rf"\b{code}\b[^;]*{meaning}", " ".join(text.split())), text


@pytest.mark.parametrize("args,fragment", [
    (["topo", "rng"], "Invalid value for 'NAME': 'rng' is not one of 'ring', 'interp_ring'"),
    (["topo"], "Missing argument 'NAME'. Choose from: ring, interp_ring, torus"),
    (["run", "--bogus", "3"], "No such option '--bogus'"),
    (["run", "--dtype", "half"], "'half' is not one of 'float64', 'float32'"),
    (["nosuch"], "No such command 'nosuch'"),
    (["--bogus"], "No such option '--bogus'"),
])
def test_click_usage_errors_are_one_line_too(args, fragment):
    """Errors click finds while parsing (choices, unknown options and commands, missing
    arguments) are one line with exit code 2 like fastgt's own, saying where help is."""
    res = invoke(*args)
    line = one_error(res, 2, fragment)
    assert res.output.strip() == line and line.endswith("--help)")


def test_a_diverged_run_exits_3_and_says_when_and_why():
    res = invoke("run", *TINY[:4], "--steps", "500", "--stepsize", "10", "--quiet")
    line = one_error(res, 3, "diverged at step", "loss_nodes",
                     "largest stable stepsize is 1")
    step = int(re.search(r"at step (\d+)", line).group(1))
    table = dict(r.split(None, 1) for r in res.output.splitlines() if not r.startswith("Error"))
    assert int(table["diverged_step"]) == step < 500
    for m in set(fastgt.METRICS) - {"accuracy"}:  # plateaus missing, not nan beside finals
        assert table[m] == "missing (the run diverged)"
    assert "accuracy" not in table and "final_accuracy" not in table  # no classes: left out
    # the hint is the theory's for the run's local steps: EXTRA with 5 is stable only at
    # large stepsizes (it said none was; a run at 0.5 converges)
    res = invoke("run", *TINY[:4], "--algorithm", "extra", "--local-steps", "5", "--steps",
                 "3000", "--stepsize", "0.001", "--quiet")
    one_error(res, 3, "diverged at step", "exact theory: small stepsizes are unstable here; "
              "stable: between 0.12", "(theory.stable_stepsizes)")
    res = invoke("run", *TINY[:4], "--algorithm", "extra", "--local-steps", "5", "--steps",
                 "3000", "--stepsize", "0.5", "--noise", "none", "--quiet")
    assert res.exit_code == 0, res.output
    # outside D²'s condition (allow_unstable) the hint says so and quotes the theory too
    res = invoke("run", "--n", "16", "--self-weight", "0.1", "--algorithm", "d2", "--d", "3",
                 "--stepsize", "0.42", "--steps", "3000", "--noise", "none", "--quiet",
                 "--allow-unstable")
    one_error(res, 3, "it ran outside its stability condition (allow_unstable): d2 needs",
              "; exact theory: small stepsizes are unstable here; stable: between 0.4375 and 1")


def test_a_sweep_with_diverged_cells_exits_3_after_finishing(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC + "[[grid]]\nstepsize = [0.01, 10.0]\n")
    res = invoke("grid", spec, "--out", tmp_path / "g", "--workers", "1", "--quiet")
    one_error(res, 3, "1 cell diverged: see `fastgt status", "--failed`")
    cells, _ = fastgt.load(tmp_path / "g", traces=False)
    assert sorted(cells["status"]) == ["diverged", "ok"]
    assert cells.loc[cells.status == "diverged", "error"].str.contains("exceeds").all()
    st = invoke("status", tmp_path / "g", "--failed")
    assert st.exit_code == 0 and "diverged  stepsize=10.0  loss_nodes" in st.output
    drawn = invoke("plot", tmp_path / "g", "--x", "stepsize", "-o", tmp_path / "p.png")
    assert drawn.exit_code == 0, drawn.output  # the diverged cell is not drawn: said so
    assert f"1 cell diverged or failed, left out (fastgt status {tmp_path / 'g'} --failed" \
        in drawn.output


def test_steps_zero_is_refused_and_one_default_everywhere():
    one_error(invoke("run", "--n", "8", "--steps", "0"), 2, "steps=0 is invalid", ">= 1")
    from fastgt.cli.core import run_cmd
    from fastgt.sweep.grid import RUN_DEFAULTS, make_cell

    api = inspect.signature(fastgt.run).parameters
    cli = {p.name: p.default for p in run_cmd.params}
    grid = make_cell({"topology": "ring", "n": 8}).params
    # fastgt.run's d=None and sigma2=None are those defaults (or a data file's own d)
    ran = fastgt.run(topology="ring", n=8, steps=1, noise="none").config
    for key in ("steps", "stepsize", "record_every", "d", "sigma2", "seed", "noise", "problem",
                "algorithm"):
        api_default = ran[key] if key in ("d", "sigma2") else api[key].default
        assert cli[key] == api_default == grid[key] == RUN_DEFAULTS[key], key
    with pytest.raises(fastgt.FastGTError, match="steps=0"):
        make_cell({"topology": "ring", "n": 8, "steps": 0})


@pytest.mark.parametrize("args,code,fragments,top", [
    (["--stepsize", "2"], 3, ["stepsize=2 is unstable", "largest stable stepsize is 1"], 1),
    (["--algorithm", "dsgd", "--stepsize", "1.5"], 3, ["largest stable stepsize is 1"], 1),
    (["--stepsize", "0"], 2, ["stepsize=0.0 is invalid"], None),
    (["--algorithm", "extra", "--local-steps", "5", "--stepsize", "0.01"], 3,
     ["stepsize=0.01 is unstable", "small stepsizes are unstable here; stable: between"], 0),
])
def test_theory_at_an_unstable_stepsize(args, code, fragments, top):
    res = invoke("theory", "--n", "30", *args)
    one_error(res, code, *fragments)
    if code == 3:
        assert not re.search(r"\binf\b", res.output)  # no floors; the rate, >= 1
        assert float(re.search(r"^\s*rate\s+(\S+)", res.output, re.MULTILINE)[1]) >= 1
        assert re.search(rf"max_stepsize\s+{top}\n", res.output)


def test_theory_stable_beyond_unstable_small_stepsizes():
    """D² with lambda_n = -0.8 and EXTRA with 5 local steps are unstable at small
    stepsizes, stable at larger ones: stable follows the rate there, with the floors (the
    CLI said "no stepsize is stable", exit 3, where simulations converge)."""
    import json

    res = invoke("theory", "--algorithm", "d2", "--n", "16", "--self-weight", "0.1",
                 "--stepsize", "0.6", "--d", "10", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    W = fastgt.topology("ring", n=16, self_weight=0.1)
    want = fastgt.theory.stationary(W, "d2", 0.6, d=10)
    assert out["stable"] is True and out["max_stepsize"] == 0.0
    assert out["consensus"] == want["consensus"] and out["rate"] < 1
    assert out["stable_stepsizes"] == [list(w) for w in fastgt.theory.stable_stepsizes(W, "d2")]
    res = invoke("theory", "--algorithm", "extra", "--n", "16", "--local-steps", "5",
                 "--stepsize", "0.5")
    assert res.exit_code == 0 and re.search(r"stable\s+True", res.output), res.output


def test_theory_json_says_unstable():
    import json

    res = invoke("theory", "--n", "30", "--stepsize", "2", "--json")
    assert res.exit_code == 3
    out = json.loads(res.output.splitlines()[0])
    assert out["stable"] is False and out["max_stepsize"] == 1.0 and "loss_nodes" not in out


# ------------------------------------------------------------------- not a sweep directory

@pytest.mark.parametrize("target,fragments", [
    (lambda s: s.parent, ["not a sweep directory but holds 1 sweep: one", "/one"]),
    (lambda s: s / "cells", ["without cells/"]),
    (lambda s: next((s / "cells").glob("*.parquet")), ["is a file", "result file of the sweep"]),
    (lambda s: s / "nope", ["does not exist"]),
])
def test_load_status_plot_say_what_a_non_sweep_is(sweep, target, fragments):
    path = target(sweep)
    with pytest.raises(fastgt.FastGTError) as err:
        fastgt.load(path)
    assert all(f in str(err.value) for f in fragments) and str(err.value).startswith("DIR=")
    one_error(invoke("status", path), 2, "DIR=", *fragments)
    one_error(invoke("plot", path, "--x", "seed", "-o", sweep.parent / "p.png"), 2, "DIR=",
              *fragments)


def test_spec_errors_show_the_path_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "bad.toml").write_text(SPEC + "colour = 3\n")
    one_error(invoke("grid", "specs/bad.toml", "--out", "g"), 2,
              "specs/bad.toml line 7: unknown key 'colour'")


# ----------------------------------------------------------------------- one name, help

def _commands():
    """Every command of the group (loaded on demand: the group lists them by name)."""
    found = [(name, main.get_command(None, name)) for name in main.list_commands(None)]
    assert len(found) >= 10 and all(cmd is not None for _, cmd in found)
    return found


def test_every_option_has_help_and_closed_choices_list_their_values():
    import click

    for name, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and p.name != "help":
                assert p.help, f"fastgt {name} {p.opts[0]} has no help text"
        text = invoke(name, "--help").output
        for p in cmd.params:
            if isinstance(p.type, click.Choice):
                assert all(str(c) in text for c in p.type.choices), (name, p.name)
    assert "interp_ring" in invoke("run", "--help").output  # --topology is a closed choice


def test_one_name_for_the_output_and_the_sweep_directory():
    for name, cmd in _commands():
        outs = [p for p in cmd.params if "--out" in getattr(p, "opts", [])]
        if name in ("run", "grid", "plot", "report"):
            assert len(outs) == 1 and "-o" in outs[0].opts, name
        assert not any("--output" in getattr(p, "opts", []) for p in cmd.params), name
    for name in ("plot", "status", "report"):
        args = [p for p in dict(_commands())[name].params if p.param_type_name == "argument"]
        assert [a.human_readable_name for a in args] == ["DIR"], name


# ------------------------------------------------------------------ topologies from files

RING5 = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]


def _ring5_files(tmp_path):
    import scipy.io
    import scipy.sparse as sp

    W = fastgt.topology("from_edges", edges=RING5).to_dense()
    (tmp_path / "g.txt").write_text("# a ring\n" + "\n".join(f"{i} {j}" for i, j in RING5))
    (tmp_path / "g.csv").write_text("source,target\n" + "\n".join(f"{i},{j}" for i, j in RING5))
    np.save(tmp_path / "w.npy", W)
    sp.save_npz(tmp_path / "w.npz", sp.csr_matrix(W))
    scipy.io.mmwrite(tmp_path / "w.mtx", sp.coo_matrix(W))
    return W


@pytest.mark.parametrize("args", [
    ["from_edges", "--edges", "{tmp}/g.txt"],
    ["from_edges", "--edges", "{tmp}/g.csv"],
    ["from_matrix", "--matrix", "{tmp}/w.npy"],
    ["from_matrix", "--matrix", "{tmp}/w.npz"],
    ["from_matrix", "--matrix", "{tmp}/w.mtx"],
])
def test_topologies_from_files(tmp_path, args):
    import json

    W = _ring5_files(tmp_path)
    args = [a.format(tmp=tmp_path) for a in args]
    res = invoke("topo", *args, "--json")
    assert res.exit_code == 0, res.output
    lam = np.sort(np.linalg.eigvalsh(W))
    assert json.loads(res.output)["lambda2"] == pytest.approx(lam[-2], abs=1e-12)
    run = invoke("run", "--topology", *args, "--d", "3", "--steps", "10", "--quiet")
    assert run.exit_code == 0, run.output
    key = "edges" if args[0] == "from_edges" else "matrix"
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[run]\ntopology = "{args[0]}"\n{key} = "{args[2]}"\nd = 3\nsteps = 10\n')
    grid = invoke("grid", spec, "--out", tmp_path / "sweep", "--workers", "1", "--quiet")
    assert grid.exit_code == 0, grid.output
    cells, _ = fastgt.load(tmp_path / "sweep", traces=False)
    assert cells[key].tolist() == [args[2]] and cells["lambda2"].iloc[0] == pytest.approx(lam[-2])


@pytest.mark.parametrize("name,content,fragment", [
    ("e.txt", "0 1\n1 2 3\n", "line 2: '1 2 3' is not an edge"),
    ("e.txt", "0 1\n1 x\n", "line 2: '1 x' is not an edge"),
    ("e.txt", "0 -1\n", "line 1: '0 -1' is not an edge"),
    ("e.txt", "0 1 0.5\n1 2 0.5\n", ("line 1: '0 1 0.5' is not an edge (a third column: "
                                    "edge weights are not read, weights= computes them)")),
    ("e.txt", "0,1,2.5\n", "line 1: '0,1,2.5' is not an edge (a third column"),
    ("e.txt", "# nothing\n", "holds no edge"),
    ("missing.txt", None, "does not exist"),
])
def test_malformed_edge_files(tmp_path, name, content, fragment):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    one_error(invoke("topo", "from_edges", "--edges", path), 2, "edges file", str(path), fragment)


@pytest.mark.parametrize("name,write,fragment", [
    ("w.npy", lambda p: p.write_bytes(b"not numpy"), "is not a numpy .npy array"),
    ("w.npz", lambda p: np.savez(p, a=np.eye(2), b=np.eye(2)), "holds no matrix"),
    ("w.mtx", lambda p: p.write_text("%%MatrixMarket nonsense\n"), "is not a Matrix Market"),
    ("w.csv", lambda p: p.write_text("1,0\n0,1\n"), "unknown format: allowed .npy, .npz, .mtx"),
    ("w.npy", lambda p: np.save(p, np.ones((2, 3)) / 3), "square"),
])
def test_malformed_matrix_files(tmp_path, name, write, fragment):
    path = tmp_path / name
    write(path)
    one_error(invoke("topo", "from_matrix", "--matrix", path), 2, fragment)


def test_a_bad_file_in_a_grid_spec_is_refused_before_running(tmp_path, no_simulation):
    spec = tmp_path / "spec.toml"
    spec.write_text('[run]\ntopology = "from_edges"\nedges = "nowhere.txt"\n')
    one_error(invoke("grid", spec, "--out", tmp_path / "g"), 2, "edges file 'nowhere.txt' does not exist")


def test_every_declared_parameter_is_an_option_of_run_with_its_help():
    """fastgt run's options come from the parameter registry (fastgt.params)."""
    from fastgt.cli.core import run_cmd
    from fastgt.params import PARAMS

    opts = {p.name: p for p in run_cmd.params}
    for name, p in PARAMS.items():
        assert opts[name].help == p.help and p.flag in opts[name].opts, name
        if p.choices is not None:
            assert tuple(opts[name].type.choices) == p.allowed(), name


def test_problem_parameters_from_the_command_line():
    res = invoke("run", *TINY, "--problem", "hetero_quadratic", "--L", "2", "--mu", "0.5",
                 "--zeta", "3", "--problem-seed", "4")
    assert res.exit_code == 0, res.output
    one_error(invoke("run", *TINY, "--L", "2"), 2,
              "L does not apply to problem 'quadratic': allowed no parameters")


def test_d2_below_its_stability_condition_is_refused_with_the_remedies(tmp_path):
    """A torus 4 x 5 has lambda_n = -0.52 < -1/3: d2 is refused in one line naming lambda_n
    and both remedies (exit 2); --lazy or --allow-unstable run."""
    torus = ["--topology", "torus", "--rows", "4", "--cols", "5", "--d", "3", "--steps", "20",
             "--record-every", "5", "--quiet", "--algorithm", "d2"]
    one_error(invoke("run", *torus), 2, "d2 needs lambda_n(W) > -1/3", "lambda_n = -0.523607",
              "lazy=True", "allow_unstable=True")
    assert invoke("run", *torus, "--lazy").exit_code == 0
    longer = torus + ["--steps", "200", "--record-every", "50"]  # the later value counts
    assert invoke("run", *longer, "--allow-unstable").exit_code == 3  # 3: diverged
    spec = tmp_path / "g.toml"
    spec.write_text('[run]\ntopology = "torus"\nrows = 4\ncols = 5\nd = 3\nsteps = 20\n'
                    'record_every = 5\nalgorithm = "d2"\nallow_unstable = true\n')
    res = invoke("grid", spec, "--out", tmp_path / "out", "--workers", "1")
    assert res.exit_code == 0, res.output
    cells = pd.read_parquet(tmp_path / "out" / "cells")
    assert cells["allow_unstable"].tolist() == [True] and cells["error"].isna().all()


def test_local_steps_from_a_grid_file_and_its_cost_columns(tmp_path):
    """local_steps as a grid axis: a column of the cells (absent, i.e. 1, when not set),
    and the traces count communication rounds on every k-th step only."""
    spec = tmp_path / "g.toml"
    spec.write_text(SPEC + "[[grid]]\nlocal_steps = [1, 5]\n")
    res = invoke("grid", spec, "--out", tmp_path / "out", "--workers", "1")
    assert res.exit_code == 0, res.output
    cells = pd.read_parquet(tmp_path / "out" / "cells").set_index("local_steps")
    traces = pd.read_parquet(tmp_path / "out" / "traces")
    for k in (1, 5):
        tr = traces[traces["id"] == cells.loc[k, "id"]]
        assert (tr["comm_rounds"] == tr["step"] // k).all()
        assert (tr["grad_evals"] == tr["step"] + 1).all()
    bad = tmp_path / "b.toml"
    bad.write_text(SPEC + "local_steps = 0\n")
    one_error(invoke("grid", bad, "--out", tmp_path / "o2"), 2, "local_steps=0 is invalid")


def test_a_grid_with_d2_on_a_refused_topology_is_an_error_before_any_work(tmp_path):
    """The refusal is a grid-file error (exit 2, one line, nothing written), naming the cell
    and the remedies, unless the cell allows it."""
    spec = tmp_path / "g.toml"
    spec.write_text('[run]\ntopology = "torus"\nrows = 4\ncols = 5\nd = 3\nsteps = 20\n'
                    'record_every = 5\n[[grid]]\nalgorithm = ["gt", "d2"]\n')
    one_error(invoke("grid", spec, "--out", tmp_path / "out"), 2,
              "cell with algorithm=d2, cols=5", "lambda_n = -0.523607", "lazy=True")
    assert not (tmp_path / "out").exists()


def test_time_varying_topologies_from_the_shell():
    """topo prints the period and p_eff; run takes cycle's matrices as JSON; theory,
    eigenvectors and Setup B are refused in one line (exit 2)."""
    res = invoke("topo", "one_peer_exponential", "--n", "16", "--json")
    assert res.exit_code == 0, res.output
    assert '"period": 4' in res.output and '"p_eff": 1.0' in res.output
    assert '"lambda2": null' in res.output  # nonsymmetric matrices: no per-matrix values
    text = dict(r.split(None, 1) for r in invoke("topo", "one_peer_exponential", "--n", "16")
                .output.splitlines() if not r.startswith("n/a:"))
    assert text["lambda2"] == "n/a" and text["p_eff"] == "1"  # said so, not "nan"
    assert "n/a" not in invoke("topo", "ring", "--n", "16").output
    mats = '[{"topology": "ring", "n": 8}, {"topology": "complete", "n": 8}]'
    res = invoke("run", "--topology", "cycle", "--matrices", mats, "--d", "3", "--steps", "20",
                 "--record-every", "5", "--quiet")
    assert res.exit_code == 0, res.output
    one_error(invoke("topo", "random_matching", "--n", "8", "--vectors"), 2, "no eigenvectors")
    one_error(invoke("theory", "--topology", "random_matching", "--n", "8"), 2,
              "static topologies only")
    one_error(invoke("run", "--topology", "random_matching", *TINY, "--noise", "structured"), 2,
              "needs a static topology")
    one_error(invoke("run", "--topology", "cycle", "--matrices", "[1]", *TINY[2:]), 2,
              "matrices='[1]' is invalid", "topology tables")


def test_theory_takes_the_relaxations(monkeypatch):
    """--local-steps, --record-every and --topology-y give fastgt.theory's values; a
    topology_y the theory does not cover is one line, exit 2."""
    res = invoke("theory", "--topology", "ring", "--n", "20", "--stepsize", "0.05",
                 "--local-steps", "3", "--record-every", "20", "--json")
    assert res.exit_code == 0, res.output
    W = fastgt.topology("ring", n=20)
    want = fastgt.theory.stationary(W, "gt", 0.05, local_steps=3, record_every=20)
    assert f'"consensus": {want["consensus"]!r}' in res.output
    Wy = '{"topology": "ring", "n": 20, "self_weight": 0.6}'
    res = invoke("theory", "--topology", "ring", "--n", "20", "--topology-y", Wy, "--json")
    want = fastgt.theory.stationary(W, "gt", 0.01, topology_y=fastgt.topology(
        "ring", n=20, self_weight=0.6))
    assert res.exit_code == 0 and f'"tracking": {want["tracking"]!r}' in res.output
    from fastgt import modes

    monkeypatch.setattr(modes, "DENSE_Y_MAX", 10)
    one_error(invoke("theory", "--topology", "ring", "--n", "20", "--topology-y",
                     '{"topology": "star", "n": 20}'), 2, "do not share their eigenvectors")


@pytest.mark.parametrize("args,fragments", [
    (["--topology", "from_matrix"], ["needs W (flat name matrix: --matrix in the shell)"]),
    (["--n", "8", "--algorithm", "dsgd", "--topology-y", '{"topology": "complete", "n": 8}'],
     ["topology_y='complete(n=8)' is invalid"]),
    (["--n", "8", "--topology-y", '{"topology": "one_peer_exponential", "n": 8}'],
     ["topology_y='one_peer_exponential(n=8)'", 'the table {"topology": "ring"']),
    (["--n", "8", "--topology-y", "ring"],
     ['\'{"topology": "ring", "n": 16, "self_weight": 0.5}\' (JSON, or TOML) on the']),
    (["--n", "8", "--topology-y", '{"topolgy": "complete", "n": 8}'],  # the key misspelled
     ["topology_y=", "this one has topolgy, n (topolgy: did you mean topology?)"]),
    (["--topology", "cycle", "--matrices", '[{"topology": "ring", "n": 8}, {"n": 8}]'],
     ["matrices=", "with its family under topology", "this one has n"]),
])
def test_topology_errors_name_what_was_given_in_the_shells_terms(args, fragments):
    """(A user trial: "needs W" where the option is --matrix, topology_y='complete' for a
    table, a TOML example beside "JSON on the command line".)"""
    one_error(invoke("run", "--steps", "1", *args), 2, *fragments)


def test_tables_on_the_command_line_may_be_toml_as_in_grid_files():
    """(A user trial: --param took TOML tables, --topology-y and --matrices JSON only.)"""
    res = invoke("run", "--n", "8", "--d", "2", "--steps", "2", "--topology-y",
                 '{topology = "complete", n = 8}')
    assert res.exit_code == 0 and "topology_y  complete(n=8)" in res.output, res.output
    res = invoke("run", "--topology", "cycle", "--d", "2", "--steps", "2", "--matrices",
                 '[{topology = "ring", n = 8}, {topology = "complete", n = 8}]')
    assert res.exit_code == 0 and "cycle(matrices=['ring(n=8" in res.output, res.output


def test_a_topology_of_the_wrong_type_is_named_before_its_parameters():
    with pytest.raises(fastgt.FastGTError, match=r"^topology=123 is invalid"):
        fastgt.run(topology=123, n=16)  # said "n does not apply to a built topology"


def test_running_out_of_memory_is_one_line_with_exit_1(monkeypatch):
    """(A 50-line traceback of numpy's _ArrayMemoryError before.)"""
    def short(**kw):
        raise MemoryError("Unable to allocate 4.65 GiB for an array with shape (624007168,)")

    monkeypatch.setattr("fastgt.runner.run", short)
    line = one_error(invoke("run", *TINY), 1, "out of memory: Unable to allocate 4.65 GiB",
                     "arrays of n x d values", "n x samples x d: a smaller n, d or samples")
    assert "Traceback" not in line


def test_run_summary_says_what_ran_in_the_shells_names():
    res = invoke("run", "--topology", "erdos_renyi", "--n", "40", "--prob", "0.3",
                 "--graph-seed", "3", "--seed", "7", "--d", "3", "--steps", "10", "--quiet")
    table = dict(r.split(None, 1) for r in res.output.splitlines())
    assert res.exit_code == 0 and table["algorithm"] == "gt" and table["seed"] == "7"
    assert table["topology"] == "erdos_renyi(n=40, prob=0.3, graph_seed=3, weights=metropolis)"


@pytest.mark.parametrize("args,fragment", [
    (["--max-batch", "0"], "--max-batch 0 is invalid: allowed an integer >= 1"),
    (["--workers", "0"], "--workers 0 is invalid"),
    (["--threads-per-worker", "0"], "--threads-per-worker 0 is invalid"),
    (["--threads-per-worker", "4096"],  # at most the cores (a user trial)
     "--threads-per-worker 4096 is invalid: allowed an integer in [1, "),
    (["--executor", "dask", "--threads-per-worker", "4096"],  # a LocalCluster's: the same
     "--threads-per-worker 4096 is invalid: allowed an integer in [1, "),
    (["--executor", "dask", "--scheduler", "local", "--threads-per-worker", "4096"],
     "--threads-per-worker 4096 is invalid: allowed an integer in [1, "),
    (["--flush-seconds", "-1"], "--flush-seconds -1.0 is invalid"),
    (["--scheduler", "tcp://a:1"], "--scheduler is only for --executor 'dask'"),
    (["--executor", "dask", "--scheduler", "foo"], "a scheduler's address"),
    (["--executor", "dask", "--scheduler", "tcp://h:1/?workers=3"],
     "--scheduler 'tcp://h:1/?workers=3' is invalid"),  # a value as given (a review)
])
def test_sweep_option_errors_name_the_options(tmp_path, args, fragment):
    """(A user trial: "max_batch=0 is invalid" where the option is --max-batch.)"""
    spec = tmp_path / "g.toml"
    spec.write_text('topology = "ring"\nn = 8\nsteps = 2\n')
    err = one_error(invoke("grid", spec, "--out", tmp_path / "g", *args), 2, fragment)
    assert "_" not in err.split(" is ")[0]


def test_ctrl_c_of_a_run_says_where_it_stopped(monkeypatch, tmp_path):
    """Ctrl-C within a run (here: raised from its progress callback at step 3, the run's
    kernel calls made one step each) is one line on a line of its own, saying the step
    reached and that nothing was written; exit 130 (a user trial: "interrupted" went onto
    the progress bar's line)."""
    from fastgt import engine, runner

    real = runner.run

    def interrupted(**kw):
        def progress(t):
            kw_progress(t)
            if t == 3:
                raise KeyboardInterrupt
        kw_progress = kw["progress"]
        return real(**{**kw, "progress": progress})

    monkeypatch.setattr(engine, "CALL_S", 1e-12)
    monkeypatch.setattr(runner, "run", interrupted)
    out = tmp_path / "t.csv"
    res = invoke("run", "--n", 8, "--d", 2, "--steps", 50, "--record-every", 50, "--quiet",
                 "--out", out)
    assert res.exit_code == 130 and not out.exists()
    assert res.output.strip() == "interrupted at step 3 of 50: nothing written"


def test_topo_names_the_graphs_seed_as_the_shell_does():
    """(A user trial: `fastgt topo ... --graph-seed 3` printed seed 3, text and JSON.)"""
    args = ("topo", "erdos_renyi", "--n", 30, "--prob", 0.3, "--graph-seed", 3)
    table = json.loads(invoke(*args, "--json").output)
    assert table["graph_seed"] == 3 and "seed" not in table
    assert re.search(r"^ *graph_seed +3$", invoke(*args).output, re.MULTILINE)


def test_topo_says_when_a_spectrum_may_take_minutes(monkeypatch):
    """(A user trial: 179 s without a word for a geometric graph of 15000 nodes.) Graphs
    without a closed form beyond LANCZOS_NOTE nodes get a line first; closed forms none."""
    from fastgt.cli import core

    monkeypatch.setattr(core, "LANCZOS_NOTE", 20)
    res = invoke("topo", "geometric", "--n", 30, "--radius", 0.4, "--method", "sparse")
    assert res.exit_code == 0 and res.output.startswith(
        "fastgt: the spectrum of this geometric graph of n=30 by Lanczos")
    assert "Lanczos" not in invoke("topo", "ring", "--n", 30).output
