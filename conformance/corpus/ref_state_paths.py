"""Branches of the state primitives (refimpl/primitives/ref_ops.py: get, swap,
addupdate) that the ``ref*`` families leave untaken (issue 36).

A ref read or written inside ``jit`` becomes a state primitive with a static
indexer; these cases drive its rarer forms: an index array or a traced
index (not a static indexer: the gather/scatter path),
``grad`` of a jitted function whose refs hold constants (zero tangents) or
whose reads are unused (zero cotangents), ``grad`` through an ``addupdate``
(``ref.addupdate``) and a ``swap`` in jit (their transposes), ``vmap`` over a jitted ref update,
and the printed program.

Left out, differing from JAX: ``None`` in a ref's index
(``r[None, 1]``: refimpl indexes as NumPy, JAX 0.10.2 raises ValueError; judged
by NumPy in ``ref.update_paths/none_in_index``, known), an
index with more entries than the ref has dims (``r[0, 1]`` of a 1-D ref: refimpl
raises IndexError, JAX ValueError), and an ``addupdate`` of a constant into a
ref holding a constant under ``grad`` of a jit (JAX raises AttributeError;
``ref.paths/grad_constant_write`` is judged by NumPy instead).

Each case but ``grad_constant_write`` is ``AGREE``: judged by JAX's
recording. Each case's recorded source includes the helpers it calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported

TAGS = ["ref"]

_X = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
_M = np.arange(12, dtype=np.float32).reshape(3, 4)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "new_ref") or not hasattr(module, "freeze"):
        raise Unsupported(f"{ns.name} has no new_ref/freeze")
    return module


def _array_index(ns: Any) -> Any:
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        picked = r[np.array([3, 0])]
        r[np.array([1, 2])] = picked * 2
        r[np.array([0, 0])] += 1
        return picked, api.freeze(r)

    return ns.jit(f)(_X)


def _traced_index(ns: Any) -> Any:
    api = _api(ns)

    def f(x: Any, i: Any) -> Any:
        r = api.new_ref(x)
        old = r[i]
        r[i] = old + 100
        r[i - 1] += 7
        return old, api.freeze(r)

    return ns.jit(f)(_X, np.int32(2))


def _grad_constant_ref(ns: Any) -> Any:
    """The ref holds a constant: its read has a zero tangent."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(np.array([2.0, 3.0, 4.0, 5.0], np.float32))
        return (r[...] * x).sum()

    return api.grad(ns.jit(f))(_X)


def _grad_constant_write(ns: Any) -> Any:
    """A constant written into a ref holding a constant: the update's tangents
    are both zero. (JAX 0.10.2 raises AttributeError here: judged by NumPy.)"""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(np.array([2.0, 3.0, 4.0, 5.0], np.float32))
        r[2] = np.float32(-1)
        r[0:2] += np.float32(10)
        return (api.freeze(r) * x).sum()

    return api.grad(ns.jit(f))(_X)


def _grad_unused_read(ns: Any) -> Any:
    """A read whose value is not used: its cotangent is zero."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        _ = r[1:3]
        r[0] = r[3] * 2
        return api.freeze(r).sum()

    return api.grad(ns.jit(f))(_X)


def _grad_addupdate(ns: Any) -> Any:
    """``ref.addupdate`` (``r[i] += v`` is a get and a swap): its jvp and transpose."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x * x)
        api.ref.addupdate(r, slice(1, 3), x[0:2] * 3)
        api.ref.addupdate(r, ..., x)
        api.ref.addupdate(r, 0, np.float32(2))
        return (api.freeze(r) * np.arange(1.0, 5.0, dtype=np.float32)).sum()

    return api.grad(ns.jit(f))(_X)


def _vmap_addupdate(ns: Any) -> Any:
    api = _api(ns)

    def f(x: Any, v: Any) -> Any:
        r = api.new_ref(x)
        api.ref.addupdate(r, slice(0, 2), v)
        return api.ref.swap(r, 3, v[0] * 10), api.freeze(r)

    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    return api.vmap(ns.jit(f), in_axes=(1, 0))(_M.T, v)


def _grad_swap(ns: Any) -> Any:
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        r[2] = x[0] * x[1]
        r[0:2] = r[2:4] * 5
        return (api.freeze(r) ** 2).sum()

    return api.grad(ns.jit(f))(_X)


def _grad_swap_value_only(ns: Any) -> Any:
    """The ref starts as a constant: only the written value has a tangent."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(np.ones(4, np.float32))
        r[1:3] = x[0:2] * x[2:4]
        r[0] += x[3]
        return (api.freeze(r) * np.arange(1.0, 5.0, dtype=np.float32)).sum()

    return api.grad(ns.jit(f))(_X)


def _vmap_updates(ns: Any) -> Any:
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        r[1] += r[0]
        r[2:4] = r[0:2] * 2
        return r[...]

    return api.vmap(ns.jit(f), in_axes=1)(_M.T)


def _printed(ns: Any) -> Any:
    """The printed program shows each access's index."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        r[1:3] += r[0:2]
        r[..., 3] = r[0]
        return api.freeze(r)

    text = str(api.make_jaxpr(f)(_X))
    return ["1:3" in text, "<-" in text]


def _differentiated_ref_argument(ns: Any) -> Any:
    """A Ref among the arguments grad/jacrev/jvp differentiate: JAX's ValueError."""
    api = _api(ns)
    r = api.new_ref(ns.asarray(_X))
    return [
        ns.capture(api.grad(lambda r: r[...].sum()), r),
        ns.capture(ns.jit(api.grad(lambda x, r: (x * r[...]).sum(), argnums=1)), _X, r),
        ns.capture(api.jacrev(lambda r: r[...]), r),
        ns.capture(api.jvp, lambda r: r[...].sum(), (r,), (_X,)),
        ns.to_numpy(api.grad(lambda x, r: (x * r[...]).sum())(_X, r)),  # not differentiated
    ]


ROWS: list[tuple[str, Any]] = [
    ("array_index", _array_index),
    ("traced_index", _traced_index),
    ("grad_constant_ref", _grad_constant_ref),
    ("grad_unused_read", _grad_unused_read),
    ("grad_addupdate", _grad_addupdate),
    ("grad_swap", _grad_swap),
    ("vmap_addupdate", _vmap_addupdate),
    ("grad_swap_value_only", _grad_swap_value_only),
    ("vmap_updates", _vmap_updates),
    ("printed", _printed),
    ("differentiated_ref_argument", _differentiated_ref_argument),
]


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        case = script_case(f"ref.paths/{name}", fn, expect=AGREE, tags=TAGS)
        yield replace(case, source=f"{case.source}\n{inspect.getsource(_api)}")
    # d/dx sum(r * x) with r = [2, 3, 4, 5], then r[2] = -1, r[0:2] += 10
    yield script_case(
        "ref.paths/grad_constant_write",
        _grad_constant_write,
        expect=lambda: np.array([12.0, 13.0, -1.0, 5.0], np.float32),
        tags=TAGS,
    )
