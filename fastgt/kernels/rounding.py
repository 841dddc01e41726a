"""Explicit roundings for the kernels, which are compiled with FMA contraction allowed.

Contraction lets LLVM fuse a product into an adjacent sum, and which product it fuses may
differ between two places that compute the same formula. Where two code paths must give
the same bits (GT's stored and recomputed gradients, the kernels and stochastic_grads),
the formula is written with these instead: ``fma`` always fuses, ``mul`` never does.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

F64 = types.float64


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma.f64)."""
    if (a, b, c) != (F64, F64, F64):
        return None

    def codegen(context, builder, sig, args):
        f64 = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f64, [f64] * 3),
                                            "llvm.fma.f64")
        return builder.call(fn, args)

    return F64(F64, F64, F64), codegen


@intrinsic
def mul(typingctx, a, b):
    """a * b rounded on its own: an fmul without fast-math flags, never fused into a sum."""
    if (a, b) != (F64, F64):
        return None

    def codegen(context, builder, sig, args):
        return builder.fmul(args[0], args[1])

    return F64(F64, F64), codegen
