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

log, sin and cos are polynomials (6 terms each, Chebyshev-economized, evaluated by
Estrin's scheme), which vectorize where libm calls would not: error <= 5.6e-14, far below
the radius uniform's own resolution 2^-40 = 9.1e-13 (tests/kernels/test_rng.py checks the
transform against numpy's log, sin and cos). The float64 transform is written once, as
LLVM IR (kernels/lanes.py), and emitted in two shapes with the same bits: a whole group's
8 pairs as vectors (draw_group: 0.83-0.88x the time of the loop LLVM vectorized from the
scalar pair, on an AVX2 core) and one pair as scalar code (normal_pair).

A float32 array gets the same normals computed in float32 arithmetic (pair32: the same
hash and uniforms, the log's range reduction on the radius uniform's exact float64 bits,
4-term polynomials, 8 lanes to a 256-bit vector where float64 has 4): within 8 u r of
the exact values (u = 2^-24, r the pair's radius), not the float64 values rounded, and
1.25x as fast drawn as the steps draw (docs/performance.md, The normal generator); the
float64 stream is unchanged.

Coordinates come in groups of 16: coordinate 16 g + j is z0 of pair 8 g + j for j < 8
and z1 of pair 8 g + j - 8 for j >= 8. A vector of pairs is then stored as two
contiguous runs instead of interleaved (measured 2.5 instead of 3.1 ns per normal on an
AVX2 core), and a coordinate's value depends only on its index, never on the row width.
"""

from fractions import Fraction
from math import comb, factorial

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from ..config import INLINE_FLAGS, NJIT_FLAGS, SCALAR_FLAGS
from .lanes import I32, I64, Lanes, element_pointer
from .rounding import F32, F64, single, stored

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
ONE_BITS = np.uint64(0x3FF0000000000000)
MANT = np.uint64(0x000FFFFFFFFFFFFF)
LN2 = 0.6931471805599453
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
def _as_f32(typingctx, x):
    """The float32 whose bits are x's low 32."""
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())

    return types.float32(types.uint64), codegen


@intrinsic
def _as_u64(typingctx, x):
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


def emit_mix64(L, z):
    """SplitMix64's output function of z (64-bit integers, one or a vector: lanes.Lanes)."""
    b = L.b
    z = b.mul(b.xor(z, b.lshr(z, L.i(30))), L.i(M1))
    z = b.mul(b.xor(z, b.lshr(z, L.i(27))), L.i(M2))
    return b.xor(z, b.lshr(z, L.i(31)))


@intrinsic
def mix64(typingctx, z):
    """SplitMix64 output function (a bijection of uint64; an int64 is taken as its bits)."""
    if not isinstance(z, types.Integer) or z.bitwidth != 64:
        return None

    def codegen(context, builder, sig, args):
        return emit_mix64(Lanes(builder), args[0])

    return types.uint64(z), codegen


@njit(**SCALAR_FLAGS)
def stream_key(seed, stream):
    """Key of one stream of a seed (seed, stream: nonnegative int64)."""
    return mix64(mix64(np.uint64(seed) + GOLDEN) ^ (np.uint64(stream) * M1))


@njit(**SCALAR_FLAGS)
def step_key(skey, step):
    return mix64(skey + np.uint64(step + 1) * GOLDEN)


@njit(**SCALAR_FLAGS)
def row_key(tkey, node):
    """Key of one node's row at one step; node = -1 addresses the step's shared draw."""
    return mix64(tkey ^ (np.uint64(node + 1) * M2))


def economized(taylor, a, terms: int) -> tuple[tuple[float, ...], float]:
    """Chebyshev economization, in exact rational arithmetic (so the same floats on every
    machine): the ``terms``-term polynomial (coefficients lowest degree first) closest to
    the series ``taylor`` (Fractions) on [0, a] in the Chebyshev sense, and the bound on
    their largest difference there (the sum of the dropped Chebyshev coefficients)."""
    n = len(taylor)
    q = [Fraction(0)] * n  # the series in t, z = a (1 + t) / 2
    for k, ck in enumerate(taylor):
        ck = ck * (a / 2) ** k
        for j in range(k + 1):
            q[j] += ck * comb(k, j)
    cheb = [Fraction(0)] * n  # t^k = 2^(1-k) sum_j C(k, j) T_(k-2j), T_0 counted once
    for k, qk in enumerate(q):
        for j in range(k // 2 + 1):
            w = Fraction(1) if k == 0 else Fraction(comb(k, j), 2 ** (k - 1))
            cheb[k - 2 * j] += qk * (w / 2 if 0 < k == 2 * j else w)
    T = [[Fraction(1)], [Fraction(0), Fraction(1)]]  # Chebyshev polynomials in t
    while len(T) < terms:
        T.append([2 * x - y for x, y in zip([Fraction(0)] + T[-1], T[-2] + [Fraction(0)] * 2)])
    mono = [Fraction(0)] * terms  # the kept Chebyshev terms as a polynomial in t
    for k in range(terms):
        for i, tki in enumerate(T[k]):
            mono[i] += cheb[k] * tki
    out = [Fraction(0)] * terms
    for i, mi in enumerate(mono):  # t^i = (2 z / a - 1)^i
        for j in range(i + 1):
            out[j] += mi * comb(i, j) * (-1) ** (i - j)
    out = [x * (2 / a) ** j for j, x in enumerate(out)]
    return tuple(float(x) for x in out), float(sum(abs(x) for x in cheb[terms:]))


#: 6-term polynomials, lowest degree first, economized from 14 terms of each series:
#: atanh(s) / s = sum_j s^(2j) / (2j + 1) in z = s^2 (|s| <= 0.1716, f in [sqrt(1/2), sqrt(2))),
#: sin x / x and cos x in z = x^2 (|x| <= 0.7854 > pi/4). POLY_ERROR: their largest
#: differences from the functions (2.7e-14, 4.3e-15, 5.6e-14), 16 times below the radius
#: uniform's own resolution 2^-40 = 9.1e-13
TERMS, SERIES_TERMS = 6, 14
_S2, _X2 = Fraction(1716, 10000) ** 2, Fraction(7854, 10000) ** 2


def _economized_log_sin_cos(terms: int):
    """((coefficients, bound) of log's, sin's and cos's ``terms``-term polynomials)."""
    return (economized([Fraction(1, 2 * j + 1) for j in range(SERIES_TERMS)], _S2, terms),
            economized([Fraction((-1) ** j, factorial(2 * j + 1))
                        for j in range(SERIES_TERMS)], _X2, terms),
            economized([Fraction((-1) ** j, factorial(2 * j)) for j in range(SERIES_TERMS)],
                       _X2, terms))


(LOG_COEFS, LOG_ERR), (SIN_COEFS, SIN_ERR), (COS_COEFS, COS_ERR) = _economized_log_sin_cos(TERMS)
POLY_ERROR = max(LOG_ERR, SIN_ERR, COS_ERR)
#: the float32 transform's 4-term polynomials (the same series, economized on the same
#: ranges), as float32: differences 7.0e-10, 3.1e-9, 2.8e-8 (POLY_ERROR32), under 2^-25 =
#: 3.0e-8, half float32's spacing below 1
TERMS32 = 4
(_LOG32, LOG_ERR32), (_SIN32, SIN_ERR32), (_COS32, COS_ERR32) = _economized_log_sin_cos(TERMS32)
LOG_COEFS32, SIN_COEFS32, COS_COEFS32 = (tuple(np.float32(c) for c in cs)
                                         for cs in (_LOG32, _SIN32, _COS32))
POLY_ERROR32 = max(LOG_ERR32, SIN_ERR32, COS_ERR32)
LN2_32, HALF_PI32 = np.float32(LN2), np.float32(HALF_PI)
TWO32, MINUS_TWO32 = np.float32(2.0), np.float32(-2.0)
ONE32_BITS = np.uint64(0x3F800000)
PHASE_BITS = np.uint64(0x3FFFFF)
#: pairs per coordinate group (a group is 2 * PAIRS coordinates)
PAIRS = 8
#: 2^52 + 1023 as a double: the magic number that turns an exponent field into a float
EXP_MAGIC_BITS = np.uint64(0x4330000000000000)
EXP_OFFSET = 4503599627370496.0 + 1023.0
#: bits of sqrt(1/2): the log's range reduction to f in [sqrt(1/2), sqrt(2)) (as musl's log)
SQRT_HALF_BITS = np.uint64(0x3FE6A09E667F3BCD)
#: the phase lattice's centre: phi / (pi/2) = (k + 1/2) 2^-22 - 1/2 for the 22 phase bits k
#: (exact in float32 too, and so is the difference)
PHASE_CENTRE = 1.5 - 2.0**-23
PHASE_CENTRE32 = np.float32(PHASE_CENTRE)


# The float64 transform, written once as IR (lanes.Lanes) for one pair or a vector of
# PAIRS pairs: the scalar form is the intrinsics below, which numba inlines into its loops
# (normal_pair, and its parts for the float32 transform and the benches); the vector form
# draws a whole group (draw_group). Each expression keeps the order in which it was first
# written in numba, so that LLVM fuses the same products: the float64 stream's bits are
# unchanged (tests/kernels/test_rng.py checks them against the documented transform).


def emit_poly6(L, z, c):
    """c[0] + c[1] z + ... + c[5] z^5 by Estrin's scheme (a shorter dependency chain than
    Horner's: measured 5-10% faster here)."""
    b, f = L.b, L.f
    z2 = b.fmul(z, z)
    lo = b.fadd(f(c[0]), b.fmul(f(c[1]), z))
    mid = b.fmul(z2, b.fadd(f(c[2]), b.fmul(f(c[3]), z)))
    hi = b.fmul(b.fmul(z2, z2), b.fadd(f(c[4]), b.fmul(f(c[5]), z)))
    return b.fadd(b.fadd(lo, mid), hi)


def emit_pair_hash(L, rkey, m):
    """The 64 bits of pair m (an int64, or a vector of them) of the row with key rkey."""
    return emit_mix64(L, L.b.add(rkey, L.b.mul(L.b.add(m, L.i(1)), L.i(GOLDEN))))


def emit_uniforms(L, h):
    """(u1, q, phi / (pi/2)) of the pairs with hash bits h (layout in the module doc)."""
    b, i = L.b, L.i
    u1 = b.fsub(L.f(2.0), b.bitcast(b.or_(i(ONE_BITS), b.shl(b.lshr(h, i(24)), i(12))), L.fty))
    q = b.and_(b.lshr(h, i(22)), i(3))
    frac = b.fsub(b.bitcast(b.or_(i(ONE_BITS), b.lshr(b.shl(h, i(42)), i(12))), L.fty),
                  L.f(PHASE_CENTRE))
    return u1, q, frac


def emit_log_unit(L, u):
    """ln(u) for u in (0, 1]: u = 2^e f with f in [sqrt(1/2), sqrt(2)) by integer arithmetic
    on the bits (no compare and select), then the atanh series in s = (f - 1) / (f + 1).
    The exponent field becomes a float by the 2^52 magic number (exact, and vectorizes
    without AVX-512's int64 -> double conversion)."""
    b, f, i = L.b, L.f, L.i
    bits = b.add(b.bitcast(u, L.ity), i(ONE_BITS - SQRT_HALF_BITS))
    e = b.fsub(b.bitcast(b.or_(b.lshr(bits, i(52)), i(EXP_MAGIC_BITS)), L.fty), f(EXP_OFFSET))
    fm = b.bitcast(b.add(b.and_(bits, i(MANT)), i(SQRT_HALF_BITS)), L.fty)
    s = b.fdiv(b.fsub(fm, f(1.0)), b.fadd(fm, f(1.0)))
    return b.fadd(b.fmul(e, f(LN2)),
                  b.fmul(b.fmul(f(2.0), s), emit_poly6(L, b.fmul(s, s), LOG_COEFS)))


def emit_radius(L, u1, scale):
    """scale * sqrt(-2 ln u1), the pairs' radius."""
    return L.b.fmul(scale, L.intrinsic("sqrt", L.b.fmul(L.f(-2.0), emit_log_unit(L, u1))))


def emit_sin_cos(L, frac):
    """(sin phi, cos phi) of the phase phi = frac pi/2, |phi| < pi/4."""
    x = L.b.fmul(frac, L.f(HALF_PI))
    x2 = L.b.fmul(x, x)
    return L.b.fmul(x, emit_poly6(L, x2, SIN_COEFS)), emit_poly6(L, x2, COS_COEFS)


def emit_rotated(L, r, q, sn, cs):
    """r (cos, sin) of the angle q pi/2 + phi, from sin phi and cos phi (floats of L's type)."""
    b, i = L.b, L.i
    odd = b.icmp_unsigned("!=", b.and_(q, i(1)), i(0))
    a, c = b.select(odd, sn, cs), b.select(odd, cs, sn)
    flip = b.or_(b.icmp_unsigned("==", q, i(1)), b.icmp_unsigned("==", q, i(2)))
    a = b.select(flip, L.neg(a), a)
    c = b.select(b.icmp_unsigned(">=", q, i(2)), L.neg(c), c)
    return b.fmul(r, a), b.fmul(r, c)


def emit_normal_pair(L, rkey, m, scale):
    """scale * (z0, z1) of pair m (or of a vector of pairs) of the row with key rkey."""
    u1, q, frac = emit_uniforms(L, emit_pair_hash(L, rkey, m))
    sn, cs = emit_sin_cos(L, frac)
    return emit_rotated(L, emit_radius(L, u1, scale), q, sn, cs)


@intrinsic
def pair_hash(typingctx, rkey, m):
    """The 64 bits of pair m of the row with key rkey."""
    if rkey != types.uint64 or not isinstance(m, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        m64 = context.cast(builder, args[1], sig.args[1], types.int64)
        return emit_pair_hash(Lanes(builder), args[0], m64)

    return types.uint64(types.uint64, m), codegen


@intrinsic
def pair_uniforms(typingctx, h):
    """(u1, q, phi / (pi/2)) of one pair from its 64 hash bits (layout in the module doc)."""
    if h != types.uint64:
        return None
    sig = types.Tuple((F64, types.uint64, F64))(types.uint64)

    def codegen(context, builder, sig, args):
        return context.make_tuple(builder, sig.return_type, emit_uniforms(Lanes(builder), args[0]))

    return sig, codegen


@intrinsic
def radius(typingctx, u1, scale):
    """scale * sqrt(-2 ln u1), the pair's radius."""
    if u1 != F64 or scale != F64:
        return None

    def codegen(context, builder, sig, args):
        return emit_radius(Lanes(builder), *args)

    return F64(F64, F64), codegen


@intrinsic
def sin_cos(typingctx, frac):
    """(sin phi, cos phi) of the phase phi = frac pi/2, |phi| < pi/4."""
    if frac != F64:
        return None
    sig = types.UniTuple(F64, 2)(F64)

    def codegen(context, builder, sig, args):
        return context.make_tuple(builder, sig.return_type, emit_sin_cos(Lanes(builder), args[0]))

    return sig, codegen


@intrinsic
def rotated(typingctx, r, q, sn, cs):
    """r (cos, sin) of the angle q pi/2 + phi, from sin phi and cos phi: in float32 when
    all three are float32 (the float32 transform's), else in float64."""
    fl = (r, sn, cs)
    if q != types.uint64 or any(t not in (F64, F32) for t in fl):
        return None
    ty = F32 if all(t == F32 for t in fl) else F64
    sig = types.UniTuple(ty, 2)(ty, q, ty, ty)

    def codegen(context, builder, sig, args):
        L = Lanes(builder, fp=context.get_value_type(ty))
        return context.make_tuple(builder, sig.return_type, emit_rotated(L, *args))

    return sig, codegen


@intrinsic
def normal_pair(typingctx, rkey, m, scale):
    """scale * (z0, z1), the standard normals of pair m of the row with key rkey."""
    if rkey != types.uint64 or not isinstance(m, types.Integer) or scale != F64:
        return None
    sig = types.UniTuple(F64, 2)(rkey, m, scale)

    def codegen(context, builder, sig, args):
        m64 = context.cast(builder, args[1], sig.args[1], types.int64)
        z = emit_normal_pair(Lanes(builder), args[0], m64, args[2])
        return context.make_tuple(builder, sig.return_type, z)

    return sig, codegen


def emit_group(L, rkey, g, scale):
    """(z0, z1) of group g's PAIRS pairs (L: vectors of PAIRS) of the row with key rkey,
    scaled (scalar rkey, g, scale)."""
    m = L.b.add(L.splat(L.b.mul(g, I64(PAIRS))), L.iota())
    return emit_normal_pair(L, L.splat(rkey), m, L.splat(scale))


def group_coordinates(builder, g):
    """The first coordinates of group g's two runs, z0's and z1's (the module doc's layout)."""
    k = builder.mul(g, I64(2 * PAIRS))
    return k, builder.add(k, I64(PAIRS))


def emit_runs(L, rkey, g, scale, body, tail=None):
    """body(k, z) for each run of group g of the row with key rkey: k its first coordinate
    (int64), z its PAIRS values (L's vectors of emit_group, scaled). ``tail`` = (d, runs),
    int64s, for a row's partial last group (a row of whole runs: Batch's rows are whole
    cache lines, PAIRS doubles): coordinates from d on get 0, the padding's noise as
    fill_padded writes it, and the second run is taken only when runs is 2."""
    b = L.b
    for r, (k, z) in enumerate(zip(group_coordinates(b, g), emit_group(L, rkey, g, scale))):
        if tail is None:
            body(k, z)
            continue
        d, runs = tail
        z = b.select(b.icmp_signed("<", b.add(L.splat(k), L.iota()), L.splat(d)), z, L.f(0.0))
        if r == 0:
            body(k, z)
            continue
        with b.if_then(b.icmp_signed("==", runs, I64(2))):
            body(k, z)


@intrinsic
def draw_group(typingctx, out, r, rkey, g, scale):
    """out[r, 16 g:16 g + 16] = scale * z_k, group g of the row with key rkey (a float64
    2-d array): its PAIRS pairs as vectors, z0 and z1 stored as two runs of PAIRS (layout in
    the module doc); the values of normal_pair, lane by lane."""
    if not (isinstance(out, types.Array) and out.ndim == 2 and out.dtype == F64
            and isinstance(r, types.Integer) and rkey == types.uint64
            and isinstance(g, types.Integer) and scale == F64):
        return None
    sig = types.void(out, r, rkey, g, scale)

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        r64, g64 = (context.cast(builder, args[j], sig.args[j], types.int64) for j in (1, 3))
        L = Lanes(builder, PAIRS)

        def store(k, z):
            if aty.layout == "C":  # the run in one store
                builder.store(z, element_pointer(context, builder, aty, args[0], [r64, k], L.fty),
                              align=8)
                return
            for j in range(PAIRS):
                p = element_pointer(context, builder, aty, args[0], [r64, builder.add(k, I64(j))])
                builder.store(builder.extract_element(z, I32(j)), p)

        emit_runs(L, args[2], g64, args[4], store)
        return context.get_dummy_value()

    return sig, codegen


@njit(**SCALAR_FLAGS)
def _poly4(z, c):
    """c[0] + c[1] z + c[2] z^2 + c[3] z^3 by Estrin's scheme."""
    return (c[0] + c[1] * z) + (z * z) * (c[2] + c[3] * z)


@njit(**SCALAR_FLAGS)
def _log_unit32(u):
    """ln(u) in float32 for u in (0, 1] (a float64, exact: 40 bits): _log_unit's range
    reduction on u's float64 bits, f - 1 exact in float64 and rounded once, so that ln(u)
    keeps float32's relative accuracy near u = 1 too (u itself rounded to float32 would
    not: r = sqrt(-2 ln u) would lose its absolute accuracy near 0), then float32."""
    bits = _as_u64(u) + (ONE_BITS - SQRT_HALF_BITS)
    e = np.float32(_as_f64((bits >> np.uint64(52)) | EXP_MAGIC_BITS) - EXP_OFFSET)
    fm1 = np.float32(_as_f64((bits & MANT) + SQRT_HALF_BITS) - 1.0)
    s = fm1 / (fm1 + TWO32)
    return e * LN2_32 + TWO32 * s * _poly4(s * s, LOG_COEFS32)


@njit(**SCALAR_FLAGS)
def pair32(h, scale):
    """normal_pair's values from the pair's hash h in float32 arithmetic (scale: float32):
    the same uniforms (the radius's 40 bits through _log_unit32, the quadrant, the phase
    lattice, exact in float32) and 4-term polynomials. For scale = 1, within 8 u r of the
    exact Box-Muller values, u = 2^-24 (float32's unit roundoff) and r the pair's radius
    (tests/kernels/test_rng.py; a scale adds its own two roundings), tails to the same
    7.45."""
    u1, q, _ = pair_uniforms(h)  # its float64 phase unused (LLVM drops it): the float32 one
    frac = _as_f32(ONE32_BITS | ((h & PHASE_BITS) << np.uint64(1))) - PHASE_CENTRE32
    x = frac * HALF_PI32
    x2 = x * x
    r = scale * np.sqrt(MINUS_TWO32 * _log_unit32(u1))
    return rotated(r, q, x * _poly4(x2, SIN_COEFS32), _poly4(x2, COS_COEFS32))


@njit(**SCALAR_FLAGS)
def pair_for(out, rkey, m, scale):
    """scale * (z0, z1) of pair m for the array ``out``: pair32's float32 arithmetic
    for a float32 out (a float32 state's noise: 8 lanes a vector where float64 has 4),
    normal_pair's for a float64 one. numba types both branches and returns float64 values
    (the float32 ones widened, exactly); single() is a constant, so LLVM drops the branch
    not taken and, storing into a float32 out, the widening with it."""
    if single(out):
        return pair32(pair_hash(rkey, m), stored(out, scale))
    return normal_pair(rkey, m, scale)


def fill_groups(rkey, out, r, scale, groups):
    """out[r, :16 groups] = scale * z_k, the row's first ``groups`` whole groups.
    Compiled code only: numba takes the implementation for out's type (_fill_groups),
    inlined."""
    raise TypeError("fill_groups is called from numba code only")


@overload(fill_groups, inline="always")
def _fill_groups(rkey, out, r, scale, groups):
    """fill_groups for out's type: a float64 row by draw_group, group by group (the
    float64 transform as explicit vectors: 0.83-0.88x the time of the loop LLVM vectorized
    from the scalar pair, docs/performance.md, GT's Setup A row with its draw), a float32
    row by the loop LLVM vectorizes over a group's PAIRS pairs (pair32)."""
    G = 2 * PAIRS
    if out.dtype == F64:
        def groups64(rkey, out, r, scale, groups):
            for g in range(groups):
                draw_group(out, r, rkey, g, scale)
        return groups64

    def groups32(rkey, out, r, scale, groups):
        for g in range(groups):
            for j in range(PAIRS):
                z0, z1 = pair32(pair_hash(rkey, PAIRS * g + j), stored(out, scale))
                out[r, G * g + j] = z0
                out[r, G * g + PAIRS + j] = z1
    return groups32


@njit(**INLINE_FLAGS)
def fill_padded(rkey, out, r, scale, d):
    """out[r, k] = scale * z_k for k < d and 0 past d to the end of d's last group, which
    the row must hold (Batch's noise rows are whole groups; nothing checks it, so a shorter
    row would be overwritten past its end): whole groups only, one loop. The step kernels
    inline it to draw a node's row (kernels/steps.py): fill_normals' call cost about 20 ns
    a row, and its pair-by-pair loops for a partial group about 7.5 ns a pair where the
    whole group costs about 19 (AMD Zen 4: `bench/bench_generator.py --tail`)."""
    G = 2 * PAIRS
    groups = -(-d // G)
    fill_groups(rkey, out, r, scale, groups)
    for k in range(d, groups * G):  # the partial group's coordinates past d
        out[r, k] = 0.0


@njit(**NJIT_FLAGS)
def fill_normals(rkey, out, r, scale, d):
    """out[r, k] = scale * z_k for k < d, the row with key rkey: whole groups of 2 PAIRS
    coordinates, then only the pairs a partial last group needs, one at a time; the row
    past d is left as it is (any width from d). A call, for the draws outside the steps'
    rows (the initial point, initial gradients, Setup B's shared draw); coordinate k's value
    is fill_padded's (tests/kernels/test_rng.py)."""
    G = 2 * PAIRS
    full = d // G
    fill_groups(rkey, out, r, scale, full)
    k0, m0 = G * full, PAIRS * full
    both = max(0, d - k0 - PAIRS)  # pairs of the partial group whose z1 is needed too
    for j in range(both):
        z0, z1 = pair_for(out, rkey, m0 + j, scale)
        out[r, k0 + j] = z0
        out[r, k0 + PAIRS + j] = z1
    for j in range(both, min(PAIRS, d - k0)):
        z0, _ = pair_for(out, rkey, m0 + j, scale)
        out[r, k0 + j] = z0


@njit(**SCALAR_FLAGS)
def uniform_index(rkey, j, m):
    """Draw j (j >= 0) of a uniform integer in [0, m) from the row with key rkey (a
    minibatch index). Its hash counts down from the key, rkey - (j + 1) GOLDEN, where the
    row's normals count up (rkey + (p + 1) GOLDEN for pair p): the two never share a hash.
    52 bits scaled to [0, m): the bias, at most m / 2^52, is far below any sampling error."""
    h = mix64(rkey - np.uint64(j + 1) * GOLDEN)
    u = _as_f64(ONE_BITS | (h >> np.uint64(12))) - 1.0  # exact, in [0, 1)
    return min(m - 1, np.int64(u * m))
