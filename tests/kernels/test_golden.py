"""Golden bits: a fixed set of runs (every algorithm, topology kind, noise and problem that
exists) must give exactly the trajectories and final states recorded in tests/kernels/golden.json,
on 1 and 2 threads and in batches. It guards refactors of the engine: they keep the numbers.

The file was written before the engine redesign (issue "one engine for many algorithms")
by ``python tests/kernels/test_golden.py --write``. Bits are compared on the CPU model that wrote
the file; on another model (the project's machine changes between sessions) vector widths
may differ, so there the check is a relative 1e-12 on each array's sum and norm, recorded
beside the hashes.

The problems with data (least squares, logistic, non-convex: dense rows and a sparse file,
minibatches, full gradients, added noise, a float32 state) have a set of their own in
tests/kernels/golden_data.json, written before the blocked minibatch gradient
(problems/samples.py) by ``python tests/kernels/test_golden.py --write-data`` (its sparse
runs re-recorded after, when their file came to be drawn with numpy alone: the change left
sparse rows' code as it was; the 24 float64 logistic and non-convex runs on dense rows
re-recorded when their slope came to use fastgt's own exp, kernels/exp.py, numerics
version 3 of those problems: every sum and norm within 8e-16 of the one before, the 26
others' bits unchanged, sparse rows keeping libm's exp).
tests/problems/test_samples.py checks those blocks' bits on any CPU. Its two float32 runs
were re-recorded when a float32 state came to compute in float32 (rounding.stored; before,
its kernels widened every element to float64 and rounded on store), and runs of float32
states on the quadratic problems, every algorithm, got a set of their own then,
tests/kernels/golden_float32.json (``--write-float32``), which guards that arithmetic.
All eleven float32 runs were re-recorded when a float32 array's normals came to be drawn
in float32 arithmetic (kernels/rng.py's pair32: the initial point and the noise of a
float32 state; every sum and norm within 1.7e-5 relative of the one before, the float64
runs' bits unchanged). Two GT runs whose rows take gt.fused's one pass (a ring with
structured noise, a torus without noise) were added to that set before that pass, recorded
by the three passes it replaced. A fourth set, tests/kernels/golden_vector.json
(``--write-vector``), holds D²'s, EXTRA's and ATC-GT's Setup A runs on a ring, interp_ring
and (but D²) a torus at d = 27 and 100, recorded by the draw then the passes before those
rows came to take vector groups with their draw (kernels/vector_rows.py): D²'s first, then
each algorithm's added before its rows did (the entries before rewritten unchanged).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import fastgt
from fastgt.algorithms import ALGORITHMS
from fastgt.runtime import max_threads

GOLDEN = Path(__file__).with_name("golden.json")
GOLDEN_DATA = Path(__file__).with_name("golden_data.json")
GOLDEN_FLOAT32 = Path(__file__).with_name("golden_float32.json")
GOLDEN_VECTOR = Path(__file__).with_name("golden_vector.json")

TOPOLOGIES = {
    "ring": ("ring", {"n": 12, "self_weight": 0.2}, 13),
    "interp_ring": ("interp_ring", {"n": 16, "alpha": 0.6}, 5),  # mean term
    "torus": ("torus", {"rows": 4, "cols": 5}, 8),
    "erdos_renyi": ("erdos_renyi", {"n": 25, "prob": 0.25, "seed": 3}, 7),  # general CSR rows
    "complete": ("complete", {"n": 10}, 17),  # pure mean term
}
PROBLEMS = {"quadratic": {}, "hetero_quadratic": {"zeta": 1.5}, "consensus": {"zeta": 2.0}}
NOISES = ("gaussian", "structured", "none")
RUN = {"stepsize": 0.05, "steps": 60, "record_every": 7, "seed": 11}


#: the data set: problem -> parameters; "sparse" reads the .npz that sparse_file writes
DATA_PROBLEMS = {
    "least_squares": {"samples": 9, "split": "dirichlet", "split_alpha": 0.5, "reg": 0.1},
    "logistic": {"samples": 9, "split": "dirichlet", "split_alpha": 0.5, "reg": 0.05},
    "nonconvex": {"samples": 9, "split": "sorted", "reg": 0.1},
    "sparse": {"reg": 0.05},  # logistic on sparse_file's rows
}
#: noise -> batch_size: 5 takes a block of 4 rows and one more, full takes every row
DATA_NOISES = {"minibatch": 5, "full": 1, "minibatch+gaussian": 8}
DATA_ALGORITHMS = ("gt", "dsgd", "d2", "extra")
DATA_RUN = {"stepsize": 0.1, "steps": 30, "record_every": 7, "seed": 11, "d": 13}


#: float32 states: every algorithm on general CSR rows with structured noise, the fused
#: D-SGD pass, a mean term with gaussian noise, GT's recomputed gradients on a torus
FLOAT32_KEYS = ([f"{a}/erdos_renyi/hetero_quadratic/structured" for a in ALGORITHMS]
                + ["dsgd/ring/quadratic/none", "gt/interp_ring/quadratic/gaussian",
                   "gt/torus/hetero_quadratic/none", "gt/ring/quadratic/structured",
                   "gt/torus/quadratic/none"])


#: Setup A runs whose rows came to take vector groups with their draw
#: (kernels/vector_rows.py), recorded by the draw then the passes before they did: D²,
#: EXTRA and ATC-GT on a ring, interp_ring (the mean term) and a torus (D² refuses it), at d
#: with whole groups and a partial one of both runs (27: rows of 32) and with whole groups
#: and a padded run (100: rows of 104)
VECTOR_TOPOLOGIES = {"ring": ("ring", {"n": 12}),
                     "interp_ring": ("interp_ring", {"n": 16, "alpha": 0.6}),
                     "torus": ("torus", {"rows": 4, "cols": 5})}
VECTOR_KEYS = [f"{algo}/{topo}/{d}" for algo, topos in (("d2", ("ring", "interp_ring")),
                                                        ("extra", VECTOR_TOPOLOGIES),
                                                        ("gt_atc", VECTOR_TOPOLOGIES))
               for topo in topos for d in (27, 100)]


def keys():
    for algo in ("gt", "dsgd"):
        for topo in TOPOLOGIES:
            for prob in PROBLEMS:
                for noise in NOISES:
                    yield f"{algo}/{topo}/{prob}/{noise}"


def parts(key: str):
    algo, topo, prob, noise = key.split("/")
    name, params, d = TOPOLOGIES[topo]
    return algo, fastgt.topology(name, **params), fastgt.problem(prob, **PROBLEMS[prob]), noise, d


def data_keys():
    for algo in DATA_ALGORITHMS:
        for prob in DATA_PROBLEMS:
            for noise in DATA_NOISES:
                yield f"{algo}/{prob}/{noise}/float64"
    for algo in ("gt", "d2"):
        yield f"{algo}/logistic/minibatch/float32"


def sparse_file(folder: Path) -> str:
    """An .npz of 120 sparse rows (about 30% nonzeros) of d = 13 with two-class labels, from
    numpy's generator alone (scipy.sparse.random's sampler may change between versions)."""
    import scipy.sparse as sps

    path = folder / "golden_sparse.npz"
    if not path.exists():
        g = np.random.default_rng(5)
        values = g.normal(size=(120, 13)) * (g.random((120, 13)) < 0.3)
        y = np.where(values @ g.normal(size=13) > 0, 1.0, -1.0)
        sps.save_npz(path, sps.csr_matrix(values))
        with np.load(path) as z:
            np.savez(path, **z, y=y)
    return str(path)


def data_run(key: str, folder: Path, threads: int = 1):
    algo, prob, noise, dtype = key.split("/")
    params = dict(DATA_PROBLEMS[prob], batch_size=DATA_NOISES[noise])
    run_kw = dict(DATA_RUN)
    if prob == "sparse":
        prob, params["data"] = "logistic", sparse_file(folder)
        del run_kw["d"]
    return fastgt.run(algorithm=algo, topology=fastgt.topology("ring", n=12, self_weight=0.4),
                      problem=fastgt.problem(prob, **params), noise=noise, dtype=dtype,
                      threads=threads, **({"sigma2": 0.3} if "gaussian" in noise else {}),
                      **run_kw)


def vector_run(key: str, threads: int = 1):
    algo, topo, d = key.split("/")
    name, params = VECTOR_TOPOLOGIES[topo]
    return fastgt.run(algorithm=algo, topology=fastgt.topology(name, **params),
                      noise="gaussian", d=int(d), threads=threads, **RUN)


def run(key: str, threads: int = 1, dtype: str = "float64"):
    algo, W, prob, noise, d = parts(key)
    return fastgt.run(algorithm=algo, topology=W, problem=prob, noise=noise, d=d,
                      threads=threads, dtype=dtype, **RUN)


#: the records' columns the golden set holds: step and the five metrics of its time
#: (a metric declared since, as accuracy, is a column more and not part of it)
GOLDEN_COLUMNS = 6


def fingerprint(res) -> dict:
    """sha256 of the records and of each final array, and their sums and norms."""
    records = np.ascontiguousarray(res.records[:, :GOLDEN_COLUMNS])
    arrays = {"records": records, **{k: np.ascontiguousarray(res.state[k])
                                         for k in sorted(res.state)}}
    out = {}
    for name, a in arrays.items():
        a = np.asarray(a, dtype=np.float64)
        out[name] = {"sha256": hashlib.sha256(a.tobytes()).hexdigest(),
                     "sum": float(np.nansum(a)), "norm": float(np.sqrt(np.nansum(a * a)))}
    return out


def cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def _load(path: Path = GOLDEN) -> dict:
    return json.loads(path.read_text())


def _check(key: str, got: dict, golden: dict) -> None:
    want = golden["runs"][key]
    assert sorted(got) == sorted(want), key
    same_cpu = golden["cpu"] == cpu()
    for name, fp in want.items():
        if same_cpu:
            assert got[name]["sha256"] == fp["sha256"], f"{key} {name}: other bits"
        else:
            for q in ("sum", "norm"):
                assert got[name][q] == pytest.approx(fp[q], rel=1e-12, abs=1e-300), (key, name, q)


@pytest.fixture(scope="module")
def golden():
    return _load()


def test_the_golden_set_covers_every_combination(golden):
    assert sorted(golden["runs"]) == sorted(keys())


@pytest.mark.parametrize("key", list(keys()))
def test_one_thread(golden, key):
    _check(key, fingerprint(run(key)), golden)


@pytest.mark.skipif(max_threads() < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("key", [k for k in keys() if "/none" not in k])
def test_two_threads(golden, key):
    _check(key, fingerprint(run(key, threads=2)), golden)


@pytest.fixture(scope="module")
def golden_data():
    return _load(GOLDEN_DATA)


def test_the_data_set_covers_every_data_key(golden_data):
    assert sorted(golden_data["runs"]) == sorted(data_keys())


@pytest.mark.parametrize("key", list(data_keys()))
def test_data_problems(golden_data, key, tmp_path):
    _check(key, fingerprint(data_run(key, tmp_path)), golden_data)


@pytest.mark.skipif(max_threads() < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("key", ["gt/logistic/minibatch/float64", "d2/sparse/full/float64"])
def test_data_problems_two_threads(golden_data, key, tmp_path):
    _check(key, fingerprint(data_run(key, tmp_path, threads=2)), golden_data)


@pytest.fixture(scope="module")
def golden_float32():
    return _load(GOLDEN_FLOAT32)


def test_the_float32_set_covers_its_keys(golden_float32):
    assert sorted(golden_float32["runs"]) == sorted(FLOAT32_KEYS)


@pytest.mark.filterwarnings("ignore::fastgt.FastGTWarning")  # D², EXTRA: the drift note
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("key", FLOAT32_KEYS)
def test_float32_states(golden_float32, key, threads):
    if threads > max_threads():
        pytest.skip("needs 2 numba threads")
    _check(key, fingerprint(run(key, threads, "float32")), golden_float32)


@pytest.fixture(scope="module")
def golden_vector():
    return _load(GOLDEN_VECTOR)


def test_the_vector_set_covers_its_keys(golden_vector):
    assert sorted(golden_vector["runs"]) == sorted(VECTOR_KEYS)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("key", VECTOR_KEYS)
def test_vector_rows(golden_vector, key, threads):
    if threads > max_threads():
        pytest.skip("needs 2 numba threads")
    _check(key, fingerprint(vector_run(key, threads)), golden_vector)


@pytest.mark.parametrize("algo", ["gt", "dsgd"])
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("parallel,threads", [("cells", 1), ("blocks", 2)])
def test_batches(golden, algo, noise, parallel, threads):
    """A batch of the interp_ring cell and a ring cell of the same pattern (other weights,
    stepsize and seed) gives the golden bits for the first; the second equals its own run."""
    if threads > max_threads():
        pytest.skip("needs 2 numba threads")
    key = f"{algo}/interp_ring/hetero_quadratic/{noise}"
    _, W, prob, _, d = parts(key)
    other = {"topology": fastgt.topology("ring", n=16, self_weight=0.3), "stepsize": 0.02,
             "seed": 5}
    kw = {k: v for k, v in RUN.items() if k not in ("stepsize", "seed")}
    first, second = fastgt.run_batch(
        [{"topology": W, "stepsize": RUN["stepsize"], "seed": RUN["seed"]}, other],
        algorithm=algo, problem=prob, noise=noise, d=d, threads=threads, parallel=parallel,
        **kw)
    _check(key, fingerprint(first), golden)
    alone = fastgt.run(algorithm=algo, problem=prob, noise=noise, d=d, **kw, **other)
    assert fingerprint(second) == fingerprint(alone)


def write() -> None:
    runs = {key: fingerprint(run(key)) for key in keys()}
    GOLDEN.write_text(json.dumps({"cpu": cpu(), "fastgt": fastgt.__version__, "run": RUN,
                                  "runs": runs}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(runs)} runs to {GOLDEN}")


def write_data() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        runs = {key: fingerprint(data_run(key, Path(tmp))) for key in data_keys()}
    GOLDEN_DATA.write_text(json.dumps({"cpu": cpu(), "fastgt": fastgt.__version__,
                                       "run": DATA_RUN, "runs": runs}, indent=1,
                                      sort_keys=True) + "\n")
    print(f"wrote {len(runs)} runs to {GOLDEN_DATA}")


def write_float32() -> None:
    import warnings

    warnings.simplefilter("ignore", fastgt.FastGTWarning)
    runs = {key: fingerprint(run(key, dtype="float32")) for key in FLOAT32_KEYS}
    GOLDEN_FLOAT32.write_text(json.dumps({"cpu": cpu(), "fastgt": fastgt.__version__,
                                          "run": RUN, "runs": runs}, indent=1,
                                         sort_keys=True) + "\n")
    print(f"wrote {len(runs)} runs to {GOLDEN_FLOAT32}")


def write_vector() -> None:
    runs = {key: fingerprint(vector_run(key)) for key in VECTOR_KEYS}
    GOLDEN_VECTOR.write_text(json.dumps({"cpu": cpu(), "fastgt": fastgt.__version__,
                                         "run": RUN, "runs": runs}, indent=1,
                                        sort_keys=True) + "\n")
    print(f"wrote {len(runs)} runs to {GOLDEN_VECTOR}")


WRITERS = {"--write": write, "--write-data": write_data, "--write-float32": write_float32,
           "--write-vector": write_vector}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in WRITERS:
        sys.exit("usage: python tests/kernels/test_golden.py --write | --write-data | "
                 "--write-float32 | --write-vector  (only before a change that must keep "
                 "the numbers)")
    WRITERS[sys.argv[1]]()
