"""The 8-bit floats float8_e4m3fn, float8_e5m2, float8_e4m3fnuz and
float8_e5m2fnuz, as JAX 0.10.2 has them on CPU (issue 29, lane DOT; lax_test
test_mixed_fp8_dot_general). Compared with JAX live on both backends, eager
and under jit: values to the bit (NaN's sign and payload aside: NaN is NaN),
dtypes and weak types; promotion results and the error for a mix JAX
refuses; the jaxpr's text; finfo and the scalar types.
"""

from __future__ import annotations

import ast
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
import refimpl.dtypes_api as ri_dtypes
import refimpl.numpy as rnp

NAMES = [
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3",
]  # fmt: skip
LIBS = {"jax": (jax, jnp), "ri": (ri, rnp)}


def _every_value(name: str) -> np.ndarray:
    """All 256 bit patterns of the type."""
    return np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name))


def _same(got, want) -> None:
    got_np, want_np = np.asarray(got), np.asarray(want)
    assert got_np.dtype == want_np.dtype, (got_np.dtype, want_np.dtype)
    assert got_np.shape == want_np.shape
    assert getattr(got, "weak_type", False) == getattr(want, "weak_type", False)
    if got_np.dtype.kind in "biu":
        np.testing.assert_array_equal(got_np, want_np)
        return
    g, w = got_np.astype(np.float32), want_np.astype(np.float32)
    both_nan = np.isnan(g) & np.isnan(w)
    differ = ~(both_nan | (g.view(np.uint32) == w.view(np.uint32)))
    assert not differ.any(), (got_np[differ][:8], want_np[differ][:8])


UNARY = ["exp", "tanh", "sin", "log", "sqrt", "log1p", "arctan", "negative", "abs", "floor"]


@pytest.mark.parametrize("fn", UNARY)
@pytest.mark.parametrize("name", NAMES)
def test_unary_over_every_value(backend, name, fn):
    """XLA computes a float8 function as float16 (rounded), then rounds to
    float8: float8_e5m2 exp(-0.375) = 0.6873 -> 0.6875 -> 0.75 (the tie to
    even), where rounding once gives 0.625."""
    x = _every_value(name)
    want = getattr(jnp, fn)(jnp.asarray(x))
    _same(getattr(rnp, fn)(rnp.asarray(x)), want)
    _same(ri.jit(getattr(rnp, fn))(x), want)


@pytest.mark.parametrize("fn", ["add", "multiply", "divide", "maximum"])
@pytest.mark.parametrize("name", NAMES)
def test_binary_over_every_value(backend, name, fn):
    x = _every_value(name)
    y = x[::-1].copy()
    want = getattr(jnp, fn)(jnp.asarray(x), jnp.asarray(y))
    _same(getattr(rnp, fn)(rnp.asarray(x), rnp.asarray(y)), want)
    _same(ri.jit(getattr(rnp, fn))(x, y), want)


# name -> program(lib, np_, x): x a float8 array of shape (4, 6)
PROGRAMS = {
    "add_weak_int": lambda lib, np_, x: x + 1,
    "sub_div_weak_float": lambda lib, np_, x: (x - 2.5) / 3,
    "astype_float32": lambda lib, np_, x: x.astype(np.float32),
    "from_float32": lambda lib, np_, x: (x.astype(np.float32) * 1.37).astype(x.dtype),
    "dot_into_float32": lambda lib, np_, x: lib.lax.dot(x, x.T, preferred_element_type=np.float32),
    "dot_same_type": lambda lib, np_, x: lib.lax.dot(x, x.T),
    "sum": lambda lib, np_, x: np_.sum(x, axis=0),
    "max_min": lambda lib, np_, x: (
        np_.max(x, axis=1),
        np_.min(x),
        lib.lax.reduce_max(x[:0], (0,)),
    ),
    "argmax_sort_cumsum": lambda lib, np_, x: (
        np_.argmax(x, axis=1),
        np_.sort(x, axis=1),
        np_.cumsum(x, axis=1),
    ),
    "compare_where": lambda lib, np_, x: np_.where(x > 1, x, 0),
    "with_int8_and_bool": lambda lib, np_, x: (x + np_.int8(3), x * np_.ones((4, 6), bool)),
    "bitcast": lambda lib, np_, x: lib.lax.bitcast_convert_type(x, np.uint8),
    "grad": lambda lib, np_, x: lib.grad(lambda x: (x * x).sum())(x),
    "vmap": lambda lib, np_, x: lib.vmap(lambda r: r * r)(x),
}


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("name", NAMES)
def test_programs(backend, name, program):
    fn = PROGRAMS[program]
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 6)) * 4).astype(getattr(ml_dtypes, name))
    want = fn(jax, jnp, jnp.asarray(x))
    got_eager = fn(ri, rnp, rnp.asarray(x))
    got_jit = ri.jit(lambda x: fn(ri, rnp, x))(x)
    for got in (got_eager, got_jit):
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            _same(g, w)


@pytest.mark.parametrize(("lhs", "rhs"), [(NAMES[0], NAMES[1]), (NAMES[1], NAMES[0])])
def test_mixed_float8_product(backend, lhs, rhs):
    """lax_test test_mixed_fp8_dot_general: two float8 types into float32."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 3)) * 4).astype(getattr(ml_dtypes, lhs))
    y = (rng.standard_normal((3, 6)) * 4).astype(getattr(ml_dtypes, rhs))
    want = jax.lax.dot(x, y, preferred_element_type=np.float32)
    _same(ri.lax.dot(x, y, preferred_element_type=np.float32), want)
    _same(ri.jit(lambda x, y: ri.lax.dot(x, y, preferred_element_type=np.float32))(x, y), want)


def _outcome(fn):
    """The result's dtype and weak type, or the error's class and words with
    the two dtype names as a set: JAX 0.10.2 names them in the order of a
    Python set of dtypes, which for ml_dtypes' types varies from process to
    process."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the class and words are compared
        words = str(e)
        names = re.search(r"Input dtypes (\(.*?\))", words)
        named = frozenset(ast.literal_eval(names.group(1))) if names else None
        return type(e).__name__, words.replace(names.group(1), "") if names else words, named
    return np.dtype(out.dtype).name, bool(out.weak_type)


@pytest.mark.parametrize(
    "other", ["float32", "bfloat16", "float16", "float8_e5m2", "int8", "uint32", "bool"]
)
def test_promotion_and_its_errors(other):
    def program(np_):
        x = np_.ones(3, np_.float8_e4m3fn)
        return lambda: x + np_.ones(3, getattr(np_, other) if other != "bool" else bool)

    assert _outcome(program(rnp)) == _outcome(program(jnp))


@pytest.mark.parametrize("name", NAMES)
def test_jaxpr_text(name):
    def text(lib, np_):
        x = np_.ones(3, getattr(np_, name))
        return str(lib.make_jaxpr(lambda x: (x + 1, x.astype(np.float32), x * 2.5))(x))

    assert text(*LIBS["ri"]) == text(*LIBS["jax"])


@pytest.mark.parametrize("name", NAMES)
def test_finfo_and_scalar_types(name):
    got, want = rnp.finfo(getattr(rnp, name)), jnp.finfo(getattr(jnp, name))
    for field in ("bits", "eps", "max", "min", "tiny", "nmant", "maxexp", "minexp"):
        assert getattr(got, field) == getattr(want, field), field
    assert rnp.issubdtype(getattr(rnp, name), rnp.floating)
    assert rnp.dtype(getattr(rnp, name)) == jnp.dtype(getattr(jnp, name))
    assert np.asarray(getattr(rnp, name)(2.5)).dtype == np.dtype(getattr(ml_dtypes, name))
    assert ri_dtypes.issubdtype(getattr(rnp, name), np.inexact)  # (jax.dtypes.issubdtype)


@pytest.mark.parametrize("name", NAMES)
def test_device_put_round_trip(backend, name):
    x = _every_value(name)
    y = ri.device_put(x)
    assert y.dtype == x.dtype
    assert np.asarray(y).tobytes() == x.tobytes()
