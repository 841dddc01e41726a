"""Counter-based normal generator addressed by (seed, stream, step, node, coordinate).

Every value is a pure function of its address, so results are bit-identical whatever
the thread or process count. Bits come from the SplitMix64 output function applied to
``row_key + (k + 1) * GOLDEN``: for a fixed row key this is exactly the SplitMix64
sequence, started at a pseudo-random point derived from (seed, stream, step, node).

Normals by Box-Muller on pairs of coordinates (2m, 2m+1): coordinate 2m supplies the
radius, 2m+1 the angle. log, sin and cos are evaluated by polynomials (relative error
~1e-16) so that the loop vectorizes; libm calls would not.

    u1 in (0, 1] with 52 random bits   r = sqrt(-2 ln u1)
    angle = q pi/2 + phi, q uniform in {0..3}, phi uniform in [-pi/4, pi/4)
    (z0, z1) = r (cos angle, sin angle)
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..config import INLINE_FLAGS, NJIT_FLAGS

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
ONE_BITS = np.uint64(0x3FF0000000000000)
MANT = np.uint64(0x000FFFFFFFFFFFFF)
LN2 = 0.6931471805599453
SQRT2 = 1.4142135623730951
HALF_PI = 1.5707963267948966

#: streams: independent sub-generators of one seed
STREAM_NOISE = 0
STREAM_X0 = 1


@intrinsic
def _as_f64(typingctx, x):
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


@intrinsic
def _as_u64(typingctx, x):
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@njit(**INLINE_FLAGS)
def mix64(z):
    """SplitMix64 output function (a bijection of uint64)."""
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


@njit(**INLINE_FLAGS)
def stream_key(seed, stream):
    """Key of one stream of a seed (seed, stream: nonnegative int64)."""
    return mix64(mix64(np.uint64(seed) + GOLDEN) ^ (np.uint64(stream) * M1))


@njit(**INLINE_FLAGS)
def step_key(skey, step):
    return mix64(skey + np.uint64(step + 1) * GOLDEN)


@njit(**INLINE_FLAGS)
def row_key(tkey, node):
    """Key of one node's row at one step; node = -1 addresses the step's shared draw."""
    return mix64(tkey ^ (np.uint64(node + 1) * M2))


#: Horner coefficients, highest degree first, in powers of x^2 (or s^2 for the log):
#: ln f = 2 s sum_j s^(2j) / (2j + 1) for j <= 10 (|s| < 0.1716: truncation < 1e-17);
#: sin x = x sum_j (-1)^j x^(2j) / (2j + 1)! for j <= 8, cos x = sum_j (-1)^j x^(2j) / (2j)!
#: for j <= 8 (|x| <= pi/4: truncation < 1e-17)
LOG_COEFS = tuple(1.0 / (2 * j + 1) for j in range(10, -1, -1))
SIN_COEFS = tuple((-1) ** j / math.factorial(2 * j + 1) for j in range(8, -1, -1))
COS_COEFS = tuple((-1) ** j / math.factorial(2 * j) for j in range(8, -1, -1))


@njit(**INLINE_FLAGS)
def _horner(z, coefs):
    p = coefs[0]
    for c in coefs[1:]:
        p = p * z + c
    return p


@njit(**INLINE_FLAGS)
def _log_unit(u):
    """ln(u) for u in (0, 1]: u = 2^e f, f in [sqrt(1/2), sqrt(2)), atanh series in s."""
    bits = _as_u64(u)
    e = np.float64(np.int64(bits >> np.uint64(52)) - 1023)
    f = _as_f64((bits & MANT) | ONE_BITS)
    big = f > SQRT2
    f = f * 0.5 if big else f
    e = e + 1.0 if big else e
    s = (f - 1.0) / (f + 1.0)
    return e * LN2 + 2.0 * s * _horner(s * s, LOG_COEFS)


@njit(**INLINE_FLAGS)
def _sincos_quarter(x):
    """(sin x, cos x) for |x| <= pi/4 by Taylor polynomials."""
    x2 = x * x
    return x * _horner(x2, SIN_COEFS), _horner(x2, COS_COEFS)


@njit(**INLINE_FLAGS)
def normal_pair(rkey, m):
    """Standard normals for coordinates 2m and 2m+1 of the row with key rkey."""
    h1 = mix64(rkey + np.uint64(2 * m + 1) * GOLDEN)
    h2 = mix64(rkey + np.uint64(2 * m + 2) * GOLDEN)
    u1 = 2.0 - _as_f64(ONE_BITS | (h1 >> np.uint64(12)))  # (0, 1]
    r = np.sqrt(-2.0 * _log_unit(u1))
    q = h2 >> np.uint64(62)
    frac = _as_f64(ONE_BITS | ((h2 << np.uint64(2)) >> np.uint64(12))) - 1.5  # [-0.5, 0.5)
    sn, cs = _sincos_quarter(frac * HALF_PI)
    odd = (q & np.uint64(1)) != np.uint64(0)
    a = sn if odd else cs
    b = cs if odd else sn
    a = -a if (q == np.uint64(1) or q == np.uint64(2)) else a
    b = -b if q >= np.uint64(2) else b
    return r * a, r * b


@njit(**NJIT_FLAGS)
def fill_normals(rkey, out, r, scale):
    """out[r, k] = scale * z_k for the row with key rkey (an odd row length drops the last
    pair's z1)."""
    d = out.shape[1]
    for m in range(d // 2):
        z0, z1 = normal_pair(rkey, m)
        out[r, 2 * m] = scale * z0
        out[r, 2 * m + 1] = scale * z1
    if d % 2 == 1:
        z0, _ = normal_pair(rkey, d // 2)
        out[r, d - 1] = scale * z0
