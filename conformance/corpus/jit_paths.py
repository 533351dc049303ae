"""jit's paths the other families leave untaken (found with
``tools/conformance_coverage.py``), each against JAX (recorded):

* calls with Ref arguments repeated with the same types (on pjrt, with a
  host callback in the program, the Python jit's memoized quick path), the
  same ref passed twice after such calls (the quick path hands it to the full
  checks), a ref passed and closed over;
* float0 arguments given directly, eagerly and under another trace;
* ``ShapeDtypeStruct`` results of ``eval_shape`` (ndim, size, equality,
  hash, repr) and one passed where a value is needed;
* a jitted function as a method, ``clear_cache``;
* arguments the program does not read (pruned from the pjrt executable, as
  JAX's), a donated one after them, an unread donated one;
* the argument checks of ``jit`` (static/donated numbers and names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

_R = np.random.default_rng(3637)
X = _R.standard_normal((2, 3)).astype(np.float32)


def _case(name: str, script: Callable[[Any], Any]) -> Case:
    return script_case(f"jit.paths/{name}", script, expect=AGREE)


def _refs(ns: Any) -> Any:
    api = ns.api
    if not hasattr(api, "new_ref"):
        raise Unsupported(f"{ns.name} has no new_ref")
    return api


def _host_copy(api: Any, y: Any) -> Any:
    """``y`` through a host callback: on pjrt the C++ fast path leaves such
    a program (with Ref arguments) to the Python jit, which memoizes it."""
    return api.pure_callback(
        lambda v: np.asarray(v).copy(), api.ShapeDtypeStruct(y.shape, y.dtype), y
    )


def _ref_repeated(callback: bool) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        """Four calls with the same argument types: each reads and writes the
        ref (values must not be stale), the last with a NumPy array."""
        api = _refs(ns)
        r = api.new_ref(ns.asarray(X))

        def step(r: Any, y: Any) -> Any:
            old = r[...]
            r[...] = old * 2 + (_host_copy(api, y) if callback else y)
            return old.sum()

        f = ns.jit(step)
        outs = [f(r, ns.asarray(X + k)) for k in range(3)]
        outs.append(f(r, X - 1))
        return outs, api.freeze(r)

    return script


def _ref_repeated_then_twice(ns: Any) -> Any:
    """After calls that memoize, the same ref passed twice is still an error."""
    api = _refs(ns)
    r = api.new_ref(ns.asarray(X))
    f = ns.jit(lambda a, b: _host_copy(api, a[...]) + b[...])
    s = api.new_ref(ns.asarray(X))
    first = [f(r, s), f(r, s)]
    return first, ns.capture(f, r, r)


def _ref_repeated_then_closed_over(ns: Any) -> Any:
    """A ref passed that the function also closes over is an error, also after
    calls with other refs (a function closing over a ref it reads is never
    memoized for the quick path: each call takes the full checks)."""
    api = _refs(ns)
    if ns.name == "jax":
        # its cached trace skips the check: XLA refuses to donate one buffer twice
        raise Unsupported("JAX 0.10.2 checks this when it traces only (a RuntimeError here)")
    r = api.new_ref(ns.asarray(X))
    s = api.new_ref(ns.asarray(X * 2))
    t = api.new_ref(ns.asarray(X * 3))

    def g(a: Any) -> Any:
        return _host_copy(api, a[...]) + r[...]

    f = ns.jit(g)
    return [f(s), f(t)], f(r)


def _ref_no_outputs(ns: Any) -> Any:
    """A step returning nothing, called repeatedly."""
    api = _refs(ns)
    r = api.new_ref(ns.asarray(X))

    def bump(r: Any, y: Any) -> None:
        r[...] = r[...] + y

    f = ns.jit(bump)
    outs = [f(r, ns.asarray(X)) for _ in range(3)]
    return [o is None for o in outs], api.freeze(r)


def _float0_direct(ns: Any) -> Any:
    api = ns.api
    zero = np.zeros((3,), api.dtypes.float0)
    f = ns.jit(lambda x, t: (x * 2, t))
    out, t = f(ns.asarray(X), zero)
    again, t2 = f(ns.asarray(X + 1), zero)
    return out, again, [t.shape, str(t.dtype), t2.shape]


def _float0_under_vmap(ns: Any) -> Any:
    api = ns.api
    zero = np.zeros((3,), api.dtypes.float0)
    f = ns.jit(lambda x, t: x * 3)
    return api.vmap(lambda x: f(x, zero))(ns.asarray(X))


def _float0_donated(ns: Any) -> Any:
    api = ns.api
    zero = np.zeros((2,), api.dtypes.float0)
    f = ns.jit(lambda x, t, y: x + y, donate_argnums=(0,))
    x = ns.asarray(X)
    out = f(x, zero, ns.asarray(X))
    return out, ns.is_deleted(x)


def _float0_with_struct(ns: Any) -> Any:
    """A ShapeDtypeStruct next to a float0 argument: still no value to run on."""
    api = ns.api
    zero = np.zeros((2,), api.dtypes.float0)
    return ns.capture(ns.jit(lambda x, t: x), api.ShapeDtypeStruct((3,), np.float32), zero)


def _lower_compile(ns: Any) -> Any:
    f = ns.jit(lambda x, y: x * 2 + y)
    compiled = f.lower(ns.asarray(X), 1.0).compile()
    return compiled(ns.asarray(X), 1.0), compiled(ns.asarray(X + 1), 2.0)


def _static_types(ns: Any) -> Any:
    """Static values equal across types (1, 1.0, True) are separate traces."""
    count = [0]

    def f(x: Any, n: Any) -> Any:
        count[0] += 1
        return x * n

    g = ns.jit(f, static_argnums=1)
    outs = [g(ns.asarray(X), 1), g(ns.asarray(X), 1.0), g(ns.asarray(X), True), g(ns.asarray(X), 1)]
    return outs, count[0]


class _Incomparable:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise ValueError("cannot compare")


def _static_not_comparable(ns: Any) -> Any:
    h = ns.jit(lambda x, b: x * 2, static_argnums=1)
    first = h(ns.asarray(X), _Incomparable())
    return first, ns.capture(h, ns.asarray(X), _Incomparable())


def _structs(ns: Any) -> Any:
    api = ns.api
    s = ns.eval_shape(lambda x: x * 2, ns.asarray(X))
    t = ns.eval_shape(lambda x: x.sum(), ns.asarray(X))
    w = ns.eval_shape(lambda: 1.5)
    u = api.ShapeDtypeStruct((2, 3), np.float32)
    return [
        s.ndim, s.size, t.ndim, t.size, s == u, s == t, hash(s) == hash(u), repr(s), repr(w),
        s.shape, str(s.dtype), w.weak_type,
    ]  # fmt: skip


def _struct_as_value(ns: Any) -> Any:
    api = ns.api
    f = ns.jit(lambda x: x + 1)
    return ns.capture(f, api.ShapeDtypeStruct((2, 3), np.float32))


def _method(ns: Any) -> Any:
    jit = ns.jit

    class Scale:
        def __init__(self, k: float) -> None:
            self.k = k

        def __hash__(self) -> int:
            return hash(self.k)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Scale) and other.k == self.k

        apply = jit(lambda self, x: x * self.k, static_argnums=0)

    a, b = Scale(2.0), Scale(3.0)
    return [a.apply(ns.asarray(X)), b.apply(ns.asarray(X)), Scale.apply(a, ns.asarray(X))]


def _clear_cache(ns: Any) -> Any:
    f = ns.jit(lambda x: x * 2)
    f(ns.asarray(X))
    f(ns.asarray(X))
    before = ns.trace_count(f)
    f.clear_cache()
    out = f(ns.asarray(X))
    return out, before, ns.trace_count(f)


def _struct_list(tree: Any, api: Any) -> list[Any]:
    return [(tuple(s.shape), str(s.dtype)) for s in api.tree_util.tree_leaves(tree)]


def _eval_shape_duck_typed(ns: Any) -> Any:
    """eval_shape of an object with ``shape`` and ``dtype`` (read as a struct)."""

    class Spec:
        shape = (2, 3)
        dtype = np.dtype(np.float32)

    out = ns.eval_shape(lambda x, y: (x.sum(0), x * y), Spec(), 2)
    return _struct_list(out, ns.api)


def _trace_out_info_with_refs(ns: Any) -> Any:
    """``trace(...).out_info`` of a function with a Ref argument: the
    function's outputs only (not the ref's final value)."""
    api = _refs(ns)
    r = api.new_ref(ns.asarray(X[0]))

    def g(r: Any, y: Any) -> Any:
        r[...] = r[...] + y
        return y * 2, y.sum()

    traced = ns.jit(g).trace(r, ns.asarray(X[1]))
    return _struct_list(traced.out_info, api)


def _static_argnames_none(ns: Any) -> Any:
    return ns.api.jit(_two, static_argnames=None, donate_argnames=None)(ns.asarray(X), 1.0)


MISS_LINES = [
    "argument x: shape changed from (2, 3) to (3,)",
    "argument x: dtype changed from float32 to int32",
    "argument x: weak_type changed from False to True",
    "static argument n changed from 2 to 3",
    "tree structure of the arguments changed",
    "the static arguments changed (which ones, or positional vs keyword)",
    "enable_x64 changed from False to True",
    "backend changed from",
]


def _explain_misses(ns: Any) -> Any:
    """refimpl's cache-miss explanations (``explain_cache_misses``): one
    logged line per retrace naming the first difference from the closest
    earlier signature, and one per function's first trace (JAX logs its own
    words; expected lines written here)."""
    import logging

    api = ns.api
    if ns.name == "jax":
        raise Unsupported("JAX's explanations are worded differently (checked on refimpl only)")
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep()
    logger = logging.getLogger("refimpl.jit")
    logger.addHandler(handler)
    old = api.config.explain_cache_misses
    api.config.update("explain_cache_misses", True)
    try:
        f = ns.jit(lambda x, n: x * n, static_argnums=1)
        f(ns.asarray(X), 2)
        f(ns.asarray(X[0]), 2)
        f(ns.asarray(X.astype(np.int32)), 2)
        h = ns.jit(lambda x: x * 2)
        h(ns.asarray(np.float32(1.0)))
        h(1.0)
        f(ns.asarray(X), 3)
        g = ns.jit(lambda t: t[0])
        g((ns.asarray(X),))
        g([ns.asarray(X)])
        k = api.jit(lambda x, n: x * n, static_argnames="n")  # following config.backend
        k(X, n=2)
        k(X, 2)
        api.config.update("enable_x64", True)
        try:
            k(X, 2)
        finally:
            api.config.update("enable_x64", False)
        backend = api.config.backend
        api.config.update("backend", "pjrt" if backend == "ref" else "ref")
        try:
            k(X, 2)
        finally:
            api.config.update("backend", backend)
    finally:
        api.config.update("explain_cache_misses", old)
        logger.removeHandler(handler)
    # the first trace of each of the 4 functions is "never seen", as JAX's
    first = [line for line in lines if "never seen function" in line]
    found = [any(want in line for line in lines) for want in MISS_LINES]
    return [*found, len(lines) - len(first), len(first)]


def _err(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def script(ns: Any) -> Any:
        return build(ns)

    return script


def _one(x: Any) -> Any:
    return x


def _two(x: Any, y: Any) -> Any:
    return x + y


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("not_callable", lambda ns: ns.api.jit(3)),
    ("static_argnums_str", lambda ns: ns.api.jit(_one, static_argnums="a")),
    ("static_argnums_float", lambda ns: ns.api.jit(_one, static_argnums=1.5)),
    ("static_argnames_int", lambda ns: ns.api.jit(_one, static_argnames=3)),
    ("donate_argnames_ints", lambda ns: ns.api.jit(_one, donate_argnames=[1])),
    ("static_argnums_out_of_range", lambda ns: ns.api.jit(_one, static_argnums=5)),
    ("static_and_donated", lambda ns: ns.api.jit(_two, static_argnums=1, donate_argnums=1)),
    ("static_and_donated_names", lambda ns: ns.api.jit(_two, static_argnames="y",
                                                       donate_argnames="y")),
    ("string_argument", lambda ns: ns.api.jit(_one)("abc")),
    ("function_argument", lambda ns: ns.api.jit(_one)(_one)),
    ("eval_shape_string", lambda ns: ns.eval_shape(_one, "abc")),
]  # fmt: skip


# Not here: static_argnums=True (JAX reads it as 1 and reports it out of range,
# a ValueError; refimpl refuses a bool, a TypeError: open). An unhashable static
# argument is jit.errors/unhashable-static (jit_cache.py).


def _identity_of_scalars(ns: Any) -> Any:
    """A jitted identity returns arrays for Python and NumPy scalars (weak for
    Python's), not the argument objects."""
    f = ns.jit(lambda x: x)
    return [f(v) for v in (1.0, 1, True, 1j, np.float32(1.0), np.int64(2))] + [f((1.0, 2))]


def _int_of_a_numpy_constant(ns: Any) -> Any:
    """int() of jnp.asarray(NumPy data) inside jit: refimpl's value is a concrete
    constant of the program; JAX 0.10.2's a tracer (known.py)."""
    return ns.to_numpy(ns.jit(lambda x: x + int(ns.np_.asarray(np.int32(3))))(1)).tolist()


def _unread(ns: Any) -> Any:
    """Arguments the program does not read (JAX's executable has no parameter
    for them, refimpl's pjrt one neither): values over a miss, C++ hits and a
    compiled call, with NumPy, Python and device arguments, in a dict too."""
    f = ns.jit(lambda x, y, z: y * 2)
    g = ns.jit(lambda d: d["b"] - 1)
    dev = ns.asarray(X)
    outs = [f(X, X + 1, 3.0), f(X, X + 2, 4.0), f(dev, X, dev), f(1, dev, X), f(2, dev, X)]
    outs.append(f.lower(X, X, X).compile()(X + 2, X + 3, X))
    outs += [g({"a": X, "b": dev, "c": 2}), g({"a": dev, "b": X, "c": 3})]
    outs.append(ns.jit(lambda x, y: 5.0)(X, dev))
    return outs


def _donated_after_unread(ns: Any) -> Any:
    """A donated argument after an unread one (its position among the
    executable's parameters is not its position among the arguments):
    deleted, its output right, over a miss and hits."""
    f = ns.jit(lambda u, v: v + 1, donate_argnums=1)
    x = ns.asarray(X)
    outs = []
    for _ in range(3):
        y = f(X, x)
        outs.append((y, ns.is_deleted(x)))
        x = y
    return outs


def _donated_unread(ns: Any) -> Any:
    """An unread donated argument: deleted in refimpl (SPEC "Donation"),
    left alive by JAX, which prunes it (known.py)."""
    f = ns.jit(lambda u, v: u + 1, donate_argnums=1)
    w = ns.asarray(X)
    return {"out": f(X, w), "deleted": ns.is_deleted(w)}


def cases() -> Iterator[Case]:
    yield _case("ref/repeated", _ref_repeated(False))
    yield _case("ref/repeated_host_callback", _ref_repeated(True))
    yield _case("ref/repeated_then_twice", _ref_repeated_then_twice)
    yield script_case("jit.paths/ref/repeated_then_closed_over", _ref_repeated_then_closed_over,
                      expect=Raises(ValueError, "both closed over and passed"))  # fmt: skip
    yield _case("ref/no_outputs", _ref_no_outputs)
    yield _case("float0/direct", _float0_direct)
    yield _case("float0/under_vmap", _float0_under_vmap)
    yield _case("float0/donated", _float0_donated)
    yield _case("float0/struct_argument", _float0_with_struct)
    yield _case("lower_compile", _lower_compile)
    yield _case("static/types", _static_types)
    yield _case("static/not_comparable", _static_not_comparable)
    yield _case("struct/props", _structs)
    yield _case("struct/as_value", _struct_as_value)
    yield _case("method", _method)
    yield _case("clear_cache", _clear_cache)
    yield _case("eval_shape/duck_typed", _eval_shape_duck_typed)
    yield _case("trace/out_info_with_refs", _trace_out_info_with_refs)
    yield _case("static_argnames_none", _static_argnames_none)
    yield script_case("jit.paths/explain_cache_misses", _explain_misses,
                      expect=[True] * len(MISS_LINES) + [len(MISS_LINES), 4])  # fmt: skip
    yield _case("identity_of_scalars", _identity_of_scalars)
    yield _case("unread/values", _unread)
    yield _case("unread/donated_after_unread", _donated_after_unread)
    yield _case("unread/donated_unread", _donated_unread)
    yield script_case("jit.paths/numpy_constant/int_of_asarray", _int_of_a_numpy_constant,
                      expect=4)  # fmt: skip
    for name, build in ERRORS:
        yield _case(f"errors/{name}", _err(build))
