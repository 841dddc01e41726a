"""Fused time loops of GT and D-SGD: ``steps`` iterations per call, in place.

One parallel pass per step over fixed row blocks: mix (CSR + mean term), draw the noise,
evaluate the gradient, update, and accumulate the block's column sums for the next
step's mean term. Nothing is allocated inside the loop; state buffers come in pairs
(``X2[cur]`` is current, ``X2[1 - cur]`` the next) and the new ``cur`` is returned.
"""

from numba import njit, prange

from ..config import NJIT_FLAGS
from .mixing import accumulate, block_range, mix_row, reduce_blocks, zero
from .oracles import add_grad_row, draw_shared, noise_row
from .rng import STREAM_NOISE, step_key, stream_key


@njit(parallel=True, **NJIT_FLAGS)
def gt_chunk(t0, steps, cur, X2, Y2, G, scratch, part, means,
             indptr, indices, weights, beta, gamma,
             seed, kind, scale, xi, uv, dv, hetero, a0, A, B):
    """GT steps t0 -> t0 + steps (see fastgt.algorithms.gt). means = [mean X, mean Y]."""
    n = G.shape[0]
    nb = scratch.shape[0]
    skey = stream_key(seed, STREAM_NOISE)
    use_mean = beta != 0.0
    for s in range(steps):
        X = X2[cur]
        Y = Y2[cur]
        Xn = X2[1 - cur]
        Yn = Y2[1 - cur]
        tkey = step_key(skey, t0 + s + 1)
        draw_shared(kind, tkey, xi, scale)
        mx = means[0]
        my = means[1]
        for b in prange(nb):
            lo, hi = block_range(b, nb, n)
            g = scratch[b]
            if use_mean:
                zero(part[b])
            for i in range(lo, hi):
                xr = Xn[i]
                yr = Yn[i]
                mix_row(yr, i, indptr, indices, weights, beta, my, Y)
                mix_row(xr, i, indptr, indices, weights, beta, mx, X)
                for k in range(xr.shape[0]):
                    xr[k] -= gamma * yr[k]
                noise_row(g, kind, tkey, i, scale, xi, uv, dv)
                add_grad_row(g, xr, i, hetero, a0, A, B)
                gi = G[i]
                for k in range(g.shape[0]):
                    yr[k] += g[k] - gi[k]
                    gi[k] = g[k]
                if use_mean:
                    accumulate(part[b, 0], xr)
                    accumulate(part[b, 1], yr)
        if use_mean:
            reduce_blocks(part, 0, means[0], n)
            reduce_blocks(part, 1, means[1], n)
        cur = 1 - cur
    return cur


@njit(parallel=True, **NJIT_FLAGS)
def dsgd_chunk(t0, steps, cur, Z2, X, scratch, part, means,
               indptr, indices, weights, beta, gamma,
               seed, kind, scale, xi, uv, dv, hetero, a0, A, B):
    """D-SGD steps t0 -> t0 + steps on Z = X - gamma G (see fastgt.algorithms.dsgd).

    X is written on the last step only (it is what the metrics read); means = [mean Z].
    """
    n = X.shape[0]
    nb = scratch.shape[0]
    skey = stream_key(seed, STREAM_NOISE)
    use_mean = beta != 0.0
    for s in range(steps):
        Z = Z2[cur]
        Zn = Z2[1 - cur]
        tkey = step_key(skey, t0 + s + 1)
        draw_shared(kind, tkey, xi, scale)
        write_x = s == steps - 1
        mz = means[0]
        for b in prange(nb):
            lo, hi = block_range(b, nb, n)
            g = scratch[b]
            if use_mean:
                zero(part[b, 0])
            for i in range(lo, hi):
                zr = Zn[i]
                mix_row(zr, i, indptr, indices, weights, beta, mz, Z)
                if write_x:
                    xr = X[i]
                    for k in range(zr.shape[0]):
                        xr[k] = zr[k]
                noise_row(g, kind, tkey, i, scale, xi, uv, dv)
                add_grad_row(g, zr, i, hetero, a0, A, B)
                for k in range(g.shape[0]):
                    zr[k] -= gamma * g[k]
                if use_mean:
                    accumulate(part[b, 0], zr)
        if use_mean:
            reduce_blocks(part, 0, means[0], n)
        cur = 1 - cur
    return cur
