"""backends/pjrt/lowering.py: Programs -> StableHLO modules, checked as text and by running them.

What the module looks like (types, aliasing attributes, functions for nested
jit, no 64-bit types without x64) is checked on ``Lowered.as_text()``;
constants of every dtype are checked by compiling and running on PJRT
against the values that went in.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest

import refimpl as ri
from refimpl import lax
from refimpl.backends.pjrt import lowering
from refimpl.core import Program, ShapedArray, Var
from refimpl.primitives.base import Primitive

_spec = importlib.util.spec_from_file_location(
    "pjrt_helpers", pathlib.Path(__file__).parents[1] / "helpers" / "pjrt_helpers.py"
)
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
helpers.skip_without_pjrt()

pytestmark = pytest.mark.pjrt

BF16 = np.dtype(ml_dtypes.bfloat16)


def text_of(fun, *args, **jit_kwargs) -> str:
    return ri.jit(fun, backend="pjrt", **jit_kwargs).trace(*args).lower().as_text()


def main_signature(text: str) -> str:
    return re.search(r"func\.func public @main\((.*?)\) ->", text).group(1)


# --- types --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, element",
    [
        (np.bool_, "i1"),
        (np.int8, "i8"),
        (np.int32, "i32"),
        (np.uint8, "ui8"),
        (np.uint32, "ui32"),
        (np.float16, "f16"),
        (BF16, "bf16"),
        (np.float32, "f32"),
        (np.complex64, "complex<f32>"),
    ],
    ids=str,
)
def test_each_dtype_has_its_element_type(dtype, element):
    text = text_of(lambda x: x, np.zeros((2, 3), dtype))
    assert main_signature(text) == f"%arg0: tensor<2x3x{element}>"


def test_weak_types_are_erased():
    text = text_of(lambda x, s: x * s, np.ones(3, np.float32), 2.0)
    assert main_signature(text) == "%arg0: tensor<3xf32>, %arg1: tensor<f32>"
    assert "weak" not in text


def test_no_64_bit_types_without_x64():
    def fun(x, i):
        return x * 2.5 + lax.convert_element_type(i, np.float32), lax.iota(np.int64, 3)

    text = text_of(fun, np.ones(3, np.float64), np.ones(3, np.int64))
    assert not re.search(r"[fi]64", text), text


def test_64_bit_types_with_x64():
    ri.config.update("enable_x64", True)
    text = text_of(lambda x: x * 2.5, np.ones(3, np.float64))
    assert main_signature(text) == "%arg0: tensor<3xf64>"


def test_zero_size_and_rank_zero_types():
    text = text_of(lambda x, s: (x, s), np.zeros((0, 4), np.float32), np.int32(3))
    assert main_signature(text) == "%arg0: tensor<0x4xf32>, %arg1: tensor<i32>"


# --- functions and attributes -------------------------------------------------------


def test_main_is_public_and_the_module_is_named_after_the_function():
    def scale(x):
        return x * 3.0

    text = text_of(scale, np.ones(2, np.float32))
    assert text.startswith("module @jit_scale")
    assert "func.func public @main" in text


def test_donated_inputs_carry_their_aliased_output_index():
    def fun(a, b, c):
        return c + 1, a * 2  # c -> output 0, a -> output 1; b has no match

    a, b, c = np.ones(3, np.float32), np.ones(2, np.int32), np.ones(2, np.float32)
    text = text_of(fun, a, b, c, donate_argnums=(0, 1, 2))
    signature = main_signature(text)
    assert "%arg0: tensor<3xf32> {tf.aliasing_output = 1 : i32}" in signature
    assert "%arg1: tensor<2xi32> {jax.buffer_donor = true}" in signature
    assert "%arg2: tensor<2xf32> {tf.aliasing_output = 0 : i32}" in signature


def test_no_attributes_without_donation():
    text = text_of(lambda a: a + 1, np.ones(3, np.float32))
    assert "aliasing" not in text and "donor" not in text


def test_nested_jit_is_one_private_function_called_each_time():
    inner = ri.jit(lambda y: y * 2)
    text = text_of(lambda x: inner(x) + inner(x + 1), np.ones(3, np.float32))
    assert text.count("func.func private") == 1
    assert len(re.findall(r"call @", text)) == 2


def test_chlo_functions_are_legalized_in_the_artifact():
    fun = ri.jit(
        lambda x: (lax.erf(x), lax.asin(x), lax.nextafter(x, np.float32(np.inf))), backend="pjrt"
    )
    x = np.linspace(-0.9, 0.9, 7, dtype=np.float32)
    assert "chlo.erf" in fun.trace(x).lower().as_text()
    erf, asin, after = fun(x)  # compiles the portable artifact, which has no CHLO
    helpers.assert_values_agree(np.asarray(ri.jit(lax.erf)(x)), np.asarray(erf), ulps=4)
    helpers.assert_values_agree(np.asarray(ri.jit(lax.asin)(x)), np.asarray(asin), ulps=4)
    assert np.all(np.asarray(after) > x)


# --- constants -----------------------------------------------------------------------


CONSTANT_DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
    np.float16, BF16, np.float32, np.complex64,
]  # fmt: skip


def constants_of(dtype) -> dict[str, np.ndarray]:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        varied = np.array([True, False, True, True, False, False, True, False, True])
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        varied = np.array([info.min, info.max, 0, 1, 2, 3, info.max - 1], dtype=dtype)
    elif dtype.kind == "c":
        varied = np.array([1 + 2j, -0.0, np.nan, complex(np.inf, -1)], dtype=dtype)
    else:
        varied = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5, -3.25], dtype=dtype)
    uniform = np.full((2, 3), varied[0], dtype=dtype)
    return {"varied": varied, "uniform": uniform, "scalar": varied[0].reshape(())}


@pytest.mark.parametrize("dtype", CONSTANT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_constants_of_every_dtype_keep_their_bits(dtype):
    consts = constants_of(dtype)
    out = ri.jit(lambda: dict(consts), backend="pjrt")()
    for name, value in consts.items():
        got = np.asarray(out[name])
        assert got.dtype == value.dtype and got.shape == value.shape, name
        assert got.tobytes() == value.tobytes(), (name, got, value)


def test_literals_keep_their_bits():
    fun = ri.jit(lambda x: (x * -0.0, lax.max(x, np.float32(np.nan))), backend="pjrt")
    negative_zero, nan = fun(np.float32(1.0))
    assert np.signbit(np.asarray(negative_zero)) and np.isnan(np.asarray(nan))


# --- rules and errors -------------------------------------------------------------------


def identity_primitive(name: str) -> Primitive:
    prim = Primitive(name)
    prim.def_abstract_eval(lambda x: x)
    prim.def_impl(lambda x: x)
    return prim


def test_a_primitive_without_a_rule_is_a_clear_error_and_deletes_nothing():
    prim = identity_primitive("no_rule_here")
    x = ri.device_put(np.ones(3, np.float32), ri.devices("pjrt")[0])
    fun = ri.jit(lambda a: prim.bind(a) * 2, backend="pjrt", donate_argnums=0)
    with pytest.raises(NotImplementedError, match="'no_rule_here' has no StableHLO lowering rule"):
        fun(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.ones(3))


def test_a_rule_returning_the_wrong_type_is_an_internal_error():
    prim = identity_primitive("wrong_type")
    prim.def_lowering(lambda ctx, x: [ctx.convert(x, np.float32, np.int32)])
    with pytest.raises(AssertionError, match="the lowering of wrong_type gave result 0"):
        text_of(lambda a: prim.bind(a), np.ones(3, np.float32))


def test_a_rule_emitting_invalid_stablehlo_is_an_internal_error():
    prim = identity_primitive("invalid_op")
    prim.def_lowering(lambda ctx, x: [ctx.hlo.sign(x)])  # stablehlo.sign takes no unsigned type
    with pytest.raises(AssertionError, match="does not verify"):
        text_of(lambda a: prim.bind(a), np.ones(3, np.uint8))


def test_a_rule_sees_its_equation_types_and_params():
    seen = {}
    prim = identity_primitive("spy")

    def rule(ctx, x, **params):
        seen.update(avals_in=ctx.avals_in, avals_out=ctx.avals_out, params=params)
        return [x]

    prim.def_lowering(rule)
    prim_bind = lambda a: prim.bind(a, flag=3)  # noqa: E731
    prim.def_abstract_eval(lambda x, flag: x)
    text_of(prim_bind, 2.0)
    weak_f32 = ShapedArray((), np.dtype(np.float32), weak_type=True)
    assert seen == {"avals_in": [weak_f32], "avals_out": [weak_f32], "params": {"flag": 3}}


def test_lower_program_directly():
    x = Var(ShapedArray((2,), np.dtype(np.float32)))
    program = Program(in_vars=[x], eqns=[], out_vars=[x])
    module = lowering.lower_program(program, name="identity", aliases={0: 0})
    text = lowering.module_text(module)
    assert "module @jit_identity" in text and "tf.aliasing_output = 0" in text
    assert isinstance(lowering.to_portable_artifact(module, "1.0.0"), bytes)


# --- Lowered and Compiled ---------------------------------------------------------------


def test_lowered_compile_gives_a_callable_for_the_traced_signature():
    fun = ri.jit(lambda x, y: x * y + 1, backend="pjrt")
    x = np.arange(3, dtype=np.float32)
    compiled = fun.trace(x, 2.0).lower().compile()
    np.testing.assert_array_equal(np.asarray(compiled(x, 2.0)), x * 2 + 1)
    np.testing.assert_array_equal(np.asarray(compiled(x + 1, 3.0)), (x + 1) * 3 + 1)
    with pytest.raises(TypeError, match="another signature"):
        compiled(np.arange(4, dtype=np.float32), 2.0)


def test_lowering_a_reference_trace_works_too():
    traced = ri.jit(lambda x: x + 1, backend="ref").trace(np.ones(2, np.int32))
    assert "stablehlo.add" in traced.lower().as_text()
    out = traced.lower().compile()(np.ones(2, np.int32))
    assert type(out).__name__ == "PjrtArray"
    np.testing.assert_array_equal(np.asarray(out), [2, 2])


def test_module_states_one_replica_and_one_partition_as_jax():
    # api_test test_jit_replica_attributes: a jit's module names its counts
    import jax

    def attributes(text):
        return re.search(r"^module @\S+ attributes \{(.*?)\} \{", text, re.M).group(1)

    ours = ri.jit(lambda x: x + 4, backend="pjrt").lower(1.0).as_text()
    theirs = jax.jit(lambda x: x + 4).lower(1.0).as_text()
    assert attributes(ours) == attributes(theirs)
