"""The reference backend's caches (issue 34) change nothing but speed.

* eager abstract evaluation is memoized per (primitive, params, input avals,
  x64): equal-but-different params (``2``, ``2.0``, ``True``) are different
  keys, params that are not plain values are never cached, errors are raised
  on every call;
* the interpreter's per-Program plan follows a redefined impl, survives a
  copy of the Program, and still checks every result against its type.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import refimpl as ri
import refimpl.numpy as rnp
from refimpl import lax
from refimpl.core import ShapedArray
from refimpl.interpreter import eval_program, run_program
from refimpl.primitives.base import Primitive

X = np.arange(4, dtype=np.float32)


def _counting_primitive() -> tuple[Primitive, list]:
    calls: list = []
    prim = Primitive("counted")

    @prim.def_abstract_eval
    def _abstract_eval(x: ShapedArray, *, k) -> ShapedArray:
        calls.append(k)
        if isinstance(k, float):
            raise TypeError("counted: k must be an int")
        return x

    prim.def_impl(lambda x, *, k: x.copy())
    return prim, calls


def test_eager_abstract_evaluation_runs_once_per_signature():
    prim, calls = _counting_primitive()
    x = rnp.asarray(X)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(prim.bind(x, k=2)), X)
    assert calls == [2]
    prim.bind(rnp.asarray(X[:2]), k=2)  # another shape: another signature
    assert calls == [2, 2]


def test_equal_params_of_other_types_are_other_keys():
    prim, calls = _counting_primitive()
    x = rnp.asarray(X)
    prim.bind(x, k=1)
    prim.bind(x, k=True)
    assert calls == [1, True]
    for _ in range(2):  # 1.0 == 1, but it is an error, raised every time
        with pytest.raises(TypeError, match="k must be an int"):
            prim.bind(x, k=1.0)
    assert calls == [1, True, 1.0, 1.0]


def test_params_that_are_not_plain_values_are_not_cached():
    prim, calls = _counting_primitive()
    x = rnp.asarray(X)
    prim.bind(x, k=[1])
    prim.bind(x, k=[1])
    prim.bind(x, k=np.array(1))
    assert len(calls) == 3


def test_x64_is_part_of_the_key():
    x = rnp.asarray(X)
    assert lax.convert_element_type(x, np.float64).dtype == np.float32
    ri.config.update("enable_x64", True)
    try:
        assert lax.convert_element_type(x, np.float64).dtype == np.float64
    finally:
        ri.config.update("enable_x64", False)
    assert lax.convert_element_type(x, np.float64).dtype == np.float32


def test_eager_results_own_their_buffers_and_ieee_results_are_silent():
    x = rnp.asarray(X)
    # a primitive whose impl returns its operand (as a no-op conversion may)
    identity = Primitive("identity_impl")
    identity.def_abstract_eval(lambda a: a)
    identity.def_impl(lambda a: a)
    y = identity.bind(x)
    assert y is not x
    assert not np.may_share_memory(np.asarray(y), np.asarray(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(np.asarray(rnp.log(x - x))).all()


def test_the_interpreter_follows_a_redefined_impl():
    prim = Primitive("redefined")
    prim.def_abstract_eval(lambda x: x)
    prim.def_impl(lambda x: x + 1)
    program = ri.make_program(lambda x: prim.bind(x))(X)
    np.testing.assert_array_equal(eval_program(program, [X])[0], X + 1)
    prim.def_impl(lambda x: x + 2)
    np.testing.assert_array_equal(eval_program(program, [X])[0], X + 2)


def test_the_interpreter_still_checks_each_result():
    prim = Primitive("wrong_dtype")
    prim.def_abstract_eval(lambda x: x)
    prim.def_impl(lambda x: x.astype(np.float64))
    program = ri.make_program(lambda x: prim.bind(x) * 2)(X)
    for _ in range(2):
        with pytest.raises(AssertionError, match="wrong_dtype impl output 0 is float64"):
            eval_program(program, [X])


def test_a_copied_program_runs_on_its_own_arrays():
    program = ri.make_program(lambda x: (x * 2.0 + 1.0, 3.0))(X)
    first = run_program(program, [X])
    copied = copy.deepcopy(program)
    outs = run_program(copied, [X])
    for a, b in zip(first, outs, strict=True):
        np.testing.assert_array_equal(a, b)
    literal = copied.out_vars[1].value
    assert not np.may_share_memory(outs[1], literal)  # an output never is the program's own


def test_outputs_that_are_inputs_or_literals_are_copied():
    program = ri.make_program(lambda x: (x, 2.0, x + 0.0))(X)
    outs = run_program(program, [X])
    assert not np.may_share_memory(outs[0], X)
    assert not any(np.may_share_memory(outs[1], a) for a in (X, outs[0], outs[2]))
