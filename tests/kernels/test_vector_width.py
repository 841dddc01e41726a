"""The vector width fastgt's kernels compile for (kernels/__init__.py: configure_vectors).
numba fixes its CPU features once per process, so each case runs in a child process of
its own."""

import json
import os
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as ll
import pytest

from fastgt.kernels import FIRST_AVX512, VECTOR_BITS

#: prints the features numba compiles for once fastgt is imported, whether a loop compiled
#: then used 512-bit vectors, and whether the environment (children's) was left alone
PROBE = """
import json, os, sys
{before}
import fastgt.kernels
import numba, numpy as np
from numba.core import registry
@numba.njit
def axpy(a, b):
    for i in range(a.shape[0]):
        a[i] = 2.0 * a[i] + b[i]
axpy(np.zeros(64), np.zeros(64))
print(json.dumps({{"features": registry.cpu_target.target_context.codegen().magic_tuple()[2],
                  "zmm": "zmm" in axpy.inspect_asm(axpy.signatures[0]),
                  "env": os.environ.get("NUMBA_CPU_FEATURES")}}))
"""
AVX512 = bool(ll.get_host_cpu_features().get("avx512f"))
WIDENED = AVX512 and ll.get_host_cpu_name() not in FIRST_AVX512


def probe(bits=None, user=None, before="") -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTGT_VECTOR_BITS", "NUMBA_CPU_FEATURES")}
    if bits is not None:
        env["FASTGT_VECTOR_BITS"] = bits
    if user is not None:
        env["NUMBA_CPU_FEATURES"] = user
    out = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


HOST = ll.get_host_cpu_features().flatten()


def test_by_default_512_bit_vectors_where_the_cpu_has_avx512():
    """... set as numba's configuration, not in the environment that child processes get
    (they decide for themselves; a benchmark's child of another version would otherwise
    compile as this one)."""
    got = probe()
    if WIDENED:
        assert got == {"features": HOST + ",-prefer-256-bit", "zmm": True, "env": None}
    else:  # no AVX-512, or its first generation: LLVM's own choice
        assert got["features"] == HOST and got["env"] is None


@pytest.mark.skipif(not AVX512, reason="the CPU has no AVX-512: one vector width only")
def test_fastgt_vector_bits_chooses_either_width():
    narrow, wide = probe("256"), probe("512")
    assert narrow["features"] == HOST + ",+prefer-256-bit" and not narrow["zmm"]
    assert wide["features"] == HOST + ",-prefer-256-bit" and wide["zmm"]


def test_a_user_setting_of_numba_cpu_features_is_kept():
    assert probe("512", user=HOST)["features"] == HOST


def test_numba_used_before_fastgt_keeps_its_features():
    """numba compiled before fastgt's import: its features are fixed, and stay."""
    before = "import numba\n@numba.njit\ndef one():\n    return 1\none()\n"
    got = probe("512", before=before)
    assert got["features"] == HOST
    assert not got["zmm"] or not WIDENED  # LLVM's choice: 256 bits where fastgt widens


def test_a_bad_fastgt_vector_bits_is_one_line_naming_the_allowed_values():
    env = dict(os.environ, FASTGT_VECTOR_BITS="1024")
    env.pop("NUMBA_CPU_FEATURES", None)
    cli = Path(sys.executable).parent / "fastgt"
    out = subprocess.run([str(cli), "run", "--n", "4", "--d", "2", "--steps", "2", "--quiet"],
                         check=False, env=env, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr == ("Error: FASTGT_VECTOR_BITS='1024' is invalid: allowed 256 or 512 "
                          "(or unset: 512 where the CPU has AVX-512)\n")


DOTS = """
import json
import numpy as np
from fastgt.problems.samples import dense_dot
g = np.random.default_rng(5)
out = []
for dp in (8, 56, 104, 504):
    A, X = g.standard_normal((3, dp)), g.standard_normal((2, dp))
    out.append(float(dense_dot(A, 2, X, 1)).hex())
print(json.dumps(out))
"""


@pytest.mark.skipif(not AVX512, reason="the CPU has no AVX-512: one vector width only")
def test_the_data_problems_reassociated_dot_keeps_its_bits_at_either_width():
    """samples.dense_dot sums in an order that follows the vector width: it is compiled for
    256-bit vectors at either setting (kernels.rounding.narrow_vectors), so a data
    problem's runs keep their bits."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CPU_FEATURES"}
    got = [json.loads(subprocess.run([sys.executable, "-c", DOTS], check=True, text=True,
                                     capture_output=True,
                                     env=env | {"FASTGT_VECTOR_BITS": bits}).stdout)
           for bits in VECTOR_BITS]
    assert got[0] == got[1]  # without narrow_vectors: 3 of the 4 differ on a Sapphire Rapids
