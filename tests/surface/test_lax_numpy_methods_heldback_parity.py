# ruff: noqa: B023  (the lambdas are called within their loop iteration)
"""JAX 0.10.2's tests/lax_numpy_test.py, held back (issue 29): the test
methods the function, reducer and operator sweeps do not generate (issue
regressions, padding, insert/delete/repeat corner cases, I/O, creation from
objects, weak types ...), their programs with only the call conventions
adapted, run on JAX (the oracle, live) and on refimpl on both backends,
eagerly and under ``jit``.

Compared: every output's dtype, weak type, shape and values (floats to a
tolerance: XLA's and NumPy's kernels may differ in the last bit on another
CPU); an exception by its class's name.
"""

from __future__ import annotations

import io
from fractions import Fraction

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp

LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _form(v):
    """A comparable form: arrays as (NumPy value, weak type, is a NumPy
    array); Python values as they are."""
    if isinstance(v, (list, tuple)):
        return [_form(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, complex, str)):
        return v
    if isinstance(v, np.ndarray):
        return ("ndarray", v)
    return ("array", np.asarray(v), bool(getattr(v, "weak_type", False)))


def _outcome(fn):
    try:
        return "ok", _form(fn())
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raise", type(e).__name__


def _assert_same(got, want, path: str = "out") -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, tuple):
        assert got[0] == want[0], (path, got, want)
        g, w = got[1], want[1]
        assert (g.dtype, g.shape, got[2:]) == (w.dtype, w.shape, want[2:]), (path, got, want)
        if w.dtype.kind in "fc" or w.dtype == ml_dtypes.bfloat16:
            wide = np.complex128 if w.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(
                g.astype(wide), w.astype(wide), rtol=1e-5, atol=1e-6, err_msg=path
            )
        else:
            np.testing.assert_array_equal(g, w, err_msg=path)
    else:
        assert got == want, (path, got, want)


def _same(program) -> None:
    want = _outcome(lambda: program(*LIBS["jax"]))
    got = _outcome(lambda: program(*LIBS["ri"]))
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] == want[1], (got, want)
    else:
        _assert_same(got[1], want[1])


def _saved_and_loaded(np_, arr, allow_pickle):
    f = io.BytesIO()
    np_.save(f, arr)
    f.seek(0)
    return np_.load(f, allow_pickle=allow_pickle)


_KIND_NAMES = (
    "bool",
    "signed integer",
    "unsigned integer",
    "integral",
    "real floating",
    "complex floating",
    "numeric",
)
Z_REAL = np.array([1.25, 1.6, 3.0], np.complex64)
D34 = np.arange(12, dtype=np.float32).reshape(3, 4)
M6 = np.array([1, 2, 3, 4, 5, 6], np.int32)

CASES = {
    # testLoad: bfloat16 (NumPy writes it as void V2) and object arrays come back
    "load_bfloat16": lambda lib, np_: _saved_and_loaded(
        np_, np.arange(10).astype(ml_dtypes.bfloat16), False
    ),
    "load_object_allow_pickle": lambda lib, np_: _saved_and_loaded(
        np_, np.arange(10).astype(object), True
    ),
    "load_float32": lambda lib, np_: _saved_and_loaded(np_, np.arange(10.0, dtype="f4"), False),
    # testInsertSlice: a slice picks among the n existing positions
    "insert_slice_axes": lambda lib, np_: [
        np_.insert(D34, slice(1, -1), np.float32(7), axis=axis) for axis in (None, 0, 1, -1)
    ],
    "insert_slice_steps": lambda lib, np_: [
        np_.insert(D34, s, np.float32(-1), axis=1)
        for s in (slice(None), slice(3, 0, -1), slice(5, 9))
    ],
    # testNonScalarRepeats: a one-element repeats array counts for every element
    "repeat_size1_array": lambda lib, np_: (
        [np_.repeat(M6, np_.array([2]), axis) for axis in (None, 0)]
        + [np_.repeat(M6.reshape(2, 3), np_.array([2]), axis) for axis in (0, 1)]
    ),
    "repeat_size1_array_jit": lambda lib, np_: lib.jit(
        lambda a, r: np_.repeat(a, r, 0, total_repeat_length=12)
    )(M6, np_.array([2])),
    "repeat_arrays": lambda lib, np_: [
        np_.repeat(M6, np_.array([1, 3, 0, 1, 1, 2])),
        np_.repeat(M6.reshape(2, 3), np_.array([1, 3, 2]), 1),
    ],
    # testWindowFunction: the length is int(M), concrete (a float is taken, as NumPy)
    "window_float_length": lambda lib, np_: (
        [getattr(np_, name)(5.0) for name in ("hanning", "hamming", "blackman", "bartlett")]
        + [np_.kaiser(5.0, 1.0), np_.hanning(np.int32(4))]
    ),
    "window_traced_length": lambda lib, np_: (
        [
            _outcome(lambda: lib.jit(getattr(np_, name))(5))[1]
            for name in ("hanning", "hamming", "blackman", "bartlett")
        ]
        + [_outcome(lambda: lib.jit(np_.kaiser)(5, 1.0))[1]]
    ),
    # testIsScalar / testIsNotScalar: what np.isscalar calls a scalar counts, as JAX
    "isscalar_objects": lambda lib, np_: [
        np_.isscalar(v)
        for v in ("a", b"a", np.str_("x"), Fraction(1, 2), 1j, False, 1, 1.0, np.int32(5))
        + (np.array(16), None, [1], slice(4), (), np.array([0]), np_.ones(()), np_.ones(2))
    ],
    # test_isdtype: every ml_dtypes float is "real floating", int2 an integer, as JAX
    "isdtype_ml_dtypes": lambda lib, np_: [
        np_.isdtype(np.dtype(getattr(ml_dtypes, name)), kind)
        for name in ("float8_e4m3fn", "float8_e4m3b11fnuz", "float4_e2m1fn", "int2", "uint4")
        for kind in _KIND_NAMES
    ],
    # testOpGrad (arccosh of complex64 from rand_positive: real z > 1, zero
    # imaginary part): the principal derivative 1 / (sqrt(z - 1) sqrt(z + 1))
    "arccosh_complex_real_axis_derivatives": lambda lib, np_: [
        lib.jvp(np_.arccosh, (Z_REAL,), (np.ones(3, np.complex64),)),
        lib.vjp(np_.arccosh, Z_REAL)[1](np.ones(3, np.complex64)),
        lib.jit(lambda z: lib.jvp(np_.arccosh, (z,), (np.ones(3, np.complex64),)))(Z_REAL),
        lib.lax.acosh(Z_REAL),
    ],
    # programs that agree, kept as a guard (the probes' representatives)
    "pad_modes_and_weak_types": lambda lib, np_: (
        [
            np_.pad(D34, ((1, 2), (2, 0)), mode=mode, **kw)
            for mode, kw in (
                ("constant", {"constant_values": ((0.5, -3.0), (1, 2))}),
                ("edge", {}),
                ("wrap", {}),
                ("maximum", {"stat_length": ((1, 2), (2, 2))}),
                ("median", {"stat_length": 2}),
                ("symmetric", {"reflect_type": "odd"}),
                ("reflect", {"reflect_type": "even"}),
                ("linear_ramp", {"end_values": ((1, 2), (-8.0, 2.0))}),
            )
        ]
        + [np_.pad(np_.asarray(1.0)[None], 1, mode=m) for m in ("constant", "mean", "edge")]
    ),
    "nonzero_argwhere_size_fill": lambda lib, np_: (
        [
            lib.jit(lambda v: np_.nonzero(v, size=size, fill_value=fill))(D34 % 3)
            for size, fill in ((2, None), (10, -1), (10, (7, 8)))
        ]
        + [lib.jit(lambda v: np_.argwhere(v, size=10, fill_value=(7, 8)))(D34 % 3)]
    ),
    "take_along_axis_modes": lambda lib, np_: [
        np_.take_along_axis(
            np_.arange(10.0), np_.array([-11, -10, -1, 0, 9, 10]), axis=0, mode=mode
        )
        for mode in (None, "fill", "clip", "one_hot")
    ],
    "array_weak_types": lambda lib, np_: (
        [
            f(v, dtype=dtype)
            for f in (np_.array, np_.asarray, lib.jit(np_.asarray))
            for v in (1, 1.0, np.int32(1), np.float32(1))
            for dtype in (None, float)
        ]
        + [np_.array([1]), np_.array([np_.asarray(1.0)]), np_.array([0, np.int16(1)])]
    ),
    "like_weak_types": lambda lib, np_: [
        getattr(np_, name)(np_.asarray(2.0) * np_.ones(3), *args, dtype=dtype, shape=shape)
        for name, args in (("full_like", (-100,)), ("ones_like", ()), ("zeros_like", ()))
        for dtype in (None, float)
        for shape in (None, (2,))
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lax_numpy_method_program(backend, name):
    _same(CASES[name])


# --- the same programs with x64 off and on (JAX's tests run in both modes) ------------------

X64_CASES = {
    # testTri: float32 by default even under x64; k an array of the default int
    "tri_default_dtype_and_big_k": lambda lib, np_: [
        np_.tri(3),
        np_.tri(3, 2, 1),
        lib.jit(lambda k: np_.tri(3, k=k))(1),
        _outcome(lambda: np_.tri(2, k=2**33)),
    ],
    # testUnravelIndex: NumPy integers in the shape join the coordinates' promotion
    "unravel_index_numpy_int_shape": lambda lib, np_: [
        np_.unravel_index(idx, shape)
        for idx in (np.int8(5), np.array([5, 7], np.uint8), np.int32(5))
        for shape in ((3, 4), np.array([3, 4]), np.array([3, 4], np.int8), (np.int16(3), 4))
    ],
    # testPolyfit (full=True) / lstsq: the rank in the default int
    "lstsq_rank_default_int": lambda lib, np_: [
        np_.linalg.lstsq(np.eye(3, 2, dtype=np.float32), np.ones(3, np.float32))[2],
        np_.polyfit(np.arange(5.0, dtype="f4"), np.arange(5.0, dtype="f4") ** 2, 2, full=True)[2],
    ],
}


@pytest.mark.parametrize("name", sorted(X64_CASES))
def test_lax_numpy_method_program_x64_modes(backend, x64_mode, name):
    _same(X64_CASES[name])


# jnp.vander is x[:, None] ** iota(N, x.dtype) in JAX 0.10.2: a bool x is
# iota's TypeError, the result is strong for a weak x, the derivative of the
# power-0 column at 0 is 0 * 0 ** -1 = nan, N = 0 of an unsigned x overflows
# (refimpl multiplied integer powers: int32 for bool, weak, 1.0, empty)
_F = np.array([0.0, 1.0, -2.0], np.float32)
VANDER = {
    "bool": lambda api, np_: np_.vander(np.array([True, False, True])),
    "bool_jit": lambda api, np_: api.jit(np_.vander)(np.array([True, False])),
    "int_increasing": lambda api, np_: np_.vander(np.arange(4, dtype=np.int32), 3, True),
    "weak_input": lambda api, np_: np_.vander(api.lax.broadcast_in_dim(2.0, (2,), ())),
    "grad_at_zero": lambda api, np_: api.grad(lambda x: np_.vander(x, 3).sum())(_F),
    "grad_at_zero_increasing": lambda api, np_: api.jit(
        api.grad(lambda x: np_.vander(x, 4, True).sum())
    )(_F),
    "jacfwd_at_zero": lambda api, np_: api.jacfwd(lambda x: np_.vander(x, 3))(_F),
    "uint8_no_columns": lambda api, np_: np_.vander(np.arange(3, dtype=np.uint8), 0),
    "negative_N": lambda api, np_: np_.vander(np.ones(3), -1),
}


@pytest.mark.parametrize("name", list(VANDER))
def test_vander_is_a_power_of_an_iota_as_jax(backend, name):
    _same(VANDER[name])
