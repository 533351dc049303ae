"""Branches of the transformations (``refimpl/transforms/``) and of the AD
helpers the other families leave untaken (found with
``tools/conformance_coverage.py``), as programs through the public API
judged against JAX (recorded):

* ``transform.edges/conversion/*``: Python conversions of a value being
  differentiated outside ``jit`` (``jvp``/``grad``): ``bool()``, ``int()``,
  indexing and ``item()`` use the known primal; ``float()``, ``complex()`` and
  ``tolist()`` raise ``ConcretizationTypeError`` even so, as JAX 0.10.2
  (refimpl computed with the primal: found by this family);
* ``transform.edges/no_jvp_rule/*``: differentiating a primitive without a
  derivative rule (``nextafter``; ``pmax`` under a named ``vmap``) is JAX's
  ``NotImplementedError`` naming it (its message, as ``Raises``);
* ``transform.edges/grad_identity/*``: ``grad`` of the identity of a NumPy
  scalar or array (the cotangent seed for an output that is a NumPy value);
* ``transform.edges/with_refs/*``: ``vjp``'s ``pullback.with_refs`` with a Ref
  and a plain value (``GradRef()`` for the first, the cotangent for the second);
* ``transform.edges/vmap_sizes/*``: ``vmap``'s inconsistent-sizes error of a
  function without a signature (a builtin: the arguments are ``args[i]``)
  and with a leaf that is no array (its message, as ``Raises``);
* ``transform.edges/size1_broadcast/*``: ``lax`` elementwise ops broadcast a
  size-1 dim of an operand of the same rank (``(1, 3)`` with ``(2, 3)``, as
  JAX 0.10.2): their tangents (``jvp``) and cotangents (``grad``, summed over
  the broadcast dim), eagerly and under ``jit``;
* ``transform.edges/preferred_element_type/*``: ``grad`` of a bfloat16
  ``dot_general``/``dot`` accumulated in float32 (the cotangents come back
  in bfloat16), eagerly and under ``jit``;
* ``mask.edges/*`` (refimpl only: JAX has no ``mask``; NumPy values and the
  error words of docs/semantics.md): symbolic dims under floor division --
  a stride-2 slice of ``2*n + 2`` elements is ``n + 1`` (an exact quotient),
  a stride-4 slice of ``2*n + 1`` is ``n//2 + 1`` (named in the output
  check's message), and a reshape whose valid elements make no whole rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.observe import Raises

TAGS = ("transforms",)

# name -> f(x); differentiated at x = 2.0 (a Python float) and x = float32(2)
CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "bool": lambda x: x * 3 if x else x,
    "int": lambda x: x * int(x),
    "index": lambda x: x * [1.0, 2.0, 3.0][int(x)],
    "item": lambda x: x * x.item(),
    "float": lambda x: x * float(x),
    "complex": lambda x: x * complex(x).real,
    "tolist": lambda x: x * x.tolist(),
}


def _conversion(name: str, how: str) -> Any:
    f = CONVERSIONS[name]

    def script(ns: Any) -> Any:
        api = ns.api
        x = 2.0 if how == "python" else ns.asarray(np.float32(2.0))
        if how == "grad":
            return ns.capture(api.grad(f), x)
        return ns.capture(lambda: api.jvp(f, (x,), (1.0 if how == "python" else x,)))

    return script


X3 = np.array([0.5, -1.0, 2.0], np.float32)


def _no_jvp_rule(which: str) -> Any:
    def script(ns: Any) -> Any:
        api, L = ns.api, ns.lax_
        x = ns.asarray(X3)
        if which == "nextafter_grad":
            return api.grad(lambda v: L.nextafter(v, np.float32(1.0)).sum())(x)
        if which == "nextafter_jvp":
            return api.jvp(lambda v: L.nextafter(v, v), (x,), (x,))
        return api.vmap(api.grad(lambda v: L.pmax(v, "i")), axis_name="i")(x)

    return script


def _grad_identity(value: Any) -> Any:
    def script(ns: Any) -> Any:
        return ns.api.grad(lambda v: v)(value)

    return script


def _with_refs(ns: Any) -> Any:
    api = ns.api
    x = ns.asarray(X3)
    _, pullback = api.vjp(lambda a, b: a * b, x, x + 1.0)
    acc = api.new_ref(ns.np_.zeros(3, np.float32))
    got = pullback.with_refs(acc, 0.0)(ns.np_.ones(3, np.float32))
    return {"first": repr(got[0]), "second": got[1], "ref": api.freeze(acc)}


def _vmap_sizes(which: str) -> Any:
    def script(ns: Any) -> Any:
        x3, y4 = ns.asarray(np.ones(3, np.float32)), ns.asarray(np.ones(4, np.float32))
        if which == "builtin_function":
            return ns.api.vmap(max)(x3, y4)
        return ns.api.vmap(lambda a, b, c: a + b, in_axes=(0, 0, None))(x3, y4, object())

    return script


X8 = np.arange(8, dtype=np.float32)


def _masked(fun: Callable[..., Any], in_spec: str, out_spec: str, n: int) -> Any:
    def script(ns: Any) -> Any:
        out = ns.mask(fun, [in_spec], out_spec)([ns.asarray(X8)], {"n": n})
        return np.asarray(ns.to_numpy(out))

    return script


MASKED = [
    ("floordiv_exact", lambda x: x[::2], "(2*n + 2,)", "(n + 1,)", 3, X8[::2]),
    ("floordiv_in_message", lambda x: x[::4], "(2*n + 1,)", "(n,)", 3,
     Raises(TypeError, r"logical shape \(n//2 \+ 1,\) \(padded \(2,\)\)")),
    ("reshape_no_whole_rows", lambda x: x.reshape(-1, 2), "(n,)", "(n//2, 2)", 4,
     Raises(NotImplementedError, r"valid elements \(n\) do not make whole rows")),
]  # fmt: skip


ROW = np.array([[0.5, -1.0, 2.0]], np.float32)
GRID = np.arange(6, dtype=np.float32).reshape(2, 3)
SIZE1: dict[str, Callable[[Any], Any]] = {
    "grad_mul": lambda ns: ns.api.grad(lambda a, b: ns.lax_.mul(a, b).sum(), argnums=(0, 1)),
    "grad_div": lambda ns: ns.api.grad(lambda a, b: ns.lax_.div(a, b + 1).sum(), argnums=(0, 1)),
    "jit_grad_add": lambda ns: ns.jit(
        ns.api.grad(lambda a, b: ns.lax_.add(a, b).sum(), argnums=(0, 1))
    ),
    "jvp_add": lambda ns: lambda a, b: ns.api.jvp(ns.lax_.add, (a, b), (a, b)),
    "jvp_sub": lambda ns: lambda a, b: ns.api.jvp(ns.lax_.sub, (a, b), (a, b)),
    "jvp_mul": lambda ns: lambda a, b: ns.api.jvp(ns.lax_.mul, (a, b), (a, b)),
}


def _preferred(jit: bool) -> Any:
    def script(ns: Any) -> Any:
        bf16 = np.dtype("bfloat16")
        a = ns.asarray(np.array([[0.5, -1.0], [2.0, 1.5]], np.float32).astype(bf16))
        b = ns.asarray(np.array([[1.0, 2.0], [3.0, -0.5]], np.float32).astype(bf16))
        if jit:
            f = lambda x, y: ns.lax_.dot(x, y, preferred_element_type=np.float32).sum()  # noqa: E731
            return ns.jit(ns.api.grad(f, argnums=(0, 1)))(a, b)
        dims = (((1,), (0,)), ((), ()))
        g = lambda x, y: ns.lax_.dot_general(x, y, dims, preferred_element_type=np.float32)  # noqa: E731
        return ns.api.grad(lambda x, y: g(x, y).sum(), argnums=(0, 1))(a, b)

    return script


def _size1(name: str) -> Any:
    def script(ns: Any) -> Any:
        return SIZE1[name](ns)(ns.asarray(ROW), ns.asarray(GRID))

    return script


def cases() -> Iterator[Case]:
    for name in CONVERSIONS:
        for how in ("python", "array", "grad"):
            yield script_case(f"transform.edges/conversion/{name}/{how}",
                              _conversion(name, how), expect=AGREE, tags=TAGS)  # fmt: skip
    for which in ("nextafter_grad", "nextafter_jvp", "pmax_named_vmap_grad"):
        prim = "pmax" if which.startswith("pmax") else "nextafter"
        missing = Raises(NotImplementedError, f"Differentiation rule for '{prim}' not implemented")
        yield script_case(f"transform.edges/no_jvp_rule/{which}", _no_jvp_rule(which),
                          expect=missing, tags=TAGS)  # fmt: skip
    for label, value in (("numpy_scalar", np.float32(2.0)),
                         ("numpy_array", np.array(2.0, np.float32))):  # fmt: skip
        yield script_case(f"transform.edges/grad_identity/{label}", _grad_identity(value),
                          expect=AGREE, tags=TAGS)  # fmt: skip
    for which, key in (("builtin_function", r"axis 0 of args\[1\] of type float32\[4\]"),
                       ("object_leaf", r"axis 0 of argument b of type float32\[4\]")):  # fmt: skip
        yield script_case(f"transform.edges/vmap_sizes/{which}", _vmap_sizes(which),
                          expect=Raises(ValueError, key), tags=TAGS)  # fmt: skip
    for name in SIZE1:
        yield script_case(f"transform.edges/size1_broadcast/{name}", _size1(name),
                          expect=AGREE, tags=TAGS)  # fmt: skip
    for label, jit in (("dot_general_grad", False), ("jit_dot_grad", True)):
        yield script_case(f"transform.edges/preferred_element_type/{label}", _preferred(jit),
                          expect=AGREE, tags=TAGS)  # fmt: skip
    for name, fun, in_spec, out_spec, n, expect in MASKED:
        yield script_case(f"mask.edges/{name}", _masked(fun, in_spec, out_spec, n),
                          expect=expect, requires=("mask",), tags=("masking",))  # fmt: skip
    yield script_case("transform.edges/with_refs/ref_and_value", _with_refs, expect=AGREE,
                      tags=TAGS + ("ref",))  # fmt: skip
