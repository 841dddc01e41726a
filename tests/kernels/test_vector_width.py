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
from background import run

from fastgt.kernels import FIRST_AVX512, VECTOR_BITS

#: prints the features numba compiles for once fastgt is imported, numba's own view of the
#: host's, whether a loop compiled then used 512-bit vectors, and whether the environment
#: (child processes') was left alone
PROBE = """
import json, os, sys
{before}
import fastgt.kernels
import numba, numpy as np
from numba.core import registry
from numba.core.codegen import get_host_cpu_features
@numba.njit
def axpy(a, b):
    for i in range(a.shape[0]):
        a[i] = 2.0 * a[i] + b[i]
axpy(np.zeros(64), np.zeros(64))
print(json.dumps({{"features": registry.cpu_target.target_context.codegen().magic_tuple()[2],
                  "host": get_host_cpu_features(),
                  "zmm": "zmm" in axpy.inspect_asm(axpy.signatures[0]),
                  "env": os.environ.get("NUMBA_CPU_FEATURES")}}))
"""
HOST = ll.get_host_cpu_features().flatten()
AVX512 = "+avx512f" in HOST.split(",")
WIDENED = AVX512 and ll.get_host_cpu_name() not in FIRST_AVX512
#: the variables of the user's that decide instead (cleared for every child)
USER_VARS = ("FASTGT_VECTOR_BITS", "NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME", "NUMBA_ENABLE_AVX")


def child(code: str, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in USER_VARS} | variables
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)


def probe(before="", **variables) -> dict:
    out = child(PROBE.format(before=before), **variables)
    return json.loads(out.stdout.splitlines()[-1]) | {"stderr": out.stderr}


def test_by_default_512_bit_vectors_where_the_cpu_has_avx512():
    """... set as numba's configuration, not in the environment that child processes get
    (they decide for themselves; a benchmark's child of another version would otherwise
    compile as this one)."""
    got = probe()
    assert got["env"] is None
    if WIDENED:
        assert got["features"] == HOST + ",-prefer-256-bit" and got["zmm"]
    else:  # no AVX-512, or its first generation: LLVM's own choice
        assert got["features"] == HOST


@pytest.mark.skipif(not AVX512, reason="the CPU has no AVX-512: one vector width only")
def test_fastgt_vector_bits_chooses_either_width():
    narrow, wide = probe(FASTGT_VECTOR_BITS="256"), probe(FASTGT_VECTOR_BITS="512")
    assert narrow["features"] == HOST + ",+prefer-256-bit" and not narrow["zmm"]
    assert wide["features"] == HOST + ",-prefer-256-bit" and wide["zmm"]


@pytest.mark.parametrize("variables", [
    {"NUMBA_CPU_FEATURES": HOST + ",+prefer-256-bit"}, {"NUMBA_CPU_NAME": "generic"},
    {"NUMBA_ENABLE_AVX": "0"}], ids=["features", "cpu-name", "no-avx"])
def test_what_the_user_gave_numba_decides(variables):
    """Features or a CPU name of the user's are kept as given; with AVX turned off in numba
    (NUMBA_ENABLE_AVX=0) there is no AVX-512 to widen to; the FASTGT_VECTOR_BITS that
    cannot apply is warned of."""
    got = probe(FASTGT_VECTOR_BITS="512", **variables)
    want = {"NUMBA_CPU_FEATURES": variables.get("NUMBA_CPU_FEATURES"),
            "NUMBA_CPU_NAME": "", "NUMBA_ENABLE_AVX": got["host"]}
    assert got["features"] == want[next(iter(variables))]
    assert "+avx512f" not in got["host"].split(",") or "NUMBA_ENABLE_AVX" not in variables
    assert "FASTGT_VECTOR_BITS=512 is not applied" in got["stderr"]


def test_numba_used_before_fastgt_keeps_its_features_and_says_so():
    """A numba function decorated before fastgt's kernels are imported fixed numba's
    features: they stay, and a FASTGT_VECTOR_BITS that cannot apply is warned of."""
    before = "import numba\n@numba.njit\ndef one():\n    return 1\n"
    got = probe(before, FASTGT_VECTOR_BITS="512")
    assert got["features"] == HOST
    assert ("FASTGT_VECTOR_BITS=512 is not applied: a numba function was defined before "
            "fastgt's kernels were imported") in got["stderr"]
    assert "not applied" not in probe(before)["stderr"]  # unset: nothing to say


def test_a_bad_fastgt_vector_bits_is_one_line_naming_the_allowed_values():
    cli = Path(sys.executable).parent / "fastgt"
    env = {k: v for k, v in os.environ.items() if k not in USER_VARS}
    out = subprocess.run([str(cli), "run", "--n", "4", "--d", "2", "--steps", "2", "--quiet"],
                         check=False, env=env | {"FASTGT_VECTOR_BITS": "1024"},
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr == ("Error: FASTGT_VECTOR_BITS='1024' is invalid: allowed 256 or 512 "
                          "(unset: 512 where the CPU has AVX-512, but for its first "
                          "generation)\n")


def test_from_the_cli_a_setting_that_cannot_apply_is_one_warning_line():
    """The warning comes as the command's module loads (fastgt's kernels), before the
    command runs: one line all the same."""
    cli = Path(sys.executable).parent / "fastgt"
    env = {k: v for k, v in os.environ.items() if k not in USER_VARS}
    out = subprocess.run([str(cli), "topo", "ring", "--n", "8"], check=True, text=True,
                         capture_output=True,
                         env=env | {"FASTGT_VECTOR_BITS": "512", "NUMBA_CPU_NAME": "generic"})
    assert out.stderr == ("warning: FASTGT_VECTOR_BITS=512 is not applied: numba's CPU name "
                          "or features given (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES) decide\n")


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
    got = [json.loads(child(DOTS, FASTGT_VECTOR_BITS=bits).stdout) for bits in VECTOR_BITS]
    assert got[0] == got[1]  # without narrow_vectors: 3 of the 4 differ on a Sapphire Rapids


HASHES = """
import hashlib
import numpy as np
import fastgt
h = hashlib.sha256()
for algorithm in ("gt", "dsgd"):
    for topology in (dict(topology="ring", n=12), dict(topology="torus", rows=4, cols=5),
                     dict(topology="interp_ring", n=16, alpha=0.6),
                     dict(topology="erdos_renyi", n=25, prob=0.25, graph_seed=3)):
        for noise in ("gaussian", "structured", "none"):
            for problem, d in (("quadratic", 13), ("hetero_quadratic", 100)):
                r = fastgt.run(algorithm=algorithm, problem=problem, noise=noise, d=d, steps=30,
                               record_every=10, seed=5, stepsize=0.05, threads=1, **topology)
                h.update(np.ascontiguousarray(r.records).tobytes())
                for k in sorted(r.state):
                    h.update(np.ascontiguousarray(r.state[k], dtype=np.float64).tobytes())
print(h.hexdigest())
"""


def hashes_at_both_widths(tmp_path):
    """48 runs of GT and D-SGD hashed in a child of each vector width (None without AVX-512)."""
    if not AVX512:
        return None
    env = {k: v for k, v in os.environ.items() if k not in USER_VARS}
    return [run([sys.executable, "-c", HASHES], env=env | {"FASTGT_VECTOR_BITS": bits},
                cwd=tmp_path).stdout for bits in VECTOR_BITS]


@pytest.mark.skipif(not AVX512, reason="the CPU has no AVX-512: one vector width only")
@pytest.mark.background.with_args(hashes_at_both_widths)
def test_the_vector_width_changes_no_number(background_result):
    """The step loops reduce nothing across vector lanes: 256- and 512-bit builds give the
    same bits (records and final states; quadratic problems, d = 13 and 100, every noise,
    rings, a torus, a mean term and general CSR rows)."""
    narrow, wide = background_result
    assert narrow == wide


#: a row helper's loop (INLINE_FLAGS) with and without narrow_vectors, each inlined into a
#: caller with no loop of its own: whether each caller's machine code uses 512-bit registers
HOOKS = """
import json
import numpy as np
from numba import njit
from fastgt.config import INLINE_FLAGS
from fastgt.kernels.rounding import narrow_vectors

@njit(**INLINE_FLAGS)
def hook(x):
    narrow_vectors()
    for k in range(x.shape[0]):
        x[k] = 2.0 * x[k] + 1.0

@njit(**INLINE_FLAGS)
def plain(x):
    for k in range(x.shape[0]):
        x[k] = 2.0 * x[k] + 1.0

def wide(helper):
    @njit(cache=False)
    def caller(x):
        helper(x)
    caller(np.ones(64))
    return "%zmm" in caller.inspect_asm(caller.signatures[0])

print(json.dumps([wide(hook), wide(plain)]))
"""


@pytest.mark.skipif(not WIDENED, reason="no AVX-512 (or its first generation): 256-bit "
                    "vectors anyway")
def test_a_hook_keeps_its_256_bit_loops_in_a_512_bit_caller():
    """narrow_vectors in a row helper (INLINE_FLAGS: a problem family's grad_row) marks the
    helper, which numba compiles on its own: LLVM vectorizes its loops for 256-bit vectors
    there, then inlines the vectorized loop (forceinline), so that it stays 256-bit inside
    a caller of the process's width (an algorithm's block function); the same loop without
    it takes 512-bit vectors."""
    narrowed, plain = json.loads(child(HOOKS).stdout.splitlines()[-1])
    assert not narrowed and plain
