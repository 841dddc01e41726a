"""topology_y: GT and ATC-GT with a second mixing matrix for the tracking variable, against
the dense twin (tests/reference.py: y mixes with Wy), with noise, local steps, a mean
term, time-varying x mixing; its refusals; and its fixed point."""

import numpy as np
import pytest
import reference as ref
from test_kernels import GAMMA, RECORD, STEPS, _assert_state_close, _assert_trace_close, _x0

import fastgt

pytestmark = pytest.mark.usefixtures("one_numba_thread")

CASES = {  # W, Wy, d: Wy with another pattern, or a mean term, or the same family
    "ring_er": (("ring", {"n": 12, "self_weight": 0.2}),
                ("erdos_renyi", {"n": 12, "prob": 0.3, "seed": 0}), 5),
    "torus_interp": (("torus", {"rows": 3, "cols": 4}),
                     ("interp_ring", {"n": 12, "alpha": 0.6}), 4),
    "er_ring": (("erdos_renyi", {"n": 12, "prob": 0.3, "seed": 0}),
                ("ring", {"n": 12, "self_weight": 0.5}), 3),
}


def _check(algorithm, case, problem, noise, local_steps=1, W=None, twin_W=None):
    (wn, wp), (yn, yp), d = CASES[case]
    W = W or fastgt.topology(wn, **wp)
    Wy = fastgt.topology(yn, **yp)
    x0 = _x0(W.n, d)
    res = fastgt.run(algorithm=algorithm, topology=W, topology_y=Wy, problem=problem,
                     noise=noise, sigma2=ref.given_sigma2(noise, 2.0), d=d, stepsize=GAMMA,
                     steps=STEPS,
                     record_every=RECORD, seed=5, x0=x0, local_steps=local_steps)
    inst = fastgt.problem(problem).build(W.n, d)
    noise_fn = ref.no_noise(W.n, d) if noise == "none" else ref.fastgt_noise(noise, 2.0, d, W, 5)
    states = ref.simulate(algorithm, twin_W or W.to_dense(),
                          lambda X, t: inst.grad(X) + noise_fn(t), GAMMA, x0, STEPS,
                          local_steps, Wy=Wy.to_dense())
    for key, arr in states[-1].items():
        _assert_state_close(res.state[key], arr)
    rec = list(range(0, STEPS, RECORD)) + [STEPS]
    rows = [ref.metrics(inst, states[t]["X"], states[t]["Y"]) for t in rec]
    _assert_trace_close(res.trace, np.column_stack([rec, np.array(rows)]), True)
    return res


@pytest.mark.parametrize("noise,problem", [("none", "hetero_quadratic"),
                                           ("gaussian", "quadratic"),
                                           ("structured", "hetero_quadratic")])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("algorithm", ["gt", "gt_atc"])
def test_topology_y_matches_reference(algorithm, case, noise, problem):
    _check(algorithm, case, problem, noise)


@pytest.mark.parametrize("algorithm", ["gt", "gt_atc"])
def test_topology_y_with_local_steps_and_time_varying_x(algorithm):
    _check(algorithm, "ring_er", "hetero_quadratic", "gaussian", local_steps=2)
    W = fastgt.topology("random_matching", n=12)
    _check(algorithm, "ring_er", "hetero_quadratic", "gaussian", W=W,
           twin_W=lambda r: ref.matching_matrix(ref.matching_partners(5, r + 1, 12)))


def test_topology_y_equal_to_w_gives_gts_bits():
    """Y mixing with a copy of W itself: the numbers of plain GT to the bit (the third mix
    gives W Y again, and x' is formed from the same W Y)."""
    W = fastgt.topology("ring", n=12, self_weight=0.2)
    kw = {"topology": W, "problem": "hetero_quadratic", "d": 5, "steps": 30, "record_every": 10}
    for algorithm in ("gt", "gt_atc"):
        same = fastgt.run(algorithm=algorithm, topology_y=fastgt.topology("ring", n=12,
                                                                          self_weight=0.2), **kw)
        plain = fastgt.run(algorithm=algorithm, **kw)
        np.testing.assert_array_equal(same.records, plain.records)
        assert same.config["topology_y"].startswith("ring(")


def test_noiseless_gt_with_topology_y_reaches_the_optimum():
    res = fastgt.run(algorithm="gt", topology="ring", n=16, topology_y={"topology": "complete",
                                                                        "n": 16},
                     problem="hetero_quadratic", noise="none", d=4, steps=3000,
                     record_every=1000, stepsize=0.1)
    assert res.summary["final_loss_nodes"] < 1e-10


@pytest.mark.parametrize("kw,match", [
    ({"algorithm": "dsgd"}, ("topology_y='ring(n=8, self_weight=0.3333333333333333)' is "
                             "invalid: allowed only with the algorithms that track gradients "
                             "(gt, gt_atc), not dsgd")),
    ({"topology_y": {"topology": "ring", "n": 9}}, "topology_y has n=9, the topology n=8"),
    ({"topology_y": {"topology": "random_matching", "n": 8}}, "a static topology"),
    ({"topology_y": '{"n": 8}'}, "a topology table"),
])
def test_topology_y_refusals(kw, match):
    args = {"algorithm": "gt", "topology": "ring", "n": 8, "d": 2, "steps": 5,
            "topology_y": {"topology": "ring", "n": 8}, **kw}
    with pytest.raises(fastgt.FastGTError, match=match.replace("(", r"\(").replace(")", r"\)")):
        fastgt.run(**args)
