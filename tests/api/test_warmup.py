"""The compile cache: a cold warm-up fills it once, with one machine-code copy per kernel,
and the announcement of a compile appears exactly when one happens. The cold-cache tests'
child processes compile for a minute: they run in the background, beside the rest of the
suite (tests/background.py), and those tests check what they found at the end."""

import os
import shutil
import sys
from pathlib import Path

import pytest
from background import run

import fastgt
from fastgt.algorithms import ALGORITHMS, Batch, Cell
from fastgt.kernels.mixing import big
from fastgt.problems import make_noise
from fastgt.warmup import BIG


def this_cache(tmp_path: Path):
    """``fastgt warmup`` of both state types into this session's own cache (the first job
    of the background: the suite's float32 and data tests then load what it compiled, where
    they compiled for minutes on the suite's one core): its output."""
    cli = Path(sys.executable).parent / "fastgt"
    return run([str(cli), "warmup", "--dtype", "float32", "--dtype", "float64"], cwd=tmp_path)


@pytest.mark.background.with_args(this_cache)
def test_a_warmup_in_another_process_leaves_this_one_nothing_to_compile(background_result):
    """A warm-up in a second process, run while this one compiled kernels of its own into
    the same cache: every family's kernels are then warm here too, for both state types
    (the markers are the cache's, not the process's)."""
    from fastgt import runtime
    from fastgt.warmup import families, unit

    lines = [line for line in background_result.stdout.splitlines() if "ready in" in line]
    assert len(lines) == 2 * len(families()), background_result.stdout
    # one line per problem family and state type, naming its problems (two lines that
    # differed only in their times left a reader guessing)
    names = ["quadratic, consensus, hetero_quadratic", "least_squares, logistic, nonconvex"]
    assert [line.split(" ready in")[0] for line in lines] == [
        f"fastgt kernels of {n} ({t})" for t in ("float32", "float64") for n in names], lines
    assert all(line.endswith(f"(cache: {runtime.cache_dir()})") for line in lines), lines
    for kernels, _ in families():
        for algorithm in ALGORITHMS:
            for dtype in ("float32", "float64"):
                assert runtime.is_warm(unit(algorithm, dtype), kernels), (algorithm, dtype)


CHECK = """
import numpy as np, fastgt
from pathlib import Path
from fastgt import runtime, warmup
warmup.warmup()
assert runtime.is_warm()
cache = Path(runtime.cache_dir())
cached = set(cache.rglob("*.nb[ic]"))
assert cached
r = fastgt.run(topology=fastgt.topology("ring", n=8), d=3, steps=5, record_every=5)
print(repr(r.state["X"].tobytes().hex()))
fastgt.run(algorithm="dsgd", topology=fastgt.topology("ring", n=3000), d=100, steps=9,
           record_every=3, threads=2)  # temporal passes, parallel loops
print("compiled after the warm-up:", sorted(str(f) for f in set(cache.rglob("*.nb[ic]")) - cached))
"""


def cold_then_warm(tmp_path: Path) -> tuple:
    """A cold warm-up in a fresh cache directory, then a warm process: (the numba overloads
    of each kernel cached, the cache files after each, both outputs)."""
    env = dict(os.environ, FASTGT_CACHE_DIR=str(tmp_path))
    cold = run([sys.executable, "-c", CHECK], env=env)
    overloads = {}
    for f in tmp_path.rglob("*.nbc"):
        name = f.name.split(".py")[0]  # module.function-line
        overloads[name] = overloads.get(name, 0) + 1
    files = _entries(tmp_path)
    warm = run([sys.executable, "-c", CHECK], env=env)
    return overloads, files, _entries(tmp_path), cold, warm


@pytest.mark.slow
@pytest.mark.background.with_args(cold_then_warm)
def test_cold_warmup_compiles_each_kernel_once(background_result):
    """A cold cache (a fresh directory) ends with exactly one cached overload per kernel (no
    call passes a literal that would force a second copy of its callee), a big run after the
    warm-up (parallel init and record loops, temporal passes: warmup.BIG) compiles nothing,
    and a warm process then compiles nothing and gives the same numbers."""
    overloads, files, files_after, cold, warm = background_result

    assert {k.split("-")[0] for k in overloads} >= {
        "steps.run_steps_quadratic", "rng.fill_normals", "oracles.stochastic_grads_quadratic",
        "metrics.quadratic_metrics", "mixing.block_sums", "rows.all_rows",
        "metrics.quadratic_metrics_parallel", "metrics.block_terms_parallel",
        "mixing.block_sums_parallel",
        "rows.all_rows_parallel", "temporal.distances",
        *(f"{a.templates[0].__module__.rsplit('.', 1)[1]}.blocks_quadratic"
          for a in ALGORITHMS.values())}  # centralized's are D-SGD's
    assert all(v == 1 for v in overloads.values()), overloads
    assert "compiled after the warm-up: []" in cold.stdout  # a big run's paths too
    assert warm.stdout == cold.stdout
    assert "compiling" not in warm.stderr
    assert files_after == files  # nothing compiled again (the driver's pointer type)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_warmup_big_run_takes_the_paths_of_big_runs(dtype):
    """warmup.BIG is a run on the row-parallel loops and in temporal passes, in either dtype
    (a guard on its size; that the warm-up's run of it leaves a big run nothing to compile
    is the cold-cache test's)."""
    W = fastgt.topology("ring", n=BIG["n"])
    prob = fastgt.problem("quadratic").build(W.n, BIG["d"])
    batch = Batch([Cell(W, make_noise("gaussian", 1.0, prob.d, W), 0.01, 0)], prob, dtype=dtype)
    assert big(batch.used(batch.new_rows())) and batch.plan.levels > 1


RUN = """
import fastgt
print(fastgt.__file__)
fastgt.run(topology=fastgt.topology("ring", n=8), d=3, steps=5, record_every=5)
"""
ANNOUNCEMENT = "compiling the kernels of gt once"


def _entries(cache: Path) -> dict:
    """numba's cache files (index and machine code) with their modification times."""
    return {f: f.stat().st_mtime_ns for f in cache.rglob("*.nb[ic]")}


def copies_in_turn(tmp_path: Path) -> list:
    """Two copies of the package used in turn with one cache: (announced, compiled) of each
    run, each copy twice."""
    cache = tmp_path / "cache"
    copies = []
    for name in ("a", "b"):
        shutil.copytree(Path(fastgt.__file__).parent, tmp_path / name / "fastgt",
                        copy_function=shutil.copy, ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(tmp_path / name)
    for f in (tmp_path / "b").rglob("*.py"):
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))

    def use(copy: Path) -> tuple[bool, bool]:
        """(announced, compiled) for one run with ``copy``."""
        before = _entries(cache)
        env = dict(os.environ, FASTGT_CACHE_DIR=str(cache), PYTHONPATH=str(copy))
        proc = run([sys.executable, "-c", RUN], env=env, cwd=copy)
        assert proc.stdout.startswith(str(copy / "fastgt")), proc.stdout
        return ANNOUNCEMENT in proc.stderr, _entries(cache) != before

    return [use(copy) for copy in copies + copies]


@pytest.mark.slow
@pytest.mark.background.with_args(copies_in_turn)
def test_two_copies_sharing_a_cache_announce_a_compile_exactly_when_it_happens(
        background_result):
    """Two copies of the package (another directory, other file times, the same sources:
    one cache directory, FASTGT_CACHE_DIR) used in turn: numba keeps each copy's entries
    apart (by directory path), so each compiles once; the announcement comes with those
    two compiles and never after (it came on every run when the copies took turns)."""
    assert background_result == [(True, True), (True, True), (False, False), (False, False)]


ONE = """
import fastgt
from fastgt import runtime
fastgt.run(algorithm="extra", topology=fastgt.topology("ring", n=8), d=3, steps=5,
           record_every=5)
print(runtime.is_warm("extra"), runtime.is_warm("gt"))
"""


def one_algorithm(tmp_path: Path) -> tuple:
    """A run of EXTRA on a cold cache: (its output, the block functions compiled)."""
    env = dict(os.environ, FASTGT_CACHE_DIR=str(tmp_path))
    out = run([sys.executable, "-c", ONE], env=env)
    return out, {f.name.split(".py")[0].split("-")[0] for f in tmp_path.rglob("*.nbc")
                 if ".blocks_" in f.name}


@pytest.mark.slow
@pytest.mark.background.with_args(one_algorithm)
def test_a_run_compiles_only_its_own_algorithm(background_result):
    """On a cold cache a run of one algorithm compiles its block function and the shared
    kernels, never the other algorithms' (each costs seconds), and says which."""
    out, blocks = background_result
    assert out.stdout.split() == ["True", "False"]
    assert "compiling the kernels of extra once" in out.stderr
    assert blocks == {"extra.blocks_quadratic"}


def test_every_cached_kernel_caches_in_fastgts_directory():
    """Every numba function of the package that caches its machine code caches it under
    fastgt's directory, keyed by the sources' hash (one decorated outside
    kernels.fastgt_cache cached beside its source file, or in numba's own directory where
    that is read-only: samples.dense_dot did)."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    from fastgt.kernels import CACHE_DIR

    cached = {}
    for m in pkgutil.walk_packages(fastgt.__path__, "fastgt."):
        if m.name.endswith("dask_worker"):  # needs the dask extra; no numba code
            continue
        module = importlib.import_module(m.name)
        for name, f in vars(module).items():
            if isinstance(f, Dispatcher) and f._cache.__class__.__name__ != "NullCache":
                cached[f"{f.py_func.__module__}.{name}"] = f._cache._cache_path
    assert "fastgt.problems.samples.dense_dot" in cached
    outside = {k: p for k, p in cached.items() if not p.startswith(str(CACHE_DIR))}
    assert not outside


def test_each_target_machine_has_its_own_warm_marker(monkeypatch):
    """numba keys cached machine code by the target machine (CPU name and features), so
    processes of two vector widths (FASTGT_VECTOR_BITS) each load their own: one marker
    each, or a shared one would flip between them and announce compiles that never come."""
    from fastgt import runtime

    codegen = runtime._kernels()[0].targetctx.codegen()
    path, text = runtime._marker("gt")
    tuple_ = codegen.magic_tuple()
    other = (*tuple_[:2], tuple_[2] + ",+prefer-256-bit")
    monkeypatch.setattr(type(codegen), "magic_tuple", lambda self: other)
    path2, text2 = runtime._marker("gt")
    assert path2.parent == path.parent and path2 != path
    assert text2 == text.replace(repr(tuple_), repr(other))


def test_no_helper_inlined_by_llvm_is_cached_on_its_own():
    """A helper compiled with config.INLINE_FLAGS (compiled apart, inlined by LLVM) keeps
    no cache index of its own: it would name the types of every problem family it was
    compiled for, a test's or a user's module included, and a process that cannot import
    that module fails to read it (a later child of the suite failed so, after the example
    problem's tests had filled the cache). Its code is in each cached kernel calling it."""
    import importlib
    import pkgutil

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    helpers = {}
    for info in pkgutil.walk_packages(fastgt.__path__, "fastgt."):
        for name, v in vars(importlib.import_module(info.name)).items():
            if isinstance(v, Dispatcher) and v.targetoptions.get("forceinline"):
                helpers[f"{v.__module__}.{name}"] = v
    assert {"fastgt.kernels.mixing.mix_row", "fastgt.problems.samples.grad_row",
            "fastgt.kernels.rows.row"} <= set(helpers)
    assert [k for k, v in helpers.items() if not isinstance(v._cache, NullCache)] == []


def test_a_hook_without_a_file_is_stamped_by_its_code():
    """A family's warm marker stamps its hook's file; a hook with none (made by exec, or in
    a notebook) is stamped by its source or code: no error, and a change of it changes the
    stamp (its kernels are no longer warm)."""
    from types import SimpleNamespace

    import numba

    from fastgt import runtime

    def family(value):
        ns = {}
        exec(compile(f"def grad_row(co):\n    return {value}\n", "<cell>", "exec"), ns)  # noqa: S102
        return SimpleNamespace(family="cell", grad_row=numba.njit(ns["grad_row"]))

    (path_a, text_a), (path_b, text_b) = runtime._marker("gt", family(1)), runtime._marker(
        "gt", family(2))
    assert path_a == path_b and "gt-cell" in path_a.name
    assert text_a != text_b
