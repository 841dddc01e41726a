"""Grid specs: expansion into cells, stable ids, and one-line errors (CLI tested in-process)."""

import hashlib
import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

import fastgt
from fastgt import numerics
from fastgt.cli.sweep import grid as grid_cmd
from fastgt.errors import FastGTError
from fastgt.flat import cell_topology, problem_flat_params, topology_params
from fastgt.sweep import grid as G

BASE = """\
[run]
topology = "interp_ring"
n = 20
d = 4
steps = 100

[[grid]]
alpha = [0.0, 0.5, 0.9]
seed = [0, 1]
algorithm = ["gt", "dsgd"]
"""


def test_product_of_list_entries():
    cells = G.parse_spec(BASE).cells()
    expected = {(a, s, alg) for a, s, alg in itertools.product([0.0, 0.5, 0.9], [0, 1],
                                                                 ["gt", "dsgd"])}
    got = {(c.params["alpha"], c.params["seed"], c.params["algorithm"]) for c in cells}
    assert got == expected and len(cells) == 12
    assert all(c.params["n"] == 20 and c.params["topology"] == "interp_ring" for c in cells)


def test_several_grids_are_a_union_and_override_run():
    text = BASE + '\n[[grid]]\ntopology = "ring"\nself_weight = [0.2, 0.5]\nseed = [0, 1]\n'
    cells = G.parse_spec(text).cells()
    rings = [c for c in cells if c.params["topology"] == "ring"]
    assert len(cells) == 12 + 4 and len(rings) == 4
    assert all("alpha" not in c.params for c in rings)
    assert {c.params["self_weight"] for c in rings} == {0.2, 0.5}


def test_union_removes_duplicate_cells():
    text = BASE + "\n[[grid]]\nalpha = [0.5]\nseed = 1\n"  # already in the first table (gt)
    assert len(G.parse_spec(text).cells()) == 12


def test_defaults_complete_the_canonical_parameters():
    (cell,) = G.parse_spec('[run]\ntopology = "ring"\nn = 8\n').cells()
    assert cell.params == {"algorithm": "gt", "topology": "ring", "problem": "quadratic",
                           "noise": "gaussian", "sigma2": 1.0, "d": 100, "stepsize": 0.01,
                           "steps": 1000, "record_every": 100, "seed": 0, "n": 8,
                           "self_weight": 1 / 3, "lazy": False}
    (cell,) = G.parse_spec('[run]\ntopology = "erdos_renyi"\nn = 8\nprob = 0.5\n'
                           'problem = "consensus"\nzeta = 2\n').cells()
    assert cell.params["graph_seed"] == 0 and cell.params["weights"] == "metropolis"
    assert cell.params["problem_seed"] == 0 and cell.params["zeta"] == 2.0


def test_id_is_sha256_of_canonical_json_and_numerics_version(monkeypatch):
    (cell,) = G.parse_spec('[run]\ntopology = "ring"\nn = 8\n').cells()
    blob = json.dumps({"numerics": 2, "params": cell.params}, sort_keys=True,
                      separators=(",", ":"))
    assert cell.id == hashlib.sha256(blob.encode()).hexdigest()[:16]
    assert cell.id == "34d010e0e19269e9"  # its defaults as of numerics version 2 (2026-11-27)
    # order of keys, int vs float spelling and explicit defaults do not change the id
    (same,) = G.parse_spec('[run]\nstepsize = 0.01\nn = 8\nself_weight = 0.3333333333333333\n'
                           'topology = "ring"\nsigma2 = 1\n').cells()
    assert same.id == cell.id
    (other,) = G.parse_spec('[run]\ntopology = "ring"\nn = 8\nseed = 1\n').cells()
    assert other.id != cell.id
    monkeypatch.setattr(numerics, "NUMERICS_VERSION", numerics.NUMERICS_VERSION + 1)
    assert G.make_cell(cell.params).id != cell.id


def test_a_problems_own_numerics_version_names_a_problem_and_follows_the_base():
    """numerics.PROBLEM_NUMERICS: one sequence of versions (a problem's own comes after the
    base it changed from), for registered problems only."""
    from fastgt.problems import PROBLEMS

    assert set(numerics.PROBLEM_NUMERICS) <= set(PROBLEMS)
    assert all(v > numerics.NUMERICS_VERSION for v in numerics.PROBLEM_NUMERICS.values())


@pytest.mark.parametrize("unset,spelled", [
    ("", "local_steps = 1"),  # the values they run with when unset
    ("", 'dtype = "float64"\nallow_unstable = false'),
    ('topology_y = {topology = "ring", n = 8}',  # a table's entries at their defaults
     'topology_y = {topology = "ring", n = 8, lazy = false, self_weight = 0.3333333333333333}'),
])
def test_spelling_out_what_changes_no_number_is_the_same_cell(unset, spelled):
    """(A user trial: d = 30 written out for a data file of 30 features made 56 more cells,
    each result twice in a load.) The id leaves out the parameters that change none of a
    cell's numbers; the cell keeps them as given, but a topology table in one spelling
    (a second trial: one table spelled two ways made two groups in aggregate and plot)."""
    base = '[run]\ntopology = "ring"\nn = 8\n'
    (a,) = G.parse_spec(base + unset).cells()
    (b,) = G.parse_spec(base + spelled).cells()
    assert a.id == b.id and (a.params == b.params) == ("topology_y" in unset)
    (c,) = G.parse_spec(base + unset + "\nseed = 3").cells()
    assert c.id != a.id


def test_a_data_files_d_is_the_same_cell(tmp_path):
    X = np.random.default_rng(0).standard_normal((40, 6))
    np.savez(tmp_path / "x.npz", X=X, y=np.sign(X[:, 0]) + (X[:, 0] == 0))
    base = f'[run]\ntopology = "ring"\nn = 8\nproblem = "logistic"\ndata = "{tmp_path}/x.npz"\n'
    (a,) = G.parse_spec(base).cells()
    (b,) = G.parse_spec(base + "d = 6\n").cells()
    assert a.id == b.id
    # one table spelling the file's d, another leaving it out: the same cells, no error
    # (a review: the second's default d = 100 was judged as given by the first)
    both = base + "[[grid]]\nd = 6\nseed = [0, 1]\n[[grid]]\nseed = [0, 1]\n"
    assert len(G.parse_spec(both).cells()) == 2
    with pytest.raises(FastGTError, match="d = 7 does not apply"):
        G.parse_spec(base + "d = 7\n").cells()


def test_set_and_param_override_the_file():
    spec = G.parse_spec(BASE, sets=["steps=50", "alpha=0.3"], params=["seed=5,6,7"])
    cells = spec.cells()
    assert len(cells) == 1 * 3 * 2
    assert {c.params["alpha"] for c in cells} == {0.3}
    assert {c.params["seed"] for c in cells} == {5, 6, 7}
    assert {c.params["steps"] for c in cells} == {50}
    # the kept spec reproduces the same cells
    assert [c.id for c in G.parse_spec(spec.to_toml()).cells()] == [c.id for c in cells]


def test_a_parameter_given_by_both_set_and_param_is_refused():
    """(--param won without a word.)"""
    with pytest.raises(fastgt.FastGTError,
                       match="^seed is given twice [(]--set and --param[)]: allowed once$"):
        G.parse_spec(BASE, sets=["seed=0"], params=["seed=1,2"])
    with pytest.raises(fastgt.FastGTError, match="^seed is given twice [(]--set[)]"):
        G.parse_spec(BASE, sets=["seed=0", "seed=1"])  # the last one won
    with pytest.raises(fastgt.FastGTError, match="^alpha is given twice [(]--param[)]"):
        G.parse_spec(BASE, params=["alpha=0.1", "alpha=0.2,0.3"])


def test_sigma2_of_its_default_passes_with_a_noise_that_adds_none():
    """Only a sigma2 that would be ignored is refused: the default, spelled out, is the
    same cell as leaving it out."""
    cells = G.parse_spec('[run]\ntopology = "ring"\nn = 8\nsigma2 = 1.0\n[[grid]]\n'
                         'noise = ["none", "gaussian"]\n').cells()
    assert [c.id for c in cells] == [c.id for c in G.parse_spec(
        '[run]\ntopology = "ring"\nn = 8\n[[grid]]\nnoise = ["none", "gaussian"]\n').cells()]


def test_param_without_grid_tables_creates_one():
    cells = G.parse_spec('[run]\ntopology = "ring"\nn = 8\n', params=["topology=ring,complete"]
                         ).cells()
    assert {c.params["topology"] for c in cells} == {"ring", "complete"}
    assert all("self_weight" not in c.params for c in cells if c.params["topology"] == "complete")


def test_param_splits_only_between_values_so_tables_are_one_each():
    """--param's commas inside a table (JSON or TOML) or a list of them are not separators."""
    ring = '[run]\ntopology = "ring"\nn = 8\n'
    axis = ('topology_y={"topology": "ring", "n": 8, "self_weight": 0.5},'
            '{topology = "complete", n = 8}')
    cells = G.parse_spec(ring, params=[axis]).cells()
    assert sorted(c.params["topology_y"] for c in cells) == [  # JSON and TOML, one spelling
        '{"n":8,"self_weight":0.5,"topology":"ring"}', '{"n":8,"topology":"complete"}']
    mats = '[{"topology": "ring", "n": 8}, {"topology": "complete", "n": 8}]'
    (cell,) = G.parse_spec('[run]\ntopology = "cycle"\n', params=[f"matrices={mats}"]).cells()
    assert cell.params["matrices"] == ('[{"n":8,"topology":"ring"},{"n":8,"topology":'
                                       '"complete"}]') and cell_topology(cell.params).n == 8
    assert len(G.parse_spec(ring, params=["seed=1, 2,3"]).cells()) == 3


# every user mistake: (file text, options, fragments the one-line message must contain)
ERRORS = [
    ('[run]\ntopology = "ring"\nn = 8\nalpha = 0.5\n', [],
     ["line 4", "alpha does not apply to topology 'ring'", "allowed n, self_weight, lazy"]),
    ('[run]\ntopology = "ring"\nn = 8\n\n[[grid]]\nalhpa = [0.1]\n', [],
     ["line 6", "unknown key 'alhpa' (did you mean alpha?)", "alpha"]),
    ('[run]\ntopology = "ring"\nn = 8\n\n[[grid]]\nseed = []\n', [],
     ["line 6", "empty grid"]),
    ('[run]\ntopology = "ring"\nn = "many"\n', [], ["line 3", "n='many'", "an integer"]),
    ('[run]\ntopology = "ring"\nn = 8\nstepsize = -1\n', [],
     ["line 4", "stepsize=-1.0", "a number in (0, inf"]),
    ('[run]\ntopology = "rnig"\nn = 8\n', [], ["line 2", "topology='rnig'", "'ring'"]),
    ('[run]\ntopology = "ring"\nn = [8, 16]\n', [], ["line 3", "list in [run]", "[[grid]]"]),
    ('[run]\ntopology = "ring"\nn = 8\n\n[[grid]]\nlazy = ["yes"]\n', [],
     ["line 6", "lazy='yes'", "true or false"]),
    ('[runs]\ntopology = "ring"\n', [], ["line 1", "unknown key 'runs'", "[run]"]),
    ('[run]\ntopology = "interp_ring"\nn = 8\n', [], ["line 2", "needs alpha"]),
    ('[run]\nn = 8\n', [], ["topology is required", "interp_ring"]),
    ('[run]\ntopology = "ring"\nn = 8\nproblem = "consensus"\nmu = 0.5\n', [],
     ["line 5", "mu does not apply to problem 'consensus'", "zeta, problem_seed"]),
    (('[run]\ntopology = "ring"\nn = 8\n\n[[grid]]\ntopology = ["ring", "interp_ring"]\n'
     "alpha = [0.5]\n"), [], ["line 7", "alpha does not apply to topology 'ring'"]),
    ("[run\n", [], ["invalid TOML", "line 1"]),
    ("", [], ["no cells"]),
    ('[run]\ntopology = "ring"\nn = 8\n', ["--set", "alpha=0.5"],
     ["--set alpha=0.5", "alpha does not apply"]),
    ('[run]\ntopology = "ring"\nn = 8\n', ["--param", "n=8,x"], ["--param n=8,x", "n='x'"]),
    ('[run]\ntopology = "ring"\nn = 8\n', ["--set", "steps"], ["--set='steps'", "key=value"]),
    ('[run]\ntopology = "cycle"\nmatrices = [1, 2]\n', [],
     ["line 3", "list in [run]"]),
    (('[run]\nn = 8\n[[grid]]\ntopology = "ring"\n[[grid]]\ntopology = "cycle"\nmatrices = '
      '[{topology = "ring", n = 8}]\n'), [],  # a trial: n in [run] for the ring's sake
     ["line 2: n does not apply to topology 'cycle'", "(n is set in [run], so in every",
      "[[grid]] table: set it in the tables it applies to)"]),
    ('[run]\ntopology = "cycle"\nmatrices = [{n = 8}]\n', [],
     ["line 3", "matrices={'n': 8} is invalid: allowed a topology table", "this one has n"]),
    ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 8}, "ring"]\n', [],
     ["line 3: matrices=[{", "is invalid: allowed a list of topology tables"]),  # a trial
    ('[run]\ntopology = "cycle"\n[[grid]]\nmatrices = [[{topology = "ring", n = 8}, "ring"]]\n',
     [], ["line 4: matrices=[{", "is invalid: allowed a list of topology tables"]),
    ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 8}, {topology = "ring", n = 9}]\n',
     [], ["cell with", "matrix 1 has n=9"]),
    ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 8, prob = 0.5}]\n',
     [], ["line 3: matrices: prob does not apply to topology 'ring': allowed n, self_weight"]),
    ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 1}]\n',
     [], ["line 3: matrices: n=1 is invalid: allowed an integer >= 2"]),
    ('[run]\ntopology = "ring"\nn = 8\ntopology_y = {topology = "erdos_renyi", n = 8}\n',
     [], ["line 4: topology_y: topology 'erdos_renyi' needs prob"]),
    ('[run]\ntopology = "ring"\nn = 8\n[[grid]]\ntopology_y = [{topology = "rign", n = 8}]\n',
     [], ["line 5: topology_y's topology='rign' is invalid: allowed one of 'ring'"]),
    ('[run]\ntopology = "one_peer_exponential"\nn = 8\nalgorithm = "d2"\n', [],
     ["algorithm=d2", "d2 needs a static W"]),
    ('[run]\ntopology = "ring"\nn = 8\nsigma2 = 2.0\n[[grid]]\nnoise = ["gaussian", "full"]\n',
     [], [("line 4: cell with noise=full: sigma2=2 applies to noise 'gaussian', "
           "'structured', 'minibatch+gaussian' only")]),
    ('[run]\nn = 8\nnoise = "structured"\n[[grid]]\ntopology = ["ring", "random_matching"]\n',
     [], ["cell with noise=structured", ("noise='structured' follows W's extreme "
                                          "eigenvectors: it needs a static topology, not "
                                          "random_matching")]),
]


@pytest.mark.parametrize("text,opts,fragments", ERRORS, ids=[f"e{i}" for i in range(len(ERRORS))])
def test_spec_errors_are_one_line_with_location(tmp_path, text, opts, fragments):
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    out = tmp_path / "out"
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), *opts])
    assert res.exit_code == 2, res.output
    msg = res.output.strip().splitlines()[-1]
    assert msg.startswith("Error: ")
    for frag in fragments:
        assert frag in msg, msg
    assert not out.exists()  # nothing ran, nothing was written


def test_missing_spec_file(tmp_path):
    res = CliRunner().invoke(grid_cmd, [str(tmp_path / "nope.toml"), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "cannot be read" in res.output


def test_every_family_and_problem_parameter_is_declared():
    """A parameter added to a family or problem must get a type in fastgt.sweep.grid (and thus a
    declared result column)."""
    from fastgt.problems import PROBLEMS

    for fam in G.GRID_FAMILIES:
        assert set(topology_params(fam)) <= set(G.TOPOLOGY_PARAMS), fam
    for prob in PROBLEMS:
        assert set(problem_flat_params(prob)) <= set(G.PROBLEM_PARAMS), prob


def test_make_cell_errors_name_the_key():
    with pytest.raises(FastGTError) as err:
        G.make_cell({"topology": "torus", "rows": 3, "cols": 4, "self_weight": 0.5})
    assert err.value.key == "self_weight"
    assert "allowed rows, cols, n, lazy" in str(err.value)


def test_dry_run_lists_cells(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(BASE)
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "o"), "--dry-run"])
    assert res.exit_code == 0
    lines = res.output.strip().splitlines()
    ids = {c.id for c in G.parse_spec(BASE).cells()}
    assert {ln.split()[0] for ln in lines[:-1]} == ids
    assert lines[-1] == "12 cells, 0 done"
    assert not (tmp_path / "o").exists()  # a dry run creates nothing
    (tmp_path / "afile").write_text("x")
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "afile"), "--dry-run"])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"Error: --out {str(tmp_path / 'afile')!r} is a file: allowed a directory"], res.output


def test_dry_run_shows_no_d_for_a_data_file(tmp_path):
    """(A user trial: d=100, the run's default, listed beside a file of 6 features.)"""
    X = np.random.default_rng(0).standard_normal((40, 6))
    np.savez(tmp_path / "x.npz", X=X, y=np.where(X[:, 0] > 0, 1.0, -1.0))
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[run]\ntopology = "ring"\nn = 8\nproblem = "logistic"\n'
                    f'[[grid]]\ndata = "{tmp_path}/x.npz"\n[[grid]]\nd = 5\n')
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "o"), "--dry-run"])
    assert res.exit_code == 0, res.output
    on_file, synthetic = sorted(res.output.splitlines()[:2], key=lambda ln: "x.npz" not in ln)
    assert " d=" not in on_file and " d=5 " in synthetic


@pytest.mark.parametrize("body,match", [
    ('topology = "hypercube"\nn = 300', "power of 2"),
    ('topology = "torus"\nn = 10', "perfect square"),
    ('topology = "ring"\nn = 10\nproblem = "hetero_quadratic"\nmu = 5.0\nL = 1.0', "mu=5.0"),
    ('topology = "ring"\nn = 10\nself_weight = 0.0', "eigenvalue -1"),
    (('topology = "erdos_renyi"\nn = 12\nprob = 0.3\ngraph_seed = 2\n'
      'problem = "hetero_quadratic"\nmu = 5.0\nL = 1.0'),
     r"mu=5.0 is invalid: allowed a number in \(0, 1\]"),
    ('topology = "ring"\nn = 10\nnoise = "minibatch+gaussian"',
     "noise='minibatch\\+gaussian' draws rows of a problem's data"),
    ('topology = "ring"\nn = 10\nproblem = "logistic"\n[[grid]]\nbatch_size = [1, 8]',
     "batch_size=8 applies to noise 'minibatch' and 'minibatch\\+gaussian' only"),
])
def test_values_only_a_build_can_judge_fail_before_anything_runs(body, match):
    """Checked by building each distinct topology and problem once while expanding (the
    problem first: a disconnected random graph does not hide a wrong mu)."""
    with pytest.raises(FastGTError, match=match):
        G.parse_spec(f"[run]\n{body}\n").cells()


def test_a_data_file_with_fewer_rows_than_nodes_fails_before_anything_runs(tmp_path):
    """A file's rows are split across the cell's nodes while the spec is read (on a torus,
    whose n comes from rows x cols, too)."""
    path = tmp_path / "tiny.npz"
    np.savez(path, X=np.ones((10, 3)), y=np.arange(10) % 2)
    for topo in ('topology = "ring"\nn = 64', 'topology = "torus"\nrows = 4\ncols = 4'):
        with pytest.raises(FastGTError, match=r"the data have 10 rows for n=(64|16) nodes"):
            G.parse_spec(f'[run]\n{topo}\nproblem = "logistic"\ndata = "{path}"\n').cells()
    (cell,) = G.parse_spec(f'[run]\ntopology = "ring"\nn = 10\nproblem = "logistic"\n'
                           f'data = "{path}"\n').cells()
    assert cell.params["data"] == str(path)
    # the file fixes d: a d listed beside it would make cells that differ in name only
    text = f'[run]\ntopology = "ring"\nn = 10\nproblem = "logistic"\ndata = "{path}"\n'
    with pytest.raises(FastGTError, match=r"spec.toml line 7: d = 50 does not apply to "
                                          r"data = .*: its d is the file's, 3 \(leave d out\)"):
        G.parse_spec(text + "[[grid]]\nd = [3, 50]\n", source="spec.toml").cells()
    assert len(G.parse_spec(text + "d = 3\n").cells()) == 1
    # a d in another table (synthetic data there) is that table's: the file's cells keep theirs
    two = text + '[[grid]]\nseed = [0, 1]\n[[grid]]\ndata = "synthetic"\nd = 8\n'
    cells = G.parse_spec(two, source="spec.toml").cells()
    assert sorted(c.params["data"] == "synthetic" for c in cells) == [False, False, True]


def test_a_data_files_cells_show_its_d(tmp_path):
    """A cell's d column (cells and traces) is the d that ran, a data file's (and
    local_steps and dtype those that ran where unset); its id and provenance keep the
    grid's parameters (d's default among them)."""
    path = tmp_path / "tiny.npz"
    np.savez(path, X=np.arange(30.0).reshape(10, 3) % 7, y=np.arange(10) % 2)
    spec = tmp_path / "g.toml"
    spec.write_text(f'[run]\ntopology = "ring"\nn = 5\nproblem = "logistic"\ndata = "{path}"\n'
                    'noise = "full"\nsteps = 20\nrecord_every = 10\n')
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    cells, traces = fastgt.load(tmp_path / "o")
    assert cells["d"].tolist() == [3] and set(traces["d"]) == {3}
    import pyarrow.parquet as pq  # the files themselves show what ran (read by any reader)

    raw = pq.read_table(tmp_path / "o" / "cells").to_pylist()[0]
    assert (raw["d"], raw["local_steps"], raw["dtype"]) == (3, 1, "float64")
    (cell,) = G.load_spec(spec).cells()
    store = fastgt.sweep.storage.Store(tmp_path / "o", create=False)
    assert store.provenance(cell.id)["params"] == cell.params and cell.params["d"] == 100
    assert fastgt.load(tmp_path / "o", where={"d": 3})[0]["id"].tolist() == [cell.id]


def test_a_rerun_says_which_data_files_changed_since_their_cells_ran(tmp_path):
    """A file's path, not its content, is part of a cell's id: a rerun after the file was
    rewritten keeps the old cells, and says so (--force recomputes them)."""
    import os

    path = tmp_path / "tiny.npz"
    np.savez(path, X=np.arange(30.0).reshape(10, 3) % 7, y=np.arange(10) % 2)
    spec = tmp_path / "g.toml"
    spec.write_text(f'[run]\ntopology = "ring"\nn = 5\nproblem = "logistic"\ndata = "{path}"\n'
                    'noise = "full"\nsteps = 20\nrecord_every = 10\n[[grid]]\nseed = [0, 1]\n')
    args = [str(spec), "--out", str(tmp_path / "o"), "--quiet"]
    assert CliRunner().invoke(grid_cmd, args).exit_code == 0
    again = CliRunner().invoke(grid_cmd, args)
    assert again.exit_code == 0 and "skipped cells ran on" not in again.output
    np.savez(path, X=np.arange(30.0).reshape(10, 3) % 5, y=np.arange(10) % 2)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a coarse clock: later
    again = CliRunner().invoke(grid_cmd, args)
    assert again.exit_code == 0 and f"  2 of the skipped cells ran on {path} before its " \
        "size or modification time changed: --force computes them again" in \
        again.output.splitlines(), again.output
    forced = CliRunner().invoke(grid_cmd, [*args, "--force"])
    assert forced.exit_code == 0 and "skipped cells ran on" not in forced.output
    assert "skipped cells ran on" not in CliRunner().invoke(grid_cmd, args).output


def test_parameters_a_cell_ignores_are_null_in_its_columns(tmp_path):
    """split_alpha without a dirichlet split, samples and label_noise beside a data file,
    sigma2 and batch_size with a noise that takes none: null in the cells' and traces'
    columns (a plot over split_alpha must not put iid cells at its default), in files
    written before too (to_pandas, where-filters); the ids keep them (the d of a data file
    aside: the file fixes it)."""
    path = tmp_path / "tiny.npz"
    np.savez(path, X=np.arange(40.0).reshape(20, 2) % 7, y=np.arange(20) % 2)
    base = {"topology": "ring", "n": 8, "problem": "logistic", "data": "a.svm",
            "noise": "minibatch", "batch_size": 4}
    for params, ignored in ((base, "split_alpha"),
                            ({"topology": "ring", "n": 8, "noise": "none"}, "sigma2")):
        cell = G.make_cell(params)
        assert cell.params[ignored] == 1.0  # a default the cell ignores, in its id
        kept = {k: v for k, v in cell.params.items() if k != "d" or "data" not in params}
        version = 3 if "problem" in params else 2  # logistic's own since 2026-11-27
        blob = json.dumps({"numerics": version, "params": kept}, sort_keys=True,
                          separators=(",", ":"))
        assert cell.id == hashlib.sha256(blob.encode()).hexdigest()[:16]
    spec = tmp_path / "g.toml"
    spec.write_text(f'[run]\ntopology = "ring"\nn = 4\nproblem = "logistic"\ndata = "{path}"\n'
                    'steps = 20\nrecord_every = 10\n[[grid]]\nnoise = "minibatch"\n'
                    'batch_size = 2\nsplit = ["iid", "dirichlet"]\n[[grid]]\nnoise = "full"\n'
                    'split = "dirichlet"\nsplit_alpha = 0.5\n')
    out = tmp_path / "o"
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    cols = ["split", "noise", "split_alpha", "batch_size", "sigma2", "samples", "label_noise"]
    import pyarrow.parquet as pq

    def rows(table):
        return sorted((tuple(r.get(c) for c in cols) for r in table), key=repr)

    want = rows([{"split": "dirichlet", "noise": "full", "split_alpha": 0.5},
                 {"split": "dirichlet", "noise": "minibatch", "split_alpha": 1.0,
                  "batch_size": 2},
                 {"split": "iid", "noise": "minibatch", "batch_size": 2}])
    assert rows(pq.read_table(out / "cells").to_pylist()) == want  # the files themselves
    cells, traces = fastgt.load(out)
    assert rows(cells.astype(object).where(cells.notna(), None).to_dict("records")) == want
    assert traces.groupby("id")["split_alpha"].first().isna().sum() == 1
    assert len(fastgt.load(out, where={"split_alpha": 1.0})[0]) == 1
    # files from before: the defaults written as values, read as null, filtered as such,
    # whatever columns are read
    for sub in ("cells", "traces"):
        (path,) = (out / sub).glob("part-*.parquet")
        old = pq.read_table(path)
        for key, default in (("split_alpha", 1.0), ("sigma2", 1.0), ("samples", 100),
                             ("label_noise", 0.1), ("batch_size", 1)):
            filled = pc.fill_null(old[key], pa.scalar(default, old[key].type))
            old = old.set_column(old.column_names.index(key), key, filled)
        pq.write_table(old, path)
    assert pq.read_table(out / "cells")["split_alpha"].null_count == 0  # as before the rule
    again, old_traces = fastgt.load(out)
    assert rows(again.astype(object).where(again.notna(), None).to_dict("records")) == want
    assert old_traces.groupby("id")["split_alpha"].first().isna().sum() == 1
    some = fastgt.load(out, columns=["id", "split_alpha"], traces=False)[0]
    assert list(some.columns) == ["id", "split_alpha"] and some["split_alpha"].isna().sum() == 1
    kept = fastgt.load(out, where={"split_alpha": 1.0})
    assert kept[0]["split"].tolist() == ["dirichlet"] and set(kept[1]["split"]) == {"dirichlet"}


def test_the_conditions_under_which_parameters_apply_are_the_engines():
    """params.CONDITIONAL, written without importing numba, against what the engine does:
    sigma2 for the noises that add a term, batch_size for those that draw rows, split_alpha
    for a split that exists, samples and label_noise for the synthetic data's name."""
    from fastgt.data import SPLITS
    from fastgt.kernels.oracles import NONE
    from fastgt.params import CONDITIONAL
    from fastgt.problems import NOISES
    from fastgt.problems.base import SAMPLED

    assert CONDITIONAL["sigma2"] == ("noise", tuple(k for k, v in NOISES.items() if v != NONE))
    assert CONDITIONAL["batch_size"] == ("noise", SAMPLED)
    assert CONDITIONAL["split_alpha"] == ("split", ("dirichlet",)) and "dirichlet" in SPLITS
    synthetic = problem_flat_params("logistic")["data"]
    assert CONDITIONAL["samples"] == CONDITIONAL["label_noise"] == ("data", (synthetic,))
    assert set(CONDITIONAL) == {"sigma2", "batch_size", "split_alpha", "samples", "label_noise"}


def test_a_disconnected_random_graph_is_a_cell_not_a_spec_error():
    """erdos_renyi(n=12, prob=0.3) is disconnected for graph_seed 2 only: the spec is fine,
    that cell fails when it runs (tests/sweep/test_sweep.py), and fastgt.topology still refuses it."""
    cells = G.parse_spec('[run]\ntopology = "erdos_renyi"\nn = 12\nprob = 0.3\n'
                         '[[grid]]\ngraph_seed = [0, 1, 2, 3]\n').cells()
    assert [c.params["graph_seed"] for c in cells] == [0, 1, 2, 3]
    with pytest.raises(FastGTError, match="disconnected"):
        fastgt.topology("erdos_renyi", n=12, prob=0.3, seed=2)


def test_per_cell_parameters_agree_with_run_batch():
    """The registry's per-cell parameters are those run_batch takes per cell (the run's
    own) and those only the weights of W depend on (the topology's)."""
    from fastgt.params import PARAMS, PER_CELL
    from fastgt.runner import CELL_KEYS

    run_scope = {k for k in PER_CELL if PARAMS[k].scope == "run"}
    assert run_scope == set(CELL_KEYS) - {"topology", "x0"}
    assert {k for k in PER_CELL if PARAMS[k].scope == "topology"} == {"alpha", "self_weight"}


def test_a_list_of_tables_is_one_value_and_a_list_of_them_an_axis():
    text = ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 8}]\n\n'
            '[[grid]]\nseed = [0, 1]\n\n[[grid]]\nmatrices = [[{topology = "ring", n = 8}], '
            '[{n = 8, topology = "complete"}, {topology = "ring", n = 8}]]\n')
    cells = G.parse_spec(text).cells()
    mats = sorted({c.params["matrices"] for c in cells})
    assert len(cells) == 3 and mats == [
        '[{"n":8,"topology":"complete"},{"n":8,"topology":"ring"}]', '[{"n":8,"topology":"ring"}]']
    again = G.parse_spec(G.parse_spec(text).to_toml()).cells()  # DIR/grid.toml reads back
    assert [c.id for c in again] == [c.id for c in cells]


def test_a_run_key_that_does_not_apply_hints_at_the_grid_tables_only_when_there_are_some():
    with pytest.raises(FastGTError) as err:
        G.parse_spec('[run]\ntopology = "complete"\nn = 8\nself_weight = 0.4\n').cells()
    assert str(err.value).endswith("self_weight does not apply to topology 'complete': "
                                   "allowed n, lazy"), err.value


def test_topology_tables_are_checked_and_kept_in_one_spelling(monkeypatch):
    """A topology table's entries are checked where the spec is read, and the table kept in
    one spelling, its family's defaults left out; a table that sets no default hashes as it
    did (the ids of commit 3120cb3, of numerics version 1, back under that version): an
    inline list (from_edges' edges) is the family's to judge."""
    monkeypatch.setattr(numerics, "NUMERICS_VERSION", 1)
    ring = '[run]\ntopology = "ring"\nn = 8\ntopology_y = {topology = "ring", n = 8, %s}\n'
    (cell,) = G.parse_spec(ring % "self_weight = 0.5").cells()
    assert cell.id == "201e8105e9b8241c"
    cycle = ('[run]\ntopology = "cycle"\nmatrices = [{topology = "ring", n = 8}, '
             '{topology = "complete", n = 8}]\n')
    assert G.parse_spec(cycle).cells()[0].id == "b9d3d792339d64c0"
    edges = ('[run]\ntopology = "cycle"\nmatrices = [{topology = "from_edges", edges = '
             '[[0, 1], [2, 3]]}, {topology = "from_edges", edges = [[1, 2], [3, 0]]}]\n')
    (cell,) = G.parse_spec(edges).cells()
    assert cell_topology(cell.params).spectrum().p_eff > 0  # alternating matchings
    cli = G.make_cell({"topology": "ring", "n": 8, "topology_y": '{"n": 8, "topology": '
                       '"ring", "self_weight": 0.5, "lazy": false}'})  # JSON, as the CLI gives it
    assert cli.params["topology_y"] == '{"n":8,"self_weight":0.5,"topology":"ring"}'
    toml = G.make_cell({"topology": "ring", "n": 8, "topology_y": '{topology = "ring", n = 8, '
                        'self_weight = 0.5}'})  # TOML on the command line: the same cell
    assert toml.params["topology_y"] == cli.params["topology_y"] and toml.id == cli.id
    steps = G.make_cell({"topology": "cycle", "matrices": '[{topology = "ring", n = 8}, '
                         '{topology = "complete", n = 8}]'})
    assert steps.id == G.parse_spec(cycle).cells()[0].id


def test_topology_y_is_a_table_and_a_list_of_tables_an_axis(tmp_path):
    text = ('[run]\ntopology = "ring"\nn = 8\nd = 2\nsteps = 20\nrecord_every = 10\n\n'
            '[[grid]]\ntopology_y = [{topology = "complete", n = 8}, '
            '{topology = "ring", n = 8, self_weight = 0.5}]\n\n'
            '[[grid]]\nalgorithm = "gt_atc"\ntopology_y = {topology = "complete", n = 8}\n')
    cells = G.parse_spec(text).cells()
    assert sorted(c.params["topology_y"] for c in cells) == [
        '{"n":8,"self_weight":0.5,"topology":"ring"}', '{"n":8,"topology":"complete"}',
        '{"n":8,"topology":"complete"}']
    spec = tmp_path / "y.toml"
    spec.write_text(text)
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "theory_* columns stay empty" not in res.output
    cells = fastgt.load(tmp_path / "out", traces=False)[0]
    assert cells["theory_consensus"].notna().all()  # circulants: W's modes are W_y's
    row = cells[(cells["algorithm"] == "gt") & cells["topology_y"].str.contains("ring")].iloc[0]
    direct = fastgt.run(topology="ring", n=8, d=2, steps=20, record_every=10,
                        topology_y={"topology": "ring", "n": 8, "self_weight": 0.5})
    assert row["loss_nodes"] == direct.summary["loss_nodes"]
    exact = fastgt.theory.stationary(fastgt.topology("ring", n=8), "gt", 0.01, d=2,
                                     topology_y=fastgt.topology("ring", n=8, self_weight=0.5),
                                     record_every=10)
    assert row["theory_consensus"] == exact["consensus"]


def test_topology_y_for_an_algorithm_without_tracking_is_refused_before_running(tmp_path):
    spec = tmp_path / "y.toml"
    spec.write_text('[run]\ntopology = "ring"\nn = 8\nalgorithm = "dsgd"\n'
                    'topology_y = {topology = "complete", n = 8}\n')
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and "not dsgd" in res.output.splitlines()[-1], res.output
    assert f"{spec} line 5: cell with algorithm=dsgd" in res.output  # the table's line
    assert not (tmp_path / "out").exists()
    spec.write_text('[run]\ntopology = "ring"\nn = 8\n[[grid]]\nalgorithm = "gt"\n'
                    'topology_y = [{topology = "ring", n = 8, slef_weight = 0.5}]\n')
    res = CliRunner().invoke(grid_cmd, [str(spec), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and f"{spec} line 6: topology_y: slef_weight does not apply to " \
        "topology 'ring'" in res.output
