"""Graphs and mixing matrices from files: what ``--edges FILE`` / ``--matrix FILE`` and
grid files' ``edges = "..."`` / ``matrix = "..."`` read (``from_edges`` and ``from_matrix``
take a path as well as an array).

- Edge lists: two integer columns (node ids >= 0), whitespace- or comma-separated (CSV); lines
  starting with ``#`` are comments and one header line of non-numbers (``source,target``) is
  skipped.
- Matrices: ``.npy`` (a dense array), ``.npz`` (a scipy sparse matrix saved by
  ``scipy.sparse.save_npz``, or an ``np.savez`` file holding one array) or Matrix Market
  ``.mtx`` (``scipy.io.mmread``).

Every problem with a file is a one-line FastGTError naming the parameter, the path and what
is allowed.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import FastGTError

EDGE_FORMATS = "two integer columns (node ids >= 0), whitespace- or comma-separated"
MATRIX_SUFFIXES = (".npy", ".npz", ".mtx")


def is_path(value) -> bool:
    return isinstance(value, (str, os.PathLike))


def _problem(param: str, path, what: str) -> FastGTError:
    return FastGTError(f"{param} file {os.fspath(path)!r} {what}")


def _lines(param: str, path) -> list[str]:
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        raise _problem(param, path, "does not exist") from None
    except IsADirectoryError:
        raise _problem(param, path, "is a directory: allowed a file") from None
    except UnicodeDecodeError:
        raise _problem(param, path, f"is not text: allowed {EDGE_FORMATS}") from None
    except OSError as err:
        raise _problem(param, path, f"cannot be read: {err.strerror}") from None


def read_edges(path, param: str = "edges") -> np.ndarray:
    """An (m, 2) int64 edge array from a text or CSV edge list (see the module doc)."""
    rows = []
    header_ok = True  # one header line is allowed before the first edge
    for no, line in enumerate(_lines(param, path), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = [f for f in text.replace(",", " ").split() if f]
        try:
            vals = [int(f) for f in fields]
        except ValueError:
            if header_ok and not rows and not _numbers(fields):  # words: a header
                header_ok = False
                continue
            raise _not_an_edge(param, path, no, line, fields) from None
        if len(vals) != 2 or min(vals) < 0:
            raise _not_an_edge(param, path, no, line, fields)
        rows.append(vals)
    if not rows:
        raise _problem(param, path, f"holds no edge: allowed {EDGE_FORMATS}")
    return np.array(rows, dtype=np.int64)


def _numbers(fields: list[str]) -> bool:
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def _not_an_edge(param: str, path, no: int, line: str, fields: list[str]) -> FastGTError:
    """The error of a line that is no edge (a third column: weights, which are not read)."""
    third = (" (a third column: edge weights are not read, weights= computes them)"
             if len(fields) > 2 and _numbers(fields) else "")
    return _problem(param, path, f"line {no}: {line.strip()!r} is not an edge{third}: allowed "
                    f"{EDGE_FORMATS}")


def read_matrix(path, param: str = "matrix"):
    """A dense array or scipy sparse matrix from a .npy, .npz or .mtx file."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in MATRIX_SUFFIXES:
        raise _problem(param, path, f"has an unknown format: allowed {', '.join(MATRIX_SUFFIXES)}")
    if not os.path.exists(path):
        raise _problem(param, path, "does not exist")
    if os.path.isdir(path):
        raise _problem(param, path, "is a directory: allowed a file")
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if suffix == ".mtx":
            from scipy.io import mmread

            return mmread(path)
        return _read_npz(param, path)
    except FastGTError:
        raise
    except Exception as err:  # noqa: BLE001 (each reader has its own errors: say which file)
        kind = {".npy": "a numpy .npy array", ".mtx": "a Matrix Market file"}.get(
            suffix, "a scipy sparse .npz")
        raise _problem(param, path, f"is not {kind}: {' '.join(str(err).split())}") from None


def _read_npz(param: str, path):
    import scipy.sparse as sp

    with np.load(path, allow_pickle=False) as data:
        if "format" in data.files and "shape" in data.files:
            return sp.load_npz(path)
        if len(data.files) == 1:
            return data[data.files[0]]
    raise _problem(param, path, "holds no matrix: allowed a scipy.sparse.save_npz file or an "
                   "np.savez file of one array")
