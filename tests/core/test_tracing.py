"""The tracer and the IR: listings, type checking, concretization errors."""

from __future__ import annotations

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.core import Eqn, Program, ProgramTypeError, ShapedArray, Var


def test_readable_listing():
    program = ri.make_program(lambda x: rnp.sin(x) * 2)(1.0)
    text = str(program)
    assert text.splitlines() == [
        "{ lambda ; a:~f32[]. let",
        "    b:~f32[] = sin a",
        "    c:~f32[] = mul b 2.0:~f32[]",
        "  in (c,) }",
    ]


def test_listing_shows_constants_and_params():
    table = np.arange(6, dtype=np.float32).reshape(2, 3)
    program = ri.make_program(lambda x: lax.convert_element_type(x, np.int32) + table)(
        np.ones((2, 3), np.float32)
    )
    text = str(program)
    assert text.startswith("{ lambda a:f32[2,3] ; b:f32[2,3]. let")
    assert "convert_element_type[new_dtype=i32, weak_type=False] b" in text


def test_check_program_accepts_traced_programs_and_rejects_broken_ones():
    program = ri.make_program(lambda x, y: x * y + 1.0)(np.ones(3, np.float32), 2.0)
    ri.check_program(program)
    wrong = Var(ShapedArray((4,), np.dtype(np.float32)))
    eqn = program.eqns[-1]
    broken = Program(
        program.in_vars,
        program.eqns[:-1] + [Eqn(eqn.primitive, eqn.inputs, [wrong], eqn.params)],
        program.out_vars,
    )
    last = len(program.eqns) - 1
    with pytest.raises(ProgramTypeError, match=rf"equation {last} \(add\) outputs f32\[4\]"):
        ri.check_program(broken)
    unbound = Program([], program.eqns, program.out_vars)
    with pytest.raises(ProgramTypeError, match="unbound variable"):
        ri.check_program(unbound)


@pytest.mark.parametrize(
    "use,what,error",
    [
        (lambda x: bool(x), "bool()", ri.errors.TracerBoolConversionError),
        (lambda x: int(x), "int()", ri.ConcretizationTypeError),
        (lambda x: float(x), "float()", ri.ConcretizationTypeError),
        (lambda x: [1, 2, 3][x], "index", ri.errors.TracerIntegerConversionError),
        (lambda x: np.asarray(x), "NumPy", ri.errors.TracerArrayConversionError),
        (lambda x: 1 if x > 0 else 2, "bool()", ri.errors.TracerBoolConversionError),
    ],
    ids=["bool", "int", "float", "index", "asarray", "if"],
)
def test_concretization_errors_name_function_and_argument(use, what, error):
    def my_function(x):
        return use(x)

    with pytest.raises(TypeError, match="Abstract tracer") as info:
        ri.jit(my_function)(np.int32(1))
    message = str(info.value)
    assert what in message
    assert "argument x of my_function" in message
    assert type(info.value) is error  # JAX 0.10.2's class for the conversion


def test_concretization_error_names_derived_values():
    def f(a, b):
        return bool(b * 2)

    with pytest.raises(TypeError, match="argument b of f"):
        ri.jit(f)(1.0, 2.0)


def test_leaked_tracer_is_an_error():
    leaked = []
    ri.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(ri.UnexpectedTracerError, match="escaped"):
        lax.sin(leaked[0])
    with pytest.raises(ri.UnexpectedTracerError):
        ri.jit(lambda y: y + leaked[0])(1.0)


def test_eager_ops_return_reference_arrays():
    out = lax.add(np.float32(1), np.float32(2))
    assert isinstance(out, ri.Array)
    assert out.weak_type is False and float(out) == 3.0
    weak = lax.add(1.0, 2.0)
    assert weak.weak_type is True
    assert repr(weak) == "Array(3., dtype=float32, weak_type=True)"


def test_python_int_overflow_is_a_clear_error():
    # JAX's words for a Python int converted to its default int
    with pytest.raises(
        OverflowError, match="Python int 1099511627776 too large to convert to int32"
    ):
        lax.add(2**40, 1)


def test_unsupported_numpy_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="sin: argument at position 0"):
        lax.sin(np.array(["a"]))
