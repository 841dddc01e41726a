"""Data files: LIBSVM/svmlight text (scikit-learn's parser, the optional extra
``fastgt[data]``), ``.npz`` (``X`` dense and ``y``, or a scipy sparse matrix as
``scipy.sparse.save_npz`` writes it with ``y`` added) and Parquet (numeric feature columns
and a label column named ``y`` or ``label``). Sparse features stay sparse (CSR)."""

from __future__ import annotations

import os

import numpy as np

from ..errors import FastGTError

#: suffixes read as npz / Parquet; any other file is read as LIBSVM text, but for these
NPZ, PARQUET = (".npz",), (".parquet", ".pq")
NOT_LIBSVM = (".csv", ".tsv", ".npy", ".json", ".pkl", ".pickle", ".h5", ".hdf5", ".xlsx")
LABEL_COLUMNS = ("y", "label")
#: the arrays scipy.sparse.save_npz writes: always, and by format (compressed or COO)
_SPARSE_KEYS = ("data", "shape", "format")
_SPARSE_INDEX = {"csr": ("indices", "indptr"), "csc": ("indices", "indptr"), "coo": ("row", "col")}


def file_stamp(path: str) -> list | None:
    """[size, modification time in ns] of the file ``path`` names, or None (no such file):
    what tells a data file rewritten in place from the one read before."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns]


def read_file(path: str) -> tuple:
    """(features, labels) of a data file: features a float64 array (rows, d) or CSR matrix,
    labels float64 (rows,). One-line FastGTError for a missing or unreadable file."""
    if not os.path.isfile(path):
        where = "" if os.path.isabs(path) else f" (relative to {os.getcwd()})"
        raise FastGTError(f"data={path!r} is not a file{where}: allowed 'synthetic' or the "
                          "path of a LIBSVM, .npz or .parquet file")
    suffix = os.path.splitext(path)[1].lower()
    if suffix in NOT_LIBSVM:
        raise FastGTError(f"data={path!r}: a {suffix} file is not read: allowed a LIBSVM text "
                          "file, .npz (X and y) or .parquet (feature columns and a label "
                          "column; pandas writes one from a table: df.to_parquet)")
    try:
        if suffix in NPZ:
            X, y = _npz(path)
        elif suffix in PARQUET:
            X, y = _parquet(path)
        else:
            X, y = _libsvm(path)
    except FastGTError:
        raise
    except Exception as err:  # noqa: BLE001 (any parser's failure: one line naming the file)
        kind = "npz" if suffix in NPZ else "Parquet" if suffix in PARQUET else "LIBSVM"
        msg = " ".join(str(err).split())[:200]
        raise FastGTError(f"data={path!r} is not a readable {kind} file ({msg})") from None
    import scipy.sparse as sps

    y = np.asarray(y)
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == np.bool_):
        raise FastGTError(f"data={path!r} has labels of type {y.dtype} ({y.ravel()[:1]}...): "
                          "allowed numbers (+-1 or 0/1 for classification)")
    y = y.astype(np.float64).ravel()
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise FastGTError(f"data={path!r} has {X.shape[0]} feature rows and {y.shape[0]} labels:"
                          " allowed as many labels as rows, at least one")
    values = X.data if sps.issparse(X) else X
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(y))):
        raise FastGTError(f"data={path!r} holds NaN or infinite values: allowed finite numbers")
    return X, y


def _npz(path):
    import zipfile

    import scipy.sparse as sps

    if not zipfile.is_zipfile(path):  # numpy would try it as a pickle and advise allow_pickle
        raise FastGTError(f"data={path!r} is not an .npz archive (the zip of arrays numpy.savez "
                          "writes): allowed X and y, or a scipy sparse matrix (save_npz) with y")
    with np.load(path, allow_pickle=False) as z:
        keys = set(z.files)
        if "y" not in keys:
            raise FastGTError(f"data={path!r} has no array y (the labels or targets), only "
                              f"{sorted(keys)}: allowed X and y, or a scipy sparse matrix "
                              "(save_npz) with y added (docs/definitions.md)")
        if set(_SPARSE_KEYS) <= keys:
            fmt = z["format"].item()
            fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
            if fmt not in _SPARSE_INDEX:
                raise FastGTError(f"data={path!r} stores a {fmt} matrix: allowed "
                                  f"{', '.join(_SPARSE_INDEX)}")
            if not set(_SPARSE_INDEX[fmt]) <= keys:
                raise FastGTError(f"data={path!r} stores a {fmt} matrix without its arrays "
                                  f"{', '.join(_SPARSE_INDEX[fmt])}: allowed what "
                                  "scipy.sparse.save_npz writes, with y added")
            if fmt == "coo":
                X = sps.coo_matrix((z["data"], (z["row"], z["col"])), shape=tuple(z["shape"]))
            else:
                cls = sps.csr_matrix if fmt == "csr" else sps.csc_matrix
                X = cls((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            return _csr(X), z["y"]
        if "X" not in keys:
            raise FastGTError(f"data={path!r} has arrays {sorted(keys)}: allowed X and y, or a "
                              "scipy sparse matrix (save_npz) with y")
        X = np.asarray(z["X"], dtype=np.float64)
        if X.ndim != 2:
            raise FastGTError(f"data={path!r}: X has shape {X.shape}, allowed (rows, features)")
        return np.ascontiguousarray(X), z["y"]


def _parquet(path):
    import pandas as pd

    df = pd.read_parquet(path)
    labels = [c for c in LABEL_COLUMNS if c in df.columns]
    if len(labels) != 1:  # two: either could be the other's features (a leak)
        raise FastGTError(f"data={path!r} has {len(labels) or 'no'} label columns"
                          f"{' (' + ', '.join(labels) + ')' if labels else ''}: allowed one "
                          f"column named {' or '.join(LABEL_COLUMNS)}")
    label = labels[0]
    feats = df.drop(columns=[label])
    bad_cols = [c for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
    if feats.shape[1] == 0:
        raise FastGTError(f"data={path!r} has no feature column beside its label {label!r}: "
                          "allowed one or more numeric columns")
    if bad_cols:
        raise FastGTError(f"data={path!r}: feature columns must be numeric (not numeric: "
                          f"{', '.join(map(str, bad_cols[:5]))})")
    return np.ascontiguousarray(feats.to_numpy(dtype=np.float64)), df[label].to_numpy()


def _libsvm(path):
    try:
        from sklearn.datasets import load_svmlight_file
    except ImportError:
        raise FastGTError(f"data={path!r} is read as a LIBSVM file, which needs scikit-learn: "
                          "pip install 'fastgt[data]' (or give an .npz or .parquet file)") from None
    X, y = load_svmlight_file(path, dtype=np.float64)
    return _csr(X), y


def _csr(X):
    import scipy.sparse as sps

    X = sps.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    return X
