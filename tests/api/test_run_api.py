"""fastgt.run's contract: input validation, divergence handling, trace layout, summary."""

import math
import re
import warnings

import numpy as np
import pytest

import fastgt
from fastgt import FastGTError
from fastgt.config import DIVERGE_FACTOR
from fastgt.runner import METRICS
from fastgt.runtime import max_threads

pytestmark = pytest.mark.usefixtures("one_numba_thread")

W8 = fastgt.topology("ring", n=8)
GOOD = {"algorithm": "gt", "topology": W8, "d": 3, "steps": 4, "record_every": 2}


@pytest.mark.parametrize("param,overrides", [
    ("stepsize", {"stepsize": 0.0}),
    ("stepsize", {"stepsize": -0.1}),
    ("stepsize", {"stepsize": float("nan")}),
    ("steps", {"steps": -1}),
    ("steps", {"steps": 0}),
    ("stepsize", {"stepsize": "0.01"}),
    ("sigma2", {"sigma2": "1"}),
    ("d", {"d": "3"}),
    ("seed", {"seed": 1.0}),
    ("steps", {"steps": 2.5}),
    ("record_every", {"record_every": 0}),
    ("d", {"d": 0}),
    ("seed", {"seed": -1}),
    ("sigma2", {"sigma2": -1.0}),
    ("algorithm", {"algorithm": "adam"}),
    ("noise", {"noise": "laplace"}),
    ("problem", {"problem": "lasso"}),
    ("x0", {"x0": np.zeros((8, 4))}),
    ("x0", {"x0": np.full((8, 3), np.nan)}),
    ("threads", {"threads": 0}),
    ("threads", {"threads": max_threads() + 1}),
    ("topology", {"topology": W8.to_dense()}),
    ("topology", {"topology": "ring"}),  # a family name without its n
    ("topology", {"topology": "moebius"}),
])
def test_bad_input_names_the_parameter(param, overrides):
    with pytest.raises(FastGTError) as err:
        fastgt.run(**{**GOOD, **overrides})
    msg = str(err.value)
    # the message starts with the parameter's name (a bare `param in msg` would find "d"
    # in any message, "steps" in "stepsize")
    assert re.match(rf"{param}\b", msg) and "\n" not in msg, msg


def test_a_topology_table_without_its_family_names_its_keys():
    """(A user trial: {topolgy = ...} in topology_y was taken for a parameter of
    fastgt.run.)"""
    msg = "this one has topolgy, n (topolgy: did you mean topology?)"
    with pytest.raises(FastGTError, match=r"^topology_y=.*" + re.escape(msg)):
        fastgt.run(topology="ring", n=8, topology_y={"topolgy": "complete", "n": 8})
    with pytest.raises(FastGTError, match=r"^matrices=.*" + re.escape(msg.replace("complete",
                                                                                   "ring"))):
        fastgt.topology("cycle", matrices=[{"topology": "ring", "n": 8},
                                           {"topolgy": "ring", "n": 8}])


def test_unknown_problem_parameter():
    with pytest.raises(FastGTError, match="zeta2") as err:
        fastgt.problem("consensus", zeta2=1.0)
    assert "zeta" in str(err.value).replace("zeta2", "")  # lists the allowed ones


def _trace_steps(steps, every):
    return sorted(set(range(0, steps + 1, every)) | {steps})


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("steps,every", [(10, 3), (9, 3), (5, 10), (1, 4), (7, 1)])
def test_trace_layout(algorithm, steps, every):
    calls = []
    res = fastgt.run(**{**GOOD, "algorithm": algorithm, "steps": steps, "record_every": every},
                     progress=calls.append)
    tr = res.trace
    assert list(tr.columns) == ["step", "comm_rounds", "grad_evals", *METRICS]
    assert tr["step"].dtype == np.int64
    assert tr["step"].tolist() == _trace_steps(steps, every)
    # GT: X and Y go out in one round per step, one gradient per step and the initial one
    assert (tr["comm_rounds"] == tr["step"]).all() and (tr["grad_evals"] == tr["step"] + 1).all()
    # at every record, and between them as the run's kernel calls end (engine._Calls)
    assert calls == sorted(set(calls)) and set(tr["step"].tolist()[1:]) <= set(calls)
    assert calls[-1] == steps
    assert tr[["loss_avg", "loss_nodes", "consensus", "grad_norm2"]].notna().all().all()
    assert tr["tracking"].isna().all() == (algorithm == "dsgd")
    s = res.summary
    assert (s["status"], s["diverged_step"], s["steps_done"], s["records"]) == (
        "ok", None, steps, len(tr))
    half = tr.iloc[len(tr) // 2:]
    for m in METRICS:
        np.testing.assert_equal(s[f"final_{m}"], tr[m].iloc[-1])
        np.testing.assert_equal(s[m], half[m].mean())
    assert set(res.state) == ({"X", "Y", "G"} if algorithm == "gt" else {"X"})


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("every", [1, 4])
def test_divergence_is_recorded_not_raised(algorithm, every):
    """stepsize 2 on Setup A: xbar(t+1) = -3 xbar(t) - 2 ebar, so loss_nodes grows ~9^t and
    passes DIVERGE_FACTOR * max(1, loss_nodes(0)) within a few dozen steps; the run stops at
    the first record beyond the limit."""
    res = fastgt.run(algorithm=algorithm, topology=fastgt.topology("ring", n=10), d=5,
                     stepsize=2.0, steps=500, record_every=every, seed=1)
    s, tr = res.summary, res.trace
    assert s["status"] == "diverged"
    limit = DIVERGE_FACTOR * max(1.0, tr["loss_nodes"].iloc[0])
    exceeded = tr["loss_nodes"].to_numpy() > limit
    assert exceeded[-1] and not exceeded[:-1].any()
    assert s["diverged_step"] == tr["step"].iloc[-1] == s["steps_done"] < 500
    assert s["diverged_step"] % every == 0
    assert all(math.isnan(s[m]) for m in METRICS)


def test_overflow_is_recorded_as_diverged():
    """Records far apart: the iterates overflow to inf/NaN between two records."""
    res = fastgt.run(algorithm="gt", topology=fastgt.topology("ring", n=10), d=5,
                     stepsize=2.0, steps=5000, record_every=1000, seed=1)
    assert res.summary["status"] == "diverged"
    assert res.summary["diverged_step"] == 1000
    assert res.trace["step"].tolist() == [0, 1000]
    assert not np.isfinite(res.trace["loss_nodes"].iloc[-1])


def test_flat_form_is_the_same_run():
    """fastgt.run takes the flat form of the CLI and grid files: a family name with its
    parameters beside the run's, the random graph's seed as graph_seed, the problem's
    parameters (zeta, problem_seed) too. Same bits as building the pieces by hand."""
    flat = fastgt.run(topology="erdos_renyi", n=12, prob=0.5, graph_seed=3,
                      problem="consensus", zeta=2.0, problem_seed=4, d=3, steps=20,
                      record_every=5, seed=1)
    built = fastgt.run(topology=fastgt.topology("erdos_renyi", n=12, prob=0.5, seed=3),
                       problem=fastgt.problem("consensus", zeta=2.0, seed=4), d=3, steps=20,
                       record_every=5, seed=1)
    np.testing.assert_array_equal(flat.records, built.records)
    assert flat.config["topology"] == "erdos_renyi" and flat.config["problem_zeta"] == 2.0


@pytest.mark.parametrize("kwargs,fragment", [
    ({"topology": "ring", "n": 8, "alpha": 0.5},
     "alpha does not apply to topology 'ring': allowed n, self_weight, lazy"),
    ({"topology": "ring", "n": 8, "zeta": 1.0},
     ("zeta does not apply to problem 'quadratic': allowed no parameters (zeta is a "
      "parameter of problems consensus, hetero_quadratic)")),
    ({"topology": W8, "n": 8}, "n does not apply to a built topology"),
    ({"topology": W8, "stepsze": 0.1}, ("stepsze is no parameter of fastgt.run, of a topology "
                                        "family or of a problem (did you mean stepsize or "
                                        "steps?): allowed algorithm, topology")),
    ({"topology": "ring", "n": 8, "problem": "logistic", "batchsize": 4},
     ("batchsize is no parameter of fastgt.run, of topology 'ring' (allowed n, self_weight, "
      "lazy) nor of "
      "problem 'logistic' (allowed data, samples, split, split_alpha, batch_size, reg, "
      "label_noise, problem_seed) (did you mean batch_size?)")),
    ({"n": 8}, "topology is required: allowed a family name with its parameters"),
    ({"topology": "ring", "n": 8, "noise": "none", "sigma2": 2.0},
     ("sigma2=2 applies to noise 'gaussian', 'structured', 'minibatch+gaussian' only: "
      "noise='none' adds none (leave sigma2 out)")),
    ({}, "topology is required"),
    ({"topology": "ring", "n": 8, "problem": fastgt.problem("consensus"), "zeta": 1.0},
     "zeta does not apply to a built problem spec"),
    ({"topology": "ring", "n": "8"}, "n='8' is invalid"),
    ({"topology": "ring", "n": 8, "self_weight": "0.2"}, "self_weight='0.2' is invalid"),
])
def test_flat_form_refuses_what_does_not_apply(kwargs, fragment):
    with pytest.raises(FastGTError, match=re.escape(fragment)):
        fastgt.run(**{"d": 3, "steps": 4, **kwargs})


def test_algorithm_specs_say_their_update_and_costs():
    """fastgt.algorithm(name): the registered spec, GT first (the default), with its
    equation (the module docstring) and its per-step costs, which must be what its dense
    twin does: products with W (mixes) and gradient evaluations per step, counted on the
    twin (GT's two mixes are one communication round: X and Y go out together). An
    unknown name is a one-line error naming the allowed values."""
    import reference as ref

    from fastgt.algorithms import ALGORITHMS

    assert next(iter(ALGORITHMS)) == "gt"
    assert "y_i(t+1) = sum_j w_ij y_j(t) + g_i(t+1) - g_i(t)" in fastgt.algorithm("gt").doc

    class Counting:
        def __init__(self, W):
            self.W, self.count = W, 0

        def __matmul__(self, X):
            self.count += 1
            return self.W @ X

    W = fastgt.topology("ring", n=6).to_dense()
    for name, spec in ALGORITHMS.items():
        init, step = ref.TWINS[name]
        calls = []

        def oracle(X, t, calls=calls):
            calls.append(t)
            return 2.0 * X

        s = init(np.ones((6, 2)), oracle, 0.1)
        s = step(s, W, oracle, 0.1, 0)  # the first step may differ (D²): count the second
        calls.clear()
        counting = Counting(W)
        step(s, counting, oracle, 0.1, 1)
        # an algorithm with its own mixing may ignore W (centralized: the exact average)
        mixes = counting.count or (1 if spec.mixing is not None else 0)
        assert (spec.costs.mixes, spec.costs.grad_evals) == (mixes, len(set(calls))), name
        # a round per pass over the rows (GT's X and Y go out together; ATC-GT's Y waits
        # for every new gradient); the centralized average counts as one round
        assert (spec.costs.mixes, spec.costs.comm_rounds) == COSTS[name], name
    with pytest.raises(FastGTError, match="algorithm='extra2' is invalid: allowed one of 'gt'"):
        fastgt.algorithm("extra2")


#: mixes and communication rounds a step, as the algorithms' equations count them
COSTS = {"gt": (2, 1), "gt_atc": (2, 2), "dsgd": (1, 1), "d2": (1, 1), "extra": (1, 1),
         "centralized": (1, 1)}


@pytest.mark.parametrize("algorithm", sorted(COSTS))
def test_traces_count_rounds_and_gradients(algorithm):
    """comm_rounds and grad_evals in a trace, per node: COSTS' rounds a step, and one
    gradient a step after the initial one."""
    trace = fastgt.run(algorithm=algorithm, topology="ring", n=6, d=2, steps=6,
                       record_every=2).trace
    assert list(trace["step"]) == [0, 2, 4, 6]
    assert list(trace["comm_rounds"]) == [COSTS[algorithm][1] * t for t in trace["step"]]
    assert list(trace["grad_evals"]) == [t + 1 for t in trace["step"]]


def test_d2_refuses_a_topology_below_its_stability_condition():
    """Tang et al.: D² needs lambda_n(W) > -1/3. Below it (a torus 4 x 5: -0.52) fastgt.run
    refuses, naming the value; the lazy matrix (lambda_n >= 0) runs, and allow_unstable=True
    runs the unstable one (whose divergence is then recorded). The even ring with self
    weight 1/3 sits exactly on -1/3 and is allowed."""
    torus = fastgt.topology("torus", rows=4, cols=5)
    kw = {"algorithm": "d2", "d": 3, "steps": 200, "record_every": 20}
    with pytest.raises(FastGTError, match=r"d2 needs lambda_n\(W\) > -1/3: this topology has "
                                          r"lambda_n = -0\.523607; allowed: lazy=True"):
        fastgt.run(topology=torus, **kw)
    lazy = fastgt.topology("torus", rows=4, cols=5, lazy=True)
    assert fastgt.run(topology=lazy, **kw).summary["status"] == "ok"
    assert fastgt.run(topology=torus, allow_unstable=True, **kw).summary["status"] == "diverged"
    assert fastgt.run(topology=fastgt.topology("ring", n=12), **kw).summary["status"] == "ok"
    with pytest.raises(FastGTError, match="allow_unstable='yes' is invalid: allowed true or false"):
        fastgt.run(topology=torus, allow_unstable="yes", **kw)


def test_local_steps_beyond_the_run_warn_that_it_never_communicates():
    import warnings

    with pytest.warns(fastgt.FastGTWarning, match="local_steps=10 > steps=5: no step of this "
                                                  "run communicates"):
        fastgt.run(topology="ring", n=8, d=2, steps=5, local_steps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fastgt.run(topology="ring", n=8, d=2, steps=10, local_steps=10)


def test_a_state_beyond_the_available_memory_is_refused_before_it_is_touched(monkeypatch):
    """(A user trial: n = 10^8, d = 10 grew to 18 GB over 71 s before an allocation failed.)
    A family's graph is not even built when the least state of its n nodes passes the
    memory available; a built one's state arrays are counted as they are made and refused,
    with one MemoryError saying how much, before the initial point touches any page."""
    from fastgt import flat, memory
    from fastgt.warmup import ensure_warm

    ensure_warm()  # the warm-up's own runs under the real limit
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)  # 1 GiB
    real_topology = flat.topology
    monkeypatch.setattr(flat, "topology", lambda *a, **k: pytest.fail("graph built"))
    with pytest.raises(MemoryError, match=r"^the state of this run needs 23\.8 GiB or more, "
                                          r"1\.0 GiB are available$"):
        fastgt.run(topology="ring", n=10**8, d=10, steps=2)  # 2 x 10^8 rows of 16 doubles
    monkeypatch.setattr(flat, "topology", real_topology)
    W = fastgt.topology("ring", n=1000)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**20)  # 1 MiB
    monkeypatch.setattr(memory, "MEMORY_CHECKED", 0)  # small states checked too
    with pytest.raises(MemoryError, match=r"^the state of this run needs [0-9.]+ MiB or "
                                          r"more, 1\.0 MiB are available$"):
        fastgt.run(topology=W, d=100, steps=2)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    assert fastgt.run(topology=W, d=100, steps=2).summary["status"] == "ok"


def test_a_run_that_ends_growing_is_said_to_be():
    """(A user trial: EXTRA with local steps on random matchings grew 10x every 20 steps and
    a 200-step run said "ok".) Growth at each of the last records, far past the start,
    warns; a run that is still ok after all, or noise-driven at its plateau, does not."""
    kw = {"topology": "random_matching", "n": 16, "d": 10, "local_steps": 3}
    with pytest.warns(fastgt.FastGTWarning, match=r"^loss_nodes grew at each of the last 2 "
                                                  r"records, to .* at step 200 .*: the run may "
                                                  r"be diverging"):
        r = fastgt.run(algorithm="extra", steps=200, **kw)
    assert r.summary["status"] == "ok"
    assert r.summary["growing"].startswith("loss_nodes grew at each of the last 2 records")
    W = fastgt.topology("random_matching", n=16)  # a batch's warning names its cell
    with pytest.warns(fastgt.FastGTWarning, match="loss_nodes grew") as seen:
        fastgt.run_batch([{"topology": W}, {"topology": W, "seed": 1}], algorithm="extra",
                         d=10, steps=200, local_steps=3)
    assert sorted(str(w.message)[:24] for w in seen) == ["cell 0: loss_nodes grew ",
                                                         "cell 1: loss_nodes grew "]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fastgt.run(algorithm="gt", steps=200, **kw).summary["growing"] is None
        fastgt.run(topology="ring", n=16, d=5, steps=300, record_every=10, sigma2=1e4,
                   x0=np.zeros((16, 5)))  # from 0 up to a plateau of ~1e3: not 1e6 x max(1, 0)
