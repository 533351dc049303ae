"""refimpl.dtypes against JAX (the oracle), with x64 both off and on."""

from __future__ import annotations

import itertools
import random
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from refimpl import dtypes as rd
from refimpl.config import config

try:  # private, test-only: builds weakly typed arrays of non-default dtypes
    from jax._src.lax.lax import _convert_element_type as _jax_convert
except ImportError:  # pragma: no cover
    _jax_convert = None

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype")

NAMES = [rd.short_name(d) for d in rd.ALL_DTYPES]
PY_SCALARS = {"int": 1, "float": 1.5, "complex": 1j}


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """Set enable_x64 in refimpl and jax alike; restore both afterwards."""
    old_ri, old_jax = config.enable_x64, jax.config.jax_enable_x64
    config.update("enable_x64", request.param)
    jax.config.update("jax_enable_x64", request.param)
    yield request.param
    config.update("enable_x64", old_ri)
    jax.config.update("jax_enable_x64", old_jax)


def _dtype(name: str) -> np.dtype:
    return rd.ALL_DTYPES[NAMES.index(name)]


# Operand specs: "f32" strong array, "~f32" weakly typed array, "int"/"float"/"complex"
# a Python scalar.
def _jax_value(spec: str):
    """Build the JAX value for a spec; call inside a trace (eval_shape)."""
    if spec in PY_SCALARS:
        return PY_SCALARS[spec]
    if spec.startswith("~"):
        dt = jax.dtypes.canonicalize_dtype(_dtype(spec[1:]))
        return _jax_convert(jnp.zeros((), dt), dt, weak_type=True)
    return jnp.zeros((), _dtype(spec))


def _ri_operand(spec: str):
    if spec in PY_SCALARS:
        return PY_SCALARS[spec]
    if spec.startswith("~"):
        return (_dtype(spec[1:]), True)
    return (_dtype(spec), False)


_NO_PROMOTION = "TypePromotionError"


def _or_refused(fn, *args):
    """``fn(*args)``, or the marker for a mix with no promotion path (int4/uint4
    with anything but itself, bool and weak ints), on either side."""
    try:
        return fn(*args)
    except (jax.dtypes.TypePromotionError, rd.TypePromotionError):
        return _NO_PROMOTION


def _jax_add(*specs: str) -> tuple[np.dtype, bool]:
    """dtype and weak_type of adding the operands in JAX."""
    return _or_refused(_jax_add_unchecked, *specs)


def _jax_add_unchecked(*specs: str) -> tuple[np.dtype, bool]:

    def f():
        vals = [_jax_value(s) for s in specs]
        out = vals[0]
        for v in vals[1:]:
            out = jnp.add(out, v)
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = jax.eval_shape(f)
    return np.dtype(s.dtype), bool(s.weak_type)


def _jax_result_type(*specs: str) -> tuple[np.dtype, bool]:
    """jax.dtypes.result_type(..., return_weak_type_flag=True) of the operands."""
    return _or_refused(_jax_result_type_unchecked, *specs)


def _jax_result_type_unchecked(*specs: str) -> tuple[np.dtype, bool]:
    found = []

    def f():
        vals = [_jax_value(s) for s in specs]
        found.append(jax.dtypes.result_type(*vals, return_weak_type_flag=True))
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jax.eval_shape(f)
    dt, weak = found[0]
    return np.dtype(dt), bool(weak)


STRONG_AND_PY = NAMES + list(PY_SCALARS)
# no public JAX operation makes a weak int4/uint4 array, and JAX 0.10.2's
# result_type fails on one (KeyError 'V'): those are not compared
WEAK_ARRAYS = ["~" + n for n in NAMES if n not in ("i4", "u4")]


@pytest.mark.parametrize(("a", "b"), list(itertools.product(STRONG_AND_PY, repeat=2)))
def test_binary_promotion_matches_jax(x64, a, b):
    got = _or_refused(rd.result_type, _ri_operand(a), _ri_operand(b))
    assert got == _jax_add(a, b), (a, b)
    assert _or_refused(rd.jnp_result_type, _ri_operand(a), _ri_operand(b)) == _jax_result_type(a, b)
    assert got == _NO_PROMOTION or got[0] == rd.canonicalize_dtype(got[0])


@pytest.mark.skipif(_jax_convert is None, reason="jax private weak-type helper missing")
@pytest.mark.parametrize("a", WEAK_ARRAYS)
def test_weak_array_promotion_matches_jax(x64, a):
    """Weak arrays of non-default dtypes, against every operand kind."""
    a_dt = rd.canonicalize_dtype(_dtype(a[1:]))
    if a != "~bool":  # JAX can hold a weak bool, but no operation yields one
        assert _or_refused(rd.result_type, (a_dt, True)) == _jax_add(a)
    assert _or_refused(rd.jnp_result_type, (a_dt, True)) == _jax_result_type(a)
    for b in STRONG_AND_PY + WEAK_ARRAYS:
        ops = [(a_dt, True), _ri_operand(b)]
        assert _or_refused(rd.result_type, *ops) == _jax_add(a, b), (a, b)
        assert _or_refused(rd.jnp_result_type, *ops) == _jax_result_type(a, b), (a, b)


def test_ternary_promotion_matches_jax(x64):
    rng = random.Random(0)
    specs = STRONG_AND_PY + WEAK_ARRAYS
    for _ in range(300):
        triple = rng.sample(specs, 3)
        ops = [_ri_operand(s) for s in triple]
        assert _or_refused(rd.jnp_result_type, *ops) == _jax_result_type(*triple), triple
        # n-ary result_type is the join, so order and grouping don't matter for it
        assert _or_refused(rd.result_type, *ops) == _or_refused(rd.result_type, *reversed(ops)), (
            triple
        )


@pytest.mark.parametrize(("a", "b"), list(itertools.product(NAMES, repeat=2)))
def test_promote_types_matches_jax(x64, a, b):
    da, db = _dtype(a), _dtype(b)
    got = _or_refused(rd.promote_types, da, db)
    assert got == _or_refused(jnp.result_type, da, db)
    if got == _NO_PROMOTION:
        return
    if rd.canonicalize_dtype(da) == da and rd.canonicalize_dtype(db) == db:
        # jnp.promote_types neither canonicalizes inputs nor output
        assert got == jax.dtypes.canonicalize_dtype(jnp.promote_types(da, db))


@pytest.mark.parametrize("kind", [int, float, complex])
@pytest.mark.parametrize("name", NAMES)
def test_promote_types_with_python_types(x64, name, kind):
    dt = rd.canonicalize_dtype(_dtype(name))
    want = _or_refused(lambda: jax.dtypes.canonicalize_dtype(jnp.promote_types(dt, kind)))
    assert _or_refused(rd.promote_types, dt, kind) == want
    assert _or_refused(rd.promote_types, kind, dt) == want


def test_promotion_quirks(x64):
    i32, f32 = np.dtype(np.int32), np.dtype(np.float32)
    f64, i64 = np.dtype(np.float64), np.dtype(np.int64)
    # bf16 and f16 have no common 16-bit type
    assert rd.promote_types(rd.bfloat16, np.float16) == f32
    # a weak int never widens a strong int; a weak float makes ints float
    assert rd.result_type((np.int8, False), 1) == (np.dtype(np.int8), False)
    assert rd.result_type((np.uint8, False), 1.5) == (f64 if x64 else f32, True)
    assert rd.result_type((np.float16, False), 1.5) == (np.dtype(np.float16), False)
    # bool is never weak, and a Python bool is strong
    assert rd.result_type((np.bool_, False), True) == (np.dtype(np.bool_), False)
    assert rd.result_type((np.bool_, False), 1) == (i64 if x64 else i32, True)
    # u64 x i64: the join is the weak float node
    u64, s64 = np.dtype(np.uint64), np.dtype(np.int64)
    if x64:
        assert rd.result_type((u64, False), (s64, False)) == (f64, True)
    else:  # inputs canonicalize first: u32 x i32 -> i32
        assert rd.result_type((u64, False), (s64, False)) == (i32, False)
    # complex with f16 stays complex64
    assert rd.result_type((np.float16, False), 1j)[0] == np.dtype(np.complex64)


def test_result_type_needs_operands():
    with pytest.raises(ValueError):
        rd.result_type()


def test_result_type_accepts_values_and_objects(x64):
    class Fake:
        dtype = np.dtype(np.float16)
        weak_type = True

    assert rd.result_type(np.zeros(3, np.int8), 2) == (np.dtype(np.int8), False)
    assert rd.result_type(Fake(), np.float32(1)) == (np.dtype(np.float32), False)
    assert rd.result_type(np.dtype("uint8"), int) == (np.dtype(np.uint8), False)


# --------------------------------------------------------------------------
# canonicalization


@pytest.mark.parametrize("name", NAMES)
def test_canonicalize_matches_jax(x64, name):
    dt = _dtype(name)
    assert rd.canonicalize_dtype(dt) == jax.dtypes.canonicalize_dtype(dt)
    assert rd.canonicalize_dtype(dt.name) == jax.dtypes.canonicalize_dtype(dt)


def test_canonicalize_spellings(x64):
    wide = {True: "64", False: "32"}[x64]
    assert rd.canonicalize_dtype(np.float64) == np.dtype("float" + wide)
    assert rd.canonicalize_dtype(float) == np.dtype("float" + wide)
    assert rd.canonicalize_dtype(int) == np.dtype("int" + wide)
    assert rd.canonicalize_dtype("uint64") == np.dtype("uint" + wide)
    assert rd.canonicalize_dtype(complex) == np.dtype("complex" + ("128" if x64 else "64"))
    assert rd.canonicalize_dtype(bool) == np.dtype(np.bool_)
    assert rd.canonicalize_dtype(ml_dtypes.bfloat16) == rd.bfloat16
    assert rd.canonicalize_dtype("bfloat16") == rd.bfloat16
    assert rd.canonicalize_dtype(np.dtype(">i2")) == np.dtype(np.int16)
    assert rd.canonicalize_dtype("f4") == np.dtype(np.float32)


@pytest.mark.parametrize(
    "bad",
    [
        "U5",
        str,
        object,
        "datetime64[ns]",
        "timedelta64",
        ml_dtypes.float4_e2m1fn,
        np.void,
        "foo",
    ],
)
def test_canonicalize_rejects(bad):
    with pytest.raises(TypeError) as e:
        rd.canonicalize_dtype(bad)
    assert "dtype" in str(e.value)
    assert str(bad) in str(e.value) or repr(bad) in str(e.value)


def test_canonicalize_unhashable_spec():
    with pytest.raises(TypeError):
        rd.canonicalize_dtype([("a", "f4")])


# --------------------------------------------------------------------------
# names, predicates, scalars


def test_all_dtypes_and_short_names():
    assert len(rd.ALL_DTYPES) == 24
    assert all(isinstance(d, np.dtype) for d in rd.ALL_DTYPES)
    assert rd.bfloat16 == np.dtype(ml_dtypes.bfloat16)
    assert NAMES == [
        "bool", "i4", "i8", "i16", "i32", "i64", "u4", "u8", "u16", "u32", "u64",
        "f16", "bf16", "f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz", "f8_e4m3b11fnuz",
        "f8_e3m4", "f8_e4m3", "f32", "f64", "c64", "c128",
    ]  # fmt: skip
    assert rd.short_name("float32") == "f32"
    with pytest.raises(TypeError):
        rd.short_name(object)


@pytest.mark.parametrize("name", NAMES)
def test_predicates_match_jnp(name):
    dt = _dtype(name)
    assert rd.is_bool(dt) == jnp.isdtype(dt, "bool")
    assert rd.is_signed_int(dt) == jnp.isdtype(dt, "signed integer")
    assert rd.is_unsigned_int(dt) == jnp.isdtype(dt, "unsigned integer")
    assert rd.is_integer(dt) == jnp.isdtype(dt, "integral")
    assert rd.is_floating(dt) == jnp.isdtype(dt, "real floating")
    assert rd.is_complex(dt) == jnp.isdtype(dt, "complex floating")
    assert rd.is_inexact(dt) == jnp.issubdtype(dt, jnp.inexact)


@pytest.mark.parametrize("value", [True, 3, 2.5, 1 + 2j])
def test_python_scalars_match_jax(x64, value):
    arr = jnp.asarray(value)
    assert rd.is_python_scalar(value)
    assert rd.python_scalar_dtype(value) == arr.dtype
    assert rd.weak_type_of_value(value) == arr.weak_type
    kind = rd.dtype_to_weak_python_kind(arr.dtype)
    assert kind is type(value)
    assert rd.weak_default_dtype(kind) == arr.dtype


@pytest.mark.parametrize(
    "value",
    [np.float64(1.0), np.int32(1), np.bool_(True), np.zeros(2), np.complex128(1)],
)
def test_numpy_values_are_strong(value):
    assert not rd.is_python_scalar(value)
    assert not rd.weak_type_of_value(value)
    assert jnp.asarray(value).weak_type is False


def test_python_scalar_dtype_rejects():
    with pytest.raises(TypeError):
        rd.python_scalar_dtype(np.float32(1))
    with pytest.raises(TypeError):
        rd.python_scalar_dtype("1")


def test_weak_default_dtype(x64):
    assert rd.weak_default_dtype("u") == np.dtype("uint64" if x64 else "uint32")
    assert rd.weak_default_dtype("b") == np.dtype(np.bool_)
    with pytest.raises(ValueError):
        rd.weak_default_dtype("x")


def test_x64_enabled(x64):
    assert rd.x64_enabled() is x64
    assert rd.X64_SENSITIVE == ("enable_x64",)


# --------------------------------------------------------------------------
# special values


REAL_NAMES = [n for n in NAMES if n not in ("c64", "c128")]


@pytest.mark.parametrize("name", REAL_NAMES)
def test_reduction_identities_match_lax(x64, name):
    dt = rd.canonicalize_dtype(_dtype(name))
    empty = jnp.zeros((0,), dt)
    lo, hi = rd.min_value(dt), rd.max_value(dt)
    assert lo.dtype == dt and hi.dtype == dt
    assert lo == np.asarray(jax.lax.reduce_max(empty, axes=(0,)))
    assert hi == np.asarray(jax.lax.reduce_min(empty, axes=(0,)))


@pytest.mark.parametrize("name", NAMES)
def test_zero_one(name):
    dt = _dtype(name)
    z, o = rd.zero(dt), rd.one(dt)
    assert z.dtype == dt and o.dtype == dt
    assert z == 0 and o == 1


def test_complex_extremes():
    assert rd.min_value(np.complex64) == complex(-np.inf, 0)
    assert rd.max_value(np.complex128).dtype == np.dtype(np.complex128)
    assert rd.max_value(np.bool_) == np.True_ and rd.min_value(np.bool_) == np.False_
