"""Problems know their optimum, optimal value and constants; algorithm specs state their
update equations."""

import re

import numpy as np
import pytest

import fastgt
from fastgt.algorithms import ALGORITHMS


def _f(inst, x):
    """f(x) = (1/n) sum_i f_i(x) straight from the definitions, for comparison."""
    if inst.name == "quadratic":
        return float(x @ x)
    if inst.name == "consensus":
        return float(np.mean(0.5 * np.sum((x - inst.B) ** 2, axis=1)))
    return float(np.mean(0.5 * (inst.A * x**2).sum(axis=1) - (inst.B * x).sum(axis=1)))


@pytest.mark.parametrize("name,params", [("quadratic", {}), ("consensus", {"zeta": 2.0}),
                                         ("hetero_quadratic", {"L": 3.0, "mu": 0.5})])
def test_optimum_value_and_constants(name, params):
    n, d = 7, 4
    inst = fastgt.problem(name, **params).build(n, d)
    xs = inst.xstar
    # x* minimises f: the mean gradient vanishes there, and f(x*) = f*
    assert np.allclose(inst.grad(np.tile(xs, (n, 1))).mean(axis=0), 0.0, atol=1e-12)
    assert _f(inst, xs) == pytest.approx(inst.fstar, abs=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.normal(size=d)
        assert inst.loss(x) == pytest.approx(_f(inst, x) - inst.fstar, rel=1e-10, abs=1e-12)
    # L and mu bound every local curvature; equal 2 for Setup A, drawn range otherwise
    if name == "quadratic":
        assert inst.L == inst.mu == 2.0
    elif name == "consensus":
        assert inst.L == inst.mu == 1.0
        assert inst.fstar == pytest.approx(0.5 * np.mean(np.sum((inst.B - xs) ** 2, axis=1)))
    else:  # the extreme curvatures drawn, in the asked range
        assert (inst.mu, inst.L) == (inst.A.min(), inst.A.max())
        assert 0.5 <= inst.mu < inst.L <= 3.0


def test_bad_problem_input_is_one_line():
    for params, says in (({"seed": -1}, "^seed="), ({"mu": "abc"}, "^mu=")):
        with pytest.raises(fastgt.FastGTError, match=says) as err:
            fastgt.problem("consensus", **params).build(4, 2)
        assert "\n" not in str(err.value)
    with pytest.raises(fastgt.FastGTError, match="W must be"):
        fastgt.topology("from_matrix", W=[["a", "b"]])
    with pytest.raises(fastgt.FastGTError, match="matrix file 'abc' has an unknown format"):
        fastgt.topology("from_matrix", W="abc")  # a string is a file's path


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_each_algorithm_spec_states_its_update(name):
    doc = ALGORITHMS[name].doc  # node-wise (GT, D-SGD), matrix-wise or on the mean
    assert re.search(r"x_i\(t\+1\) = sum_j w_ij|X\(t\+[12]\) = |xbar\(t\+1\) = ", doc)
    assert "gamma" in doc
