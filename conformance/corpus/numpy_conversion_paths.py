"""jax.numpy's conversions and index functions as JAX's tests/lax_numpy_test.py
(testArrayFromInteger ... testEDiff1d) uses them, judged by JAX 0.10.2
(``AGREE``, recorded).

``np.conversion.paths/*``: ``asarray``/``array`` of an ``__array__`` object,
a bytearray or memoryview, a ``__jax_array__`` object (strong; an operator
converts it too, ``sin`` raises ValueError), None (ValueError);
``iscomplexobj`` of None and of a list; ``astype(copy=True)`` keeps the
input; ``ravel(order="F")``; ``ravel_multi_index``'s ``dtype`` and ``'ignore'``
mode, its result dtype for int8 coordinates, its and ``choose``'s
mode="raise" under jit (ConcretizationTypeError); ``unravel_index`` with a
zero-size dimension and float indices; ``isclose`` with infinite tolerances
and of typed keys; ``Array.item`` with an index, ``argsort(dtype=)``,
``lexsort`` of rank-0 keys, ``partition`` of bool (TypeError), ``roll``
broadcasting shifts, ``bincount`` of negative entries and with int8
weights, ``take`` of bool indices, ``select`` of an int condition, ``block``
of mismatched depths (ValueError).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.case import Case, script_case

_I8 = np.array([0, 1, 5], np.int8)
_VALS = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32)
_BOOL_BYTES = np.array([0, 1, 2, 122, 255], np.uint8).view(bool)


class _HostArray:
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray([1.5, 2.5], dtype=dtype)


def _wrapped(ns: Any) -> Any:
    class Wrapped:
        def __jax_array__(self) -> Any:
            return ns.np_.array(3.0)

    return Wrapped()


def _isclose(ns: Any, atol: float, rtol: float) -> Any:
    x, y = np.meshgrid(_VALS, _VALS)
    return ns.np_.isclose(x, y, atol=atol, rtol=rtol)


def _astype_copy(ns: Any) -> Any:
    x = ns.np_.arange(5, dtype="int32")
    y = x.astype("int32", copy=True)
    y.delete()
    return ns.is_deleted(x)


def _pickled(ns: Any, x: Any) -> list:
    y = pickle.loads(pickle.dumps(x))
    return [y, ns.weak_type(y), y.committed]


ROWS: list[tuple[str, Any]] = [
    # an array pickles as its value and weak type; it comes back uncommitted
    ("pickle/weak", lambda ns: _pickled(ns, ns.np_.asarray(2.0) * 1.0)),
    (
        "pickle/jit_committed",
        lambda ns: _pickled(
            ns,
            ns.jit(lambda x: x * 2)(
                ns.device_put(np.arange(4, dtype=np.int8), ns.api.devices()[0])
            ),
        ),
    ),
    ("pickle/traced", lambda ns: ns.capture(ns.jit(lambda x: pickle.dumps(x) and x), 1.0)),
    ("asarray/array_protocol", lambda ns: ns.np_.asarray(_HostArray())),
    # jnp.reshape calls a NumPy array's (or scalar's) own method: NumPy results
    (
        "reshape/numpy_forwards_to_its_method",
        lambda ns: (
            ns.np_.reshape(np.arange(6.0), (3, 2)),
            ns.np_.reshape(np.float32(2), (1,)),
            ns.np_.ravel(np.arange(6.0)),
            ns.np_.reshape(2.0, (1,)),
        ),
    ),
    ("array/bytearray_ndmin", lambda ns: ns.np_.array(bytearray(b"\x2a\xf3"), ndmin=2)),
    ("asarray/memoryview", lambda ns: ns.np_.asarray(memoryview(b"\x01\x02"))),
    ("array/jax_array_protocol", lambda ns: ns.np_.array(_wrapped(ns))),
    ("operator/jax_array_protocol", lambda ns: _wrapped(ns) * ns.np_.arange(3.0)),
    ("sin/jax_array_protocol", lambda ns: ns.capture(lambda: ns.np_.sin(_wrapped(ns)))),
    ("array/none", lambda ns: ns.capture(lambda: ns.np_.array([0.0, None]))),
    (
        "iscomplexobj/any_object",
        lambda ns: [ns.np_.iscomplexobj(None), ns.np_.iscomplexobj([1 + 1j])],
    ),
    ("astype/copy", _astype_copy),
    ("ravel/order_F", lambda ns: ns.asarray(np.arange(6).reshape(2, 3)).ravel(order="F")),
    (
        "ravel_multi_index/dtype_ignore",
        lambda ns: ns.np_.ravel_multi_index((_I8, _I8), (2, 3), mode="ignore", dtype="int16"),
    ),
    (
        "ravel_multi_index/int8_wrap",
        lambda ns: ns.np_.ravel_multi_index((_I8, _I8), (2, 3), "wrap"),
    ),
    (
        "ravel_multi_index/jit_raise",
        lambda ns: ns.capture(
            lambda: ns.jit(lambda i: ns.np_.ravel_multi_index((i, i), (2, 3)))(_I8)
        ),
    ),
    (
        "choose/jit_raise",
        lambda ns: ns.capture(lambda: ns.jit(lambda a: ns.np_.choose(a, [_VALS, -_VALS]))(_I8)),
    ),
    ("unravel_index/zero_size_dim", lambda ns: ns.np_.unravel_index(np.int32(4), (0, 3))),
    (
        "unravel_index/float",
        lambda ns: ns.np_.unravel_index(np.array([-9.0, 4.0, 40.0], np.float32), (3, 4)),
    ),
    ("isclose/inf_atol", lambda ns: _isclose(ns, np.inf, 0.0)),
    ("isclose/inf_rtol", lambda ns: _isclose(ns, 0.0, np.inf)),
    ("item/flat_index", lambda ns: ns.asarray(np.arange(6).reshape(2, 3)).item(4)),
    ("item/axis_indices", lambda ns: ns.asarray(np.arange(6.0).reshape(2, 3)).item((1, 2))),
    ("argsort/dtype", lambda ns: ns.np_.argsort(_VALS, dtype="int16")),
    ("lexsort/rank_zero_keys", lambda ns: ns.np_.lexsort(np.array([2.0, 1.0], np.float32))),
    ("partition/bool", lambda ns: ns.capture(lambda: ns.np_.partition(np.array([True]), 0))),
    ("roll/broadcast_shifts", lambda ns: ns.np_.roll(np.arange(6).reshape(2, 3), (1, 2), (1,))),
    ("bincount/negative", lambda ns: ns.np_.bincount(np.array([-3, 0, 2, -1], np.int32))),
    (
        "bincount/int8_weights",
        lambda ns: ns.jit(lambda x, w: ns.np_.bincount(x, w, length=4))(
            np.array([1, -1, 1], np.int32), np.array([2, 3, 4], np.int8)
        ),
    ),
    ("take/bool_indices", lambda ns: ns.np_.take(_VALS, np.array([True, False]))),
    (
        "select/int_condition",
        lambda ns: ns.np_.select([np.array([2, 0, 1])], [np.arange(3.0, dtype=np.float32)]),
    ),
    ("block/mismatched_depth", lambda ns: ns.capture(lambda: ns.np_.block([[1, 2], 3]))),
    # bool bytes other than 0 and 1 (NumPy bytes viewed as bool): a view keeps
    # them; conversions read them as XLA does (unsigned, 4-bit and complex
    # targets as a signed byte, the others as != 0)
    (
        "view/bool_bytes",
        lambda ns: [
            ns.asarray(_BOOL_BYTES).view(np.int8),
            ns.jit(lambda x: x.view(np.uint8))(_BOOL_BYTES),
            *(
                ns.asarray(_BOOL_BYTES).astype(t)
                for t in ["uint16", "uint4", "int4", "int32", "float32", "complex64"]
            ),
        ],
    ),
    (
        "isclose/keys",
        lambda ns: ns.np_.isclose(
            ns.api.random.split(ns.api.random.key(0), 3), ns.api.random.key(0)
        ),
    ),
]


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        yield script_case(f"np.conversion.paths/{name}", fn)
