"""docs/extending.md's worked example of an algorithm (D², tests/kernels/example_d2.py),
registered as the doc says and checked like the built-in ones: against its dense twin
(tests/reference.py), and the same bits on 1 and 2 threads and in a batch."""

import example_d2
import pytest
from examples import assert_doc_shows, assert_same_bits_on_threads_and_in_a_batch
from test_kernels import _check_against_reference, _x0

from fastgt.algorithms import ALGORITHMS


@pytest.fixture
def d2(monkeypatch):
    """The example registered (a module in fastgt/algorithms/ is registered by being there)."""
    monkeypatch.setitem(ALGORITHMS, "d2", example_d2.ALGORITHM)
    return "d2"


def test_the_doc_shows_the_tested_module():
    assert_doc_shows("## An algorithm", example_d2)


@pytest.mark.usefixtures("one_numba_thread")
@pytest.mark.parametrize("problem,noise", [("consensus", "none"),
                                           ("hetero_quadratic", "structured"),
                                           ("quadratic", "gaussian")])
def test_example_matches_its_twin(d2, small_topology, problem, noise):
    W, d = small_topology
    _check_against_reference(d2, W, d, problem, noise, sigma2=2.0, x0=_x0(W.n, d))


def test_example_same_bits_on_threads_and_in_a_batch(d2):
    assert_same_bits_on_threads_and_in_a_batch(
        algorithm=d2, problem="hetero_quadratic", noise="gaussian", d=9, steps=17,
        record_every=4, stepsize=0.05)
