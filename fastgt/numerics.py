"""The versions of the numbers a cell's parameters give: bumped when the same parameters
start giving different numbers. A cell's version is hashed into its id (sweep/grid.py:
cell_id) and kept in the ``numerics`` column of its rows, so that a directory's rows of
another version are neither taken for this version's cells nor read beside them
(sweep/tables.py: by_version). Light: the sweep's readers (``fastgt status``, load) import
it without numba.

One sequence of numbers for every change: a change of one problem's numbers gives that
problem the next number (PROBLEM_NUMERICS); a change of every problem's raises the base
past all of them."""

from __future__ import annotations

#: the version of every problem's numbers but those of PROBLEM_NUMERICS. 1: to 2026-11-23;
#: 2: the normal generator of 2026-11-23 (every noisy run's numbers), and ids that leave
#: out a value spelled out at what the cell runs with anyway (grid.identity).
NUMERICS_VERSION = 2

#: problems whose numbers changed alone since the base: name -> their version. 3: the
#: logistic loss's slope on dense rows by fastgt's own exp (kernels/exp.py, 2026-11-27),
#: four rows' exps in one vector, where each row called libm's (within an ulp of each
#: other; sparse rows keep libm's, their cells recomputed all the same)
PROBLEM_NUMERICS: dict[str, int] = {"logistic": 3, "nonconvex": 3}


def numerics_of(problem: str) -> int:
    """The version of the numbers a cell of ``problem`` gives."""
    return PROBLEM_NUMERICS.get(problem, NUMERICS_VERSION)
