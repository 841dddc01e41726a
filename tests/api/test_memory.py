"""fastgt.memory: the memory available within a cgroup's limit, read from file trees laid
out as the kernel's (cgroup v1 and v2) in a temporary directory."""

import pytest

from fastgt import memory


def tree(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake /proc and /sys/fs/cgroup: returns a function writing files into them."""
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "proc/meminfo")
    monkeypatch.setattr(memory, "SELF_CGROUP", tmp_path / "proc/self/cgroup")
    monkeypatch.setattr(memory, "CGROUP_ROOT", tmp_path / "cgroup")
    tree(tmp_path, {"proc/meminfo": "MemTotal: 9000000 kB\nMemAvailable: 8000000 kB\n"})
    return lambda files: tree(tmp_path, files)


GiB = 2**30


def test_v2_limit_less_working_set(fake):
    fake({"proc/self/cgroup": "0::/job/step\n",
          "cgroup/job/step/memory.max": f"{4 * GiB}\n",
          "cgroup/job/step/memory.current": f"{3 * GiB}\n",
          "cgroup/job/step/memory.stat": f"anon 1\ninactive_file {GiB}\nactive_file 5\n",
          "cgroup/job/memory.max": "max\n", "cgroup/job/memory.current": f"{9 * GiB}\n"})
    assert memory.cgroup_room() == 2 * GiB  # 4 - (3 - 1): the inactive cache is reclaimed
    assert memory.available_memory() == 2 * GiB  # less than MemAvailable's 8000000 kB


def test_a_hybrid_hosts_v2_hierarchy_is_under_unified(fake):
    fake({"proc/self/cgroup": "4:cpu:/x\n0::/job\n",
          "cgroup/unified/job/memory.max": f"{3 * GiB}\n",
          "cgroup/unified/job/memory.current": f"{GiB}\n"})
    assert memory.cgroup_room() == 2 * GiB


def test_the_tightest_ancestor_counts(fake):
    fake({"proc/self/cgroup": "0::/a/b\n",
          "cgroup/a/b/memory.max": f"{8 * GiB}\n", "cgroup/a/b/memory.current": "0\n",
          "cgroup/a/memory.max": f"{3 * GiB}\n", "cgroup/a/memory.current": f"{2 * GiB}\n"})
    assert memory.cgroup_room() == GiB


def test_v1_memory_controller(fake):
    fake({"proc/self/cgroup": "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n",
          "cgroup/memory/docker/abc/memory.limit_in_bytes": f"{2 * GiB}\n",
          "cgroup/memory/docker/abc/memory.usage_in_bytes": f"{GiB}\n",
          "cgroup/memory/docker/abc/memory.stat": "inactive_file 7\ntotal_inactive_file 0\n",
          "cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
          "cgroup/memory/memory.usage_in_bytes": f"{20 * GiB}\n"})
    assert memory.cgroup_room() == GiB


def test_a_container_sees_its_cgroup_as_the_mount(fake):
    """Inside a cgroup namespace /proc/self/cgroup may name a path the mount lacks: the
    mount's own files are then the process's cgroup."""
    fake({"proc/self/cgroup": "4:memory:/process_api/88c5\n",
          "cgroup/memory/memory.limit_in_bytes": f"{GiB}\n",
          "cgroup/memory/memory.usage_in_bytes": f"{2 * GiB}\n"})
    assert memory.cgroup_room() == 0  # over its limit: no room, never negative


@pytest.mark.parametrize("files", [
    {},  # no cgroup file at all
    {"proc/self/cgroup": "0::/\n", "cgroup/memory.max": "max\n", "cgroup/memory.current": "5\n"},
    {"proc/self/cgroup": "0::/\n", "cgroup/memory.max": f"{GiB}\n"},  # no usage: not known
    {"proc/self/cgroup": "1:cpu:/x\ngarbage\n"},  # no memory controller
])
def test_no_limit_leaves_meminfo(fake, files):
    fake(files)
    assert memory.cgroup_room() is None
    assert memory.available_memory() == 8000000 * 1024


def test_nothing_known(fake, tmp_path):
    (tmp_path / "proc/meminfo").write_text("MemAvailable: 0 kB\n")
    assert memory.available_memory() is None
    memory.check_memory(1 << 50)  # nothing known: nothing refused


def test_check_memory_names_both_sizes(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 3 * 2**20)
    memory.check_memory(memory.MEMORY_CHECKED - 1)  # small states are not checked
    with pytest.raises(MemoryError, match=r"^the state of this run needs 256\.0 MiB or more, "
                                          r"3\.0 MiB are available$"):
        memory.check_memory(memory.MEMORY_CHECKED)
