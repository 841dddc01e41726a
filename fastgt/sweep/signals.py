"""Signals during a sweep: a stop that survives a lost exception (the blocks during which
Ctrl-C and SIGTERM wait, a worker's start, the writing of finished cells, take
runtime.signals_deferred)."""

from __future__ import annotations

#: a stop a signal handler asked for (``stop``): the dispatch loop raises it too, as an
#: exception raised in a handler is lost when it lands in a gc callback (Python prints it)
stops: list = []


def stop(exc: BaseException) -> None:
    """For a signal handler: stop the running sweep with ``exc`` (a KeyboardInterrupt,
    which writes the finished cells first), now and, should that be lost, at the dispatch loop's next look at ``stops``."""
    stops[:] = [exc]
    raise exc
