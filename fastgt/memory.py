"""How much memory a run may still take, the check that refuses a state beyond it, and
the size of the CPU's last-level cache (where the kernels' work may lie beyond it:
temporal blocking's plans, the data problems' prefetching).

The memory available is the machine's (Linux: MemAvailable) or, when the process runs in
a memory cgroup with a limit (a container, a batch job's allocation, a Dask worker's pod),
what the cgroup may still take, whichever is less: past a cgroup's limit the kernel kills
the process (SIGKILL, no message) while the machine still has memory to spare.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

MEMINFO = Path("/proc/meminfo")
SELF_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: a cgroup v1 limit at or above this is "no limit" (the kernel writes 2^63 less a page)
NO_LIMIT = 1 << 60
#: states smaller than this are not checked against the memory available (no read of
#: /proc/meminfo for every small run)
MEMORY_CHECKED = 256 << 20


def check_memory(need: int) -> None:
    """MemoryError if ``need`` bytes (from MEMORY_CHECKED) pass the memory available."""
    if need < MEMORY_CHECKED:
        return
    avail = available_memory()
    if avail is not None and need > avail:
        raise MemoryError(f"the state of this run needs {size(need)} or more, {size(avail)} "
                          "are available")


def size(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


def available_memory() -> int | None:
    """Bytes this process may take now: the least of MemAvailable and its memory cgroups'
    room (cgroup_room), or None where neither is known (MemAvailable reported as 0
    counts as not known)."""
    known = [v for v in (meminfo_available(), cgroup_room()) if v is not None]
    return min(known) if known else None


def meminfo_available() -> int | None:
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 or None
    except (OSError, ValueError, IndexError):
        pass
    return None


def cgroup_room() -> int | None:
    """The least, over this process's memory cgroup and its ancestors that set a limit, of
    the limit less the usage that the kernel would not reclaim first (usage less the
    inactive file cache: the working set, as container runtimes count it); None when none
    sets a limit or there is no cgroup file system to read."""
    rooms = []
    for d, v2 in cgroup_dirs():
        limit = read_int(d / ("memory.max" if v2 else "memory.limit_in_bytes"))
        usage = read_int(d / ("memory.current" if v2 else "memory.usage_in_bytes"))
        if limit is None or limit >= NO_LIMIT or usage is None:
            continue
        inactive = stat_value(d / "memory.stat", "inactive_file" if v2 else "total_inactive_file")
        rooms.append(max(0, limit - max(0, usage - inactive)))
    return min(rooms) if rooms else None


def cgroup_dirs() -> list[tuple[Path, bool]]:
    """This process's memory cgroup directories, its own first, then its ancestors up to
    the mount, each with whether it is cgroup v2: from /proc/self/cgroup, the unified
    hierarchy's line (0::path) or a v1 line naming the memory controller. A path missing
    under the mount (a container sees its own cgroup as the mount's root) starts at the
    deepest directory that exists."""
    try:
        lines = SELF_CGROUP.read_text().splitlines()
    except OSError:
        return []
    dirs = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and not controllers:  # v2: the root, or a hybrid host's unified/
            unified = CGROUP_ROOT / "unified"
            mount, v2 = (unified if unified.is_dir() else CGROUP_ROOT), True
        elif "memory" in controllers.split(","):
            mount, v2 = CGROUP_ROOT / "memory", False
        else:
            continue
        d = mount.joinpath(*Path(path).parts[1:])
        while True:
            if d.is_dir():
                dirs.append((d, v2))
            if d == mount:
                break
            d = d.parent
    return dirs


def read_int(path: Path) -> int | None:
    """The integer a cgroup file holds, or None ("max", missing, unreadable)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stat_value(path: Path, key: str) -> int:
    """Field ``key`` of a cgroup memory.stat file, 0 if absent or unreadable."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


#: where the CPU's caches are described (Linux), and the suffixes of their sizes there
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def cache_sizes() -> dict[int, int]:
    """Bytes of cpu0's caches by level (sysfs; where a level has two, as the L1's data and
    instruction caches, either one), {} where the system does not say."""
    sizes = {}
    for index in sorted(CACHES.glob("index*")):
        try:
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        num, unit = (text[:-1], UNITS[text[-1]]) if text[-1:] in UNITS else (text, 1)
        if num.isdigit():
            sizes[level] = int(num) * unit
    return sizes


@cache
def llc_bytes() -> int | None:
    """The size of this CPU's last-level cache (the highest level of cpu0's caches in
    sysfs), None where the system does not say."""
    sizes = cache_sizes()
    return sizes[max(sizes)] if sizes else None
