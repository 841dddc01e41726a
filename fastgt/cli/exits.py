"""Exit codes and one-line errors of every command, and what a figure may be written as.
Light to import (click only): the commands that only read results (status, compact) start
without numba or pandas."""

from __future__ import annotations

import functools

import click

from ..errors import FastGTError, WriteFailed

#: exit codes of every command (documented in ``fastgt --help``)
EXIT_OK, EXIT_WRITE, EXIT_USAGE, EXIT_RESULT = 0, 1, 2, 3
EXIT_CODES = f"""Exit codes: {EXIT_OK} ok; {EXIT_WRITE} an output could not be written after the
work (a full disk: the message says what was kept; a closed pipe, as in `| head`, ends the
output quietly, click's convention), or the memory ran out (one line); {EXIT_USAGE} bad
input (one line naming the option, before any work); {EXIT_RESULT} the simulation diverged (run), the stepsize is
unstable (theory), or some cells failed or diverged (grid, after finishing the others);
130 stopped by Ctrl-C, 143 a sweep stopped by SIGTERM (a sweep keeps its finished cells)."""

#: figure formats of ``--out`` (matplotlib's Agg and vector backends)
FIGURE_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


class UserError(click.ClickException):
    """Printed as one line, ``Error: <message>``, with exit code 2 (like click's usage errors)."""

    exit_code = EXIT_USAGE


class WriteError(click.ClickException):
    """An output that failed after the work: one line, exit code 1."""

    exit_code = EXIT_WRITE


class OutOfMemory(click.ClickException):
    """The machine's memory ran out (a state too large for it): one line, exit code 1."""

    exit_code = EXIT_WRITE


class ResultError(click.ClickException):
    """A result that is not a success (diverged, unstable, failed cells): one line, exit 3."""

    exit_code = EXIT_RESULT


def user_errors(f):
    """Turn FastGTError into a one-line message and exit code 2, WriteFailed into one line
    and exit code 1."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except FastGTError as err:
            raise UserError(str(err)) from None
        except WriteFailed as err:
            raise WriteError(str(err)) from None
        except MemoryError as err:  # numpy's names the array it could not allocate
            why = " ".join(str(err).split()) or "an allocation failed"
            raise OutOfMemory(f"out of memory: {why} (a run holds its state, arrays of n "
                              "x d values of 8 bytes, 4 in float32, and a problem with data "
                              "its rows, n x samples x d: a smaller n, d or samples, or "
                              "float32)") from None

    return wrapper
