"""bench/bench_steps.py's own checks, at a size the suite affords: every algorithm's numpy
and scipy baselines agree with fastgt (what the bench checks before timing), and the bench
skips exactly the cases fastgt.run refuses (a stale call broke the whole bench once)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import fastgt

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import bench_steps

pytestmark = pytest.mark.usefixtures("one_numba_thread")


@pytest.mark.parametrize("algorithm", ["gt", "dsgd", "d2", "extra", "gt_atc", "centralized"])
@pytest.mark.parametrize("topology", bench_steps.TOPOLOGIES)
def test_baselines_agree_with_fastgt(algorithm, topology):
    W = bench_steps.build_topology(topology, 12)
    if bench_steps.refused(algorithm, W):
        pytest.skip(f"fastgt refuses {algorithm} on {W.describe()}")
    mixers = bench_steps.make_mixers(W, bench_steps.BASELINES)
    assert set(mixers) == set(bench_steps.BASELINES)
    assert bench_steps.check_same(algorithm, W, mixers) <= bench_steps.CHECK_TOL


@pytest.mark.parametrize("algorithm", ["gt", "d2"])
@pytest.mark.parametrize("topology", bench_steps.TOPOLOGIES)
def test_refused_is_what_run_refuses(algorithm, topology):
    W = bench_steps.build_topology(topology, 12)
    try:
        fastgt.run(algorithm, W, steps=1)
    except fastgt.FastGTError as e:
        assert "d2 needs lambda_n" in str(e) and bench_steps.refused(algorithm, W), e
    else:
        assert not bench_steps.refused(algorithm, W)


def test_d2_refused_on_the_bench_torus():  # the case that must skip (lambda_n = -0.6)
    assert bench_steps.refused("d2", bench_steps.build_topology("torus", 12))


def test_d_is_an_ab_option():
    """--d changes the A/B children's dimension only: refused without --against (the tables
    against the baselines are at d = D) and below 1, each with exit 2."""
    assert bench_steps.parse_args(["--against", "HEAD", "--d", "20"]).d == 20
    assert bench_steps.parse_args([]).d == bench_steps.D
    for argv in (["--d", "20"], ["--against", "HEAD", "--d", "0"]):
        with pytest.raises(SystemExit) as exc:
            bench_steps.parse_args(argv)
        assert exc.value.code == 2


def test_dtype_is_an_ab_option():
    """--dtype sets the A/B children's state type (its runs ask for float32; a float64 run
    passes no dtype, so that older revisions run too): refused without --against and
    outside float64/float32, each with exit 2."""
    assert bench_steps.parse_args(["--against", "HEAD", "--dtype", "float32"]).dtype == "float32"
    assert bench_steps.parse_args([]).dtype == "float64"
    for argv in (["--dtype", "float32"], ["--against", "HEAD", "--dtype", "float16"]):
        with pytest.raises(SystemExit) as exc:
            bench_steps.parse_args(argv)
        assert exc.value.code == 2
    case = {"algorithm": "dsgd", "setup": "0"}
    W = bench_steps.build_topology("ring", 8)
    res = bench_steps.ab_run(case, W, 2, 1, 1, 4, "float32")
    assert res.state["X"].dtype == np.float32
    assert bench_steps.ab_run(case, W, 2, 1, 1, 4).state["X"].dtype == np.float64


def test_topologies_option():
    """--topologies chooses the topologies (default the tables'), the long rows' among
    them; an unknown one, and a hypercube at an n that is not a power of 2, exit 2."""
    assert bench_steps.parse_args([]).topologies == list(bench_steps.TOPOLOGIES)
    args = bench_steps.parse_args(["--topologies", "exponential, hypercube", "--n", "64"])
    assert args.topologies == ["exponential", "hypercube"]
    for argv in (["--topologies", "grid"], ["--topologies", ""],
                 ["--topologies", "hypercube", "--n", "300"]):
        with pytest.raises(SystemExit) as exc:
            bench_steps.parse_args(argv)
        assert exc.value.code == 2


@pytest.mark.parametrize("topology", bench_steps.LONG_ROWS)
def test_long_row_topologies_agree_with_the_baselines(topology):
    """The long rows' topologies (rows of more than 5 entries at n = 64) build, and GT's
    numpy and scipy baselines agree with fastgt on them (jax, which has a stencil for the
    exponential graph only, is not tested here)."""
    W = bench_steps.build_topology(topology, 64)
    assert W.n == 64 and np.diff(W.indptr).max() > 5
    mixers = bench_steps.make_mixers(W, bench_steps.BASELINES)
    assert set(mixers) == set(bench_steps.BASELINES)
    assert bench_steps.check_same("gt", W, mixers) <= bench_steps.CHECK_TOL
