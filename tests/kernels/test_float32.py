"""dtype="float32": what a float32 state costs in memory, the warnings where its rounding
would dominate a metric, and its errors. Its trajectories against the dense reference are
checked in test_kernels.py (RTOL32), its bits (threads, batches, recomputed gradients,
kernel-call chunking) in test_batch.py and test_invariants.py, its plateaus against the
exact theory in test_statistics.py."""

import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import fastgt
from fastgt.algorithms import ALGORITHMS, Batch, Cell
from fastgt.cli import main
from fastgt.problems import make_noise

pytestmark = pytest.mark.usefixtures("one_numba_thread")

TORUS = {"topology": "torus", "rows": 5, "cols": 10, "lazy": True, "d": 20}


def _run(**kw):
    return fastgt.run(**{**TORUS, "stepsize": 0.1, "steps": 400, "record_every": 20, **kw})


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_float32_state_is_half_the_bytes(algorithm):
    """Every state array of every algorithm is float32, and the n rows of all of them take
    half the bytes of the float64 state (d = 32: whole lines in both types, no extra
    padding; the spare rows past n that space the buffers apart differ)."""
    W, n, d = fastgt.topology("ring", n=40), 40, 32
    prob = fastgt.problem("hetero_quadratic").build(n, d)
    cell = [Cell(W, make_noise("gaussian", 1.0, d, W), 0.05, 1)]
    sizes = {}
    for dtype in ("float64", "float32"):
        arrays = ALGORITHMS[algorithm].alloc(Batch(cell, prob, dtype=dtype))
        assert all(a.dtype == dtype for a in arrays)
        sizes[dtype] = sum({id(a): a[..., :n, :].size * a.itemsize for a in arrays}.values())
    assert sizes["float32"] * 2 == sizes["float64"]



@pytest.mark.parametrize("problem,kw", [("hetero_quadratic", {}),
                                        ("logistic", {"samples": 4})])
def test_a_float32_batch_reads_the_problem_rounded_as_fastgt_run_does(problem, kw):
    """Batch rounds the problem to its state's type (Problem.in_dtype), once: a Batch built
    directly got the float64 arrays beside a float32 state (kernel copies no run uses),
    and asking a rounded problem again gives it back (a data problem's optimum is cached
    under its variant's key: a second rounding would have solved it again)."""
    W, d = fastgt.topology("ring", n=6), 3
    prob = fastgt.problem(problem, **kw).build(W.n, d)
    batch = Batch([Cell(W, make_noise("none", 0.0, d, W), 0.05, 1)], prob, dtype="float32")
    rounded = batch.problem
    assert rounded.data_dtype is np.float32 and prob.data_dtype is np.float64
    assert np.array_equal(rounded.A, np.asarray(prob.A, dtype=np.float32))
    assert rounded.in_dtype("float32") is rounded
    assert Batch([Cell(W, make_noise("none", 0.0, d, W), 0.05, 1)], prob).problem is prob


def test_rounding_floors_are_flagged_and_noise_is_not():
    """Setup B's noise is orthogonal to 1, so loss_avg decays to 0: a float64 run reaches
    ~1e-32, a float32 one stops at its rounding floor (~1e-15), and says so for loss_avg and
    grad_norm2 (the metrics of xbar), with a warning; Setup A's plateaus (~1e-4, noise)
    are not flagged; float64 runs are not checked."""
    with pytest.warns(fastgt.FastGTWarning,
                      match="rounding of the state may dominate loss_avg") as seen:
        b32 = _run(noise="structured", dtype="float32")
    assert seen[0].filename == __file__  # the user's line, not fastgt's
    b64 = _run(noise="structured")
    assert b64.summary["loss_avg"] < 1e-28
    assert 1e-17 < b32.summary["loss_avg"] < 1e-12
    assert b32.summary["rounding_limited"] == "loss_avg, grad_norm2"
    assert b64.summary["rounding_limited"] is None  # float64: not checked
    with warnings.catch_warnings():
        warnings.simplefilter("error", fastgt.FastGTWarning)
        a32 = _run(noise="gaussian", dtype="float32")
    assert a32.summary["rounding_limited"] == ""
    with warnings.catch_warnings():  # every node at xbar: consensus exactly 0, no floor
        warnings.simplefilter("error", fastgt.FastGTWarning)
        c32 = _run(algorithm="centralized", noise="gaussian", dtype="float32")
    assert c32.summary["consensus"] == 0.0 and c32.summary["rounding_limited"] == ""
    a64 = _run(noise="gaussian")
    for m in ("loss_avg", "consensus", "tracking"):  # the same plateaus, to float32's few ulps
        assert np.isclose(a32.summary[m], a64.summary[m], rtol=1e-4)


@pytest.mark.parametrize("algorithm", ["gt", "gt_atc"])
def test_a_floor_left_by_the_first_steps_is_flagged(algorithm):
    """(A user trial.) Noiseless GT converging to x* = 0 keeps in ybar (a marginal mode) the
    roundings of its first, large steps: loss_avg stops near 1e-16 in float32 while float64
    goes on to 1e-28 and below; the final state (~1e-9) alone puts the floor far under that,
    the records' history does not. D-SGD's modes contract: its float32 run agrees with
    float64 all the way down, and is not flagged."""
    kw = {"topology": "torus", "rows": 10, "cols": 10, "d": 20, "steps": 3000,
          "record_every": 100, "noise": "none"}
    with pytest.warns(fastgt.FastGTWarning, match="may dominate loss_avg"):
        r32 = fastgt.run(algorithm=algorithm, dtype="float32", **kw)
    r64 = fastgt.run(algorithm=algorithm, **kw)
    assert r32.summary["loss_avg"] > 1e6 * r64.summary["loss_avg"]
    assert {"loss_avg", "grad_norm2"} <= set(r32.summary["rounding_limited"].split(", "))
    with warnings.catch_warnings():
        warnings.simplefilter("error", fastgt.FastGTWarning)
        d32 = fastgt.run(algorithm="dsgd", dtype="float32", **kw)
    assert np.isclose(d32.summary["loss_avg"], fastgt.run(algorithm="dsgd", **kw)
                      .summary["loss_avg"], rtol=1e-4)
    assert d32.summary["rounding_limited"] == ""


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_drifting_algorithms_are_warned_of(algorithm):
    """D² and EXTRA sum float32 roundings into their mean's velocity: every float32 run of
    them warns, before any work, and lists the metrics of xbar as rounding-limited (a
    sweep's column then marks them to check in float64; here a noisy run far from any
    floor, which the others do not flag)."""
    kw = {"algorithm": algorithm, "steps": 20, "record_every": 10, "dtype": "float32",
          "noise": "gaussian"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = _run(**kw)
    drift = [w for w in seen if "second-order recursion" in str(w.message)]
    drifts = ALGORITHMS[algorithm].drifts
    assert len(drift) == drifts
    assert all(w.filename == __file__ for w in drift)  # the user's line, not fastgt's
    assert all(issubclass(w.category, fastgt.FastGTWarning) for w in drift)
    limited = "loss_avg, loss_nodes, grad_norm2" if drifts else ""
    assert res.summary["rounding_limited"] == limited


def test_bad_dtype_is_one_line_everywhere(tmp_path):
    with pytest.raises(fastgt.FastGTError, match="dtype='float16' is invalid: allowed one of "
                                                 "'float64', 'float32'"):
        fastgt.run(topology="ring", n=8, dtype="float16")
    res = CliRunner().invoke(main, ["run", "--n", "8", "--dtype", "half"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "'--dtype': 'half' is not one of 'float64', 'float32'" in res.output
    spec = tmp_path / "spec.toml"
    spec.write_text('[run]\ntopology = "ring"\nn = 8\n[[grid]]\ndtype = ["float32", "int8"]\n')
    res = CliRunner().invoke(main, ["grid", str(spec), "--out", str(tmp_path / "g")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "dtype='int8' is invalid: allowed one of 'float64', 'float32'" in res.output
    assert not (tmp_path / "g").exists()


def test_cli_run_says_what_rounding_limits():
    """fastgt run --dtype float32: the summary names the rounding-limited metrics, and the
    warning is one line on stderr (not Python's file:line form)."""
    with warnings.catch_warnings():  # as outside the tests (pyproject ignores it)
        warnings.simplefilter("default", fastgt.FastGTWarning)
        res = CliRunner().invoke(main, ["run", "--topology", "torus", "--rows", "5", "--cols",
                                        "10", "--lazy", "--d", "20", "--noise", "structured",
                                        "--stepsize", "0.1", "--steps", "400", "--dtype",
                                        "float32", "--quiet"])
    assert res.exit_code == 0, res.output
    table = dict(r.split(None, 1) for r in res.stdout.splitlines() if r.strip())
    assert table["rounding_limited"] == "loss_avg, grad_norm2"
    lines = res.stderr.splitlines()
    assert lines == [("warning: dtype float32: rounding of the state may dominate loss_avg, "
                      "grad_norm2 (its plateau is within the floor its steps' roundings "
                      "accumulate); a float64 run measures them")]


def test_a_sweep_over_dtype(tmp_path):
    """A grid axis over dtype: float64 and float32 cells run in separate batches, both
    stored with their dtype, the float32 ones with rounding_limited; the same plateaus."""
    spec = tmp_path / "spec.toml"
    spec.write_text('[run]\ntopology = "torus"\nrows = 5\ncols = 10\nlazy = true\nd = 20\n'
                    'noise = "structured"\nstepsize = 0.1\nsteps = 400\nrecord_every = 20\n'
                    '[[grid]]\ndtype = ["float64", "float32"]\nseed = [0, 1]\n')
    res = CliRunner().invoke(main, ["grid", str(spec), "--out", str(tmp_path / "g"),
                                    "--workers", "1", "--quiet"])
    assert res.exit_code == 0, res.output
    cells, _ = fastgt.load(tmp_path / "g")
    cells = cells.sort_values(["seed", "dtype"])
    assert list(cells["dtype"]) == ["float32", "float64"] * 2
    flagged = cells.set_index(["dtype", "seed"])["rounding_limited"]
    assert flagged["float32"].tolist() == ["loss_avg, grad_norm2"] * 2
    assert flagged["float64"].isna().all()
    np.testing.assert_allclose(cells["loss_nodes"].iloc[0], cells["loss_nodes"].iloc[1],
                               rtol=1e-4)


def test_hessian_traces_scale_the_rounding_floors():
    """The floors use tr H and tr H^2 of f at xbar: exact for the diagonal quadratics, and
    Hutchinson's 4-probe estimate from gradient differences for the others (least squares:
    H = (1/n) sum_i A_i^T A_i / m_i + reg I), within 5 standard errors: for Rademacher
    probes v^T B v has variance 2 (||B||_F^2 - sum_k B_kk^2), B = H and H^2."""
    quad = fastgt.problem("hetero_quadratic", zeta=1.0).build(12, 7)
    tr, tr2 = quad.hessian_traces(np.zeros(7))
    assert tr == pytest.approx(quad.abar.sum(), rel=1e-15)
    assert tr2 == pytest.approx((quad.abar**2).sum(), rel=1e-15)
    ls = fastgt.problem("least_squares", samples=20, reg=0.1).build(6, 9)
    A = np.asarray(ls.A)  # rows of every node, each of weight 1 / (n m_i) in f
    H = A.T @ (ls.weights[:, None] * A) + 0.1 * np.eye(9)
    est, est2 = ls.hessian_traces(np.ones(9))
    for got, B in ((est, H), (est2, H @ H)):
        se = np.sqrt(2 * (np.sum(B * B) - np.sum(np.diag(B) ** 2)) / 4)
        assert abs(got - np.trace(B)) < 5 * se and se < 0.5 * np.trace(B), (got, np.trace(B), se)


@pytest.mark.parametrize("name,kw", [("hetero_quadratic", {"zeta": 1.0}),
                                     ("logistic", {"samples": 6}),
                                     ("least_squares", {"samples": 6})])
def test_float32_problem_arrays_are_rounded_and_read_as_float32(name, kw, tmp_path):
    """A float32 run reads the problem's per-step arrays (a heterogeneous quadratic's A and
    B, the rows of a data set, dense or sparse) as float32, and its f, x*, f* and metrics
    are those of the rounded problem, so that they describe what the kernels compute; the
    instance is built once per type, its optimum under a key of its own."""
    from fastgt.algorithms.base import padded

    prob = fastgt.problem(name, **kw).build(8, 5)
    p32 = prob.in_dtype("float32")
    assert prob.in_dtype("float64") is prob
    data = p32.kernel_data(lambda M, dtype=np.float64: padded(M, 16, dtype))
    arrays = {k: v for k, v in data._asdict().items() if isinstance(v, np.ndarray)
              and v.dtype.kind == "f" and k != "y"}
    assert arrays and all(v.dtype == np.float32 for v in arrays.values()), arrays.keys()
    A = p32.A.toarray() if hasattr(p32.A, "toarray") else p32.A
    assert np.array_equal(A, A.astype(np.float32).astype(np.float64))  # representable
    assert not np.array_equal(A, prob.A.toarray() if hasattr(prob.A, "toarray") else prob.A)
    if name != "hetero_quadratic":
        assert p32 is prob.in_dtype("float32") and p32.key == f"{prob.key}-float32"
    g = p32.full_grad(p32.xstar)  # the rounded problem's own optimum
    assert np.linalg.norm(g) < 1e-8 * max(1.0, np.linalg.norm(p32.full_grad(np.zeros(5))))
    assert abs(p32.fstar - prob.fstar) < 1e-6 * max(1.0, abs(prob.fstar))


@pytest.mark.parametrize("name,kw", [("ring", {"n": 12}), ("torus", {"rows": 4, "cols": 5}),
                                     ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}),
                                     ("interp_ring", {"n": 16, "alpha": 0.6}),
                                     ("complete", {"n": 10})])
def test_float32_mixing_keeps_consensus_exactly(name, kw):
    """A float32 state mixes in the Laplacian form, x_i + sum_j w_ij (x_j - x_i) (mixing.
    emit_mixed): a state at consensus is mixed to itself, bit for bit, whatever its weights'
    rounding (mixed as sum_j w_ij x_j in float32, four of these five moved coordinates
    by an ulp), and near consensus a row moves by its neighbours' differences, rounded
    once at its own magnitude."""
    from fastgt.kernels.mixing import mix_row, pad_rows

    W = fastgt.topology(name, **kw).period[0]
    indptr, indices, w = pad_rows(W.indptr, W.indices, W.weights[None].astype(np.float64))
    c = np.random.default_rng(2).normal(size=64).astype(np.float32) * np.float32(1e3)
    X = np.tile(c, (W.n, 1))
    mean = c.copy()  # the column means, as the kernels keep them (the state's type)
    out = np.empty_like(X)
    for i in range(W.n):
        mix_row(out, np.int64(i), X, indptr, indices, w[0], W.mean_weight, mean, np.int64(0))
    assert np.array_equal(out, X)
    X[3] += np.float32(1e-2)  # one row off consensus: its neighbours move toward it
    mean = X.astype(np.float64).mean(axis=0).astype(np.float32)  # the mean term's, anew
    for i in range(W.n):
        mix_row(out, np.int64(i), X, indptr, indices, w[0], W.mean_weight, mean, np.int64(0))
    want = W.to_dense() @ X.astype(np.float64)  # the mean term included
    assert np.allclose(out, want, rtol=0, atol=np.spacing(np.float32(1e3 * 4)))
    assert not np.array_equal(out[3], X[3])  # row 3 moved


def test_a_mean_terms_rounding_is_flagged(monkeypatch):
    """(The paper's Figure 1 sweep in float32.) A mixing with a mean term rounds beta (mean -
    x_i) alike for every node whose x_i shares a binade, so that xbar moves by that rounding
    too, not by 1 / n of it: Setup B's loss_avg on the interp_ring at alpha = 0.25 stops
    near 2e-10 in float32 (float64 goes on below 1e-19), and is flagged because its floor
    counts the mean term (precision.floors' beta): without it, it was not."""
    kw = {"algorithm": "gt", "topology": "interp_ring", "n": 300, "alpha": 0.25, "d": 10,
          "noise": "structured", "stepsize": 1e-3, "steps": 20000, "record_every": 500}
    with pytest.warns(fastgt.FastGTWarning, match="may dominate loss_avg"):
        r32 = fastgt.run(dtype="float32", **kw)
    assert r32.summary["loss_avg"] > 1e6 * fastgt.run(**kw).summary["loss_avg"]
    assert r32.summary["rounding_limited"] == "loss_avg, grad_norm2"
    from fastgt import engine
    from fastgt.precision import floors

    monkeypatch.setattr(engine, "floors", lambda *a: floors(*a[:6]))  # beta 0
    assert fastgt.run(dtype="float32", **kw).summary["rounding_limited"] == ""
