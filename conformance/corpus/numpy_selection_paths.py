"""jax.numpy's ``put``, ``place``, ``trapezoid`` and the shape queries as
JAX's tests/lax_numpy_test.py (its second half) uses them, judged by JAX
0.10.2 (``AGREE``, recorded).

``np.selection.paths/*``: ``put``'s index rule per mode (an index out of
range is clipped by default, as ``unravel_index``; ``"wrap"``; ``"clip"``),
an empty ``v``; ``put_along_axis``'s modes ("clip" clamps, "fill" drops);
``place`` with empty
values (ValueError); ``trapezoid`` with an array ``dx`` lined up with ``y``'s
trailing axes, and ``y`` promoted with ``x``; ``size`` along a tuple of axes
and a repeated axis (ValueError); ``rot90`` of a vector (ValueError).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np

from conformance.case import Case, script_case

_A = np.arange(6, dtype=np.float32).reshape(2, 3)
_I = np.array([7, -1, -8], np.int32)
_V = np.array([10.0, 20.0], np.float32)
_Y = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
_DX = np.array([[0.5, 1.0, 2.0, 1.5], [1.0, 1.0, 0.25, 3.0]], np.float32)


def _put(ns: Any, mode: Any) -> Any:
    return ns.np_.put(_A, _I, _V, mode=mode, inplace=False)


def _put_along(ns: Any, mode: str) -> Any:
    idx = np.array([[7, -1], [-9, 0]], np.int32)
    return ns.jit(lambda a: ns.np_.put_along_axis(a, idx, 5.0, axis=1, inplace=False, mode=mode))(
        _A
    )


ROWS: list[tuple[str, Any]] = [
    ("put/default_mode", lambda ns: _put(ns, None)),
    ("put/wrap", lambda ns: _put(ns, "wrap")),
    ("put/clip", lambda ns: _put(ns, "clip")),
    ("put/jit", lambda ns: ns.jit(lambda a, i, v: ns.np_.put(a, i, v, inplace=False))(_A, _I, _V)),
    ("put/empty_values", lambda ns: ns.np_.put(_A, _I, _V[:0], inplace=False)),
    (
        "place/empty_values",
        lambda ns: ns.capture(lambda: ns.np_.place(_A, _A > 9, _V[:0], inplace=False)),
    ),
    ("place/cycles_values", lambda ns: ns.np_.place(_A, _A > 1, _V, inplace=False)),
    ("trapezoid/dx_array_axis_0", lambda ns: ns.np_.trapezoid(_Y, dx=_DX[:, :3].T, axis=0)),
    ("trapezoid/dx_array_axis_1", lambda ns: ns.np_.trapezoid(_Y, dx=_DX, axis=1)),
    ("trapezoid/dx_varies", lambda ns: ns.np_.trapezoid(_Y, dx=_DX[0], axis=-1)),
    (
        "trapezoid/int_y_half_x",
        lambda ns: ns.np_.trapezoid(np.arange(3, dtype=np.int32), np.array([0, 1, 3], np.float16)),
    ),
    ("put_along_axis/clip", lambda ns: _put_along(ns, "clip")),
    ("put_along_axis/fill", lambda ns: _put_along(ns, "fill")),
    (
        "put_along_axis/promise_in_bounds",
        lambda ns: ns.np_.put_along_axis(
            _A, np.array([[1], [-1]]), 5.0, axis=1, inplace=False, mode="promise_in_bounds"
        ),
    ),
    ("size/axes_tuple", lambda ns: ns.np_.size(ns.asarray(_Y), (0, 2))),
    ("size/repeated_axis", lambda ns: ns.capture(lambda: ns.np_.size(ns.asarray(_Y), (1, -2)))),
    ("rot90/vector", lambda ns: ns.capture(lambda: ns.np_.rot90(ns.asarray(_V)))),
    # classes JAX's lax_numpy_test functions sweep found (test_lax_numpy_sweep_parity.py)
    ("delete/list_obj", lambda ns: ns.capture(lambda: ns.np_.delete(_V, [0, 2]))),
    (
        "extract/fill_value_none",
        lambda ns: ns.capture(lambda: ns.np_.extract(_V > 0, _V, fill_value=None)),
    ),
    ("vecdot/axes_differ", lambda ns: ns.capture(lambda: ns.np_.vecdot(_Y, _V))),
    (
        "promote_types/float64_without_x64",
        lambda ns: np.zeros((), ns.np_.promote_types(np.int32, np.float64)),
    ),
    ("polyint/weak_constant", lambda ns: ns.np_.polyint(np.ones(2, np.int32), 1, 2.0)),
    ("polyint/list_constants", lambda ns: ns.capture(lambda: ns.np_.polyint(_V, 2, [1.0, 2.0]))),
    ("polyadd/one_empty", lambda ns: ns.capture(lambda: ns.np_.polyadd(_V, _V[:0]))),
    (
        "polymul/empty_is_zero",
        lambda ns: ns.np_.polymul(np.ones(2, np.int8), np.zeros(0, np.float16)),
    ),
    ("vsplit/one_d", lambda ns: ns.np_.vsplit(np.arange(6.0, dtype=np.float32), 2)),
    (
        "dot/scalar_preferred_element_type",
        lambda ns: ns.np_.dot(
            np.int8(3), np.array([2.7246094, -4.3], np.float16), preferred_element_type=np.float32
        ),
    ),
    ("dsplit/two_d", lambda ns: ns.capture(lambda: ns.np_.dsplit(np.ones((2, 4), np.float32), 2))),
    # classes lax_numpy_test's other methods found (test_lax_numpy_methods_heldback_parity.py)
    ("insert/slice_among_n", lambda ns: ns.np_.insert(_A, slice(1, -1), 7.0, axis=1)),
    ("repeat/one_element_repeats", lambda ns: ns.np_.repeat(_A, np.array([2]), axis=0)),
    ("hanning/float_length", lambda ns: ns.np_.hanning(5.0)),
    ("kaiser/traced_length", lambda ns: ns.capture(lambda: ns.jit(ns.np_.kaiser)(5, 1.0))),
    (
        "isscalar/str_and_bytes",
        lambda ns: np.array([ns.np_.isscalar("a"), ns.np_.isscalar(b"")]),
    ),
    (
        "isdtype/float8_real_floating",
        lambda ns: np.array(
            [ns.np_.isdtype(np.dtype(ml_dtypes.float8_e4m3fn), "real floating")]
            + [ns.np_.isdtype(np.dtype(ml_dtypes.int2), "signed integer")]
        ),
    ),
    ("load/bfloat16", lambda ns: _saved_and_loaded(ns, np.arange(4).astype(ml_dtypes.bfloat16))),
    (
        "unravel_index/numpy_int_shape",
        lambda ns: ns.np_.unravel_index(np.array([5, 7], np.int8), np.array([3, 4])),
    ),
    # classes lax_numpy_test.py run unchanged found (test_lax_numpy_files_heldback_parity.py)
    (
        "vecdot/axis_per_operand",
        lambda ns: ns.np_.vecdot(_Y.reshape(4, 2, 3)[:, :1], _V.repeat(2), axis=0),
    ),
    (
        "vecdot/batch_not_broadcastable",
        lambda ns: ns.capture(lambda: ns.np_.vecdot(_Y.reshape(3, 2, 4), _Y[:1, :2, :3], axis=-2)),
    ),
    (
        "unravel_index/traced_shape",
        lambda ns: ns.jit(ns.np_.unravel_index)(np.array([5, -7, 30], np.int8), (3, 4)),
    ),
    (
        "arccosh/complex_real_axis_jvp",
        lambda ns: ns.api.jvp(
            ns.np_.arccosh,
            (np.array([1.25, 1.6, 3.0], np.complex64),),
            (np.ones(3, np.complex64),),
        ),
    ),
]


def _saved_and_loaded(ns: Any, arr: np.ndarray) -> Any:
    f = io.BytesIO()
    ns.np_.save(f, arr)
    f.seek(0)
    return ns.np_.load(f)


def cases() -> Iterator[Case]:
    for name, fn in ROWS:
        yield script_case(f"np.selection.paths/{name}", fn)
