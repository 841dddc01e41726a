"""The paper's Table 3 (1/p and c of ring, 2-d torus, complete graph), recomputed exactly."""

import math

import numpy as np
import pytest

from fastgt import FastGTError
from fastgt.paper.table3 import table3, to_markdown

NS = (16, 64, 256, 1024, 4096, 16384, 65536)


@pytest.fixture(scope="module")
def df():
    return table3(NS)


def _rows(df, name):
    sub = df[df.topology == name].sort_values("n")
    assert list(sub.n) == list(NS)
    return sub


def test_columns(df):
    assert list(df.columns) == ["topology", "n", "gap2", "lambda_n", "inv_p", "inv_p_pred",
                                "inv_p_ratio", "c", "c_limit", "paper_inv_p", "paper_c"]
    assert len(df) == 3 * len(NS)


def test_ring_exact_and_scaling(df):
    ring = _rows(df, "ring")
    n = ring.n.to_numpy(float)
    # exact: lambda2 = 1/3 + 2/3 cos(2 pi / n) = 1 - g, g = (4/3) sin^2(pi / n), dominates
    # |lambda_n| = 1/3 for n >= 5, and p = 1 - (1 - g)^2 = g (2 - g) (no cancellation)
    g = 4 / 3 * np.sin(np.pi / n) ** 2
    np.testing.assert_allclose(ring.inv_p, 1 / (g * (2 - g)), rtol=1e-13)
    np.testing.assert_allclose(ring.gap2, 1 - (1 / 3 + 2 / 3 * np.cos(2 * np.pi / n)), atol=1e-15)
    # 1/p / n^2 converges to 3 / (8 pi^2); 1/p - 3 n^2 / (8 pi^2) -> 3/8 (next order)
    ratio = ring.inv_p.to_numpy() / n**2
    assert np.all(np.diff(np.abs(ratio - 3 / (8 * np.pi**2))) < 0)
    assert abs(ratio[-1] - 3 / (8 * math.pi**2)) < 1 / n[-1] ** 2  # next order: (3/8) / n^2
    excess = ring.inv_p.to_numpy() - 3 * n**2 / (8 * np.pi**2)
    assert excess[2:] == pytest.approx(3 / 8, abs=1e-3)
    # c = 8/9 exactly for even n: lambda_n = 1/3 - 2/3 = -1/3
    assert np.all(np.abs(ring.c - 8 / 9) < 1e-15)
    assert np.all(np.abs(ring.lambda_n + 1 / 3) < 1e-15)


def test_torus_exact_and_scaling(df):
    torus = _rows(df, "torus")
    n = torus.n.to_numpy(float)
    s = np.sqrt(n)
    # lambda2 = 1/5 + 2/5 + 2/5 cos(2 pi / s) = 1 - g, g = (4/5) sin^2(pi / s); |lambda_n| = 3/5
    g = 4 / 5 * np.sin(np.pi / s) ** 2
    p = np.minimum(g * (2 - g), 1 - (3 / 5) ** 2)
    np.testing.assert_allclose(torus.inv_p, 1 / p, rtol=1e-13)
    ratio = torus.inv_p.to_numpy() / n
    assert np.all(np.diff(np.abs(ratio - 5 / (8 * np.pi**2))) < 0)
    assert abs(ratio[-1] - 5 / (8 * math.pi**2)) < 1 / n[-1]  # next order: (11/24) / n
    excess = torus.inv_p.to_numpy() - 5 * n / (8 * np.pi**2)
    assert excess[3:] == pytest.approx(11 / 24, abs=5e-3)
    # c for even sides: checkerboard lambda_n = 1/5 - 4/5 = -3/5, c = 16/25 -- not >= 4/5
    assert np.all(np.abs(torus.lambda_n + 3 / 5) < 1e-15)
    assert np.all(np.abs(torus.c - 16 / 25) < 1e-15)
    assert np.all(torus.c < 4 / 5)


def test_complete(df):
    comp = _rows(df, "complete")
    assert np.all(comp.inv_p == 1.0) and np.all(comp.c == 1.0)


def test_prediction_columns(df):
    n = df.n.to_numpy(float)
    pred = np.select([df.topology == "ring", df.topology == "torus"],
                     [3 * n**2 / (8 * np.pi**2), 5 * n / (8 * np.pi**2)], 1.0)
    np.testing.assert_allclose(df.inv_p_pred, pred, rtol=1e-15)
    np.testing.assert_allclose(df.inv_p_ratio, df.inv_p / df.inv_p_pred, rtol=1e-15)
    assert set(zip(df.topology, df.c_limit, strict=True)) == {("ring", 8 / 9), ("torus", 16 / 25),
                                                  ("complete", 1.0)}
    assert set(zip(df.topology, df.paper_c, strict=True)) == {("ring", "8/9"), ("torus", ">= 4/5"),
                                                  ("complete", "1")}


@pytest.mark.parametrize("side", [3, 5, 7, 9, 101])
def test_odd_sides(side):
    """Odd sides: lambda_n = 1/5 - (4/5) cos(pi / s) > -3/5, so c > 16/25, -> 16/25 as s grows.
    c >= 4/5 holds only for s = 3 (c = 0.96) and s = 5 (lambda_n = -1/sqrt(5), c = 4/5 exactly)."""
    row = table3([side * side])
    torus = row[row.topology == "torus"].iloc[0]
    ln = 1 / 5 - 4 / 5 * math.cos(math.pi / side)
    assert torus.c == pytest.approx(1 - ln**2, abs=1e-14)
    assert torus.c > 16 / 25
    if side == 5:
        assert torus.c == pytest.approx(4 / 5, abs=1e-15)
    elif side > 5:
        assert torus.c < 4 / 5


def test_bad_ns():
    with pytest.raises(FastGTError, match="^ns=10 is invalid: allowed perfect squares"):
        table3([16, 10])
    with pytest.raises(FastGTError, match="^ns=1 is invalid"):
        table3([1])


def test_markdown(df):
    md = to_markdown(df.head(2)).splitlines()
    assert md[0].startswith("| topology | n | gap2 |")
    assert md[1] == "|" + "---|" * len(df.columns)
    assert md[2].startswith("| ring | 16 |") and len(md) == 4


def test_docs_table_is_current():
    """docs/topologies.md embeds the default table verbatim (regenerate it if this fails)."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "topologies.md"
    assert to_markdown(table3()) in doc.read_text()
