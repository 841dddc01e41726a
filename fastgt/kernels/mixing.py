"""Row-wise mixing with W = A + beta (1/n) 1 1^T, A in CSR form, and block reductions.

Rows are processed in ``nb`` fixed blocks (nb depends on n only, never on the thread
count); column sums are accumulated per block and reduced in block order, so every
result is bit-identical for any number of threads.
"""

from numba import njit

from ..config import INLINE_FLAGS, NJIT_FLAGS

BLOCKS_MAX = 256
ROWS_MIN = 8


@njit(**NJIT_FLAGS)
def n_blocks(n):
    return min(BLOCKS_MAX, (n + ROWS_MIN - 1) // ROWS_MIN)


@njit(**INLINE_FLAGS)
def block_range(b, nb, n):
    bs = (n + nb - 1) // nb
    return b * bs, min(n, (b + 1) * bs)


@njit(**NJIT_FLAGS)
def mix_rows(xo, yo, two, i, indptr, indices, weights, beta, mx, my, X, Y):
    """xo = (W X)_i = sum_j a_ij X_j + beta * mean(X), and, when ``two``, yo = (W Y)_i in the
    same pass over the neighbours (GT mixes X and Y; D-SGD only Z)."""
    d = xo.shape[0]
    for k in range(d):
        xo[k] = beta * mx[k]
    if two:
        for k in range(d):
            yo[k] = beta * my[k]
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        w = weights[e]
        if two:
            for k in range(d):
                xo[k] += w * X[j, k]
                yo[k] += w * Y[j, k]
        else:
            for k in range(d):
                xo[k] += w * X[j, k]


@njit(**INLINE_FLAGS)
def zero(a):
    """a[...] = 0 for a C-contiguous array, as a loop (array expressions inside prange
    become nested parfors, which cost compile time and nothing else)."""
    flat = a.reshape(a.size)
    for k in range(flat.shape[0]):
        flat[k] = 0.0


@njit(**NJIT_FLAGS)
def accumulate(acc, row):
    for k in range(row.shape[0]):
        acc[k] += row[k]


@njit(**INLINE_FLAGS)
def reduce_blocks(part, q, out, n):
    """out = (sum over blocks b, in order, of part[b, q]) / n."""
    d = out.shape[0]
    for k in range(d):
        out[k] = 0.0
    for b in range(part.shape[0]):
        for k in range(d):
            out[k] += part[b, q, k]
    for k in range(d):
        out[k] /= n


@njit(**NJIT_FLAGS)
def column_means(Z, part, q, out):
    """out = mean over rows of Z, summed in the same block order as the step kernels."""
    n = Z.shape[0]
    nb = part.shape[0]
    for b in range(nb):
        lo, hi = block_range(b, nb, n)
        zero(part[b, q])
        for i in range(lo, hi):
            accumulate(part[b, q], Z[i])
    reduce_blocks(part, q, out, n)
