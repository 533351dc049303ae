"""``refimpl.numpy`` against ``jax.numpy`` (the oracle): elementwise functions,
creation, reductions and shape functions.

Each case runs the same inputs through ``jnp`` and ``rnp`` (eagerly and under
``ri.jit``) and compares values (with a dtype-aware tolerance), the result
dtype and the weak type. Bool results are never weak in refimpl; JAX sometimes
marks them weak (the flag means nothing for bool), so their weak type is not
compared.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import refimpl as ri
import refimpl.numpy as rnp

jax.config.update("jax_platforms", "cpu")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I32, U8, U32 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.uint32)
BOOL = np.dtype(bool)
DTYPES = [BOOL, I8, U8, I32, U32, F16, BF16, F32]
TOLERANCE = {F16: 3e-3, BF16: 2e-2, F32: 2e-5, C64: 2e-5, np.dtype(np.float64): 1e-12}


# --- helpers -------------------------------------------------------------------------------

ERRORS = (TypeError, ValueError, NotImplementedError, IndexError, OverflowError)


def random_array(rng, shape, dtype, low=-20, high=20):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, low), min(info.max, high), size=shape).astype(dtype)
    if dtype == C64:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def weak_value(kind):
    """A weakly typed operand for both libraries: a Python scalar."""
    return {"int": 3, "float": 1.5, "negint": -2, "bool": True}[kind]


def to_jax(x):
    """The same operand for jnp: refimpl arrays become jax arrays with the same
    dtype and weak type; lists are converted item by item; the rest passes as is."""
    if isinstance(x, ri.Array):
        from jax._src.lax.lax import _convert_element_type

        value = jnp.asarray(np.asarray(x))
        return _convert_element_type(value, value.dtype, weak_type=x.weak_type)
    if isinstance(x, list):
        return [to_jax(item) for item in x]
    return x


def C(*args, **kwargs):  # noqa: N802
    """One case: the positional and keyword arguments of a call."""
    return args, kwargs


def compare(ours, expected, *, check_weak=True, tol=None):
    """Same shape, dtype, weak type (unless bool) and values (close for inexact)."""
    assert isinstance(ours, ri.Array), type(ours)
    expected_dtype = np.dtype(expected.dtype)
    assert ours.dtype == expected_dtype, (ours.dtype, expected_dtype)
    assert ours.shape == tuple(expected.shape), (ours.shape, expected.shape)
    if check_weak and expected_dtype != BOOL:
        assert ours.weak_type == expected.weak_type, (ours.weak_type, expected.weak_type)
    actual, wanted = np.asarray(ours), np.asarray(expected)
    if np.issubdtype(expected_dtype, np.inexact) or expected_dtype == BF16:
        wide = np.complex128 if expected_dtype == C64 else np.float64
        rtol = tol if tol is not None else TOLERANCE.get(expected_dtype, 1e-6)
        np.testing.assert_allclose(
            actual.astype(wide), wanted.astype(wide), rtol=rtol, atol=rtol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(actual, wanted)


def compare_tree(ours, expected, **kwargs):
    if isinstance(expected, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(expected)
        for o, e in zip(ours, expected, strict=True):
            compare(o, e, **kwargs)
    else:
        compare(ours, expected, **kwargs)


def _traced_positions(args, only):
    """Arguments our jit traces: arrays of rank >= 1 and refimpl arrays (Python and
    NumPy scalars stay concrete, as JAX's eager calls see them), among ``only``."""
    return [
        i
        for i, a in enumerate(args)
        if (isinstance(a, ri.Array) or (isinstance(a, np.ndarray) and a.ndim > 0))
        and (only is None or i in only)
    ]


def run_jitted(fn, args, kwargs, only=None):
    traced = _traced_positions(args, only)

    def with_tracers(*values):
        full = list(args)
        for i, v in zip(traced, values, strict=True):
            full[i] = v
        return fn(*full, **kwargs)

    return ri.jit(with_tracers)(*[args[i] for i in traced])


def check(name, cases, *, jnp_fn=None, ours_fn=None, jit=True, traced=None, **compare_kwargs):
    """Every case through ``rnp.<name>`` (eagerly and under ``ri.jit``) against
    ``jnp.<name>``. The JAX results of all cases come from ONE ``jax.jit`` of a
    closure (the arguments are its constants, as concrete as in an eager call),
    so the oracle compiles once per call of ``check``. A case for which jnp
    raises must raise the same exception type in rnp. ``traced``: the argument
    positions our jit may trace (default: every array argument)."""
    ours_fn = ours_fn or getattr(rnp, name)
    theirs_fn = jnp_fn or getattr(jnp, name)
    thunks = [
        functools.partial(theirs_fn, *[to_jax(a) for a in args], **kwargs) for args, kwargs in cases
    ]
    results, errors = jax_oracle(thunks)
    for index, ((args, kwargs), expected) in enumerate(zip(cases, results, strict=True)):
        if index in errors:
            with pytest.raises(errors[index]):
                ours_fn(*args, **kwargs)
            continue
        try:
            compare_tree(ours_fn(*args, **kwargs), expected, **compare_kwargs)
            if jit:
                jitted = run_jitted(ours_fn, args, kwargs, traced)
                compare_tree(jitted, expected, **compare_kwargs)
        except AssertionError as failure:
            raise AssertionError(f"{name}{_describe(args, kwargs)}: {failure}") from None


def jax_oracle(thunks):
    """The results of calling every thunk, from one ``jax.jit`` (one compile), and
    ``{index: exception type}`` for the thunks that raise while being traced."""
    errors = {}

    def every_result():
        results = []
        for index, thunk in enumerate(thunks):
            try:
                results.append(thunk())
            except ERRORS as error:
                errors[index] = type(error)
                results.append(None)
        return results

    return jax.jit(every_result)(), errors


def _describe(args, kwargs):
    def short(a):
        if isinstance(a, (np.ndarray, ri.Array)):
            weak = "~" if getattr(a, "weak_type", False) else ""
            return f"{weak}{a.dtype}{list(a.shape)}"
        return repr(a)

    parts = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


# --- elementwise: unary ------------------------------------------------------------------------

UNARY = [
    "abs", "absolute", "negative", "positive", "sign", "floor", "ceil", "round", "exp", "expm1",
    "log", "log1p", "sqrt", "cbrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "isfinite", "isinf", "isnan", "logical_not", "bitwise_not", "invert",
    "conj", "real", "imag", "square", "reciprocal",
]  # fmt: skip
SHAPES = [(), (0,), (2, 3)]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name, rng):
    cases = []
    for dtype in DTYPES:
        for shape in SHAPES:
            x = random_array(rng, shape, dtype)
            if name in ("arcsin", "arccos") and np.issubdtype(dtype, np.floating):
                x = (x / 25).astype(dtype)
            cases.append(C(x))
    cases += [C(weak_value(kind)) for kind in ("int", "float", "negint", "bool")]
    cases += [C(rnp.asarray(2.5)), C(rnp.asarray(-3))]  # weak refimpl arrays
    check(name, cases)


def test_unary_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5, 0.5, 1.5], np.float32)
    for name in ("isfinite", "isinf", "isnan", "round", "floor", "ceil", "sign", "abs"):
        check(name, [C(x), C(x.astype(np.float16))])
    check("round", [C(np.array([0.125, 2.675, -1.005], np.float32), decimals=2),
                    C(np.array([0.125, 2.675], np.float16), decimals=1),
                    C(np.arange(5), decimals=1)])  # fmt: skip


def test_complex_parts():
    z = np.array([1 + 2j, -3.5 - 0.25j, 0j], np.complex64)
    for name in ("real", "imag", "conj", "abs", "isfinite", "isnan", "exp", "negative"):
        check(name, [C(z), C(2 + 1j)])


# --- elementwise: binary -----------------------------------------------------------------------

BINARY = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "power", "maximum", "minimum", "arctan2", "logical_and", "logical_or", "logical_xor",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
]  # fmt: skip

# mixes of strong arrays and weak Python scalars, including cross-kind promotions
MIXES = [
    (I8, "int"), (I8, "float"), (U8, "int"), (I32, "float"), (F16, "int"), (F16, "float"),
    (BF16, "float"), (F32, "int"), (BOOL, "int"), (BOOL, "float"), ("int", I8), ("float", U8),
    (U8, I8), (I32, F16), (BF16, F16), (U32, I32), (BOOL, I8), (I8, U8), ("int", "float"),
    ("int", "int"), ("float", "float"), (F32, F16),
]  # fmt: skip


def _operand(rng, spec, shape, low=-6):
    if isinstance(spec, str):
        return weak_value(spec)
    return random_array(rng, shape, spec, low=low, high=6)


@pytest.mark.parametrize("name", BINARY)
def test_binary(name, rng):
    low = 0 if name in ("power", "left_shift", "right_shift") else -6  # defined results only
    cases = []
    for dtype in DTYPES:
        x = random_array(rng, (2, 3), dtype, low=-6, high=6)
        y = random_array(rng, (3,), dtype, low=low, high=6)
        cases += [C(x, y), C(x[:0], y), C(x[0, 0], y[0])]
    for left, right in MIXES:
        cases.append(C(_operand(rng, left, (2, 3)), _operand(rng, right, (2, 1), low)))
    cases.append(C(rnp.asarray(1.5), np.arange(3, dtype=np.int8)))
    cases.append(C(np.arange(3, dtype=np.float16), rnp.asarray(2)))
    cases.append(C(np.ones((2, 1), np.int8), np.ones((3,), np.int8)))
    cases.append(C(np.ones(2), np.ones(3)))  # incompatible shapes
    check(name, cases)


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_python_sign_convention(name):
    x = np.arange(-7, 8, dtype=np.int32)
    cases = [C(x, np.int32(d)) for d in (3, -3)]
    cases += [C(x.astype(np.float32), np.float32(d)) for d in (3, -3, 0)]
    cases += [C(x, np.zeros_like(x)), C(x.astype(np.uint8), np.uint8(3))]  # x // 0: JAX's values
    cases += [C(np.array([-7.5, 7.5, -0.0], np.float32), np.array([2.0, -2.0, 3.0], np.float32))]
    check(name, cases)


def test_power_paths():
    ints = np.arange(-3, 4, dtype=np.int32)
    check("power", [
        C(ints, 3),  # static exponent: integer_pow
        C(ints.astype(np.int8), np.int32(2)),  # x1's dtype kept
        C(ints, np.arange(7, dtype=np.int32)),  # int ** int array: binary exponentiation
        C(np.float32(2.5), np.arange(4, dtype=np.int8)),  # float ** int array
        C(2.0, np.arange(4, dtype=np.int8)),  # weak float base, strong int exponent
        C(np.arange(4, dtype=np.float16), 0.5),
        C(np.ones(3, bool), 2),
        C(np.arange(3.0, dtype=np.float32), -2),
        C(ints, -1),  # integers to a negative power: TypeError
    ])  # fmt: skip


def test_where_and_clip(rng):
    cond = rng.random((2, 3)) < 0.5
    check("where", [
        C(cond, np.ones(3, np.int8), 2.5), C(cond, 1, 2.0), C(True, np.arange(3), 7),
        C(np.arange(3), np.float16(1), np.zeros((2, 1), np.float32)),
    ])  # fmt: skip
    x = random_array(rng, (4,), I8)
    check("clip", [
        C(x, 0, 3), C(x, 0.5, 3), C(x, None, np.int8(2)), C(x, max=np.int8(2)),
        C(x.astype(np.float32), np.zeros(4, np.float32), None), C(x),
    ])  # fmt: skip
    # the one-argument form is nonzero (tests/test_numpy_search.py covers it)
    for found, expected in zip(rnp.where(cond), np.nonzero(cond), strict=True):
        np.testing.assert_array_equal(np.asarray(found), expected)


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(["add", "multiply", "subtract", "maximum", "less", "true_divide"]),
    st.sampled_from(DTYPES),
    st.sampled_from(DTYPES + ["int", "float"]),
    st.sampled_from([((), ()), ((3,), ()), ((2, 1), (1, 3)), ((0, 3), (3,)), ((1,), (2, 2))]),
)
def test_binary_promotion_property(name, left, right, shapes):
    rng = np.random.default_rng(1)
    x = random_array(rng, shapes[0], left, low=-5, high=5)
    y = _operand(rng, right, shapes[1])
    check(name, [C(x, y), C(y, x)], jit=False)


# --- creation -------------------------------------------------------------------------------------

VALUES = [
    1.0, 1, True, 2.5j, np.float64(1.5), np.arange(3), np.ones(2, np.float64), [1, 2], [1.0, 2],
    [np.int8(1), 2], [True, 2], [], [[]], (1, 2), [[1, 2], [3, 4]], np.uint64(7), np.ones((2, 0)),
    [[1, 2], [3]],
]  # fmt: skip


def test_asarray_and_array():
    for name in ("asarray", "array"):
        cases = [C(v) for v in VALUES]
        cases += [
            C(v, dtype=d)
            for v in VALUES[:-1]
            for d in (np.float16, np.int8, float, int, bool, BF16)
            if not isinstance(v, complex)
        ]
        cases += [C(2, ndmin=2)] if name == "array" else []
        check(name, cases, jit=False)


def test_asarray_of_refimpl_and_traced_values():
    weak = rnp.asarray(1.0)
    assert rnp.asarray(weak) is weak
    compare(rnp.asarray(weak, dtype=np.float32), jnp.asarray(jnp.asarray(1.0), dtype=jnp.float32))
    copied = rnp.array(weak)
    assert copied is not weak and copied.weak_type

    def nested(x, y):
        return rnp.asarray([[x, y], [y, 1.0]])

    out = ri.jit(nested)(np.float32(1), np.float32(2))
    compare(out, jnp.asarray([[1.0, 2.0], [2.0, 1.0]], jnp.float32))


def test_filled_arrays():
    cases = []
    for dtype in (None, np.int8, np.float16, bool, BF16, np.uint32, np.float64):
        cases += [C((2, 3), dtype=dtype), C(4, dtype=dtype), C((), dtype=dtype)]
    check("zeros", cases)
    check("ones", cases)
    check("full", [
        C((2,), 3), C((2, 2), 2.5, dtype=np.int8), C((2, 3), np.arange(3, dtype=np.int8)),
        C((3,), np.float64(1)), C(2, -1, dtype=np.uint8),
        C((2,), True, dtype=np.float16), C((2, 3), np.ones(2)), C((-1,), 0),
    ])  # fmt: skip
    x = np.ones((2, 3), np.int8)
    for name in ("zeros_like", "ones_like"):
        check(name, [C(x), C(2.0), C(x, dtype=float), C(x, shape=(4,)), C(rnp.asarray(1))])
    # jnp converts a Python NaN to int32 as 0 eagerly (XLA) but as INT_MIN under jit
    # (NumPy, at trace time); refimpl always uses XLA's rule
    compare(rnp.full(2, np.nan, dtype=np.int32), jnp.full(2, np.nan, dtype=jnp.int32))
    check("full_like", [
        C(x, 300), C(x, 3.7), C(2.0, 3), C(x, 1.5, dtype=np.float16), C(x, np.arange(3)),
    ])  # fmt: skip


def test_arange_linspace_eye():
    arange_cases = [
        C(*args) for args in [(5,), (5.0,), (1, 5, 2), (0, 1, 0.25), (0.1, 1.0, 0.3), (5, 0, -2),
                              (0,), (5, 1), (np.int8(5),), (np.float16(3),), (2, 10.5, 3)]
    ]  # fmt: skip
    arange_cases += [C(6, dtype=np.int8), C(0, 3, 0.5, dtype=np.float16)]
    check("arange", arange_cases, jit=False)
    linspace_cases = [C(-3, 7, num=5, **kw) for kw in [
        {}, {"endpoint": False}, {"dtype": int}, {"dtype": np.float16}, {"retstep": True},
    ]]  # fmt: skip
    linspace_cases += [C(0, 1, n) for n in (0, 1, 2, 7)]
    linspace_cases += [C(0, 1, 1, endpoint=False, retstep=True), C(-3, 7, 7, dtype=int)]
    linspace_cases += [C(np.array([0.0, 1.0]), 2, 3), C(np.array([0.0, 1.0]), 2, 3, axis=-1)]
    check("linspace", linspace_cases, jit=False)
    eye_cases = [C(*args) for args in [(3,), (2, 3), (3, 3, 1), (3, 4, -2), (0,)]]
    check("eye", eye_cases + [C(2, dtype=bool)], jit=False)
    with pytest.raises(ZeroDivisionError, match="step"):
        rnp.arange(0, 5, 0)  # as jnp


def test_astype():
    x = np.array([np.nan, 1e10, -2.7, 0.5], np.float32)
    cases = [C(x, d) for d in (np.int32, np.int8, np.uint8, bool, np.float16, BF16)]
    check("astype", cases + [C(2, np.int8), C(rnp.asarray(1.0), np.float32)])


def test_shapes_must_be_concrete():
    with pytest.raises(ri.ConcretizationTypeError):
        ri.jit(lambda n: rnp.zeros(n))(3)
    with pytest.raises(ri.ConcretizationTypeError):
        ri.jit(lambda n: rnp.arange(n))(3)
    assert ri.jit(lambda n: rnp.arange(n), static_argnums=0)(3).shape == (3,)


# --- reductions --------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any", "argmax", "argmin"]
AXES = [None, 0, -1, (0, 2), (), (2, 0, 1), 3, (0, 0)]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, rng):
    cases = []
    for dtype in DTYPES:
        x = random_array(rng, (2, 3, 4), dtype, low=-3, high=4)
        cases += [C(x, axis=axis, keepdims=keep) for axis in AXES for keep in (False, True)]
    empty = np.ones((0, 3), np.float32)
    cases += [C(empty, axis=0), C(empty, axis=1), C(empty), C(2.5), C(rnp.asarray(2))]
    check(name, cases, tol=2e-2)


def test_reduction_dtype_initial_where(rng):
    x = random_array(rng, (3, 4), I8)
    mask = rng.random((3, 4)) < 0.5
    check("sum", [C(x, dtype=np.int8), C(x, dtype=float), C(x, axis=1, initial=10),
                  C(x, axis=1, where=mask), C(x, where=mask[0])])  # fmt: skip
    check("prod", [C(x, axis=0, dtype=np.int16), C(x, axis=1, where=mask)])
    check("mean", [C(x, dtype=np.float16), C(x, axis=1, where=mask), C(x, where=mask[0])])
    check("max", [C(x, axis=1, initial=np.int8(5)), C(x, axis=1, where=mask, initial=-100),
                  C(x, where=mask), C(np.ones((0, 2)), axis=0, initial=1.0)])  # fmt: skip
    check("all", [C(x, axis=1, where=mask)])
    check("any", [C(x, axis=0, where=mask)])


def test_cumulative(rng):
    for name in ("cumsum", "cumprod"):
        cases = []
        for dtype in DTYPES:
            x = random_array(rng, (3, 4), dtype, low=-3, high=4)
            cases += [C(x, axis=axis) for axis in (None, 0, 1, -1)]
        x = random_array(rng, (5,), I8)
        cases += [C(x, dtype=np.int32), C(x, dtype=bool), C(2.0), C(np.ones((2, 0)), axis=1)]
        check(name, cases, tol=2e-2)


# --- shape functions ---------------------------------------------------------------------------


def test_reshape_family(rng):
    x = random_array(rng, (2, 3, 4), F32)
    shapes = [(24,), (4, -1), (-1,), (2, 3, 4), (1, 24, 1), -1, (5, -1), (-1, -1), (7,)]
    # a NumPy argument goes to NumPy's own reshape, in JAX's oracle (its jit
    # closes over it) as in rnp, whose NumPy result the oracle's jit makes an array
    check("reshape", [C(x, s, order=o) for s in shapes for o in ("C", "F")]
          + [C(2.0, (1, 1)), C(np.ones((0, 3)), (-1, 3))],
          ours_fn=lambda *args, **kw: rnp.asarray(rnp.reshape(*args, **kw)))  # fmt: skip
    check("ravel", [C(x), C(x, order="F"), C(3)])


def test_transpose_family(rng):
    x = random_array(rng, (2, 3, 4), I8)
    check("transpose", [C(x, a) for a in (None, (0, 1, 2), (2, 0, 1), (-1, 0, 1), (0, 0, 1))]
          + [C(2.0)])  # fmt: skip
    check("swapaxes", [C(x, 0, -1), C(x, 1, 1), C(x, 0, 3)])
    moves = [(0, -1), ((0, 1), (-1, 0)), (2, 0), ([], []), (0, 5), ((0, 1), 0)]
    check("moveaxis", [C(x, s, d) for s, d in moves])


def test_squeeze_expand_flip_broadcast(rng):
    x = random_array(rng, (1, 3, 1), F16)
    check("squeeze", [C(x), C(x, axis=-1), C(x, axis=(0, 2)), C(x, axis=1), C(2.5)])
    check("expand_dims", [C(x, 0), C(x, (0, -1)), C(x, 4), C(2.5, 0)])
    check("flip", [C(x), C(x, axis=1), C(x, axis=(0, -1)), C(2.5)])
    check("broadcast_to", [
        C(x, (2, 1, 3, 4)), C(2.5, (2, 3)), C(np.arange(3, dtype=np.int8), (2, 3)),
        C(np.ones(3), (2,)), C(x, (3, 1)),
    ])  # fmt: skip


def test_concatenate_stack_split(rng):
    a = random_array(rng, (2, 3), I8)
    b = random_array(rng, (1, 3), F16)
    weak = [rnp.full(2, 1.0), rnp.full(3, 2.0)]
    check("concatenate", [
        C([a, b]), C([a, a], axis=1), C([a, b], axis=None), C([a], dtype=np.float32),
        C(np.ones((2, 3, 4))), C(weak), C([a, a], axis=-1), C([np.ones(2), np.ones((2, 2))]),
        C([np.ones(()), np.ones(())]), C([a, a], axis=2),
    ])  # fmt: skip
    check("stack", [
        C([a, a]), C([a, a], axis=-1), C([1, 2.0]), C(np.ones((2, 3))), C(weak[:1] * 2),
        C([np.ones(2), np.ones(3)]), C([a, a], axis=3),
    ])  # fmt: skip
    with pytest.raises(ValueError, match="at least one"):
        rnp.concatenate([])
    grid = np.arange(12).reshape(6, 2)
    check("split", [C(grid, s) for s in (3, [1, 4], [2], [], 4)]
          + [C(grid.T, 3, axis=1)])  # fmt: skip
    # NumPy's slicing rules for split points (JAX rejects negative/out-of-range ones)
    np_parts = np.split(np.arange(6), [-1, 10, 2])
    ours = rnp.split(np.arange(6), [-1, 10, 2])
    assert [p.shape for p in ours] == [p.shape for p in np_parts]
    for part, wanted in zip(ours, np_parts, strict=True):
        np.testing.assert_array_equal(np.asarray(part), wanted)


def test_traced_joins():
    def fn(x, y):
        return rnp.concatenate([x, y]), rnp.stack([x, y], axis=1), rnp.split(x, [1])

    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.int8)
    expected = (jnp.concatenate([x, y]), jnp.stack([x, y], axis=1), jnp.split(x, [1]))
    for ours, wanted in zip(ri.jit(fn)(x, y), expected, strict=True):
        compare_tree(ours, wanted)


def test_pad(rng):
    x = random_array(rng, (2, 3), I32)
    widths = [1, (1, 2), ((1, 0), (2, 3)), [(1, 1)], ((0, 0), (0, 0)), (2,), -1,
              ((1, 2), (3, 4), (5, 6))]  # fmt: skip
    cases = [C(x, w) for w in widths] + [C(x, w, constant_values=7) for w in widths]
    cases += [
        C(x, 1, constant_values=1.7), C(np.ones((1, 1)), 1, constant_values=((2, 3), (4, 5))),
        C(rnp.full(2, 1.0), 1), C(np.ones(2, np.float16), 2, constant_values=np.float32(3)),
        C(np.ones((2, 2)), 1, constant_values=np.array([1.0, 2.0])),
    ]  # fmt: skip
    check("pad", cases, traced=(0,))
    # the other modes: tests/surface/test_numpy_parity.py
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
        rnp.pad(np.ones(3), 1, mode="reflective")


def test_tile_repeat_sort(rng):
    x = random_array(rng, (2, 3), F32)
    check("tile", [C(x, r) for r in (2, (2, 1), (2, 1, 2), (0, 2), 1)] + [C(2.5, 3)])
    repeat_cases = [
        C(x, r, axis=a)
        for r, a in [(2, None), (2, 0), (0, 1), (np.array([1, 0, 2]), 1), (np.int32(3), -1)]
    ]
    repeat_cases += [C(x, 2, axis=0, total_repeat_length=4), C(x, [1, 2])]
    check("repeat", repeat_cases, traced=(0,))
    with pytest.raises(ri.ConcretizationTypeError):
        ri.jit(lambda r: rnp.repeat(x, r))(2)
    y = np.array([[3.0, np.nan, -1.0], [0.0, -0.0, 2.0]], np.float32)
    sort_cases = [C(y, axis=a, descending=d) for a in (-1, 0, None) for d in (False, True)]
    sort_cases += [C(random_array(rng, (7,), I8)), C(rnp.full(3, 1.0)), C(2.0)]
    check("sort", sort_cases)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=0, max_size=4),
    st.sampled_from(["flip", "squeeze", "expand_dims", "sum", "cumsum", "sort", "argmax"]),
)
def test_axis_handling_property(shape, name):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check(name, [C(x, axis) for axis in range(-len(shape) - 1, len(shape) + 1)], jit=False)


def test_x64_promotion_follows_the_flag():
    ri.config.update("enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        check("add", [C(np.ones(3, np.int32), 1.5), C(np.ones(3), np.float32(1))])
        check("sum", [C(np.ones(3, np.int8)), C(np.ones(3, np.uint16))])
        check("asarray", [C(np.ones(2)), C(1.0), C([1, 2])], jit=False)
        check("arange", [C(4), C(0.5, 2)], jit=False)
    finally:
        jax.config.update("jax_enable_x64", False)


# --- bad operands -------------------------------------------------------------------------------

A = np.ones((2, 3), np.float32)
UNARY_NAMES = set(UNARY) | {"around", "mod"} - {"mod"}
BINARY_NAMES = set(BINARY) | {"mod", "pow"}


def _calls(name):
    """One call per operand position of ``rnp.<name>``, with the operand ``v``."""
    fn = getattr(rnp, name)
    if name in UNARY_NAMES:
        return [lambda v: fn(v)]
    if name in BINARY_NAMES:
        return [lambda v: fn(v, A), lambda v: fn(A, v)]
    table = {
        "where": [lambda v: fn(v, A, A), lambda v: fn(A > 0, v, A), lambda v: fn(A > 0, A, v)],
        "clip": [lambda v: fn(v, 0, 1), lambda v: fn(A, v, 1), lambda v: fn(A, 0, v)],
        "dot": [lambda v: fn(v, A.T), lambda v: fn(A, v)],
        "matmul": [lambda v: fn(v, A.T), lambda v: fn(A, v)],
        "einsum": [lambda v: fn("ij,jk", v, A.T), lambda v: fn("ij,jk", A, v)],
        "einsum_path": [lambda v: fn("ij,jk", v, A.T), lambda v: fn("ij,jk", A, v)],
        "full": [lambda v: fn((2,), v)],
        "full_like": [lambda v: fn(v, 1), lambda v: fn(A, v)],
        "arange": [lambda v: fn(v), lambda v: fn(0, v), lambda v: fn(0, 5, v)],
        "linspace": [lambda v: fn(v, 1), lambda v: fn(0, v)],
        "concatenate": [lambda v: fn([A, v]), lambda v: fn([v])],
        "stack": [lambda v: fn([A, v]), lambda v: fn([v])],
        "getitem": [lambda v: fn(v, 0)],
        "take": [lambda v: fn(v, np.array([0])), lambda v: fn(A, v)],
        "asarray": [lambda v: fn(v)],
        "array": [lambda v: fn(v)],
        "astype": [lambda v: fn(v, np.int32)],
        "pad": [lambda v: fn(v, 1), lambda v: fn(A, 1, constant_values=v)],
        "repeat": [lambda v: fn(v, 2), lambda v: fn(A, v)],
        "split": [lambda v: fn(v, 2)],
        "broadcast_to": [lambda v: fn(v, (2, 3))],
        "reshape": [lambda v: fn(v, (6,))],
        "swapaxes": [lambda v: fn(v, 0, 1)],
        "moveaxis": [lambda v: fn(v, 0, 1)],
        "expand_dims": [lambda v: fn(v, 0)],
        "tile": [lambda v: fn(v, 2)],
    }
    if name in table:
        return table[name]
    return [lambda v: fn(v)]  # the remaining functions take one array first


NO_OPERANDS = {"is_operand", "zeros", "ones", "eye"}
# Names that are not functions of arrays (dtypes, constants, dtype queries), or
# whose first argument is a shape, a count or a sequence of arrays; they are
# checked in tests/surface/test_numpy_surface.py.
NO_OPERANDS |= set(rnp._scalars.__all__) | {
    "column_stack", "dstack", "empty", "fromfunction", "hstack", "identity", "indices",
    "lexsort", "select", "tri", "vstack", "bartlett", "blackman", "hamming", "hanning",
    "broadcast_shapes", "concat", "diag_indices", "tril_indices", "triu_indices", "s_",
    "index_exp", "iterable", "block", "c_", "mgrid", "ogrid", "r_", "vectorize",
}  # fmt: skip
# NumPy's printing, I/O and abstract types that jax.numpy re-exports, and the
# buffer/file readers (tests/surface/test_numpy_polynomials_histograms.py).
NO_OPERANDS |= {
    "ComplexWarning", "array_repr", "array_str", "character", "flexible", "object_",
    "ndarray", "from_dlpack", "frombuffer", "fromfile", "fromiter", "fromstring", "load",
    "save", "savez", "get_printoptions", "printoptions", "set_printoptions",
}  # fmt: skip
BAD_OPERANDS = [(1, 2), "abc", None, object(), [1, 2]]


@pytest.mark.parametrize("name", sorted(set(rnp.__all__) - NO_OPERANDS))
def test_bad_operands_are_type_errors_naming_function_and_position(name):
    fn = getattr(rnp, name)
    names = {name, fn.__name__}
    for position, call in enumerate(_calls(name)):
        for bad in BAD_OPERANDS:
            if isinstance(bad, (list, tuple)) and name in ("asarray", "array", "pad"):
                continue  # nested sequences are array data (or pad's per-axis values) here
            if bad is None and position > 0 and name in ("arange", "clip", "where", "pad"):
                continue  # None is these arguments' default
            if bad is None and name in ("asarray", "array"):
                continue  # JAX's ValueError (tests/surface/test_array_conversion_parity.py)
            with pytest.raises(TypeError) as info:
                call(bad)
            message = str(info.value)
            assert any(n in message for n in names), (name, message)
            assert "position" in message or "fill_value" in message, (name, message)


# --- operators and methods (refimpl/array_ops.py forwards to rnp) ----------------------------


def test_operators_and_methods_like_jax():
    x = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
    y = np.arange(1, 7, dtype=np.int32).reshape(2, 3)

    def everything(a, b):
        return [
            a + b, a - 1, 2 * a, a / b, a // b, a % b, a**2, 2**b, -a, +a, abs(a), ~a,
            a & b, a | 1, a ^ b, a << 1, a >> 1, a < b, a <= 1, a > b, a >= 1, a == b, a != 1,
            a @ b.T, a.T, a.astype(np.float16), a.reshape(3, 2), a.reshape((6,)),
            a.transpose(1, 0), a.transpose(), a.sum(), a.sum(axis=0, keepdims=True),
            a.prod(axis=1), a.mean(), a.max(axis=1), a.min(), a.all(), a.any(axis=0),
            a.argmax(axis=1), a.argmin(), a.cumsum(axis=1), a.squeeze(), a.swapaxes(0, 1),
            a.flatten(), a.ravel(), a.clip(-1, 1), a.dot(b.T), a.conj(), a.real, a.imag,
            a[0], a[:, ::-1], a[np.array([1, 0])], 1.5 + a, 1.5 - a, 3 // b, 7 % b,
        ]  # fmt: skip

    expected = jax.jit(lambda: everything(jnp.asarray(x), jnp.asarray(y)))()
    ours_eager = everything(rnp.asarray(x), rnp.asarray(y))
    ours_jit = ri.jit(everything)(x, y)
    for ours, jitted, wanted in zip(ours_eager, ours_jit, expected, strict=True):
        compare(ours, wanted)
        compare(jitted, wanted)


@pytest.mark.parametrize("shape", [(7,), (5, -1), (-1, -1)])
def test_reshape_bad_shape_error_class_as_jax(backend, shape):
    # JAX 0.10.2: TypeError for its arrays and tracers; a NumPy array's own
    # reshape (jnp.reshape calls it) says ValueError.
    x = np.ones((2, 3, 4), np.float32)

    def error_class(fn):
        try:
            fn()
        except (TypeError, ValueError) as error:
            return type(error)
        return None

    pairs = [
        (lambda: jnp.reshape(jnp.asarray(x), shape), lambda: rnp.reshape(rnp.asarray(x), shape)),
        (lambda: jnp.asarray(x).reshape(shape), lambda: rnp.asarray(x).reshape(shape)),
        (lambda: jnp.reshape(x, shape), lambda: rnp.reshape(x, shape)),
        (
            lambda: jax.jit(lambda v: v.reshape(shape))(x),
            lambda: ri.jit(lambda v: v.reshape(shape))(x),
        ),
        (
            lambda: jax.vmap(lambda v: jnp.reshape(v, shape))(x[None]),
            lambda: ri.vmap(lambda v: rnp.reshape(v, shape))(x[None]),
        ),
    ]
    for theirs, ours in pairs:
        assert error_class(ours) == error_class(theirs) is not None
