"""Every lax primitive on the PJRT backend against the reference interpreter.

Each test jits one function applying many primitives (one XLA compile per
dtype and shape, not per op: compiling is the slow part) with
``backend="ref"`` and ``backend="pjrt"`` and compares every result: types
(shape, dtype, weak type) exactly, values exactly for integers and bools,
within a few ulps for float transcendentals, within a rounding bound for
contractions. Inputs include rank 0, zero-size dims, NaN, infinities and
signed zeros; 64-bit dtypes run with ``enable_x64``.
"""

from __future__ import annotations

import importlib.util
import pathlib
import warnings

import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
helpers.skip_without_pjrt()

pytestmark = [
    pytest.mark.pjrt,
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # NumPy on inf/NaN inputs
]

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
BOOL = np.dtype(bool)
SINTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32)]
UINTS = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32)]
INTS = SINTS + UINTS
FLOATS = [F16, BF16, F32]
WIDE = [np.dtype(t) for t in (np.int64, np.uint64)] + [F64, C128]  # need enable_x64


def dtype_params(dtypes):
    """pytest params for dtypes; the 64-bit ones switch x64 on."""
    return [pytest.param(d, id=d.name) for d in dtypes]


@pytest.fixture
def x64(request):
    """Turns enable_x64 on for the 64-bit dtypes (the conftest restores the config)."""
    callspec = getattr(request.node, "callspec", None)
    dtype = callspec.params.get("dtype") if callspec is not None else None
    if dtype in WIDE:
        ri.config.update("enable_x64", True)


def special_floats(dtype: np.dtype) -> np.ndarray:
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e4, 1e-3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array(values, np.float64).astype(dtype)


def random_values(rng, shape, dtype, special=True):
    """Random values of ``dtype``; float vectors get the special values in front."""
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
        if len(shape) == 1 and shape[0] >= 6:
            edges = (
                [0, 1, info.max, info.min, 2, 7] if dtype.kind == "i" else [0, 1, info.max, 2, 3, 7]
            )
            values[:6] = np.array(edges, dtype=dtype)
        return values
    if dtype.kind == "c":
        part = F32 if dtype == C64 else F64
        return (
            random_values(rng, shape, part, False) + 1j * random_values(rng, shape, part, False)
        ).astype(dtype)
    values = (rng.standard_normal(shape) * 3).astype(dtype)
    if special and len(shape) == 1 and shape[0] >= 14:
        values[:14] = special_floats(dtype)
    return values


SHAPES = [(), (2, 0), (24,)]  # rank 0, zero-size, and a vector of special values


def shape_params():
    return [pytest.param(s, id=str(s)) for s in SHAPES]


# --- elementwise ------------------------------------------------------------------------

EXACT_UNARY = ["neg", "sign", "floor", "ceil", "abs", "is_finite", "sqrt"]
APPROX_UNARY = [
    "exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "rsqrt", "cbrt", "logistic", "erf",
]  # fmt: skip
COMPLEX_UNARY = ["neg", "sign", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "rsqrt"]


def unary_ops(names):
    def fn(x):
        return {name: getattr(lax, name)(x) for name in names}

    return fn


@pytest.mark.parametrize("shape", shape_params())
@pytest.mark.parametrize("dtype", dtype_params(FLOATS + [F64]))
def test_float_unary(dtype, shape, rng, x64):
    x = random_values(rng, shape, dtype)
    ref, got = helpers.run_both(unary_ops(EXACT_UNARY + APPROX_UNARY), x)
    for name in EXACT_UNARY:
        helpers.assert_agree(ref[name], got[name], where=name)
    for name in APPROX_UNARY:
        helpers.assert_agree(ref[name], got[name], ulps=approx_ulps(name, dtype), where=name)


def approx_ulps(name: str, dtype: np.dtype) -> int:
    """How far XLA's and NumPy's implementations of a function may differ.

    float16/bfloat16 are computed in float32 and rounded once on both sides
    (a float32 difference may flip that rounding). XLA's float64 ``log1p`` is
    the outlier: up to ~128 ulps near x = -0.41 (measured).
    """
    if dtype in (F16, BF16):
        return 1
    if name == "log1p" and dtype == F64:
        return 256
    return 8


@pytest.mark.parametrize("dtype", dtype_params([C64, C128]))
def test_complex_unary(dtype, rng, x64):
    x = random_values(rng, (16,), dtype)
    ref, got = helpers.run_both(unary_ops(COMPLEX_UNARY), x)
    helpers.assert_agree(ref, got, ulps=8)


@pytest.mark.parametrize("dtype", dtype_params(INTS + WIDE[:2] + [BOOL]))
def test_integer_and_bool_unary(dtype, rng, x64):
    x = random_values(rng, (24,), dtype)
    names = ["not_"] if dtype == BOOL else ["not_", "neg", "sign"]
    if dtype.kind == "i":
        names += ["abs"]
    ref, got = helpers.run_both(unary_ops(names), x)
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("dtype", dtype_params(FLOATS))
def test_round_both_methods(dtype, rng):
    x = np.concatenate([random_values(rng, (24,), dtype), np.arange(-8, 8, dtype=dtype) / 2])
    ref, got = helpers.run_both(lambda v: (lax.round(v, 0), lax.round(v, 1)), x)
    helpers.assert_agree(ref, got)


def test_round_half_away_from_zero_just_below_one_half():
    ref, got = helpers.run_both(lambda v: lax.round(v, 0), np.float32(0.49999997))
    helpers.assert_agree(ref, got)


EXACT_BINARY = ["add", "sub", "mul", "div", "max", "min", "rem", "nextafter"]
APPROX_BINARY = ["pow", "atan2"]


def binary_ops(names):
    def fn(x, y):
        return {name: getattr(lax, name)(x, y) for name in names}

    return fn


@pytest.mark.parametrize("shapes", [((), ()), ((24,), (24,)), ((2, 3), ()), ((), (0,))], ids=str)
@pytest.mark.parametrize("dtype", dtype_params(FLOATS + [F64]))
def test_float_binary(dtype, shapes, rng, x64):
    x = random_values(rng, shapes[0], dtype)
    y = random_values(rng, shapes[1], dtype)
    if shapes[0] == shapes[1] and len(shapes[0]) == 1:
        y = y[::-1].copy()  # special values meet each other
    ref, got = helpers.run_both(binary_ops(EXACT_BINARY + APPROX_BINARY), x, y)
    for name in EXACT_BINARY:
        helpers.assert_agree(ref[name], got[name], where=name)
    for name in APPROX_BINARY:
        helpers.assert_agree(ref[name], got[name], ulps=approx_ulps(name, dtype), where=name)


@pytest.mark.parametrize("dtype", dtype_params([C64, C128]))
def test_complex_binary(dtype, rng, x64):
    x, y = random_values(rng, (16,), dtype), random_values(rng, (16,), dtype)
    ref, got = helpers.run_both(binary_ops(["add", "sub", "mul", "div", "pow", "eq", "ne"]), x, y)
    helpers.assert_agree(ref, got, ulps=8)


INT_BINARY = [
    "add", "sub", "mul", "div", "rem", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor",
    "eq", "ne", "lt", "le", "gt", "ge",
]  # fmt: skip
SHIFTS = ["shift_left", "shift_right_logical", "shift_right_arithmetic"]


@pytest.mark.parametrize("dtype", dtype_params(INTS + WIDE[:2]))
def test_integer_binary_with_xla_corner_cases(dtype, rng, x64):
    """Includes x / 0, x % 0, INT_MIN / -1 and shifts by negative or >= bit-width amounts."""
    x = random_values(rng, (48,), dtype)
    y = random_values(rng, (48,), dtype)[::-1].copy()
    y[:8] = np.array([0, 0, 1, 2, 3, 0, 0, 5], np.int64).astype(dtype)
    if dtype.kind == "i":
        x[8:10] = np.iinfo(dtype).min
        y[8:10] = -1
    if dtype == np.int64:  # see test_int64_min_in_a_division
        x = np.where(x == np.iinfo(dtype).min, 0, x)
        y = np.where(y == np.iinfo(dtype).min, 0, y)
    ref, got = helpers.run_both(binary_ops(INT_BINARY), x, y)
    helpers.assert_agree(ref, got)
    bits = 8 * dtype.itemsize
    amounts = np.arange(-3, bits + 5) if dtype.kind == "i" else np.arange(0, bits + 5)
    amounts = np.resize(amounts, 48).astype(dtype)
    ref, got = helpers.run_both(binary_ops(SHIFTS), x, amounts)
    helpers.assert_agree(ref, got)


def test_int64_min_in_a_division():
    ri.config.update("enable_x64", True)
    low = np.iinfo(np.int64).min
    x = np.array([low, low, -5, 5], np.int64)
    y = np.array([2, -3, low, low], np.int64)
    ref, got = helpers.run_both(lax.div, x, y)
    helpers.assert_agree(ref, got)


def test_bool_binary(rng):
    x, y = random_values(rng, (16,), BOOL), random_values(rng, (16,), BOOL)
    names = ["bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "ge", "max", "min"]
    ref, got = helpers.run_both(binary_ops(names), x, y)
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + [F64, C64]))
def test_float_comparisons_treat_nan_and_signed_zero_as_ieee(dtype, rng, x64):
    x = random_values(rng, (24,), dtype)
    y = x[::-1].copy()
    names = ["eq", "ne"] if dtype.kind == "c" else ["eq", "ne", "lt", "le", "gt", "ge"]
    ref, got = helpers.run_both(binary_ops(names), x, y)
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, 8, -1, -2, -3])
def test_integer_pow(y, rng):
    def fn(f16, bf16, f32, c64, i32, u8):
        out = {"f16": f16, "bf16": bf16, "f32": f32, "c64": c64}
        if y >= 0:
            out.update(i32=i32, u8=u8)
        return {k: lax.integer_pow(v, y) for k, v in out.items()}

    args = [random_values(rng, (24,), d) for d in (F16, BF16, F32, C64)]
    args += [random_values(rng, (24,), np.dtype(np.int32)), random_values(rng, (24,), UINTS[0])]
    ref, got = helpers.run_both(fn, *args)
    helpers.assert_agree(ref, got, ulps=2)


CONVERSION_TARGETS = INTS + [BOOL] + FLOATS + [C64]


@pytest.mark.parametrize("dtype", dtype_params(CONVERSION_TARGETS + WIDE))
def test_convert_element_type_to_every_dtype(dtype, rng, x64):
    """Float -> int truncates, saturates and maps NaN to 0; -> bool is != 0;
    complex -> real drops the imaginary part; narrowing floats round to nearest."""
    x = random_values(rng, (32,), dtype)
    if dtype.kind == "f" or dtype == BF16:
        x[20:26] = np.array([1e10, -1e10, 3e4, 255.9, -128.7, 65504], np.float64).astype(dtype)
    targets = CONVERSION_TARGETS + (WIDE if ri.config.enable_x64 else [])

    def fn(v):
        return {t.name: lax.convert_element_type(v, t) for t in targets}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref, got = helpers.run_both(fn, x)
    helpers.assert_agree(ref, got)


def test_weak_type_conversion_and_weak_outputs():
    ref, got = helpers.run_both(lambda x: (x * 2, lax.convert_element_type(x, F32, True)), 3.0)
    helpers.assert_agree(ref, got)
    assert got[0].weak_type and got[1].weak_type


@pytest.mark.parametrize("shape", [(), (5,), (2, 0)], ids=str)
def test_select_n_and_clamp(shape, rng):
    f32 = np.dtype(np.float32)

    def fn(pred, which, a, b, c, s):
        return {
            "select": lax.select(pred, a, b),
            "select_scalar_case": lax.select_n(pred, a, s),
            "select_n3": lax.select_n(which, a, b, c),
            "clamp": lax.clamp(b, a, c),
            "clamp_scalar_bounds": lax.clamp(np.float32(-0.5), a, np.float32(0.5)),
        }

    pred = random_values(rng, shape, BOOL)
    which = rng.integers(-2, 5, size=shape).astype(np.int32)  # out of range clamps
    a, b, c = (random_values(rng, shape, f32) for _ in range(3))
    ref, got = helpers.run_both(fn, pred, which, a, b, c, np.float32(7.0))
    helpers.assert_agree(ref, got)


def test_select_n_with_a_scalar_predicate(rng):
    a, b = random_values(rng, (4,), F32), random_values(rng, (4,), F32)
    for pred in (True, False):
        ref, got = helpers.run_both(lambda p, x, y: lax.select_n(p, x, y), np.bool_(pred), a, b)
        helpers.assert_agree(ref, got)


# --- reductions -------------------------------------------------------------------------------

REDUCTIONS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]
AXES = [(0,), (1,), (0, 2), (), (0, 1, 2)]


def reductions_of(names):
    def fn(x):
        return {f"{name}{axes}": getattr(lax, name)(x, axes) for name in names for axes in AXES}

    return fn


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + INTS + [F64, np.dtype(np.int64)]))
def test_reductions(dtype, rng, x64):
    x = random_values(rng, (3, 4, 5), dtype)
    if dtype.kind == "f" or dtype == BF16:
        x = np.where(rng.random(x.shape) < 0.1, np.nan, x).astype(dtype)  # NaN propagates
    ref, got = helpers.run_both(reductions_of(REDUCTIONS), x)
    # float16/bfloat16 accumulate in float32 and round once on both sides; float32
    # sums may add in another order
    helpers.assert_agree(ref, got, ulps=0 if dtype in (F16, BF16) else 8)


@pytest.mark.parametrize("dtype", dtype_params(INTS + [BOOL]))
def test_bitwise_reductions(dtype, rng):
    x = random_values(rng, (3, 4, 5), dtype)
    names = ["reduce_and", "reduce_or"] + (["reduce_max", "reduce_min"] if dtype == BOOL else [])
    ref, got = helpers.run_both(reductions_of(names), x)
    helpers.assert_agree(ref, got)


def test_complex_reductions_without_nan(rng):
    x = random_values(rng, (3, 4, 5), C64)
    x.real[0, 0, :3] = 1.0  # ties on the real part: the imaginary part decides
    ref, got = helpers.run_both(reductions_of(REDUCTIONS), x)
    helpers.assert_agree(ref, got, ulps=16)


@pytest.mark.parametrize("dtype", dtype_params([F32, np.dtype(np.int32), BOOL]))
def test_reductions_of_zero_size_axes_give_the_identity(dtype):
    x = np.zeros((0, 3), dtype)
    names = ["reduce_max", "reduce_min"] + (
        ["reduce_and", "reduce_or"] if dtype.kind in "bi" else []
    )
    names += [] if dtype == BOOL else ["reduce_sum", "reduce_prod"]

    def fn(v):
        return {name: getattr(lax, name)(v, (0,)) for name in names}

    ref, got = helpers.run_both(fn, x)
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + INTS + [BOOL]))
def test_argmax_argmin_ties_and_nan(dtype, rng):
    x = random_values(rng, (4, 6), dtype)
    if dtype.kind in "iub":
        x = (x % 3).astype(dtype) if dtype != BOOL else x  # many ties
    else:
        x = np.round(x).astype(dtype)
        x[1, 2] = x[1, 4] = np.nan
        x[2, 1] = -0.0
        x[2, 3] = 0.0

    def fn(v):
        return [
            op(v, axis, index_dtype)
            for op in (lax.argmax, lax.argmin)
            for axis in (0, 1)
            for index_dtype in (np.int32, np.uint8)
        ]

    ref, got = helpers.run_both(fn, x)
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + INTS + [C64]))
def test_cumulative(dtype, rng):
    x = random_values(rng, (3, 7), dtype, special=False)
    names = ["cumsum", "cumprod"] + ([] if dtype.kind == "c" else ["cummax", "cummin"])

    def fn(v):
        return {
            f"{name}{axis}{reverse}": getattr(lax, name)(v, axis, reverse)
            for name in names
            for axis in (0, 1)
            for reverse in (False, True)
        }

    ref, got = helpers.run_both(fn, x)
    helpers.assert_agree(ref, got, ulps=0 if dtype in (F16, BF16) else 8)


def test_cumulative_zero_size_and_nan(rng):
    x = np.array([1.0, np.nan, 2.0, -1.0], np.float32)
    fn = lambda v, e: (lax.cummax(v, 0), lax.cummin(v, 0, True), lax.cumsum(e, 0))  # noqa: E731
    ref, got = helpers.run_both(fn, x, np.zeros((0, 2), np.float32))
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + INTS + [BOOL, C64]))
def test_sort(dtype, rng):
    x = random_values(rng, (4, 24), dtype)
    if dtype.kind == "c":
        x[0, :4] = [np.nan, 1 + 1j, 1 - 1j, -0.0]
    elif dtype.kind in "iu":
        x = (x % 5).astype(dtype)  # ties keep their order (stable)
    payload = np.arange(x.size, dtype=np.int32).reshape(x.shape)

    def fn(v, p):
        return {
            "along1": lax.sort(v, 1),
            "along0": lax.sort(v, 0),
            "with_payload": lax.sort((v, p), 1, num_keys=1),
            "two_keys": lax.sort((v, lax.rem(p, np.int32(3))), 1, num_keys=2),
        }

    ref, got = helpers.run_both(fn, x, payload)
    helpers.assert_agree(ref, got)


def test_sort_zero_size():
    ref, got = helpers.run_both(lambda v: lax.sort(v, 0), np.zeros((0, 3), np.float32))
    helpers.assert_agree(ref, got)


# --- contractions --------------------------------------------------------------------------


def contraction_tolerance(dtype: np.dtype) -> dict:
    """Sums of a few dozen small products added in another order differ by a few
    ulps of the largest partial sum; float16/bfloat16 round once from float32 on
    both sides (a float32 difference can still flip that rounding: one ulp)."""
    if dtype in (F16, BF16):
        return dict(ulps=1)
    if dtype in (F32, C64):
        return dict(ulps=4, atol=2e-5)
    return {}


def small_values(rng, shape, dtype):
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low = -4 if dtype.kind == "i" else 0
        return rng.integers(low, 5, size=shape).astype(dtype)
    return random_values(rng, shape, dtype, special=False) / 3


@pytest.mark.parametrize("dtype", dtype_params(FLOATS + INTS + [BOOL, C64]))
def test_dot_general(dtype, rng):
    a, b = small_values(rng, (2, 3, 4), dtype), small_values(rng, (2, 4, 5), dtype)
    m, v = small_values(rng, (3, 4), dtype), small_values(rng, (4,), dtype)

    def fn(a, b, m, v):
        out = {
            "batched": lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
            "matvec": lax.dot_general(m, v, (((1,), (0,)), ((), ()))),
            "outer": lax.dot_general(v, v, (((), ()), ((), ()))),
            "inner": lax.dot_general(v, v, (((0,), (0,)), ((), ()))),
            "empty": lax.dot_general(m[:, :0], v[:0], (((1,), (0,)), ((), ()))),
        }
        if dtype.kind in "iub":
            out["to_f32"] = lax.dot_general(m, v, (((1,), (0,)), ((), ())), None, np.float32)
        if dtype == F16:
            out["to_f32"] = lax.dot_general(m, v, (((1,), (0,)), ((), ())), None, np.float32)
        return out

    ref, got = helpers.run_both(fn, a, b, m, v)
    helpers.assert_agree(ref, got, **contraction_tolerance(dtype))


def test_dot_general_mixed_dtypes_and_float_to_int(rng):
    m, v = small_values(rng, (3, 4), F32), small_values(rng, (4,), np.dtype(np.int8))
    i8 = small_values(rng, (3, 4), np.dtype(np.int8))

    def fn(m, v, i8):
        dims = (((1,), (0,)), ((), ()))
        return {
            "f32_x_i8": lax.dot_general(m, v, dims),
            "i8_to_i16": lax.dot_general(i8, v, dims, None, np.int16),
            "f32_to_i32": lax.dot_general(
                m * 100, lax.convert_element_type(v, F32), dims, None, np.int32
            ),
        }

    ref, got = helpers.run_both(fn, m, v, i8)
    helpers.assert_agree(ref, got, **contraction_tolerance(F32))


CONVS = {
    "strided_padded": lambda x, w: lax.conv_general_dilated(x, w, (1, 2), ((1, 0), (2, -1))),
    "rhs_dilated": lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", None, (2, 1)),
    "lhs_dilated": lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((2, 2), (1, 1)), (2, 1)),
}


# the integer types share one code path; two of them stand for all (XLA compiles
# convolutions slowly)
CONV_DTYPES = FLOATS + [np.dtype(np.int8), np.dtype(np.uint32), BOOL, C64]


@pytest.mark.parametrize("dtype", dtype_params(CONV_DTYPES))
def test_conv_general_dilated(dtype, rng):
    x, w = small_values(rng, (2, 4, 7, 6), dtype), small_values(rng, (3, 4, 3, 2), dtype)
    xg, wg = small_values(rng, (2, 4, 5, 5), dtype), small_values(rng, (4, 2, 3, 2), dtype)
    xb, wb = small_values(rng, (4, 5, 5, 3), dtype), small_values(rng, (2, 2, 3, 4), dtype)

    def fn(x, w, xg, wg, xb, wb):
        out = {name: conv(x, w) for name, conv in CONVS.items()}
        out["feature_groups"] = lax.conv_general_dilated(
            xg, wg, (1, 1), "SAME", feature_group_count=2
        )
        out["batch_groups_nhwc"] = lax.conv_general_dilated(
            xb, wb, (1, 1), "VALID", batch_group_count=2, dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return out

    ref, got = helpers.run_both(fn, x, w, xg, wg, xb, wb)
    helpers.assert_agree(ref, got, **contraction_tolerance(dtype))


def test_conv_1d_and_preferred_type(rng):
    x, w = small_values(rng, (1, 2, 9), F16), small_values(rng, (3, 2, 3), F16)
    i8x, i8w = (
        small_values(rng, (1, 2, 9), np.dtype(np.int8)),
        small_values(rng, (3, 2, 3), np.dtype(np.int8)),
    )

    def fn(x, w, a, b):
        return (
            lax.conv_general_dilated(x, w, (2,), "VALID", preferred_element_type=np.float32),
            lax.conv_general_dilated(a, b, (1,), ((1, 1),), preferred_element_type=np.int32),
            lax.conv_general_dilated(a, b, (1,), ((1, 1),), preferred_element_type=np.float32),
        )

    ref, got = helpers.run_both(fn, x, w, i8x, i8w)
    helpers.assert_agree(ref, got, **contraction_tolerance(F32))


# --- structural ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params([F32, BF16, np.dtype(np.int8), BOOL, C64]))
def test_structural(dtype, rng):
    x = random_values(rng, (2, 3, 4), dtype)
    empty = random_values(rng, (2, 0, 4), dtype)

    def fn(x, empty, pad_value):
        return {
            "broadcast": lax.broadcast_in_dim(x[:, :1], (2, 5, 3, 4), (0, 2, 3)),
            "broadcast_scalar": lax.broadcast_in_dim(pad_value, (3, 2), ()),
            "reshape": lax.reshape(x, (4, 6)),
            "reshape_dims": lax.reshape(x, (12, 2), dimensions=(2, 1, 0)),
            "squeeze": lax.squeeze(x[:1], (0,)),
            "expand_dims": lax.expand_dims(x, (0, 4)),
            "transpose": lax.transpose(x, (2, 0, 1)),
            "rev": lax.rev(x, (0, 2)),
            "slice": lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 3)),
            "slice_empty": lax.slice(x, (1, 1, 1), (1, 3, 1)),
            "pad": lax.pad(x, pad_value, ((1, 2, 0), (0, 0, 2), (-1, 3, 1))),
            "pad_crop": lax.pad(x, pad_value, ((-1, 0, 0), (-2, -1, 1), (0, -4, 0))),
            "concatenate": lax.concatenate([x, empty, x[:, :1]], 1),
            "concatenate_one": lax.concatenate([x], 2),
        }

    ref, got = helpers.run_both(fn, x, empty, random_values(rng, (), dtype))
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize(
    "dtype", dtype_params([np.dtype(np.int8), np.dtype(np.uint8), F16, BF16, F32, C64])
)
def test_iota_wraps_or_rounds_like_the_impl(dtype):
    def fn():
        return {
            "long": lax.iota(dtype, 300),  # past int8/uint8 range, past f16/bf16 integers
            "broadcasted": lax.broadcasted_iota(dtype, (3, 4, 2), 1),
            "empty": lax.broadcasted_iota(dtype, (0, 3), 1),
        }

    ref, got = helpers.run_both(fn)
    helpers.assert_agree(ref, got)


def test_iota_of_wide_dtypes_with_x64():
    ri.config.update("enable_x64", True)
    fn = lambda: (lax.iota(np.int64, 5), lax.iota(np.uint64, 5), lax.iota(np.float64, 5))  # noqa: E731
    ref, got = helpers.run_both(fn)
    helpers.assert_agree(ref, got)


# --- indexing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index_dtype", dtype_params([np.dtype(np.int32), np.dtype(np.int8), UINTS[2]])
)
def test_dynamic_slices_clamp_their_start_indices(index_dtype, rng):
    x = random_values(rng, (5, 6), F32)
    update = random_values(rng, (2, 3), F32)

    def fn(x, update, i, j):
        return (
            lax.dynamic_slice(x, (i, j), (2, 3)),
            lax.dynamic_update_slice(x, update, (i, j)),
            lax.dynamic_slice(x, (j, i), (5, 0)),
        )

    info = np.iinfo(index_dtype)
    starts = [0, 1, 4, 5, 9, int(info.max)] + ([-1, -3, -9, int(info.min)] if info.min < 0 else [])
    jitted = {b: ri.jit(fn, backend=b) for b in ("ref", "pjrt")}
    for i in starts:
        for j in (0, 3, -2 if info.min < 0 else 2):
            args = (x, update, index_dtype.type(i), index_dtype.type(j))
            helpers.assert_agree(jitted["ref"](*args), jitted["pjrt"](*args), where=f"({i}, {j})")


@pytest.mark.parametrize(
    "index_dtype", dtype_params([np.dtype(np.int32), np.dtype(np.int8), UINTS[0]])
)
def test_gather_clip_and_fill(index_dtype, rng):
    x = random_values(rng, (3, 200), F32)
    xi = random_values(rng, (4, 5), np.dtype(np.int16))
    info = np.iinfo(index_dtype)
    indices = np.array([0, 1, 199, 50, info.max, info.min, 2], np.int64)
    indices = np.concatenate([indices, np.array([-1, -200]) if info.min < 0 else np.array([3, 4])])
    indices = indices.astype(index_dtype)
    grid = indices[:6].reshape(2, 3)

    def fn(x, xi, indices, grid, scalar):
        from refimpl.primitives import indexing

        return {
            "clip": indexing.gather_along_axis(x, indices, 1),
            "clip_grid": indexing.gather_along_axis(x, grid, 1),
            "clip_scalar": indexing.gather_along_axis(x, scalar, 1),
            "fill_default": indexing.gather_along_axis(x, indices, 1, mode="fill"),
            "fill_value": indexing.gather_along_axis(x, grid, 1, mode="fill", fill_value=-7.5),
            "fill_int": indexing.gather_along_axis(xi, grid, 0, mode="fill"),
            "axis0": indexing.gather_along_axis(xi, grid, 0),
        }

    ref, got = helpers.run_both(fn, x, xi, indices, grid, indices[2])
    helpers.assert_agree(ref, got)


@pytest.mark.parametrize(
    "index_dtype", dtype_params([np.dtype(np.int32), np.dtype(np.int8), UINTS[0]])
)
def test_scatter_drop_and_clip_with_repeated_indices(index_dtype, rng):
    from refimpl.primitives import indexing

    x = random_values(rng, (4, 200), F32)
    xi = random_values(rng, (6, 3), np.dtype(np.int32))
    info = np.iinfo(index_dtype)
    raw = [0, 3, 3, 199, info.max, 7, 3] + ([-1, -5] if info.min < 0 else [250, 2])
    indices = np.array(raw, np.int64).astype(index_dtype)
    updates = random_values(rng, (4, indices.size), F32)
    small = np.array([[1, 1], [5, 0]], np.int64).astype(index_dtype)
    int_updates = random_values(rng, (2, 2, 3), np.dtype(np.int32))

    def fn(x, xi, indices, updates, small, int_updates):
        return {
            "drop": indexing.scatter_along_axis(x, indices, updates, 1),
            "clip": indexing.scatter_along_axis(x, indices, updates, 1, mode="clip"),
            "add_drop": indexing.scatter_add_along_axis(x, indices, updates, 1),
            "add_clip": indexing.scatter_add_along_axis(x, indices, updates, 1, mode="clip"),
            "int_add": indexing.scatter_add_along_axis(xi, small, int_updates, 0),
            "int_set": indexing.scatter_along_axis(xi, small, int_updates, 0),
        }

    ref, got = helpers.run_both(fn, x, xi, indices, updates, small, int_updates)
    helpers.assert_agree(ref, got, ulps=2)  # scatter_add may add repeated updates in another order


# --- control flow ------------------------------------------------------------------------------


@pytest.mark.parametrize("unroll", [1, 2, 3, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan(unroll, reverse, rng):
    xs = random_values(rng, (7, 3), F32, special=False)
    w = random_values(rng, (3,), F32, special=False)

    def fn(xs, w):
        def step(carry, x):
            total, count = carry
            total = total * 0.5 + x * w  # w is a captured constant of the body
            return (total, count + 1), (total.sum(), x[0] > 0)

        return lax.scan(step, (np.zeros(3, np.float32), 0), xs, reverse=reverse, unroll=unroll)

    ref, got = helpers.run_both(fn, xs, w)
    helpers.assert_agree(ref, got, ulps=4)


def test_scan_of_length_zero_and_without_xs():
    def fn(x):
        empty = lax.scan(lambda c, x: (c + x, c), x[0], x[:0])
        counted = lax.scan(lambda c, _: (c * 2, c), x[0], None, length=4)
        return empty, counted

    ref, got = helpers.run_both(fn, np.arange(1.0, 4.0, dtype=np.float32))
    helpers.assert_agree(ref, got)


def test_while_fori_cond_and_switch(rng):
    x = random_values(rng, (4,), F32, special=False)

    def fn(x, n):
        halvings = lax.while_loop(
            lambda c: lax.reduce_max(lax.abs(c[1]), (0,)) > 0.1,
            lambda c: (c[0] + 1, c[1] * 0.5),
            (0, x),
        )
        summed = lax.fori_loop(0, n, lambda i, acc: acc + x * lax.convert_element_type(i, F32), x)
        static = lax.fori_loop(0, 3, lambda i, acc: acc * 2, x, unroll=2)
        chosen = lax.cond(n > 2, lambda a: a * 10.0, lambda a: a - 1.0, x)
        switched = [
            lax.switch(n + k, [lambda a: a, lambda a: -a, lambda a: a * a], x) for k in (-3, 0, 5)
        ]
        return halvings, summed, static, chosen, switched

    for n in (0, 1, 4):
        ref, got = helpers.run_both(fn, x, np.int32(n))
        helpers.assert_agree(ref, got, ulps=2, where=f"n={n} ")


def test_masked_function_on_pjrt():
    import refimpl.numpy as rnp

    ri.config.update("backend", "pjrt")
    masked = ri.mask(lambda x: rnp.cumsum(rnp.sin(x)), ["(n,)"], "(n,)")
    x = np.linspace(0.0, 1.0, 8, dtype=np.float32)
    for n in (3, 5, 8):
        out = masked([x], dict(n=n))
        assert type(out).__name__ == "PjrtArray"
        want = np.cumsum(np.sin(x[:n]))
        np.testing.assert_allclose(np.asarray(out)[:n], want, rtol=1e-6)
