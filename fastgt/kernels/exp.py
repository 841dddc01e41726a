"""fastgt's own exp of a non-positive argument, one value or four in one vector, with the
same bits in either (the logistic loss's slope: problems/samples.py).

libm's exp is a call per value, which LLVM cannot vectorize: a quarter of an in-cache
logistic gradient's time (docs/performance.md). This one is straight-line code, written as
LLVM IR so that its operations are exactly these (no fast-math flag, every product-sum an
explicit fma): t = k ln2 + r with k = round(t / ln2) and |r| <= ln2 / 2 (Cody-Waite, ln2
in two parts), exp(r) = 1 + (r + r^2 tail(r)) with the tail of its Taylor series to degree
13 (truncation below 5e-18 of the value) in Estrin's order, the last sum the only rounding
at 1's magnitude, times 2^k put in the exponent bits. Within 1.02 ulp of the exact value
for t in [-708, 0] (libm's: 0.73; tests/kernels/test_exp.py); 0 below -708 (where the value
is below 3.4e-308); NaN stays NaN. The four-lane form evaluates each lane as the one-value
form does: the same bits, lane by lane."""

from math import factorial

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .lanes import I32, Lanes
from .rounding import F64, emit_fma

#: below it the value is 0 (exp(-708) = 3.3e-308: its 2^k, 2^-1021, is still a normal
#: double's)
LOWEST = -708.0
_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 0.6931471803691238, 1.9082149292705877e-10  # hi: 32 bits, exact k ln2
_ROUND = 6755399441055744.0  # 1.5 2^52: adding it rounds to an integer, in the low bits
_TAYLOR = [1.0 / factorial(j) for j in range(14)]


def _exp_ir(builder, t, lanes: int):
    """The IR of exp(t) for a double (lanes 0) or a vector of ``lanes`` doubles."""
    L = Lanes(builder, lanes)
    const, iconst = L.f, L.i

    def fma(a, b, c):
        return emit_fma(L, a, b, c)

    low = builder.fcmp_ordered("<", t, const(LOWEST))
    tc = builder.select(low, const(LOWEST), t)  # NaN passes
    kr = fma(tc, const(_LOG2E), const(_ROUND))  # k in the low bits of its mantissa
    k = builder.fsub(kr, const(_ROUND))
    nk = builder.fneg(k)
    r = fma(nk, const(_LN2_HI), tc)
    r = fma(nk, const(_LN2_LO), r)
    r2 = builder.fmul(r, r)
    r4 = builder.fmul(r2, r2)
    c = _TAYLOR[2:]  # exp(r) = 1 + (r + r^2 tail(r)): one rounding at 1's magnitude
    p = [fma(const(c[2 * j + 1]), r, const(c[2 * j])) for j in range(6)]
    q0, q1, q2 = fma(p[1], r2, p[0]), fma(p[3], r2, p[2]), fma(p[5], r2, p[4])
    tail = fma(fma(q2, r4, q1), r4, q0)
    poly = builder.fadd(const(1.0), fma(r2, tail, r))
    bits = builder.sub(builder.bitcast(kr, L.ity), builder.bitcast(const(_ROUND), L.ity))
    scale = builder.bitcast(builder.shl(builder.add(bits, iconst(1023)), iconst(52)), L.fty)
    return builder.select(low, const(0.0), builder.fmul(poly, scale))


@intrinsic
def exp_neg(typingctx, t):
    """exp(t) for t <= 0 (module doc)."""
    if t != F64:
        return None

    def codegen(context, builder, sig, args):
        return _exp_ir(builder, args[0], 0)

    return F64(F64), codegen


@intrinsic
def exp_neg4(typingctx, a, b, c, d):
    """(exp(a), exp(b), exp(c), exp(d)) for arguments <= 0 in one 4-double vector: each
    exp_neg's bits."""
    if any(x != F64 for x in (a, b, c, d)):
        return None
    sig = types.UniTuple(F64, 4)(F64, F64, F64, F64)

    def codegen(context, builder, sig, args):
        v = ir.Constant(ir.VectorType(ir.DoubleType(), 4), ir.Undefined)
        for lane, x in enumerate(args):
            v = builder.insert_element(v, x, I32(lane))
        e = _exp_ir(builder, v, 4)
        return context.make_tuple(builder, sig.return_type,
                                  [builder.extract_element(e, I32(lane)) for lane in range(4)])

    return sig, codegen
