"""Reproduction of the paper's Table 3: 1/p and c of the ring, the 2-d torus and the complete graph.

The paper (Koloskova et al. 2021, Table 3, "uniformly averaging W") states

    ring             1/p = O(n^2)   c = 8/9
    2d-torus         1/p = O(n)     c >= 4/5
    fully connected  1/p = O(1)     c = 1

Here every entry is computed exactly (closed-form spectra) for the ring with weights 1/3
(self included), the sqrt(n) x sqrt(n) torus with weights 1/5 (self included) and
W = (1/n) 1 1^T, next to the leading-order prediction of 1/p:

- ring: lambda2 = 1/3 + 2/3 cos(2 pi / n) = 1 - (4/3) sin^2(pi / n), |lambda_n| <= 1/3, so
  p = 1 - lambda2^2 ~ 2 (1 - lambda2) ~ 8 pi^2 / (3 n^2) and 1/p ~ 3 n^2 / (8 pi^2);
- torus (side s = sqrt(n)): lambda2 = 1/5 + 2/5 + 2/5 cos(2 pi / s) = 1 - (4/5) sin^2(pi / s),
  so p ~ 8 pi^2 / (5 s^2) and 1/p ~ 5 n / (8 pi^2);
  (next order, from 1/(g (2 - g)) = 1/(2g) + 1/4 + O(g) and 1/sin^2 x = 1/x^2 + 1/3 + O(x^2):
  1/p = prediction + 3/8 + O(1/n^2) for the ring, + 11/24 + O(1/n) for the torus);
- complete: lambda2 = lambda_n = 0, p = 1.

The exact c of the torus contradicts the paper: for even sides the checkerboard mode gives
lambda_n = 1/5 - 4/5 = -3/5, so c = 1 - 9/25 = 16/25 = 0.64 < 4/5 (odd sides give slightly
more, tending to 16/25).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import bad, check_int

if TYPE_CHECKING:
    import pandas as pd

TABLE3_NS = (16, 64, 256, 1024, 4096, 16384, 65536)
PAPER = {"ring": ("O(n^2)", "8/9"), "torus": ("O(n)", ">= 4/5"), "complete": ("O(1)", "1")}
C_LIMIT = {"ring": 8 / 9, "torus": 16 / 25, "complete": 1.0}  # exact for even n / even sides


def inv_p_prediction(name: str, n: int) -> float:
    """Leading-order 1/p: 3 n^2 / (8 pi^2) (ring), 5 n / (8 pi^2) (torus), 1 (complete)."""
    scale = {"ring": 3 * n * n, "torus": 5 * n, "complete": 8 * math.pi**2}[name]
    return scale / (8 * math.pi**2)


def table3(ns=TABLE3_NS) -> pd.DataFrame:
    """Table 3 over the node counts ``ns`` (perfect squares >= 4, so the torus is square).

    Columns: topology, n, gap2 (= 1 - lambda2), lambda_n, inv_p (= 1/p), inv_p_pred (leading order),
    inv_p_ratio (= inv_p / inv_p_pred), c, c_limit (exact large-n value), paper_inv_p, paper_c.
    """
    from ..topology import topology

    ns = [check_int("ns", n, 4) for n in ns]
    for n in ns:
        if math.isqrt(n) ** 2 != n:
            raise bad("ns", n, "perfect squares >= 4 (the torus is sqrt(n) x sqrt(n))")
    import pandas as pd

    rows = []
    for name in PAPER:
        for n in ns:
            W = topology(name, n=n)
            sp = W.spectrum()
            pred = inv_p_prediction(name, n)
            rows.append({"topology": name, "n": n, "gap2": sp.gap2,
                         "lambda_n": sp.lambda_n, "inv_p": 1.0 / sp.p, "inv_p_pred": pred,
                         "inv_p_ratio": 1.0 / sp.p / pred, "c": sp.c, "c_limit": C_LIMIT[name],
                         "paper_inv_p": PAPER[name][0], "paper_c": PAPER[name][1]})
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame, digits: int = 6) -> str:
    """A GitHub Markdown table of ``df``; floats with ``digits`` significant digits."""

    def cell(v) -> str:
        return f"{v:.{digits}g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)
