"""The jit signature cache: sequences of calls and how many traces they cause.

Traces are counted two ways: a Python counter incremented inside the traced
function (implementation-neutral: each trace runs the Python function once)
and ``ns.trace_count(f)`` (the implementation's cache size). Expected counts
come from SPEC "Tracing and the signature cache".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.observe import Raises


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


class Counted:
    """A function that counts how often it is traced (called in Python)."""

    def __init__(self, body: Callable[..., Any]) -> None:
        self.body = body
        self.traces = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.traces += 1
        return self.body(*args, **kwargs)


def _sequence(calls: Callable[[Any, Any], list[Any]], body: Callable[..., Any], **jit_kw: Any):
    """A script: jit ``body``, make the calls, observe outputs and trace counts."""

    def script(ns):
        fn = Counted(lambda *a, **k: body(ns, *a, **k))
        jitted = ns.jit(fn, **jit_kw)
        outs = [jitted(*args, **kwargs) for args, kwargs in calls(ns, jitted)]
        return {"outs": outs, "traces": fn.traces, "cache_size": ns.trace_count(jitted)}

    return script


def _call(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def _dict(ns: Any, **values: float) -> dict[str, Any]:
    """A dict of arrays, built in the order the keywords are given."""
    return {k: ns.asarray(f32(v)) for k, v in values.items()}


def _expect(n: int) -> Callable[[], Any]:
    return lambda: n


def _cache_cases() -> Iterator[Case]:
    double = lambda ns, x: x * 2  # noqa: E731
    table: list[tuple[str, Callable[[Any, Any], list[Any]], Callable[..., Any], dict, int]] = [
        ("same-signature", lambda ns, f: [_call(ns.asarray(f32(1, 2))),
                                          _call(ns.asarray(f32(3, 4)))], double, {}, 1),
        ("same-signature-numpy-and-array", lambda ns, f: [_call(f32(1, 2)),
                                                          _call(ns.asarray(f32(3, 4)))],
         double, {}, 1),
        ("new-shape", lambda ns, f: [_call(ns.asarray(f32(1, 2))),
                                     _call(ns.asarray(f32(1, 2, 3)))], double, {}, 2),
        ("new-dtype", lambda ns, f: [_call(ns.asarray(f32(1, 2))),
                                     _call(ns.asarray(np.array([1, 2], np.int32)))],
         double, {}, 2),
        ("weak-vs-strong-scalar", lambda ns, f: [_call(2.0), _call(ns.asarray(np.float32(2.0)))],
         double, {}, 2),
        ("python-int-vs-float", lambda ns, f: [_call(2), _call(2.0)], double, {}, 2),
        ("python-scalar-values", lambda ns, f: [_call(2.0), _call(3.5), _call(-1.0)],
         double, {}, 1),
        ("weak-output-fed-back", lambda ns, f: [_call(2.0), _call(f(2.0))], double, {}, 1),
        ("tuple-vs-list", lambda ns, f: [_call((ns.asarray(f32(1)), ns.asarray(f32(2)))),
                                         _call([ns.asarray(f32(1)), ns.asarray(f32(2))])],
         lambda ns, xs: xs[0] + xs[1], {}, 2),
        ("dict-key-order", lambda ns, f: [_call(_dict(ns, a=1, b=2)), _call(_dict(ns, b=5, a=3))],
         lambda ns, d: d["a"] - d["b"], {}, 1),
        ("none-leaf", lambda ns, f: [_call((ns.asarray(f32(1)), None)),
                                     _call((ns.asarray(f32(4)), None))],
         lambda ns, t: t[0] * 2, {}, 1),
        ("static-arg-same", lambda ns, f: [_call(ns.asarray(f32(1, 2)), 3),
                                           _call(ns.asarray(f32(5, 6)), 3)],
         lambda ns, x, n: x * n, {"static_argnums": (1,)}, 1),
        ("static-arg-changes", lambda ns, f: [_call(ns.asarray(f32(1, 2)), 3),
                                              _call(ns.asarray(f32(1, 2)), 4)],
         lambda ns, x, n: x * n, {"static_argnums": (1,)}, 2),
        ("static-argnames", lambda ns, f: [_call(ns.asarray(f32(1, 2)), n=3),
                                           _call(ns.asarray(f32(1, 2)), n=3),
                                           _call(ns.asarray(f32(1, 2)), n=5)],
         lambda ns, x, n: x * n, {"static_argnames": ("n",)}, 2),
        ("static-tuple-value", lambda ns, f: [_call(ns.asarray(f32(1, 2)), (1, 2)),
                                              _call(ns.asarray(f32(1, 2)), (1, 2))],
         lambda ns, x, t: x * len(t), {"static_argnums": 1}, 1),
        ("static-negative-argnum", lambda ns, f: [_call(ns.asarray(f32(1, 2)), 2),
                                                  _call(ns.asarray(f32(1, 2)), 3)],
         lambda ns, x, n: x + n, {"static_argnums": -1}, 2),
        ("static-python-control-flow", lambda ns, f: [_call(ns.asarray(f32(1, 2)), True),
                                                      _call(ns.asarray(f32(1, 2)), False),
                                                      _call(ns.asarray(f32(3, 4)), True)],
         lambda ns, x, flag: x * 2 if flag else x - 1, {"static_argnums": 1}, 2),
        ("kwarg-array", lambda ns, f: [_call(ns.asarray(f32(1, 2)), y=ns.asarray(f32(3, 4))),
                                       _call(ns.asarray(f32(5, 6)), y=ns.asarray(f32(7, 8)))],
         lambda ns, x, y: x * y, {}, 1),
        ("rank0-vs-rank1", lambda ns, f: [_call(ns.asarray(np.float32(1))),
                                          _call(ns.asarray(f32(1)))], double, {}, 2),
        ("zero-size", lambda ns, f: [_call(ns.asarray(np.zeros((0, 3), np.float32))),
                                     _call(ns.asarray(np.zeros((0, 3), np.float32)))],
         double, {}, 1),
    ]  # fmt: skip
    for label, calls, body, jit_kw, traces in table:
        yield script_case(
            f"jit.cache/{label}",
            _sequence(calls, body, **jit_kw),
            expect=AGREE,
            tags=["jit", "cache"] + (["quick"] if traces == 2 or label == "same-signature" else []),
        )
        # the count itself is SPEC, not just agreement: check it against the number
        yield script_case(
            f"jit.cache/{label}/count",
            _count_only(calls, body, **jit_kw),
            expect=traces,
            tags=["jit", "cache"],
        )


def _count_only(calls, body, **jit_kw):
    sequence = _sequence(calls, body, **jit_kw)

    def script(ns):
        return sequence(ns)["traces"]

    return script


def _nested_cases() -> Iterator[Case]:
    def inner_once(ns):
        inner = Counted(lambda x: ns.np_.sin(x) + 1)
        jinner = ns.jit(inner)
        outer = Counted(lambda x, k: jinner(x) * k)
        jouter = ns.jit(outer, static_argnums=1)
        a = jouter(ns.asarray(f32(1, 2)), 2)
        b = jouter(ns.asarray(f32(1, 2)), 3)  # outer retraces, inner has the same signature
        return {"a": a, "b": b, "outer": outer.traces, "inner": inner.traces}

    yield script_case(
        "jit.nested/inner-traced-once",
        inner_once,
        expect=AGREE,
        tags=["jit", "nested", "quick"],
        notes="SPEC: tracing the outer function twice with the same inner signature does not "
        "retrace the inner one",
    )

    def inner_counts(ns):
        return inner_once(ns)["inner"], inner_once(ns)["outer"]

    yield script_case(
        "jit.nested/inner-traced-once/count", inner_counts, expect=(1, 2), tags=["jit", "nested"]
    )

    def inner_new_signature(ns):
        inner = Counted(lambda x: x * 2)
        jinner = ns.jit(inner)
        outer = ns.jit(lambda x: jinner(x) + jinner(x.astype(np.int32)))
        out = outer(ns.asarray(f32(1.5, 2.5)))
        return {"out": out, "inner": inner.traces}

    yield script_case(
        "jit.nested/two-inner-signatures", inner_new_signature, expect=AGREE, tags=["jit", "nested"]
    )

    def nested_values(ns):
        a = ns.jit(lambda x: x * 3)
        b = ns.jit(lambda x, y: a(x) - a(y))
        c = ns.jit(lambda x: b(x, x + 1) * b(x * 2, x))
        return c(ns.asarray(f32(1, 2, 3)))

    yield script_case(
        "jit.nested/three-levels",
        nested_values,
        expect=lambda: f32(-9, -18, -27),
        tags=["jit", "nested"],
    )

    def nested_closure(ns):
        def outer(x):
            y = x * 2
            return ns.jit(lambda z: z + y)(x)  # the inner function closes over a tracer

        return ns.jit(outer)(ns.asarray(f32(1, 2)))

    yield script_case(
        "jit.nested/closure-over-outer-tracer",
        nested_closure,
        expect=lambda: f32(3, 6),
        tags=["jit", "nested"],
    )

    def nested_weak(ns):
        inner = ns.jit(lambda x: x + 1)
        return ns.jit(lambda x: inner(x) * 2)(2.0)

    yield script_case(
        "jit.nested/weak-scalar-through-inner",
        nested_weak,
        expect=AGREE,
        tags=["jit", "nested", "weak"],
    )


def _misc_cases() -> Iterator[Case]:
    def pytree_out(ns):
        f = ns.jit(lambda x, y: {"sum": x + y, "pair": (x * y, [x - y]), "none": None})
        return f(ns.asarray(f32(1, 2)), ns.asarray(f32(3, 4)))

    yield script_case(
        "jit.outputs/pytree",
        pytree_out,
        expect=lambda: {"sum": f32(4, 6), "pair": (f32(3, 8), [f32(-2, -2)]), "none": None},
        tags=["jit", "quick"],
    )

    def weak_outputs(ns):
        f = ns.jit(lambda a, b: (a * 2, a + b, b))
        return f(2.0, ns.asarray(f32(1)))

    yield script_case("jit.outputs/weak-types", weak_outputs, expect=AGREE, tags=["jit", "weak"])

    def constant_output(ns):
        return ns.jit(lambda x: (x, 3.0, ns.np_.zeros(2)))(ns.asarray(f32(1)))

    yield script_case("jit.outputs/constants", constant_output, expect=AGREE, tags=["jit"])

    def eval_shape_weak(ns):
        f = ns.jit(lambda x: x * 2)
        shape = ns.eval_shape(f, 2.0)
        return shape, ns.eval_shape(lambda x: x.sum(), ns.asarray(np.ones((2, 3), np.float32)))

    yield script_case(
        "jit.eval_shape/weak-and-strong",
        eval_shape_weak,
        expect=AGREE,
        tags=["jit", "weak", "quick"],
    )

    def eval_shape_fed_back(ns):
        counted = Counted(lambda x: x * 2)
        f = ns.jit(counted)
        struct = ns.eval_shape(f, 2.0)
        f(2.0)
        return {"struct": struct, "traces": counted.traces}

    yield script_case(
        "jit.eval_shape/output-fed-back-hits-cache",
        eval_shape_fed_back,
        expect=AGREE,
        tags=["jit", "cache"],
    )

    def x64_retrace(ns):
        return ns.jit(lambda x: x + 1)(np.arange(3, dtype=np.int64))

    yield script_case(
        "jit.x64/int64-input", x64_retrace, expect=AGREE, tags=["jit", "x64"], x64=True
    )

    def decorator_form(ns):
        @ns.jit
        def f(x):
            return x - 1

        return f(ns.asarray(f32(5)))

    yield script_case("jit.api/decorator", decorator_form, expect=lambda: f32(4), tags=["jit"])

    def nondiff_static_kw(ns):
        f = ns.jit(lambda x, *, scale: x * scale, static_argnames="scale")
        return f(ns.asarray(f32(1, 2)), scale=3), f(ns.asarray(f32(1, 2)), scale=2)

    yield script_case(
        "jit.api/keyword-only-static",
        nondiff_static_kw,
        expect=lambda: (f32(3, 6), f32(2, 4)),
        tags=["jit"],
    )


def _error_cases() -> Iterator[Case]:
    def unhashable_static(ns):
        return ns.jit(lambda x, s: x, static_argnums=1)(ns.asarray(f32(1)), [1, 2])

    yield script_case(
        "jit.errors/unhashable-static",
        unhashable_static,
        expect=AGREE,  # JAX's ValueError (refimpl's is a TypeError too, as the SPEC asks)
        tags=["jit", "errors"],
    )

    def static_and_donated(ns):
        return ns.jit(lambda x: x, static_argnums=0, donate_argnums=0)

    yield script_case(
        "jit.errors/static-and-donated",
        lambda ns: ns.capture(static_and_donated, ns),
        expect=Raises(ValueError, r"static.*donate|donate.*static"),
        tags=["jit", "errors"],
    )

    def concretize(ns):
        return ns.jit(lambda x: 1.0 if x > 0 else -1.0)(ns.asarray(f32(2)))

    yield script_case(
        "jit.errors/python-if-on-tracer",
        concretize,
        expect=Raises(TypeError, r"concret|tracer"),
        tags=["jit", "errors"],
    )

    def int_of_tracer(ns):
        return ns.jit(lambda x: ns.np_.zeros(int(x)))(ns.asarray(np.int32(3)))

    yield script_case(
        "jit.errors/int-of-tracer",
        int_of_tracer,
        expect=Raises(TypeError, r"concret|tracer"),
        tags=["jit", "errors"],
    )

    def leaked(ns):
        box = []
        ns.jit(lambda x: box.append(x * 2) or x)(ns.asarray(f32(1)))
        return ns.jit(lambda y: y + box[0])(ns.asarray(f32(1)))

    yield script_case(
        "jit.errors/leaked-tracer",
        leaked,
        expect=Raises(Exception, r"tracer"),
        tags=["jit", "errors"],
    )

    def non_array_output(ns):
        return ns.jit(lambda x: "text")(ns.asarray(f32(1)))

    yield script_case(
        "jit.errors/string-output",
        non_array_output,
        expect=Raises(TypeError),
        tags=["jit", "errors"],
    )

    def not_callable(ns):
        return ns.jit(3)

    yield script_case(
        "jit.errors/not-callable", not_callable, expect=Raises(TypeError), tags=["jit", "errors"]
    )

    def bad_argument(ns):
        return ns.jit(lambda x: x)("text")

    yield script_case(
        "jit.errors/string-argument", bad_argument, expect=Raises(TypeError), tags=["jit", "errors"]
    )


def cases() -> Iterator[Case]:
    yield from _cache_cases()
    yield from _nested_cases()
    yield from _misc_cases()
    yield from _error_cases()
