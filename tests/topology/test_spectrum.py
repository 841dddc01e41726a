"""Spectra of every topology family against numpy.linalg.eigvalsh of the dense W, on every
computation path (closed form, dense eigh, Lanczos), plus exact closed-form formulas and the
precision of p for huge rings."""

import math
import re

import numpy as np
import pytest

import fastgt
from fastgt import FastGTError
from fastgt.topology import spectrum as spectrum_mod

TOL = 1e-10


def _random_mixing(n: int, seed: int) -> np.ndarray:
    """(I + C + C^T + P + P^T) / 5 with C the cyclic shift (connected) and P a random
    permutation: symmetric, nonnegative, doubly stochastic, generic spectrum."""
    eye = np.eye(n)
    cyc = np.roll(eye, 1, axis=1)
    perm = eye[np.random.default_rng(seed).permutation(n)]
    return (eye + cyc + cyc.T + perm + perm.T) / 5


CASES = [
    ("ring", {"n": 2}),
    ("ring", {"n": 3}),
    ("ring", {"n": 8}),
    ("ring", {"n": 9}),
    ("ring", {"n": 10, "self_weight": 0.05}),
    ("ring", {"n": 11, "self_weight": 0.0}),
    ("ring", {"n": 12, "self_weight": 0.9}),
    ("ring", {"n": 8, "self_weight": 0.0, "lazy": True}),
    ("interp_ring", {"n": 10, "alpha": 0.3}),
    ("interp_ring", {"n": 9, "alpha": 0.7, "self_weight": 0.1}),
    ("interp_ring", {"n": 6, "alpha": 0.0}),
    ("interp_ring", {"n": 7, "alpha": 1.0}),
    ("interp_ring", {"n": 10, "alpha": 0.5, "lazy": True}),
    ("torus", {"n": 16}),
    ("torus", {"n": 25}),
    ("torus", {"rows": 3, "cols": 5}),
    ("torus", {"rows": 2, "cols": 6}),
    ("torus", {"rows": 1, "cols": 2}),
    ("torus", {"rows": 2, "cols": 2}),
    ("torus", {"rows": 1, "cols": 7}),
    ("torus", {"rows": 4, "cols": 4, "lazy": True}),
    ("complete", {"n": 2}),
    ("complete", {"n": 7}),
    ("complete", {"n": 5, "lazy": True}),
    ("star", {"n": 9}),
    ("star", {"n": 6, "weights": "max_degree"}),
    ("star", {"n": 7, "lazy": True}),
    ("hypercube", {"n": 2}),
    ("hypercube", {"n": 16}),
    ("hypercube", {"n": 32, "weights": "max_degree"}),
    ("hypercube", {"n": 8, "lazy": True}),
    ("exponential", {"n": 2}),
    ("exponential", {"n": 3}),
    ("exponential", {"n": 12}),
    ("exponential", {"n": 17}),
    ("exponential", {"n": 16, "lazy": True}),
    ("erdos_renyi", {"n": 40, "prob": 0.3, "seed": 1}),
    ("erdos_renyi", {"n": 30, "prob": 0.4, "weights": "max_degree"}),
    ("geometric", {"n": 50, "radius": 0.4, "seed": 3}),
    ("from_edges", {"edges": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (3, 4)]}),
    ("from_edges", {"edges": [(0, 1), (1, 2), (2, 3), (3, 0)], "lazy": True}),
    ("from_matrix", {"W": _random_mixing(23, 0)}),
    ("from_matrix", {"W": _random_mixing(12, 1), "lazy": True}),
]


def _reference(W: np.ndarray) -> dict:
    """lambda2, lambda_n, delta, p, c straight from the paper's definitions and eigvalsh."""
    lam = np.linalg.eigvalsh(W)
    l2, ln = lam[-2], lam[0]
    m = max(abs(l2), abs(ln))
    return {"lambda2": l2, "lambda_n": ln, "delta": 1 - m, "p": 1 - m**2, "c": 1 - min(ln, 0) ** 2}


def _methods(W) -> list[str]:
    return (["closed"] if W.structure is not None else []) + ["dense", "sparse", "auto"]


def _check_vectors(W, sp):
    for vec, lam in ((sp.u, sp.lambda2), (sp.v, sp.lambda_n)):
        assert vec.shape == (W.n,)
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-12)
        assert np.linalg.norm(W.to_dense() @ vec - lam * vec) < 1e-9
        assert abs(vec.sum()) < 1e-9  # orthogonal to the all-ones eigenvector


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_spectrum_matches_eigvalsh(name, kw):
    W = fastgt.topology(name, **kw)
    ref = _reference(W.to_dense())
    for method in _methods(W):
        sp = W.spectrum(vectors=True, method=method)
        got = {k: getattr(sp, k) for k in ref}
        assert got == pytest.approx(ref, abs=TOL), method
        _check_vectors(W, sp)
        # vectors=False gives the same numbers (eigh vs eigvalsh may differ in the last bit)
        plain = W.spectrum(method=method)
        assert plain.method == sp.method and plain.u is None and plain.v is None
        assert {k: getattr(plain, k) for k in ref} == pytest.approx(got, abs=1e-14)


def test_auto_picks_closed_dense_sparse(monkeypatch):
    assert fastgt.topology("ring", n=5000).spectrum().method == "closed"
    assert fastgt.topology("hypercube", n=8).spectrum().method == "closed"
    assert fastgt.topology("star", n=30).spectrum().method == "dense"
    monkeypatch.setattr(spectrum_mod, "DENSE_MAX", 20)
    W = fastgt.topology("star", n=30)
    sp = W.spectrum()
    assert sp.method == "sparse"
    assert sp.lambda2 == pytest.approx(_reference(W.to_dense())["lambda2"], abs=TOL)


@pytest.mark.parametrize("name,kw", [
    ("erdos_renyi", {"n": 1200, "prob": 0.02, "seed": 2}),
    ("exponential", {"n": 1000}),
    ("hypercube", {"n": 1024}),
    ("geometric", {"n": 400, "radius": 0.2, "seed": 1}),
    ("from_matrix", {"W": _random_mixing(800, 5)}),
])
def test_sparse_lanczos_medium(name, kw):
    """Lanczos at n ~ 400-1200 on graphs whose extreme eigenvalues are well separated."""
    W = fastgt.topology(name, **kw)
    ref = _reference(W.to_dense())
    sp = W.spectrum(vectors=True, method="sparse")
    assert {k: getattr(sp, k) for k in ref} == pytest.approx(ref, abs=TOL)
    _check_vectors(W, sp)
    if W.structure is not None:
        closed = W.spectrum(method="closed")
        assert closed.lambda2 == pytest.approx(ref["lambda2"], abs=TOL)
        assert closed.lambda_n == pytest.approx(ref["lambda_n"], abs=TOL)


def test_auto_beyond_dense_max_is_lanczos():
    """n = 4096 > DENSE_MAX, a hypercube given as a plain edge list (no closed-form tag): auto
    runs Lanczos. Metropolis weights 1/13: eigenvalues 1 - 2|S|/13, S subset of 12 dims."""
    n, dim = 4096, 12
    i = np.arange(n)
    edges = np.concatenate([np.stack([i, i ^ (1 << k)], axis=1) for k in range(dim)])
    W = fastgt.topology("from_edges", edges=edges)
    sp = W.spectrum(vectors=True)
    assert sp.method == "sparse"
    assert sp.lambda2 == pytest.approx(1 - 2 / 13, abs=TOL)
    assert sp.lambda_n == pytest.approx(1 - 24 / 13, abs=TOL)
    for vec, lam in ((sp.u, sp.lambda2), (sp.v, sp.lambda_n)):
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-12)
        assert np.linalg.norm(W.matvec(vec) - lam * vec) < 1e-9
        assert abs(vec.sum()) < 1e-9


@pytest.mark.parametrize("n,w", [  # w = 0 with even n is bipartite, rejected (test_topology)
    (n, w) for n in (2, 3, 4, 7, 8, 99, 100, 1001, 4096) for w in (0.0, 0.1, 1 / 3, 0.5, 0.95)
    if w > 0 or n % 2])
def test_ring_closed_form(n, w):
    sp = fastgt.topology("ring", n=n, self_weight=w).spectrum()
    # eigenvalues w + (1 - w) cos(2 pi k / n), k = 0..n-1
    assert sp.lambda2 == pytest.approx(w + (1 - w) * math.cos(2 * math.pi / n), abs=1e-14)
    ln = 2 * w - 1 if n % 2 == 0 else w - (1 - w) * math.cos(math.pi / n)
    assert sp.lambda_n == pytest.approx(ln, abs=1e-14)


@pytest.mark.parametrize("n", [4, 6, 10, 100, 1000, 10**5])
def test_ring_c_is_8_9_for_even_n(n):
    sp = fastgt.topology("ring", n=n).spectrum()
    assert sp.lambda_n == pytest.approx(-1 / 3, abs=1e-15)
    assert sp.c == pytest.approx(8 / 9, abs=1e-15)


@pytest.mark.parametrize("n", [5, 9, 101])
def test_ring_c_above_8_9_for_odd_n(n):
    sp = fastgt.topology("ring", n=n).spectrum()
    assert sp.c == pytest.approx(1 - (1 / 3 - 2 / 3 * math.cos(math.pi / n)) ** 2, abs=1e-14)
    assert sp.c > 8 / 9


@pytest.mark.parametrize("dim", [1, 3, 6])
def test_hypercube_closed_form(dim):
    """Metropolis weights 1/(dim+1): eigenvalues 1 - 2|S|/(dim+1), S subset of the dims."""
    sp = fastgt.topology("hypercube", n=2**dim).spectrum()
    assert sp.lambda2 == pytest.approx(1 - 2 / (dim + 1), abs=1e-14)
    assert sp.lambda_n == pytest.approx(1 - 2 * dim / (dim + 1), abs=1e-14)


@pytest.mark.parametrize("n", [2, 10, 1000, 10**6])
def test_complete(n):
    sp = fastgt.topology("complete", n=n).spectrum()
    assert (sp.lambda2, sp.lambda_n, sp.delta, sp.p, sp.c) == (0.0, 0.0, 1.0, 1.0, 1.0)


def test_p_delta_c_relations():
    for name, kw in CASES:
        sp = fastgt.topology(name, **kw).spectrum()
        assert sp.p == pytest.approx(2 * sp.delta - sp.delta**2, abs=1e-14)
        assert sp.c >= sp.p - 1e-15
        assert 0 < sp.p <= 1 and 0 < sp.c <= 1


def test_huge_ring_precision_and_speed():
    """n = 10^6: 1 - lambda2 ~ 1.3e-11, so 1 - (w + (1-w) cos(2 pi/n)) would lose ~5 digits.
    Exactly 1 - lambda2 = (1 - w)(1 - cos(2 pi / n)) = 2 (1 - w) sin^2(pi / n)."""
    n, w = 10**6, 1 / 3
    sp = fastgt.topology("ring", n=n, self_weight=w).spectrum(vectors=True)
    gap2 = 2 * (1 - w) * math.sin(math.pi / n) ** 2
    assert sp.gap2 == pytest.approx(gap2, rel=1e-13)
    assert sp.p == pytest.approx(gap2 * (2 - gap2), rel=1e-13)
    assert sp.delta == pytest.approx(gap2, rel=1e-13)
    assert sp.c == pytest.approx(8 / 9, abs=1e-15)
    # u is the mode cos(2 pi k i / n) (k = 1 or n - 1), up to sign
    i = np.arange(n)
    ref = np.cos(2 * np.pi * i / n) * math.sqrt(2 / n)
    assert abs(abs(sp.u @ ref) - 1) < 1e-12
    assert np.allclose(np.abs(sp.v), 1 / math.sqrt(n))  # (-1)^i / sqrt(n)


def test_huge_odd_ring_zero_self_weight_precision():
    """w = 0, odd n: 1 + lambda_n = 1 - cos(pi / n) = 2 sin^2(pi / (2n)) ~ 5e-12."""
    n = 10**6 + 1
    sp = fastgt.topology("ring", n=n, self_weight=0.0).spectrum()
    assert sp.gapn == pytest.approx(2 * math.sin(math.pi / (2 * n)) ** 2, rel=1e-13)
    assert sp.gap2 == pytest.approx(2 * math.sin(math.pi / n) ** 2, rel=1e-13)
    assert sp.c == pytest.approx(sp.gapn * (2 - sp.gapn), rel=1e-15)


def test_huge_torus():
    """1000 x 1000 torus, weights 1/5: 1 - lambda2 = (4/5) sin^2(pi/1000), lambda_n = -3/5."""
    sp = fastgt.topology("torus", n=10**6).spectrum(vectors=True)
    gap2 = 0.8 * math.sin(math.pi / 1000) ** 2
    assert sp.gap2 == pytest.approx(gap2, rel=1e-13)
    assert sp.lambda_n == pytest.approx(-0.6, abs=1e-15)
    assert sp.c == pytest.approx(16 / 25, abs=1e-15)
    assert np.linalg.norm(sp.u) == pytest.approx(1.0)
    assert np.allclose(np.abs(sp.v), 1e-3)  # checkerboard (-1)^(r + c) / 1000


def test_huge_nonsquare_torus_and_interp_ring():
    """Torus 500 x 2000: the long side sets lambda2; interp_ring scales the ring's modes."""
    sp = fastgt.topology("torus", rows=500, cols=2000).spectrum()
    assert sp.gap2 == pytest.approx(0.8 * math.sin(math.pi / 2000) ** 2, rel=1e-13)
    n, a = 10**6, 0.999
    sp = fastgt.topology("interp_ring", n=n, alpha=a).spectrum()
    assert sp.gap2 == pytest.approx(1 - a + a * (4 / 3) * math.sin(math.pi / n) ** 2, rel=1e-13)
    assert sp.lambda_n == pytest.approx(-a / 3, abs=1e-15)


def test_method_errors():
    star = fastgt.topology("star", n=5)
    with pytest.raises(FastGTError, match="method='closed'"):
        star.spectrum(method="closed")
    with pytest.raises(FastGTError, match="method='eig'"):
        star.spectrum(method="eig")
    big = fastgt.topology("ring", n=spectrum_mod.DENSE_FORCE_MAX + 1)
    with pytest.raises(FastGTError, match="method='dense'"):
        big.spectrum(method="dense")


def test_repr_shows_the_values_a_reader_looks_for():
    """lambda2, lambda_n, p and c (p_eff too where it differs from p), not the stored gaps;
    computed here from dense eigenvalues, not from the Spectrum."""
    W = fastgt.topology("ring", n=8)
    lam = np.sort(np.linalg.eigvalsh(W.to_dense()))
    text = repr(W.spectrum(vectors=True))
    got = dict(re.findall(r"(\w+)=([-\d.e]+)", text))
    assert list(got) == ["lambda2", "lambda_n", "p", "c"] and text.endswith(", u, v)")
    assert np.allclose([float(got["lambda2"]), float(got["lambda_n"])], [lam[-2], lam[0]])
    assert np.isclose(float(got["p"]), 1 - max(abs(lam[-2]), abs(lam[0])) ** 2)
    matching = repr(fastgt.topology("random_matching", n=12).spectrum())
    assert matching.startswith("PeriodSpectrum(lambda2=1, lambda_n=0, p=0, c=1, p_eff=0.54")


def test_a_sweep_keeps_lanczos_and_dense_eigenvalues_once_per_graph(tmp_path, monkeypatch):
    """Within a sweep's directory (fastgt.derived.cache_in) a graph without a closed form
    has its Lanczos spectrum and its dense eigenvalues computed once and kept (a user trial:
    every cell of a sweep spent minutes on the spectrum of one geometric graph); another
    object of the same matrix reads them back bit for bit, a damaged file is computed
    again, and outside a sweep nothing is written. The dense eigenvalues serve the
    spectrum and the theory alike (one eigvalsh, not two)."""
    from fastgt import derived, theory

    calls = {"eigvalsh": 0, "sparse": 0}
    import scipy.linalg as sla
    eigvalsh, sparse = sla.eigvalsh, spectrum_mod._sparse

    def counted_eigvalsh(*a, **k):
        calls["eigvalsh"] += 1
        return eigvalsh(*a, **k)

    def counted_sparse(*a, **k):
        calls["sparse"] += 1
        return sparse(*a, **k)

    monkeypatch.setattr(sla, "eigvalsh", counted_eigvalsh)
    monkeypatch.setattr(spectrum_mod, "_sparse", counted_sparse)
    kw = {"n": 60, "radius": 0.3, "seed": 4}
    first = fastgt.topology("geometric", **kw)
    sp0, lam0 = first.spectrum(), theory.eigenvalues(first)
    assert calls == {"eigvalsh": 1, "sparse": 0} and not list(tmp_path.iterdir())
    with derived.cache_in(str(tmp_path)):
        for k in range(2):  # computed and kept, then read: no new eigvalsh
            W = fastgt.topology("geometric", **kw)
            sp, lam = W.spectrum(), theory.eigenvalues(W)
            assert (sp.gap2, sp.gapn, sp.method) == (sp0.gap2, sp0.gapn, "dense")
            assert np.array_equal(lam, lam0) and calls["eigvalsh"] == 2
        kept = list((tmp_path / "eigenvalues").glob("*.npy"))
        assert [f.stem for f in kept] == [first.fingerprint()]
        for k, damaged in enumerate((b"not an array", b"")):  # "" raised EOFError (a review)
            kept[0].write_bytes(damaged)
            assert fastgt.topology("geometric", **kw).spectrum().gap2 == sp0.gap2
            assert calls["eigvalsh"] == 3 + k
        er = {"n": 300, "prob": 0.05, "seed": 1}
        sparse_sp = [fastgt.topology("erdos_renyi", **er).spectrum(method="sparse")
                     for _ in range(2)]
        assert calls["sparse"] == 1
        assert (sparse_sp[0].gap2, sparse_sp[0].gapn) == (sparse_sp[1].gap2, sparse_sp[1].gapn)
        assert sparse_sp[1].method == "sparse"
    other = fastgt.topology("geometric", n=60, radius=0.3, seed=5)
    assert other.fingerprint() != first.fingerprint()


def test_kept_values_never_fail_a_run_and_stay_with_their_thread(tmp_path):
    """A directory that cannot be written keeps nothing and fails nothing; the directory
    in use is the calling thread's (a Dask worker may run two sweeps' tasks at once)."""
    import threading

    from fastgt import derived

    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the directory would go
    with derived.cache_in(str(blocked / "sweep")):
        sp = fastgt.topology("geometric", n=50, radius=0.35, seed=2).spectrum()
    assert sp.method == "dense" and blocked.read_text() == ""
    seen = []
    with derived.cache_in(str(tmp_path)):
        thread = threading.Thread(target=lambda: seen.append(derived.active()))
        thread.start()
        thread.join()
        assert derived.active()
    assert seen == [False]
