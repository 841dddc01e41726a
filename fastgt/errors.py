"""User-facing errors: one line, naming the parameter and what is allowed."""


class FastGTError(ValueError):
    """Bad input from a user. The CLI prints ``str(err)`` on one line, never a traceback."""


class DegenerateGraphError(FastGTError):
    """The graph built is not a valid mixing matrix: disconnected, or bipartite with zero
    self-weights (p = 0). For a random family (erdos_renyi, geometric) this is a property of
    one instance (its graph_seed), not of the parameters: a sweep records such a cell as
    failed and goes on (fastgt.sweep.grid)."""


class WriteFailed(RuntimeError):
    """An output that could not be written after the work was done (a full disk, say). The
    CLI prints it on one line and exits 1; the message says what was kept."""


class FastGTWarning(UserWarning):
    """A result that is valid but not what was probably wanted (e.g. the exact theory of an
    unstable stepsize: infinite floors), with what to change."""


def caller_level() -> int:
    """The ``stacklevel`` of a warning raised here that names the first caller outside
    fastgt (the user's line, whichever of fastgt's functions it called)."""
    import sys
    from pathlib import Path

    package = str(Path(__file__).parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def short(value) -> str:
    """A one-line rendering of a value: its repr, or its type (and shape) when that is long."""
    r = repr(value)
    if "\n" not in r and len(r) <= 80:
        return r
    shape = getattr(value, "shape", None)
    return f"<{type(value).__name__}{f' of shape {shape}' if shape is not None else ''}>"


def close_names(name: str, names) -> str:
    """The hint ' (did you mean a or b?)' with the one or two of ``names`` closest to a
    misspelled ``name``, or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(names), n=2)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def check_family(param: str, table) -> None:
    """A table given for a topology (topology_y, a cycle's step) must name its family under
    ``topology``: else the error names the table's keys, and the one that looks like a
    misspelled ``topology``. Anything but a dict passes (its own check follows)."""
    if not isinstance(table, dict) or "topology" in table:
        return
    keys = [str(k) for k in table]
    near = [k for k in keys if close_names(k, ["topology"])]
    raise bad(param, table, 'a topology table with its family under topology, e.g. '
              '{topology = "ring", n = 16}; this one has ' + (", ".join(keys) or "no key")
              + (f" ({near[0]}: did you mean topology?)" if near else ""))


def bad(param: str, value, allowed: str) -> FastGTError:
    """Build the standard error: ``<param>=<value> is invalid: allowed <allowed>``."""
    return FastGTError(f"{param}={short(value)} is invalid: allowed {allowed}")


def check_choice(param: str, value, choices) -> None:
    if value not in choices:
        raise bad(param, value, "one of " + ", ".join(repr(c) for c in choices))


def check_int(param: str, value, lo: int | None = None, hi: int | None = None) -> int:
    import numpy as np

    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok or (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise bad(param, value, rng)
    return int(value)


def check_float(param: str, value, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False) -> float:
    import math
    import numbers

    # a string is not a number here, even one float() would parse: the same rule as for
    # integers (check_int), so that fastgt.run(stepsize="0.01") fails like n="300" does
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad(param, value, "a number")
    v = float(value)
    if not math.isfinite(v):
        raise bad(param, value, "a finite number")
    low_bad = lo is not None and (v <= lo if lo_open else v < lo)
    high_bad = hi is not None and (v >= hi if hi_open else v > hi)
    if low_bad or high_bad:
        left = "(" if lo_open else "["
        right = ")" if hi_open or hi is None else "]"
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise bad(param, value, f"a number in {left}{lo_s}, {hi_s}{right}")
    return v
