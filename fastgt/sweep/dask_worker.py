"""Preloaded by the workers of the Dask cluster fastgt starts itself (``--scheduler
local``): Ctrl-C, which a terminal sends to the whole process group, is the driver's to
handle (it stops the cluster); each worker printed two tracebacks under the driver's line."""

import signal


def dask_setup(worker) -> None:
    """Dask's preload hook, run in the worker's process as it starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
