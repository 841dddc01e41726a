"""fastgt's counter-based normal generator and noise draws: distribution, independence,
reproducibility, and bit-identical runs whatever the thread count.

Tolerances: for N i.i.d. N(0, 1) values the sample mean, variance, skewness and excess
kurtosis have standard errors sqrt(1/N), sqrt(2/N), sqrt(6/N), sqrt(24/N); the sample
correlation of N independent pairs (of values or of their squares) has SE 1/sqrt(N). We
accept 5 SE (two-sided false alarm 6e-7 per check), and a KS p-value above 1e-4.
"""

import numpy as np
import pytest
import reference as ref
from numba import njit
from scipy import stats

import fastgt
from fastgt.kernels.oracles import normal_matrix
from fastgt.kernels.rng import (
    POLY_ERROR,
    POLY_ERROR32,
    STREAM_NOISE,
    STREAM_X0,
    fill_normals,
    fill_padded,
    normal_pair,
    pair32,
    row_key,
    step_key,
    stream_key,
    uniform_index,
)
from fastgt.runtime import max_threads

pytestmark = pytest.mark.usefixtures("one_numba_thread")

Z = 5.0


def _normals(seed, shape, stream=STREAM_NOISE, dtype=np.float64):
    out = np.empty(shape, dtype=dtype)
    normal_matrix(seed, stream, out, 1.0, out.shape[1])
    return out


def _assert_standard_normal(x):
    x = np.ravel(x)
    N = x.size
    assert abs(x.mean()) < Z / np.sqrt(N)
    assert abs(x.var() - 1) < Z * np.sqrt(2 / N)
    assert abs(stats.skew(x)) < Z * np.sqrt(6 / N)
    assert abs(stats.kurtosis(x)) < Z * np.sqrt(24 / N)
    assert stats.kstest(x, "norm").pvalue > 1e-4


def _assert_uncorrelated(a, b):
    """Pearson correlation of the pairs and of their squares (dependence beyond linear)."""
    a, b = np.ravel(a), np.ravel(b)
    bound = Z / np.sqrt(a.size)
    assert abs(np.corrcoef(a, b)[0, 1]) < bound
    assert abs(np.corrcoef(a**2, b**2)[0, 1]) < bound


@pytest.mark.parametrize("seed", [0, 12345, 2**63 - 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_standard_normal_distribution(seed, dtype):
    _assert_standard_normal(_normals(seed, (2000, 101), dtype=dtype).astype(np.float64))


@pytest.mark.parametrize("d", [1, 7])
def test_odd_d_last_coordinate(d):
    """With odd d the last coordinates come from a partial group of pairs."""
    x = _normals(4, (40000, d))
    _assert_standard_normal(x[:, -1])
    if d > 1:
        _assert_uncorrelated(x[:, -1], x[:, -2])


def test_no_correlation_between_coordinates_and_nodes():
    x = _normals(5, (400, 120))
    g = x[:, :112].reshape(400, 7, 16)  # whole groups: coordinate 16 g + j and 16 g + 8 + j
    _assert_uncorrelated(g[:, :, :8], g[:, :, 8:])  # the two outputs of one Box-Muller pair
    _assert_uncorrelated(g[:, :, :7], g[:, :, 1:8])  # neighbouring pairs
    _assert_uncorrelated(x[:, :-1], x[:, 1:])  # neighbouring coordinates
    _assert_uncorrelated(x[:-1], x[1:])  # neighbouring nodes


@pytest.mark.parametrize("width", [37, 160])
def test_box_muller_transform_matches_numpy(width):
    """fill_normals is Box-Muller of the documented bit layout (z0 of pair 8 g + j at
    coordinate 16 g + j, z1 at 16 g + 8 + j), its polynomial log / sin / cos within 2e-13
    of numpy's (their documented bound, POLY_ERROR = 5.6e-14, plus rounding), for whole
    and partial groups. Keys near 0 and 2^64 - 1 too."""
    worst = 0.0
    for rkey in [0, 1, 2**64 - 1, *range(12345, 12345 + 40 * 7919, 7919)]:
        out = np.empty((1, width))
        fill_normals(np.uint64(rkey), out, 0, 1.0, width)
        z0, z1, _ = ref.box_muller(ref.pair_hashes(rkey, 8 * -(-width // 16)))
        want = ref.grouped(z0, z1, width)
        worst = max(worst, float(np.max(np.abs(out[0] - want) / np.maximum(1.0, np.abs(want)))))
    assert POLY_ERROR < 6e-14
    assert worst < 2e-13



@njit(fastmath={"contract"}, error_model="numpy")
def _pairs_one_by_one(rkey, pairs, scale):
    out = np.empty((pairs, 2))
    for m in range(pairs):
        out[m, 0], out[m, 1] = normal_pair(rkey, m, scale)
    return out


@pytest.mark.parametrize("order", ["C", "F", "every other row"])
def test_group_vectors_have_the_scalar_pairs_bits(order):
    """A whole group is drawn as vectors of 8 pairs (rng.draw_group), a partial group's
    pairs one at a time (normal_pair): both are the transform's one IR definition, and each
    lane must have the scalar pair's bits, whatever the row's memory layout (a C row takes
    two vector stores, another layout one store per lane)."""
    width, scale = 48, 0.75
    for rkey in (np.uint64(0), np.uint64(2**64 - 1), np.uint64(987654321)):
        pairs = _pairs_one_by_one(rkey, 3 * 8, scale)
        want = ref.grouped(pairs[:, 0], pairs[:, 1], width)
        base = np.zeros((6, width), order="F" if order == "F" else "C")
        out = base[::2] if order == "every other row" else base
        fill_padded(rkey, out, 1, scale, width)
        assert np.array_equal(out[1], want)
        assert not np.any(np.delete(base, 2 if order == "every other row" else 1, axis=0))

#: the float32 transform's bound for scale = 1, in units u = 2^-24 (float32's unit
#: roundoff) of the pair's radius r: an estimate, not a proof. The radius's roundings
#: (f - 1, f - 1 + 2, their quotient, the log's products and sum, its coefficients:
#: about 6 u of ln u1, up to 2x that where e ln 2 and ln f partly cancel, |ln u1| >= 0.35
#: when e != 0) halved by the square root, plus its own; the phase's (pi/2 rounded, x, the
#: polynomials, error under 2^-25, their coefficients and products), about 3 u; the final
#: product, 1. Measured: at most 4.7 u over 2·10^7 random hashes, 3.9 around the log's
#: reduction boundaries
ULPS32 = 8

#: fastgt's compile flags that decide the float32 transform's bits (FMA contraction)
CONTRACT = {"fastmath": {"contract"}, "error_model": "numpy"}


@njit(**CONTRACT)
def _pairs32(h, scale):
    out = np.empty((h.size, 2), dtype=np.float32)
    for i in range(h.size):
        out[i, 0], out[i, 1] = pair32(h[i], np.float32(scale))
    return out


def test_float32_transform_is_box_muller_to_8_ulps_of_the_radius():
    """A float32 array's normals (pair32: float32 arithmetic on the same hash) are Box-
    Muller of the documented layout to ULPS32 u of the pair's radius: at the radius
    uniform's ends (u1 = 1: r = 0; u1 = 2^-40: r = 7.45, the float64 stream's tail), near
    u1 = 1 (r down to 1e-6, which a radius uniform rounded to float32 first loses: its r
    would be off by up to 2.4e-4), at the quadrants' edges and on random hashes."""
    rng = np.random.default_rng(3)
    top = np.array([0, 1, 2, 3, 1000, 2**20, 2**30, 2**39, 2**40 - 2, 2**40 - 1], dtype=np.uint64)
    low = np.array([0, 1, 2**21, 2**22 - 1, 2**22, 3 * 2**22 - 1, 2**24 - 1], dtype=np.uint64)
    h = np.concatenate([((top[:, None] << np.uint64(24)) | low[None, :]).ravel(),
                        rng.integers(0, 2**64, 200_000, dtype=np.uint64, endpoint=False)])
    z0, z1, r = ref.box_muller(h)
    got = _pairs32(h, 1.0).astype(np.float64)
    bound = ULPS32 * 2.0**-24 * r
    assert np.all(np.abs(got[:, 0] - z0) <= bound)
    assert np.all(np.abs(got[:, 1] - z1) <= bound)
    edges = got[:top.size * low.size].reshape(top.size, low.size, 2)
    assert np.all(edges[0] == 0.0)  # u1 = 1: r = 0, both values exactly zero
    tail = np.hypot(edges[-1, :, 0], edges[-1, :, 1])  # u1 = 2^-40
    np.testing.assert_allclose(tail, np.sqrt(80 * np.log(2)), rtol=ULPS32 * 2.0**-24)
    assert POLY_ERROR32 < 2.0**-25


@pytest.mark.parametrize("width", [37, 160])
def test_float32_rows_hold_the_float32_transform(width):
    """fill_normals and fill_padded into a float32 row draw by pair32 (whole groups and a
    partial one pair by pair), its bits for the row's hashes, not the float64 values
    rounded (which differ from them in some coordinates); both within ULPS32 u of the
    exact values' radius. scale = 0.75 (exact in float32)."""
    for rkey in [0, 2**64 - 1, *range(777, 777 + 30 * 7919, 7919)]:
        h = ref.pair_hashes(rkey, 8 * -(-width // 16))
        z0, z1, r = ref.box_muller(h)
        mine = _pairs32(h, 0.75)
        want = ref.grouped(mine[:, 0], mine[:, 1], width)
        exact, radius = 0.75 * ref.grouped(z0, z1, width), 0.75 * ref.grouped(r, r, width)
        for fill in (fill_normals, fill_padded):
            out = np.zeros((1, -(-width // 16) * 16), dtype=np.float32)
            fill(np.uint64(rkey), out, 0, 0.75, width)
            np.testing.assert_array_equal(out[0, :width], want)
            assert np.all(np.abs(out[0, :width] - exact) <= ULPS32 * 2.0**-24 * radius)
    rounded = np.zeros((1, 160))
    fill_normals(np.uint64(777), rounded, 0, 0.75, 160)
    out = np.zeros((1, 160), dtype=np.float32)
    fill_normals(np.uint64(777), out, 0, 0.75, 160)
    assert np.any(out != rounded.astype(np.float32))


@pytest.mark.parametrize("noise", ["gaussian", "structured"])
def test_the_twins_noise_and_initial_point_are_fastgts(noise):
    """The twins' noise and default x0 (tests/reference.py, written from the documented
    keys and transform) against fastgt's own draws (problems.noise_matrix, the kernels'
    stochastic gradients of the zero problem; the initial point of the run seed): within
    the polynomials' error."""
    from fastgt.algorithms.base import initial_point
    from fastgt.problems import make_noise, noise_matrix

    W = fastgt.topology("torus", rows=3, cols=4)
    d, seed = 37, 11
    twin = ref.fastgt_noise(noise, 2.0, d, W, seed)
    for t in (0, 1, 9):
        mine = noise_matrix(make_noise(noise, 2.0, d, W), seed, t, W.n, d)
        np.testing.assert_allclose(mine, twin(t), rtol=2e-13, atol=2e-13)
    x0 = np.zeros((W.n, d))
    initial_point(x0, None, seed, d)
    np.testing.assert_allclose(x0, ref.default_x0(seed, W.n, d), rtol=2e-13, atol=2e-13)


def test_no_correlation_between_steps_seeds_and_streams():
    W = fastgt.topology("ring", n=300)
    d = 101
    noise = ref.fastgt_noise("gaussian", d, d, W, seed=6)  # sigma2 = d: unit variance
    e0, e1 = noise(0), noise(1)
    _assert_standard_normal(e1)
    _assert_uncorrelated(e0, e1)  # consecutive steps
    _assert_uncorrelated(e1, ref.fastgt_noise("gaussian", d, d, W, seed=7)(1))  # seeds
    # (seed 6, step 1) vs (seed 7, step 0): no shifted-counter collision
    _assert_uncorrelated(e1, ref.fastgt_noise("gaussian", d, d, W, seed=7)(0))
    _assert_uncorrelated(e0, _normals(6, (300, d), STREAM_X0))  # default x0 vs step-0 noise


def test_same_seed_same_bits_different_seed_different_values():
    a, b = _normals(9, (50, 33)), _normals(9, (50, 33))
    np.testing.assert_array_equal(a, b)
    c = _normals(10, (50, 33))
    assert np.count_nonzero(a == c) == 0


@pytest.mark.parametrize("noise", ["gaussian", "structured"])
def test_noise_scale(noise):
    """(1/n) sum_i ||e_i||^2 has mean sigma2 per step in both models. Gaussian: n d i.i.d.
    N(0, sigma2/d) squares per step, variance 2 sigma2^2 / (n d). Structured: sum_k xi_k^2 with
    xi ~ N(0, sigma2/d I_d) (||u|| = ||v|| = sqrt(n)), variance 2 sigma2^2 / d. Averaged over
    T independent steps."""
    W = fastgt.topology("torus", rows=4, cols=6)
    n, d, sigma2, T = W.n, 9, 3.0, 1500
    draw = ref.fastgt_noise(noise, sigma2, d, W, seed=2)
    per_step = np.array([np.sum(draw(t) ** 2) / n for t in range(T)])
    var = 2 * sigma2**2 / (n * d if noise == "gaussian" else d)
    assert abs(per_step.mean() - sigma2) < Z * np.sqrt(var / T)


@pytest.mark.skipif(max_threads() < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("noise", ["gaussian", "structured"])
@pytest.mark.parametrize("algorithm", ["gt", "dsgd"])
@pytest.mark.parametrize("name,params", [("interp_ring", {"n": 64, "alpha": 0.7}),
                                         ("ring", {"n": 64})])
def test_bit_identical_across_thread_counts(name, params, algorithm, noise):
    """n = 64 gives 8 row blocks, so 2 threads really split the work."""
    W = fastgt.topology(name, **params)
    kw = {"algorithm": algorithm, "topology": W, "problem": "hetero_quadratic", "noise": noise,
          "d": 9, "stepsize": 0.1, "steps": 30, "record_every": 7, "seed": 3}
    one, two = fastgt.run(threads=1, **kw), fastgt.run(threads=2, **kw)
    assert (one.summary["threads"], two.summary["threads"]) == (1, 2)
    assert np.array_equal(one.trace.to_numpy(), two.trace.to_numpy(), equal_nan=True)
    for key in one.state:
        assert np.array_equal(one.state[key], two.state[key])


@njit
def _indices(keys, draws, m):
    out = np.empty((len(keys), draws), dtype=np.int64)
    for r in range(len(keys)):
        for j in range(draws):
            out[r, j] = uniform_index(keys[r], j, m)
    return out


@pytest.mark.parametrize("m", [1, 7, 100])
def test_uniform_index_is_uniform_and_independent_of_the_rows_normals(m):
    """Minibatch indices: every value in [0, m), counts uniform (chi-square p > 1e-4), and
    uncorrelated with the normals drawn from the same row key (|r| < 5 SE)."""
    u64 = np.uint64  # keys as the kernels type them (a Python int above 2^63 is not an int64)
    keys = np.array([row_key(u64(step_key(u64(stream_key(9, STREAM_NOISE)), t)), 3)
                     for t in range(4000)], dtype=np.uint64)
    idx = _indices(keys, 25, m)
    assert idx.min() >= 0 and idx.max() < m
    if m > 1:
        assert stats.chisquare(np.bincount(idx.ravel(), minlength=m)).pvalue > 1e-4
        z = np.empty((len(keys), 32))
        for r, k in enumerate(keys):
            fill_normals(k, z, r, 1.0, 32)
        corr = np.corrcoef(idx[:, 0], z[:, 0])[0, 1]
        assert abs(corr) < Z / np.sqrt(len(keys))


@pytest.mark.parametrize("kind", ["gaussian", "structured"])
def test_initial_gradients_same_bits_for_any_block_count(kind):
    """stochastic_grads (initial and recomputed gradients) runs its rows in blocks, in
    parallel, each block drawing into its own scratch rows (noise, gradient): one block or 7
    give the same bits, on 1 or 2 threads."""
    import numba

    from fastgt.kernels.oracles import GAUSSIAN, STRUCTURED, stochastic_grads
    from fastgt.problems.quadratic import KERNELS, QuadData

    n, d = 50, 9
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    data = QuadData(True, 2.0, rng.uniform(1, 2, size=(n, d)), rng.normal(size=(n, d)))
    uv = rng.normal(size=(1, 2, n))
    grads = KERNELS.compile((stochastic_grads,)).stochastic_grads
    code = GAUSSIAN if kind == "gaussian" else STRUCTURED
    outs = []
    for blocks, threads in ((1, 1), (7, 1), (7, max_threads())):
        numba.set_num_threads(threads)
        G = np.zeros((n, d))
        grads(3, X, G, np.zeros((blocks, d)), np.zeros((blocks, d)), 11, code, 0.5,
              np.zeros((1, d)), uv, 4, d, data)
        outs.append(G)
    numba.set_num_threads(max_threads())
    assert np.all(outs[0] != 0)
    for G in outs[1:]:
        np.testing.assert_array_equal(outs[0], G)


@pytest.mark.parametrize("d", [17, 18, 20, 100])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_steps_draw_the_noise_stochastic_grads_draws(d, dtype):
    """The step kernels draw a node's gaussian noise inlined (fill_padded, the partial last
    group whole), the initial and recomputed gradients through fill_normals (pair by pair):
    GT's stored G(T) equals, to the bit and on any CPU, stochastic_grads at X(T) and step T
    (d = 17, 18: a partial group of 1 and 2 pairs, 20: of 4), in float32 (pair32) too."""
    from fastgt.algorithms import Batch, Cell
    from fastgt.problems import make_noise

    n, steps, seed, gamma, sigma2 = 6, 3, 5, 0.05, 0.7
    W = fastgt.topology("ring", n=n)
    prob = fastgt.problem("hetero_quadratic", zeta=1.0)
    res = fastgt.run(algorithm="gt", topology=W, problem=prob, noise="gaussian",
                     sigma2=sigma2, d=d, stepsize=gamma, steps=steps, seed=seed, dtype=dtype)
    b = Batch([Cell(W, make_noise("gaussian", sigma2, d, W), gamma, seed, None)],
              prob.build(n, d), None, 1, None, dtype)
    X = np.zeros((b.rows, b.dp), dtype=dtype)
    X[:n, :d] = res.state["X"]
    G = np.zeros_like(X)
    b.grads(steps, b.used(X), b.used(G), 0)
    assert np.all(G[:n, :d] != 0)
    np.testing.assert_array_equal(G[:n, :d], res.state["G"])
