"""Values derived from a cell's parameters that cost seconds to minutes and are the same
for every cell that shares those parameters: the optimum x* of a problem with data, a
graph's spectrum (dense or Lanczos) and its eigenvalues for exact theory. A sweep keeps
them in its directory, ``DIR/<kind>/<key>.npy`` (any fsspec URI), so that every worker of
the sweep, and every later sweep on DIR, computes each once. ``key`` identifies what they
were derived from (a problem instance's data, split and seed: problems/samples.py; a
matrix's entries: MixingMatrix.fingerprint). Outside a sweep (``fastgt.run``) nothing is
written: values live with the objects that computed them."""

from __future__ import annotations

import contextlib
import contextvars
import io
import secrets

import numpy as np

#: what is kept, each in its own subdirectory
KINDS = ("optimum", "spectrum", "eigenvalues")

#: the directory in use, and the list that holds new values instead of it (cache_in): per
#: thread (a Dask worker may run several tasks at once)
_dir: contextvars.ContextVar = contextvars.ContextVar("derived_dir", default=None)
_held: contextvars.ContextVar = contextvars.ContextVar("derived_held", default=None)


@contextlib.contextmanager
def cache_in(uri: str | None, held: list | None = None):
    """Keep derived values under ``uri`` (a sweep's DIR) within the block (None: nowhere);
    ``held``: read the values kept there, but put new ones, (kind, key, array), in this list
    instead, for ``keep_all`` once the sweep starts (a grid's checks: DIR is unchanged by a
    spec they refuse, and by a dry run, which drops the list)."""
    tokens = _dir.set(uri), _held.set(held)
    try:
        yield
    finally:
        _held.reset(tokens[1])
        _dir.reset(tokens[0])


def keep_all(uri: str, held: list) -> None:
    """Keep under ``uri`` the values a cache_in block held."""
    with cache_in(uri):
        for kind, key, x in held:
            save(kind, key, x)


def active() -> bool:
    """Whether values are kept (within a sweep's cache_in)."""
    return _dir.get() is not None


def _fs(kind: str):
    import fsspec

    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: allowed {', '.join(KINDS)}")
    fs, root = fsspec.core.url_to_fs(_dir.get())
    return fs, f"{root.rstrip('/')}/{kind}"


def load(kind: str, key: str, shape: tuple) -> np.ndarray | None:
    """The kept float64 array of ``kind`` and ``key`` if it has ``shape``, else None (no
    directory in use, not there, unreadable for any reason, or another shape: the value
    is then derived again; a kept value never fails a cell)."""
    if _dir.get() is None:
        return None
    fs, root = _fs(kind)
    try:
        x = np.load(io.BytesIO(fs.cat_file(f"{root}/{key}.npy")), allow_pickle=False)
    except Exception:  # noqa: BLE001 (missing, empty, truncated, not an array, no access)
        return None
    return x if x.shape == shape and x.dtype == np.float64 else None


def save(kind: str, key: str, x: np.ndarray) -> None:
    """Keep ``x`` (as float64) atomically: a temporary renamed into place, so that a reader
    sees the whole array or none (two workers deriving the same value write equal bits).
    A directory that cannot be written keeps nothing (the value was derived all the same);
    a block that holds new values (cache_in) adds it to them."""
    if _dir.get() is None:
        return
    held = _held.get()
    if held is not None:
        held.append((kind, key, np.asarray(x, dtype=np.float64)))
        return
    fs, root = _fs(kind)
    buf = io.BytesIO()
    np.save(buf, np.asarray(x, dtype=np.float64), allow_pickle=False)
    tmp = f"{root}/.{key}.{secrets.token_hex(4)}.tmp"
    try:
        fs.makedirs(root, exist_ok=True)
        fs.pipe_file(tmp, buf.getvalue())
        fs.mv(tmp, f"{root}/{key}.npy")
    except OSError:
        with contextlib.suppress(OSError):
            fs.rm(tmp)


def kept(kind: str, key, shape: tuple, derive) -> np.ndarray:
    """The value of ``kind`` and ``key`` (a callable giving the key: it is computed only
    within a sweep), read if kept, else ``derive()`` (a float64 array of ``shape``) and
    kept: the one way every derived value goes."""
    if not active():
        return derive()
    key = key() if callable(key) else key
    x = load(kind, key, shape)
    if x is None:
        x = np.asarray(derive(), dtype=np.float64)
        save(kind, key, x)
    return x
