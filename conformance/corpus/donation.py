"""Donation, deletion, aliasing and the device_put table (SPEC "Donation").

Each script observes: which inputs are deleted after the call, which outputs
reuse a donated input's buffer (pointer equality with the pointer read
before the call), the values, warnings ("not usable"), and errors. The
expected observations are written from the SPEC, so differences from JAX
show up against the SPEC (and are listed in conformance/known.py when
intended).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.observe import ANY, Raises

REQUIRES = ("donation",)


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def _case(name: str, script: Callable[[Any], Any], expect: Any, quick: bool = False) -> Case:
    return script_case(
        f"donation/{name}",
        script,
        expect=expect,
        requires=REQUIRES,
        tags=["donation"] + (["quick"] if quick else []),
    )


def _unusable_warned(warnings: list[str]) -> bool:
    return any("not usable" in w for w in warnings)


def _jit_cases() -> Iterator[Case]:
    def single(ns):
        x = ns.asarray(f32(1, 2, 3))
        before = ns.buffer_pointer(x)
        out = ns.jit(lambda a: a * 2, donate_argnums=0)(x)
        return {"x_deleted": ns.is_deleted(x), "aliased": ns.buffer_pointer(out) == before,
                "out": out}  # fmt: skip

    yield _case(
        "single", single, {"x_deleted": True, "aliased": True, "out": f32(2, 4, 6)}, quick=True
    )

    def argnames(ns):
        x, y = ns.asarray(f32(1, 2)), ns.asarray(f32(3, 4))
        before = ns.buffer_pointer(y)
        out = ns.jit(lambda x, y: x + y, donate_argnames="y")(x, y=y)
        return {"x_deleted": ns.is_deleted(x), "y_deleted": ns.is_deleted(y),
                "aliased_y": ns.buffer_pointer(out) == before, "out": out}  # fmt: skip

    yield _case(
        "argnames-kwarg",
        argnames,
        {"x_deleted": False, "y_deleted": True, "aliased_y": True, "out": f32(4, 6)},
    )

    def argname_positional(ns):
        x = ns.asarray(f32(1, 2))
        ns.jit(lambda x: x + 1, donate_argnames="x")(x)
        return ns.is_deleted(x)

    yield _case("argnames-passed-positionally", argname_positional, True)

    def negative(ns):
        x, y = ns.asarray(f32(1)), ns.asarray(f32(2))
        ns.jit(lambda x, y: x - y, donate_argnums=-1)(x, y)
        return ns.is_deleted(x), ns.is_deleted(y)

    yield _case("negative-argnum", negative, (False, True))

    def pytree(ns):
        state = {"w": ns.asarray(f32(1, 2)), "b": ns.asarray(f32(3))}
        ptrs = {k: ns.buffer_pointer(v) for k, v in state.items()}
        new = ns.jit(lambda s: {"w": s["w"] * 2, "b": s["b"] + 1}, donate_argnums=0)(state)
        return {
            "deleted": {k: ns.is_deleted(v) for k, v in state.items()},
            "aliased": {k: ns.buffer_pointer(new[k]) == ptrs[k] for k in new},
            "new": new,
        }

    yield _case(
        "pytree",
        pytree,
        {
            "deleted": {"w": True, "b": True},
            "aliased": {"w": True, "b": True},
            "new": {"w": f32(2, 4), "b": f32(4)},
        },
        quick=True,
    )

    def order(ns):
        a, b = ns.asarray(f32(1, 2)), ns.asarray(f32(1, 2, 3))
        pa, pb = ns.buffer_pointer(a), ns.buffer_pointer(b)
        out = ns.jit(lambda a, b: (b * 2, a * 2), donate_argnums=(0, 1))(a, b)
        return ns.buffer_pointer(out[0]) == pb, ns.buffer_pointer(out[1]) == pa

    yield _case("matched-by-shape-in-order", order, (True, True))

    def partial(ns):
        a, b = ns.asarray(f32(1, 2, 3)), ns.asarray(f32(4, 5, 6))
        pa, pb = ns.buffer_pointer(a), ns.buffer_pointer(b)
        out, warnings = ns.recording_warnings(
            ns.jit(lambda a, b: a + b, donate_argnums=(0, 1)), a, b
        )
        return {"a_deleted": ns.is_deleted(a), "b_deleted": ns.is_deleted(b),
                "out_is_a": ns.buffer_pointer(out) == pa, "out_is_b": ns.buffer_pointer(out) == pb,
                "warned_not_usable": _unusable_warned(warnings), "out": out}  # fmt: skip

    yield _case(
        "unusable-partial-two-donated-one-output",
        partial,
        {
            "a_deleted": True,
            "b_deleted": True,
            "out_is_a": True,
            "out_is_b": False,
            "warned_not_usable": True,
            "out": f32(5, 7, 9),
        },
    )

    def dtype_mismatch(ns):
        x = ns.asarray(np.array([1, 2, 3], np.int32))
        out, warnings = ns.recording_warnings(
            ns.jit(lambda a: a.astype(np.float32) / 2, donate_argnums=0), x
        )
        return {"x_deleted": ns.is_deleted(x), "warned_not_usable": _unusable_warned(warnings),
                "out": out}  # fmt: skip

    yield _case(
        "unusable-dtype-mismatch",
        dtype_mismatch,
        {"x_deleted": True, "warned_not_usable": True, "out": f32(0.5, 1, 1.5)},
    )

    def shape_mismatch(ns):
        x = ns.asarray(f32(1, 2, 3))
        out, warnings = ns.recording_warnings(ns.jit(lambda a: a.sum(), donate_argnums=0), x)
        return {"x_deleted": ns.is_deleted(x), "warned_not_usable": _unusable_warned(warnings),
                "out": out}  # fmt: skip

    yield _case(
        "unusable-shape-mismatch",
        shape_mismatch,
        {"x_deleted": True, "warned_not_usable": True, "out": np.float32(6)},
    )

    def mixed(ns):
        x, y = ns.asarray(f32(1, 2)), ns.asarray(f32(3, 4))
        ns.jit(lambda x, y: x * y, donate_argnums=1)(x, y)
        return ns.is_deleted(x), ns.is_deleted(y)

    yield _case("only-donated-deleted", mixed, (False, True))

    def numpy_input(ns):
        x = f32(1, 2, 3)
        out = ns.jit(lambda a: a + 1, donate_argnums=0)(x)
        return {"numpy_unchanged": x.tolist() == [1.0, 2.0, 3.0], "out": out}

    yield _case(
        "numpy-input-untouched", numpy_input, {"numpy_unchanged": True, "out": f32(2, 3, 4)}
    )

    def scalar_input(ns):
        return ns.jit(lambda a: a * 3, donate_argnums=0)(2.0)

    yield _case("python-scalar-input", scalar_input, ANY)

    def use_after(ns):
        x = ns.asarray(f32(1, 2))
        ns.jit(lambda a: a + 1, donate_argnums=0)(x)
        return {"add": ns.capture(lambda: x + 1), "asarray": ns.capture(ns.to_numpy, x),
                "call_again": ns.capture(ns.jit(lambda a: a * 2), x)}  # fmt: skip

    deleted = Raises(RuntimeError, r"deleted")
    yield _case(
        "use-after-donation",
        use_after,
        {"add": deleted, "asarray": deleted, "call_again": deleted},
        quick=True,
    )

    def use_after_names_function(ns):
        x = ns.asarray(f32(1, 2))

        def step(a):
            return a + 1

        ns.jit(step, donate_argnums=0)(x)
        return ns.capture(lambda: x * 2)

    yield _case(
        "use-after-donation-message",
        use_after_names_function,
        Raises(RuntimeError, {"*": r"deleted.*donated.*step", "jax": r"deleted"}),
    )

    def same_twice(ns):
        x = ns.asarray(f32(1, 2))
        error = ns.capture(ns.jit(lambda a, b: a + b, donate_argnums=0), x, x)
        return {"error": error, "x_deleted": ns.is_deleted(x)}

    yield _case(
        "same-array-twice",
        same_twice,
        {"error": Raises(ValueError, r"twice|same|more than once"), "x_deleted": False},
    )

    def trace_failure(ns):
        x = ns.asarray(f32(1, 2))

        def broken(a):
            raise ValueError("injected failure")

        error = ns.capture(ns.jit(broken, donate_argnums=0), x)
        return {"error": error, "x_deleted": ns.is_deleted(x)}

    yield _case(
        "failed-trace-deletes-nothing",
        trace_failure,
        {"error": Raises(ValueError, "injected"), "x_deleted": False},
    )

    def shape_error(ns):
        x = ns.asarray(f32(1, 2))
        y = ns.asarray(f32(1, 2, 3))
        error = ns.capture(ns.jit(lambda a, b: ns.lax_.add(a, b), donate_argnums=(0, 1)), x, y)
        return {"error": error, "deleted": (ns.is_deleted(x), ns.is_deleted(y))}

    yield _case(
        "shape-error-deletes-nothing",
        shape_error,
        {"error": Raises(TypeError), "deleted": (False, False)},
    )

    def second_call(ns):
        f = ns.jit(lambda a: a * 2, donate_argnums=0)
        x = ns.asarray(f32(1, 2))
        y = f(x)
        z = f(y)
        return {"y_deleted": ns.is_deleted(y), "z": z, "again": ns.capture(f, x)}

    yield _case(
        "chained-calls",
        second_call,
        {"y_deleted": True, "z": f32(4, 8), "again": Raises(RuntimeError, "deleted")},
    )

    def static_and_donated(ns):
        return ns.capture(lambda: ns.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1))

    yield _case("static-and-donated", static_and_donated, Raises(ValueError))


# --- device_put -------------------------------------------------------------------------------

DEVICE_PUT_TABLE: list[tuple[Any, bool, Any]] = [
    # may_alias, donate, expected (ValueError, or x_deleted / fresh buffer)
    (True, True, "error"),
    (True, False, {"x_deleted": False, "fresh": ANY}),
    (False, True, {"x_deleted": True, "fresh": ANY}),
    (False, False, {"x_deleted": False, "fresh": True}),
    (None, True, {"x_deleted": True, "fresh": ANY}),
    (None, False, {"x_deleted": False, "fresh": ANY}),
]


def _device_put_cases() -> Iterator[Case]:
    for may_alias, donate, expected in DEVICE_PUT_TABLE:

        def script(ns, _m=may_alias, _d=donate):
            x = ns.asarray(f32(1, 2, 3))
            before = ns.buffer_pointer(x)
            y = ns.device_put(x, may_alias=_m, donate=_d)
            return {"x_deleted": ns.is_deleted(x), "fresh": ns.buffer_pointer(y) != before,
                    "value": y}  # fmt: skip

        if expected == "error":
            run = lambda ns, _s=script: ns.capture(_s, ns)  # noqa: E731
            expect: Any = Raises(ValueError, r"may_alias|donate")
        else:
            run = script
            expect = dict(expected, value=f32(1, 2, 3))
        yield script_case(
            f"device_put/may_alias={may_alias}/donate={donate}",
            run,
            expect=expect,
            tags=["donation", "device_put"] + (["quick"] if donate and may_alias is None else []),
        )

    def deleted_input(ns):
        x = ns.asarray(f32(1))
        x.delete()
        return ns.capture(ns.device_put, x)

    yield script_case(
        "device_put/deleted-input",
        deleted_input,
        expect=Raises(RuntimeError, r"deleted"),
        tags=["donation", "device_put"],
    )

    def numpy_and_scalar(ns):
        return ns.device_put(np.arange(3, dtype=np.int64)), ns.device_put(2.5)

    yield script_case(
        "device_put/numpy-and-scalar",
        numpy_and_scalar,
        expect=AGREE,
        tags=["donation", "device_put"],
    )

    def pytree(ns):
        tree = {"a": ns.asarray(f32(1)), "b": (ns.asarray(f32(2)), ns.asarray(f32(3)))}
        out = ns.device_put(tree, donate=True)
        return {"out": out, "deleted": [ns.is_deleted(x) for x in (tree["a"], *tree["b"])]}

    yield script_case(
        "device_put/pytree-donated",
        pytree,
        expect={"out": {"a": f32(1), "b": (f32(2), f32(3))}, "deleted": [True, True, True]},
        tags=["donation", "device_put"],
    )


def cases() -> Iterator[Case]:
    yield from _jit_cases()
    yield from _device_put_cases()
