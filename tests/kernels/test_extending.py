"""docs/extending.md's worked example of an algorithm (D², tests/kernels/example_d2.py),
registered as the doc says and checked like the built-in ones: against its dense twin
(tests/reference.py), and the same bits on 1 and 2 threads and in a batch."""

import re
from pathlib import Path

import example_d2
import numpy as np
import pytest
from test_kernels import _check_against_reference, _x0

import fastgt
from fastgt.algorithms import ALGORITHMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.fixture
def d2(monkeypatch):
    """The example registered (a module in fastgt/algorithms/ is registered by being there)."""
    monkeypatch.setitem(ALGORITHMS, "d2", example_d2.ALGORITHM)
    return "d2"


def test_the_doc_shows_the_tested_module():
    """The algorithm section's code is this module, word for word."""
    text = DOC.read_text()
    section = text[text.index("## An algorithm"):]
    shown = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert shown.strip() == Path(example_d2.__file__).read_text().strip()


@pytest.mark.usefixtures("one_numba_thread")
@pytest.mark.parametrize("problem,noise", [("consensus", "none"),
                                           ("hetero_quadratic", "structured"),
                                           ("quadratic", "gaussian")])
def test_example_matches_its_twin(d2, small_topology, problem, noise):
    W, d = small_topology
    _check_against_reference(d2, W, d, problem, noise, sigma2=2.0, x0=_x0(W.n, d))


def test_example_same_bits_on_threads_and_in_a_batch(d2):
    W = fastgt.topology("torus", rows=6, cols=5)
    kw = {"algorithm": d2, "problem": "hetero_quadratic", "noise": "gaussian", "d": 9,
          "steps": 17, "record_every": 4}
    one = fastgt.run(topology=W, threads=1, stepsize=0.05, seed=3, **kw)
    two = fastgt.run(topology=W, threads=2, stepsize=0.05, seed=3, **kw)
    batch = fastgt.run_batch([{"topology": W, "seed": s, "stepsize": 0.05} for s in (3, 4)],
                             **kw)
    for other in (two, batch[0]):
        for key in one.state:
            np.testing.assert_array_equal(one.state[key], other.state[key])
        np.testing.assert_array_equal(one.trace.to_numpy(), other.trace.to_numpy())
