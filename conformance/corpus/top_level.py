"""The top-level utilities (SPEC section 3, docs/semantics.md 15.5-15.7).

``jacobian``, ``custom_gradient``, ``closure_convert``, ``device_get``,
``typeof``, ``make_jaxpr(return_shape=True)``'s shapes, ``disable_jit``,
``ensure_compile_time_eval``, ``pure_callback`` and ``debug.callback`` (the
values the callback sees, per call, under jit and vmap). Expectations are
NumPy oracles and constants that JAX meets as well, so nothing is recorded.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, fn_case, script_case

TAGS = ["top_level"]

X = np.array([0.5, -1.25, 2.0], np.float32)


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _jacobian(ns: Any, x: Any) -> Any:
    return _api(ns).jacobian(lambda v: ns.np_.stack([v[0] * v[1], v[2] ** 2]))(x)


def _jacobian_oracle(x: np.ndarray) -> np.ndarray:
    return np.array([[x[1], x[0], 0], [0, 0, 2 * x[2]]], np.float32)


def _custom_gradient(ns: Any, x: Any, y: Any) -> Any:
    api = _api(ns)

    @api.custom_gradient
    def f(a, b):
        return a * b, lambda g: (g * 3.0, g * b)

    return api.grad(lambda a, b: f(a, b) * 2.0, (0, 1))(x, y)


def _custom_gradient_of_python_floats(ns: Any) -> Any:
    # the rule's cotangent is weakly typed like the value, as JAX's seed
    api = _api(ns)

    @api.custom_gradient
    def f(a):
        return a**2, lambda g: (g * 10 * a,)

    return api.grad(f)(3.0), api.jit(api.grad(f))(3.0), api.grad(f)(np.float32(3.0))


def _custom_gradient_integer_output(ns: Any) -> Any:
    # an integer output's cotangent is float0 (its tangent type): the rule is
    # traced for that, and grad runs (JAX 0.10.2's test_stop_gradient_on_ints)
    api = _api(ns)

    @api.custom_gradient
    def f(a):
        i = ns.lax_.convert_element_type(ns.np_.round(a), np.int32)
        return (a * 2.0, i), lambda g: (g[0] * 3.0,)

    def loss(a):
        y, i = f(a)
        return ns.np_.sum(f(y)[0])

    x = ns.asarray(np.arange(3.0, dtype=np.float32))
    return api.grad(loss)(x), api.jit(api.grad(loss))(x), f(x)[1]


def _closure_convert(ns: Any, w: Any, x: Any) -> Any:
    api = _api(ns)

    def outer(w, x):
        converted, consts = api.closure_convert(lambda v: ns.np_.sin(v) * w, x)
        return converted(x, *consts)

    return api.grad(outer, (0, 1))(w, x)


def _device_get(ns: Any) -> Any:
    api = _api(ns)
    got = api.device_get({"a": ns.asarray(X), "b": (2, None)})
    return [type(got["a"]).__name__, got["a"], got["b"]]


def _typeof(ns: Any) -> Any:
    api = _api(ns)
    out = []
    for value in (1.0, 3, np.ones((2, 3), np.int32), ns.asarray(X)):
        aval = api.typeof(value)
        out.append((tuple(aval.shape), np.dtype(aval.dtype).name, bool(aval.weak_type)))
    return out


def _return_shape(ns: Any) -> Any:
    api = _api(ns)
    _, shapes = api.make_jaxpr(lambda x, n: (x * n, x.sum()), static_argnums=1, return_shape=True)(
        X, 3
    )
    return [(tuple(s.shape), np.dtype(s.dtype).name) for s in shapes]


def _disable_jit(ns: Any) -> Any:
    api = _api(ns)
    seen = []

    def f(x):
        seen.append(isinstance(x, np.ndarray) or type(x).__name__)
        return x * 2

    g = ns.jit(f)
    g(X)
    with api.disable_jit():
        out = g(X)
    return [len(seen), ns.to_numpy(out)]


def _compile_time(ns: Any, x: Any) -> Any:
    api = _api(ns)
    with api.ensure_compile_time_eval():
        y = ns.np_.arange(3.0) * 2
        total = float(y.sum())  # concrete even under jit
    return x + y * total


def _pure_callback(ns: Any, x: Any) -> Any:
    api = _api(ns)
    spec = api.ShapeDtypeStruct(x.shape, x.dtype)
    return api.pure_callback(lambda a: np.cumsum(a), spec, x) * 2


def _debug_values(ns: Any) -> Any:
    api = _api(ns)
    seen = []

    def f(x):
        api.debug.callback(lambda v: seen.append(np.asarray(v).tolist()), x.sum())
        return x + 1

    g = ns.jit(f)
    g(X)
    g(X * 2)
    api.vmap(f)(np.stack([X, -X]))
    api.grad(lambda v: f(v).sum())(X)
    return seen


def cases() -> Iterator[Case]:
    yield fn_case("top_level/jacobian", _jacobian, [X], oracle=_jacobian_oracle, tags=TAGS)
    yield fn_case(
        "top_level/custom_gradient",
        _custom_gradient,
        [np.float32(1.5), np.float32(-2.0)],
        oracle=lambda x, y: (np.float32(6.0), np.float32(2 * y)),
        tags=TAGS,
    )
    yield script_case(
        "top_level/custom_gradient_of_python_floats",
        _custom_gradient_of_python_floats,
        expect=AGREE,
        tags=TAGS,
    )
    yield script_case(
        "top_level/custom_gradient_integer_output",
        _custom_gradient_integer_output,
        expect=AGREE,
        tags=TAGS,
    )
    yield fn_case(
        "top_level/closure_convert-grad",
        _closure_convert,
        [np.float32(2.0), np.float32(0.3)],
        oracle=lambda w, x: (np.sin(x), w * np.cos(x)),
        tags=TAGS,
    )
    yield script_case(
        "top_level/device_get",
        _device_get,
        expect=["ndarray", X, (2, None)],
        tags=TAGS,
    )
    yield script_case(
        "top_level/typeof",
        _typeof,
        expect=[
            ((), "float32", True),
            ((), "int32", True),
            ((2, 3), "int32", False),
            ((3,), "float32", False),
        ],  # fmt: skip
        tags=TAGS,
    )
    yield script_case(
        "top_level/make_jaxpr-return_shape",
        _return_shape,
        expect=[((3,), "float32"), ((), "float32")],
        tags=TAGS,
    )
    yield script_case("top_level/disable_jit", _disable_jit, expect=[2, X * 2], tags=TAGS)
    yield fn_case(
        "top_level/ensure_compile_time_eval",
        _compile_time,
        [X],
        oracle=lambda x: x + np.arange(3, dtype=np.float32) * 2 * 6,
        tags=TAGS,
    )
    yield fn_case(
        "top_level/pure_callback-eager",
        _pure_callback,
        [X],
        oracle=lambda x: np.cumsum(x) * 2,
        mode="eager",
        tags=TAGS,
    )
    total = float(X.sum())
    yield script_case(
        "top_level/debug-callback-values",
        _debug_values,
        expect=[total, 2 * total, total, -total, total],
        tags=TAGS,
    )
