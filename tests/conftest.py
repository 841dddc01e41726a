"""Shared fixtures: a catalogue of small, connected mixing matrices (n ~ 10-40); the
session's Ctrl-C handler."""

import signal

import background
import pytest

import fastgt
from fastgt.runtime import numba_threads

#: (family, params, d): d varies (odd and even) so that every kernel path sees both parities
SMALL_TOPOLOGIES = [
    ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}, 5),
    ("geometric", {"n": 30, "radius": 0.35, "seed": 1}, 4),
    ("ring", {"n": 12, "self_weight": 0.2}, 7),
    ("interp_ring", {"n": 16, "alpha": 0.6}, 3),  # mean term beta = 0.4
    ("torus", {"rows": 4, "cols": 5}, 6),
    ("complete", {"n": 10}, 5),  # pure mean term, no sparse entries
    ("star", {"n": 15}, 4),
]


@pytest.fixture(params=SMALL_TOPOLOGIES, ids=[s[0] for s in SMALL_TOPOLOGIES])
def small_topology(request):
    """(MixingMatrix, d) for every family of the catalogue."""
    name, params, d = request.param
    return fastgt.topology(name, **params), d


@pytest.fixture(scope="module")
def one_numba_thread():
    """Tiny runs are fastest on one thread (OpenMP barriers stall on a shared machine).
    Modules opt in with ``pytestmark = pytest.mark.usefixtures("one_numba_thread")``; tests
    that compare thread counts pass ``threads=`` to fastgt.run explicitly."""
    with numba_threads(1):
        yield


def pytest_configure(config):
    """Python's own SIGINT handler (KeyboardInterrupt) where the session started with
    SIGINT ignored, as a shell starts a command run with ``&``: the tests that send
    themselves a Ctrl-C expect it (ignored, one hung for hours, 10^8 steps, and four failed),
    and their child processes then start as from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what they deselect
def pytest_collection_modifyitems(config, items):
    """Start the background jobs of the selected tests (tests/background.py) and run those
    tests last; --collect-only starts none."""
    items[:] = background.start(items, launch=not config.option.collectonly)


def pytest_sessionfinish():
    background.stop()


@pytest.fixture
def background_result(request):
    """What the test's background job returned (tests/background.py)."""
    return background.result(request.node.nodeid)
