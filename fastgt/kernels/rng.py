"""Counter-based normal generator addressed by (seed, stream, step, node, coordinate).

Every value is a pure function of its address, so results are bit-identical whatever
the thread or process count. Bits come from the SplitMix64 output function applied to
``row_key + (m + 1) * GOLDEN`` for the row's Box-Muller pair m: for a fixed row key this
is exactly the SplitMix64 sequence, started at a pseudo-random point derived from
(seed, stream, step, node). One 64-bit hash per pair of normals:

    bits 63..24 (40 bits): u1 in (0, 1]           r = sqrt(-2 ln u1)   (|z| <= 7.45)
    bits 23..22 ( 2 bits): quadrant q in {0..3}
    bits 21..0  (22 bits): phi in (-pi/4, pi/4), a lattice symmetric about 0
    angle = q pi/2 + phi,  (z0, z1) = r (cos angle, sin angle)

log, sin and cos are polynomials (7 terms each, evaluated by Estrin's scheme) so that the
loop vectorizes (libm calls would not): relative error <= 1.3e-12, the order of the
radius uniform's own resolution 2^-40 = 9.1e-13, so more terms would add nothing
(tests/test_rng.py checks the transform against numpy's log, sin and cos).

Coordinates come in groups of 16: coordinate 16 g + j is z0 of pair 8 g + j for j < 8
and z1 of pair 8 g + j - 8 for j >= 8. A vector of pairs is then stored as two
contiguous runs instead of interleaved (measured 2.5 instead of 3.1 ns per normal on an
AVX2 core), and a coordinate's value depends only on its index, never on the row width.
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


#: Taylor coefficients, lowest degree first, in powers of s^2 or x^2, 7 terms each:
#: ln f = 2 s sum_j s^(2j) / (2j + 1) (|s| < 0.1716: truncation < 1.3e-12 relative);
#: sin x = x sum_j (-1)^j x^(2j) / (2j + 1)!, cos x = sum_j (-1)^j x^(2j) / (2j)! (|x| < pi/4:
#: truncation < 2.6e-14 and 3.9e-13)
TERMS = 7
LOG_COEFS = tuple(1.0 / (2 * j + 1) for j in range(TERMS))
SIN_COEFS = tuple((-1) ** j / math.factorial(2 * j + 1) for j in range(TERMS))
COS_COEFS = tuple((-1) ** j / math.factorial(2 * j) for j in range(TERMS))
#: pairs per coordinate group (a group is 2 * PAIRS coordinates)
PAIRS = 8
#: 2^52 + 1023 as a double: the magic number that turns an exponent field into a float
EXP_MAGIC_BITS = np.uint64(0x4330000000000000)
EXP_OFFSET = 4503599627370496.0 + 1023.0
#: the phase lattice's centre: phi / (pi/2) = (k + 1/2) 2^-22 - 1/2 for the 22 phase bits k
PHASE_CENTRE = 1.5 - 2.0**-23


@njit(**INLINE_FLAGS)
def _poly7(z, c):
    """c[0] + c[1] z + ... + c[6] z^6 by Estrin's scheme (a shorter dependency chain than
    Horner's, which the out-of-order window overlaps across vector iterations)."""
    z2 = z * z
    return ((c[0] + c[1] * z) + z2 * (c[2] + c[3] * z)
            + (z2 * z2) * ((c[4] + c[5] * z) + z2 * c[6]))


@njit(**INLINE_FLAGS)
def _log_unit(u):
    """ln(u) for u in (0, 1]: u = 2^e f, f in [sqrt(1/2), sqrt(2)), atanh series in s.
    The exponent field becomes a float by the 2^52 magic number (exact, and vectorizes
    without AVX-512's int64 -> double conversion)."""
    bits = _as_u64(u)
    e = _as_f64((bits >> np.uint64(52)) | EXP_MAGIC_BITS) - EXP_OFFSET
    f = _as_f64((bits & MANT) | ONE_BITS)
    big = f > SQRT2
    f = f * 0.5 if big else f
    e = e + 1.0 if big else e
    s = (f - 1.0) / (f + 1.0)
    return e * LN2 + 2.0 * s * _poly7(s * s, LOG_COEFS)


@njit(**INLINE_FLAGS)
def pair_uniforms(h):
    """(u1, q, phi / (pi/2)) of one pair from its 64 hash bits (layout in the module doc)."""
    u1 = 2.0 - _as_f64(ONE_BITS | ((h >> np.uint64(24)) << np.uint64(12)))
    q = (h >> np.uint64(22)) & np.uint64(3)
    frac = _as_f64(ONE_BITS | ((h << np.uint64(42)) >> np.uint64(12))) - PHASE_CENTRE
    return u1, q, frac


@njit(**INLINE_FLAGS)
def normal_pair(rkey, m):
    """Standard normals (z0, z1) of pair m of the row with key rkey."""
    u1, q, frac = pair_uniforms(mix64(rkey + np.uint64(m + 1) * GOLDEN))
    r = np.sqrt(-2.0 * _log_unit(u1))
    x = frac * HALF_PI
    x2 = x * x
    sn, cs = x * _poly7(x2, SIN_COEFS), _poly7(x2, COS_COEFS)
    odd = (q & np.uint64(1)) != np.uint64(0)
    a = sn if odd else cs
    b = cs if odd else sn
    a = -a if (q == np.uint64(1) or q == np.uint64(2)) else a
    b = -b if q >= np.uint64(2) else b
    return r * a, r * b


@njit(**NJIT_FLAGS)
def fill_normals(rkey, out, r, scale):
    """out[r, k] = scale * z_k for the row with key rkey, in whole groups of 2 PAIRS
    coordinates, then a partial last group coordinate by coordinate."""
    d = out.shape[1]
    G = 2 * PAIRS
    full = d // G
    for g in range(full):
        for j in range(PAIRS):
            z0, z1 = normal_pair(rkey, PAIRS * g + j)
            out[r, G * g + j] = scale * z0
            out[r, G * g + PAIRS + j] = scale * z1
    for k in range(G * full, d):
        j = k - G * full
        z0, z1 = normal_pair(rkey, PAIRS * full + j % PAIRS)
        out[r, k] = scale * (z0 if j < PAIRS else z1)
