"""run_batch: several cells in one compiled loop give exactly the numbers of separate runs."""

import numpy as np
import pytest

import fastgt
from fastgt.runner import run_batch


def _cells(n=24, d=5):
    """Cells sharing the ring's sparsity pattern but not weights, stepsizes, noise or seeds."""
    return [
        {"topology": fastgt.topology("interp_ring", n=n, alpha=0.9), "stepsize": 0.02, "seed": 1},
        {"topology": fastgt.topology("interp_ring", n=n, alpha=0.4), "stepsize": 0.05,
         "sigma2": 2.0, "seed": 7},
        {"topology": fastgt.topology("ring", n=n, self_weight=0.1), "stepsize": 0.01, "seed": 3},
    ]


@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("parallel,threads", [("cells", 1), ("cells", 2), ("blocks", 2)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_batch_equals_separate_runs(algorithm, noise, parallel, threads, dtype):
    kw = {"algorithm": algorithm, "noise": noise, "d": 5, "steps": 37, "record_every": 10,
          "problem": "hetero_quadratic", "dtype": dtype}
    batch = run_batch(_cells(), threads=threads, parallel=parallel, **kw)
    for cell, got in zip(_cells(), batch):
        ref = fastgt.run(threads=1, **kw, **cell)
        assert np.array_equal(got.trace.to_numpy(), ref.trace.to_numpy(), equal_nan=True)
        for key in ref.state:
            assert np.array_equal(got.state[key], ref.state[key])
        assert got.config["stepsize"] == cell["stepsize"] and got.summary["batch"] == 3


def test_diverging_cell_does_not_stop_the_others():
    cells = _cells()
    cells[1]["stepsize"] = 3.0  # far beyond GT's stable range on Setup A
    res = run_batch(cells, d=4, steps=400, record_every=20, threads=1)
    assert [r.summary["status"] for r in res] == ["ok", "diverged", "ok"]
    assert res[1].summary["steps_done"] < 400 and res[0].summary["steps_done"] == 400
    ref = fastgt.run(d=4, steps=400, record_every=20, threads=1, **_cells()[2])
    assert np.array_equal(res[2].trace.to_numpy(), ref.trace.to_numpy(), equal_nan=True)


def test_incompatible_cells_are_refused():
    cells = _cells() + [{"topology": fastgt.topology("torus", rows=4, cols=6)}]
    with pytest.raises(fastgt.FastGTError, match="sparsity pattern"):
        run_batch(cells, d=3, steps=2)
    with pytest.raises(fastgt.FastGTError, match="alpha"):
        run_batch([{"topology": _cells()[0]["topology"], "alpha": 0.3}], d=3, steps=2)
    with pytest.raises(fastgt.FastGTError, match="parallel"):
        run_batch(_cells(), d=3, steps=2, parallel="threads")
    with pytest.raises(fastgt.FastGTError, match=r"stepsize is a cell's: give it in each "
                                                 r"cell dict \(keys topology, stepsize"):
        run_batch(_cells(), d=3, steps=2, stepsize=0.1)
    with pytest.raises(fastgt.FastGTError, match="stepsze is no parameter of run_batch"):
        run_batch(_cells(), d=3, steps=2, stepsze=0.1)
