"""Refs made outside a body that cannot thread them (SPEC "Ref"; JAX 0.10.2's
behaviour, docs/semantics.md section 5 "Constructs that cannot thread refs").

pmap refuses a closed-over ref, linear_transpose a write to one (both are
errors in JAX too, worded differently); linear_transpose captures a read when
the transpose is made; a compiled jit threads closed-over refs; eval_shape
runs no write; a while cond_fun's writes under jit; jacfwd's vmap error.
Values are checked against NumPy formulas, errors against each one's words.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case
from conformance.corpus.ref import _api
from conformance.observe import Raises

TAGS = ["ref", "ref_escape"]
X = np.array([0.5, 1.0, 2.0], np.float32)
TWOS = np.full(3, 2, np.float32)


def _pmap_closed_over_write(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def w(x):
        r[...] = r[...] + x
        return x

    return api.pmap(w)(X[None])


def _linear_transpose_reads(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)
    t = api.linear_transpose(lambda x: x * r[...], X)
    r[...] = np.full(3, 5, np.float32)
    return {"ct": t(X)[0], "r": api.freeze(r)}


def _linear_transpose_writes(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def f(x):
        r[...] = x * 3.0
        return x * 2.0

    return api.linear_transpose(f, X)(X)


def _compiled_threads_refs(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def f(x):
        r[...] = r[...] + x
        return x * 2 + r[...]

    compiled = ns.jit(f).lower(X).compile()
    r[...] = np.full(3, 5, np.float32)
    first = compiled(X)
    return {"first": first, "second": compiled(X), "r": api.freeze(r)}


def _eval_shape_no_write(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def f(x):
        r[...] = r[...] + x
        return x * 2.0

    shape = api.eval_shape(f, X).shape
    return {"shape": np.array(shape, np.int64), "r": api.freeze(r)}


def _while_cond_writes_in_jit(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def cond(c):
        r[...] = r[...] + 1.0
        return c < 3

    n = ns.jit(lambda: ns.lax_.while_loop(cond, lambda c: c + 1, np.int32(0)))()
    return {"n": n, "r": api.freeze(r)}


def _jacfwd_writes(ns: Any) -> Any:
    api = _api(ns)
    r = api.new_ref(TWOS)

    def f(x):
        r[...] = r[...] + 1.0
        return (ns.np_.sin(x) * r[...]).sum()

    return api.jacfwd(f)(X)


def cases() -> Iterator[Case]:
    f32 = np.float32
    yield script_case("ref.escape/error-pmap-closed-over-write", _pmap_closed_over_write,
                      tags=TAGS, expect=Raises(Exception, {
                          "jax": "'AbstractRef' object has no attribute 'nospec'",
                          "*": r"pmap\(w\): the function reads or writes a mutable array "
                               r"reference made outside it"}))  # fmt: skip
    yield script_case("ref.escape/linear-transpose-reads-at-definition",
                      _linear_transpose_reads, tags=TAGS,
                      expect={"ct": 2 * X, "r": np.full(3, 5, f32)})  # fmt: skip
    yield script_case("ref.escape/error-linear-transpose-writes", _linear_transpose_writes,
                      tags=TAGS, expect=Raises(Exception, {
                          "jax": "'Ref' object has no attribute 'ref'",
                          "*": "linear_transpose of 'f': the function writes a mutable "
                               "array reference"}))  # fmt: skip
    yield script_case("ref.escape/compiled-threads-closed-over-ref", _compiled_threads_refs,
                      tags=TAGS, expect={"first": 2 * X + 5 + X, "second": 2 * X + 5 + 2 * X,
                                         "r": 5 + 2 * X})  # fmt: skip
    yield script_case("ref.escape/eval-shape-runs-no-write", _eval_shape_no_write, tags=TAGS,
                      expect={"shape": np.array([3], np.int64), "r": TWOS})  # fmt: skip
    yield script_case("ref.escape/while-cond-writes-closed-over-in-jit",
                      _while_cond_writes_in_jit, tags=TAGS,
                      expect={"n": np.int32(3), "r": np.full(3, 5, f32)})  # fmt: skip
    yield script_case("ref.escape/error-jacfwd-writes-outer-ref", _jacfwd_writes, tags=TAGS,
                      expect=Raises(Exception, "set/swap operation with vmapped value on an "
                                               "unbatched array reference"))  # fmt: skip
