"""Where the optima x* of finite-sum problems are kept between processes: a sweep's
``DIR/optimum/<key>.npy`` (any fsspec URI), so that every worker of the sweep, and every
later sweep on DIR, solves a problem instance once. ``key`` identifies the instance (its
data, split, regularization and seed: problems/samples.py). Outside a sweep (``fastgt.run``)
nothing is written: the optimum lives with the instance only."""

from __future__ import annotations

import contextlib
import io
import secrets

import numpy as np

_dir: list = [None]  # the directory in use (a stack of one: cache_in nests by restoring)


@contextlib.contextmanager
def cache_in(uri: str | None):
    """Keep optima under ``uri`` within the block (None: nowhere)."""
    saved, _dir[0] = _dir[0], uri
    try:
        yield
    finally:
        _dir[0] = saved


def _fs():
    import fsspec

    fs, root = fsspec.core.url_to_fs(_dir[0])
    return fs, root.rstrip("/")


def load(key: str) -> np.ndarray | None:
    """The cached x* of instance ``key``, or None (no cache, not there, or unreadable)."""
    if _dir[0] is None:
        return None
    fs, root = _fs()
    try:
        return np.load(io.BytesIO(fs.cat_file(f"{root}/{key}.npy")), allow_pickle=False)
    except (FileNotFoundError, ValueError, OSError):
        return None


def save(key: str, x: np.ndarray) -> None:
    """Store x* of instance ``key`` atomically (a temporary renamed into place: a reader
    sees the whole array or none; two workers solving the same instance write equal bits)."""
    if _dir[0] is None:
        return
    fs, root = _fs()
    fs.makedirs(root, exist_ok=True)
    buf = io.BytesIO()
    np.save(buf, np.asarray(x, dtype=np.float64), allow_pickle=False)
    tmp = f"{root}/.{key}.{secrets.token_hex(4)}.tmp"
    fs.pipe_file(tmp, buf.getvalue())
    fs.mv(tmp, f"{root}/{key}.npy")
