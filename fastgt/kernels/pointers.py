"""Compiled functions handed to other compiled functions by address (numba's first-class
function type), so that one compiled caller serves many callees of one signature.

The caller is then compiled once, not once per callee, and without the callee's machine
code linked into it: numba links a directly called function's code into its caller and
LLVM optimizes it again there, which made the parallel step driver (steps.run_steps)
cost 6-7 s of compile per copy (measured: docs/engine.md). A pointer's type is its
signature, with no address in it, so the caller's disk cache hits in every process (a
dispatcher passed as an argument has a type holding its address: a cache miss per
process; closures over one are not cached at all, numba issue 6264).

A call through a pointer goes through numba's C wrapper of the function, which prints an
exception raised inside and returns as if nothing happened: a function called this way
must not raise (fastgt's block functions only index arrays, with numba's default of no
bounds checks, and allocate nothing).
"""

from __future__ import annotations

import warnings

from numba import types
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.core.types.function_type import FunctionType

# numba marks the first-class function type experimental; fastgt's tests cover every
# pointer it makes (tests/kernels, tests/api/test_warmup.py)
warnings.filterwarnings("ignore", category=NumbaExperimentalFeatureWarning,
                        message="First-class function type")


class Pointer:
    """A compiled overload as a first-class function value. numba reads its type from
    ``_numba_type_`` (computed once: a per-call numba.typeof of a function object costs
    tens of microseconds, per advance of a run) and calls it at ``__wrapper_address__``
    (the compile result is kept: it owns the machine code)."""

    def __init__(self, cres):
        self.cres = cres
        self.address = cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)
        self._numba_type_ = FunctionType(cres.signature)

    def __wrapper_address__(self) -> int:
        return self.address


def pointer(fn, argtypes: tuple) -> Pointer:
    """The jitted function ``fn`` compiled (or loaded from the cache; numba keeps it after
    the first call) for ``argtypes``, returning nothing, as a first-class function value.
    Callers keep the pointer (algorithms.base.Batch.pointers): finding the types is the
    slow part."""
    fn.compile(types.void(*argtypes))
    return Pointer(fn.overloads[argtypes])
