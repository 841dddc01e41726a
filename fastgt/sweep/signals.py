"""Signals during a sweep: a block during which Ctrl-C and SIGTERM wait (a worker's start,
the writing of finished cells), and a stop that survives a lost exception."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def signals_deferred():
    """A Ctrl-C or SIGTERM inside the block is handled at its end (however the block ends)
    by the handler in place before it, a second one at once (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught, previous = [], {}

    def restore():
        for s, handler in previous.items():
            signal.signal(s, handler)

    def record(signum, frame):
        caught.append(signum)
        if len(caught) == 2:  # insisted on: now
            restore()
            signal.raise_signal(signum)

    previous.update({s: signal.signal(s, record) for s in (signal.SIGINT, signal.SIGTERM)})
    try:
        yield
    finally:
        restore()
        if len(caught) == 1:
            signal.raise_signal(caught[0])


#: a stop a signal handler asked for (``stop``): the dispatch loop raises it too, as an
#: exception raised in a handler is lost when it lands in a gc callback (Python prints it)
stops: list = []

def stop(exc: BaseException) -> None:
    """For a signal handler: stop the running sweep with ``exc`` (a KeyboardInterrupt,
    which writes the finished cells first), now and, should that be lost, at the dispatch loop's next look at ``stops``."""
    stops[:] = [exc]
    raise exc
