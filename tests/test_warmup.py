"""The compile cache: a cold warm-up fills it once, in two processes, with one machine-code
copy per kernel."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastgt import runtime

CHECK = """
import numpy as np, fastgt
from fastgt import runtime
runtime.warmup()
assert runtime.is_warm()
r = fastgt.run(topology=fastgt.topology("ring", n=8), d=3, steps=5, record_every=5)
print(repr(r.state["X"].tobytes().hex()))
"""


@pytest.mark.slow
def test_cold_warmup_compiles_each_kernel_once(tmp_path):
    """A cold cache (a fresh directory) is filled by this process and one helper; every
    kernel ends up with exactly one cached overload (the helper compiled run_steps' callees
    with the very types run_steps uses, and no call passed a literal that would force a
    second copy); and the numbers are the warm cache's."""
    env = dict(os.environ, FASTGT_CACHE_DIR=str(tmp_path))
    cold = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                          text=True, check=True)
    overloads = {}
    for f in tmp_path.rglob("*.nbc"):
        name = f.name.split(".py")[0]  # module.function-line
        overloads[name] = overloads.get(name, 0) + 1
    assert {k.split("-")[0] for k in overloads} >= {
        "steps.run_steps", "steps.step_blocks", "rng.fill_normals", "oracles.stochastic_grads",
        "metrics.quadratic_metrics", "mixing.block_sums"}
    assert all(v == 1 for v in overloads.values()), overloads
    warm = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                          text=True, check=True)
    assert warm.stdout == cold.stdout
    assert "compiling" not in warm.stderr


def test_the_helper_compiles_without_starting_helpers(monkeypatch):
    """The helper process's work never starts another helper or a warm-up of its own."""
    def refuse(*a, **k):
        raise AssertionError("the helper must not recurse")

    monkeypatch.setattr(runtime, "_start_helper", refuse)
    monkeypatch.setattr(runtime, "warmup", refuse)
    monkeypatch.setitem(runtime._state, "warm", False)
    monkeypatch.setitem(runtime._state, "warming", False)
    runtime.helper()
    from fastgt.kernels import steps

    assert steps.step_blocks.signatures and steps.step_end.signatures


def test_helper_runs_this_very_package(monkeypatch):
    """The helper imports the fastgt being run (first on PYTHONPATH, and no working directory
    before it), not another copy."""
    seen = {}

    def fake_popen(cmd, env, **kw):
        seen["cmd"], seen["env"] = cmd, env
        return "proc"

    monkeypatch.setattr(subprocess, "Popen", fake_popen)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    assert runtime._start_helper() == "proc"
    root = Path(runtime.__file__).resolve().parent.parent
    assert seen["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(root)
    assert seen["env"]["PYTHONSAFEPATH"] == "1"  # the working directory does not come first
    assert seen["cmd"][0] == sys.executable
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 1)
    assert runtime._start_helper() is None  # one core: nothing to gain
