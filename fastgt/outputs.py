"""Output locations: checked before any work starts, written so that a failure loses nothing.

- ``check_file``: a file written after the work (a trace, a figure): its directory must
  exist, the path must not be a directory, a figure's suffix must be a known format, and
  the place must take a file (probed by creating it, then removing it again).
- ``check_dir``: a directory (a sweep, a report): created with its parents when the work
  writes, so only its nearest existing ancestor is probed, and nothing is created here.
- ``write_file``: a regular file is written under a temporary name in its directory and
  renamed into place (no partial file, an old file kept if the write fails); a symbolic
  link's target is written so (the link stays); anything else (a device, a pipe) is opened
  here and written through (the writer never gets its name: pyarrow replaced a device
  whose write failed).

Checks raise a one-line FastGTError naming the option (exit 2 from the CLI); a write that
still fails after the work raises WriteFailed (exit 1).
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Callable

from .errors import FastGTError, WriteFailed


def is_uri(path) -> bool:
    """A remote location (s3://, memory://, ...): checked by fsspec when it is opened."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def _local(path) -> str:
    text = os.fspath(path)
    return text.removeprefix("file://")


def _probe(option: str, shown: str, folder: str) -> None:
    """Can a file be created in ``folder``? (As root, os.access says yes to read-only and
    virtual file systems: only a real attempt tells.)"""
    try:
        fd, name = tempfile.mkstemp(prefix=".fastgt-probe-", dir=folder)
    except OSError as err:
        raise FastGTError(f"{option} {shown} cannot be written: {err.strerror} "
                          f"(in {folder!r})") from None
    os.close(fd)
    os.remove(name)


def check_file(option: str, path, formats: tuple[str, ...] | None = None,
               bare: bool = False) -> None:
    """Raise FastGTError unless ``path`` can be written as a file (see the module doc):
    with ``formats``, its suffix one of them (``bare``: or none, the first format; a suffix
    without letters, as in trace_gamma0.01, is none)."""
    shown = repr(os.fspath(path))
    local = _local(path)
    if formats is not None:
        suffix = os.path.splitext(local)[1].lower().lstrip(".")
        if bare and not suffix.isalpha():  # trace_gamma0.01: a number, not a format
            suffix = ""
        if suffix not in formats and (suffix or not bare):
            raise FastGTError(f"{option} {shown} has an unknown format "
                              f"{'.' + suffix if suffix else '(no suffix)'}: allowed "
                              + ", ".join(f".{f}" for f in formats)
                              + (f" (no suffix: {formats[0]})" if bare else ""))
    folder = os.path.dirname(os.path.abspath(local))
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise FastGTError(f"{option} {shown}: {folder!r} {what}: allowed a file in an "
                          "existing directory")
    if os.path.isdir(local):
        raise FastGTError(f"{option} {shown} is a directory: allowed a file path")
    if os.path.exists(local):
        if not os.access(local, os.W_OK):
            raise FastGTError(f"{option} {shown} cannot be written: permission denied")
        return
    _probe(option, shown, folder)


def check_dir(option: str, path, probe: bool = True) -> None:
    """Raise FastGTError unless ``path`` is, or can be made, a directory that takes files
    (``probe``: tried with a file; else only no file in the way, as for reading it)."""
    if is_uri(path):
        return
    shown = repr(os.fspath(path))
    here = os.path.abspath(_local(path))
    if os.path.exists(here) and not os.path.isdir(here):
        raise FastGTError(f"{option} {shown} is a file: allowed a directory")
    while not os.path.exists(here):
        here = os.path.dirname(here)
    if not os.path.isdir(here):
        raise FastGTError(f"{option} {shown} goes through the file {here!r}: allowed a directory")
    if probe:
        _probe(option, shown, here)


def write_file(option: str, path, write: Callable) -> None:
    """``write(target)`` writes the output to ``target``, a file name or an open binary file
    (a device, a pipe); see the module doc. Raises WriteFailed with the reason when the
    write fails."""
    local = os.path.realpath(_local(path))  # a link's target, not the link
    try:
        regular = not os.path.exists(local) or stat.S_ISREG(os.stat(local).st_mode)
        if not regular:
            with open(local, "wb") as f:
                write(f)
            return
        # a name of our own, created by the writer (with the user's umask, unlike mkstemp)
        folder, base = os.path.split(os.path.abspath(local))
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            write(tmp)
            os.replace(tmp, local)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except OSError as err:
        raise WriteFailed(f"{option} {os.fspath(path)!r} could not be written: "
                          f"{err.strerror or err}") from None
