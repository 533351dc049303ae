"""The checks of a ref write inside ``jit`` (refimpl/primitives/ref_ops.py; issue 36).

``ref.update_paths/*``: a write into a ref inside ``jit`` whose value has
another dtype than the ref (``int32`` into ``float32``; a ``float64`` NumPy
scalar is converted as JAX does) or another shape than the indexed window (a
longer vector, a scalar into a slice: no broadcasting) is refused with JAX's
``ValueError``; the same write of the right type works. A static index out
of bounds inside ``jit`` (past the end, before the start, of a row, an int
array) is clamped for reads and writes, an int array's write drops the entry
out of bounds, as JAX (its bounds check sees no concrete index there).
Which writes convert the value, as JAX's ``ref_swap``: a weak float into a
float ref (bfloat16 too) and any integer into an integer ref; a weak float
into an int ref (``r[0] += 1.0``), a weak int into a float ref and a strong
float32 into a bfloat16 ref are the dtype error; ``addupdate`` converts
nothing. A read of a ref freed by ``free_ref`` in the same jit is JAX's
``ValueError``. These cases are ``AGREE``: judged by JAX (live or recorded);
each case's recorded source includes its row and the helpers it calls.

``ref.update_paths/eager_*``: an eager static index past the end is JAX's
``ValueError`` ("Out of bound indexer"; refimpl's ``OutOfBoundsIndexError``
is one), read or write; one before the start is too in refimpl, where JAX
0.10.2 clamps it (known: its check compares only ``index >= size``).

``ref.update_paths/none_in_index``: ``None`` in a ref's index adds a unit
axis, as NumPy (the oracle), eagerly and inside ``jit``, read and write, as
JAX's own mutable_array_test (test_none_index, skipped there) expects; JAX
0.10.2 drops it from a 1-D ref's index and raises ValueError on a 2-D ref
(known).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import AGREE, Case, script_case
from conformance.namespace import Unsupported
from conformance.observe import Raises

_X = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
_M = np.arange(12, dtype=np.float32).reshape(3, 4)
_I = np.array([1, -2, 3], np.int32)
_B = _X.astype(ml_dtypes.bfloat16)


def _api(ns: Any) -> Any:
    module = importlib.import_module(ns.lax_.__name__.split(".")[0])
    if not hasattr(module, "new_ref") or not hasattr(module, "freeze"):
        raise Unsupported(f"{ns.name} has no new_ref/freeze")
    return module


def _in_jit(ns: Any, write: Any, x: Any = _X) -> Any:
    """``write(ref)`` on a ref of ``x`` inside jit; returns the ref's final value."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        write(r)
        return api.freeze(r)

    return ns.jit(f)(x)


def _set(index: Any, value: Any) -> Any:
    def write(r: Any) -> None:
        r[index] = value

    return write


def _freed_in_jit(ns: Any, access: Any) -> Any:
    """Inside jit: a ref of ``_X``, its value doubled, ``free_ref``, then
    ``access(ref)``, returned with the doubled value (JAX checks a read of a
    freed ref only when its result is used)."""
    api = _api(ns)

    def f(x: Any) -> Any:
        r = api.new_ref(x)
        y = r[...] * 2
        api.free_ref(r)
        return y, access(r)

    return ns.jit(f)(_X)


def _read_in_jit(ns: Any, index: Any, x: Any = _X) -> Any:
    """``ref[index]`` of a ref of ``x`` inside jit."""
    api = _api(ns)
    return ns.jit(lambda x: api.new_ref(x)[index])(x)


def _eager(ns: Any, access: Any) -> Any:
    """``access(ref)`` on a ref of ``_X`` outside any transformation."""
    return access(_api(ns).new_ref(ns.asarray(_X)))


def _add(index: Any, value: Any) -> Any:
    def write(r: Any) -> None:
        r[index] += value

    return write


def _ref_sharding(ns: Any) -> Any:
    """A ref's sharding and its type's are the held array's (eagerly and traced)."""
    api = _api(ns)
    x = api.device_put(_X)
    ref = api.new_ref(x)
    traced = []

    def read(r: Any) -> Any:
        traced.append(api.typeof(r).sharding.spec == api.typeof(r[...]).sharding.spec)
        return r[...]

    y = api.jit(read)(ref)
    return np.array([
        ref.sharding == x.sharding,
        y.sharding == x.sharding,
        api.typeof(ref).sharding == api.typeof(x).sharding,
        *traced,
    ])  # fmt: skip


ROWS: list[tuple[str, Any]] = [
    ("set_int32_into_float32", lambda ns: _in_jit(ns, _set(0, np.int32(2)))),
    ("set_int32_vector_into_float32",
     lambda ns: _in_jit(ns, _set(slice(0, 2), np.ones(2, np.int32)))),
    ("set_float64_scalar_into_float32", lambda ns: _in_jit(ns, _set(0, np.float64(2.5)))),
    ("set_longer_vector", lambda ns: _in_jit(ns, _set(slice(0, 2), np.ones(3, np.float32)))),
    ("set_scalar_into_slice", lambda ns: _in_jit(ns, _set(slice(0, 2), np.float32(7)))),
    ("set_row_of_wrong_length", lambda ns: _in_jit(ns, _set(1, np.ones(3, np.float32)), _M)),
    ("set_row", lambda ns: _in_jit(ns, _set(1, np.full(4, 9.0, np.float32)), _M)),
    ("add_row_of_wrong_length", lambda ns: _in_jit(ns, _add(2, np.ones(5, np.float32)), _M)),
    ("add_int32_row", lambda ns: _in_jit(ns, _add(0, np.ones(4, np.int32)), _M)),
    ("get_past_the_end_jit", lambda ns: _read_in_jit(ns, 5)),
    ("get_before_the_start_jit", lambda ns: _read_in_jit(ns, (-5, 1), _M)),
    ("set_past_the_end_jit", lambda ns: _in_jit(ns, _set(4, np.float32(10)))),
    ("add_before_the_start_jit", lambda ns: _in_jit(ns, _add(-9, np.float32(1)))),
    ("set_row_past_the_end_jit",
     lambda ns: _in_jit(ns, _set(3, np.full(4, 9.0, np.float32)), _M)),
    ("set_int_array_past_the_end_jit",
     lambda ns: _in_jit(ns, _set(np.array([0, 6]), np.array([-1, -2], np.float32)))),
    # which writes convert the value (JAX's ref_swap): a weak float into a float
    # ref and any integer into an integer ref; anything else is the dtype error
    ("add_weak_float_into_int32", lambda ns: _in_jit(ns, _add(0, 1.0), _I)),
    ("set_weak_int_into_float32", lambda ns: _in_jit(ns, _set(0, 1))),
    ("set_int32_into_int16", lambda ns: _in_jit(ns, _set(1, np.int32(7)), _I.astype(np.int16))),
    ("set_weak_float_into_bfloat16", lambda ns: _in_jit(ns, _set(1, 2.5), _B)),
    ("set_float32_into_bfloat16", lambda ns: _in_jit(ns, _set(1, np.float32(2.5)), _B)),
    ("addupdate_weak_float_into_bfloat16",
     lambda ns: _in_jit(ns, lambda r: _api(ns).ref.addupdate(r, 1, 2.5), _B)),
    ("addupdate_weak_int_into_int8",
     lambda ns: _in_jit(ns, lambda r: _api(ns).ref.addupdate(r, 1, 3), _I.astype(np.int8))),
    # free_ref inside the jit that made the ref: it is dead there
    ("get_after_free_ref", lambda ns: _freed_in_jit(ns, lambda r: r[...])),
    ("free_ref_then_nothing", lambda ns: _freed_in_jit(ns, lambda r: None)),
    ("sharding_of_a_ref_and_its_type", _ref_sharding),
]  # fmt: skip

_OUT_OF_BOUNDS = Raises(ValueError, "Out of bound indexer")


def _none_in_index(ns: Any) -> Any:
    """``None`` in a ref's index, eagerly and inside jit, reads and a write."""
    api = _api(ns)
    vector, matrix = api.new_ref(ns.asarray(_X)), api.new_ref(ns.asarray(_M))
    reads = [vector[None], matrix[None, 1], matrix[..., None]]
    in_jit = ns.jit(lambda x: api.new_ref(x)[None, 1])(_M)
    matrix[0, None] = np.full((1, 4), 7.0, np.float32)
    return [*reads, in_jit, api.freeze(matrix)]


def _none_in_index_numpy() -> Any:
    written = _M.copy()
    written[0, None] = 7.0
    return [_X[None], _M[None, 1], _M[..., None], _M[None, 1], written]


RAISES_ROWS: list[tuple[str, Any]] = [
    ("eager_get_past_the_end", lambda ns: _eager(ns, lambda r: r[4])),
    ("eager_set_past_the_end", lambda ns: _eager(ns, _set(7, np.float32(1)))),
    ("eager_add_before_the_start", lambda ns: _eager(ns, _add(-5, np.float32(1)))),
]  # fmt: skip


def cases() -> Iterator[Case]:
    helpers = "".join(inspect.getsource(h) for h in (_api, _in_jit, _set, _add))
    for name, fn in ROWS:
        case = script_case(f"ref.update_paths/{name}", fn, expect=AGREE, tags=["ref"])
        source = f"{case.source}\n{inspect.getsource(fn).strip()}\n{helpers}"
        if "_read_in_jit" in source:
            source += inspect.getsource(_read_in_jit)
        if "_freed_in_jit" in source:
            source += inspect.getsource(_freed_in_jit)
        yield replace(case, source=source)
    for name, fn in RAISES_ROWS:
        yield script_case(f"ref.update_paths/{name}", fn, expect=_OUT_OF_BOUNDS, tags=["ref"])
    yield script_case(
        "ref.update_paths/none_in_index", _none_in_index, expect=_none_in_index_numpy, tags=["ref"]
    )
