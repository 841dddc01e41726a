"""Explicit roundings for the kernels, which are compiled with FMA contraction allowed.

Contraction lets LLVM fuse a product into an adjacent sum, and which product it fuses may
differ between two places that compute the same formula. Where two code paths must give
the same bits (GT's stored and recomputed gradients, the kernels and stochastic_grads),
the formula is written with these instead: ``fma`` always fuses. ``mul`` was meant never
to, but numba's fastmath pass gives its product the function's flags like every other
(numba/core/fastmathpass.py), so LLVM may fuse it too: the two paths agree because they
compile the same expression (tests check them), not because of it. An fmul flagged on its
own ("arcp") would stay unfused, but changes the bits of D-SGD's and centralized's
structured-noise runs: left for a change that alters bits anyway (kernels/rows.py, which
needs numpy's roundings, is compiled without fastmath instead).
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .lanes import scalar_intrinsic

F64 = types.float64
F32 = types.float32


#: what fma and mul take: float64, and float32 (an element of a float32 state)
FLOATS = (F64, F32)


def emit_fma(L, a, b, c):
    """a * b + c rounded once (llvm.fma: in float32 when all three are float32, else in
    float64, float32 arguments widened first)."""
    return L.intrinsic("fma", a, b, c)


def emit_mul(L, a, b):
    """a * b as an fmul emitted without fast-math flags (in float32 when both are float32,
    else float64, a float32 argument widened); numba's fastmath pass adds them, so it may
    still be fused into a sum (module doc)."""
    return L.b.fmul(a, b)


fma, mul = scalar_intrinsic(emit_fma), scalar_intrinsic(emit_mul)


@intrinsic
def stored(typingctx, arr, v):
    """The number ``v`` as the array ``arr`` holds it, in its type: rounded to float32 (once)
    for a float32 array, ``v`` itself for a float64 one (a float32 ``v`` widened, exactly).
    A float32 state computes in float32: its kernels take every float64 operand (a
    stepsize, a weight, a gradient computed in float64) through this, so that the
    arithmetic around it stays float32; a value that is stored and also used again (a new
    iterate's gradient, a gradient that a later step recomputes) goes through it too, so
    that every use sees the stored bits. Free for float64 arrays: no instruction, the same
    bits."""
    if not (isinstance(arr, types.Array) and arr.dtype in FLOATS and v in FLOATS):
        return None
    ty = arr.dtype

    def codegen(context, builder, sig, args):
        return context.cast(builder, args[1], sig.args[1], ty)

    return ty(arr, v), codegen


@intrinsic
def single(typingctx, arr):
    """Whether ``arr`` holds float32 values: a constant of its type, which LLVM folds (the
    branch not taken is dropped)."""
    if not isinstance(arr, types.Array):
        return None
    flag = arr.dtype == F32

    def codegen(context, builder, sig, args):
        return context.get_constant(types.boolean, flag)

    return types.boolean(arr), codegen


#: the LLVM function attribute that sets a function's preferred vector width (the x86
#: backend reads it per function, over the process's features)
NARROW = '"prefer-vector-width"="256"'


@intrinsic
def narrow_vectors(typingctx):
    """The function that calls this is compiled for 256-bit vectors, whatever width the
    process's others use (kernels/__init__.py: configure_vectors): a loop that sums with
    reassociation keeps its order, which follows the vector width, under either setting
    (and on CPUs without AVX-512, whose vectors are 256-bit), and a short one its speed
    (512-bit lanes leave more to the loop's remainder and the final reduction:
    samples.dense_dot at d = 50 took 1.2-1.3x longer). It marks the function numba compiles
    it in: a helper compiled with config.INLINE_FLAGS (samples.grad_row) is optimized on its
    own, its loops vectorized for 256-bit vectors, before LLVM inlines it into a caller of
    either width (an algorithm's block function, whose own loops keep the process's);
    inlined into numba's IR (SCALAR_FLAGS), it would mark the caller instead.
    (llvmlite checks function attributes against a list without key-value ones: the set's
    own add.)"""

    def codegen(context, builder, sig, args):
        set.add(builder.function.attributes, NARROW)
        return context.get_dummy_value()

    return types.none(), codegen


def _prefetch_lines(context, builder, ptr, nbytes, locality=3) -> None:
    """llvm.prefetch (read) of every 64-byte line of ``nbytes`` bytes from the element
    pointer ``ptr``; locality 3 (x86 prefetcht0: into the L1) or 2 (prefetcht1: the L2)."""
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8")
    base = builder.bitcast(ptr, i8p)
    step = context.get_constant(types.intp, 64)
    with cgutils.for_range_slice(builder, context.get_constant(types.intp, 0), nbytes,
                                 step) as (off, _):
        builder.call(fn, [builder.gep(base, [off]), i32(0), i32(locality), i32(1)])


def _row_prefetch(locality: int = 3):
    """The codegen of a prefetch of every line of row ``row`` of a 2-d C-contiguous array,
    with this locality (_prefetch_lines)."""
    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        r = context.cast(builder, args[1], sig.args[1], types.intp)
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [r, zero])
        shape = cgutils.unpack_tuple(builder, ary.shape, 2)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(
            context.get_data_type(aryty.dtype)))
        _prefetch_lines(context, builder, ptr, builder.mul(shape[1], itemsize), locality)
        return context.get_dummy_value()

    return codegen


def _is_row(arr, row) -> bool:
    return isinstance(arr, types.Array) and arr.ndim == 2 and isinstance(row, types.Integer)


@intrinsic
def prefetch_row(typingctx, arr, row):
    """Hint the CPU to load row ``row`` of the 2-d C-contiguous ``arr`` into the caches
    (llvm.prefetch of each of its 64-byte lines; no effect on any value): a scattered
    neighbour's row, read soon and not in order with the rows before it."""
    return (types.void(arr, row), _row_prefetch()) if _is_row(arr, row) else None


@intrinsic
def prefetch_row_l2(typingctx, arr, row):
    """prefetch_row into the L2 (prefetcht1): a random dense data row, rows before it is
    read. Into the L1, every line of 4 rows of 4 KB ahead overflowed its miss buffers (the
    first 8 lines took 0.92-0.96x that time); the L2's take them: every line into the L2
    took 0.72-0.89x the time of the first 8 lines' at d = 500, and rows of 400 bytes into
    the L2 0.56-0.67x the time of the L1's (AMD Zen 4, bench/bench_ml.py --against,
    docs/performance.md). The sparse rows' short spans, whose loads start a chain of
    dependent ones, keep prefetcht0 (1.13-1.23x the time in the L2)."""
    return (types.void(arr, row), _row_prefetch(2)) if _is_row(arr, row) else None


@intrinsic
def prefetch_span(typingctx, arr, lo, hi):
    """Hint the CPU to load ``arr[lo:hi]`` of the 1-d contiguous ``arr`` into the caches
    (llvm.prefetch of each 64-byte line; no effect on any value): a sparse row's values or
    column indices."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(lo, types.Integer)
            and isinstance(hi, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        start = context.cast(builder, args[1], sig.args[1], types.intp)
        stop = context.cast(builder, args[2], sig.args[2], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [start])
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(
            context.get_data_type(aryty.dtype)))
        _prefetch_lines(context, builder, ptr, builder.mul(builder.sub(stop, start), itemsize))
        return context.get_dummy_value()

    return types.void(arr, lo, hi), codegen
