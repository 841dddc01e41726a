"""The compile cache: a cold warm-up fills it once, with one machine-code copy per kernel."""

import os
import subprocess
import sys

import pytest

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
    """A cold cache (a fresh directory) ends with exactly one cached overload per kernel (no
    call passes a literal that would force a second copy of its callee), and a warm
    process then compiles nothing and gives the same numbers."""
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
