"""Processes: whether one still runs (claims of dead sweeps, workers watching their driver)."""

from __future__ import annotations

import os


def process_start(pid: int) -> str | None:
    """Start time (clock ticks since boot) of a live process, None if it does not exist or is
    a zombie; without /proc: "" for any live pid."""
    try:
        with open(f"/proc/{int(pid)}/stat") as f:
            stat = f.read()
    except (OSError, ValueError):
        if os.path.exists("/proc/self/stat"):
            return None
        try:
            os.kill(int(pid), 0)
        except (OSError, ValueError):
            return None
        return ""
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]
