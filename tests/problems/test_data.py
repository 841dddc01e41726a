"""Data files (LIBSVM, .npz dense and sparse, Parquet) written here and read back
identically; splits across nodes; every bad input as a one-line error naming it."""

import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sps

import fastgt
from fastgt.data import read_file, split_rows
from fastgt.errors import FastGTError


def _data(rows=40, d=6, seed=0):
    g = np.random.default_rng(seed)
    X = sps.random(rows, d, density=0.5, random_state=seed, format="csr")
    X.data = np.round(X.data * 64 + 1) / 64  # exact in any text format, never zero
    y = np.where(g.random(rows) < 0.5, 1.0, -1.0)
    return X, y


def test_libsvm_npz_and_parquet_read_back_identically(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = _data()
    dump_svmlight_file(X, y, str(tmp_path / "a.svm"))
    sps.save_npz(tmp_path / "s.npz", X)
    with np.load(tmp_path / "s.npz") as z:
        np.savez(tmp_path / "s.npz", **z, y=y)
    np.savez(tmp_path / "d.npz", X=X.toarray(), y=y)
    sps.save_npz(tmp_path / "c.npz", X.tocoo())
    with np.load(tmp_path / "c.npz") as z:
        assert z["format"].item() in ("coo", b"coo")
        np.savez(tmp_path / "c.npz", **z, y=y)
    pd.DataFrame({**{f"f{k}": X.toarray()[:, k] for k in range(6)}, "label": y}).to_parquet(
        tmp_path / "p.parquet")
    for name, sparse in (("a.svm", True), ("s.npz", True), ("c.npz", True), ("d.npz", False),
                         ("p.parquet", False)):
        A, labels = read_file(str(tmp_path / name))
        assert sps.issparse(A) == sparse, name
        np.testing.assert_array_equal(A.toarray() if sparse else A, X.toarray(), err_msg=name)
        np.testing.assert_array_equal(labels, y)
    a = fastgt.problem("logistic", data=str(tmp_path / "a.svm")).build(4, 100)
    b = fastgt.problem("logistic", data=str(tmp_path / "d.npz")).build(4, 100)
    assert a.d == b.d == 6 and a.sparse and not b.sparse  # the file fixes d
    assert a.fstar == pytest.approx(b.fstar, rel=1e-12)
    res = fastgt.run(topology="ring", n=4, problem=fastgt.problem("logistic",
                     data=str(tmp_path / "a.svm")), noise="none", steps=3, record_every=3)
    assert res.config["d"] == 6 and res.state["X"].shape == (4, 6)
    # a pathlib.Path names the file as its text does, in fastgt.run's flat form too
    via_path = fastgt.run(topology="ring", n=4, problem="logistic", data=tmp_path / "a.svm",
                          noise="none", steps=3, record_every=3)
    np.testing.assert_array_equal(via_path.state["X"], res.state["X"])
    spec = fastgt.problem("logistic", data=tmp_path / "a.svm")
    assert spec.params["data"] == str(tmp_path / "a.svm")


def test_labels_become_plus_minus_one(tmp_path):
    X, y = _data()
    np.savez(tmp_path / "d.npz", X=X.toarray(), y=np.where(y > 0, 7.0, 3.0))
    inst = fastgt.problem("logistic", data=str(tmp_path / "d.npz")).build(4, 1)
    assert set(np.unique(inst.y)) == {-1.0, 1.0}


@pytest.mark.parametrize("how", ["iid", "dirichlet", "sorted"])
def test_splits_give_every_node_rows_and_a_histogram(how):
    g = np.random.default_rng(3)
    y = g.integers(0, 4, size=200).astype(float)
    sp = split_rows(y, 30, how, 0.05, True, np.random.default_rng(1))
    sizes = np.diff(sp.offsets)
    assert sizes.min() >= 1 and sizes.sum() == 200
    assert sorted(sp.order) == list(range(200))
    np.testing.assert_array_equal(sp.counts.sum(axis=1), sizes)
    for i in range(30):  # the histogram counts the node's own rows
        rows = y[sp.order[sp.offsets[i]:sp.offsets[i + 1]]]
        np.testing.assert_array_equal(sp.counts[i], [np.sum(rows == c) for c in sp.classes])
    if how == "iid":
        assert sizes.max() - sizes.min() <= 1
    if how == "sorted":  # most nodes see one class
        assert np.mean((sp.counts > 0).sum(axis=1) == 1) > 0.8


def test_dirichlet_skew_grows_as_alpha_shrinks():
    y = np.repeat([-1.0, 1.0], 500)

    def skew(alpha):
        sp = split_rows(y, 20, "dirichlet", alpha, True, np.random.default_rng(0))
        share = sp.counts[:, 1] / sp.counts.sum(axis=1)
        return np.mean(np.abs(share - 0.5))

    assert skew(0.05) > skew(1.0) > skew(100.0)
    assert skew(100.0) < 0.1 and skew(0.05) > 0.3


def test_heterogeneity_zeta2_grows_with_skew():
    z = [fastgt.problem("logistic", split="dirichlet", split_alpha=a, samples=50).build(16, 5).zeta2
         for a in (0.1, 10.0)]
    assert z[0] > 3 * z[1]


@pytest.mark.parametrize("kw, words", [
    ({"data": "/no/such/file.svm"}, "data="),
    ({"data": np.zeros((8, 3))},  # one line (a user trial)
     r"^data=<ndarray of shape \(8, 3\)> is invalid: allowed 'synthetic' or the path"),
    ({"split": "random"}, "split="),
    ({"split_alpha": 0.0}, "split_alpha="),
    ({"batch_size": 0}, "batch_size="),
    ({"samples": 0}, "samples="),
    ({"reg": -1.0}, "reg="),
    ({"label_noise": 0.7}, "label_noise="),
    ({"d": 20}, ("d is the run's, not a parameter of problem 'logistic': give it to "
                 "fastgt.run or the grid")),
    ({"problem_seed": 3}, ("^problem_seed is fastgt.run's, the grids' and the CLI's name for "
                           r"the problem's seed: here seed=3$")),
])
def test_bad_problem_parameters_name_themselves(kw, words):
    with pytest.raises(FastGTError, match=words):
        fastgt.problem("logistic", **kw).build(4, 3)


def test_bad_files_and_shapes(tmp_path):
    (tmp_path / "bad.svm").write_text("this is not libsvm\n")
    with pytest.raises(FastGTError, match="not a readable LIBSVM"):
        read_file(str(tmp_path / "bad.svm"))
    np.savez(tmp_path / "three.npz", X=np.eye(6), y=np.arange(6.0) % 3)
    with pytest.raises(FastGTError, match="exactly two classes"):
        fastgt.problem("logistic", data=str(tmp_path / "three.npz")).build(2, 1)
    fastgt.problem("least_squares", data=str(tmp_path / "three.npz")).build(2, 1)  # any targets
    with pytest.raises(FastGTError, match="n <= rows"):
        fastgt.problem("least_squares", data=str(tmp_path / "three.npz")).build(8, 1)
    np.savez(tmp_path / "noy.npz", X=np.eye(3))
    with pytest.raises(FastGTError, match=r"has no array y \(the labels or targets\), only "
                                          r"\['X'\]: allowed X and y"):
        read_file(str(tmp_path / "noy.npz"))
    pd.DataFrame({"y": [1, -1]}).to_parquet(tmp_path / "nofeature.parquet")
    with pytest.raises(FastGTError, match="has no feature column beside its label 'y': "
                                          "allowed one or more numeric columns"):
        read_file(str(tmp_path / "nofeature.parquet"))
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "nolabel.parquet")
    with pytest.raises(FastGTError, match="label column"):
        read_file(str(tmp_path / "nolabel.parquet"))
    pd.DataFrame({"a": [1.0, 2.0], "y": [1, -1], "label": [-1, 1]}).to_parquet(
        tmp_path / "two.parquet")  # either could be the other's feature: a label leak
    with pytest.raises(FastGTError, match=r"has 2 label columns \(y, label\): allowed one"):
        read_file(str(tmp_path / "two.parquet"))
    pd.DataFrame({"a": [1.0, 2.0], "y": ["cat", "dog"]}).to_parquet(tmp_path / "str.parquet")
    np.savez(tmp_path / "str.npz", X=np.eye(2), y=np.array(["cat", "dog"]))
    for name in ("str.parquet", "str.npz"):
        with pytest.raises(FastGTError, match="has labels of type .*: allowed numbers"):
            read_file(str(tmp_path / name))
    (tmp_path / "text.npz").write_text("1 2 3\n")  # numpy would advise allow_pickle
    with pytest.raises(FastGTError, match=r"is not an \.npz archive \(the zip of arrays"):
        read_file(str(tmp_path / "text.npz"))
    for suffix in (".csv", ".npy"):
        (tmp_path / f"f{suffix}").write_text("a,b\n1,2\n")
        with pytest.raises(FastGTError, match=rf"a \{suffix} file is not read: allowed a LIBSVM"):
            read_file(str(tmp_path / f"f{suffix}"))
    np.savez(tmp_path / "nan.npz", X=np.full((3, 2), np.nan), y=np.ones(3))
    with pytest.raises(FastGTError, match="NaN"):
        read_file(str(tmp_path / "nan.npz"))


@pytest.mark.parametrize("noise", ["minibatch", "minibatch+gaussian"])
def test_minibatch_needs_a_problem_with_data(noise):
    with pytest.raises(FastGTError, match=re.escape(f"noise='{noise}' draws rows")):
        fastgt.run(topology="ring", n=4, d=2, noise=noise, steps=2)


@pytest.mark.parametrize("noise", ["gaussian", "none", "full", "structured"])
def test_a_batch_size_without_minibatch_noise_is_refused(noise):
    """batch_size only acts under the minibatch noises: given with another, it would be
    recorded and silently ignored (a grid over it: identical cells)."""
    prob = fastgt.problem("least_squares", samples=4, batch_size=3)
    with pytest.raises(FastGTError, match=re.escape(
            f"batch_size=3 applies to noise 'minibatch' and 'minibatch+gaussian' only: "
            f"with noise='{noise}'")):
        fastgt.run(topology="ring", n=4, d=2, problem=prob, noise=noise, steps=2)
    assert fastgt.run(topology="ring", n=4, d=2, problem=prob, noise="minibatch",
                      steps=2).config["problem_batch_size"] == 3


def test_the_cli_takes_the_problem_and_refuses_bad_data(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from fastgt.cli import main

    ok = CliRunner().invoke(main, ["run", "--topology", "ring", "--n", "8", "--problem",
                                   "logistic", "--split", "dirichlet", "--split-alpha", "0.5",
                                   "--noise", "minibatch", "--batch-size", "4", "--d", "5",
                                   "--steps", "50", "--stepsize", "0.5"])
    assert ok.exit_code == 0, ok.output
    assert "accuracy" in ok.output
    assert "problem  logistic(split='dirichlet', split_alpha=0.5, batch_size=4)" in ok.output
    bad = CliRunner().invoke(main, ["run", "--topology", "ring", "--n", "8", "--problem",
                                    "logistic", "--data", str(tmp_path / "missing.svm")])
    assert bad.exit_code == 2 and "data=" in bad.output and "Traceback" not in bad.output
    assert len(bad.output.strip().splitlines()) == 1
    assert "relative to" not in bad.output  # an absolute path
    monkeypatch.chdir(tmp_path)  # a relative one: from where it was looked for
    rel = CliRunner().invoke(main, ["run", "--topology", "ring", "--n", "8", "--problem",
                                    "logistic", "--data", "missing.svm"])
    assert rel.exit_code == 2 and f"is not a file (relative to {tmp_path})" in rel.output
    path = tmp_path / "six.npz"
    np.savez(path, X=np.eye(6), y=np.arange(6) % 2)
    base = ["run", "--topology", "ring", "--n", "3", "--problem", "logistic", "--data",
            str(path), "--steps", "5", "--quiet"]
    wrong = CliRunner().invoke(main, [*base, "--d", "50"])
    assert wrong.exit_code == 2 and wrong.output.strip() == (
        f"Error: d=50 does not apply to data={str(path)!r}: its d is the file's, 6 (leave d "
        "out)")
    for d in ([], ["--d", "6"]):
        assert CliRunner().invoke(main, [*base, *d]).exit_code == 0
    with pytest.raises(FastGTError, match="d=50 does not apply to data="):  # Python alike
        fastgt.run(topology="ring", n=3, problem="logistic", data=str(path), d=50, steps=2)
    assert fastgt.run(topology="ring", n=3, problem="logistic", data=str(path), d=6,
                      steps=2).config["d"] == 6


@pytest.mark.parametrize("kw, words", [
    ({"split": "iid", "split_alpha": 0.3}, "split_alpha=0.3 applies to split='dirichlet' only"),
    ({"split": "sorted", "split_alpha": 5.0}, "split_alpha=5 applies to split='dirichlet' only"),
    ({"samples": 10}, "samples=10 applies to data='synthetic' only"),
    ({"label_noise": 0.3}, "label_noise=0.3 applies to data='synthetic' only"),
])
def test_a_parameter_the_split_or_data_ignore_is_refused(tmp_path, kw, words):
    """Given with a split or a data file that does not use it, it would be recorded and
    silently ignored (a grid over it: identical cells under different ids)."""
    path = tmp_path / "six.npz"
    np.savez(path, X=np.eye(6), y=np.arange(6) % 2)
    data = {} if "split" in kw else {"data": str(path)}
    with pytest.raises(FastGTError, match=re.escape(words)):
        fastgt.problem("logistic", **data, **kw).build(3, 2)
    fastgt.problem("logistic", split="dirichlet", split_alpha=0.3).build(3, 2)
    fastgt.problem("logistic", samples=10, label_noise=0.3).build(3, 2)


def test_a_data_file_changed_on_disk_is_read_again(tmp_path):
    """Instances are kept per process (a sweep's cells share one): keyed by the file's size
    and time too, so that a notebook that rewrites its data gets the new rows."""
    path = tmp_path / "d.npz"
    X, y = _data()
    np.savez(path, X=X.toarray(), y=y)
    spec = fastgt.problem("logistic", data=str(path))
    first = spec.build(4, 1)
    assert spec.build(4, 1) is first
    np.savez(path, X=3 * X.toarray(), y=y)
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 10**9))  # a newer time, whatever the clock
    again = spec.build(4, 1)
    np.testing.assert_array_equal(again.A, 3 * first.A)  # the same split of the new rows
    assert again.fstar != first.fstar


def test_separable_data_without_reg_have_no_minimizer_and_are_refused(tmp_path):
    """Logistic loss on linearly separable rows tends to 0 along a separating direction:
    with reg = 0 no point attains it, and the solver's far-out point (tiny gradient) would
    be a meaningless x*. Overlapping classes have one (f* >= a row's weight x log 2)."""
    g = np.random.default_rng(5)
    X = g.normal(size=(40, 3))
    y = np.sign(X[:, 0] + 0.1)
    np.savez(tmp_path / "sep.npz", X=X, y=y)
    y[:4] = -y[:4]  # overlapping classes (with this seed): a minimizer
    np.savez(tmp_path / "overlap.npz", X=X, y=y)
    sep, overlap = str(tmp_path / "sep.npz"), str(tmp_path / "overlap.npz")
    for name in ("logistic", "nonconvex"):  # reg = 0: the same loss
        with pytest.raises(FastGTError, match=f"{name} with reg = 0 has no minimizer on these "
                                              "data: they are linearly separable"):
            _ = fastgt.problem(name, data=sep, reg=0.0).build(4, 1).fstar
    assert fastgt.problem("logistic", data=sep, reg=0.01).build(4, 1).fstar > 0
    assert fastgt.problem("logistic", data=overlap, reg=0.0).build(4, 1).fstar > 0


def test_synthetic_data_without_label_noise_or_reg_are_refused_in_a_spec(tmp_path):
    """Synthetic labels of a planted x, none flipped, are always separable: with reg = 0 a
    grid refuses the cell while its spec is read (a user trial: `fastgt run` refused it,
    the same cell in a grid passed the checks and failed as it ran)."""
    from fastgt.sweep.grid import parse_spec

    text = ('[run]\ntopology = "ring"\nn = 16\nproblem = "nonconvex"\nreg = 0.0\n'
            'label_noise = 0.0\n')
    with pytest.raises(FastGTError, match="nonconvex with reg = 0 has no minimizer on this "
                                          "synthetic data: its labels, sign"):
        parse_spec(text).cells()
    noisy = text.replace("label_noise = 0.0", "label_noise = 0.1")
    assert len(parse_spec(noisy).cells()) == 1
    with pytest.raises(FastGTError, match="its 32 rows in d = 40 dimensions are linearly"):
        fastgt.problem("logistic", reg=0.0, label_noise=0.1, samples=2).build(16, 40)
    assert fastgt.problem("logistic", reg=0.0, label_noise=0.1).build(16, 3).fstar > 0


def test_a_batch_beyond_every_nodes_rows_is_said():
    """(A user trial: batch_size = 10^9 with 100 rows a node ran for minutes, silently.)"""
    prob = fastgt.problem("logistic", samples=10, batch_size=11).build(4, 3)
    with pytest.warns(fastgt.FastGTWarning, match=r"batch_size=11 draws more rows per "
                                                  r"gradient than any node has \(at most 10\)"):
        prob.for_noise("minibatch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastgt.problem("logistic", samples=10, batch_size=10).build(4, 3).for_noise("minibatch")

