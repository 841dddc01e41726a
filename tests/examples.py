"""Checks shared by docs/extending.md's worked examples (fastgt/algorithms/d2.py,
tests/problems/example_least_squares.py) and the algorithms' tests."""

import re
from pathlib import Path

import numpy as np

import fastgt

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def assert_doc_shows(heading: str, module) -> None:
    """The first code block of the doc's section ``heading`` is ``module``, word for word."""
    text = DOC.read_text()
    section = text[text.index(heading):]
    shown = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert shown.strip() == Path(module.__file__).read_text().strip()


def assert_same_bits_on_threads_and_in_a_batch(**kw) -> None:
    """A torus run gives the same states and trace on 1 and 2 threads and as cell 0 of a
    batch of two seeds."""
    W = fastgt.topology("torus", rows=6, cols=5)
    one = fastgt.run(topology=W, threads=1, seed=3, **kw)
    two = fastgt.run(topology=W, threads=2, seed=3, **kw)
    gamma = kw.pop("stepsize")
    batch = fastgt.run_batch([{"topology": W, "seed": s, "stepsize": gamma} for s in (3, 4)],
                             **kw)
    for other in (two, batch[0]):
        for key in one.state:
            np.testing.assert_array_equal(one.state[key], other.state[key])
        np.testing.assert_array_equal(one.trace.to_numpy(), other.trace.to_numpy())
