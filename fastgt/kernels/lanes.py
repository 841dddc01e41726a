"""LLVM IR on one value or on a vector of ``lanes`` values, for code written once as IR
builders (``emit_*``) and emitted in either shape: the normal transform (rng.py), a row's
mix (mixing.py), the updates of GT (ATC-GT's too), D-SGD, D² and EXTRA, the homogeneous
gradient, fma and mul, exp.

numba's loops vectorize scalar code well, but not everywhere: a whole generator group
drawn as explicit vectors took 0.83-0.88x the time of the loop LLVM vectorized from the
scalar pair, and GT's Setup A row, its draw and update in one basic block, 0.80-0.87x the
time of the draw then the update (D-SGD's 0.83-0.96x; docs/performance.md, GT's Setup A
row with its draw); a
libm call does not vectorize at all (exp.py). Written once here, the scalar form (a numba
intrinsic, inlined into the loops that call it) and the vector form are the same
operations in the same order, so every lane has the scalar form's bits. Float binary
operations are emitted without flags: numba's fastmath pass gives them the kernel's
("contract") as it does its own code's, so LLVM fuses the same products in both forms as
in numba code written the same way (calls of vector intrinsics get no flags: sqrt and fma
round once either way).
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

I32 = ir.IntType(32)
I64 = ir.IntType(64)
DOUBLE = ir.DoubleType()


class Lanes:
    """An IR builder's emitter for one shape: scalars (lanes 0) or vectors of ``lanes``
    values, floats of type ``fp`` (double or float) and 64-bit integers."""

    def __init__(self, builder, lanes: int = 0, fp=DOUBLE):
        self.b, self.lanes = builder, lanes
        self.fty, self.ity = self.shaped(fp), self.shaped(I64)

    def shaped(self, ty):
        return ty if not self.lanes else ir.VectorType(ty, self.lanes)

    def f(self, x):
        """The float constant x in every lane."""
        return ir.Constant(self.fty, float(x) if not self.lanes else [float(x)] * self.lanes)

    def i(self, x):
        """The 64-bit integer constant x (taken modulo 2^64) in every lane."""
        x = int(x) & (2**64 - 1)
        return ir.Constant(self.ity, x if not self.lanes else [x] * self.lanes)

    def iota(self):
        """0, 1, ..., lanes - 1 as 64-bit integers."""
        return ir.Constant(self.ity, list(range(self.lanes)))

    def splat(self, x):
        """A scalar value in every lane (itself for scalars)."""
        if not self.lanes:
            return x
        vec = ir.VectorType(x.type, self.lanes)
        one = self.b.insert_element(ir.Constant(vec, ir.Undefined), x, I32(0))
        return self.b.shuffle_vector(one, ir.Constant(vec, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, self.lanes), [0] * self.lanes))

    def intrinsic(self, name: str, *args):
        """A call of LLVM's float intrinsic ``name`` (fma, sqrt, ...) of this shape."""
        width = "f64" if self.fty in (DOUBLE, self.shaped(DOUBLE)) else "f32"
        suffix = width if not self.lanes else f"v{self.lanes}{width}"
        fn = cgutils.get_or_insert_function(self.b.module,
                                            ir.FunctionType(self.fty, [self.fty] * len(args)),
                                            f"llvm.{name}.{suffix}")
        return self.b.call(fn, list(args))

    def neg(self, x):
        """-x as numba negates a float (0 - x with a negative zero: signs of zeros kept)."""
        return self.b.fsub(self.f(-0.0), x)


def element_pointer(context, builder, aty, ary, inds, ty=None):
    """A pointer to ary[inds] (numba array type aty, value ary, int64 indices), cast to a
    pointer to ty (a vector of the row's elements from there: a C-contiguous array)."""
    a = context.make_array(aty)(context, builder, ary)
    p = cgutils.get_item_pointer2(context, builder, a.data, cgutils.unpack_tuple(builder, a.shape),
                                  cgutils.unpack_tuple(builder, a.strides), aty.layout, inds)
    return p if ty is None else builder.bitcast(p, ty.as_pointer())


def float_type(args):
    """The type numba computes a float expression of ``args`` in: float32 when every one is
    float32, float64 when each is float32 or float64 (float32 widened), else None."""
    if not all(t in (types.float32, types.float64) for t in args):
        return None
    return types.float32 if all(t == types.float32 for t in args) else types.float64


def scalar_intrinsic(emit):
    """A numba intrinsic of ``emit_NAME(L, *values)``'s scalar form, 2 to 5 values (named
    NAME, with its docstring): the arguments, floats, taken in float_type's type (numba
    casts them), the value of that type: numba code written ``emit``'s way."""

    def typed(*args):
        ty = float_type(args)
        if ty is None:
            return None

        def codegen(context, builder, sig, values):
            return emit(Lanes(builder, fp=context.get_value_type(ty)), *values)

        return ty(*[ty] * len(args)), codegen

    # numba takes an intrinsic's arity from its signature (a *args would be a tuple)
    arity = emit.__code__.co_argcount - 1
    if arity == 2:
        def typer(typingctx, a, b):
            return typed(a, b)
    elif arity == 3:
        def typer(typingctx, a, b, c):
            return typed(a, b, c)
    elif arity == 4:
        def typer(typingctx, a, b, c, e):
            return typed(a, b, c, e)
    elif arity == 5:
        def typer(typingctx, a, b, c, e, f):
            return typed(a, b, c, e, f)
    else:
        raise ValueError(f"{emit.__name__}: 2 to 5 values, not {arity}")

    typer.__name__ = typer.__qualname__ = emit.__name__.removeprefix("emit_")
    typer.__doc__ = emit.__doc__
    typer.__module__ = emit.__module__
    return intrinsic(typer)
