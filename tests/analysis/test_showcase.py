"""scripts/showcase.py --quick: the four sweeps run, the figures are written, and the
numbers say what the README says they show."""

import sys
from pathlib import Path

import pytest

import fastgt

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
import showcase

pytestmark = pytest.mark.usefixtures("one_numba_thread")


def test_showcase_quick(tmp_path):
    showcase.main(["--quick", "--out", str(tmp_path), "--workers", "1"])
    for k in "abcde":
        assert (tmp_path / f"showcase_{k}.png").stat().st_size > 10_000
    assert "| zeta |" in (tmp_path / "showcase.md").read_text()
    cells = fastgt.load(tmp_path / "zeta", traces=False)[0]
    plateau = cells[cells["stepsize"] == 0.025].groupby(["algorithm", "zeta"])["loss_nodes"].mean()
    assert plateau["dsgd", 10.0] > 100 * plateau["dsgd", 0.0]  # D-SGD degrades with zeta
    for algorithm in ("d2", "extra", "centralized"):  # the others are flat
        assert plateau[algorithm, 10.0] < 2 * plateau[algorithm, 0.0], algorithm
    b = fastgt.load(tmp_path / "d2_fails", traces=False)[0].set_index("algorithm")
    assert b.loc["d2", "status"] == "diverged" and b.loc["gt", "status"] == "ok"
    e = fastgt.load(tmp_path / "logistic", traces=False)[0].set_index(["algorithm", "split_alpha"])
    zeta2 = e.loc["gt", "zeta2"]
    assert zeta2[0.1] > 5 * zeta2[10.0]  # skew makes the nodes' optima disagree
    assert e.loc[("dsgd", 0.1), "loss_nodes"] > 5 * e.loc[("dsgd", 10.0), "loss_nodes"]
    for algorithm in ("gt", "d2"):  # exact methods: the skew costs them little
        assert e.loc[(algorithm, 0.1), "loss_nodes"] < 2 * e.loc[(algorithm, 10.0), "loss_nodes"]

