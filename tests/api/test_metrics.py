"""Metrics are declared once (fastgt.metrics.DECLARED): the trace, the summary, the Parquet
schema, the CLI's choices and the dense reference all follow the declaration, and a metric
declared with its own ``compute`` is recorded without any change to the recorder."""

import numpy as np
import pytest
import reference as ref

import fastgt
import fastgt.metrics as M
from fastgt import theory
from fastgt.sweep import storage


def test_every_consumer_follows_the_declaration():
    names = tuple(m.name for m in M.DECLARED)
    assert M.METRICS == names and fastgt.METRICS == names
    assert tuple(ref.METRIC_TWINS) == names  # a new metric needs its dense twin
    cells = storage.CELL_SCHEMA.names
    for m in names:
        assert m in cells and f"final_{m}" in cells and m in storage.TRACE_SCHEMA.names
    # the metrics flagged theory=True are exactly those the exact theory computes
    W = fastgt.topology("ring", n=8)
    for noise in ("gaussian", "structured"):
        got = theory.stationary(W, "gt", 0.05, noise=noise, d=4)
        assert tuple(got) == M.THEORY_METRICS and all(np.isfinite(list(got.values())))
    res = fastgt.run(topology="ring", n=8, d=3, steps=4, record_every=2)
    assert tuple(res.trace.columns) == ("step", "comm_rounds", "grad_evals", *names)
    assert all(m in res.summary and f"final_{m}" in res.summary for m in names)


def test_report_cli_offers_the_metrics_with_theory():
    from click.testing import CliRunner

    from fastgt.cli import main

    out = CliRunner().invoke(main, ["report", ".", "--metric", "grad_norm2"])
    assert out.exit_code == 2
    for m in M.THEORY_METRICS:
        assert m in out.output


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_a_declared_metric_is_recorded_without_touching_the_recorder(monkeypatch, algorithm):
    """||xbar||^2 and a Y-only metric, declared with their compute: in the trace and the
    summary, equal to the dense formula on the run's own final state; NaN without Y."""
    extra = (M.Metric("xbar_norm2", "||xbar||^2", compute=lambda s: float(s.xbar @ s.xbar)),
             M.Metric("y_first", "y_11", needs_y=True, compute=lambda s: float(s.Y[0, 0])))
    monkeypatch.setattr(M, "DECLARED", M.DECLARED + extra)
    monkeypatch.setattr(M, "METRICS", M.METRICS + tuple(m.name for m in extra))
    res = fastgt.run(algorithm=algorithm, topology="ring", n=10, d=4, steps=6, record_every=3)
    assert list(res.trace.columns[-2:]) == ["xbar_norm2", "y_first"]
    X = res.state["X"]
    assert res.trace["xbar_norm2"].iloc[-1] == pytest.approx(np.sum(X.mean(axis=0) ** 2),
                                                             rel=1e-12)
    assert res.summary["final_xbar_norm2"] == res.trace["xbar_norm2"].iloc[-1]
    if algorithm == "gt":
        assert res.trace["y_first"].iloc[-1] == res.state["Y"][0, 0]
    else:
        assert np.all(np.isnan(res.trace["y_first"]))
    # the declared five keep their values
    plain = fastgt.run(algorithm=algorithm, topology="ring", n=10, d=4, steps=6, record_every=3)
    for m in plain.trace.columns:
        np.testing.assert_array_equal(res.trace[m], plain.trace[m])


def test_a_metric_that_blows_up_stops_the_run(monkeypatch):
    """Divergence is judged on every declared metric (by name), not on fixed positions."""
    bad = M.Metric("blows_up", "inf after step 0", compute=lambda s: np.inf)
    monkeypatch.setattr(M, "DECLARED", M.DECLARED + (bad,))
    monkeypatch.setattr(M, "METRICS", M.METRICS + ("blows_up",))
    res = fastgt.run(topology="ring", n=8, d=3, steps=6, record_every=2)
    assert res.summary["status"] == "diverged"
    assert res.summary["diverged_reason"].startswith("blows_up is not finite")


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
def test_big_states_record_in_parallel_with_the_same_bits(algorithm):
    """From SMALL_RUN elements a record's passes (kernels/metrics.py) and an init's
    (kernels/rows.py: GT's copy of G, D-SGD's z = x - gamma g) run rows in parallel: the
    same records and state on 1 and 2 threads, and the dense twin's metrics."""
    from fastgt.config import SMALL_RUN

    W, d = fastgt.topology("ring", n=1100), 100
    assert W.n * d >= SMALL_RUN
    runs = [fastgt.run(algorithm=algorithm, topology=W, problem="hetero_quadratic",
                       noise="gaussian", d=d, steps=2, record_every=1, stepsize=0.05, seed=3,
                       threads=threads) for threads in (1, 2)]
    assert np.array_equal(runs[0].records, runs[1].records, equal_nan=True)
    for key, arr in runs[0].state.items():
        assert np.array_equal(arr, runs[1].state[key])
    inst = fastgt.problem("hetero_quadratic").build(W.n, d)
    want = ref.metrics(inst, runs[0].state["X"], runs[0].state.get("Y"))
    got = runs[0].trace[list(M.METRICS)].to_numpy()[-1]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_parallel_record_is_the_serial_one():
    """quadratic_metrics_parallel (blocks in parallel, for big states) gives quadratic_metrics'
    bits, block sums included, on 1 and 2 threads: the same per-block helpers, contraction
    decided alike in both."""
    import numba

    from fastgt.kernels.metrics import quadratic_metrics, quadratic_metrics_parallel
    from fastgt.kernels.mixing import n_blocks

    rng = np.random.default_rng(1)
    n, d = 1300, 96
    X, Y = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    abar, xstar = rng.random(d), rng.standard_normal(d)
    nb = n_blocks(n)
    for has_y in (True, False):
        part, out = np.zeros((nb, 2, d)), np.empty(5)
        quadratic_metrics(X, Y, has_y, abar, xstar, part, out)
        before = numba.get_num_threads()
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            try:
                part_p, out_p = np.full((nb, 2, d), np.nan), np.empty(5)
                quadratic_metrics_parallel(X, Y, has_y, abar, xstar, part_p, out_p)
            finally:
                numba.set_num_threads(before)
            assert np.array_equal(out, out_p, equal_nan=True)
            assert np.array_equal(part[:, :1 + has_y], part_p[:, :1 + has_y])
        assert np.isnan(out[4]) != has_y
