"""Would the normal draw fused into GT's row update pay? A model, in explicit vector IR.

    python bench/bench_fused_draw.py [--n 300] [--d 96] [--repeats 7]

GT's Setup A row on a ring (float64, f_i = a0/2 ||x||^2, no mean term; one cell, 1
thread), as the step kernels order it and as a fused kernel would:

- draw, then update: the row's normals by rng.fill_padded (inlined, as the steps draw),
  then one numba loop over the row: both mixes, x' = (W X)_i - gamma (W Y)_i, g' = a0 x' +
  noise, y' = (W Y)_i + g' - g, written with G's row;
- IR draw, then update: the same, the normals by an explicit vector form of the
  generator (below);
- fused: per group of 16 coordinates, its 8 pairs and the update of its 16 coordinates in
  one basic block of LLVM vector IR (loads of the neighbour rows, the same operations);
- the two draws alone.

The explicit generator writes rng's transform (normal_pair: the hash, the uniforms, the
log's range reduction, the polynomials, the rotation) on vectors of 8 pairs with the same
contractible operations, so that LLVM fuses the same products: the bench checks its rows
against fill_padded's, and the fused step's state against the numba model's, to the bit,
before timing. Reports ns per element (median and min over interleaved repeats) and the
draw-then-update time over each way's.

The fused kernel is a model for measuring, not an engine path: in the engine it would be a
second definition of GT's row update (docs/performance.md, On an AMD EPYC Zen 3 with AVX2).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common

#: pairs in a vector: one generator group (16 coordinates)
LANES = 8


def ir_kernels():
    """(draw_group, gt_group): the explicit-vector intrinsics (module doc)."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    from fastgt.kernels import rng as R

    dbl, i64, i32 = ir.DoubleType(), ir.IntType(64), ir.IntType(32)
    V, IV = ir.VectorType(dbl, LANES), ir.VectorType(i64, LANES)
    FLAGS = ("contract",)  # what the kernels' fastmath={"contract"} gives every operation

    def cf(x):
        return ir.Constant(V, [float(x)] * LANES)

    def ci(x):
        return ir.Constant(IV, [int(x)] * LANES)

    def splat(b, x):
        vec = ir.VectorType(x.type, LANES)
        v = b.insert_element(ir.Constant(vec, ir.Undefined), x, i32(0))
        return b.shuffle_vector(v, ir.Constant(vec, ir.Undefined),
                                ir.Constant(ir.VectorType(i32, LANES), [0] * LANES))

    def add(b, x, y):
        return b.fadd(x, y, flags=FLAGS)

    def sub(b, x, y):
        return b.fsub(x, y, flags=FLAGS)

    def mul(b, x, y):
        return b.fmul(x, y, flags=FLAGS)

    def poly6(b, z, c):  # rng._poly6's order
        z2 = mul(b, z, z)
        lo = add(b, cf(c[0]), mul(b, cf(c[1]), z))
        mid = mul(b, z2, add(b, cf(c[2]), mul(b, cf(c[3]), z)))
        hi = mul(b, mul(b, z2, z2), add(b, cf(c[4]), mul(b, cf(c[5]), z)))
        return add(b, add(b, lo, mid), hi)

    def mix64(b, z):
        z = b.mul(b.xor(z, b.lshr(z, ci(30))), ci(R.M1))
        z = b.mul(b.xor(z, b.lshr(z, ci(27))), ci(R.M2))
        return b.xor(z, b.lshr(z, ci(31)))

    def pairs(b, rkey, m0, scale):
        """(z0, z1) of pairs m0 .. m0 + 7 of the row with key rkey: rng.normal_pair's."""
        h = b.add(b.add(splat(b, rkey), b.mul(splat(b, m0), ci(R.GOLDEN))),
                  b.mul(ir.Constant(IV, list(range(1, LANES + 1))), ci(R.GOLDEN)))
        h = mix64(b, h)
        u1 = sub(b, cf(2.0), b.bitcast(b.or_(ci(R.ONE_BITS),
                                             b.shl(b.lshr(h, ci(24)), ci(12))), V))
        q = b.and_(b.lshr(h, ci(22)), ci(3))
        frac = sub(b, b.bitcast(b.or_(ci(R.ONE_BITS), b.lshr(b.shl(h, ci(42)), ci(12))), V),
                   cf(R.PHASE_CENTRE))
        bits = b.add(b.bitcast(u1, IV), ci(R.ONE_BITS - R.SQRT_HALF_BITS))
        e = sub(b, b.bitcast(b.or_(b.lshr(bits, ci(52)), ci(R.EXP_MAGIC_BITS)), V),
                cf(R.EXP_OFFSET))
        f = b.bitcast(b.add(b.and_(bits, ci(R.MANT)), ci(R.SQRT_HALF_BITS)), V)
        s = b.fdiv(sub(b, f, cf(1.0)), add(b, f, cf(1.0)), flags=FLAGS)
        log = add(b, mul(b, e, cf(R.LN2)),
                  mul(b, mul(b, cf(2.0), s), poly6(b, mul(b, s, s), R.LOG_COEFS)))
        sqrt = cgutils.get_or_insert_function(b.module, ir.FunctionType(V, [V]),
                                              f"llvm.sqrt.v{LANES}f64")
        r = mul(b, splat(b, scale), b.call(sqrt, [mul(b, cf(-2.0), log)]))
        x = mul(b, frac, cf(R.HALF_PI))
        x2 = mul(b, x, x)
        sn, cs = mul(b, x, poly6(b, x2, R.SIN_COEFS)), poly6(b, x2, R.COS_COEFS)
        odd = b.icmp_unsigned("!=", b.and_(q, ci(1)), ci(0))
        a, c = b.select(odd, sn, cs), b.select(odd, cs, sn)
        flip = b.or_(b.icmp_unsigned("==", q, ci(1)), b.icmp_unsigned("==", q, ci(2)))
        a = b.select(flip, b.fneg(a), a)
        c = b.select(b.icmp_unsigned(">=", q, ci(2)), b.fneg(c), c)
        return mul(b, r, a), mul(b, r, c)

    def at(context, b, aryty, ary, i, k):
        """A pointer to the vector at ary[i, k:k + LANES] (a C-contiguous 2-d array)."""
        a = context.make_array(aryty)(context, b, ary)
        p = cgutils.get_item_pointer2(context, b, data=a.data,
                                      shape=cgutils.unpack_tuple(b, a.shape),
                                      strides=cgutils.unpack_tuple(b, a.strides),
                                      layout="C", inds=[i, k])
        return b.bitcast(p, V.as_pointer())

    def load(b, p):
        return b.load(p, align=8)

    def group_k(b, g, half):
        return b.add(b.mul(g, i64(2 * LANES)), i64(LANES * half))

    @intrinsic
    def draw_group(typingctx, N, r, rkey, g, scale):
        """N[r, 16 g:16 g + 16] = the row's group g of normals (fill_padded's values)."""
        sig = types.void(N, types.int64, types.uint64, types.int64, types.float64)

        def codegen(context, b, sig, args):
            N_, r_, rkey_, g_, scale_ = args
            zs = pairs(b, rkey_, b.mul(g_, i64(LANES)), scale_)
            for half, z in enumerate(zs):
                b.store(z, at(context, b, sig.args[0], N_, r_, group_k(b, g_, half)), align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def gt_group(typingctx, X, Xn, Y, Yn, G, i, jm, jp, w, gamma, a0, rkey, g, scale):
        """Group g of row i: its 8 pairs, then its 16 coordinates' update (draw_then_update's
        expressions, on vectors)."""
        f = types.float64
        sig = types.void(X, X, X, X, X, types.int64, types.int64, types.int64,
                         types.UniTuple(f, 3), f, f, types.uint64, types.int64, f)

        def codegen(context, b, sig, args):
            X_, Xn_, Y_, Yn_, G_, i_, jm_, jp_, w_, gamma_, a0_, rkey_, g_, scale_ = args
            ty = sig.args[0]
            ws = [splat(b, b.extract_value(w_, e)) for e in range(3)]
            gm, a0v = splat(b, gamma_), splat(b, a0_)
            zs = pairs(b, rkey_, b.mul(g_, i64(LANES)), scale_)
            fma = cgutils.get_or_insert_function(b.module, ir.FunctionType(V, [V] * 3),
                                                 f"llvm.fma.v{LANES}f64")
            def mixed(A, k):
                t = [mul(b, wv, load(b, at(context, b, ty, A, j, k)))
                     for wv, j in zip(ws, (jm_, i_, jp_))]
                return add(b, add(b, t[0], t[1]), t[2])

            for half, z in enumerate(zs):
                k = group_k(b, g_, half)
                xm, ym = mixed(X_, k), mixed(Y_, k)
                x = sub(b, xm, mul(b, gm, ym))
                gk = b.call(fma, [a0v, x, z])
                gp = at(context, b, ty, G_, i_, k)
                y = add(b, ym, sub(b, gk, load(b, gp)))
                b.store(x, at(context, b, ty, Xn_, i_, k), align=8)
                b.store(y, at(context, b, ty, Yn_, i_, k), align=8)
                b.store(gk, gp, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return draw_group, gt_group


def steps():
    """The compiled ways (module doc): name -> f(state, reps), and the draws alone."""
    from numba import njit

    from fastgt.config import NJIT_FLAGS
    from fastgt.kernels.rng import fill_padded, row_key
    from fastgt.kernels.rounding import fma

    draw_group, gt_group = ir_kernels()
    flags = dict(NJIT_FLAGS, cache=False)

    def stepper(ir_draw, fused):
        @njit(**flags)
        def run(X, Xn, Y, Yn, G, N, w, gamma, a0, scale, tkey, reps):
            n, d = X.shape
            w0, w1, w2 = w
            for t in range(reps):
                for i in range(n):
                    jm = i - 1 if i > 0 else n - 1
                    jp = i + 1 if i < n - 1 else 0
                    key = row_key(tkey + np.uint64(t), i)
                    if fused:
                        for g in range(d // 16):
                            gt_group(X, Xn, Y, Yn, G, i, jm, jp, w, gamma, a0, key, g, scale)
                        continue
                    if ir_draw:
                        for g in range(d // 16):
                            draw_group(N, 0, key, g, scale)
                    else:
                        fill_padded(key, N, 0, scale, d)
                    for k in range(d):
                        xm = w0 * X[jm, k] + w1 * X[i, k] + w2 * X[jp, k]
                        ym = w0 * Y[jm, k] + w1 * Y[i, k] + w2 * Y[jp, k]
                        x = xm - gamma * ym
                        gk = fma(a0, x, N[0, k])
                        Yn[i, k] = ym + (gk - G[i, k])
                        G[i, k] = gk
                        Xn[i, k] = x
                X, Xn, Y, Yn = Xn, X, Yn, Y
        return run

    def drawer(ir_draw):
        @njit(**flags)
        def run(N, scale, tkey, n, reps):
            d = N.shape[1]
            for t in range(reps):
                for i in range(n):
                    key = row_key(tkey + np.uint64(t), i)
                    if ir_draw:
                        for g in range(d // 16):
                            draw_group(N, 0, key, g, scale)
                    else:
                        fill_padded(key, N, 0, scale, d)
        return run

    ways = {"draw, then update": stepper(False, False), "IR draw, then update": stepper(True, False),
            "fused": stepper(False, True)}
    return ways, {"draw alone": drawer(False), "IR draw alone": drawer(True)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="nodes of the ring (>= 3)")
    ap.add_argument("--d", type=int, default=96, help="a positive multiple of 16")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if args.n < 3 or args.d < 16 or args.d % 16 or args.repeats < 1:
        raise SystemExit("--n must be >= 3, --d a positive multiple of 16, --repeats >= 1")

    import numba

    numba.set_num_threads(1)
    ways, draws = steps()
    n, d = args.n, args.d
    rng = np.random.default_rng(0)
    start = [rng.standard_normal((n, d)) for _ in range(5)]
    params = ((1 / 3, 1 / 3, 1 / 3), 0.01, 1.0, 1.0, np.uint64(12345))

    ends = {}
    for name, run in ways.items():  # one step each from the same state: the same bits?
        state = [a.copy() for a in start] + [np.zeros((1, d))]
        run(*state, *params, 1)
        ends[name] = state[:5]
    for name, end in ends.items():
        if not all(np.array_equal(a, b) for a, b in zip(end, ends["draw, then update"])):
            raise SystemExit(f"{name}: the state differs from draw, then update's")
    rows = [np.zeros((1, d)), np.zeros((1, d))]
    for out, run in zip(rows, draws.values()):
        run(out, 1.0, np.uint64(7), 1, 1)
    if not np.array_equal(*rows):
        raise SystemExit("the IR draw's normals differ from fill_padded's")

    reps = max(1, int(2e7 / (n * d)))
    states = {name: [a.copy() for a in start] + [np.zeros((1, d))] for name in ways}
    advances = {name: (lambda k, run=run, s=states[name]: run(*s, *params, k))
                for name, run in ways.items()}
    N = np.zeros((1, d))
    advances.update({name: (lambda k, run=run: run(N, 1.0, np.uint64(7), n, k))
                     for name, run in draws.items()})
    for advance in advances.values():
        advance(1)
    secs, _ = common.interleaved_timings(advances, dict.fromkeys(advances, reps), args.repeats)
    ref = statistics.median(secs["draw, then update"])
    table = []
    for name, s in secs.items():
        per = n * d * 1e-9
        med = statistics.median(s)
        table.append([name, f"{med / per:.3f} ({min(s) / per:.3f})",
                      f"{ref / med:.2f}x" if name in ways else "-"])
    print(common.machine_line(common.machine_info()) + f"numba {numba.__version__}\n")
    print(common.markdown_table(["way", "ns / element", "draw, then update / it"], table))
    print(f"\nGT's Setup A row on a ring of n = {n}, d = {d}, float64, 1 thread; median (min) "
          f"of {args.repeats} interleaved repeats of {reps} steps; the same bits checked "
          "first (states after a step, and the two draws' rows).")


if __name__ == "__main__":
    main()
