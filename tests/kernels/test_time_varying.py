"""Time-varying topologies in the kernels against the dense twin fed W(t) step by step:
the one-peer exponential graph, random matchings (drawn inside the kernels; the twin
draws them with its own implementation, tests/reference.py) and user cycles, for every
algorithm that runs on them, with and without noise and local steps; bits for any thread
count and in batches; fixed points."""

import numpy as np
import pytest
import reference as ref
from test_kernels import GAMMA, RECORD, STEPS, _assert_state_close, _assert_trace_close, _x0

import fastgt
from fastgt.algorithms import ALGORITHMS

pytestmark = pytest.mark.usefixtures("one_numba_thread")

#: the algorithms that take a time-varying W (a symmetric one: D² refuses them all,
#: test_d2_refuses_time_varying), read from their own checks
ALGOS = [a for a, s in ALGORITHMS.items()
         if not (s.check and s.check(fastgt.topology("random_matching", n=8), 1))]


def _unstable(algorithm: str) -> bool:
    """Refuses the nonsymmetric matrices (EXTRA: test_extra_refuses_nonsymmetric_matrices);
    its kernels are compared on them all the same."""
    check = ALGORITHMS[algorithm].check
    return bool(check and check(fastgt.topology("one_peer_exponential", n=8), 1))


def _cycle():
    return fastgt.topology("cycle", matrices=[
        fastgt.topology("erdos_renyi", n=12, prob=0.3, seed=0),
        fastgt.topology("ring", n=12, self_weight=0.2),
        ref.one_peer_matrix(12, 3)])  # not symmetric


#: name -> (topology, d, the twin's W of communication r given the run seed)
VARYING = {
    "one_peer_12": (lambda: fastgt.topology("one_peer_exponential", n=12), 5,
                    lambda seed, k: lambda r: ref.one_peer_matrix(12, r)),
    "one_peer_16_lazy": (lambda: fastgt.topology("one_peer_exponential", n=16, lazy=True), 3,
                         lambda seed, k: lambda r: 0.5 * (ref.one_peer_matrix(16, r)
                                                          + np.eye(16))),
    "matching_11": (lambda: fastgt.topology("random_matching", n=11), 4,
                    lambda seed, k: lambda r: ref.matching_matrix(
                        ref.matching_partners(seed, (r + 1) * k, 11))),
    "matching_12_lazy": (lambda: fastgt.topology("random_matching", n=12, lazy=True), 6,
                         lambda seed, k: lambda r: ref.matching_matrix(
                             ref.matching_partners(seed, (r + 1) * k, 12), 0.75)),
    "cycle": (_cycle, 5, None),
}


def _twin_W(name, W, seed, local_steps):
    make = VARYING[name][2]
    if make is None:  # a cycle: its own matrices, in turn
        mats = [m.to_dense() for m in W.period]
        return lambda r: mats[r % len(mats)]
    return make(seed, local_steps)


def _check(algorithm, name, problem, noise, local_steps=1, seed=5):
    build, d, _ = VARYING[name]
    W = build()
    n = W.n
    x0 = _x0(n, d)
    res = fastgt.run(algorithm=algorithm, topology=W, problem=problem, noise=noise,
                     sigma2=ref.given_sigma2(noise, 2.0), d=d, stepsize=GAMMA, steps=STEPS,
                     record_every=RECORD, seed=seed, x0=x0, local_steps=local_steps,
                     allow_unstable=_unstable(algorithm))
    inst = fastgt.problem(problem).build(n, d)
    noise_fn = ref.no_noise(n, d) if noise == "none" else ref.fastgt_noise(noise, 2.0, d, W, seed)
    states = ref.simulate(algorithm, _twin_W(name, W, seed, local_steps),
                          lambda X, t: inst.grad(X) + noise_fn(t), GAMMA, x0, STEPS,
                          local_steps)
    for key, arr in states[-1].items():
        _assert_state_close(res.state[key], arr)
    rec = list(range(0, STEPS, RECORD)) + [STEPS]
    rows = [ref.metrics(inst, states[t]["X"], states[t].get("Y")) for t in rec]
    _assert_trace_close(res.trace, np.column_stack([rec, np.array(rows)]), "Y" in states[-1])


@pytest.mark.parametrize("noise,problem", [("none", "hetero_quadratic"),
                                           ("gaussian", "quadratic")])
@pytest.mark.parametrize("name", list(VARYING))
@pytest.mark.parametrize("algorithm", ALGOS)
def test_time_varying_matches_reference(algorithm, name, noise, problem):
    _check(algorithm, name, problem, noise)


@pytest.mark.parametrize("name", ["one_peer_12", "matching_11"])
@pytest.mark.parametrize("algorithm", ["gt", "dsgd", "gt_atc"])
def test_time_varying_with_local_steps_matches_reference(algorithm, name):
    """Local steps: the r-th communication (step t with k | t + 1) uses the period's r-th
    matrix, or the matching of the step it makes."""
    _check(algorithm, name, "hetero_quadratic", "gaussian", local_steps=3)


def test_the_twin_matrices_are_the_topologys_own():
    """W.at(step, seed) gives the matrices the twins use (a check of W.at, not of the
    kernels: those are checked against the twin's own)."""
    W = fastgt.topology("random_matching", n=9)
    for step in range(6):
        want = ref.matching_matrix(ref.matching_partners(4, step + 1, 9))
        np.testing.assert_array_equal(W.at(step, seed=4).to_dense(), want)
    P = fastgt.topology("one_peer_exponential", n=12)
    for step in range(9):
        np.testing.assert_array_equal(P.at(step).to_dense(), ref.one_peer_matrix(12, step))
        local = P.at(step, local_steps=2).to_dense()
        want = np.eye(12) if step % 2 == 0 else ref.one_peer_matrix(12, step // 2)
        np.testing.assert_array_equal(local, want)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_same_bits_for_one_and_two_threads_and_in_batches(algorithm):
    """A matching is a pure function of (seed, step): the same bits on 1 and 2 threads
    (row blocks split between them) and in a batch of cells with other seeds."""
    W = fastgt.topology("random_matching", n=301)
    kw = {"algorithm": algorithm, "d": 3, "steps": 30, "record_every": 10}
    one = fastgt.run(topology=W, seed=3, threads=1, stepsize=0.1, **kw)
    two = fastgt.run_batch([{"topology": W, "seed": 3, "stepsize": 0.1}], threads=2,
                           parallel="blocks", **kw)[0]
    batch = fastgt.run_batch([{"topology": W, "seed": s, "stepsize": 0.1} for s in (8, 3, 5)],
                             threads=2, **kw)
    for other in (two, batch[1]):
        np.testing.assert_array_equal(other.state["X"], one.state["X"])
        np.testing.assert_array_equal(other.records, one.records)
    assert not np.array_equal(batch[0].state["X"], one.state["X"])  # another seed's matchings


@pytest.mark.parametrize("name", ["one_peer_exponential", "random_matching"])
def test_noiseless_gt_reaches_the_optimum_and_dsgd_does_not(name):
    """Heterogeneous problem, exact gradients: GT, EXTRA and ATC-GT converge to x* on a
    time-varying graph (to 1e-10 in loss_nodes; EXTRA on the one-peer graph too at this n,
    although refused by default), D-SGD stalls at its bias."""
    W = fastgt.topology(name, n=16)
    kw = {"topology": W, "problem": "hetero_quadratic", "noise": "none", "d": 4, "steps": 3000,
          "record_every": 1000, "stepsize": 0.1}
    for algorithm in ("gt", "extra", "gt_atc"):
        res = fastgt.run(algorithm=algorithm, allow_unstable=_unstable(algorithm), **kw)
        assert res.summary["final_loss_nodes"] < 1e-10
    assert fastgt.run(algorithm="dsgd", **kw).summary["final_loss_nodes"] > 1e-6


def test_d2_refuses_time_varying():
    W = fastgt.topology("one_peer_exponential", n=8)
    with pytest.raises(fastgt.FastGTError, match="d2 needs a static W.*allow_unstable=True"):
        fastgt.run(algorithm="d2", topology=W, d=2, steps=5)
    res = fastgt.run(algorithm="d2", topology=W, problem="hetero_quadratic", noise="none", d=2,
                     steps=2000, allow_unstable=True)
    assert res.summary["status"] == "diverged"  # why it is refused


def test_extra_refuses_nonsymmetric_matrices():
    """EXTRA's analysis needs a symmetric W: the one-peer graph's steps and a cycle with a
    nonsymmetric matrix are refused (on the one-peer graph of 256 nodes it diverges);
    matchings and cycles of symmetric matrices run."""
    kw = {"algorithm": "extra", "problem": "hetero_quadratic", "noise": "none", "d": 2}
    refused = "extra needs symmetric mixing matrices: the time-varying {}'s are not"
    for W in (fastgt.topology("one_peer_exponential", n=8), _cycle()):
        with pytest.raises(fastgt.FastGTError, match=refused.format(W.name) + ".*allow_unstable"):
            fastgt.run(topology=W, steps=5, **kw)
    W = fastgt.topology("one_peer_exponential", n=256)
    res = fastgt.run(topology=W, steps=2000, stepsize=0.1, allow_unstable=True, **kw)
    assert res.summary["status"] == "diverged"  # why it is refused
    for W in (fastgt.topology("random_matching", n=12),
              fastgt.topology("cycle", matrices=[fastgt.topology("ring", n=12),
                                                 fastgt.topology("complete", n=12)])):
        assert W.symmetric
        res = fastgt.run(topology=W, steps=3000, stepsize=0.1, record_every=1000, **kw)
        assert res.summary["final_loss_nodes"] < 1e-10


def test_structured_noise_needs_a_static_topology():
    with pytest.raises(fastgt.FastGTError, match="static topology, not random_matching"):
        fastgt.run(topology="random_matching", n=8, noise="structured", d=2, steps=5)


@pytest.mark.parametrize("name, params, d, ahead", [
    ("ring", {"n": 100}, 10, [0]),
    ("torus", {"rows": 20, "cols": 30}, 10, [0]),  # stencils: rows stream in order
    ("one_peer_exponential", {"n": 100}, 10, [0] * 7),
    ("random_matching", {"n": 100}, 10, [4]),  # one partner, 2-line rows
    ("random_matching", {"n": 100}, 600, [0]),  # 75-line rows: past 64 lines in flight
    ("random_matching", {"n": 100}, 200, [2]),
    ("erdos_renyi", {"n": 100, "prob": 0.1, "seed": 0}, 10, [1]),
])
def test_scattered_matrices_are_prefetched(name, params, d, ahead):
    """The kernels prefetch the neighbour rows (kernels/mixing.py: prefetch_ahead) of a
    drawn matching and of a matrix whose neighbours are scattered: far, and not at the same
    few offsets in every row; as many rows ahead as keep 64 lines in flight; never the
    identity that local steps mix with (last in the schedule)."""
    from fastgt.algorithms.base import schedule

    W = fastgt.topology(name, **params)
    mix = schedule([W], np.array([0.1]), 1, -(-d // 8))
    assert mix.ahead.tolist() == ahead + [0]
    res = fastgt.run(topology=W, d=d, steps=3, record_every=3)  # and the kernels run
    assert np.isfinite(res.trace["loss_avg"]).all()


@pytest.mark.parametrize("n", [13, 24, 32, 1000])
def test_chain_order_visits_every_row_once_in_runs(n):
    """kernels/mixing.chain_row is a bijection of the positions onto the rows, for any n
    and offset (gcd 1 to o), in runs of consecutive rows (none past row n - 1); a row's
    partner (i + o) comes within the next two runs but for the last run of each chain,
    whose partners began it: gcd(n, o) rows in all."""
    from fastgt.kernels.mixing import CHAIN_ROWS, chain_row

    chain_row = chain_row.py_func
    for o in sorted({1, 2, 3, 8, n // 2, n - 1, 2 ** int(np.log2(n - 1))}):
        g = int(np.gcd(n, o))
        rows, q = [], 0
        while q < n:
            i, run = chain_row(q, n, o, g, n // g)
            assert 1 <= run <= min(n - q, CHAIN_ROWS) and i + run <= n
            rows += range(i, i + run)
            q += run
        assert sorted(rows) == list(range(n)), (n, o)
        late = sum((r + o) % n not in rows[p + 1:p + 1 + 2 * CHAIN_ROWS]
                   for p, r in enumerate(rows))
        assert late == g, (n, o, late)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_chain_order_keeps_the_bits(algorithm, monkeypatch):
    """One-peer steps in chain order (algorithms.base.chain: forced for every offset here)
    give the bits of row order, on 1 and 2 threads (positions split between them)."""
    from fastgt.algorithms import base

    W = fastgt.topology("one_peer_exponential", n=40)
    kw = {"algorithm": algorithm, "topology": W, "d": 3, "steps": 24, "record_every": 8,
          "stepsize": 0.1, "seed": 5, "allow_unstable": _unstable(algorithm)}
    monkeypatch.setattr(base, "CHAIN_BYTES", 2**62)
    rows = fastgt.run(threads=1, **kw)
    monkeypatch.setattr(base, "CHAIN_BYTES", 0)
    assert base.schedule([W], np.array([0.1]), 1, 1).chain[:, 0].tolist() == [
        1, 2, 4, 8, 16, 32, 0]  # every step of the period, not the identity
    for threads in (1, 2):
        chained = fastgt.run_batch([{"topology": W, "seed": 5, "stepsize": 0.1}],
                                   threads=threads, parallel="blocks",
                                   **{k: v for k, v in kw.items()
                                      if k not in ("topology", "seed", "stepsize")})[0]
        np.testing.assert_array_equal(chained.state["X"], rows.state["X"])
        np.testing.assert_array_equal(chained.records, rows.records)


def test_chain_order_and_temporal_blocking_exclude_each_other(monkeypatch):
    """A pass of temporal blocking advances blocks of neighbouring rows; in chain order a
    block's rows are spread over the state, so a schedule with chain order runs step by
    step. Two shifts by one row (neighbours: passes are planned for them), forced into
    chain order: no passes, and the bits of the run with passes."""
    import scipy.sparse as sp

    from fastgt.algorithms import Batch, Cell, base
    from fastgt.problems import make_noise

    n = 2000
    shift = sp.eye(n, k=1, format="csr") + sp.eye(n, k=1 - n, format="csr")
    W = fastgt.topology("cycle", matrices=[(sp.eye(n) + shift) / 2, (sp.eye(n) + shift.T) / 2])
    problem = fastgt.problem("quadratic").build(n, 100)

    def planned():
        return Batch([Cell(W, make_noise("none", 1.0, 100, W), 0.1, 0)], problem).plan

    assert planned().levels > 1 and not base.schedule([W], np.array([0.1]), 1, 13).chain.any()
    kw = {"topology": W, "d": 100, "steps": 12, "record_every": 12, "noise": "none",
          "stepsize": 0.1, "threads": 1}
    passes = fastgt.run(**kw)
    monkeypatch.setattr(base, "CHAIN_BYTES", 0)
    assert base.schedule([W], np.array([0.1]), 1, 13).chain[:2, 0].tolist() == [1, n - 1]
    assert planned().levels == 1
    chained = fastgt.run(**kw)
    np.testing.assert_array_equal(chained.state["X"], passes.state["X"])
