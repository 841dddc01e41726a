"""Kernels compiled per problem family: templates with the problem's hooks bound.

A *template* is a plain function (marked by ``template``) that calls the problem's hooks
by global name (``grad_row``, ``DIAGONAL``: their contract in kernels/oracles.py). Given a
problem family's hooks, ``specialize`` copies the templates into fresh function objects
whose globals bind every hook name to the family's implementation and every template name
to its own copy, and njit-compiles the copies with the flags each template was marked with.

Why this mechanism (each alternative was measured first, issue 14):

- the copies are ordinary top-level functions: numba's disk cache hits across processes
  (each copy has its own qualified name, ``<name>_<tag>``, hence its own cache index). A
  closure over the hooks would not be cached (numba issue 6264); a jitted function as an
  argument of a cached signature carries an address in its type (a miss per process);
- a hook bound as a global is a compile-time constant: ``if DIAGONAL:`` is pruned before
  typing, so a template's fast path for diagonal quadratics costs other problems nothing
  (not even typing), and the inlined hooks leave one loop per row, as if written in place;
- numba's ``@overload`` dispatch on the oracle bundle's type also caches, but its typing
  added 2.5-4 s to the cold compile of every block function (branch oracle-hooks).
"""

from __future__ import annotations

import types as pytypes

from numba import njit

from . import fastgt_cache


def template(**flags):
    """Decorator: mark a plain function as a template, compiled by ``specialize`` with
    ``flags`` (e.g. config.BLOCK_FLAGS, or INLINE_FLAGS for a row update)."""

    def mark(fn):
        fn.__njit_flags__ = flags
        return fn

    return mark


def specialize(tag: str, templates: tuple, hooks: dict) -> pytypes.SimpleNamespace:
    """Compiled copies of ``templates`` with ``hooks`` (name -> value) bound in each, and
    each template's name bound to its copy; the namespace holds the copies by name.
    Compiles lazily: numba compiles (or loads from fastgt's cache) a copy on its first call."""
    copies, scopes = {}, []
    with fastgt_cache():
        for fn in templates:
            scope = dict(fn.__globals__, **hooks)
            scopes.append(scope)
            body = pytypes.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                        fn.__closure__)
            body.__qualname__ = f"{fn.__qualname__}_{tag}"
            body.__module__, body.__doc__ = fn.__module__, fn.__doc__
            copies[fn.__name__] = njit(**fn.__njit_flags__)(body)
    for scope in scopes:  # before any compile: a copy calls the other copies
        scope.update(copies)
    return pytypes.SimpleNamespace(**copies)
