"""Thread control, threading-layer facts, signals deferred over a block or polled in it,
and whether the compile cache is warm (the warm-up itself, which runs the engine, is
fastgt.warmup)."""

from __future__ import annotations

import hashlib
import inspect
import marshal
from contextlib import contextmanager
from pathlib import Path

import numba

from .errors import check_int


def max_threads() -> int:
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def numba_threads(threads: int | None):
    """Run the body with ``threads`` numba threads (None: leave as is), restoring after."""
    if threads is None:
        yield numba.get_num_threads()
        return
    threads = check_int("threads", threads, 1, max_threads())
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield threads
    finally:
        numba.set_num_threads(old)


def _deliver(signum: int, handler) -> None:
    """Hand signal ``signum`` to ``handler`` (as signal.getsignal gives it) now, in the
    caller's frame: a Python handler is called (default_int_handler raises KeyboardInterrupt
    here), SIG_DFL's action is taken, SIG_IGN's nothing. Python itself runs a handler at its
    next check, which may fall inside a finalizer (a __del__, a gc callback), where the
    KeyboardInterrupt is printed and lost: a run went on to its end."""
    import signal

    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:  # SIGINT's and SIGTERM's: the process ends
        signal.signal(signum, handler)
        signal.raise_signal(signum)


class _Held:
    """Ctrl-C and SIGTERM recorded where they land (main thread), handed to the handlers in
    place before by ``release``; a second one at once. A signal ignored before (or handled
    outside Python) is left alone: recorded, an ignored Ctrl-C counted as the first of two,
    and a sweep's worker (which ignores Ctrl-C) took the driver's SIGTERM after a Ctrl-C to
    the process group for the second and lost it, the driver waiting for it forever."""

    def __init__(self):
        import signal

        self.caught: list = []
        self.previous = {}
        with _blocked():
            for s in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(s) not in (signal.SIG_IGN, None):
                    self.previous[s] = signal.signal(s, self._record)

    def _record(self, signum, frame):
        self.caught.append(signum)
        if len(self.caught) == 2:  # insisted on: now
            self.release(restore=True)

    def release(self, restore: bool) -> None:
        """Hand over the signals caught, each kind once, in the order they came
        (``restore``: the handlers first, the signals blocked meanwhile: one that comes then
        goes to the restored handler); the others are handed over even when a handler
        raises (Ctrl-C's: a SIGTERM after it still ends the process)."""
        import signal

        if restore:
            with _blocked():
                for s, handler in self.previous.items():
                    signal.signal(s, handler)
        caught = self.caught
        self.caught = []  # a signal handled between these lines is in ``caught``
        _deliver_all(list(dict.fromkeys(caught)), self.previous)


def _deliver_all(signums: list, handlers: dict) -> None:
    """Each signal to its handler in turn, the rest too when one raises."""
    if not signums:
        return
    try:
        _deliver(signums[0], handlers[signums[0]])
    finally:
        _deliver_all(signums[1:], handlers)


@contextmanager
def _blocked():
    """Ctrl-C and SIGTERM held pending for this thread inside the block, so that handlers
    swapped meanwhile see none (where the OS delivers them to this thread), delivered after
    it."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):  # not POSIX
        yield
        return
    both = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, both)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@contextmanager
def signals_deferred():
    """A Ctrl-C or SIGTERM inside the block is handled at its end (however the block ends)
    by the handler in place before it, a second one at once (main thread only)."""
    if not _main_thread():
        yield
        return
    held = _Held()
    try:
        yield
    finally:
        held.release(restore=True)


@contextmanager
def signals_polled():
    """A Ctrl-C or SIGTERM inside the block is handled by the handler in place before it
    when the block calls ``poll()`` (what it yields), in the frame that polls, or at its
    end; a second one at once (main thread only; elsewhere ``poll`` does nothing). The
    engine polls between kernel calls: a KeyboardInterrupt cannot land in a finalizer."""
    if not _main_thread():
        yield lambda: None
        return
    held = _Held()
    try:
        yield lambda: held.release(restore=False)
    finally:
        held.release(restore=True)


def threading_layer() -> str:
    """The layer numba picked (only known once a parallel kernel ran)."""
    try:
        return numba.threading_layer()
    except ValueError:
        return "not initialised"


_state: dict = {}  # (algorithm, problem family) -> known warm


def _kernels() -> list:
    """One compiled kernel of every kernel source file, by module name."""
    import types

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    from . import kernels

    first = {}
    for mod in vars(kernels).values():
        if isinstance(mod, types.ModuleType) and mod.__name__.startswith(kernels.__name__ + "."):
            jitted = [v for v in vars(mod).values()  # cached ones (not config.INLINE_FLAGS')
                      if isinstance(v, Dispatcher) and v.__module__ == mod.__name__
                      and not isinstance(v._cache, NullCache)]
            if jitted:
                first[mod.__name__] = jitted[0]
    return [first[k] for k in sorted(first)]


def _source_stamp(fn) -> str:
    """The name and sha256 of the file defining ``fn``; where there is none, of its source
    (a notebook cell's, through linecache), else of its code object (a function made by
    exec)."""
    path = Path(fn.__code__.co_filename)
    try:
        data = path.read_bytes()
    except OSError:
        try:
            data = inspect.getsource(fn).encode()
        except (OSError, TypeError):
            data = marshal.dumps(fn.__code__)
    return f"{path.name} {hashlib.sha256(data).hexdigest()}"


def _marker(algorithm: str, kernels=None) -> tuple[Path, str]:
    """The marker file of ``algorithm``, and the text it holds once warmup() has compiled
    the kernels its runs use there (each algorithm has its own block functions: a run of
    one never compiles the others'): what numba's on-disk cache checks before it loads a kernel instead of compiling
    it, asked of numba's own cache locators (no public API: the dispatchers' ``_cache``).

    - Where: numba keeps a source file's entries in a subdirectory of the cache named
      after the file's directory path, so two copies of fastgt sharing FASTGT_CACHE_DIR (two
      checkouts, a checkout and an installed copy) each compile their own kernels once;
      the marker lives there too, one per copy.
    - What: each kernel file's source stamp (its content hash; mtime and size before numba
      0.61), which the entries' index must match, and the target machine (CPU name and
      features), by which the index keys machine code; one marker per target machine.

    ``kernels``: a problem family's (kernels.oracles.ProblemKernels; None: the diagonal
    quadratics'): another family's templates compile apart, under a marker of their own
    that also stamps the file of the family's gradient hook (by its content: a hook is not
    cached on its own, config.INLINE_FLAGS).
    """
    ks = _kernels()
    locators = [k._cache._impl.locator for k in ks]
    stamps = [f"{Path(k.py_func.__code__.co_filename).name} {loc.get_source_stamp()!r}"
              for k, loc in zip(ks, locators)]
    family = "quadratic" if kernels is None else kernels.family
    if family != "quadratic":
        algorithm = f"{algorithm}-{family}"
        stamps.append(_source_stamp(kernels.grad_row.py_func))  # not cached itself
    machine = repr(ks[0].targetctx.codegen().magic_tuple())
    # one marker per target machine: the index keeps each one's machine code (a process
    # of 256-bit vectors beside one of 512, FASTGT_VECTOR_BITS), so a marker shared by
    # two would flip between them and announce a compile that does not happen
    tag = hashlib.sha256(machine.encode()).hexdigest()[:8]
    path = Path(locators[0].get_cache_path()) / f"fastgt-warm-{algorithm}-{tag}"
    return path, "\n".join([*stamps, machine])


def is_warm(algorithm: str = "gt", kernels=None) -> bool:
    """Whether the compile cache holds the kernels of ``algorithm``'s runs (on the problem
    family of ``kernels``, default the quadratics) for this copy of fastgt (its sources and
    their place) and this machine: whether a run would load them, not compile."""
    key = _unit(algorithm, kernels)
    if not _state.get(key):
        m, text = _marker(algorithm, kernels)
        _state[key] = m.exists() and m.read_text() == text
    return _state[key]


def mark_warm(algorithm: str, kernels=None) -> None:
    """Record that ``algorithm``'s kernels (on the family of ``kernels``) are compiled for
    this copy and this machine."""
    m, text = _marker(algorithm, kernels)
    m.parent.mkdir(parents=True, exist_ok=True)
    m.write_text(text)
    _state[_unit(algorithm, kernels)] = True


def _unit(algorithm: str, kernels) -> tuple:
    return algorithm, "quadratic" if kernels is None else kernels.family


def cache_dir() -> str:
    from .kernels import CACHE_DIR

    return str(CACHE_DIR)
