"""Debug callbacks inside calls that the PJRT lowering inlines (issue 36).

A ``debug.callback`` inside a ``jit``, ``checkpoint`` or ``custom_jvp``
nested in a jitted function: on pjrt the lowering inlines such calls into
the caller (refimpl.primitives.debug.inline_calls_with_callbacks) so that
every callback of a block is chained in program order. These cases take
that path: a nested call used twice (fresh variables per use), one closing
over an array (its constants), calls nested three deep, a checkpoint, a
custom_jvp, and the printed program of a function with a callback.

``nested_jit_chained`` calls the nested jit a second time on a value
computed from its first call's output: pjrt once ran that second callback
after the callbacks that follow it (``first, inner, last, inner``), its
order carried by a zero passed through an optimization barrier, which the
CPU plugin reordered; each callback now takes the previous one's result.

Each case is ``AGREE``: the values every callback saw, in order
(``ordered=True``), and the function's outputs, judged by JAX's recording.
Each case's recorded source includes the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case

TAGS = ["host_callbacks"]

_X = np.array([1.5, -2.0, 0.25], np.float32)


def _api(ns: Any) -> Any:
    return importlib.import_module(ns.lax_.__name__.split(".")[0])


def _recorder(api: Any) -> tuple[list, Any]:
    """A list and ``cb(tag, value)``: an ordered debug callback appending
    ``(tag, value as a list)`` to it at run time."""
    seen: list = []

    def cb(tag: str, v: Any) -> None:
        api.debug.callback(lambda a: seen.append((tag, np.asarray(a).tolist())), v, ordered=True)

    return seen, cb


def _nested_jit_twice(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @ns.jit
    def inner(x: Any) -> Any:
        cb("inner", x)
        return x * 2

    def outer(x: Any) -> Any:
        cb("first", x)
        y = inner(x + 1)
        z = inner(x - 3)
        cb("last", z)
        return y, z

    out = ns.jit(outer)(_X)
    return [ns.to_numpy(o) for o in out], seen


def _nested_jit_chained(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @ns.jit
    def inner(x: Any) -> Any:
        cb("inner", x)
        return x * 2

    def outer(x: Any) -> Any:
        cb("first", x)
        y = inner(x + 1)
        z = inner(y - 3)
        cb("last", z)
        return y, z

    out = ns.jit(outer)(_X)
    return [ns.to_numpy(o) for o in out], seen


def _nested_jit_constant(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)
    scale = ns.np_.asarray(np.array([2.0, 3.0, -1.0], np.float32))

    @ns.jit
    def inner(x: Any) -> Any:
        y = x * scale
        cb("scaled", y)
        return y + scale

    out = ns.jit(lambda x: inner(inner(x)))(_X)
    return ns.to_numpy(out), seen


def _nested_three_deep(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @ns.jit
    def leaf(x: Any) -> Any:
        cb("leaf", x)
        return x - 1

    @ns.jit
    def middle(x: Any) -> Any:
        cb("middle", x)
        return leaf(x) * leaf(x + 10)

    def top(x: Any) -> Any:
        y = middle(x)
        cb("top", y)
        return y

    out = ns.jit(top)(_X)
    return ns.to_numpy(out), seen


def _nested_without_callback(ns: Any) -> Any:
    """A nested jit without a callback next to one with: only the latter is inlined."""
    api = _api(ns)
    seen, cb = _recorder(api)
    plain = ns.jit(lambda x: x * x)

    @ns.jit
    def noisy(x: Any) -> Any:
        cb("noisy", x)
        return x + 1

    out = ns.jit(lambda x: noisy(plain(x)) + plain(x))(_X)
    return ns.to_numpy(out), seen


def _checkpointed(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @api.checkpoint
    def body(x: Any) -> Any:
        cb("body", x)
        return ns.np_.sin(x) * 2

    out = ns.jit(lambda x: body(x) + body(x * 0.5))(_X)
    return ns.to_numpy(out), seen


def _custom_jvp(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @api.custom_jvp
    def f(x: Any) -> Any:
        cb("primal", x)
        return x * x

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return f(x), 2 * x * t

    out = ns.jit(lambda x: f(x) + 1)(_X)
    return ns.to_numpy(out), seen


def _custom_vjp(ns: Any) -> Any:
    api = _api(ns)
    seen, cb = _recorder(api)

    @api.custom_vjp
    def f(x: Any, y: Any) -> Any:
        cb("primal", x)
        return x * y

    def fwd(x: Any, y: Any) -> Any:
        return f(x, y), (x, y)

    def bwd(res: Any, g: Any) -> Any:
        x, y = res
        return g * y, g * x

    f.defvjp(fwd, bwd)
    out = ns.jit(lambda x: f(x, x + 1) - f(x * 2, x))(_X)
    return ns.to_numpy(out), seen


def _printed(ns: Any) -> Any:
    """The printed program names the callback's primitive (the printer's rule
    for it); the callback itself does not run when tracing."""
    api = _api(ns)
    seen, cb = _recorder(api)

    def f(x: Any) -> Any:
        cb("traced", x)
        return x + 1

    text = str(api.make_jaxpr(f)(_X))
    return "debug_callback" in text, seen


ROWS: list[tuple[str, Any]] = [
    ("nested_jit_twice", _nested_jit_twice),
    ("nested_jit_chained", _nested_jit_chained),
    ("nested_jit_constant", _nested_jit_constant),
    ("nested_three_deep", _nested_three_deep),
    ("nested_without_callback", _nested_without_callback),
    ("checkpoint", _checkpointed),
    ("custom_jvp", _custom_jvp),
    ("custom_vjp", _custom_vjp),
    ("printed", _printed),
]

_HELPERS = "".join(inspect.getsource(h) for h in (_api, _recorder))


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        case = script_case(f"debug.paths/{name}", fn, expect=AGREE, tags=TAGS)
        yield replace(case, source=f"{case.source}\n{_HELPERS}")
