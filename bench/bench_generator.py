"""The normal generator's transform: would lower-degree polynomials or another loop pay?

    python bench/bench_generator.py [--d 96] [--rows 100000] [--repeats 9]
    python bench/bench_generator.py --tail [--d 10,20,50,100] [--rows 100000] [--repeats 9]

Rows of d normals (whole groups of 16 coordinates), 1 thread, cache resident, several ways
in the same process, taking turns in every repeat:

- fastgt: kernels/rng.py's fill_normals, called per row (whole groups by draw_group: a
  group's 8 pairs as explicit vectors);
- fastgt, inlined: fill_padded compiled into the bench's row loop, as the steps draw (no
  call per row);
- pairs' loop, inlined: a loop over a group's 8 pairs of the scalar pair (normal_pair's
  parts), which LLVM vectorizes (fastgt's draw until 2026-11-28), compiled into the row
  loop as the variants below are: the variants' reference;
- 4-pair bodies: the same bits (checked), the row as one loop over vectors of 4 pairs
  (one 256-bit vector of doubles) with the counter advanced by addition, where the pairs'
  loop body holds a group's 8 pairs (twice the live values: LLVM spills some);
- 4-term sin/cos: the pairs' loop, sin and cos by 4-term polynomials in the phase lattice's
  own variable (Chebyshev-economized like rng's 6-term ones; their error bound is printed
  beside the lattice's step): other bits, the same distribution up to that error;
- both;
- float32 rows: fill_normals into float32 rows, which draws them by rng.pair32 (the same
  pairs in float32 arithmetic, what a float32 state's steps draw; within 8 · 2^-24 of
  the pair's radius of the exact values).

Reports ns per normal (median and min) and fastgt / variant (> 1: the variant is faster).

Issue 18's item 3 asked for a cheaper transform on CPUs with a 256-bit datapath; a change
of bits needs a second, selectable stream and every theory check run again, so a variant
has to pay for that here and, above all, in whole steps (bench_steps.py --against), where
the draw is one part of a row's update.

--tail: rows of d normals for any d, as the step kernels drew them before 2026-11-27
(fill_normals, called per row, into rows d wide: a partial last group pair by pair)
against as they draw them now (fill_padded, inlined, into rows of whole groups: the
partial group whole, zeros past d), the values at coordinates < d checked equal; ns per
row and called / inlined.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from fractions import Fraction
from math import factorial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common

#: polynomial terms of the lower-degree variant's sin and cos
LOW_TERMS = 4
#: the way that draws into float32 rows, and the pairs' loop compiled in the bench
FLOAT32, GROUPS = "float32 rows", "pairs' loop, inlined"


def low_degree():
    """sin(f pi/2) / f and cos(f pi/2) in z = f^2, |f| <= 1/2, LOW_TERMS terms each (their
    coefficients, and the largest error bound of the two)."""
    from fastgt.kernels.rng import HALF_PI, SERIES_TERMS, economized

    hp = Fraction(HALF_PI)
    sin = [Fraction((-1) ** j, factorial(2 * j + 1)) * hp ** (2 * j + 1)
           for j in range(SERIES_TERMS)]
    cos = [Fraction((-1) ** j, factorial(2 * j)) * hp ** (2 * j) for j in range(SERIES_TERMS)]
    (S, es), (C, ec) = (economized(c, Fraction(1, 4), LOW_TERMS) for c in (sin, cos))
    return S, C, max(es, ec)


def per_row(fill):
    """A compiled loop drawing ``count`` rows by ``fill`` (a row's draw, called or inlined),
    row i from the key's row i, into the rows of ``out`` in turn."""
    from numba import njit

    from fastgt.config import NJIT_FLAGS
    from fastgt.kernels import rng as R

    @njit(**NJIT_FLAGS)
    def draw(out, count, key, scale, d):
        for i in range(count):
            fill(R.row_key(key, i), out, i % out.shape[0], scale, d)
    return draw


def kernels(S, C):
    from numba import njit

    from fastgt.config import NJIT_FLAGS, SCALAR_FLAGS
    from fastgt.kernels import rng as R

    def pair_of(low):
        @njit(**SCALAR_FLAGS)
        def pair(c, scale):
            u1, q, frac = R.pair_uniforms(R.mix64(c))
            if low:
                sn, cs = frac * R._poly4(frac * frac, S), R._poly4(frac * frac, C)
            else:
                sn, cs = R.sin_cos(frac)
            return R.rotated(R.radius(u1, scale), q, sn, cs)
        return pair

    def groups(pair):  # fill_normals' loop, whole groups only
        @njit(**NJIT_FLAGS)
        def fill(rkey, out, r, scale, d):
            G = 2 * R.PAIRS
            for g in range(d // G):
                for j in range(R.PAIRS):
                    z0, z1 = pair(rkey + np.uint64(R.PAIRS * g + j + 1) * R.GOLDEN, scale)
                    out[r, G * g + j] = z0
                    out[r, G * g + R.PAIRS + j] = z1
        return fill

    lanes_golden = np.uint64(4 * int(R.GOLDEN) % 2**64)

    def vectors(pair):  # one loop over vectors of 4 pairs
        @njit(**NJIT_FLAGS)
        def fill(rkey, out, r, scale, d):
            G = 2 * R.PAIRS
            c = rkey + R.GOLDEN
            for v in range(d // G * 2):
                k = (v // 2) * G + (v % 2) * 4
                for j in range(4):
                    z0, z1 = pair(c + np.uint64(j) * R.GOLDEN, scale)
                    out[r, k + j] = z0
                    out[r, k + R.PAIRS + j] = z1
                c += lanes_golden
        return fill

    exact, cheap = pair_of(False), pair_of(True)
    return {"fastgt": per_row(R.fill_normals), "fastgt, inlined": per_row(R.fill_padded),
            GROUPS: per_row(groups(exact)),
            "4-pair bodies": per_row(vectors(exact)), "4-term sin/cos": per_row(groups(cheap)),
            "both": per_row(vectors(cheap)), FLOAT32: per_row(R.fill_normals)}


def tail(args) -> None:
    """--tail (module doc)."""
    import numba

    from fastgt.kernels import rng as R

    ways = {"called": per_row(R.fill_normals), "inlined": per_row(R.fill_padded)}
    numba.set_num_threads(1)
    key, table = np.uint64(7), []
    for d in args.d:
        rows = {"called": np.zeros((16, d)), "inlined": np.zeros((16, -(-d // 16) * 16))}
        for k, out in rows.items():
            ways[k](out, 16, key, 1.0, d)
        if not np.array_equal(rows["called"], rows["inlined"][:, :d]):
            raise SystemExit(f"d = {d}: the two ways' values differ")
        secs = {k: [] for k in rows}
        for _ in range(args.repeats):
            for k, out in rows.items():
                t = time.perf_counter()
                ways[k](out, args.rows, key, 1.0, d)
                secs[k].append((time.perf_counter() - t) / args.rows * 1e9)
        med = {k: statistics.median(v) for k, v in secs.items()}
        table.append([str(d), *(f"{med[k]:.1f} ({min(secs[k]):.1f})" for k in rows),
                      f"{med['called'] / med['inlined']:.2f}x"])
    print(common.machine_line(common.machine_info()) + f"numba {numba.__version__}\n")
    print(common.markdown_table(["d", "fill_normals called ns / row",
                                 "fill_padded inlined ns / row", "called / inlined"], table))
    print(f"\n{args.rows} rows per block, median (min) of {args.repeats} interleaved "
          "repeats, 1 thread; the same values at coordinates < d.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", default=None,
                    help="coordinates per row: a multiple of 16 (default 96); --tail: a "
                         "comma list (default 10,20,50,100)")
    ap.add_argument("--rows", type=int, default=100_000, help="rows per timed block")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--tail", action="store_true",
                    help="any d: fill_normals called against fill_padded inlined")
    args = ap.parse_args()
    if args.rows < 1 or args.repeats < 1:
        raise SystemExit("--rows and --repeats must be at least 1")
    if args.tail:
        try:
            args.d = [int(v) for v in (args.d or "10,20,50,100").split(",")]
        except ValueError:
            raise SystemExit(f"--d must be a comma list of positive integers, not {args.d}")
        if min(args.d) < 1:
            raise SystemExit(f"--d must be positive integers, not {args.d}")
        tail(args)
        return
    try:
        args.d = int(args.d or 96)
    except ValueError:
        raise SystemExit(f"--d must be a positive multiple of 16, not {args.d}")
    if args.d % 16 or args.d < 16:
        raise SystemExit(f"--d must be a positive multiple of 16, not {args.d}")

    import numba

    from fastgt.kernels import rng as R

    numba.set_num_threads(1)
    S, C, err = low_degree()
    ways = kernels(S, C)
    key, scale = np.uint64(7), 0.75  # scale a variable, as in a step (not folded away)
    dtype = {k: np.float32 if k == FLOAT32 else np.float64 for k in ways}
    outs = {k: np.zeros((64, args.d), dtype[k]) for k in dtype}
    for k, draw in ways.items():
        draw(outs[k], 64, key, scale, args.d)
    ref = outs["fastgt"]
    for a, b in (("fastgt, inlined", "fastgt"), ("4-pair bodies", "fastgt"), (GROUPS, "fastgt"),
                 ("both", "4-term sin/cos")):
        if not np.array_equal(outs[a], outs[b]):  # the loops draw the same values
            raise SystemExit(f"{a}: not the bits of {b}")
    diff = {k: float(np.abs(outs[k] - ref).max()) for k in ways}
    outs = {k: np.zeros((16, args.d), dtype[k]) for k in ways}  # 16 rows a way: in cache
    secs = {k: [] for k in ways}
    for _ in range(args.repeats):
        for k, draw in ways.items():
            t = time.perf_counter()
            draw(outs[k], args.rows, key, scale, args.d)
            secs[k].append((time.perf_counter() - t) / (args.rows * args.d) * 1e9)
    med = {k: statistics.median(v) for k, v in secs.items()}
    table = [[k, f"{med[k]:.3f} ({min(v):.3f})", f"{med['fastgt'] / med[k]:.2f}x",
              "same" if diff[k] == 0 else f"{diff[k]:.1e}"] for k, v in secs.items()]
    print(common.machine_line(common.machine_info()) + f"numba {numba.__version__}\n")
    print(common.markdown_table(["transform", "ns / normal", "fastgt / it", "max |diff|"], table))
    step = np.pi / 2 * 2.0**-22
    print(f"\nd = {args.d}, {args.rows} rows per block, median (min) of {args.repeats} "
          f"interleaved repeats, 1 thread. {LOW_TERMS}-term sin/cos: error bound {err:.1e} "
          f"(the phase lattice's step: {step:.1e} rad; fastgt's {R.TERMS}-term polynomials: "
          f"{max(R.SIN_ERR, R.COS_ERR):.1e}).")


if __name__ == "__main__":
    main()
