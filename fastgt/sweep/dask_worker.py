"""Preloaded by the workers of the Dask cluster fastgt starts itself (``--scheduler
local``): Ctrl-C, which a terminal sends to the whole process group, is the driver's to
handle (it stops the cluster); each worker printed two tracebacks under the driver's line.
A heartbeat cut short as the driver closes the cluster is not an error either (distributed
logged one with its traceback, in about 1 of 10 interrupted sweeps here); whatever else goes
wrong on a worker reaches the driver as its task's error or as a lost task."""

import logging
import signal


def quiet_shutdown(record: logging.LogRecord) -> bool:
    """A logging filter: False (drop) for the heartbeat a closing cluster cuts short."""
    return not record.getMessage().startswith("Failed to communicate with scheduler during "
                                              "heartbeat")


def dask_setup(worker) -> None:
    """Dask's preload hook, run in the worker's process as it starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker").addFilter(quiet_shutdown)
